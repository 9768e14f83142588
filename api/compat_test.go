package api_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompatCheck runs scripts/api-compat.sh, the breaking-change check CI
// runs, on a copy of api/ in a fresh git repository, with the document and
// its released baseline changed as a contributor would: compatible changes
// pass; a breaking change fails, and so do the ways around the rule (a major
// bump without a new baseline, a new baseline without a major bump, a
// baseline overwritten with a breaking contract of the same major, committed
// or not); a breaking change that bumps the major and the baseline in one
// commit passes.
//
// oasdiff is built from the Go module proxy at the version the script pins;
// when it cannot be, the test is skipped, except under CI, where it fails.
func TestCompatCheck(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	script, err := os.ReadFile(filepath.Join(root, "scripts", "api-compat.sh"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^OASDIFF_VERSION=(v[0-9.]+)$`).FindSubmatch(script)
	require.NotNil(t, m, "scripts/api-compat.sh pins OASDIFF_VERSION")
	oasdiff := buildOasdiff(t, string(m[1]))
	doc, err := os.ReadFile(filepath.Join(root, "api", "openapi.yaml"))
	require.NoError(t, err)
	baseline, err := os.ReadFile(filepath.Join(root, "api", "released", "openapi.yaml"))
	require.NoError(t, err)

	// The committed pair passes, here as in CI.
	repo := newRepo(t, root, script, doc, baseline)
	out, err := repo.check(oasdiff)
	require.NoError(t, err, "the committed document keeps the committed baseline:\n%s", out)

	// Changes of the released document itself (the baseline as it is here).
	released := string(baseline)
	compatible := edit(t, released,
		"        learning_state: {$ref: '#/components/schemas/LearningState'}\n        total_swipes:",
		"        learning_state: {$ref: '#/components/schemas/LearningState'}\n        cursor: {type: string, description: An opaque cursor.}\n        total_swipes:")
	breaking := edit(t, released,
		"required: [recommendations, metadata, learning_state, total_swipes]",
		"required: [recommendations, metadata, learning_state]")
	removed := edit(t, released, "\n  /v2/recommendations:\n", "\n  /v3/recommendations:\n")
	next := bumpMajor(t, breaking)

	cases := []struct {
		name       string
		doc        string
		baseline   string // "" keeps the released one
		commit     bool   // commit the change (else leave it in the work tree)
		fails      bool
		complaints []string
	}{
		{name: "unchanged", doc: released},
		{name: "an optional answer field added", doc: compatible, commit: true},
		{name: "a required answer field made optional", doc: breaking, fails: true,
			complaints: []string{"response-property-became-optional", "total_swipes", "breaks clients of the released contract"}},
		{name: "a path renamed, committed", doc: removed, commit: true, fails: true,
			complaints: []string{"api-path-removed-without-deprecation", "/v2/recommendations"}},
		{name: "the major bumped without a new baseline", doc: next, fails: true,
			complaints: []string{"is of major 2", "released contract api/released/openapi.yaml is of major 1", "copy api/openapi.yaml"}},
		{name: "a new baseline without a major bump", doc: breaking, baseline: breaking, fails: true,
			complaints: []string{"uncommitted change", "changed in a breaking way", "without a new major"}},
		{name: "a new baseline without a major bump, committed", doc: breaking, baseline: breaking, commit: true, fails: true,
			complaints: []string{"commit ", "changed in a breaking way", "without a new major"}},
		{name: "a new baseline of the next major only", doc: released, baseline: next, fails: true,
			complaints: []string{"is of major 1", "is of major 2"}},
		{name: "the major and the baseline bumped together", doc: next, baseline: next},
		{name: "the major and the baseline bumped together, committed", doc: next, baseline: next, commit: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			repo := newRepo(t, root, script, doc, baseline)
			repo.write("api/openapi.yaml", tc.doc)
			if tc.baseline != "" {
				repo.write("api/released/openapi.yaml", tc.baseline)
			}
			if tc.commit {
				repo.git("commit", "-qam", tc.name)
			}
			out, err := repo.check(oasdiff)
			if !tc.fails {
				require.NoError(t, err, "the check passes:\n%s", out)
				return
			}
			require.Error(t, err, "the check fails:\n%s", out)
			for _, c := range tc.complaints {
				assert.Contains(t, out, c)
			}
		})
	}
}

// buildOasdiff builds oasdiff at version into a temporary folder.
func buildOasdiff(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "install", "github.com/oasdiff/oasdiff@"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("building oasdiff %s: %v\n%s", version, err, out)
		}
		t.Skipf("oasdiff %s could not be built (no Go module proxy?): %v\n%s", version, err, out)
	}
	return filepath.Join(dir, "oasdiff")
}

// repo is a git repository holding the script, the document and its
// baseline at the paths the script expects, with one commit.
type repo struct {
	t   *testing.T
	dir string
}

func newRepo(t *testing.T, root string, script, doc, baseline []byte) *repo {
	t.Helper()
	r := &repo{t: t, dir: t.TempDir()}
	r.write("scripts/api-compat.sh", string(script))
	require.NoError(t, os.Chmod(filepath.Join(r.dir, "scripts", "api-compat.sh"), 0o755))
	r.write("api/openapi.yaml", string(doc))
	r.write("api/released/openapi.yaml", string(baseline))
	r.git("init", "-q")
	r.git("add", ".")
	r.git("commit", "-qm", "the released contract")
	return r
}

func (r *repo) write(path, body string) {
	r.t.Helper()
	p := filepath.Join(r.dir, filepath.FromSlash(path))
	require.NoError(r.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(r.t, os.WriteFile(p, []byte(body), 0o644))
}

func (r *repo) git(args ...string) {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=test", "-c", "user.email=test@example.com",
		"-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = r.dir
	out, err := cmd.CombinedOutput()
	require.NoError(r.t, err, "git %v: %s", args, out)
}

// check runs the script with oasdiff and returns what it printed.
func (r *repo) check(oasdiff string) (string, error) {
	cmd := exec.Command(filepath.Join(r.dir, "scripts", "api-compat.sh"))
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "OASDIFF="+oasdiff)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// edit replaces from, which must be in doc once, with to.
func edit(t *testing.T, doc, from, to string) string {
	t.Helper()
	require.Equal(t, 1, strings.Count(doc, from), "the document holds %q once", from)
	return strings.Replace(doc, from, to, 1)
}

// bumpMajor gives info.version the next major: 1.4.2 becomes 2.0.0.
func bumpMajor(t *testing.T, doc string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^info:\n(?:[ \t].*\n)*?[ \t]+version: (\d+)\.\d+\.\d+\n`)
	loc := re.FindStringSubmatchIndex(doc)
	require.NotNil(t, loc, "the document has info.version")
	major, err := strconv.Atoi(doc[loc[2]:loc[3]])
	require.NoError(t, err)
	end := strings.Index(doc[loc[2]:], "\n") + loc[2]
	return doc[:loc[2]] + strconv.Itoa(major+1) + ".0.0" + doc[end:]
}
