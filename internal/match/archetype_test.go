package match_test

import (
	"math"
	"math/rand/v2"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

func TestArchetypesAreSixWithSlugIDs(t *testing.T) {
	as := match.Archetypes()
	require.Len(t, as, 6)
	slug := regexp.MustCompile(`^[a-z]+(-[a-z]+)*$`)
	seen := map[match.ArchetypeID]bool{}
	for _, a := range as {
		assert.Regexp(t, slug, string(a.ID))
		assert.False(t, seen[a.ID], "duplicate id %s", a.ID)
		seen[a.ID] = true
		assert.NotEmpty(t, a.Name)
		assert.NotEmpty(t, a.Description)
		assert.False(t, strings.Contains(a.Description, "\n"), "one line")
		got, ok := match.LookupArchetype(string(a.ID))
		assert.True(t, ok)
		assert.Equal(t, a, got)
	}
	_, ok := match.LookupArchetype("ivy-league")
	assert.False(t, ok)

	as[0].Name = "changed"
	assert.NotEqual(t, "changed", match.Archetypes()[0].Name, "Archetypes returns a copy")
}

func TestSchoolImageURL(t *testing.T) {
	id := "de22eff0-6fe3-5775-8784-d938ca4ec5c8"
	assert.Equal(t, "https://images.collegematch.example/schools/"+id+".jpg", match.SchoolImageURL("", id))
	assert.Equal(t, "https://cdn.example.org/img/schools/"+id+".jpg", match.SchoolImageURL("https://cdn.example.org/img/", id))
	assert.Equal(t, match.SchoolImageURL("", id), match.SchoolImageURL("", id), "stable")
}

// checkCategories asserts what every catalogue's categories must satisfy:
// six, in display order, each with members and an example that is one of
// them, with an absolute https image URL built from the example's id.
func checkCategories(t *testing.T, cat *match.Catalog, cats []match.Category) {
	t.Helper()
	require.Len(t, cats, 6)
	for i, c := range cats {
		assert.Equal(t, match.Archetypes()[i], c.Archetype)
		if !assert.Positive(t, c.Members, "%s has no member", c.ID) || !assert.NotNil(t, c.Example, c.ID) {
			continue
		}
		ex := c.Example
		s := cat.Schools[ex.Index]
		assert.Equal(t, s.ID, ex.ID)
		assert.Equal(t, s.Name, ex.Name)
		assert.Contains(t, match.Classify(s), c.ID, "the example of %s (%s) is a member", c.ID, ex.Name)
		u, err := url.Parse(ex.ImageURL)
		if assert.NoError(t, err) {
			assert.Equal(t, "https", u.Scheme)
			assert.NotEmpty(t, u.Host)
		}
		assert.Equal(t, match.SchoolImageURL("", ex.ID), ex.ImageURL)
	}
}

func memberCounts(schools []domain.School) map[match.ArchetypeID]int {
	n := map[match.ArchetypeID]int{}
	for _, s := range schools {
		for _, a := range match.Classify(s) {
			n[a]++
		}
	}
	return n
}

func TestCategoriesOnGeneratedCatalogue(t *testing.T) {
	schools := catalog.Generate(catalog.DefaultSeedCount, 1)
	cat := match.NewCatalog(schools)
	cats := match.Categories(cat, "")
	checkCategories(t, cat, cats)

	counts := memberCounts(schools)
	examples := map[string]bool{}
	for _, c := range cats {
		assert.Equal(t, counts[c.ID], c.Members, c.ID)
		// Every category is a real group, not a handful of outliers.
		assert.GreaterOrEqual(t, c.Members, 50, c.ID)
		examples[c.Example.ID] = true
		t.Logf("%-20s %5d members, e.g. %s (%s, %s)", c.ID, c.Members, c.Example.Name, c.Example.City, c.Example.State)
	}
	assert.Len(t, examples, 6, "six different example schools")

	// The same content in another order gives the same categories.
	shuffled := slices.Clone(schools)
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	assert.Equal(t, cats, match.Categories(match.NewCatalog(shuffled), ""))

	// The image base is the caller's.
	other := match.Categories(cat, "https://cdn.example.org")
	assert.Equal(t, "https://cdn.example.org/schools/"+cats[0].Example.ID+".jpg", other[0].Example.ImageURL)
}

// scorecardFixture is a few real institutions in the College Scorecard's
// bulk-download columns, with figures close to their published ones.
const scorecardFixture = `UNITID,INSTNM,CITY,STABBR,ZIP,INSTURL,LATITUDE,LONGITUDE,CONTROL,LOCALE,PREDDEG,UGDS,ADM_RATE,SATVR25,SATVR75,SATMT25,SATMT75,NPT4_PUB,NPT4_PRIV,C150_4,C150_L4,MD_EARN_WNE_P10,PCIP03,PCIP09,PCIP11,PCIP12,PCIP14,PCIP16,PCIP23,PCIP24,PCIP26,PCIP27,PCIP30,PCIP40,PCIP42,PCIP45,PCIP50,PCIP51,PCIP52,PCIP54,CURROPER
166027,Harvard University,Cambridge,MA,02138,www.harvard.edu,42.374,-71.118,2,12,3,7100,0.0401,720,780,740,800,NULL,15200,0.97,NULL,95000,0.01,0,0.08,0,0.06,0.03,0.04,0.01,0.10,0.07,0.12,0.05,0.05,0.28,0.04,0,0,0.06,1
168342,Williams College,Williamstown,MA,01267,www.williams.edu,42.712,-73.203,2,41,3,2100,0.0853,700,770,710,790,NULL,19900,0.95,NULL,74000,0.04,0,0.05,0,0,0.05,0.07,0,0.08,0.10,0.03,0.06,0.07,0.25,0.08,0,0,0.08,1
204796,Ohio State University-Main Campus,Columbus,OH,43210,www.osu.edu,40.002,-83.016,1,11,3,46800,0.53,570,680,600,730,19400,NULL,0.88,NULL,58000,0.02,0.05,0.05,0,0.12,0.01,0.02,0,0.08,0.02,0.02,0.02,0.06,0.08,0.03,0.10,0.18,0.02,1
110486,California State University-Bakersfield,Bakersfield,CA,93311,www.csub.edu,35.349,-119.104,1,12,3,9600,0.90,NULL,NULL,NULL,NULL,5400,NULL,0.51,NULL,49000,0,0.04,0.03,0,0.03,0.01,0.02,0,0.06,0.01,0.08,0.01,0.12,0.10,0.02,0.12,0.18,0.03,1
126775,Colorado School of Mines,Golden,CO,80401,www.mines.edu,39.751,-105.222,1,21,3,5600,0.58,610,690,640,740,22000,NULL,0.83,NULL,95000,0,0,0.08,0,0.75,0,0,0,0.02,0.04,0,0.05,0,0.02,0,0,0,0,1
246047,Valencia College,Orlando,FL,32811,valenciacollege.edu,28.522,-81.464,1,21,2,41000,NULL,NULL,NULL,NULL,NULL,4400,NULL,NULL,0.48,36000,0,0.01,0.04,0.01,0.01,0,0,0.60,0.01,0,0,0,0,0,0.02,0.14,0.08,0,1
440794,Paul Mitchell the School-Boise,Boise,ID,83704,paulmitchell.edu,43.605,-116.281,3,12,1,160,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,0.70,21000,0,0,0,0.98,0,0,0,0,0,0,0,0,0,0,0,0,0.02,0,1
999001,Hollow Creek College,Hollow Creek,VT,05401,NULL,44.476,-73.212,2,41,3,NULL,0.60,NULL,NULL,NULL,NULL,NULL,31000,0.60,NULL,40000,0,0,0,0,0,0.08,0.10,0.10,0.12,0.05,0.05,0.05,0.10,0.20,0.15,0,0,0,1
`

func TestCategoriesAfterAScorecardImport(t *testing.T) {
	schools, _, err := catalog.ReadAll(strings.NewReader(scorecardFixture))
	require.NoError(t, err)
	require.Len(t, schools, 8)
	byName := map[string]domain.School{}
	for _, s := range schools {
		byName[s.Name] = s
	}
	want := map[string][]match.ArchetypeID{
		"Harvard University":                      {match.ArchetypeSelectiveResearch},
		"Williams College":                        {match.ArchetypeLiberalArts},
		"Ohio State University-Main Campus":       {match.ArchetypePublicFlagship},
		"California State University-Bakersfield": {match.ArchetypeAffordableRegional},
		"Colorado School of Mines":                {match.ArchetypeTechEngineering},
		"Valencia College":                        {match.ArchetypeCommunityCollege},
		// A for-profit certificate school is none of the six.
		"Paul Mitchell the School-Boise": nil,
		// A liberal-arts programme mix, but no enrollment figure: unknown
		// is not small, so not a member.
		"Hollow Creek College": nil,
	}
	for name, ids := range want {
		s, ok := byName[name]
		require.True(t, ok, name)
		assert.Equal(t, ids, match.Classify(s), name)
	}

	cat := match.NewCatalog(schools)
	cats := match.Categories(cat, "")
	checkCategories(t, cat, cats)
	examples := map[match.ArchetypeID]string{}
	for _, c := range cats {
		examples[c.ID] = c.Example.Name
	}
	assert.Equal(t, map[match.ArchetypeID]string{
		match.ArchetypeSelectiveResearch:  "Harvard University",
		match.ArchetypeLiberalArts:        "Williams College",
		match.ArchetypePublicFlagship:     "Ohio State University-Main Campus",
		match.ArchetypeAffordableRegional: "California State University-Bakersfield",
		match.ArchetypeTechEngineering:    "Colorado School of Mines",
		match.ArchetypeCommunityCollege:   "Valencia College",
	}, examples)
	// An imported school's image URL uses its stable UUIDv5 id.
	assert.Equal(t, match.SchoolImageURL("", catalog.SchoolID(166027)), cats[0].Example.ImageURL)
}

func TestClassifyFallbacksAndMissingData(t *testing.T) {
	p16 := func(v int16) *int16 { return &v }
	p32 := func(v int32) *int32 { return &v }
	pf := func(v float64) *float64 { return &v }

	// Without program shares, a technical name identifies a tech school.
	mines := domain.School{ID: "a", Name: "South Dakota School of Mines and Technology", Control: domain.ControlPublic,
		PredDegree: p16(3), Size: p32(2500), AdmissionRate: pf(0.8)}
	assert.Equal(t, []match.ArchetypeID{match.ArchetypeTechEngineering}, match.Classify(mines))
	// With program shares, the shares decide, whatever the name.
	mines.ProgramShares = map[domain.Major]float64{"business_marketing": 0.6, "engineering": 0.1}
	assert.Empty(t, match.Classify(mines))

	// Without a predominant degree, the name identifies a two-year college.
	cc := domain.School{ID: "b", Name: "Lakeshore Community College", Control: domain.ControlPublic}
	assert.Equal(t, []match.ArchetypeID{match.ArchetypeCommunityCollege}, match.Classify(cc))
	cc.Control = domain.ControlForProfit
	assert.Empty(t, match.Classify(cc), "for-profit schools are not community colleges")

	// Without a predominant degree, a published SAT range marks a four-year
	// school; without an admission rate, the SAT midpoint measures selectivity.
	research := domain.School{ID: "c", Name: "Northern University", Control: domain.ControlNonprofit,
		Size: p32(9000), SAT25: p16(1380), SAT75: p16(1540)}
	assert.Equal(t, []match.ArchetypeID{match.ArchetypeSelectiveResearch}, match.Classify(research))
	research.SAT25, research.SAT75 = p16(1000), p16(1200)
	assert.Empty(t, match.Classify(research))

	// A large selective public engineering university is in three groups.
	gt := domain.School{ID: "d", Name: "Georgia Institute of Technology-Main Campus", Control: domain.ControlPublic,
		PredDegree: p16(3), Size: p32(16500), AdmissionRate: pf(0.17),
		ProgramShares: map[domain.Major]float64{"engineering": 0.5, "computer": 0.15, "business_marketing": 0.1}}
	assert.Equal(t, []match.ArchetypeID{match.ArchetypeSelectiveResearch, match.ArchetypePublicFlagship,
		match.ArchetypeTechEngineering}, match.Classify(gt))

	// Bad data (NaN, out of range) counts as missing and never classifies.
	bad := domain.School{ID: "e", Name: "Broken Data University", Control: domain.ControlPublic, PredDegree: p16(3),
		Size: p32(-5), AdmissionRate: pf(math.NaN()), AvgNetPrice: p32(-100),
		ProgramShares: map[domain.Major]float64{"engineering": math.Inf(1), "computer": math.NaN()}}
	assert.Equal(t, []match.ArchetypeID{match.ArchetypeAffordableRegional}, match.Classify(bad),
		"public, four-year, size unknown, open admission and a net price of $0 (negative counts as 0)")

	assert.Empty(t, match.Classify(domain.School{}))
}

func TestCategoriesExamples(t *testing.T) {
	p16 := func(v int16) *int16 { return &v }
	p32 := func(v int32) *int32 { return &v }
	pf := func(v float64) *float64 { return &v }
	cc := func(id, name string) domain.School {
		return domain.School{ID: id, Name: name, Control: domain.ControlPublic, PredDegree: p16(2), Size: p32(5000),
			AvgNetPrice: p32(5000), GradRate: pf(0.3)}
	}

	t.Run("ties go to the name, then the id", func(t *testing.T) {
		cat := match.NewCatalog([]domain.School{cc("3", "Bayside Community College"), cc("1", "Cedar Community College"),
			cc("2", "Bayside Community College")})
		c := match.Categories(cat, "")[5]
		require.Equal(t, match.ArchetypeCommunityCollege, c.ID)
		assert.Equal(t, 3, c.Members)
		assert.Equal(t, "2", c.Example.ID)
	})

	t.Run("a school already shown is not shown twice when there is another", func(t *testing.T) {
		gt := domain.School{ID: "gt", Name: "Georgia Institute of Technology", Control: domain.ControlPublic, PredDegree: p16(3),
			Size: p32(16500), AdmissionRate: pf(0.17), GradRate: pf(0.9),
			ProgramShares: map[domain.Major]float64{"engineering": 0.5, "computer": 0.2}}
		big := domain.School{ID: "big", Name: "Big State University", Control: domain.ControlPublic, PredDegree: p16(3),
			Size: p32(30000), AdmissionRate: pf(0.8), GradRate: pf(0.6)}
		cats := match.Categories(match.NewCatalog([]domain.School{gt, big}), "")
		assert.Equal(t, "gt", cats[0].Example.ID, "selective-research: its only member")
		assert.Equal(t, 2, cats[2].Members)
		assert.Equal(t, "big", cats[2].Example.ID, "public-flagship: the other member")
		assert.Equal(t, "gt", cats[4].Example.ID, "tech-engineering: its only member, even if shown before")
	})

	t.Run("a category without members has no example", func(t *testing.T) {
		cats := match.Categories(match.NewCatalog([]domain.School{cc("1", "Cedar Community College")}), "")
		require.Len(t, cats, 6)
		for _, c := range cats[:5] {
			assert.Zero(t, c.Members)
			assert.Nil(t, c.Example)
		}
		assert.NotNil(t, cats[5].Example)
		for _, c := range match.Categories(match.NewCatalog(nil), "") {
			assert.Nil(t, c.Example)
		}
		assert.Len(t, match.Categories(nil, ""), 6)
	})
}

func liked(ids ...match.ArchetypeID) []match.CategoryPreference {
	out := make([]match.CategoryPreference, len(ids))
	for i, id := range ids {
		out[i] = match.CategoryPreference{ID: id, Liked: true}
	}
	return out
}

func disliked(ids ...match.ArchetypeID) []match.CategoryPreference {
	out := liked(ids...)
	for i := range out {
		out[i].Liked = false
	}
	return out
}

func TestCategoryPriorDirections(t *testing.T) {
	base := match.DefaultWeights()
	type move struct {
		key string
		dir int // +1 up, -1 down
	}
	tests := []struct {
		id    match.ArchetypeID
		moves []move
	}{
		{match.ArchetypeSelectiveResearch, []move{{match.KeyAcademicSelectivity, +1}, {match.KeyOutcomesWeight, +1}}},
		{match.ArchetypeLiberalArts, []move{{match.KeySizePreference, -1}, {match.KeyCampusWeight, +1}}},
		{match.ArchetypePublicFlagship, []move{{match.KeySizePreference, +1}}},
		{match.ArchetypeAffordableRegional, []move{{match.KeyCostWeight, +1}, {match.KeyDistanceWeight, +1}}},
		{match.ArchetypeTechEngineering, []move{{match.KeyProgramWeight, +1}}},
		{match.ArchetypeCommunityCollege, []move{{match.KeyCostWeight, +1}, {match.KeyDistanceWeight, +1}, {match.KeyAcademicSelectivity, -1}}},
	}
	for _, tt := range tests {
		t.Run(string(tt.id), func(t *testing.T) {
			up := match.CategoryPrior(base, liked(tt.id)).Map()
			down := match.CategoryPrior(base, disliked(tt.id)).Map()
			b := base.Map()
			for _, m := range tt.moves {
				likeStep := (up[m.key] - b[m.key]) * float64(m.dir)
				dislikeStep := (b[m.key] - down[m.key]) * float64(m.dir)
				assert.Greater(t, likeStep, 0.0, "liking moves %s", m.key)
				assert.Greater(t, dislikeStep, 0.0, "disliking moves %s the other way", m.key)
				assert.Less(t, dislikeStep, likeStep, "disliking moves %s by a smaller step", m.key)
			}
			moved := 0
			for _, k := range match.WeightKeys {
				if up[k] != b[k] {
					moved++
				}
			}
			assert.LessOrEqual(t, moved, 4, "a category moves a few weights, not all")
		})
	}

	// The liberal-arts lean: small and campus-minded.
	w := match.CategoryPrior(base, liked(match.ArchetypeLiberalArts))
	assert.InDelta(t, 0.2, w.SizePreference, 1e-9)
	assert.InDelta(t, 0.75, w.CampusWeight, 1e-9)
}

func TestCategoryPriorKeepsBoundsAndIgnoresOrder(t *testing.T) {
	all := match.Archetypes()
	rng := rand.New(rand.NewPCG(11, 12))
	for n := range 500 {
		base := match.Weights{}
		for _, k := range match.WeightKeys {
			v := rng.Float64()
			switch n % 5 {
			case 0:
				v = 0
			case 1:
				v = 1
			}
			base = match.WeightsFromMap(merge(base.Map(), k, v))
		}
		var prefs []match.CategoryPreference
		for _, a := range all {
			switch rng.IntN(3) {
			case 1:
				prefs = append(prefs, match.CategoryPreference{ID: a.ID, Liked: true})
			case 2:
				prefs = append(prefs, match.CategoryPreference{ID: a.ID, Liked: false})
			}
		}
		got := match.CategoryPrior(base, prefs)
		for k, v := range got.Map() {
			require.GreaterOrEqual(t, v, 0.0, k)
			require.LessOrEqual(t, v, 1.0, k)
		}
		shuffled := slices.Clone(prefs)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		require.Equal(t, got, match.CategoryPrior(base, shuffled), "order does not matter")
		require.Equal(t, got, match.CategoryPrior(base, append(shuffled, prefs...)), "each category counts once")
	}

	// Pushed past the ends, values stop at the bounds.
	lo := match.Weights{SizePreference: 0.05, CostWeight: 0.98}
	w := match.CategoryPrior(lo, liked(match.ArchetypeLiberalArts, match.ArchetypeCommunityCollege, match.ArchetypeAffordableRegional))
	assert.Equal(t, 0.0, w.SizePreference)
	assert.Equal(t, 1.0, w.CostWeight)

	// NaN in the base takes the default; unknown ids and an empty list change nothing.
	assert.Equal(t, match.DefaultWeights(), match.CategoryPrior(match.Weights{
		CostWeight: math.NaN(), DistanceWeight: 0.5, OutcomesWeight: 0.5, CampusWeight: 0.5, ProgramWeight: 0.5,
		AidWeight: 0.5, AcademicSelectivity: 0.5, SizePreference: 0.5,
	}, liked("ivy-league")))
	assert.Equal(t, match.DefaultWeights(), match.CategoryPrior(match.DefaultWeights(), nil))

	// Liked and disliked at once says nothing.
	both := append(liked(match.ArchetypeLiberalArts), disliked(match.ArchetypeLiberalArts)...)
	assert.Equal(t, match.DefaultWeights(), match.CategoryPrior(match.DefaultWeights(), both))

	// The base is not modified.
	base := match.DefaultWeights()
	_ = match.CategoryPrior(base, liked(match.ArchetypePublicFlagship))
	assert.Equal(t, match.DefaultWeights(), base)
}

func merge(m map[string]float64, k string, v float64) map[string]float64 {
	m[k] = v
	return m
}

func TestCategoryPreferenceFrom(t *testing.T) {
	assert.Equal(t, match.CategoryPreference{ID: match.ArchetypeLiberalArts, Liked: true},
		match.CategoryPreferenceFrom("liberal-arts", "right"))
	assert.Equal(t, match.CategoryPreference{ID: match.ArchetypeLiberalArts, Liked: false},
		match.CategoryPreferenceFrom("liberal-arts", "left"))
}

func TestCategoryStart(t *testing.T) {
	sat := 1250
	p := match.NewProfile(domain.Student{SAT: &sat, State: "OH", PreferredSize: "large"})

	got, w := match.CategoryStart(p, liked(match.ArchetypeTechEngineering))
	assert.Equal(t, []domain.Major{"engineering", "computer"}, got.Majors, "majors suggested when none were named")
	assert.Greater(t, w.ProgramWeight, match.DefaultWeights().ProgramWeight)
	assert.Equal(t, 1.0, match.CategoryPrior(match.SeedWeights(p), liked(match.ArchetypePublicFlagship)).SizePreference,
		"the prior starts from the profile's seed weights (large: 0.9)")

	p.Majors = []domain.Major{"history"}
	got, _ = match.CategoryStart(p, liked(match.ArchetypeTechEngineering))
	assert.Equal(t, []domain.Major{"history"}, got.Majors, "named majors are kept")

	assert.Nil(t, match.CategoryMajors(disliked(match.ArchetypeTechEngineering)))
	assert.Nil(t, match.CategoryMajors(nil))
}

// A liked category shows in the first page of a cold-start ranking: the
// prior makes the page lean towards the category.
func TestCategoryPriorMovesTheFirstPage(t *testing.T) {
	schools := catalog.Generate(catalog.DefaultSeedCount, 1)
	cat := match.NewCatalog(schools)
	page := func(gpa float64, prefs []match.CategoryPreference) []domain.School {
		p := match.NewProfile(domain.Student{GPA: &gpa, State: "OH"})
		prof, w := match.CategoryStart(p, prefs)
		ranked := match.Rank(nil, prof, w, cat)
		out := make([]domain.School, 20)
		for i := range out {
			out[i] = cat.Schools[ranked[i].Index]
		}
		return out
	}
	medianSize := func(ss []domain.School) float64 {
		var v []float64
		for _, s := range ss {
			if s.Size != nil {
				v = append(v, float64(*s.Size))
			}
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	members := func(ss []domain.School, id match.ArchetypeID) int {
		n := 0
		for _, s := range ss {
			if slices.Contains(match.Classify(s), id) {
				n++
			}
		}
		return n
	}

	none := page(3.6, nil)
	small := page(3.6, liked(match.ArchetypeLiberalArts))
	large := page(3.6, liked(match.ArchetypePublicFlagship))
	assert.Less(t, medianSize(small), medianSize(none))
	assert.Greater(t, medianSize(large), medianSize(none))

	for _, tt := range []struct {
		id  match.ArchetypeID
		gpa float64
	}{
		{match.ArchetypeSelectiveResearch, 3.95},
		{match.ArchetypeLiberalArts, 3.6},
		{match.ArchetypePublicFlagship, 3.6},
		{match.ArchetypeAffordableRegional, 3.95},
		{match.ArchetypeTechEngineering, 3.6},
		{match.ArchetypeCommunityCollege, 2.8},
	} {
		before, after := members(page(tt.gpa, nil), tt.id), members(page(tt.gpa, liked(tt.id)), tt.id)
		assert.Greater(t, after, before, "%s members on the first page, GPA %.2f", tt.id, tt.gpa)
		t.Logf("%-20s GPA %.2f: %2d of 20 before the like, %2d after", tt.id, tt.gpa, before, after)
	}
}

func BenchmarkCategories(b *testing.B) {
	cat := match.NewCatalog(catalog.Generate(catalog.DefaultSeedCount, 1))
	b.ReportAllocs()
	for b.Loop() {
		_ = match.Categories(cat, "")
	}
}
