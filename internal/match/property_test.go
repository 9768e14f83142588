package match

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
)

func unit(t *testing.T, v float64, what string, args ...any) {
	t.Helper()
	if math.IsNaN(v) || v < 0 || v > 1 {
		require.Failf(t, "value out of [0,1]", what+": %v", append(args, v)...)
	}
}

// checkDetail asserts every invariant of a match detail.
func checkDetail(t *testing.T, d MatchDetail) {
	t.Helper()
	unit(t, d.OverallScore, "overall")
	unit(t, d.Confidence, "confidence")
	for name, c := range map[string]Component{
		ComponentAcademic: d.Components.Academic, ComponentFinancial: d.Components.Financial,
		ComponentCampus: d.Components.Campus, ComponentOutcomes: d.Components.Outcomes,
	} {
		unit(t, c.Score, name)
		require.Len(t, c.Factors, 3, name)
		for k, v := range c.Factors {
			unit(t, v, name+"."+k)
		}
	}
	require.Contains(t, []string{"A+", "A", "A-", "B+", "B", "B-", "C+", "C", "C-", "D", "F"}, d.Grade)
	require.Equal(t, Grade(d.OverallScore), d.Grade)
	require.Contains(t, []string{BandReach, BandTarget, BandSafety}, d.AdmissionBand)
	require.GreaterOrEqual(t, d.NetPrice.Amount, 0)
	require.True(t, d.Distance == -1 || (d.Distance >= 0 && !math.IsInf(d.Distance, 0)), "distance %v", d.Distance)
	require.LessOrEqual(t, len(d.Reasons), 5)
	require.NotNil(t, d.MatchedMajors)
	require.NotEmpty(t, d.Explanation)
	for _, s := range append(slicesOf(d.Reasons), d.Explanation) {
		require.NotEmpty(t, s)
		require.NotRegexp(t, `\bNaN\b|\bInf\b|%!|-1 mile|\$-|^\s|\s$|  `, s)
	}
}

func slicesOf(s []string) []string { return append([]string(nil), s...) }

func TestPropertyEverythingInUnitRange(t *testing.T) {
	for round := range 240 {
		pNil := []float64{0, 0.2, 0.5, 0.8, 1}[round%5]
		g := newGen(uint64(round), pNil, round%2 == 1)
		cat := NewCatalog(g.schools(40))
		st := g.student()
		p := NewProfile(st)
		w := g.weights()
		ranked := Rank(nil, p, w, cat)
		for _, s := range ranked {
			for _, v := range []float64{s.Score, s.Academic, s.Financial, s.Campus, s.Outcomes, s.Confidence} {
				unit(t, v, "scored", s.Index)
			}
			d := Detail(p, w, cat, int(s.Index))
			checkDetail(t, d)
			require.Equal(t, s.Score, d.OverallScore)
			require.Equal(t, s.Academic, d.Components.Academic.Score)
			require.Equal(t, s.Financial, d.Components.Financial.Score)
			require.Equal(t, s.Campus, d.Components.Campus.Score)
			require.Equal(t, s.Outcomes, d.Components.Outcomes.Score)
			require.Equal(t, s.Confidence, d.Confidence)
			require.Equal(t, s.Distance, d.Distance)
		}
	}
}

// detailOf scores one school alone.
func detailOf(p Profile, w Weights, s domain.School) MatchDetail {
	return Detail(p, w, NewCatalog([]domain.School{s}), 0)
}

func scalePrices(s domain.School, f float64) domain.School {
	sc := func(p *int32) *int32 {
		if p == nil {
			return nil
		}
		v := int32(math.Floor(float64(*p) * f))
		return &v
	}
	s.TuitionIn, s.TuitionOut, s.AvgNetPrice = sc(s.TuitionIn), sc(s.TuitionOut), sc(s.AvgNetPrice)
	for b := range s.NetPriceByBand {
		s.NetPriceByBand[b] = sc(s.NetPriceByBand[b])
	}
	return s
}

func TestPropertyCheaperNeverLowersAffordability(t *testing.T) {
	g := newGen(101, 0.3, false)
	for range 5000 {
		s := g.school(0)
		p, w := NewProfile(g.student()), g.weights()
		cheaper := scalePrices(s, g.r.Float64())
		a, b := detailOf(p, w, s), detailOf(p, w, cheaper)
		require.GreaterOrEqual(t, b.Components.Financial.Factors[FactorAffordability], a.Components.Financial.Factors[FactorAffordability])
		require.GreaterOrEqual(t, b.Components.Financial.Factors[FactorValueScore], a.Components.Financial.Factors[FactorValueScore])
	}
}

func TestPropertySATInsideBeatsFarBelow(t *testing.T) {
	g := newGen(102, 0.3, false)
	for range 5000 {
		s := g.school(0)
		lo := int16(900 + g.r.IntN(500))
		hi := min(1600, lo+int16(60+g.r.IntN(200)))
		s.SAT25, s.SAT75 = &lo, &hi
		st := g.student()
		inside := int(lo) + g.r.IntN(int(hi-lo)+1)
		below := int(lo) - 150 - g.r.IntN(200)
		st.SAT = &inside
		pIn := NewProfile(st)
		st.SAT = &below
		pBelow := NewProfile(st)
		w := g.weights()
		in := detailOf(pIn, w, s).Components.Academic.Factors[FactorSATMatch]
		out := detailOf(pBelow, w, s).Components.Academic.Factors[FactorSATMatch]
		require.Greater(t, in, out, "SAT %d inside %d-%d vs %d", inside, lo, hi, below)
		require.GreaterOrEqual(t, in, 0.85)
	}
}

func TestPropertyCloserNeverLowersLocationFit(t *testing.T) {
	g := newGen(103, 0.2, false)
	for range 3000 {
		cat := NewCatalog(g.schools(2))
		p, w := NewProfile(g.student()), g.weights()
		a, b := Detail(p, w, cat, 0), Detail(p, w, cat, 1)
		if a.Distance < 0 || b.Distance < 0 {
			continue
		}
		if a.Distance > b.Distance {
			a, b = b, a
		}
		require.GreaterOrEqual(t, a.Components.Campus.Factors[FactorLocationFit], b.Components.Campus.Factors[FactorLocationFit],
			"%.1f vs %.1f miles", a.Distance, b.Distance)
	}
}

func TestPropertyHigherGraduationNeverLowersOutcomes(t *testing.T) {
	g := newGen(104, 0.3, false)
	for range 5000 {
		s := g.school(0)
		lowRate := g.r.Float64()
		highRate := lowRate + (1-lowRate)*g.r.Float64()
		s.GradRate = &lowRate
		p, w := NewProfile(g.student()), g.weights()
		low := detailOf(p, w, s)
		s.GradRate = &highRate
		high := detailOf(p, w, s)
		require.GreaterOrEqual(t, high.Components.Outcomes.Score, low.Components.Outcomes.Score)
		require.GreaterOrEqual(t, high.OverallScore, low.OverallScore)
	}
}

// Taking away any one field of a school never raises confidence.
func TestPropertyMissingDataLowersConfidence(t *testing.T) {
	drops := []func(*domain.School){
		func(s *domain.School) { s.Lat, s.Lon = nil, nil },
		func(s *domain.School) { s.State = "" },
		func(s *domain.School) { s.Locale = nil },
		func(s *domain.School) { s.Size = nil },
		func(s *domain.School) { s.AdmissionRate = nil },
		func(s *domain.School) { s.SAT25, s.SAT75, s.ACT25, s.ACT75 = nil, nil, nil, nil },
		func(s *domain.School) { s.NetPriceByBand = [domain.IncomeBands]*int32{} },
		func(s *domain.School) { s.AvgNetPrice = nil },
		func(s *domain.School) { s.TuitionIn, s.TuitionOut = nil, nil },
		func(s *domain.School) { s.PellRate = nil },
		func(s *domain.School) { s.LoanRate = nil },
		func(s *domain.School) { s.GradRate = nil },
		func(s *domain.School) { s.RetentionRate = nil },
		func(s *domain.School) { s.Earnings6yr = nil },
		func(s *domain.School) { s.Earnings10yr = nil },
		func(s *domain.School) { s.ProgramShares = nil },
	}
	g := newGen(105, 0.2, false)
	for range 2000 {
		s := g.school(0)
		p, w := NewProfile(g.student()), g.weights()
		before := detailOf(p, w, s).Confidence
		i := g.r.IntN(len(drops))
		drops[i](&s)
		after := detailOf(p, w, s).Confidence
		require.LessOrEqual(t, after, before+1e-12, "dropping field %d", i)
	}
	// A school with nothing known has no confidence at all; a complete one has full confidence.
	p := NewProfile(studentSAT())
	assert.Equal(t, 0.0, detailOf(p, DefaultWeights(), bareSchool()).Confidence)
	assert.InDelta(t, 1.0, detailOf(p, DefaultWeights(), keystoneState()).Confidence, 1e-12)
}

func TestPropertyBareSchoolIsNeutral(t *testing.T) {
	g := newGen(106, 0.3, true)
	for range 2000 {
		p, w := NewProfile(g.student()), g.weights()
		d := detailOf(p, w, bareSchool())
		checkDetail(t, d)
		assert.InDelta(t, Neutral, d.OverallScore, 1e-12)
		assert.Equal(t, BandSafety, d.AdmissionBand)
		assert.False(t, d.NetPrice.Known())
		assert.True(t, strings.HasPrefix(d.Explanation, "C- match (50%)"))
	}
}

// Describe (and a Describer used for many schools) gives what Reasons,
// AdmissionBand, EstimateNetPrice and MatchedMajors give one at a time, for
// any student, weights and school, nasty data included.
func TestPropertyDescribeIsTheOneAtATimeFunctions(t *testing.T) {
	for round := range 240 {
		pNil := []float64{0, 0.2, 0.5, 0.8, 1}[round%5]
		g := newGen(uint64(round)+1000, pNil, round%2 == 1)
		cat := NewCatalog(g.schools(40))
		p := NewProfile(g.student())
		w := g.weights()
		describer := NewDescriber(p, w, cat)
		for i := range cat.Len() {
			d := Describe(p, w, cat, i)
			require.Equal(t, d, describer.Describe(i), "one describer for every school")
			require.Equal(t, Reasons(p, w, cat, i), d.Reasons, "round %d school %d", round, i)
			require.Equal(t, AdmissionBand(p, cat, i), d.AdmissionBand)
			require.Equal(t, EstimateNetPrice(p, cat, i), d.NetPrice)
			require.Equal(t, MatchedMajors(p, cat, i), d.MatchedMajors)
			require.Equal(t, Detail(p, w, cat, i).Reasons, d.Reasons)
		}
	}
}
