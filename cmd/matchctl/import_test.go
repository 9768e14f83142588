package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// runImportCLI runs matchctl against dbURL and returns its exit code and output.
func runImportCLI(t *testing.T, dbURL string, args ...string) (int, string, string) {
	t.Helper()
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return dbURL
		}
		return ""
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, getenv, &out, &errOut)
	return code, out.String(), errOut.String()
}

func mustRunImport(t *testing.T, dbURL string, args ...string) string {
	t.Helper()
	code, out, errOut := runImportCLI(t, dbURL, args...)
	require.Equal(t, 0, code, "matchctl %v failed:\nstdout:\n%s\nstderr:\n%s", args, out, errOut)
	return out
}

func importFixture(name string) string { return filepath.Join("testdata", name) }

type importSchoolVersion struct {
	ID        string
	ChangeSeq int64
	UpdatedAt time.Time
	Active    bool
}

func importSchoolVersions(t *testing.T, pool *pgxpool.Pool) []importSchoolVersion {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT id::text, change_seq, updated_at, active FROM schools ORDER BY id`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[importSchoolVersion])
	require.NoError(t, err)
	return out
}

func importedSchool(t *testing.T, st *store.Store, unitID int32) domain.School {
	t.Helper()
	s, err := st.School(context.Background(), catalog.SchoolID(unitID))
	require.NoError(t, err, "school %d", unitID)
	return s
}

func importPtr[T any](v T) *T { return &v }

func TestImportScorecard(t *testing.T) {
	ctx := context.Background()
	dbURL := testutil.NewDBURL(t)
	pool, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	st := store.New(pool)

	// A generated catalogue is in place before real data arrives.
	seedID := uuid.NewString()
	_, err = st.UpsertSchools(ctx, []domain.School{{
		ID: seedID, Name: "Generated College", City: "Springfield", State: "IL",
		Region: domain.RegionMidwest, Active: true, Source: "seed",
	}})
	require.NoError(t, err)

	// 1. The first import loads every operating school.
	out := mustRunImport(t, dbURL, "import-scorecard", importFixture("scorecard-api.tsv"))
	assert.Contains(t, out, "tab-separated, api column names")
	assert.Contains(t, out, "rows read:       5\n")
	assert.Contains(t, out, "loaded:          4 (inserted 4, updated 0, unchanged 0)")
	assert.Regexp(t, `not operating\s+1\n`, out)
	assert.Contains(t, out, "generated (seed) schools deactivated: 1\n")

	seed, err := st.School(ctx, seedID)
	require.NoError(t, err)
	assert.False(t, seed.Active, "generated schools are not mixed with real ones")
	n, err := st.CountSchools(ctx)
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	_, err = st.School(ctx, catalog.SchoolID(990005))
	assert.Error(t, err, "a closed school is not loaded")

	granite := importedSchool(t, st, 990001)
	assert.Equal(t, "Granite Peak University", granite.Name)
	assert.Equal(t, "NH", granite.State)
	assert.Equal(t, domain.RegionNortheast, granite.Region)
	assert.Equal(t, domain.ControlPublic, granite.Control)
	assert.Equal(t, importPtr(int32(990001)), granite.UnitID)
	assert.Equal(t, importPtr(0.8012), granite.AdmissionRate)
	assert.Equal(t, importPtr(int16(1070)), granite.SAT25)
	assert.Equal(t, importPtr(int16(1280)), granite.SAT75)
	assert.Equal(t, importPtr(int32(23000)), granite.NetPriceByBand[domain.IncomeBand75to110k])
	assert.Equal(t, importPtr(int32(52000)), granite.Earnings10yr)
	assert.Equal(t, importPtr(0.5312), granite.LoanRate)
	assert.Equal(t, map[domain.Major]float64{"computer": 0.0612, "biological": 0.0921}, granite.ProgramShares)
	assert.Nil(t, granite.Locale)
	assert.Equal(t, catalog.SourceScorecard, granite.Source)
	assert.True(t, granite.Active)

	// 2. Importing the same file again changes nothing.
	before := importSchoolVersions(t, pool)
	out = mustRunImport(t, dbURL, "import-scorecard", importFixture("scorecard-api.tsv"))
	assert.Contains(t, out, "loaded:          4 (inserted 0, updated 0, unchanged 4)")
	assert.Contains(t, out, "generated (seed) schools deactivated: 0\n")
	assert.Equal(t, before, importSchoolVersions(t, pool), "same ids, change_seq and updated_at")

	// 3. A file with fewer columns updates what it has and keeps the rest.
	out = mustRunImport(t, dbURL, "import-scorecard", importFixture("scorecard-extract.csv"))
	assert.Contains(t, out, "comma-separated, extract column names")
	assert.Contains(t, out, "loaded:          4 (inserted 1, updated 2, unchanged 1)")
	granite = importedSchool(t, st, 990001)
	assert.Equal(t, importPtr(0.7544), granite.AdmissionRate, "newer value wins")
	assert.Equal(t, importPtr(int16(32)), granite.Locale, "new field added")
	assert.Equal(t, importPtr(int32(20500)), granite.AvgNetPrice)
	assert.Equal(t, importPtr(int16(1070)), granite.SAT25, "kept: the extract has no SAT")
	assert.Equal(t, importPtr(int16(1280)), granite.SAT75)
	assert.Equal(t, importPtr(int32(52000)), granite.Earnings10yr, "kept: the extract's earnings are not read")
	assert.Equal(t, importPtr(0.5312), granite.LoanRate, "kept")
	assert.Equal(t, importPtr(int32(23000)), granite.NetPriceByBand[domain.IncomeBand75to110k], "kept")
	assert.Equal(t, map[domain.Major]float64{"computer": 0.0612, "biological": 0.0921}, granite.ProgramShares, "kept")
	assert.Equal(t, "www.granitepeak.example.edu/", granite.URL, "kept")
	copper := importedSchool(t, st, 990003)
	assert.Equal(t, importPtr(0.2749), copper.GradRate)
	assert.Equal(t, "Sandhill State University", importedSchool(t, st, 990006).Name)

	after := importSchoolVersions(t, pool)
	out = mustRunImport(t, dbURL, "import-scorecard", importFixture("scorecard-extract.csv"))
	assert.Contains(t, out, "loaded:          4 (inserted 0, updated 0, unchanged 4)")
	assert.Equal(t, after, importSchoolVersions(t, pool), "merged values are stable on re-import")

	// 4. --prune deactivates scorecard schools missing from the file; their swipes stay.
	studentID := uuid.NewString()
	bayou := catalog.SchoolID(990004)
	_, err = pool.Exec(ctx, `INSERT INTO students (id) VALUES ($1)`, studentID)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO swipes (student_id, school_id, direction, counted) VALUES ($1, $2, 'right', true)`,
		studentID, bayou)
	require.NoError(t, err)

	out = mustRunImport(t, dbURL, "import-scorecard", importFixture("scorecard-extract.csv"), "--prune")
	assert.Contains(t, out, "pruned (not in file, deactivated):    1\n")
	assert.False(t, importedSchool(t, st, 990004).Active)
	for _, id := range []int32{990001, 990002, 990003, 990006} {
		assert.True(t, importedSchool(t, st, id).Active, "school %d", id)
	}
	var swipes int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM swipes WHERE school_id = $1`, bayou).Scan(&swipes))
	assert.Equal(t, 1, swipes)
	seed, err = st.School(ctx, seedID)
	require.NoError(t, err)
	assert.False(t, seed.Active, "pruning scorecard schools leaves generated ones alone")

	// A school that comes back in a later file is served again.
	out = mustRunImport(t, dbURL, "import-scorecard", "--prune", importFixture("scorecard-api.tsv"))
	assert.True(t, importedSchool(t, st, 990004).Active)
	assert.False(t, importedSchool(t, st, 990006).Active, "not in the API importFixture")
	assert.Contains(t, out, "pruned (not in file, deactivated):    1\n")
}

func TestImportScorecardProgressAndUsage(t *testing.T) {
	dbURL := testutil.NewDBURL(t)

	code, _, errOut := runImportCLI(t, dbURL, "import-scorecard", importFixture("scorecard-api.tsv"))
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "import-scorecard: 5 rows read, 4 loaded")

	for name, args := range map[string][]string{
		"no file":        {"import-scorecard"},
		"unknown flag":   {"import-scorecard", "--purge", importFixture("scorecard-api.tsv")},
		"prune no names": {"import-scorecard", "--prune", filepath.Join("..", "..", "internal", "catalog", "testdata", "adm-supplement.csv")},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, errOut := runImportCLI(t, dbURL, args...)
			assert.Equal(t, 2, code, errOut)
			assert.Contains(t, errOut, "usage: matchctl import-scorecard")
		})
	}
	code, _, errOut = runImportCLI(t, dbURL, "import-scorecard", importFixture("missing.csv"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "missing.csv")
	code, _, errOut = runImportCLI(t, dbURL, "import-scorecard", importFixture("zips.csv"))
	assert.Equal(t, 1, code, "a file that is not a Scorecard file")
	assert.Contains(t, errOut, "unrecognised header")

	// A SUPPLEMENT that cannot be read stops the import before anything is stored.
	empty := testutil.NewDBURL(t)
	code, _, errOut = runImportCLI(t, empty, "import-scorecard", importFixture("scorecard-api.tsv"), importFixture("missing.csv"))
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "missing.csv")
	code, _, errOut = runImportCLI(t, empty, "import-scorecard", importFixture("scorecard-api.tsv"), importFixture("zips.csv"))
	assert.Equal(t, 1, code, "a supplement that is not a Scorecard file")
	assert.Contains(t, errOut, "zips.csv: unrecognised header")
	pool, err := store.Open(context.Background(), empty)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	n, err := store.New(pool).CountSchools(context.Background())
	require.NoError(t, err)
	assert.Zero(t, n)
}

// catalogueFixture names a fixture of the catalog package's tests.
func catalogueFixture(name string) string {
	return filepath.Join("..", "..", "internal", "catalog", "testdata", name)
}

// import-scorecard FILE SUPPLEMENT...: FILE's schools, each with the values
// FILE lacks or leaves empty taken from the supplements (the first
// supplement that has one wins), matched by UNITID or by name, city and
// state; no supplement adds a school, and a value FILE has is kept.
func TestImportScorecardWithSupplement(t *testing.T) {
	ctx := context.Background()
	locales := func(dbURL string) map[int32]*int16 {
		pool, err := store.Open(ctx, dbURL)
		require.NoError(t, err)
		defer pool.Close()
		rows, err := pool.Query(ctx, `SELECT unitid, locale FROM schools ORDER BY unitid`)
		require.NoError(t, err)
		out := map[int32]*int16{}
		var unitID int32
		var locale *int16
		_, err = pgx.ForEachRow(rows, []any{&unitID, &locale}, func() error {
			out[unitID] = locale
			return nil
		})
		require.NoError(t, err)
		return out
	}

	// Without a supplement the file's schools have no campus setting.
	plain := testutil.NewDBURL(t)
	mustRunImport(t, plain, "import-scorecard", catalogueFixture("supplement-main.tsv"))
	assert.Equal(t, map[int32]*int16{910001: nil, 910002: nil, 910003: nil}, locales(plain))

	// A second supplement without school names, written here: its admission
	// rates fill only what FILE and the first supplement leave empty.
	adm := filepath.Join(t.TempDir(), "adm.csv")
	require.NoError(t, os.WriteFile(adm, []byte("UNITID,APPLCN,ADMSSN\n910001,100,10\n910002,100,10\n910003,100,50\n"), 0o600))

	dbURL := testutil.NewDBURL(t)
	args := []string{"import-scorecard", catalogueFixture("supplement-main.tsv"), catalogueFixture("supplement-extra.csv"), adm}
	out := mustRunImport(t, dbURL, args...)
	assert.Contains(t, out, "loaded:          3 (inserted 3, updated 0, unchanged 0)")
	assert.Contains(t, out, "supplement "+catalogueFixture("supplement-extra.csv")+" (comma-separated, extract column names)\n")
	assert.Contains(t, out, "    matched:       2 (by UNITID 1, by name, city and state 1)\n")
	assert.Contains(t, out, "    not in FILE:   1 (not added)\n")
	assert.Regexp(t, `\n      locale\s+2\n`, out)
	assert.Contains(t, out, "supplement "+adm+" (comma-separated, bulk column names)\n")
	assert.Contains(t, out, "    matched:       3 (by UNITID 3, by name, city and state 0)\n")
	assert.Regexp(t, `\n      admission_rate\s+1\n`, out)

	assert.Equal(t, map[int32]*int16{910001: importPtr(int16(21)), 910002: importPtr(int16(33)), 910003: nil}, locales(dbURL),
		"the supplement school FILE does not list (Canyon Ridge, 919006) is not added")

	pool, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	st := store.New(pool)
	harbor := importedSchool(t, st, 910001)
	assert.Equal(t, importPtr(0.62), harbor.AdmissionRate, "FILE's value is kept")
	assert.Equal(t, importPtr(int32(18000)), harbor.AvgNetPrice, "FILE's value is kept")
	assert.Equal(t, importPtr(0.31), harbor.PellRate, "filled")
	john := importedSchool(t, st, 910002)
	assert.Equal(t, "St. John's College of Music & Art", john.Name)
	assert.Equal(t, importPtr(0.8), john.AdmissionRate, "the first supplement with a value wins")
	assert.Equal(t, importPtr(43.0247), john.Lat)
	assert.Equal(t, importPtr(0.5), importedSchool(t, st, 910003).AdmissionRate, "filled by the second supplement")
	_, err = st.School(ctx, catalog.SchoolID(919006))
	assert.Error(t, err, "not added")
	_, err = st.School(ctx, catalog.SchoolID(919002))
	assert.Error(t, err, "a school matched by name is stored under FILE's UNITID only")

	// Again: nothing changes.
	before := importSchoolVersions(t, pool)
	out = mustRunImport(t, dbURL, args...)
	assert.Contains(t, out, "loaded:          3 (inserted 0, updated 0, unchanged 3)")
	assert.Equal(t, before, importSchoolVersions(t, pool))

	// --prune goes by FILE's schools alone.
	out = mustRunImport(t, dbURL, append(args, "--prune")...)
	assert.Contains(t, out, "pruned (not in file, deactivated):    0\n")
}

func TestImportSupplementUpdatesKnownSchoolsOnly(t *testing.T) {
	ctx := context.Background()
	dbURL := testutil.NewDBURL(t)
	mustRunImport(t, dbURL, "import-scorecard", filepath.Join("..", "..", "internal", "catalog", "testdata", "bulk.csv"))

	out := mustRunImport(t, dbURL, "import-scorecard", filepath.Join("..", "..", "internal", "catalog", "testdata", "adm-supplement.csv"))
	assert.Contains(t, out, "no school names")
	assert.Contains(t, out, "loaded:          3 (inserted 0, updated 1, unchanged 2)")

	pool, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	lake := importedSchool(t, store.New(pool), 900001)
	assert.Equal(t, "Lakeview State University", lake.Name, "names are kept")
	assert.Equal(t, importPtr(0.45), lake.AdmissionRate)
	assert.Equal(t, importPtr(int16(1070)), lake.SAT25)
	assert.Equal(t, importPtr(int32(55000)), lake.Earnings10yr, "kept")

	// A supplement row of a school no import has loaded is skipped, not invented.
	dbURL2 := testutil.NewDBURL(t)
	out = mustRunImport(t, dbURL2, "import-scorecard", filepath.Join("..", "..", "internal", "catalog", "testdata", "adm-supplement.csv"))
	assert.Contains(t, out, "loaded:          0 (inserted 0, updated 0, unchanged 0)")
	assert.Regexp(t, `not in catalogue \(file has no names\)\s+3\n`, out)
}

func TestImportZips(t *testing.T) {
	ctx := context.Background()
	dbURL := testutil.NewDBURL(t)
	pool, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	st := store.New(pool)

	out := mustRunImport(t, dbURL, "import-zips", importFixture("zips.csv"))
	assert.Contains(t, out, "rows read:  8\n")
	assert.Contains(t, out, "loaded:     4 ")
	assert.Contains(t, out, "skipped:    4\n")
	for _, reason := range []string{zipSkipBadZip, zipSkipState, zipSkipLatLon, zipSkipDuplicate} {
		assert.Regexp(t, reason+`\s+1\n`, out)
	}

	type zipRow struct {
		Zip      string
		Lat, Lon float64
		State    string
	}
	all := func() []zipRow {
		rows, err := pool.Query(ctx, `SELECT zip, lat, lon, state FROM zip_centroids ORDER BY zip`)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[zipRow])
		require.NoError(t, err)
		return out
	}
	first := all()
	assert.Equal(t, []zipRow{
		{"01002", 42.374917, -72.462096, "MA"},
		{"02138", 42.380, -71.135, "MA"},
		{"94305", 37.417, -122.171, "CA"},
		{"99546", 51.880, -176.630, "AK"},
	}, first, "zero-padded, first of a repeated ZIP wins")

	mustRunImport(t, dbURL, "import-zips", importFixture("zips.csv"))
	assert.Equal(t, first, all(), "re-import is idempotent")

	lat, lon, state, ok, err := st.ZipCentroid(ctx, "02138")
	require.NoError(t, err)
	require.True(t, ok)
	assert.InDelta(t, 42.380, lat, 1e-9)
	assert.InDelta(t, -71.135, lon, 1e-9)
	assert.Equal(t, "MA", state)
	_, _, _, ok, err = st.ZipCentroid(ctx, "00601")
	require.NoError(t, err)
	assert.False(t, ok, "territory ZIPs are not loaded")
}

func TestReadZipsHeader(t *testing.T) {
	_, _, err := readZips(strings.NewReader("zip,latitude,lon\n02138,42.3,-71.1\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "lat, state")

	zips, rep, err := readZips(strings.NewReader("State,Lon,Lat,ZIP\nma,-71.135,42.38,2138\nMA,-71.1,42.3,021380\n"))
	require.NoError(t, err)
	assert.Equal(t, []store.ZipCentroid{{Zip: "02138", Lat: 42.38, Lon: -71.135, State: "MA"}}, zips)
	assert.Equal(t, 2, rep.Read)
	assert.Equal(t, map[string]int{zipSkipBadZip: 1}, rep.Skipped)
}
