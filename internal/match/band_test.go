package match

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/collegematch/matching/internal/domain"
)

func TestAdmissionBand(t *testing.T) {
	school := func(adm *float64, lo, hi int16) domain.School {
		s := domain.School{ID: "s", AdmissionRate: adm}
		if lo > 0 {
			s.SAT25, s.SAT75 = &lo, &hi
		}
		return s
	}
	sat := func(v int) domain.Student { return domain.Student{SAT: ptr(v)} }
	tests := []struct {
		name    string
		student domain.Student
		school  domain.School
		want    string
	}{
		{"under 15% is always a reach", sat(1600), school(ptr(0.05), 1450, 1560), BandReach},
		{"under 15%, no scores", domain.Student{}, school(ptr(0.12), 0, 0), BandReach},
		{"selective, below", sat(1200), school(ptr(0.3), 1300, 1450), BandReach},
		{"selective, inside", sat(1350), school(ptr(0.3), 1300, 1450), BandTarget},
		{"selective, above", sat(1500), school(ptr(0.3), 1300, 1450), BandTarget},
		{"moderate, below", sat(1000), school(ptr(0.6), 1100, 1300), BandReach},
		{"moderate, inside", sat(1200), school(ptr(0.6), 1100, 1300), BandTarget},
		{"moderate, above", sat(1350), school(ptr(0.6), 1100, 1300), BandSafety},
		{"open, below", sat(900), school(ptr(0.85), 950, 1150), BandTarget},
		{"open, inside", sat(1000), school(ptr(0.85), 950, 1150), BandSafety},
		{"open, above", sat(1300), school(ptr(0.85), 950, 1150), BandSafety},
		{"rate unknown, below", sat(1000), school(nil, 1100, 1300), BandReach},
		{"rate unknown, inside", sat(1200), school(nil, 1100, 1300), BandTarget},
		{"rate unknown, above", sat(1400), school(nil, 1100, 1300), BandSafety},
		{"ACT converted", domain.Student{ACT: ptr(33)}, school(ptr(0.6), 1100, 1300), BandSafety},
		{"GPA estimate stands in", domain.Student{GPA: ptr(2.5)}, school(ptr(0.6), 1100, 1300), BandReach},
		{"no range: strength far below the school", sat(1000), school(ptr(0.2), 0, 0), BandReach},
		{"no range: strength matches", sat(1300), school(ptr(0.5), 0, 0), BandTarget},
		{"no range: strength well above", sat(1500), school(ptr(0.7), 0, 0), BandSafety},
		{"no academic signal: rate alone, low", domain.Student{}, school(ptr(0.25), 0, 0), BandReach},
		{"no academic signal: rate alone, middle", domain.Student{}, school(ptr(0.5), 0, 0), BandTarget},
		{"no academic signal: rate alone, high", domain.Student{}, school(ptr(0.9), 0, 0), BandSafety},
		{"no academic signal: range midpoint", domain.Student{}, school(nil, 1450, 1550), BandReach},
		{"nothing reported: open admission", sat(1200), school(nil, 0, 0), BandSafety},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := NewCatalog([]domain.School{tt.school})
			assert.Equal(t, tt.want, AdmissionBand(NewProfile(tt.student), cat, 0))
		})
	}
}

func TestEstimateNetPrice(t *testing.T) {
	full := keystoneState()
	noBands := keystoneState()
	noBands.NetPriceByBand = [domain.IncomeBands]*int32{}
	tuitionOnly := noBands
	tuitionOnly.AvgNetPrice = nil
	tuitionOnly.Source = "seed"
	inOnly := tuitionOnly
	inOnly.TuitionOut = nil
	none := inOnly
	none.TuitionIn = nil

	tests := []struct {
		name    string
		student domain.Student
		school  domain.School
		want    NetPrice
	}{
		{"band price", domain.Student{FamilyIncome: ptr(60000)}, full,
			NetPrice{14180, "net price for families earning $48k-75k (College Scorecard)"}},
		{"top band", domain.Student{FamilyIncome: ptr(500000)}, full,
			NetPrice{27000, "net price for families earning over $110k (College Scorecard)"}},
		{"income unknown: average", domain.Student{}, full, NetPrice{22000, "average net price (College Scorecard)"}},
		{"band missing: average", domain.Student{FamilyIncome: ptr(60000)}, noBands, NetPrice{22000, "average net price (College Scorecard)"}},
		{"in-state tuition", domain.Student{State: "PA"}, tuitionOnly, NetPrice{19000, "published in-state tuition"}},
		{"out-of-state tuition", domain.Student{State: "NY"}, tuitionOnly, NetPrice{36000, "published out-of-state tuition"}},
		{"state unknown: out-of-state", domain.Student{}, tuitionOnly, NetPrice{36000, "published out-of-state tuition"}},
		{"only in-state reported", domain.Student{State: "NY"}, inOnly, NetPrice{19000, "published in-state tuition"}},
		{"nothing reported", domain.Student{}, none, NetPrice{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := NewCatalog([]domain.School{tt.school})
			got := EstimateNetPrice(NewProfile(tt.student), cat, 0)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.want.Source != "", got.Known())
		})
	}
}
