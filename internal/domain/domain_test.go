package domain_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
)

func TestStatesCoverFiftyAndDC(t *testing.T) {
	require.Len(t, domain.States, 51)
	regions := map[domain.Region]int{}
	for _, s := range domain.States {
		got, ok := domain.LookupState(s.Code)
		require.True(t, ok, s.Code)
		assert.Equal(t, s, got)
		regions[s.Region]++
		assert.True(t, s.Lat > 18 && s.Lat < 72 && s.Lon > -170 && s.Lon < -66, s.Code)
	}
	assert.Len(t, regions, 4)
	_, ok := domain.LookupState("PR")
	assert.False(t, ok, "territories are not states")
}

func TestDistanceMiles(t *testing.T) {
	// Boston to Los Angeles is about 2,600 miles.
	d := domain.DistanceMiles(42.36, -71.06, 34.05, -118.24)
	assert.InDelta(t, 2600, d, 30)
	assert.Zero(t, domain.DistanceMiles(40, -75, 40, -75))
	assert.False(t, math.IsNaN(domain.DistanceMiles(90, 0, -90, 180)))
}

func TestIncomeBand(t *testing.T) {
	for income, band := range map[float64]int{0: 0, 30000: 0, 30001: 1, 48000: 1, 60000: 2, 110000: 3, 110001: 4, 1e7: 4} {
		assert.Equal(t, band, domain.IncomeBand(income), income)
	}
}

func TestSettingFromLocale(t *testing.T) {
	assert.Equal(t, domain.SettingCity, domain.SettingFromLocale(11))
	assert.Equal(t, domain.SettingSuburb, domain.SettingFromLocale(23))
	assert.Equal(t, domain.SettingTown, domain.SettingFromLocale(32))
	assert.Equal(t, domain.SettingRural, domain.SettingFromLocale(43))
	assert.Equal(t, domain.Setting(""), domain.SettingFromLocale(-3))
}

func TestParseMajor(t *testing.T) {
	for in, want := range map[string]domain.Major{
		"computer": "computer", "Computer Science": "computer", " CS ": "computer",
		"Business, Management and Marketing": "business_marketing", "business marketing": "business_marketing",
		"nursing": "health",
	} {
		got, ok := domain.ParseMajor(in)
		require.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
	_, ok := domain.ParseMajor("alchemy")
	assert.False(t, ok)

	// decisions.md, "Input that people send": key, display name, common
	// alias or plural, or a CIP code of 2, 4 or 6 digits with or without
	// the dot.
	for in, want := range map[string]domain.Major{
		"Communications": "communication", "communication": "communication", "COMMUNICATION": "communication",
		"Comp Sci": "computer", "comp-sci": "computer", "CompSci": "computer", "Computer Sciences": "computer",
		"Computer and Information Sciences": "computer", "computer & information sciences": "computer",
		"Business, Management & Marketing": "business_marketing", "business_marketing": "business_marketing",
		"Pre-Med": "biological", "pre med": "biological", "Biology": "biological", "biologies": "biological",
		"Maths": "mathematics", "Arts": "visual_performing", "Theatre": "visual_performing",
		"Economics": "social_science", "Engineering Technologies": "engineering_technology",
		"engineering technology": "engineering_technology", "Multi/Interdisciplinary Studies": "multidiscipline",
		"Psychology": "psychology", "psych": "psychology", "Political Science": "social_science",
		"Women's Studies": "ethnic_cultural_gender", "  nursing  ": "health",
		"11": "computer", "11.07": "computer", "1107": "computer", "11.0701": "computer", "110701": "computer",
		"09": "communication", "09.0100": "communication", "090100": "communication", "51.3801": "health",
		"PCIP52": "business_marketing", "pcip14": "engineering",
	} {
		got, ok := domain.ParseMajor(in)
		if assert.True(t, ok, "%q is a major", in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, in := range []string{
		"", "   ", "c", "x", "underwater basket weaving", "computers and stuff",
		"1", "111", "11.1", "11.07011", "1107011", "14.", "11..07", "11.07.01", ".1107", "11-07", "1 1",
		"02", "28.0101", "60", "99", // CIP families the Scorecard reports no programs for
		"PCIP", "PCIP1", "pcip99", strings.Repeat("a", 1000),
	} {
		_, ok := domain.ParseMajor(in)
		assert.False(t, ok, "%q is not a major", in)
	}
	assert.Equal(t, "Engineering", domain.MajorName("engineering"))
	assert.Len(t, domain.Majors, 38)
}

func TestMissingAndHome(t *testing.T) {
	s := domain.Student{}
	assert.Equal(t, []string{domain.MissingAcademic, domain.MissingLocation}, s.Missing())
	_, _, ok := s.Home()
	assert.False(t, ok)

	act := 30
	s.ACT, s.State = &act, "OR"
	assert.Empty(t, s.Missing())
	lat, lon, ok := s.Home()
	require.True(t, ok)
	or, _ := domain.LookupState("OR")
	assert.Equal(t, [2]float64{or.Lat, or.Lon}, [2]float64{lat, lon})

	hl, hn := 45.5, -122.7
	s.HomeLat, s.HomeLon = &hl, &hn
	lat, lon, _ = s.Home()
	assert.Equal(t, [2]float64{45.5, -122.7}, [2]float64{lat, lon}, "a given point beats the state centre")
}

func TestProfilePatchApply(t *testing.T) {
	gpa := 3.1
	base := domain.Student{Name: "A", Email: "a@example.com", GPA: &gpa, State: "CA", IntendedMajors: []domain.Major{"history"}}
	p := domain.ProfilePatch{
		Name:           domain.Val("B"),
		GPA:            domain.Field[float64]{Set: true, Null: true},
		Home:           domain.Val(domain.Point{Lat: 1, Lon: 2}),
		IntendedMajors: domain.Val([]domain.Major{"computer"}),
	}
	out := p.Apply(base)
	assert.Equal(t, "B", out.Name)
	assert.Equal(t, "a@example.com", out.Email, "absent keeps")
	assert.Nil(t, out.GPA, "null clears")
	assert.Equal(t, "CA", out.State)
	assert.Equal(t, 1.0, *out.HomeLat)
	assert.Equal(t, []domain.Major{"computer"}, out.IntendedMajors)
	assert.Equal(t, 3.1, *base.GPA, "input not modified")
	assert.Equal(t, []domain.Major{"history"}, base.IntendedMajors)
}

func TestErrors(t *testing.T) {
	e := domain.StudentNotFound("x")
	assert.Equal(t, domain.KindNotFound, domain.KindOf(e))
	assert.Equal(t, domain.CodeInvalidStudentID, e.Code)
	assert.Equal(t, "x", e.Details["student_id"])
	assert.Equal(t, domain.KindInternal, domain.KindOf(assert.AnError))
	assert.Equal(t, domain.CodeNotImplemented, domain.Errorf(domain.KindNotImplemented, "n").Code)
	inv := domain.Invalid("bad", map[string]string{"f": "is bad"})
	assert.Equal(t, map[string]string{"f": "is bad"}, inv.Details["fields"])
}
