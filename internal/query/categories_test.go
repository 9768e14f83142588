package query_test

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/testutil"
)

func TestCategoriesAreComputedOncePerCatalogue(t *testing.T) {
	e := newEnv(t, 1500, 0)
	first := e.Service.Categories()
	require.Len(t, first.Categories, 6)
	for i, a := range match.Archetypes() {
		c := first.Categories[i]
		assert.Equal(t, string(a.ID), c.ID)
		require.NotNil(t, c.ExampleSchool, "%s has a member among 1,500 generated schools", a.ID)
		idx, ok := e.Catalog.Current().School(c.ExampleSchool.ID)
		require.True(t, ok, "the example is a school of the catalogue held")
		assert.Contains(t, match.Classify(e.Catalog.Current().Schools[idx]), a.ID)
		assert.Equal(t, match.SchoolImageURL("", c.ExampleSchool.ID), c.ExampleSchool.ImageURL)
	}
	again := e.Service.Categories()
	assert.Same(t, &first.Categories[0], &again.Categories[0], "the same catalogue: the list computed once is served")

	// A new catalogue version: computed again, from the new catalogue.
	_, err := e.Store.UpsertSchools(context.Background(), catalog.Generate(1600, 7))
	require.NoError(t, err)
	require.NoError(t, e.Catalog.Load(context.Background()))
	next := e.Service.Categories()
	assert.NotSame(t, &first.Categories[0], &next.Categories[0])
	assert.Same(t, &next.Categories[0], &e.Service.Categories().Categories[0])

	// The image base is the deployment's.
	s := query.New(query.Config{Students: e.Students, Feeds: e.Feeds, Catalogs: e.Catalog, Log: testutil.Logger(t),
		Metrics: e.Metrics, ImageBaseURL: "https://cdn.example.org/img"})
	for _, c := range s.Categories().Categories {
		assert.True(t, strings.HasPrefix(c.ExampleSchool.ImageURL, "https://cdn.example.org/img/schools/"), c.ExampleSchool.ImageURL)
	}
}

func TestCategoriesOfAnEmptyCatalogue(t *testing.T) {
	e := newEnv(t, 0, 0)
	list := e.Service.Categories()
	require.Len(t, list.Categories, 6)
	for _, c := range list.Categories {
		assert.Nil(t, c.ExampleSchool)
		assert.NotEmpty(t, c.Name)
		assert.NotEmpty(t, c.Description)
	}
}

// withState sets the category preferences and learned weights a student
// is loaded with.
type withState struct {
	query.Students
	prefs   []match.CategoryPreference
	learned map[string]float64
}

func (w withState) LearnerState(ctx context.Context, id string) (domain.LearnerState, error) {
	st, err := w.Students.LearnerState(ctx, id)
	st.Categories = nil
	for _, p := range w.prefs {
		dir := "left"
		if p.Liked {
			dir = "right"
		}
		st.Categories = append(st.Categories, domain.CategoryPreference{CategoryID: string(p.ID), Direction: dir})
	}
	st.Weights = w.learned
	return st, err
}

func TestScoringStartsFromTheCategoryPrior(t *testing.T) {
	e := newEnv(t, 300, 0)
	ctx := context.Background()
	prefs := []match.CategoryPreference{{ID: match.ArchetypeLiberalArts, Liked: true},
		{ID: match.ArchetypeCommunityCollege, Liked: false}}

	t.Run("no learned model: the category prior and suggested majors", func(t *testing.T) {
		st := completeStudent()
		st.IntendedMajors = nil
		e.save(t, st)
		s := e.service(t, withState{Students: e.Students,
			prefs: append(prefs, match.CategoryPreference{ID: match.ArchetypeTechEngineering, Liked: true})}, e.Feeds, 0)
		p, want := match.CategoryStart(match.NewProfile(st), append(prefs,
			match.CategoryPreference{ID: match.ArchetypeTechEngineering, Liked: true}))
		page, err := s.Recommendations(ctx, st.ID, 20, 0)
		require.NoError(t, err)
		assert.Equal(t, roundedMap(want), page.LearningState.PreferenceWeights)
		prior, err := s.CategoryPrior(ctx, st.ID)
		require.NoError(t, err)
		assert.Equal(t, page.LearningState.PreferenceWeights, prior)
		require.NotEmpty(t, p.Majors)
		matched := 0
		for _, r := range page.Recommendations {
			matched += len(r.MatchedMajors)
		}
		assert.Positive(t, matched, "the majors the liked category suggests are matched")
	})

	t.Run("a learned model wins over the prior", func(t *testing.T) {
		st := e.save(t, completeStudent())
		learned := match.Weights{CostWeight: 0.9, DistanceWeight: 0.1, OutcomesWeight: 0.3, CampusWeight: 0.2,
			ProgramWeight: 0.8, AidWeight: 0.4, AcademicSelectivity: 0.7, SizePreference: 0.35}
		s := e.service(t, withState{Students: e.Students, prefs: prefs, learned: learned.Map()}, e.Feeds, 0)
		page, err := s.RecommendationsV2(ctx, st.ID, 5, 0)
		require.NoError(t, err)
		assert.Equal(t, roundedMap(learned), page.LearningState.PreferenceWeights)
		prior, err := s.CategoryPrior(ctx, st.ID)
		require.NoError(t, err)
		_, want := match.CategoryStart(match.NewProfile(st), prefs)
		assert.Equal(t, roundedMap(want), prior, "the prior is still reported as the prior")
	})

	t.Run("an erased student is unknown", func(t *testing.T) {
		st := e.save(t, completeStudent())
		_, err := e.Store.DeleteStudent(ctx, st.ID)
		require.NoError(t, err)
		for _, call := range []func() error{
			func() error { _, err := e.Service.RecommendationsV2(ctx, st.ID, 5, 0); return err },
			func() error { _, err := e.Service.Recommendations(ctx, st.ID, 5, 0); return err },
			func() error { _, err := e.Service.CategoryPrior(ctx, st.ID); return err },
		} {
			var de *domain.Error
			require.ErrorAs(t, call(), &de)
			assert.Equal(t, domain.CodeInvalidStudentID, de.Code)
		}
	})
}

func TestRecommendationsV2ServesIncompleteProfiles(t *testing.T) {
	e := newEnv(t, 200, 0)
	ctx := context.Background()
	st := e.save(t, domain.Student{ID: uuid.NewString(), Name: "C", Email: "c@example.com", GraduationYear: "2028"})

	page, err := e.Service.RecommendationsV2(ctx, st.ID, 20, 0)
	require.NoError(t, err)
	require.Len(t, page.Recommendations, 20)
	for _, r := range page.Recommendations {
		assert.Nil(t, r.Distance)
	}
	assert.EqualValues(t, 1, e.reads(t, "v2_recommendations", "miss"))
	_, err = e.Service.RecommendationsV2(ctx, st.ID, 20, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 1, e.reads(t, "v2_recommendations", "hit"))

	// The stored feed does not make the profile complete for the others.
	var de *domain.Error
	_, err = e.Service.Recommendations(ctx, st.ID, 20, 0)
	require.ErrorAs(t, err, &de)
	assert.Equal(t, domain.CodeMissingProfile, de.Code)
	assert.Equal(t, []string{domain.MissingAcademic, domain.MissingLocation}, de.Details["missing"])
	_, err = e.Service.CompactFeed(ctx, st.ID, query.Prefetched{})
	require.ErrorAs(t, err, &de)
	assert.Equal(t, domain.CodeMissingProfile, de.Code)
	page2, err := e.Service.RecommendationsV2(ctx, st.ID, 20, 0)
	require.NoError(t, err)
	assert.Equal(t, page, page2, "and they leave the stored feed alone")
}

func roundedMap(w match.Weights) map[string]float64 {
	out := map[string]float64{}
	for k, v := range w.Sanitize().Map() {
		out[k] = math.Round(v*1e4) / 1e4
	}
	return out
}

func TestCategoriesConcurrentFirstUse(t *testing.T) {
	e := newEnv(t, 500, 0)
	const n = 8
	lists := make([]query.CategoryList, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lists[i] = e.Service.Categories()
		}()
	}
	wg.Wait()
	for _, l := range lists[1:] {
		assert.Equal(t, lists[0], l)
	}
	assert.Same(t, &e.Service.Categories().Categories[0], &e.Service.Categories().Categories[0])
}
