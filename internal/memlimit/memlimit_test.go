package memlimit_test

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/memlimit"
)

// fakeCgroups writes files (path relative to a new root -> content) and
// returns a Source over them.
func fakeCgroups(t *testing.T, self string, files map[string]string) memlimit.Source {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, "sys", name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	selfFile := filepath.Join(root, "self-cgroup")
	require.NoError(t, os.WriteFile(selfFile, []byte(self), 0o644))
	return memlimit.Source{Root: filepath.Join(root, "sys"), Self: selfFile}
}

const mib = 1 << 20

func TestLimit(t *testing.T) {
	cases := map[string]struct {
		self  string
		files map[string]string
		want  int64
	}{
		"v2 in a cgroup namespace": {"0::/\n", map[string]string{"memory.max": "536870912\n"}, 512 * mib},
		"v2 no limit":              {"0::/\n", map[string]string{"memory.max": "max\n"}, 0},
		"v2 own cgroup": {"0::/kubepods/pod1/ctr\n", map[string]string{
			"memory.max": "max\n", "kubepods/pod1/ctr/memory.max": "268435456\n"}, 256 * mib},
		"v2 parent binds": {"0::/kubepods/pod1/ctr\n", map[string]string{
			"kubepods/pod1/memory.max": "134217728", "kubepods/pod1/ctr/memory.max": "max"}, 128 * mib},
		"v2 hybrid (unified)": {"4:memory:/x\n0::/svc\n", map[string]string{"unified/svc/memory.max": "104857600"}, 100 * mib},
		"v1": {"4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n", map[string]string{
			"memory/docker/abc/memory.limit_in_bytes": "314572800\n",
			"memory/memory.limit_in_bytes":            "9223372036854771712\n"}, 300 * mib},
		"v1 unlimited": {"4:memory:/docker/abc\n", map[string]string{
			"memory/docker/abc/memory.limit_in_bytes": "9223372036854771712\n"}, 0},
		"v1 joint controllers": {"3:cpu,memory:/a\n", map[string]string{"memory/a/memory.limit_in_bytes": "1048576"}, mib},
		"no files":             {"0::/\n", nil, 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := fakeCgroups(t, tc.self, tc.files).Limit()
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := fakeCgroups(t, "0::/\n", map[string]string{"memory.max": "lots"}).Limit()
	assert.ErrorContains(t, err, "not a memory limit")
	got, err := memlimit.Source{Root: t.TempDir(), Self: filepath.Join(t.TempDir(), "none")}.Limit()
	require.NoError(t, err, "no /proc/self/cgroup: no limit")
	assert.Zero(t, got)
}

// Without GOMEMLIMIT the runtime is held to 90% of the container's limit;
// with it, or without a container limit, the runtime is left alone.
func TestApply(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	src := fakeCgroups(t, "0::/\n", map[string]string{"memory.max": "536870912"})

	res, err := memlimit.Apply(false, src)
	require.NoError(t, err)
	assert.Equal(t, "cgroup", res.From)
	assert.Equal(t, int64(512*mib), res.Container)
	container := float64(512 * mib)
	assert.Equal(t, int64(container*memlimit.Fraction), res.Limit)
	assert.Equal(t, res.Limit, debug.SetMemoryLimit(-1))

	debug.SetMemoryLimit(math.MaxInt64)
	res, err = memlimit.Apply(true, src)
	require.NoError(t, err)
	assert.Equal(t, "GOMEMLIMIT", res.From)
	assert.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "GOMEMLIMIT wins")

	res, err = memlimit.Apply(false, fakeCgroups(t, "0::/\n", map[string]string{"memory.max": "max"}))
	require.NoError(t, err)
	assert.Equal(t, "none", res.From)
	assert.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))
}
