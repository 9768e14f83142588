package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/catalog/bundled"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// runSeedCmd runs matchctl with args against databaseURL and returns the
// exit code and both outputs.
func runSeedCmd(t *testing.T, databaseURL string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return databaseURL
		}
		return ""
	}
	var out, errOut bytes.Buffer
	code := run(ctx, args, getenv, &out, &errOut)
	return code, out.String(), errOut.String()
}

// Without flags, seed loads the bundled real schools: the values of the
// extract, under the importer's ids, once.
func TestSeedLoadsTheBundledRealSchoolsOnce(t *testing.T) {
	ctx := context.Background()
	dbURL, st := seedTestDB(t)

	code, out, errOut := runSeedCmd(t, dbURL, "seed")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Regexp(t, `^seeded 3081 real schools in 50 states and DC \(College Scorecard extract: .*; 3081 new, 0 updated, 0 unchanged\) in \d+\.\ds\n$`, out)
	t.Logf("%s", out)

	want, err := bundled.Schools()
	require.NoError(t, err)
	loaded, err := st.ActiveSchools(ctx)
	require.NoError(t, err)
	require.Len(t, loaded, len(want))
	byID := make(map[string]domain.School, len(loaded))
	for _, s := range loaded {
		s.UpdatedAt = time.Time{}
		if len(s.ProgramShares) == 0 {
			s.ProgramShares = nil // the store reads "no shares" back as an empty map
		}
		byID[s.ID] = s
	}
	for _, w := range want {
		got, ok := byID[catalog.SchoolID(*w.UnitID)]
		if !assert.True(t, ok, "%s (UNITID %d) missing", w.Name, *w.UnitID) {
			continue
		}
		if !assert.Equal(t, w, got, "stored as shipped") {
			break
		}
	}
	version, err := st.CatalogVersion(ctx)
	require.NoError(t, err)

	code, out, errOut = runSeedCmd(t, dbURL, "seed")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Equal(t, "catalogue already has 3081 schools; nothing to do\n", out)

	code, out, errOut = runSeedCmd(t, dbURL, "seed", "--force")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "0 new, 0 updated, 3081 unchanged")
	again, err := st.CatalogVersion(ctx)
	require.NoError(t, err)
	assert.Equal(t, version, again, "loading the same extract again changes no row")

	// Generated schools are refused beside real ones.
	code, _, errOut = runSeedCmd(t, dbURL, "seed", "--synthetic", "--force", "--count", "100")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "3081 imported schools")
}

// An import of a Scorecard file after the seed merges into the seeded
// schools (same ids), keeping what the file lacks.
func TestImportAfterSeedMergesIntoTheBundledSchools(t *testing.T) {
	ctx := context.Background()
	dbURL, st := seedTestDB(t)

	code, _, errOut := runSeedCmd(t, dbURL, "seed")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	mitID := catalog.SchoolID(166683)
	before, err := st.School(ctx, mitID)
	require.NoError(t, err)
	require.Equal(t, "Massachusetts Institute of Technology", before.Name)
	require.NotNil(t, before.SAT25)

	file := filepath.Join(t.TempDir(), "newer.csv")
	require.NoError(t, os.WriteFile(file, []byte("UNITID,INSTNM,CITY,STABBR,ADM_RATE\n"+
		"166683,Massachusetts Institute of Technology,Cambridge,MA,0.045\n"), 0o644))
	code, out, errOut := runSeedCmd(t, dbURL, "import-scorecard", file)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "loaded:          1 (inserted 0, updated 1, unchanged 0)")

	n, err := st.CountSchools(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3081, n)
	after, err := st.School(ctx, mitID)
	require.NoError(t, err)
	assert.InDelta(t, 0.045, *after.AdmissionRate, 1e-6, "the file's value wins")
	assert.Equal(t, before.SAT25, after.SAT25, "what the file lacks is kept")
	assert.Equal(t, before.ProgramShares, after.ProgramShares)
}

// Loading the real schools over a generated catalogue retires it; without
// --force an existing catalogue is left alone.
func TestSeedRealOverGeneratedRetiresThem(t *testing.T) {
	dbURL := testutil.NewDBURL(t)
	code, _, errOut := runSeedCmd(t, dbURL, "seed", "--synthetic", "--count", "120")
	require.Equal(t, 0, code, "stderr: %s", errOut)

	code, out, errOut := runSeedCmd(t, dbURL, "seed")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Equal(t, "catalogue already has 120 schools; nothing to do\n"+
		"they are all generated: matchctl seed --force replaces them with the bundled real schools\n", out)

	code, out, errOut = runSeedCmd(t, dbURL, "seed", "--force")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "retired 120 generated schools\n")
	assert.Contains(t, out, "seeded 3081 real schools")

	pool, err := store.Open(context.Background(), dbURL)
	require.NoError(t, err)
	defer pool.Close()
	bySource, err := store.New(pool).ActiveSchoolsBySource(context.Background())
	require.NoError(t, err)
	assert.Equal(t, map[string]int{catalog.SourceScorecard: 3081}, bySource)
}

func TestSeedSyntheticFillsAnEmptyCatalogueOnce(t *testing.T) {
	ctx := context.Background()
	dbURL, st := seedTestDB(t)

	code, out, errOut := runSeedCmd(t, dbURL, "seed", "--synthetic")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Regexp(t, `^seeded 6500 generated schools in 50 states and DC \(seed 1: 6500 new, 0 updated, 0 unchanged\) in \d+\.\ds\n$`, out)
	t.Logf("%s", out)

	n, err := st.CountSchools(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 6000)

	rows, err := st.Pool().Query(ctx, `SELECT state, count(*) FROM schools WHERE active AND source = 'seed' GROUP BY state`)
	require.NoError(t, err)
	perState := map[string]int{}
	for rows.Next() {
		var state string
		var c int
		require.NoError(t, rows.Scan(&state, &c))
		perState[state] = c
	}
	require.NoError(t, rows.Err())
	require.Len(t, perState, len(domain.States))
	for _, s := range domain.States {
		assert.GreaterOrEqual(t, perState[s.Code], 5, "schools in %s", s.Code)
	}

	version, err := st.CatalogVersion(ctx)
	require.NoError(t, err)

	// A second run sees the catalogue and does nothing.
	code, out, errOut = runSeedCmd(t, dbURL, "seed", "--synthetic")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Equal(t, "catalogue already has 6500 schools; nothing to do\n", out)
	again, err := st.CatalogVersion(ctx)
	require.NoError(t, err)
	assert.Equal(t, version, again, "a no-op run changes no row")

	// --force with the same seed upserts everything and changes nothing.
	code, out, errOut = runSeedCmd(t, dbURL, "seed", "--synthetic", "--force")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "(seed 1: 0 new, 0 updated, 6500 unchanged)")
	again, err = st.CatalogVersion(ctx)
	require.NoError(t, err)
	assert.Equal(t, version, again, "re-seeding with the same seed is idempotent")

	// The stored catalogue reads back exactly as generated.
	loaded, err := st.ActiveSchools(ctx)
	require.NoError(t, err)
	require.Len(t, loaded, catalog.DefaultSeedCount)
	byID := make(map[string]domain.School, len(loaded))
	for _, s := range loaded {
		assert.False(t, s.UpdatedAt.IsZero())
		s.UpdatedAt = time.Time{}
		byID[s.ID] = s
	}
	for _, want := range catalog.Generate(catalog.DefaultSeedCount, 1) {
		got, ok := byID[want.ID]
		if !assert.True(t, ok, "school %s (%s) missing", want.ID, want.Name) {
			continue
		}
		if !assert.Equal(t, want, got) {
			break
		}
	}
}

func TestSeedForceWithAnotherSeedUpdates(t *testing.T) {
	dbURL := testutil.NewDBURL(t)

	code, _, errOut := runSeedCmd(t, dbURL, "seed", "--synthetic", "--count", "300", "--seed", "5")
	require.Equal(t, 0, code, "stderr: %s", errOut)

	code, out, errOut := runSeedCmd(t, dbURL, "seed", "--synthetic", "--count", "300", "--seed", "6", "--force")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "seeded 300 generated schools in 50 states and DC (seed 6: 0 new, 300 updated, 0 unchanged)")
}

func TestSeedUsage(t *testing.T) {
	for _, args := range [][]string{
		{"seed", "--synthetic", "--count", "0"},
		{"seed", "--synthetic", "--count", "x"},
		{"seed", "--synthetic", "--seed", "-1"},
		{"seed", "--count", "300"},
		{"seed", "--seed", "2"},
		{"seed", "extra"},
		{"seed", "--nope"},
	} {
		// The database is never reached; the URL is only parsed.
		code, out, errOut := runSeedCmd(t, "postgres://nobody@127.0.0.1:1/none?sslmode=disable", args...)
		assert.Equal(t, 2, code, "%v: out %q err %q", args, out, errOut)
		assert.Contains(t, errOut, "usage: matchctl seed", "%v", args)
		if args[1] != "--synthetic" && (args[1] == "--count" || args[1] == "--seed") {
			assert.Contains(t, errOut, "needs --synthetic", "%v", args)
		}
	}
}

func TestSeedForceSmallerCatalogueRetiresTheRest(t *testing.T) {
	dbURL := testutil.NewDBURL(t)
	code, _, errOut := runSeedCmd(t, dbURL, "seed", "--synthetic", "--count", "300")
	require.Equal(t, 0, code, "stderr: %s", errOut)

	code, out, errOut := runSeedCmd(t, dbURL, "seed", "--synthetic", "--count", "200", "--force")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "retired 100 generated schools")

	pool, err := store.Open(context.Background(), dbURL)
	require.NoError(t, err)
	defer pool.Close()
	n, err := store.New(pool).CountSchools(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 200, n)
}

func TestSeedForceRefusesToMixWithImportedSchools(t *testing.T) {
	dbURL := testutil.NewDBURL(t)
	pool, err := store.Open(context.Background(), dbURL)
	require.NoError(t, err)
	defer pool.Close()
	unit := int32(100654)
	_, err = store.New(pool).UpsertSchools(context.Background(), []domain.School{{
		ID: "5f0e8d4c-2c1b-5a7e-9f8d-000000100654", UnitID: &unit, Name: "Alabama A & M University",
		State: "AL", Region: domain.RegionSouth, Source: "scorecard", Active: true,
	}})
	require.NoError(t, err)

	code, _, errOut := runSeedCmd(t, dbURL, "seed", "--synthetic", "--force", "--count", "300")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "1 imported schools")
	n, err := store.New(pool).CountSchools(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, n, "nothing generated was added")
}

// seedTestDB is a fresh database's URL, for the command, and a store on it,
// for the test's checks.
func seedTestDB(t *testing.T) (string, *store.Store) {
	t.Helper()
	dbURL := testutil.NewDBURL(t)
	pool, err := store.Open(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return dbURL, store.New(pool)
}
