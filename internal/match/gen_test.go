package match

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/collegematch/matching/internal/domain"
)

// gen makes random schools and students from a seed. With nasty set it also
// produces values a bad import could carry (NaN, out-of-range, negative).
type gen struct {
	r     *rand.Rand
	pNil  float64 // chance that each optional field is missing
	nasty bool
}

func newGen(seed uint64, pNil float64, nasty bool) *gen {
	return &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), pNil: pNil, nasty: nasty}
}

func (g *gen) missing() bool { return g.r.Float64() < g.pNil }

func (g *gen) weird() bool { return g.nasty && g.r.Float64() < 0.03 }

func (g *gen) f64(lo, hi float64) *float64 {
	if g.missing() {
		return nil
	}
	v := lo + g.r.Float64()*(hi-lo)
	if g.weird() {
		v = []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 7, 0}[g.r.IntN(6)]
	}
	return &v
}

func (g *gen) i32(lo, hi int) *int32 {
	if g.missing() {
		return nil
	}
	v := int32(lo + g.r.IntN(hi-lo+1))
	if g.weird() {
		v = []int32{-5000, 0, math.MaxInt32, math.MinInt32}[g.r.IntN(4)]
	}
	return &v
}

func (g *gen) i16(lo, hi int) *int16 {
	if g.missing() {
		return nil
	}
	v := int16(lo + g.r.IntN(hi-lo+1))
	if g.weird() {
		v = []int16{-1, 0, math.MaxInt16, math.MinInt16}[g.r.IntN(4)]
	}
	return &v
}

func (g *gen) school(i int) domain.School {
	r := g.r
	st := domain.States[r.IntN(len(domain.States))]
	s := domain.School{
		ID:    fmt.Sprintf("%08x-0000-4000-8000-%012x", r.Uint32(), i),
		Name:  fmt.Sprintf("School %d", i),
		City:  "Town",
		State: st.Code,
		Lat:   g.f64(st.Lat-2, st.Lat+2),
		Lon:   g.f64(st.Lon-2, st.Lon+2),
	}
	if g.missing() {
		s.State = ""
	}
	s.Locale = g.i16(11, 43)
	s.Size = g.i32(200, 60000)
	s.AdmissionRate = g.f64(0.03, 1)
	lo := 800 + r.IntN(600)
	s.SAT25, s.SAT75 = g.i16(lo, lo), g.i16(lo+80, lo+260)
	alo := 14 + r.IntN(16)
	s.ACT25, s.ACT75 = g.i16(alo, alo), g.i16(alo+2, min(36, alo+7))
	s.TuitionIn = g.i32(3000, 20000)
	s.TuitionOut = g.i32(10000, 62000)
	s.AvgNetPrice = g.i32(2000, 45000)
	for b := range s.NetPriceByBand {
		s.NetPriceByBand[b] = g.i32(1000+5000*b, 15000+7000*b)
	}
	s.PellRate = g.f64(0.05, 0.8)
	s.LoanRate = g.f64(0.05, 0.9)
	s.GradRate = g.f64(0.1, 0.98)
	s.RetentionRate = g.f64(0.4, 0.99)
	s.Earnings6yr = g.i32(18000, 90000)
	s.Earnings10yr = g.i32(22000, 130000)
	if !g.missing() {
		s.ProgramShares = map[domain.Major]float64{}
		for range 1 + r.IntN(8) {
			v := r.Float64() * 0.4
			if g.weird() {
				v = []float64{math.NaN(), -0.2, 3}[r.IntN(3)]
			}
			s.ProgramShares[domain.Majors[r.IntN(len(domain.Majors))].Key] = v
		}
	}
	s.Active = true
	s.Source = []string{"seed", "scorecard"}[r.IntN(2)]
	return s
}

func (g *gen) schools(n int) []domain.School {
	out := make([]domain.School, n)
	for i := range out {
		out[i] = g.school(i)
	}
	return out
}

func (g *gen) intp(lo, hi int) *int {
	if g.missing() {
		return nil
	}
	v := lo + g.r.IntN(hi-lo+1)
	if g.weird() {
		v = []int{-1, 0, 1 << 40, -(1 << 40)}[g.r.IntN(4)]
	}
	return &v
}

func (g *gen) student() domain.Student {
	r := g.r
	st := domain.States[r.IntN(len(domain.States))]
	s := domain.Student{ID: "student", State: st.Code}
	s.GPA = g.f64(1.5, 4.6)
	s.SAT = g.intp(700, 1600)
	s.ACT = g.intp(10, 36)
	s.HomeLat, s.HomeLon = g.f64(25, 48), g.f64(-124, -68)
	if g.missing() {
		s.State = ""
	}
	s.MaxDistanceMiles = g.intp(20, 3000)
	s.Budget = g.intp(0, 70000)
	s.FamilyIncome = g.intp(0, 300000)
	for range r.IntN(4) {
		s.IntendedMajors = append(s.IntendedMajors, domain.Majors[r.IntN(len(domain.Majors))].Key)
	}
	if !g.missing() {
		s.PreferredSize = domain.PreferredSizes[r.IntN(3)]
	}
	if !g.missing() {
		s.PreferredSetting = domain.PreferredSettings[r.IntN(4)]
	}
	return s
}

func (g *gen) weights() Weights {
	u := func() float64 {
		v := g.r.Float64()
		if g.weird() {
			v = []float64{math.NaN(), -3, 9, math.Inf(1)}[g.r.IntN(4)]
		}
		return v
	}
	return Weights{u(), u(), u(), u(), u(), u(), u(), u()}
}
