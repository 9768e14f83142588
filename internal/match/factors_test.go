package match

import (
	"math"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/collegematch/matching/internal/domain"
)

func TestSatMatch(t *testing.T) {
	lo, hi := 1210.0, 1340.0
	tests := []struct {
		x, want float64
	}{
		{1210, 0.85}, {1275, 0.925}, {1340, 1}, {1490, 0.9}, {1640, 0.8}, {1600, 0.8 + 0.2*40/300},
		{1110, 0.85 / (1 + math.Pow(100.0/110, 2))}, {910, 0.85 / (1 + math.Pow(300.0/110, 2))},
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, satMatch(tt.x, lo, hi), 1e-12, "x=%v", tt.x)
	}
	assert.Equal(t, satMatch(1250, lo, hi), satMatch(1250, hi, lo), "a reversed range is read the right way round")
	assert.Equal(t, 1.0, satMatch(1300, 1300, 1300))
	// Inside beats far below; a student well above still scores high.
	assert.Greater(t, satMatch(1220, lo, hi), satMatch(1000, lo, hi))
	assert.Greater(t, satMatch(1500, lo, hi), 0.8)
	assert.Less(t, satMatch(1500, lo, hi), satMatch(1340, lo, hi))
}

func TestAffordability(t *testing.T) {
	assert.Equal(t, 1.0, affordability(0, 20000))
	assert.Equal(t, 0.75, affordability(20000, 20000))
	assert.InDelta(t, 0.375, affordability(26000, 20000), 1e-12)
	prev := 2.0
	for price := 0.0; price <= 100000; price += 250 {
		a := affordability(price, 20000)
		assert.LessOrEqual(t, a, prev, "price %v", price)
		prev = a
	}
	assert.Equal(t, 1.0, affordability(-100, 20000), "negative prices count as free")
	assert.Equal(t, 0.75, affordability(500, 0), "a zero budget counts as $500")
}

func TestLocationFit(t *testing.T) {
	assert.Equal(t, 1.0, locationFit(0, 1.0/500))
	assert.InDelta(t, 0.7, locationFit(500, 1.0/500), 1e-12)
	assert.InDelta(t, 0.35, locationFit(750, 1.0/500), 1e-12)
	assert.InDelta(t, 0.14, locationFit(1000, 1.0/500), 1e-12)
	prev := 2.0
	for d := 0.0; d < 6000; d += 7 {
		v := locationFit(d, 1.0/500)
		assert.LessOrEqual(t, v, prev)
		prev = v
	}
}

func TestOtherCurves(t *testing.T) {
	assert.Equal(t, 1.0, selectivityFit(0.4, 0.4))
	assert.InDelta(t, 0.5, selectivityFit(0.6, 0.4), 1e-12)
	assert.InDelta(t, 0.5, programStrength(0.05), 1e-12)
	assert.Equal(t, 0.0, programStrength(0))
	assert.InDelta(t, 0.5, valueScore(40000, 20000), 1e-12, "earnings equal to two years' price")
	assert.Equal(t, 1.0, sizeFit(0.3, 0.3))
	assert.InDelta(t, 0.5, sizeFit(0.6, 0.3), 1e-12)
	assert.Equal(t, 0.0, sizeScale(1000))
	assert.Equal(t, 1.0, sizeScale(30000))
	assert.Equal(t, 1.0, sizeScale(90000))
	assert.Equal(t, 0.0, sizeScale(10))
	for pref := range 4 {
		assert.Equal(t, 1.0, settingFitTable[pref][pref])
	}
	assert.Equal(t, 0.5, selectivityTarget(0, BasisNone, 0.5))
	assert.InDelta(t, 0.5, selectivityTarget(1300, BasisSAT, 0.5), 1e-12)
	assert.InDelta(t, 0.8, selectivityTarget(1300, BasisSAT, 1), 1e-12)
	assert.InDelta(t, 0.2, selectivityTarget(1300, BasisSAT, 0), 1e-12)
}

func TestAidAvailability(t *testing.T) {
	v, k := aidAvailability(0.6, 0, pellWeight[domain.IncomeBand0to30k])
	assert.Equal(t, 1.0, v)
	assert.Equal(t, 1.0, k)
	v, _ = aidAvailability(0.9, 0.5, 0.5)
	assert.Equal(t, 0.75, v, "a Pell share over 60% counts as full")
	v, k = aidAvailability(0.3, -1, 0.6)
	assert.InDelta(t, 0.5, v, 1e-7)
	assert.Equal(t, 0.5, k)
	v, k = aidAvailability(-1, 0.25, 0.6)
	assert.Equal(t, 0.75, v)
	assert.Equal(t, 0.5, k)
	v, k = aidAvailability(-1, -1, 0.45)
	assert.Equal(t, Neutral, v)
	assert.Equal(t, 0.0, k)
}

func TestOutcomes(t *testing.T) {
	o := outcomesOf(&domain.School{GradRate: ptr(0.78), Earnings6yr: ptr[int32](30000), Earnings10yr: ptr[int32](110000)})
	assert.Equal(t, 0.78, o.grad)
	assert.InDelta(t, 0.5, o.employ, 1e-12, "median at the threshold: half out-earn it")
	assert.InDelta(t, 1, o.earn, 1e-12)
	assert.Equal(t, 1.0, o.gradK+o.employK+o.earnK-2)

	o = outcomesOf(&domain.School{RetentionRate: ptr(0.8), Earnings10yr: ptr[int32](50000)})
	assert.InDelta(t, 0.6, o.grad, 1e-12)
	assert.Equal(t, 0.5, o.gradK)
	assert.Equal(t, 0.5, o.employK, "employment from 0.8x the 10-year median")
	assert.Equal(t, 1.0, o.earnK)

	o = outcomesOf(&domain.School{})
	assert.Equal(t, outcomeFactors{grad: Neutral, employ: Neutral, earn: Neutral}, o)
}

// The chord distance with the series arcsine agrees with the haversine.
func TestDistanceAgreesWithHaversine(t *testing.T) {
	g := newGen(3, 0, false)
	for range 20000 {
		lat1, lon1 := g.r.Float64()*180-90, g.r.Float64()*360-180
		lat2, lon2 := g.r.Float64()*180-90, g.r.Float64()*360-180
		if g.r.IntN(2) == 0 { // nearby pairs too
			lat2, lon2 = max(-90, min(90, lat1+g.r.Float64()-0.5)), lon1+g.r.Float64()-0.5
		}
		ax, ay, az := unitVector(lat1, lon1)
		bx, by, bz := unitVector(lat2, lon2)
		assert.InDelta(t, domain.DistanceMiles(lat1, lon1, lat2, lon2), chordMiles(ax, ay, az, bx, by, bz), 0.01)
	}
	for x := 0.0; x <= 1; x += 1.0 / 4096 {
		assert.InDelta(t, math.Asin(x), asin(x), 1e-8, "x=%v", x)
	}
}

// The ranking loop streams features; one cache line each.
func TestFeaturesFitACacheLine(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(features{}), uintptr(64))
}

func TestFeaturesOfSanitizes(t *testing.T) {
	s := domain.School{
		ID: "x", State: "ZZ", Lat: ptr(math.NaN()), Lon: ptr(10.0), AdmissionRate: ptr(0.0),
		SAT25: ptr[int16](1500), SAT75: ptr[int16](1200), PellRate: ptr(math.Inf(1)), LoanRate: ptr(1.7),
		AvgNetPrice: ptr[int32](-300), Size: ptr[int32](0),
		ProgramShares: map[domain.Major]float64{"computer": math.NaN(), "health": 2, "not-a-major": 0.5},
	}
	cat := NewCatalog([]domain.School{s})
	f := cat.feat[0]
	assert.Equal(t, uint8(0), f.locK, "no usable point and no known state")
	assert.Equal(t, -1.0, cat.cold[0].admRate, "an admission rate of 0 is missing")
	assert.Equal(t, float32(1200), f.satLo)
	assert.Equal(t, float32(1500), f.satHi)
	assert.Equal(t, float32(-1), f.pell)
	assert.Equal(t, float32(1), f.loan)
	assert.Equal(t, float32(0), cat.price[bandUnknown][0])
	assert.Equal(t, srcAverage, cat.priceSrc[bandUnknown][0])
	assert.False(t, f.hasSize)
	assert.Equal(t, 0.0, cat.programs[majorIndex("computer")][0])
	assert.Equal(t, 1.0, cat.programs[majorIndex("health")][0])
}

// Kept factors are in [0, 1] in steps of 1/32768: exact for 0, Neutral and
// 1, within half a step otherwise, out-of-range values clamped, and a kept
// value kept again unchanged.
func TestPack16(t *testing.T) {
	for _, x := range []float64{0, Neutral, 1, 0.25, 0.75} {
		assert.Equal(t, x, q16(x), "%v", x)
	}
	for _, x := range []float64{0.85, 0.1, 0.3, 0.7, 1e-9, 0.999999, 0.123456789} {
		assert.InDelta(t, x, q16(x), 0.5/factorScale, "%v", x)
		assert.Equal(t, pack16(x), pack16(q16(x)), "%v", x)
	}
	assert.Equal(t, 0.0, q16(-0.5))
	assert.Equal(t, 1.0, q16(1.5))
	assert.Equal(t, 0.0, q16(math.NaN()))
	assert.Equal(t, 20, FactorBytesPerSchool)
}
