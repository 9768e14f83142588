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
