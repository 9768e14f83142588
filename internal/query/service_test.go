package query_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
)

func TestRecommendationsMissThenHit(t *testing.T) {
	e := newEnv(t, 300, 0)
	ctx := context.Background()
	st := e.save(t, completeStudent())

	first, err := e.Service.Recommendations(ctx, st.ID, 20, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 1, e.Students.loads.Load(), "a miss loads the student once")
	assert.EqualValues(t, 1, e.reads(t, "recommendations", "miss"))
	assert.EqualValues(t, 1, counter(t, e.Registry, "matching_feed_cache_writes_total", map[string]string{"result": "stored"}))

	second, err := e.Service.Recommendations(ctx, st.ID, 20, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 1, e.Students.loads.Load(), "a hit does not touch PostgreSQL")
	assert.EqualValues(t, 1, e.reads(t, "recommendations", "hit"))
	assert.Equal(t, first, second, "the stored feed answers exactly what the build did")

	// The compact page and match detail come from the same stored feed.
	c, err := e.Service.CompactFeed(ctx, st.ID, query.Prefetched{})
	require.NoError(t, err)
	assert.NotEmpty(t, c.Body)
	assert.EqualValues(t, 1, e.reads(t, "compact", "hit"))
	d, err := e.Service.MatchDetail(ctx, st.ID, first.Recommendations[0].SchoolID)
	require.NoError(t, err)
	assert.EqualValues(t, 1, e.Students.loads.Load(), "nor does the compact page, or match detail")
	assert.Equal(t, first.Recommendations[0].MatchScore, d.OverallScore, "detail and list agree")
	assert.Equal(t, first.Recommendations[0].MatchGrade, d.Grade)

	// The page itself.
	require.Len(t, first.Recommendations, 20)
	assert.Equal(t, query.Metadata{TotalCount: 300, LearningPhase: "discovery", AlgorithmVersion: match.AlgorithmVersion}, first.Metadata)
	assert.Equal(t, "discovery", first.LearningState.Phase)
	assert.Zero(t, first.LearningState.Progress)
	assert.Equal(t, match.SeedWeights(match.NewProfile(st)).Map(), first.LearningState.PreferenceWeights,
		"without a learning state, the weights the profile seeds")
	for i, r := range first.Recommendations {
		assert.Equal(t, query.IsProbePosition(0, i+1), r.IsProbe, "every 4th item is a probe")
		assert.Equal(t, r.MatchScore, math.Round(r.MatchScore*1e4)/1e4, "4 decimals")
		assert.Equal(t, match.Grade(r.MatchScore), r.MatchGrade)
		assert.Equal(t, r.SchoolID, r.School.ID)
		assert.Equal(t, r.Name, r.School.Name)
		assert.NotEmpty(t, r.MatchReasons)
		assert.Equal(t, r.MatchReasons, r.Explanations)
		assert.Contains(t, []string{"reach", "target", "safety"}, r.AdmissionBand)
		require.NotNil(t, r.Distance, "the student has a home")
		assert.Equal(t, *r.Distance, math.Round(*r.Distance*10)/10)
		assert.NotNil(t, r.MatchedMajors)
	}
}

func TestRecommendationsPaging(t *testing.T) {
	e := newEnv(t, 300, 50) // 50 stored positions, so deeper pages are ranked per request
	ctx := context.Background()
	st := e.save(t, completeStudent())
	full := e.service(t, e.Students, cache.NewFeeds(e.Redis, time.Minute), 1000)

	ids := func(p query.RecommendationsPage) []string {
		out := make([]string, len(p.Recommendations))
		for i, r := range p.Recommendations {
			out[i] = r.SchoolID
		}
		return out
	}
	all, err := full.Recommendations(ctx, st.ID, 100, 0)
	require.NoError(t, err)
	require.NoError(t, e.Feeds.Delete(ctx, st.ID))

	var tiled []string
	for off := 0; off < 100; off += 30 {
		p, err := e.Service.Recommendations(ctx, st.ID, min(30, 100-off), off)
		require.NoError(t, err)
		assert.Equal(t, 300, p.Metadata.TotalCount)
		tiled = append(tiled, ids(p)...)
	}
	assert.Equal(t, ids(all), tiled, "pages across the stored/unstored boundary tile the same list")

	last, err := e.Service.Recommendations(ctx, st.ID, 100, 250)
	require.NoError(t, err)
	assert.Len(t, last.Recommendations, 50, "the last page is short")
	past, err := e.Service.Recommendations(ctx, st.ID, 20, 300)
	require.NoError(t, err)
	assert.Empty(t, past.Recommendations, "past the end: empty")
	assert.NotNil(t, past.Recommendations, "an empty array, not null")
	assert.Equal(t, 300, past.Metadata.TotalCount)
}

// With the stored size the service keeps, pages past the stored items are
// built per request and tile the same list as a feed holding every school,
// before and after a swipe's patch took the head off the stored feed.
func TestPagesPastTheStoredFeedTile(t *testing.T) {
	e := newEnv(t, 300, 0)
	ctx := context.Background()
	st := e.save(t, completeStudent())
	whole := e.service(t, e.Students, cache.NewFeeds(e.Redis, time.Minute), 300)
	all, err := whole.Recommendations(ctx, st.ID, 300, 0)
	require.NoError(t, err)
	require.Len(t, all.Recommendations, 300)
	require.NoError(t, e.Feeds.Delete(ctx, st.ID))

	tile := func(label string, total, step int) []string {
		t.Helper()
		var out []string
		for off := 0; off < total; off += step {
			p, err := e.Service.Recommendations(ctx, st.ID, step, off)
			require.NoError(t, err, label)
			assert.Equal(t, total, p.Metadata.TotalCount, label)
			for _, r := range p.Recommendations {
				out = append(out, r.SchoolID)
			}
		}
		return out
	}
	want := make([]string, len(all.Recommendations))
	for i, r := range all.Recommendations {
		want[i] = r.SchoolID
	}
	assert.Equal(t, want, tile("as built", 300, query.CompactPageSize))
	f, err := e.Feeds.Feed(ctx, st.ID)
	require.NoError(t, err)
	require.Equal(t, query.DefaultFeedSize, f.Len(), "the stored feed keeps DefaultFeedSize items")
	assert.Equal(t, want, tile("pages straddling the stored end", 300, 30))

	trips := cache.NewSwipeTrips(e.Feeds, handover.NewQueuer())
	requireNoPatchError(t)(trips.AfterWrite(ctx, cache.FeedPatch{StudentID: st.ID, Version: f.StudentVersion + 1,
		SwipeCount: f.TotalSwipes + 1, Swiped: []string{want[0]}}))
	f, err = e.Feeds.Feed(ctx, st.ID)
	require.NoError(t, err)
	require.Equal(t, query.DefaultFeedSize-1, f.Len(), "the swipe's patch took the head off")
	assert.Equal(t, want[1:], tile("after a swipe's patch", 299, query.CompactPageSize))
}

func TestRecommendationsErrors(t *testing.T) {
	e := newEnv(t, 50, 0)
	ctx := context.Background()

	unknown := uuid.NewString()
	_, err := e.Service.Recommendations(ctx, unknown, 20, 0)
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	assert.Equal(t, domain.CodeInvalidStudentID, de.Code)
	assert.Equal(t, unknown, de.Details["student_id"])
	_, err = e.Service.CompactFeed(ctx, unknown, query.Prefetched{})
	require.ErrorAs(t, err, &de)
	assert.Equal(t, domain.CodeInvalidStudentID, de.Code)
	_, err = e.Service.MatchDetail(ctx, unknown, uuid.NewString())
	require.ErrorAs(t, err, &de)
	assert.Equal(t, domain.CodeInvalidStudentID, de.Code, "the student is checked before the school")

	partial := e.save(t, domain.Student{ID: uuid.NewString(), Name: "B", Email: "b@example.com", GraduationYear: "2027", GPA: ptr(3.1)})
	_, err = e.Service.Recommendations(ctx, partial.ID, 20, 0)
	require.ErrorAs(t, err, &de)
	assert.Equal(t, domain.KindUnprocessable, de.Kind)
	assert.Equal(t, domain.CodeMissingProfile, de.Code)
	assert.Equal(t, []string{domain.MissingLocation}, de.Details["missing"])
	_, err = e.Service.CompactFeed(ctx, partial.ID, query.Prefetched{})
	require.ErrorAs(t, err, &de)
	assert.Equal(t, domain.CodeMissingProfile, de.Code)
	n, err := e.Redis.Exists(ctx, cache.FeedKey(partial.ID)).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "nothing is stored for an incomplete profile")
}

func TestStaleFeedIsRebuilt(t *testing.T) {
	e := newEnv(t, 100, 0)
	ctx := context.Background()
	st := e.save(t, completeStudent())
	_, err := e.Service.Recommendations(ctx, st.ID, 5, 0)
	require.NoError(t, err)

	// The catalogue changes and is reloaded: feeds built on the old one are stale.
	schools := catalog.Generate(101, 7)
	_, err = e.Store.UpsertSchools(ctx, schools[100:])
	require.NoError(t, err)
	changed, err := e.Catalog.Refresh(ctx)
	require.NoError(t, err)
	require.True(t, changed)

	p, err := e.Service.Recommendations(ctx, st.ID, 5, 0)
	require.NoError(t, err)
	assert.Equal(t, 101, p.Metadata.TotalCount)
	assert.EqualValues(t, 1, e.reads(t, "recommendations", "stale"))
	assert.EqualValues(t, 2, e.Students.loads.Load())
	_, err = e.Service.CompactFeed(ctx, st.ID, query.Prefetched{})
	require.NoError(t, err)
	assert.EqualValues(t, 1, e.reads(t, "compact", "hit"), "the rebuilt feed was stored")
}

func TestPrefetchedCompactFeed(t *testing.T) {
	e := newEnv(t, 100, 0)
	ctx := context.Background()
	st := e.save(t, completeStudent())
	prefetch := func() query.Prefetched {
		read := e.Service.CompactRead(st.ID)
		_, err := e.Redis.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			read.Queue(ctx, pipe)
			return nil
		})
		require.NoError(t, err)
		return query.Prefetched{Done: true, Compact: read}
	}

	built, err := e.Service.CompactFeed(ctx, st.ID, prefetch()) // prefetched: not there
	require.NoError(t, err)
	assert.EqualValues(t, 1, e.reads(t, "compact", "miss"))

	got, err := e.Service.CompactFeed(ctx, st.ID, prefetch())
	require.NoError(t, err)
	assert.Equal(t, built.ETag, got.ETag)
	assert.Equal(t, built.Body, got.Body)
	assert.EqualValues(t, 1, e.Students.loads.Load(), "a prefetched page needs nothing else")
	assert.EqualValues(t, 1, e.reads(t, "compact", "hit"))

	require.NoError(t, e.Redis.HSet(ctx, cache.FeedKey(st.ID), cache.FieldCompact, "garbage").Err())
	_, err = e.Service.CompactFeed(ctx, st.ID, prefetch())
	require.NoError(t, err)
	assert.EqualValues(t, 1, e.reads(t, "compact", "stale"), "an unreadable value is rebuilt, not served")
}

func TestLearnedWeightsAreUsed(t *testing.T) {
	e := newEnv(t, 200, 0)
	ctx := context.Background()
	st := e.save(t, completeStudent())
	_, err := e.Store.Pool().Exec(ctx, `INSERT INTO learning_state (student_id, model, weights) VALUES ($1, '{}', $2)`,
		st.ID, `{"cost_weight": 0.95, "distance_weight": 0.05, "size_preference": 0.9, "like_threshold": 0.4, "note": "x"}`)
	require.NoError(t, err)

	p, err := e.Service.Recommendations(ctx, st.ID, 20, 0)
	require.NoError(t, err)
	w := p.LearningState.PreferenceWeights
	assert.Equal(t, 0.95, w[match.KeyCostWeight])
	assert.Equal(t, 0.05, w[match.KeyDistanceWeight])
	assert.Equal(t, 0.9, w[match.KeySizePreference])
	assert.Equal(t, 0.5, w[match.KeyAidWeight], "keys the learner has not set take the default")
	assert.NotContains(t, w, "like_threshold", "only preference weights are shown")

	want := match.WeightsFromMap(map[string]float64{"cost_weight": 0.95, "distance_weight": 0.05, "size_preference": 0.9})
	cat := e.Catalog.Current()
	ranked := match.Rank(nil, match.NewProfile(st), want, cat.Catalog)
	assert.Equal(t, cat.Schools[ranked[0].Index].ID, p.Recommendations[0].SchoolID, "ranked with the learned weights")
}

func TestInvalidateFeed(t *testing.T) {
	e := newEnv(t, 100, 0)
	ctx := context.Background()
	st := completeStudent()
	st = e.save(t, st)
	_, err := e.Service.Recommendations(ctx, st.ID, 5, 0)
	require.NoError(t, err)
	old, err := e.Feeds.Feed(ctx, st.ID)
	require.NoError(t, err)

	st.State, st.HomeLat, st.HomeLon = "CA", ptr(37.77), ptr(-122.42)
	st = e.save(t, st) // version + 1
	e.Service.InvalidateFeed(ctx, st.ID)
	_, err = e.Feeds.Feed(ctx, st.ID)
	require.ErrorIs(t, err, cache.ErrNotBuilt)

	stored, err := e.Feeds.Put(ctx, old)
	require.NoError(t, err)
	assert.False(t, stored, "a build from before the change cannot store its result")

	_, err = e.Service.Recommendations(ctx, st.ID, 5, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 2, e.Students.loads.Load())
	f, err := e.Feeds.Feed(ctx, st.ID)
	require.NoError(t, err, "the new version's feed is stored")
	assert.Greater(t, f.StudentVersion, old.StudentVersion)
	assert.NotEqual(t, old.Range(0, 1)[0].Distance, f.Range(0, 1)[0].Distance, "distances from the new home")

	// An unknown student: nothing to invalidate, and no error surfaces.
	e.Service.InvalidateFeed(ctx, uuid.NewString())
}

// With Redis unreachable every read is computed from PostgreSQL.
func TestRedisDown(t *testing.T) {
	e := newEnv(t, 100, 0)
	ctx := context.Background()
	st := e.save(t, completeStudent())
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = down.Close() })
	svc := e.service(t, e.Students, cache.NewFeeds(down, time.Minute), 0)

	start := time.Now()
	p, err := svc.Recommendations(ctx, st.ID, 10, 0)
	require.NoError(t, err)
	assert.Len(t, p.Recommendations, 10)
	c, err := svc.CompactFeed(ctx, st.ID, query.Prefetched{})
	require.NoError(t, err)
	assert.NotEmpty(t, c.Body)
	d, err := svc.MatchDetail(ctx, st.ID, p.Recommendations[0].SchoolID)
	require.NoError(t, err)
	assert.Equal(t, p.Recommendations[0].MatchScore, d.OverallScore)
	assert.Less(t, time.Since(start), 2*time.Second, "an unreachable Redis does not stall reads")
	assert.Positive(t, e.reads(t, "recommendations", "error"))
	assert.Positive(t, counter(t, e.Registry, "matching_feed_cache_writes_total", map[string]string{"result": "error"}))
}

// With PostgreSQL unreachable a miss is 503; a cached read is still served.
func TestPostgresDown(t *testing.T) {
	e := newEnv(t, 100, 0)
	ctx := context.Background()
	cached := e.save(t, completeStudent())
	_, err := e.Service.Recommendations(ctx, cached.ID, 5, 0)
	require.NoError(t, err)

	pool, err := pgxpool.New(ctx, "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=1")
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	svc := e.service(t, &countingStudents{src: store.New(pool)}, e.Feeds, 0)

	_, err = svc.Recommendations(ctx, uuid.NewString(), 5, 0)
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	assert.Equal(t, domain.KindUnavailable, de.Kind, "%v", err)
	assert.Equal(t, domain.CodeServiceUnavailable, de.Code)

	p, err := svc.Recommendations(ctx, cached.ID, 5, 0)
	require.NoError(t, err, "a cached read does not need PostgreSQL")
	assert.Len(t, p.Recommendations, 5)
	_, err = svc.CompactFeed(ctx, cached.ID, query.Prefetched{})
	require.NoError(t, err)
}

func TestMatchDetail(t *testing.T) {
	e := newEnv(t, 200, 0)
	ctx := context.Background()
	st := e.save(t, completeStudent())
	cat := e.Catalog.Current()
	school := cat.Schools[17]

	d, err := e.Service.MatchDetail(ctx, st.ID, school.ID)
	require.NoError(t, err)
	assert.EqualValues(t, 1, e.reads(t, "match", "miss"))
	p := match.NewProfile(st)
	want := match.Detail(p, match.SeedWeights(p), cat.Catalog, 17)
	assert.Equal(t, st.ID, d.StudentID)
	assert.Equal(t, school.ID, d.SchoolID)
	assert.Equal(t, math.Round(want.OverallScore*1e4)/1e4, d.OverallScore)
	assert.Equal(t, match.Grade(d.OverallScore), d.Grade)
	assert.Equal(t, want.Explanation, d.Explanation)
	assert.Equal(t, want.Reasons, d.MatchReasons)
	assert.Equal(t, want.AdmissionBand, d.AdmissionBand)
	assert.Empty(t, d.Missing)
	assert.NotNil(t, d.Missing)
	for name, c := range map[string]query.DetailComponent{"academic": d.Components.Academic, "financial": d.Components.Financial,
		"campus": d.Components.Campus, "outcomes": d.Components.Outcomes} {
		assert.Len(t, c.Factors, 3, name)
		for k, v := range c.Factors {
			assert.Equal(t, v, math.Round(v*1e4)/1e4, "%s.%s rounded", name, k)
			assert.True(t, v >= 0 && v <= 1, "%s.%s in [0,1]", name, k)
		}
	}
	assert.Contains(t, d.Components.Academic.Factors, "sat_match")
	assert.Contains(t, d.Components.Financial.Factors, "value_score")
	assert.Contains(t, d.Components.Campus.Factors, "location_fit")
	assert.Contains(t, d.Components.Outcomes.Factors, "employment")
	require.NotNil(t, d.Distance)

	// Any letter case of the school id.
	_, err = e.Service.MatchDetail(ctx, st.ID, "  ")
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	assert.Equal(t, domain.CodeInvalidSchoolID, de.Code)
	unknown := uuid.NewString()
	_, err = e.Service.MatchDetail(ctx, st.ID, unknown)
	require.ErrorAs(t, err, &de)
	assert.Equal(t, domain.CodeInvalidSchoolID, de.Code)
	assert.Equal(t, unknown, de.Details["school_id"])
}

func TestMatchDetailIncompleteProfile(t *testing.T) {
	e := newEnv(t, 100, 0)
	ctx := context.Background()
	full := e.save(t, completeStudent())
	bare := e.save(t, domain.Student{ID: uuid.NewString(), Name: "C", Email: "c@example.com", GraduationYear: "2028"})
	school := e.Catalog.Current().Schools[3].ID

	a, err := e.Service.MatchDetail(ctx, full.ID, school)
	require.NoError(t, err)
	b, err := e.Service.MatchDetail(ctx, bare.ID, school)
	require.NoError(t, err, "an incomplete profile still gets a detail")
	assert.ElementsMatch(t, []string{domain.MissingAcademic, domain.MissingLocation}, b.Missing)
	assert.Less(t, b.Confidence, a.Confidence, "with lower confidence")
	assert.Nil(t, b.Distance, "no home, no distance")
	assert.Equal(t, 0.5, b.Components.Academic.Factors["sat_match"], "no test score: neutral")
	assert.Equal(t, 0.5, b.Components.Campus.Factors["location_fit"], "no home: neutral")
}

func TestBatchSchools(t *testing.T) {
	e := newEnv(t, 60, 0)
	ctx := context.Background()
	cat := e.Catalog.Current()
	a, b := cat.Schools[5], cat.Schools[40]
	unknown := uuid.NewString()
	// Deactivate one: it is no longer served.
	_, err := e.Store.DeactivateSchoolsNotIn(ctx, "seed", []string{a.ID, b.ID})
	require.NoError(t, err)
	_, err = e.Catalog.Refresh(ctx)
	require.NoError(t, err)
	inactive := cat.Schools[7].ID

	got := e.Service.Schools(ctx, []string{b.ID, unknown, a.ID, b.ID, inactive, unknown})
	require.Len(t, got.R, 2)
	assert.Equal(t, b.ID, got.R[0].I, "request order")
	assert.Equal(t, a.ID, got.R[1].I)
	assert.Equal(t, []string{unknown, inactive}, got.Missing, "duplicates once, in request order")
	r := got.R[1]
	assert.Equal(t, a.Name, r.N)
	assert.Equal(t, a.City, r.C)
	assert.Equal(t, a.State, r.St)
	if a.AdmissionRate != nil {
		require.NotNil(t, r.Ar)
		assert.Equal(t, int(math.Round(*a.AdmissionRate*100)), *r.Ar)
	}

	empty := e.Service.Schools(ctx, nil)
	assert.NotNil(t, empty.R)
	assert.NotNil(t, empty.Missing)
}
