package domain

import "time"

// Student is a student's profile as stored. Pointer fields are nil when the
// student has not given them.
type Student struct {
	ID             string
	Name           string
	Email          string
	GraduationYear string
	GPA            *float64
	SAT            *int
	ACT            *int

	HomeLat          *float64
	HomeLon          *float64
	State            string // two-letter code, "" when not given
	Zip              string
	MaxDistanceMiles *int
	Budget           *int // max yearly net price, USD
	FamilyIncome     *int // yearly, USD
	IntendedMajors   []Major
	PreferredSize    string // small, medium, large
	PreferredSetting string // city, suburb, town, rural

	SwipeCount int
	CreatedAt  time.Time
	UpdatedAt  time.Time
	DeletedAt  *time.Time
}

// Requirement groups a complete profile needs; they are what `missing` lists.
const (
	MissingAcademic = "gpa_or_test_score"
	MissingLocation = "home_or_state"
)

// Missing lists what the profile lacks to be complete: an academic signal
// (GPA or a test score) and a home location (coordinates, a state or a ZIP
// that resolved to one of them).
func (s Student) Missing() []string {
	missing := []string{}
	if s.GPA == nil && s.SAT == nil && s.ACT == nil {
		missing = append(missing, MissingAcademic)
	}
	if !s.HasLocation() {
		missing = append(missing, MissingLocation)
	}
	return missing
}

// HasLocation reports whether the student's home can be placed on a map.
func (s Student) HasLocation() bool {
	return (s.HomeLat != nil && s.HomeLon != nil) || s.State != ""
}

// Home returns the student's home coordinates: the given point, else the centre of their state.
func (s Student) Home() (lat, lon float64, ok bool) {
	if s.HomeLat != nil && s.HomeLon != nil {
		return *s.HomeLat, *s.HomeLon, true
	}
	if st, found := LookupState(s.State); found {
		return st.Lat, st.Lon, true
	}
	return 0, 0, false
}

// Sizes and settings a student may prefer.
var (
	PreferredSizes    = []string{"small", "medium", "large"}
	PreferredSettings = []string{string(SettingCity), string(SettingSuburb), string(SettingTown), string(SettingRural)}
)

// DefaultMaxDistanceMiles is used when a student gives no max_distance_miles.
const DefaultMaxDistanceMiles = 500
