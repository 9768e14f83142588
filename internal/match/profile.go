package match

import (
	"math"

	"github.com/collegematch/matching/internal/domain"
)

// AcademicBasis says where a profile's SAT-equivalent comes from.
type AcademicBasis uint8

const (
	BasisNone AcademicBasis = iota // no test score and no GPA
	BasisSAT                       // the student's SAT
	BasisACT                       // the student's ACT, converted by the concordance table
	BasisGPA                       // estimated from GPA: a weaker signal, see NewProfile
)

// Profile is the scoring view of a student. Build it with NewProfile (in a
// literal, IncomeBand -1 means the income is unknown; 0 is the lowest band).
type Profile struct {
	// SAT is the combined SAT (400-1600) scoring uses, 0 when Basis is
	// BasisNone. With BasisACT it is the ACT's concordant SAT, with BasisGPA
	// an estimate from the GPA.
	SAT   int
	Basis AcademicBasis
	ACT   int     // the ACT composite when the student gave one, else 0
	GPA   float64 // the GPA when given, else 0
	// HasGPA reports whether GPA was given.
	HasGPA bool

	// Home is the student's home point: the coordinates given, else the
	// centre of their state. HasHome is false when neither is known.
	HasHome          bool
	HomeLat, HomeLon float64
	HomeApprox       bool    // the home point is the centre of the student's state
	State            string  // two-letter code, "" when not given; decides in-state tuition
	MaxDistanceMiles float64 // default domain.DefaultMaxDistanceMiles

	Budget     int  // most the family will pay a year, USD
	HasBudget  bool // Budget was given
	IncomeBand int  // domain.IncomeBand of the family income, -1 when not given

	Majors           []domain.Major // intended majors, in the student's order, no duplicates
	PreferredSize    string         // small, medium, large or ""; seeds size_preference (see SeedWeights)
	PreferredSetting domain.Setting // city, suburb, town, rural or ""
}

// NewProfile builds the scoring view of a student. Values out of their valid
// range (an SAT outside 400-1600, a GPA outside 0-5, a NaN anywhere, a
// negative budget) are treated as not given.
//
// The SAT-equivalent is the SAT when given; else the ACT through the
// ACT/SAT concordance table (2018); else an estimate from GPA, which scoring
// treats as a weaker signal (sat_match pulled halfway to neutral, lower
// confidence).
func NewProfile(s domain.Student) Profile {
	p := Profile{IncomeBand: -1, MaxDistanceMiles: domain.DefaultMaxDistanceMiles, State: s.State}
	if s.ACT != nil && *s.ACT >= 1 && *s.ACT <= 36 {
		p.ACT = *s.ACT
	}
	if s.GPA != nil && finite(*s.GPA) && *s.GPA >= 0 && *s.GPA <= 5 {
		p.GPA, p.HasGPA = *s.GPA, true
	}
	switch {
	case s.SAT != nil && *s.SAT >= 400 && *s.SAT <= 1600:
		p.SAT, p.Basis = *s.SAT, BasisSAT
	case p.ACT > 0:
		p.SAT, p.Basis = ACTToSAT(p.ACT), BasisACT
	case p.HasGPA:
		p.SAT, p.Basis = GPAToSAT(p.GPA), BasisGPA
	}
	if lat, lon, ok := s.Home(); ok && validLatLon(lat, lon) {
		p.HasHome, p.HomeLat, p.HomeLon = true, lat, lon
		p.HomeApprox = s.HomeLat == nil || s.HomeLon == nil
	} else if st, ok := domain.LookupState(s.State); ok {
		// The coordinates given are unusable; fall back to the state's centre.
		p.HasHome, p.HomeLat, p.HomeLon, p.HomeApprox = true, st.Lat, st.Lon, true
	}
	if s.MaxDistanceMiles != nil && *s.MaxDistanceMiles > 0 {
		p.MaxDistanceMiles = float64(*s.MaxDistanceMiles)
	}
	if s.Budget != nil && *s.Budget >= 0 {
		p.Budget, p.HasBudget = *s.Budget, true
	}
	if s.FamilyIncome != nil && *s.FamilyIncome >= 0 {
		p.IncomeBand = domain.IncomeBand(float64(*s.FamilyIncome))
	}
	seen := map[domain.Major]bool{}
	for _, m := range s.IntendedMajors {
		if majorIndex(m) >= 0 && !seen[m] {
			seen[m] = true
			p.Majors = append(p.Majors, m)
		}
	}
	switch s.PreferredSize {
	case "small", "medium", "large":
		p.PreferredSize = s.PreferredSize
	}
	switch st := domain.Setting(s.PreferredSetting); st {
	case domain.SettingCity, domain.SettingSuburb, domain.SettingTown, domain.SettingRural:
		p.PreferredSetting = st
	}
	return p
}

// actConcordance is the 2018 ACT/College Board concordance: ACT composite
// (index) to SAT total. The table starts at 9; below it the SAT falls 40
// points per ACT point, floored at 400.
var actConcordance = [37]int{
	9: 590, 10: 630, 11: 670, 12: 710, 13: 760, 14: 800, 15: 850, 16: 890, 17: 930, 18: 970,
	19: 1010, 20: 1040, 21: 1080, 22: 1110, 23: 1140, 24: 1180, 25: 1210, 26: 1240, 27: 1280,
	28: 1310, 29: 1340, 30: 1370, 31: 1400, 32: 1430, 33: 1460, 34: 1500, 35: 1540, 36: 1590,
}

// ACTToSAT converts an ACT composite (1-36, clamped) to its concordant SAT total.
func ACTToSAT(act int) int {
	act = max(1, min(36, act))
	if act >= 9 {
		return actConcordance[act]
	}
	return max(400, 590-40*(9-act))
}

// gpaToSAT is a rough GPA to SAT-equivalent table used only when a student
// has no test score. It places a 3.0 near the national middle and a 4.0
// (unweighted) among strong applicants; weighted GPAs above 4 add little.
var gpaToSAT = []point{
	{0, 400}, {1, 600}, {2, 850}, {2.5, 950}, {3, 1070}, {3.5, 1200}, {3.8, 1290}, {4, 1350}, {4.5, 1420}, {5, 1450},
}

// GPAToSAT estimates an SAT-equivalent from a GPA on a 0-5 scale.
func GPAToSAT(gpa float64) int {
	return int(math.Round(interp(gpaToSAT, gpa)))
}

// point is one knot of a piecewise-linear curve.
type point struct{ x, y float64 }

// interp evaluates the piecewise-linear curve through pts (sorted by x) at
// x, flat beyond both ends. NaN gives the first knot's value.
func interp(pts []point, x float64) float64 {
	if !(x > pts[0].x) {
		return pts[0].y
	}
	for i := 1; i < len(pts); i++ {
		if x <= pts[i].x {
			a, b := pts[i-1], pts[i]
			return a.y + (b.y-a.y)*(x-a.x)/(b.x-a.x)
		}
	}
	return pts[len(pts)-1].y
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func validLatLon(lat, lon float64) bool {
	return finite(lat) && finite(lon) && lat >= -90 && lat <= 90 && lon >= -180 && lon <= 180
}
