package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/testutil"
)

func runSimulateCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, func(string) string { return "" }, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestSimulatePrintsTheTableAndWritesTheSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plots", "curves.svg")
	code, out, errOut := runSimulateCmd(t, "simulate", "--students", "3", "--swipes", "12", "--schools", "400", "--seed", "2", "--svg", path)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "3 students, 12 swipes each, 400 schools, seed 2")
	assert.Contains(t, out, "| swipes | phase | learner | oracle served | learner ranking | oracle | popularity | random |")
	assert.Contains(t, out, "| 10 | discovery |")
	assert.Contains(t, out, "wrote "+path)

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc struct {
		XMLName xml.Name
		Lines   []struct{} `xml:"polyline"`
	}
	require.NoError(t, xml.Unmarshal(b, &doc), "the SVG is well-formed XML")
	assert.Equal(t, "svg", doc.XMLName.Local)
	assert.GreaterOrEqual(t, len(doc.Lines), 6+5+2, "one line per policy in each panel")
}

func TestSimulateRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"simulate", "--students", "0"},
		{"simulate", "--swipes", "-1"},
		{"simulate", "--schools", "10"},
		{"simulate", "--page", "50"},
		{"simulate", "--seed", "0"},
		{"simulate", "extra"},
		{"simulate", "--nope"},
	} {
		code, _, errOut := runSimulateCmd(t, args...)
		assert.Equal(t, 2, code, "%v", args)
		assert.Contains(t, errOut, "usage: matchctl simulate", "%v", args)
	}
}

func TestSimulateAPIChecksItsArguments(t *testing.T) {
	for _, args := range [][]string{
		{"simulate", "--api", "127.0.0.1:8080"},
		{"simulate", "--api", "ftp://x"},
		{"simulate", "--api", "http://127.0.0.1:1", "--schools", "500"},
		{"simulate", "--api", "http://127.0.0.1:1", "--svg", "x.svg"},
		{"simulate", "--api", "http://127.0.0.1:1", "--cold-start"},
		{"simulate", "--api", "http://127.0.0.1:1", "--students", "0"},
		{"simulate", "--api", "http://127.0.0.1:1", "extra"},
		{"simulate", "--api", "http://127.0.0.1:1", "--variant", "1"},
		{"simulate", "--api", "http://127.0.0.1:1", "--families", "--no-feedback"},
		{"simulate", "--api", "http://127.0.0.1:1", "--families", "--variant", "3"},
		{"simulate", "--api", "http://127.0.0.1:1", "--families", "--page", "30"},
	} {
		code, _, errOut := runSimulateCmd(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
		assert.Contains(t, errOut, "usage: matchctl simulate", "%v", args)
	}
	code, _, errOut := runSimulateCmd(t, "simulate", "--api", "http://127.0.0.1:1")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "AUTH_HS256_SECRET")
}

// Against no service, the run stops at its first call and says why.
func TestSimulateAPIReportsAnUnreachableService(t *testing.T) {
	dbURL := testutil.NewDBURL(t)
	code, _, errOut := runSeedCmd(t, dbURL, "seed", "--synthetic", "--count", "200")
	require.Equal(t, 0, code, errOut)
	env := map[string]string{"DATABASE_URL": dbURL, "AUTH_HS256_SECRET": "simulate-test-secret-simulate-test-secret"}
	var out, errBuf bytes.Buffer
	code = run(context.Background(), []string{"simulate", "--api", "http://127.0.0.1:1", "--students", "2", "--swipes", "3"},
		func(k string) string { return env[k] }, &out, &errBuf)
	assert.Equal(t, 1, code)
	assert.Contains(t, errBuf.String(), "onboarding")
	assert.Contains(t, errBuf.String(), "connection refused")
	assert.Contains(t, out.String(), "0 students, 0 swipes through the API")
}

func TestSimulateFamiliesPrintsEveryPolicyByFamily(t *testing.T) {
	path := filepath.Join(t.TempDir(), "families.svg")
	code, out, errOut := runSimulateCmd(t, "simulate", "--families", "--students", "5", "--swipes", "10", "--seed", "3", "--svg", path)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "families mode, variant 0: 5 students (1 per family), 10 swipes each, 3081 schools, seed 3, client pages of 10, steep gains")
	assert.Contains(t, out, "| swipes | learner | weights only | ceiling | best 8 weights | logistic | popularity | random |")
	for _, f := range []string{"budget", "prestige", "near", "size and setting", "mixed", "all"} {
		assert.Contains(t, out, "| "+f+" |")
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc struct {
		XMLName xml.Name
		Lines   []struct{} `xml:"polyline"`
	}
	require.NoError(t, xml.Unmarshal(b, &doc), "the SVG is well-formed XML")
	assert.Equal(t, 7+2*5, len(doc.Lines), "every policy, then every family twice")
	code, out, errOut = runSimulateCmd(t, "simulate", "--families", "--students", "5", "--swipes", "10", "--seed", "3", "--gain", "percentile")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "seed 3, client pages of 10, percentile gains")
	for _, args := range [][]string{
		{"simulate", "--families", "--variant", "3"},
		{"simulate", "--families", "--schools", "500"},
		{"simulate", "--families", "--cold-start"},
		{"simulate", "--families", "--weights-only"},
		{"simulate", "--families", "extra"},
		{"simulate", "--families", "--gain", "linear"},
		{"simulate", "--gain", "percentile"},
		{"simulate", "--api", "http://127.0.0.1:1", "--gain", "percentile"},
	} {
		code, _, errOut := runSimulateCmd(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, errOut)
		assert.Contains(t, errOut, "usage: matchctl simulate", "%v", args)
	}
}
