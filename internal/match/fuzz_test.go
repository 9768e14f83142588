package match

import (
	"math"
	"testing"

	"github.com/collegematch/matching/internal/domain"
)

// FuzzScore builds one student and one school from arbitrary values (mask
// bit i set leaves optional field i out) and checks that scoring never
// panics and never produces a NaN or a value outside [0,1].
func FuzzScore(f *testing.F) {
	f.Add(uint64(0), 1380, 30, 3.8, 39.95, -75.16, 20000, 60000, 500,
		0.55, 0.2, 0.45, 0.78, int16(1210), int16(1340), int32(19000), int32(14180), int32(41000), int16(13),
		int32(52000), int32(68300), 0.18, 40.8, -77.86, 0.5, 0.5)
	f.Add(^uint64(0), 0, 0, 0.0, 0.0, 0.0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, int16(0), int16(0), int32(0), int32(0), int32(0), int16(0),
		int32(0), int32(0), 0.0, 0.0, 0.0, 0.0, 0.0)
	f.Add(uint64(0), 9999, -4, math.NaN(), math.Inf(1), -500.0, -1, -1, -7,
		math.NaN(), -3.0, 7.0, math.Inf(-1), int16(-32768), int16(32767), int32(-5), int32(math.MaxInt32), int32(-1), int16(99),
		int32(math.MinInt32), int32(math.MaxInt32), math.NaN(), 95.0, 200.0, math.NaN(), math.Inf(1))
	f.Fuzz(func(t *testing.T, mask uint64, sat, act int, gpa, hlat, hlon float64, budget, income, maxd int,
		adm, pell, loan, grad float64, sat25, sat75 int16, tuition, netBand, size int32, locale int16,
		e6, e10 int32, share, slat, slon, costW, selW float64) {
		bit := func(i uint) bool { return mask&(1<<i) == 0 }
		st := domain.Student{ID: "fuzz", State: "PA", IntendedMajors: []domain.Major{"computer", "health"},
			PreferredSize: "medium", PreferredSetting: "town"}
		if bit(0) {
			st.SAT = &sat
		}
		if bit(1) {
			st.ACT = &act
		}
		if bit(2) {
			st.GPA = &gpa
		}
		if bit(3) {
			st.HomeLat, st.HomeLon = &hlat, &hlon
		}
		if bit(4) {
			st.State = ""
		}
		if bit(5) {
			st.Budget = &budget
		}
		if bit(6) {
			st.FamilyIncome = &income
		}
		if bit(7) {
			st.MaxDistanceMiles = &maxd
		}
		s := domain.School{ID: "s", State: "NY", Source: "scorecard"}
		if bit(8) {
			s.AdmissionRate = &adm
		}
		if bit(9) {
			s.PellRate = &pell
		}
		if bit(10) {
			s.LoanRate = &loan
		}
		if bit(11) {
			s.GradRate, s.RetentionRate = &grad, &grad
		}
		if bit(12) {
			s.SAT25, s.SAT75 = &sat25, &sat75
		}
		if bit(13) {
			s.ACT25, s.ACT75 = &sat25, &sat75
		}
		if bit(14) {
			s.TuitionIn, s.TuitionOut = &tuition, &tuition
		}
		if bit(15) {
			s.AvgNetPrice = &netBand
		}
		if bit(16) {
			for b := range s.NetPriceByBand {
				s.NetPriceByBand[b] = &netBand
			}
		}
		if bit(17) {
			s.Size = &size
		}
		if bit(18) {
			s.Locale = &locale
		}
		if bit(19) {
			s.Earnings6yr = &e6
		}
		if bit(20) {
			s.Earnings10yr = &e10
		}
		if bit(21) {
			s.ProgramShares = map[domain.Major]float64{"computer": share, "health": -share}
		}
		if bit(22) {
			s.Lat, s.Lon = &slat, &slon
		}
		if bit(23) {
			s.State = ""
		}
		w := DefaultWeights()
		w.CostWeight, w.AcademicSelectivity, w.SizePreference = costW, selW, costW*selW

		cat := NewCatalog([]domain.School{s})
		p := NewProfile(st)
		ranked := Rank(nil, p, w, cat)
		for _, r := range ranked {
			for _, v := range []float64{r.Score, r.Academic, r.Financial, r.Campus, r.Outcomes, r.Confidence} {
				if !(v >= 0 && v <= 1) {
					t.Fatalf("scored value %v out of [0,1]: %+v", v, r)
				}
			}
			if !(r.Distance == -1 || (r.Distance >= 0 && r.Distance < 13000)) {
				t.Fatalf("distance %v", r.Distance)
			}
		}
		d := Detail(p, w, cat, 0)
		for _, c := range []Component{d.Components.Academic, d.Components.Financial, d.Components.Campus, d.Components.Outcomes} {
			for k, v := range c.Factors {
				if !(v >= 0 && v <= 1) {
					t.Fatalf("factor %s = %v", k, v)
				}
			}
		}
		if d.OverallScore != ranked[0].Score || d.Explanation == "" || d.Grade == "" || d.AdmissionBand == "" {
			t.Fatalf("detail disagrees or is empty: %+v", d)
		}
		_ = EstimateNetPrice(p, cat, 0)
	})
}
