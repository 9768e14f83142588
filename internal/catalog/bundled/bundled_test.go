package bundled_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/catalog/bundled"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

func TestBundledCatalogue(t *testing.T) {
	schools, err := bundled.Schools()
	require.NoError(t, err)
	assert.Less(t, bundled.Size(), 1<<20, "the compact file stays well under 2 MB")
	assert.Len(t, schools, 3081)

	states := map[string]int{}
	for _, s := range schools {
		require.NotNil(t, s.UnitID)
		assert.Equal(t, catalog.SchoolID(*s.UnitID), s.ID, "ids are the importer's: UUIDv5 of the UNITID")
		assert.True(t, s.Active)
		assert.Equal(t, catalog.SourceScorecard, s.Source)
		assert.NotEmpty(t, s.Name)
		assert.NotEqual(t, domain.ControlUnknown, s.Control, "%s", s.Name)
		states[s.State]++
	}
	assert.Len(t, states, len(domain.States), "every state and DC has schools")

	// Real schools with the values of the public files.
	byName := map[string]domain.School{}
	for _, s := range schools {
		byName[s.Name] = s
	}
	mit, ok := byName["Massachusetts Institute of Technology"]
	require.True(t, ok)
	assert.Equal(t, int32(166683), *mit.UnitID)
	assert.Equal(t, "Cambridge", mit.City)
	assert.Equal(t, domain.ControlNonprofit, mit.Control)
	require.NotNil(t, mit.AdmissionRate)
	assert.Less(t, *mit.AdmissionRate, 0.1)
	require.NotNil(t, mit.SAT25)
	assert.Greater(t, int(*mit.SAT25), 1400)
	assert.Greater(t, mit.ProgramShares["engineering"], 0.2)
}

// The six onboarding categories each have a real example school, six
// different ones.
func TestBundledCatalogueHasAnExampleForEveryCategory(t *testing.T) {
	schools, err := bundled.Schools()
	require.NoError(t, err)
	cats := match.Categories(match.NewCatalog(schools), "https://images.example")
	require.Len(t, cats, 6)
	seen := map[string]bool{}
	for _, c := range cats {
		require.NotNil(t, c.Example, "category %s has no example school", c.ID)
		assert.Greater(t, c.Members, 10, "category %s", c.ID)
		assert.False(t, seen[c.Example.ID], "category %s repeats an example", c.ID)
		seen[c.Example.ID] = true
		t.Logf("%-20s %4d members, example %s (%s)", c.ID, c.Members, c.Example.Name, c.Example.State)
	}
}

// Encoding what was decoded gives the committed bytes: the file is in the
// encoder's canonical form and reads back without loss.
func TestBundledCatalogueRoundTrips(t *testing.T) {
	schools, err := bundled.Schools()
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, bundled.Encode(&buf, schools))
	committed, err := os.ReadFile(bundled.File)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(committed, buf.Bytes()), "re-encoding changes the file")
	again, err := bundled.Decode(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, schools, again)
}

func TestDecodeRefusesABrokenFile(t *testing.T) {
	encode := func(schools ...domain.School) []byte {
		var buf bytes.Buffer
		require.NoError(t, bundled.Encode(&buf, schools))
		return buf.Bytes()
	}
	unit := int32(100654)
	good := domain.School{UnitID: &unit, Name: "Alabama A & M University", State: "AL"}
	got, err := bundled.Decode(bytes.NewReader(encode(good)))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, domain.RegionSouth, got[0].Region)

	_, err = bundled.Decode(strings.NewReader("unitid,name\n1,x\n"))
	assert.ErrorContains(t, err, "bundled catalogue")

	bad := good
	bad.State = "PR"
	_, err = bundled.Decode(bytes.NewReader(encode(bad)))
	assert.ErrorContains(t, err, `state "PR"`)

	_, err = bundled.Decode(bytes.NewReader(encode(good, good)))
	assert.ErrorContains(t, err, "repeated")

	assert.ErrorContains(t, bundled.Encode(&bytes.Buffer{}, []domain.School{{Name: "no unitid"}}), "no UNITID")
}

// writeSources writes small source files under the names of Steps: a
// Scorecard API file, a processed 2026-style pull and an IPEDS admissions
// file, overlapping by UNITID.
func writeSources(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		bundled.Steps[0].File: "id\tschool.name\tschool.city\tschool.state\tschool.operating\tadmissions.admission_rate.overall\t" +
			"admissions.sat_scores.25th_percentile.critical_reading\tadmissions.sat_scores.25th_percentile.math\t" +
			"admissions.sat_scores.75th_percentile.critical_reading\tadmissions.sat_scores.75th_percentile.math\tstudent.size\ttype\n" +
			"100001\tOld College\tOldtown\tOH\t1\t0.5\t500\t500\t600\t600\t4000\tpublic\n" +
			"100002\tClosed College\tGone\tOH\t0\t\t\t\t\t\t\tpublic\n",
		bundled.Steps[1].File: ",id,school_name,city,state,admit_rate,control,locale\n" +
			"0,100001,Old College,Oldtown,OH,0.4,1,21.0\n" +
			"1,100003,New College,Newtown,TX,0.3,2,11.0\n",
		bundled.Steps[2].File: "UNITID,APPLCN,ADMSSN,SATVR25,SATVR75,SATMT25,SATMT75\n" +
			"100001,1000,450,550,650,560,660\n" +
			"100003,1000,200,600,700,610,710\n" +
			"100009,1000,100,700,800,700,800\n",
	}
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	return dir
}

func TestBuildMergesTheStepsAsTheImporterDoes(t *testing.T) {
	dir := writeSources(t)
	_, _, err := bundled.Build(dir, true)
	require.ErrorIs(t, err, bundled.ErrInputChanged, "files other than the documented ones are refused")

	schools, reports, err := bundled.Build(dir, false)
	require.NoError(t, err)
	require.Len(t, reports, len(bundled.Steps))
	assert.Equal(t, 1, reports[0].Added)
	assert.Equal(t, 1, reports[0].Read.Skipped[catalog.SkipNotOperating])
	assert.Equal(t, []int{1, 1}, []int{reports[1].Added, reports[1].Merged})
	assert.Equal(t, []int{0, 2, 1}, []int{reports[2].Added, reports[2].Merged, reports[2].NotLoaded},
		"the admissions file only updates loaded schools")
	assert.Equal(t, 2, reports[3].Merged)

	require.Len(t, schools, 2)
	old, nw := schools[0], schools[1]
	assert.Equal(t, "Old College", old.Name)
	assert.Equal(t, 0.4, *old.AdmissionRate, "the 2026 pull's rate wins over fall 2022's")
	assert.Equal(t, int16(550+560), *old.SAT25, "the admissions file's SAT replaces the 2023 snapshot's")
	assert.Equal(t, int16(650+660), *old.SAT75)
	assert.Equal(t, int32(4000), *old.Size, "a value later files lack is kept")
	assert.Equal(t, int16(21), *old.Locale)
	assert.Equal(t, domain.ControlPublic, old.Control)

	assert.Equal(t, "New College", nw.Name)
	assert.Equal(t, catalog.SchoolID(100003), nw.ID)
	assert.Equal(t, 0.3, *nw.AdmissionRate)
	assert.Equal(t, int16(600+610), *nw.SAT25, "the admissions file reaches the 2026 pull's schools")
	assert.Equal(t, domain.ControlNonprofit, nw.Control)

	var buf bytes.Buffer
	require.NoError(t, bundled.Encode(&buf, schools))
	back, err := bundled.Decode(&buf)
	require.NoError(t, err)
	assert.Equal(t, schools, back)
}

// With the public files at hand (../shared/data beside the repository, or
// BUNDLED_DATA_DIR), the committed file is exactly what they give.
func TestCommittedCatalogueIsWhatTheSourcesGive(t *testing.T) {
	dir := os.Getenv("BUNDLED_DATA_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "..", "shared", "data")
	}
	if _, err := os.Stat(filepath.Join(dir, bundled.Steps[0].File)); err != nil {
		t.Skipf("the source files are not in %s (set BUNDLED_DATA_DIR); the committed file is checked by the other tests", dir)
	}
	built, _, err := bundled.Build(dir, true)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, bundled.Encode(&buf, built))
	committed, err := os.ReadFile(bundled.File)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(committed, buf.Bytes()), "run make catalogue")
}
