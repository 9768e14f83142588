package catalog_test

import (
	"math"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
)

// seedCatalogue is generated once; the tests below only read it.
var seedCatalogue = catalog.Generate(catalog.DefaultSeedCount, 1)

func TestGenerateIsDeterministic(t *testing.T) {
	again := catalog.Generate(catalog.DefaultSeedCount, 1)
	require.Equal(t, seedCatalogue, again, "same (n, seed) must give identical schools")

	other := catalog.Generate(catalog.DefaultSeedCount, 2)
	require.Len(t, other, catalog.DefaultSeedCount)
	assert.Equal(t, seedCatalogue[0].ID, other[0].ID, "ids depend on the index only")
	differ := 0
	for i := range other {
		if other[i].Name != seedCatalogue[i].Name || other[i].State != seedCatalogue[i].State {
			differ++
		}
	}
	assert.Greater(t, differ, len(other)*9/10, "a different seed must give a different catalogue")
}

func TestGenerateCount(t *testing.T) {
	for _, n := range []int{0, 1, 10, 51, 200, 6000} {
		got := catalog.Generate(n, 7)
		assert.Len(t, got, n, "n=%d", n)
	}
	assert.Empty(t, catalog.Generate(-5, 7))
	assert.Len(t, seedCatalogue, catalog.DefaultSeedCount)
}

func TestGenerateCoversEveryState(t *testing.T) {
	perState := map[string]int{}
	for _, s := range seedCatalogue {
		perState[s.State]++
	}
	require.Len(t, perState, len(domain.States), "50 states and DC, nothing else")
	for _, st := range domain.States {
		assert.GreaterOrEqual(t, perState[st.Code], 5, "state %s has too few schools", st.Code)
	}
	// The biggest higher-education states lead, as in IPEDS.
	for _, big := range []string{"CA", "NY", "TX", "PA"} {
		for _, small := range []string{"WY", "AK", "VT", "DC", "RI", "ND"} {
			assert.Greater(t, perState[big], 5*perState[small], "%s vs %s", big, small)
		}
	}
	assert.Greater(t, perState["CA"], perState["NY"])

	// A small catalogue still reaches every state.
	small := map[string]bool{}
	for _, s := range catalog.Generate(3*len(domain.States), 3) {
		small[s.State] = true
	}
	assert.Len(t, small, len(domain.States))
}

// usBox reports whether a point is inside the bounding box of the
// contiguous states, Alaska or Hawaii.
func usBox(lat, lon float64) bool {
	switch {
	case lat >= 24.4 && lat <= 49.4 && lon >= -124.8 && lon <= -66.9:
		return true
	case lat >= 51 && lat <= 71.5 && lon >= -180 && lon <= -129.9:
		return true
	case lat >= 18.9 && lat <= 22.3 && lon >= -160.3 && lon <= -154.8:
		return true
	}
	return false
}

func TestGenerateValuesInRange(t *testing.T) {
	majors := map[domain.Major]bool{}
	for _, m := range domain.Majors {
		majors[m.Key] = true
	}
	for i, s := range seedCatalogue {
		checkSeedSchool(t, s, majors)
		if t.Failed() {
			t.Fatalf("school %d: %+v", i, s)
		}
	}
}

func checkSeedSchool(t *testing.T, s domain.School, majors map[domain.Major]bool) {
	rate := func(t *testing.T, name string, v *float64) {
		if v != nil {
			assert.True(t, *v >= 0 && *v <= 1, "%s %v out of [0,1]", name, *v)
		}
	}
	require.NotEmpty(t, s.ID)
	require.NotEmpty(t, s.Name)
	require.NotEmpty(t, s.City)
	st, ok := domain.LookupState(s.State)
	require.True(t, ok, "state %q", s.State)
	assert.Equal(t, st.Region, s.Region)
	assert.Nil(t, s.UnitID)
	assert.Equal(t, catalog.SourceSeed, s.Source)
	assert.True(t, s.Active)
	assert.Contains(t, []domain.Control{domain.ControlPublic, domain.ControlNonprofit, domain.ControlForProfit}, s.Control)

	require.Equal(t, s.Lat == nil, s.Lon == nil, "lat and lon come together")
	if s.Lat != nil {
		assert.True(t, usBox(*s.Lat, *s.Lon), "%s, %s at %v,%v is outside the US", s.City, s.State, *s.Lat, *s.Lon)
		// Scattered a few miles around a real place of the state.
		assert.Less(t, domain.DistanceMiles(*s.Lat, *s.Lon, st.Lat, st.Lon), 600.0, "%s far from %s", s.City, s.State)
	}
	if s.Locale != nil {
		assert.NotEmpty(t, domain.SettingFromLocale(int(*s.Locale)), "locale %d", *s.Locale)
		assert.True(t, *s.Locale%10 >= 1 && *s.Locale%10 <= 3, "locale %d", *s.Locale)
	}
	if s.Size != nil {
		assert.True(t, *s.Size >= 50 && *s.Size <= 65000, "size %d", *s.Size)
	}
	if s.PredDegree != nil {
		assert.True(t, *s.PredDegree >= 1 && *s.PredDegree <= 3, "predominant degree %d", *s.PredDegree)
	}

	rate(t, "admission rate", s.AdmissionRate)
	rate(t, "pell rate", s.PellRate)
	rate(t, "loan rate", s.LoanRate)
	rate(t, "grad rate", s.GradRate)
	rate(t, "retention rate", s.RetentionRate)

	require.Equal(t, s.SAT25 == nil, s.SAT75 == nil)
	if s.SAT25 != nil {
		assert.True(t, *s.SAT25 >= 400 && *s.SAT75 <= 1600, "SAT %d-%d", *s.SAT25, *s.SAT75)
		gap := *s.SAT75 - *s.SAT25
		assert.True(t, gap >= 100 && gap <= 220, "SAT gap %d", gap)
		require.NotNil(t, s.AdmissionRate, "schools that report scores report an admission rate")
	}
	require.Equal(t, s.ACT25 == nil, s.ACT75 == nil)
	if s.ACT25 != nil {
		assert.True(t, *s.ACT25 >= 1 && *s.ACT75 <= 36 && *s.ACT25 < *s.ACT75, "ACT %d-%d", *s.ACT25, *s.ACT75)
		require.NotNil(t, s.SAT25)
		// ACT and SAT agree within a couple of points of the concordance.
		assert.InDelta(t, float64(*s.SAT25-400)/1200*35+1, float64(*s.ACT25), 5)
	}

	if s.TuitionIn != nil {
		require.NotNil(t, s.TuitionOut)
		assert.True(t, *s.TuitionIn >= 1000 && *s.TuitionIn <= 65000, "tuition %d", *s.TuitionIn)
		assert.GreaterOrEqual(t, *s.TuitionOut, *s.TuitionIn)
		if s.Control != domain.ControlPublic {
			assert.Equal(t, *s.TuitionIn, *s.TuitionOut, "private schools charge everyone the same")
		}
	}
	if s.AvgNetPrice != nil {
		assert.True(t, *s.AvgNetPrice > 0 && *s.AvgNetPrice < 90000, "net price %d", *s.AvgNetPrice)
	}
	var prev int32
	for b, v := range s.NetPriceByBand {
		if v == nil {
			continue
		}
		assert.Positive(t, *v)
		assert.GreaterOrEqual(t, *v, prev, "net price falls at band %d: %v", b, s.NetPriceByBand)
		prev = *v
	}
	if s.MedianDebt != nil {
		assert.True(t, *s.MedianDebt > 0 && *s.MedianDebt < 60000, "debt %d", *s.MedianDebt)
	}
	require.Equal(t, s.Earnings6yr == nil, s.Earnings10yr == nil)
	if s.Earnings10yr != nil {
		assert.True(t, *s.Earnings10yr >= 15000 && *s.Earnings10yr <= 150000, "earnings %d", *s.Earnings10yr)
		assert.Less(t, *s.Earnings6yr, *s.Earnings10yr)
	}

	require.NotEmpty(t, s.ProgramShares)
	sum := 0.0
	for m, v := range s.ProgramShares {
		assert.True(t, majors[m], "unknown major %q", m)
		assert.True(t, v > 0 && v <= 1, "share %v", v)
		sum += v
	}
	assert.InDelta(t, 1, sum, 0.01, "program shares sum")
}

func TestGenerateUniqueIDsAndNames(t *testing.T) {
	ids := map[string]bool{}
	names := map[string]bool{}
	for i, s := range seedCatalogue {
		id, err := uuid.Parse(s.ID)
		require.NoError(t, err)
		assert.Equal(t, uuid.Version(5), id.Version())
		assert.Equal(t, catalog.SeedSchoolID(i), s.ID)
		assert.False(t, ids[s.ID], "duplicate id %s", s.ID)
		assert.False(t, names[s.Name], "duplicate name %q", s.Name)
		ids[s.ID], names[s.Name] = true, true
	}
	want := uuid.NewSHA1(uuid.MustParse(catalog.SeedNamespace), []byte("seed:0")).String()
	assert.Equal(t, want, seedCatalogue[0].ID)
}

// seedMean averages f over the schools where it has a value.
func seedMean(schools []domain.School, f func(domain.School) (float64, bool)) (float64, int) {
	sum, n := 0.0, 0
	for _, s := range schools {
		if v, ok := f(s); ok {
			sum += v
			n++
		}
	}
	return sum / float64(n), n
}

func seedWhere(schools []domain.School, keep func(domain.School) bool) []domain.School {
	var out []domain.School
	for _, s := range schools {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

func TestGenerateCorrelations(t *testing.T) {
	admBelow := func(x float64) func(domain.School) bool {
		return func(s domain.School) bool { return s.AdmissionRate != nil && *s.AdmissionRate < x }
	}
	selective := seedWhere(seedCatalogue, admBelow(0.2))
	open := seedWhere(seedCatalogue, func(s domain.School) bool { return s.AdmissionRate != nil && *s.AdmissionRate > 0.7 })
	require.GreaterOrEqual(t, len(selective), 30, "a tail of selective schools")
	require.Greater(t, len(open), len(seedCatalogue)/2, "most schools admit most applicants")

	sat := func(s domain.School) (float64, bool) {
		if s.SAT25 == nil {
			return 0, false
		}
		return float64(*s.SAT25+*s.SAT75) / 2, true
	}
	ptr := func(get func(domain.School) *float64) func(domain.School) (float64, bool) {
		return func(s domain.School) (float64, bool) {
			if v := get(s); v != nil {
				return *v, true
			}
			return 0, false
		}
	}
	grad := ptr(func(s domain.School) *float64 { return s.GradRate })
	pell := ptr(func(s domain.School) *float64 { return s.PellRate })
	earn := func(s domain.School) (float64, bool) {
		if s.Earnings10yr == nil {
			return 0, false
		}
		return float64(*s.Earnings10yr), true
	}

	selSAT, n := seedMean(selective, sat)
	require.Positive(t, n)
	openSAT, n := seedMean(open, sat)
	require.Positive(t, n)
	assert.Greater(t, selSAT, openSAT+250, "selective schools have higher SATs")
	assert.Greater(t, selSAT, 1350.0)
	assert.InDelta(t, 1080, openSAT, 120)

	selGrad, _ := seedMean(selective, grad)
	openGrad, _ := seedMean(open, grad)
	assert.Greater(t, selGrad, openGrad+0.2, "selective schools graduate more")
	assert.Greater(t, selGrad, 0.8)

	selPell, _ := seedMean(selective, pell)
	openPell, _ := seedMean(open, pell)
	assert.Less(t, selPell, openPell-0.15, "selective schools enroll fewer Pell students")

	selEarn, _ := seedMean(selective, earn)
	openEarn, _ := seedMean(open, earn)
	assert.Greater(t, selEarn, openEarn*1.5, "selective schools' graduates earn more")

	// Engineering-heavy schools out-earn the rest.
	stem := func(s domain.School) bool { return s.ProgramShares["engineering"]+s.ProgramShares["computer"] > 0.4 }
	stemEarn, n := seedMean(seedWhere(seedCatalogue, stem), earn)
	require.Positive(t, n)
	allEarn, _ := seedMean(seedCatalogue, earn)
	assert.Greater(t, stemEarn, allEarn*1.3)

	// Open-admission schools report no test scores.
	for _, s := range seedWhere(seedCatalogue, func(s domain.School) bool {
		return s.AdmissionRate != nil && *s.AdmissionRate == 1
	}) {
		assert.Nil(t, s.SAT25, "%s is open admission", s.Name)
	}
}

func TestGenerateDistributions(t *testing.T) {
	control := map[domain.Control]int{}
	publicSize, privateSize := []float64{}, []float64{}
	var lowIncomeElite, highIncomeElite []float64
	for _, s := range seedCatalogue {
		control[s.Control]++
		if s.Size != nil {
			if s.Control == domain.ControlPublic {
				publicSize = append(publicSize, math.Log(float64(*s.Size)))
			} else {
				privateSize = append(privateSize, math.Log(float64(*s.Size)))
			}
		}
		if s.Control == domain.ControlNonprofit && s.AdmissionRate != nil && *s.AdmissionRate < 0.15 {
			if v := s.NetPriceByBand[domain.IncomeBand0to30k]; v != nil {
				lowIncomeElite = append(lowIncomeElite, float64(*v))
			}
			if v := s.NetPriceByBand[domain.IncomeBand110kPlus]; v != nil {
				highIncomeElite = append(highIncomeElite, float64(*v))
			}
		}
		if s.Control == domain.ControlPublic && s.TuitionIn != nil && s.PredDegree != nil && *s.PredDegree == 3 {
			assert.True(t, *s.TuitionIn >= 4000 && *s.TuitionIn <= 20000, "public in-state tuition %d", *s.TuitionIn)
			ratio := float64(*s.TuitionOut) / float64(*s.TuitionIn)
			assert.True(t, ratio >= 1.9 && ratio <= 3.05, "out-of-state ratio %.2f", ratio)
		}
	}
	n := float64(len(seedCatalogue))
	assert.InDelta(t, 0.31, float64(control[domain.ControlPublic])/n, 0.05)
	assert.InDelta(t, 0.36, float64(control[domain.ControlNonprofit])/n, 0.05)
	assert.InDelta(t, 0.33, float64(control[domain.ControlForProfit])/n, 0.05)

	avg := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	assert.Greater(t, avg(publicSize), avg(privateSize)+0.5, "public schools are larger")

	require.NotEmpty(t, lowIncomeElite)
	assert.Less(t, avg(lowIncomeElite), 10000.0, "elite privates are cheap for low-income families")
	assert.Greater(t, avg(highIncomeElite), 50000.0)
}

func BenchmarkGenerate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if got := catalog.Generate(catalog.DefaultSeedCount, 1); len(got) != catalog.DefaultSeedCount {
			b.Fatalf("got %d schools", len(got))
		}
	}
}
