package match

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
)

func TestNewProfileAcademicBasis(t *testing.T) {
	tests := []struct {
		name  string
		s     domain.Student
		sat   int
		basis AcademicBasis
	}{
		{"SAT wins over ACT and GPA", domain.Student{SAT: ptr(1300), ACT: ptr(33), GPA: ptr(3.9)}, 1300, BasisSAT},
		{"ACT through concordance", domain.Student{ACT: ptr(30), GPA: ptr(3.9)}, 1370, BasisACT},
		{"ACT 36", domain.Student{ACT: ptr(36)}, 1590, BasisACT},
		{"GPA estimate", domain.Student{GPA: ptr(3.5)}, 1200, BasisGPA},
		{"GPA between knots", domain.Student{GPA: ptr(3.75)}, 1275, BasisGPA},
		{"nothing", domain.Student{}, 0, BasisNone},
		{"SAT out of range ignored, ACT used", domain.Student{SAT: ptr(2400), ACT: ptr(21)}, 1080, BasisACT},
		{"ACT out of range ignored", domain.Student{ACT: ptr(40), GPA: ptr(3.0)}, 1070, BasisGPA},
		{"NaN GPA ignored", domain.Student{GPA: ptr(math.NaN())}, 0, BasisNone},
		{"GPA above 5 ignored", domain.Student{GPA: ptr(6.0)}, 0, BasisNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewProfile(tt.s)
			assert.Equal(t, tt.sat, p.SAT)
			assert.Equal(t, tt.basis, p.Basis)
		})
	}
}

func TestACTToSAT(t *testing.T) {
	assert.Equal(t, 1590, ACTToSAT(36))
	assert.Equal(t, 1210, ACTToSAT(25))
	assert.Equal(t, 1080, ACTToSAT(21))
	assert.Equal(t, 590, ACTToSAT(9))
	assert.Equal(t, 550, ACTToSAT(8))
	assert.Equal(t, 400, ACTToSAT(1))
	assert.Equal(t, 400, ACTToSAT(-3))
	assert.Equal(t, 1590, ACTToSAT(99))
	for a := 2; a <= 36; a++ {
		assert.GreaterOrEqual(t, ACTToSAT(a), ACTToSAT(a-1), "concordance never falls at %d", a)
	}
}

func TestNewProfileLocationAndPreferences(t *testing.T) {
	p := NewProfile(domain.Student{HomeLat: ptr(40.0), HomeLon: ptr(-75.0), State: "NJ"})
	assert.True(t, p.HasHome)
	assert.False(t, p.HomeApprox)
	assert.Equal(t, 40.0, p.HomeLat)
	assert.Equal(t, float64(domain.DefaultMaxDistanceMiles), p.MaxDistanceMiles)

	p = NewProfile(domain.Student{State: "NJ"})
	nj, _ := domain.LookupState("NJ")
	assert.True(t, p.HasHome)
	assert.True(t, p.HomeApprox)
	assert.Equal(t, nj.Lat, p.HomeLat)

	p = NewProfile(domain.Student{HomeLat: ptr(math.NaN()), HomeLon: ptr(-75.0), State: "NJ"})
	assert.True(t, p.HasHome, "unusable coordinates fall back to the state")
	assert.True(t, p.HomeApprox)

	p = NewProfile(domain.Student{HomeLat: ptr(123.0), HomeLon: ptr(-75.0)})
	assert.False(t, p.HasHome)

	p = NewProfile(domain.Student{
		MaxDistanceMiles: ptr(0), Budget: ptr(-5), FamilyIncome: ptr(40000),
		IntendedMajors: []domain.Major{"computer", "nonsense", "computer", "health"},
		PreferredSize:  "huge", PreferredSetting: "rural",
	})
	assert.Equal(t, 500.0, p.MaxDistanceMiles)
	assert.False(t, p.HasBudget)
	assert.Equal(t, domain.IncomeBand30to48k, p.IncomeBand)
	assert.Equal(t, []domain.Major{"computer", "health"}, p.Majors)
	assert.Equal(t, "", p.PreferredSize)
	assert.Equal(t, domain.SettingRural, p.PreferredSetting)
	assert.Equal(t, -1, NewProfile(domain.Student{}).IncomeBand)
}

func TestWeights(t *testing.T) {
	w := DefaultWeights()
	m := w.Map()
	assert.Len(t, m, 8)
	for _, k := range WeightKeys {
		assert.Equal(t, 0.5, m[k], k)
	}
	assert.Equal(t, w, WeightsFromMap(m))

	// JSON tags are the API keys.
	b, err := json.Marshal(Weights{CostWeight: 0.7, SizePreference: 0.2})
	require.NoError(t, err)
	var back map[string]float64
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, 0.7, back["cost_weight"])
	assert.Equal(t, 0.2, back["size_preference"])
	assert.Len(t, back, 8)

	got := WeightsFromMap(map[string]float64{"cost_weight": 2, "aid_weight": -1, "size_preference": math.NaN(), "unknown": 1})
	assert.Equal(t, 1.0, got.CostWeight)
	assert.Equal(t, 0.0, got.AidWeight)
	assert.Equal(t, 0.5, got.SizePreference)
	assert.Equal(t, 0.5, got.DistanceWeight)
}

func TestSeedWeights(t *testing.T) {
	assert.Equal(t, DefaultWeights(), SeedWeights(Profile{}))
	w := SeedWeights(NewProfile(domain.Student{PreferredSize: "small", Budget: ptr(15000)}))
	assert.Equal(t, sizePrefSmall, w.SizePreference)
	assert.Equal(t, 0.6, w.CostWeight)
	assert.Equal(t, sizePrefLarge, SeedWeights(Profile{PreferredSize: "large"}).SizePreference)
	assert.Equal(t, sizePrefMedium, SeedWeights(Profile{PreferredSize: "medium"}).SizePreference)
}

func TestFamilyWeights(t *testing.T) {
	f := FamilyWeightsFor(DefaultWeights())
	assert.InDelta(t, 0.6/2.1, f.Academic, 1e-12)
	assert.InDelta(t, 0.55/2.1, f.Financial, 1e-12)
	assert.InDelta(t, 0.55/2.1, f.Campus, 1e-12)
	assert.InDelta(t, 0.4/2.1, f.Outcomes, 1e-12)

	g := newGen(7, 0, true)
	for range 2000 {
		f := FamilyWeightsFor(g.weights())
		assert.InDelta(t, 1, f.Academic+f.Financial+f.Campus+f.Outcomes, 1e-12)
		for _, v := range []float64{f.Academic, f.Financial, f.Campus, f.Outcomes} {
			assert.True(t, v > 0 && v < 1)
		}
	}
	// A higher cost_weight gives financial fit more say.
	hi := DefaultWeights()
	hi.CostWeight = 1
	assert.Greater(t, FamilyWeightsFor(hi).Financial, FamilyWeightsFor(DefaultWeights()).Financial)
}
