package query

import (
	"encoding/json"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// genStrings are strings that need every kind of escape encoding/json
// makes, and some that need none.
var genStrings = []string{
	"", "a", "Ada Lovelace University", "São Paulo", "Pennsylvania State University-Main Campus",
	`quote " and backslash \ `, "<script>&amp;</script>", "tab\tnew\nline\rcr", "\b\f\x00\x01\x1f\x7f",
	"line\u2028para\u2029end", "bad utf-8 \xff\xfe and \xc3", "truncated \xe2\x80", "emoji 🎓 and 中文",
	"https://example.edu/?a=1&b=<2>", "'single'", "\u00e9\u0301", "end\\",
}

func genString(r *rand.Rand) string {
	if r.IntN(4) > 0 {
		return genStrings[r.IntN(len(genStrings))]
	}
	// Random bytes: any mix of ASCII, control characters and (invalid) UTF-8.
	b := make([]byte, r.IntN(24))
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return string(b)
}

// genFloats are finite floats at every cutoff of encoding/json's formats.
var genFloats = []float64{
	0, math.Copysign(0, -1), 1, -1, 0.5, 0.1 + 0.2, 0.8765, 1e-4, 0.12345678901234568, 123.4,
	1e-6, 9.99999e-7, 1e-7, -1e-7, 1.5e-10, 1e20, 1e21, 9.999999999999999e20, -1e21, 1e300,
	5e-324, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 2.5e-8, 100000, 1234567.5,
}

func genFloat(r *rand.Rand) float64 {
	switch r.IntN(4) {
	case 0:
		return genFloats[r.IntN(len(genFloats))]
	case 1:
		for {
			if v := math.Float64frombits(r.Uint64()); !math.IsNaN(v) && !math.IsInf(v, 0) {
				return v
			}
		}
	case 2:
		return math.Round(r.Float64()*1e4) / 1e4 // a score as shown
	}
	return (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(40)-20))
}

func genStringPtr(r *rand.Rand) *string {
	if r.IntN(3) == 0 {
		return nil
	}
	s := genString(r)
	return &s
}

func genFloatPtr(r *rand.Rand) *float64 {
	if r.IntN(3) == 0 {
		return nil
	}
	v := genFloat(r)
	return &v
}

func genInt32Ptr(r *rand.Rand) *int32 {
	if r.IntN(3) == 0 {
		return nil
	}
	v := int32(r.Uint32())
	return &v
}

func genStringSlice(r *rand.Rand) []string {
	switch r.IntN(5) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	out := make([]string, r.IntN(6))
	for i := range out {
		out[i] = genString(r)
	}
	return out
}

func genRange(r *rand.Rand) *ScoreRange {
	if r.IntN(3) == 0 {
		return nil
	}
	return &ScoreRange{Low: int(r.Int32()) - 1<<30, High: r.IntN(1601)}
}

func genRecommendation(r *rand.Rand) Recommendation {
	rec := Recommendation{
		SchoolID: genString(r), Name: genString(r), MatchScore: genFloat(r), MatchGrade: genString(r),
		MatchReasons: genStringSlice(r),
		Components:   ComponentScores{Academic: genFloat(r), Financial: genFloat(r), Campus: genFloat(r), Outcomes: genFloat(r)},
		School: SchoolView{
			ID: genString(r), Name: genString(r), City: genString(r), State: genString(r),
			Control: genStringPtr(r), Setting: genStringPtr(r), Size: genInt32Ptr(r), AdmissionRate: genFloatPtr(r),
			SATRange: genRange(r), ACTRange: genRange(r), GraduationRate: genFloatPtr(r), RetentionRate: genFloatPtr(r),
			MedianEarnings10yr: genInt32Ptr(r), MedianEarnings6yr: genInt32Ptr(r), URL: genStringPtr(r),
		},
		Explanations: genStringSlice(r), IsProbe: r.IntN(2) == 0, MatchedMajors: genStringSlice(r),
		Distance: genFloatPtr(r), AdmissionBand: genString(r),
	}
	if r.IntN(3) > 0 {
		rec.School.NetPrice = &NetPriceView{Amount: int(r.Int64()), Source: genString(r)}
	}
	switch r.IntN(4) {
	case 0: // the same lines, as recommendation gives them
		rec.Explanations = rec.MatchReasons
	case 1: // part of the same array
		if len(rec.MatchReasons) > 0 {
			rec.Explanations = rec.MatchReasons[:r.IntN(len(rec.MatchReasons))]
		}
	}
	return rec
}

// The hand-written encoding of an item is json.Marshal's, byte for byte,
// over many generated items: strings needing every escape (HTML
// characters, control characters, invalid UTF-8, U+2028), floats at the
// cutoffs of the exponent form and random bits, nil and empty slices, nil
// pointers. A field added to the views and not to the encoder shows here,
// since json.Marshal writes it.
func TestAppendRecommendationIsJSONMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		rec := genRecommendation(r)
		want, err := json.Marshal(rec)
		require.NoError(t, err)
		prefix := []byte("prefix")
		got, ok := appendRecommendation(prefix, &rec)
		require.True(t, ok)
		require.Equal(t, "prefix", string(got[:6]), "appended to what was there")
		require.Equal(t, string(want), string(got[6:]), "item %d: %#v", i, rec)
	}
}

// A float json.Marshal refuses makes the hand-written encoding fail too,
// leaving what was there.
func TestAppendRecommendationRefusesWhatJSONRefuses(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		for k := range 4 {
			rec := genRecommendation(r)
			switch k {
			case 0:
				rec.MatchScore = bad
			case 1:
				rec.Components.Outcomes = bad
			case 2:
				rec.Distance = &bad
			case 3:
				rec.School.RetentionRate = &bad
			}
			_, err := json.Marshal(rec)
			require.Error(t, err)
			got, ok := appendRecommendation([]byte("x"), &rec)
			assert.False(t, ok, "%v in field %d", bad, k)
			assert.Equal(t, "x", string(got))
		}
	}
}

// The compact page's items too.
func TestAppendCompactItemIsJSONMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		c := compactItem{I: genString(r), N: genString(r), S: int(r.Int64()), G: genString(r), C: genString(r),
			St: genString(r), P: r.IntN(2) == 0}
		want, err := json.Marshal(c)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendCompactItem(nil, &c)), "%#v", c)
	}
}

// FuzzAppendJSON checks the string and number encodings against
// json.Marshal on any input (go test -fuzz FuzzAppendJSON ./internal/query).
func FuzzAppendJSON(f *testing.F) {
	for i, s := range genStrings {
		f.Add(s, genFloats[i%len(genFloats)], uint64(i))
	}
	f.Add(strings.Repeat("<&>", 40), 1e21, uint64(1<<63))
	f.Fuzz(func(t *testing.T, s string, v float64, bits uint64) {
		rec := genRecommendation(rand.New(rand.NewPCG(bits, 7)))
		rec.Name, rec.School.City, rec.MatchReasons = s, s, []string{s, s}
		rec.MatchScore, rec.Distance = v, &v
		want, err := json.Marshal(rec)
		got, ok := appendRecommendation(nil, &rec)
		if err != nil {
			if ok {
				t.Fatalf("json.Marshal refuses %v, the encoder wrote %s", v, got)
			}
			return
		}
		if !ok || string(got) != string(want) {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	})
}

// A described item copies its school's record, encoded once per catalogue
// but for the net price: byte for byte what encoding the record would
// write, for every school (escapes in names, missing values) and every
// kind of price. A school whose record cannot be encoded (a float that is
// not finite) has none and is encoded, and refused, as before.
func TestSchoolRecordsAreTheRecordsEncoded(t *testing.T) {
	schools := catalog.Generate(400, 9)
	nan := math.NaN()
	schools[3].Name = "Saint <Mary's> & \"All\" \u2028 College \xff"
	schools[4].RetentionRate = &nan
	schools[5].URL, schools[5].City = "", ""
	schools[6].GradRate, schools[6].Size, schools[6].SAT25 = nil, nil, nil
	// The records kept are the process's: start from none, leave none.
	lastSchoolRecords.Store(nil)
	t.Cleanup(func() { lastSchoolRecords.Store(nil) })
	cat := active.NewCatalog(schools, 1)
	set := schoolRecords(cat)
	require.Same(t, set, schoolRecords(cat), "made once per catalogue")
	r := rand.New(rand.NewPCG(7, 8))
	prices := []match.NetPrice{{}, {Amount: 18250, Source: "net price for families earning $48k-75k (College Scorecard)"},
		{Amount: 0, Source: "cost of attendance <estimate> & \"more\""}}
	for idx := range cat.Len() {
		record := set.of(idx)
		if cat.Schools[idx].ID == schools[4].ID {
			assert.Nil(t, record, "a record json.Marshal refuses")
			rec := genRecommendation(r)
			rec.School = schoolViewPriced(cat, idx, prices[1])
			_, ok := appendRecommendation(nil, &rec)
			assert.False(t, ok, "and its item is refused, encoded whole")
			continue
		}
		require.NotNil(t, record, cat.Schools[idx].Name)
		for _, price := range prices {
			rec := genRecommendation(r)
			rec.School = schoolViewPriced(cat, idx, price)
			want, ok := appendRecommendation([]byte("x"), &rec)
			require.True(t, ok)
			bare := rec
			bare.School = SchoolView{NetPrice: rec.School.NetPrice}
			got, ok := appendRecommendationWith([]byte("x"), &bare, record)
			require.True(t, ok)
			require.Equal(t, string(want), string(got), "school %d, price %+v", idx, price)
		}
	}
	// A reloaded catalogue gets its own; the one before, still in use for
	// a moment, then has none (its items are encoded whole) rather than
	// taking the place of the new one's.
	other := active.NewCatalog(schools[:10], 2)
	assert.Len(t, schoolRecords(other).records, 10)
	assert.Nil(t, schoolRecords(cat))
	assert.Nil(t, schoolRecords(cat).of(0))
	assert.Same(t, schoolRecords(other), schoolRecords(other))
}

// genProfile is a profile with every field set at random, non-finite
// floats among them now and then.
func genProfile(r *rand.Rand) match.Profile {
	p := match.Profile{
		SAT: r.IntN(1700) - 50, Basis: match.AcademicBasis(r.IntN(4)), ACT: r.IntN(40), GPA: genFloat(r),
		HasGPA: r.IntN(2) == 0, HasHome: r.IntN(2) == 0, HomeLat: genFloat(r), HomeLon: genFloat(r),
		HomeApprox: r.IntN(2) == 0, State: genString(r), MaxDistanceMiles: genFloat(r),
		Budget: r.IntN(100000) - 10, HasBudget: r.IntN(2) == 0, IncomeBand: r.IntN(7) - 1,
		PreferredSize: genString(r), PreferredSetting: domain.Setting(genString(r)),
	}
	if ss := genStringSlice(r); ss != nil {
		p.Majors = make([]domain.Major, len(ss))
		for i, s := range ss {
			p.Majors[i] = domain.Major(s)
		}
	}
	switch r.IntN(20) {
	case 0:
		p.GPA = math.NaN()
	case 1:
		p.MaxDistanceMiles = math.Inf(1)
	}
	return p
}

// TestAppendProfileIsJSONMarshal: the profile a rebuild encodes by hand
// is what json.Marshal writes, and nil where json.Marshal refuses it; a
// field added to match.Profile and not to appendProfile fails here.
func TestAppendProfileIsJSONMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	for range 20000 {
		p := genProfile(r)
		want, err := json.Marshal(p)
		if err != nil {
			want = nil
		}
		require.Equal(t, string(want), string(appendProfile(nil, &p)), "%+v", p)
	}
	names := []string{}
	for f := range reflect.TypeFor[match.Profile]().Fields() {
		names = append(names, f.Name)
	}
	var got map[string]any
	p := genProfile(r)
	p.GPA, p.MaxDistanceMiles = 1, 1
	require.NoError(t, json.Unmarshal(appendProfile(nil, &p), &got))
	assert.ElementsMatch(t, names, slices.Collect(maps.Keys(got)), "every field of the profile")
}

// TestAppendWeightsShownIsJSONMarshal: the weights a page shows, encoded
// by hand, are json.Marshal of the rounded map; the learned texts are
// json.Marshal of the strings.
func TestAppendWeightsShownIsJSONMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 9))
	for range 5000 {
		w := map[string]float64{}
		for range r.IntN(10) {
			w[genString(r)] = genFloat(r)
		}
		if r.IntN(10) == 0 {
			w["bad"] = math.Inf(-1)
		}
		want, err := json.Marshal(roundWeights(w))
		if err != nil {
			want = nil
		}
		require.Equal(t, string(want), string(appendWeightsShown(nil, w)))
		ss := genStringSlice(r)
		want, err = json.Marshal(ss)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendStrings(nil, ss)))
	}
	weights := match.SeedWeights(match.NewProfile(domain.Student{})).Sanitize().Map()
	want, _ := json.Marshal(roundWeights(weights))
	assert.Equal(t, string(want), string(appendWeightsShown(nil, weights)))
}
