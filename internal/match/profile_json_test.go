package match

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
)

// genProfileJSON is a profile with every field drawn at random (strings
// plain or needing escapes, floats of every form), as json.Marshal writes
// it.
func genProfileJSON(r *rand.Rand) []byte {
	strs := []string{"", "PA", "medium", "suburb", "computer", "a\"b", "tab\t", "é", "<&>", "\\", "\xff"}
	str := func() string { return strs[r.IntN(len(strs))] }
	floats := []float64{0, 1, -1, 3.75, 39.95, -75.16, 1e-7, 1e21, 123456.789, math.Copysign(0, -1), 5e-324}
	float := func() float64 {
		if r.IntN(3) == 0 {
			return (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(30)-15))
		}
		return floats[r.IntN(len(floats))]
	}
	p := Profile{SAT: r.IntN(1700) - 50, Basis: AcademicBasis(r.IntN(4)), ACT: r.IntN(40), GPA: float(),
		HasGPA: r.IntN(2) == 0, HasHome: r.IntN(2) == 0, HomeLat: float(), HomeLon: float(), HomeApprox: r.IntN(2) == 0,
		State: str(), MaxDistanceMiles: float(), Budget: r.IntN(100000) - 10, HasBudget: r.IntN(2) == 0,
		IncomeBand: r.IntN(7) - 1, PreferredSize: str(), PreferredSetting: domain.Setting(str())}
	switch r.IntN(3) {
	case 0:
		p.Majors = []domain.Major{}
	case 1:
		for range r.IntN(4) + 1 {
			p.Majors = append(p.Majors, domain.Major(str()))
		}
	}
	b, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return b
}

// TestParseProfileIsJSONUnmarshal: whatever the bytes, ParseProfile gives
// what json.Unmarshal gives (and fails where it fails); the layout the
// service writes, with plain strings, is read without encoding/json.
func TestParseProfileIsJSONUnmarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	direct := 0
	check := func(b []byte) {
		t.Helper()
		var want Profile
		wantErr := json.Unmarshal(b, &want)
		got, err := ParseProfile(b)
		require.Equal(t, wantErr != nil, err != nil, "%s", b)
		if wantErr == nil {
			require.Equal(t, want, got, "%s", b)
			// The same bits: -0 and 0 are equal to Equal.
			require.Equal(t, math.Float64bits(want.GPA), math.Float64bits(got.GPA), "%s", b)
		}
		if _, ok := parseProfileLayout(b); ok {
			direct++
		}
	}
	for range 2000 {
		b := genProfileJSON(r)
		check(b)
		// Changed a little: reordered, spaced, truncated, numbers out of range.
		s := string(b)
		for _, v := range []string{
			strings.Replace(s, `,"ACT":`, `, "ACT" : `, 1), s[:r.IntN(len(s))], s + " ", s + "x",
			strings.Replace(s, `"Basis":`, `"Basis":300,"X":`, 1), strings.Replace(s, `"SAT":`, `"SAT":1e3,"Y":`, 1),
			strings.Replace(s, `"Budget":`, `"Budget":07,"Z":`, 1), strings.Replace(s, `"GPA":`, `"GPA":1e999,"W":`, 1),
			strings.Replace(s, `"Majors":`, `"majors":`, 1),
		} {
			check([]byte(v))
		}
	}
	assert.Greater(t, direct, 100, "the layout the service writes is read directly")

	p := NewProfile(domain.Student{ID: "x", SAT: ptr(1380), GPA: ptr(3.8), HomeLat: ptr(39.95), HomeLon: ptr(-75.16),
		State: "PA", IntendedMajors: []domain.Major{"computer", "mathematics"}, PreferredSize: "medium"})
	b, err := json.Marshal(p)
	require.NoError(t, err)
	got, ok := parseProfileLayout(b)
	require.True(t, ok, "a student's profile is read directly")
	assert.Equal(t, p, got)
}
