package testutil

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/metrics"
)

// DocMetric is one row of the table in docs/metrics.md.
type DocMetric struct {
	Name     string
	Type     string   // counter, gauge, histogram
	Labels   []string // sorted
	Binaries []string // api, worker
}

// RepoRoot is the directory of go.mod, found from the test's working
// directory up.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above the test's directory")
		dir = parent
	}
}

// MetricsDoc reads the table of docs/metrics.md: the rows whose first
// cell is a metric name in backquotes, columns name, type, labels, binary.
func MetricsDoc(t testing.TB) map[string]DocMetric {
	t.Helper()
	f, err := os.Open(filepath.Join(RepoRoot(t), "docs", "metrics.md"))
	require.NoError(t, err)
	defer f.Close()
	out := map[string]DocMetric{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "| `matching_") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		require.GreaterOrEqual(t, len(cells), 4, "docs/metrics.md: %s", line)
		m := DocMetric{
			Name: strings.Trim(strings.TrimSpace(cells[0]), "`"),
			Type: strings.TrimSpace(cells[1]),
		}
		for l := range strings.SplitSeq(cells[2], ",") {
			if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" && l != "none" {
				m.Labels = append(m.Labels, l)
			}
		}
		slices.Sort(m.Labels)
		for b := range strings.SplitSeq(cells[3], ",") {
			m.Binaries = append(m.Binaries, strings.TrimSpace(b))
		}
		_, dup := out[m.Name]
		require.False(t, dup, "docs/metrics.md lists %s twice", m.Name)
		out[m.Name] = m
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out, "docs/metrics.md has no table of metrics")
	return out
}

// CheckMetricsDoc requires docs/metrics.md to list exactly the matching_*
// families of binary's registry, each with its type and labels.
func CheckMetricsDoc(t testing.TB, binary string, reg *metrics.Registry) {
	t.Helper()
	fams, err := reg.Families()
	require.NoError(t, err)
	doc := MetricsDoc(t)
	registered := map[string]bool{}
	for _, f := range fams {
		if !strings.HasPrefix(f.Name, "matching_") {
			continue
		}
		registered[f.Name] = true
		d, ok := doc[f.Name]
		if !assert.True(t, ok, "docs/metrics.md does not list %s (%s %v): %s", f.Name, f.Type, f.Labels, f.Help) {
			continue
		}
		assert.Equal(t, f.Type, d.Type, "docs/metrics.md: type of %s", f.Name)
		assert.Equal(t, f.Labels, d.Labels, "docs/metrics.md: labels of %s", f.Name)
		assert.Contains(t, d.Binaries, binary, "docs/metrics.md: %s is exported by %s", f.Name, binary)
	}
	for name, d := range doc {
		if slices.Contains(d.Binaries, binary) {
			assert.True(t, registered[name], "docs/metrics.md says %s exports %s; it does not", binary, name)
		}
	}
}
