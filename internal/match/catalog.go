package match

import (
	"cmp"
	"math"
	"slices"

	"github.com/collegematch/matching/internal/domain"
)

// Catalog is the school catalogue in the form scoring reads: each school's
// data checked once (non-finite and out-of-range values count as missing),
// converted to floats with presence flags, and laid out for a tight loop.
// It is immutable after NewCatalog and safe for concurrent use.
//
// Schools are held sorted by ID, so a catalogue index order is ID order;
// Scored.Index and every idx argument index Schools.
type Catalog struct {
	Schools []domain.School

	feat []features
	cold []coldFeatures
	// Data the scoring loop reads for one column only (the student's majors,
	// the student's income band) is stored column by column, so that a
	// pass over the catalogue reads it sequentially.
	programs [][]float64                       // [major][school] share of degrees
	price    [domain.IncomeBands + 1][]float32 // [income band, then income unknown][school]
	priceSrc [domain.IncomeBands + 1][]uint8
	byID     map[string]int
	region   []int8 // census region index (regionNames) of each school, by its state first; -1 when unknown
	// The selectivity level and size scale of each school, -1 when
	// unknown: what feed assembly tests probe boundaries against, in
	// columns a scan down a ranked list reads without the features.
	levels, sizes []float32
}

// nMajors is the number of fields of study program shares are kept for.
var nMajors = len(domain.Majors)

var majorIdx = func() map[domain.Major]int {
	m := make(map[domain.Major]int, len(domain.Majors))
	for i, mj := range domain.Majors {
		m[mj.Key] = i
	}
	return m
}()

// majorIndex is the column of m in Catalog.programs, or -1.
func majorIndex(m domain.Major) int {
	if i, ok := majorIdx[m]; ok {
		return i
	}
	return -1
}

var stateIdx = func() map[string]int {
	m := make(map[string]int, len(domain.States))
	for i, s := range domain.States {
		m[s.Code] = i
	}
	return m
}()

// stateIndex is the position of a state code in domain.States, or -1.
func stateIndex(code string) int8 {
	if i, ok := stateIdx[code]; ok {
		return int8(i)
	}
	return -1
}

// Net price sources, in the order they are tried.
const (
	srcNone uint8 = iota
	srcBand
	srcAverage
	srcTuition // resolved per student to srcTuitionIn or srcTuitionOut
	srcTuitionIn
	srcTuitionOut
)

// bandUnknown is the price slot for a student whose family income is unknown.
const bandUnknown = domain.IncomeBands

// features is one school as the scoring loop reads it. A knownness (the *K
// fields) is 1 for the school's own figure, 0.5 for a proxy of it and 0
// when the factor falls back to its neutral prior.
//
// It is kept to 64 bytes, one cache line, because the ranking loop streams
// through all of them; what only wording and bands read is in coldFeatures.
type features struct {
	// academic
	satLo, satHi float32 // combined SAT middle 50%; valid when hasRange
	selLevel     float32 // selectivity level in [0,1]: 1 - admission rate

	// financial (prices by income band are Catalog columns)
	tuitionIn, tuitionOut float32 // -1 when unknown
	pell, loan            float32 // -1 when unknown
	valueEarn             float32 // earnings for value_score, -1 when unknown

	// campus
	x, y, z   float32 // unit vector of the school's location
	sizeScale float32 // log size on the size_preference scale

	// outcomes: the family does not depend on the student
	outcomes float32
	outK     float32

	// knownness in halves: 0 unknown, 1 a proxy, 2 the school's own figure
	selK, valueEarnK, locK uint8

	hasRange, hasPrograms, hasSize bool
	state                          int8 // index in domain.States, -1 when unknown
	setting                        int8 // 0 city, 1 suburb, 2 town, 3 rural, -1 unknown
}

// coldFeatures are per-school values that bands and wording read, not the
// ranking loop.
type coldFeatures struct {
	admRate      float64 // -1 when unknown
	pell, loan   float64 // -1 when unknown
	rangeFromACT bool    // the range is the school's ACT range, converted
}

// half reads a knownness stored in halves.
func half(k uint8) float64 { return float64(k) / 2 }

// halves stores a knownness of 0, 0.5 or 1 in halves.
func halves(k float64) uint8 { return uint8(math.Round(2 * k)) }

// NewCatalog builds a catalogue from schools; the slice is copied (and
// sorted by ID in the copy), the schools themselves are not modified.
// Callers pass the schools that may be served (active ones).
func NewCatalog(schools []domain.School) *Catalog {
	n := len(schools)
	c := &Catalog{
		Schools:  slices.Clone(schools),
		feat:     make([]features, n),
		cold:     make([]coldFeatures, n),
		programs: make([][]float64, nMajors),
		byID:     make(map[string]int, n),
		region:   make([]int8, n),
		levels:   make([]float32, n),
		sizes:    make([]float32, n),
	}
	slices.SortStableFunc(c.Schools, func(a, b domain.School) int { return cmp.Compare(a.ID, b.ID) })
	for j := range c.programs {
		c.programs[j] = make([]float64, n)
	}
	for b := range c.price {
		c.price[b], c.priceSrc[b] = make([]float32, n), make([]uint8, n)
	}
	for i := range c.Schools {
		if _, dup := c.byID[c.Schools[i].ID]; !dup {
			c.byID[c.Schools[i].ID] = i
		}
		c.fill(i)
		c.region[i] = int8(regionIndex(c.Schools[i].Region))
		if st := c.feat[i].state; st >= 0 {
			c.region[i] = stateRegion[st]
		}
		c.levels[i], c.sizes[i] = -1, -1
		if f := &c.feat[i]; f.selK > 0 {
			c.levels[i] = f.selLevel
		}
		if f := &c.feat[i]; f.hasSize {
			c.sizes[i] = f.sizeScale
		}
	}
	return c
}

// Len is the number of schools.
func (c *Catalog) Len() int { return len(c.Schools) }

// Index finds a school's catalogue index by ID.
func (c *Catalog) Index(id string) (int, bool) {
	i, ok := c.byID[id]
	return i, ok
}

// Typical undergraduate enrollments at the ends of the size scale.
const (
	sizeScaleMin = 1000.0
	sizeScaleMax = 30000.0
)

// sizeScale puts an enrollment on the size_preference scale: 0 at 1,000
// undergraduates or fewer, 1 at 30,000 or more, logarithmic between.
func sizeScale(n float64) float64 {
	return clamp01(math.Log(n/sizeScaleMin) / math.Log(sizeScaleMax/sizeScaleMin))
}

// fill computes school i's features and columns.
func (c *Catalog) fill(i int) {
	s := &c.Schools[i]
	f, cold := &c.feat[i], &c.cold[i]
	*f = features{tuitionIn: -1, tuitionOut: -1, pell: -1, loan: -1, valueEarn: -1, setting: -1}
	*cold = coldFeatures{admRate: -1, pell: -1, loan: -1}
	f.state = stateIndex(s.State)

	if lo, hi, ok := schoolRange(s); ok {
		f.satLo, f.satHi, f.hasRange = float32(lo), float32(hi), true
		cold.rangeFromACT = s.SAT25 == nil || s.SAT75 == nil || *s.SAT25 <= 0 || *s.SAT75 <= 0
	}
	if a, ok := rate(s.AdmissionRate); ok && a > 0 {
		cold.admRate = a
		f.selLevel, f.selK = float32(1-a), 2
	} else if f.hasRange {
		f.selLevel, f.selK = float32(strengthOf((float64(f.satLo)+float64(f.satHi))/2)), 1
	}
	if len(s.ProgramShares) > 0 {
		for m, v := range s.ProgramShares {
			if j := majorIndex(m); j >= 0 && finite(v) {
				c.programs[j][i] = clamp01(v)
			}
		}
		f.hasPrograms = true
	}
	if s.Locale != nil {
		switch domain.SettingFromLocale(int(*s.Locale)) {
		case domain.SettingCity:
			f.setting = 0
		case domain.SettingSuburb:
			f.setting = 1
		case domain.SettingTown:
			f.setting = 2
		case domain.SettingRural:
			f.setting = 3
		}
	}

	// Prices.
	if v, ok := dollars(s.TuitionIn); ok {
		f.tuitionIn = float32(v)
	}
	if v, ok := dollars(s.TuitionOut); ok {
		f.tuitionOut = float32(v)
	}
	avg, hasAvg := dollars(s.AvgNetPrice)
	for b := 0; b <= domain.IncomeBands; b++ {
		switch v, ok := dollars(bandPrice(s, b)); {
		case ok:
			c.price[b][i], c.priceSrc[b][i] = float32(v), srcBand
		case hasAvg:
			c.price[b][i], c.priceSrc[b][i] = float32(avg), srcAverage
		case f.tuitionIn >= 0 || f.tuitionOut >= 0:
			c.priceSrc[b][i] = srcTuition
		}
	}
	if v, ok := rate(s.PellRate); ok {
		f.pell, cold.pell = float32(v), v
	}
	if v, ok := rate(s.LoanRate); ok {
		f.loan, cold.loan = float32(v), v
	}
	if e, k := earnings10(s); k > 0 {
		f.valueEarn, f.valueEarnK = float32(e), halves(k)
	}

	// Campus.
	if lat, lon, k := schoolPoint(s); k > 0 {
		x, y, z := unitVector(lat, lon)
		f.x, f.y, f.z, f.locK = float32(x), float32(y), float32(z), halves(k)
	}
	if s.Size != nil && *s.Size > 0 {
		f.sizeScale, f.hasSize = float32(sizeScale(float64(*s.Size))), true
	}

	o := outcomesOf(s)
	out, k := o.family()
	f.outcomes, f.outK = float32(out), float32(k)
}

// bandPrice is the school's net price for income band b, nil for the
// income-unknown slot.
func bandPrice(s *domain.School, b int) *int32 {
	if b < domain.IncomeBands {
		return s.NetPriceByBand[b]
	}
	return nil
}

// schoolRange is the school's combined SAT middle 50%, from its SAT range
// or, failing that, its ACT range through the concordance table.
func schoolRange(s *domain.School) (lo, hi float64, ok bool) {
	switch {
	case s.SAT25 != nil && s.SAT75 != nil && *s.SAT25 > 0 && *s.SAT75 > 0:
		lo, hi = float64(*s.SAT25), float64(*s.SAT75)
		lo, hi = max(400, min(1600, lo)), max(400, min(1600, hi))
	case s.ACT25 != nil && s.ACT75 != nil && *s.ACT25 > 0 && *s.ACT75 > 0:
		lo, hi = float64(ACTToSAT(int(*s.ACT25))), float64(ACTToSAT(int(*s.ACT75)))
	default:
		return 0, 0, false
	}
	if lo > hi {
		lo, hi = hi, lo
	}
	return lo, hi, true
}

// schoolPoint is the school's location: its coordinates (knownness 1), else
// the centre of its state (0.5), else unknown (0).
func schoolPoint(s *domain.School) (lat, lon, k float64) {
	if s.Lat != nil && s.Lon != nil && validLatLon(*s.Lat, *s.Lon) {
		return *s.Lat, *s.Lon, 1
	}
	if st, ok := domain.LookupState(s.State); ok {
		return st.Lat, st.Lon, 0.5
	}
	return 0, 0, 0
}

// rate reads a share; non-finite is missing, the rest is clamped to [0,1].
func rate(p *float64) (float64, bool) {
	if p == nil || !finite(*p) {
		return 0, false
	}
	return clamp01(*p), true
}

// dollars reads a yearly amount; a negative amount (the Scorecard has a few
// negative net prices) counts as 0.
func dollars(p *int32) (float64, bool) {
	if p == nil {
		return 0, false
	}
	return max(0, float64(*p)), true
}

// earnings10 is the 10-year median earnings, else the 6-year median scaled
// by 1.25 (knownness 0.5), else (0, 0).
func earnings10(s *domain.School) (float64, float64) {
	switch {
	case s.Earnings10yr != nil && *s.Earnings10yr > 0:
		return float64(*s.Earnings10yr), 1
	case s.Earnings6yr != nil && *s.Earnings6yr > 0:
		return 1.25 * float64(*s.Earnings6yr), 0.5
	}
	return 0, 0
}

// earnings6 is the 6-year median earnings, else the 10-year median scaled
// by 0.8 (knownness 0.5), else (0, 0).
func earnings6(s *domain.School) (float64, float64) {
	switch {
	case s.Earnings6yr != nil && *s.Earnings6yr > 0:
		return float64(*s.Earnings6yr), 1
	case s.Earnings10yr != nil && *s.Earnings10yr > 0:
		return 0.8 * float64(*s.Earnings10yr), 0.5
	}
	return 0, 0
}

// unitVector is the point on the unit sphere for a latitude and longitude.
func unitVector(lat, lon float64) (x, y, z float64) {
	const rad = math.Pi / 180
	sinLat, cosLat := math.Sincos(lat * rad)
	sinLon, cosLon := math.Sincos(lon * rad)
	return cosLat * cosLon, cosLat * sinLon, sinLat
}

const earthRadiusMiles = 3958.8

// chordMiles is the great-circle distance between two unit vectors: the
// same distance as domain.DistanceMiles (haversine), computed from the
// chord, which needs no trigonometry per school.
func chordMiles(ax, ay, az, bx, by, bz float64) float64 {
	dx, dy, dz := ax-bx, ay-by, az-bz
	c := math.Sqrt(dx*dx+dy*dy+dz*dz) / 2
	return 2 * earthRadiusMiles * asin(min(1, c))
}

// asin is math.Asin for x in [0,1], by its Maclaurin series up to x^19 for
// x <= 0.5 (error under 1e-8, about 4e-5 miles; every US distance under
// 4,100 miles), math.Asin above.
func asin(x float64) float64 {
	if x > 0.5 {
		return math.Asin(x)
	}
	return asinSeries(x)
}

func asinSeries(x float64) float64 {
	const (
		a1 = 1.0 / 6
		a2 = 3.0 / 40
		a3 = 5.0 / 112
		a4 = 35.0 / 1152
		a5 = 63.0 / 2816
		a6 = 231.0 / 13312
		a7 = 143.0 / 10240
		a8 = 6435.0 / 557056
		a9 = 12155.0 / 1245184
	)
	// Estrin's scheme: the terms are independent, so they overlap.
	z := x * x
	z2 := z * z
	z4 := z2 * z2
	p01 := 1 + a1*z
	p23 := a2 + a3*z
	p45 := a4 + a5*z
	p67 := a6 + a7*z
	p89 := a8 + a9*z
	return x * ((p01 + z2*p23) + z4*((p45+z2*p67)+z4*p89))
}
