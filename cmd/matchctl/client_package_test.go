package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// TestTypeScriptClientPackage uses the TypeScript client package as a client
// developer would: `npm pack` in clients/typescript gives a tarball, a fresh
// npm project (npm init -y) installs it, and there, against the real API
// (built from cmd/api and run as a process, on PostgreSQL and Redis):
//
//   - test/consumer.mts type-checks against the installed declarations (its
//     @ts-expect-error lines must be errors: paths, bodies and answer fields
//     the document does not have);
//   - test/api.test.mjs (node --test) onboards a new student, lists the
//     categories, pages the recommendations, swipes, reads a match and gets
//     the API's errors as APIError;
//   - the README's five-line example prints the student's top five.
//
// Node.js and npm, and the package's own npm packages (npm ci in
// clients/typescript, which .ci/run does), are needed; without them the test
// is skipped, except under CI, where it fails.
func TestTypeScriptClientPackage(t *testing.T) {
	pkg := filepath.Join(testutil.RepoRoot(t), "clients", "typescript")
	node, npm := nodeTools(t, pkg)
	bin := buildServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// The API on a catalogue, and a new student's token.
	dbURL := testutil.NewDBURL(t)
	pool, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = store.New(pool).UpsertSchools(ctx, catalog.Generate(500, 1))
	require.NoError(t, err)
	testutil.NewRedis(t, testutil.RedisDBMatchctl) // flushed before and after
	secret := randomHex(t, 32)
	api := startServer(t, filepath.Join(bin, "api"), map[string]string{
		"DATABASE_URL":      dbURL,
		"REDIS_URL":         testutil.RedisURLFor(t, testutil.RedisDBMatchctl),
		"AUTH_HS256_SECRET": secret,
		"HTTP_ADDR":         "127.0.0.1:0",
		"OPS_ADDR":          "127.0.0.1:0",
	})
	addrs := api.addrs(t, 2)
	apiURL, opsURL := "http://"+addrs[0], "http://"+addrs[1]
	require.Eventually(t, func() bool {
		resp, err := http.Get(opsURL + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "the API is ready")
	student := uuid.NewString()
	token, err := auth.MintHS256([]byte(secret), auth.MintOptions{Subject: student, TTL: 10 * time.Minute})
	require.NoError(t, err)
	defer func() {
		if t.Failed() {
			t.Logf("api log:\n%s", api.log.String())
		}
	}()

	// npm pack, as the package's README says (its prepack script builds dist/).
	packed := t.TempDir()
	out := runTool(t, ctx, pkg, nil, npm, "pack", "--json", "--pack-destination", packed)
	var pack []struct {
		Filename string `json:"filename"`
		Files    []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &pack), "npm pack --json: %s", out)
	require.Len(t, pack, 1)
	var files []string
	for _, f := range pack[0].Files {
		files = append(files, f.Path)
	}
	assert.ElementsMatch(t, []string{"README.md", "package.json", "dist/index.js", "dist/index.d.ts",
		"dist/openapi.js", "dist/openapi.d.ts"}, files, "the tarball holds the built package and its README")
	tarball := filepath.Join(packed, pack[0].Filename)

	// A fresh npm project installs the tarball (openapi-fetch comes from the
	// registry, or npm's cache where npm ci put it).
	project := t.TempDir()
	runTool(t, ctx, project, nil, npm, "init", "-y")
	runTool(t, ctx, project, nil, npm, "install", "--no-audit", "--no-fund", "--prefer-offline", tarball)
	installed, err := os.ReadFile(filepath.Join(project, "node_modules", "@collegematch", "matching-client", "package.json"))
	require.NoError(t, err, "the package is installed in the project's node_modules")
	assert.Contains(t, string(installed), `"openapi-fetch"`)
	for _, name := range []string{"api.test.mjs", "consumer.mts"} {
		body, err := os.ReadFile(filepath.Join(pkg, "test", name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(project, name), body, 0o644))
	}
	readme, err := os.ReadFile(filepath.Join(pkg, "README.md"))
	require.NoError(t, err)
	example := regexp.MustCompile("(?s)```js\n(.*?)```").FindSubmatch(readme)
	require.NotNil(t, example, "the README has a js example")
	assert.Equal(t, 5, strings.Count(string(example[1]), "\n"), "the README's example is five lines")
	require.NoError(t, os.WriteFile(filepath.Join(project, "example.mjs"), example[1], 0o644))

	// The declarations, as a TypeScript consumer sees them.
	runTool(t, ctx, project, nil, node, filepath.Join(pkg, "node_modules", "typescript", "bin", "tsc"),
		"--noEmit", "--strict", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext",
		"--lib", "es2022,dom", "consumer.mts")

	// The calls, against the running API.
	env := []string{"MATCHING_API_URL=" + apiURL, "MATCHING_TOKEN=" + token, "MATCHING_STUDENT=" + student}
	out = runTool(t, ctx, project, env, node, "--test", "--test-reporter=tap", "api.test.mjs")
	assert.Contains(t, out, "# pass 2")
	assert.Contains(t, out, "# fail 0")
	assert.Contains(t, out, "# skipped 0")

	out = runTool(t, ctx, project, []string{"API_URL=" + apiURL, "TOKEN=" + token, "STUDENT=" + student},
		node, "example.mjs")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 5, "the README's example prints the top five:\n%s", out)
	for _, l := range lines {
		assert.Regexp(t, `^[01]\.\d\d \S`, l)
	}
}

// nodeTools finds node and npm, and checks that the package's npm packages
// are installed.
func nodeTools(t *testing.T, pkg string) (node, npm string) {
	t.Helper()
	missing := func(what string) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: .ci/run installs the client package's npm packages before the tests", what)
		}
		t.Skip(what)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("no node on the PATH")
	}
	npm, err = exec.LookPath("npm")
	if err != nil {
		missing("no npm on the PATH")
	}
	if _, err := os.Stat(filepath.Join(pkg, "node_modules", "typescript", "bin", "tsc")); err != nil {
		missing("the client package's npm packages are not installed: npm ci in clients/typescript")
	}
	return node, npm
}

// runTool runs name with args in dir (env added to the test's environment)
// and returns its standard output; it fails the test when the command fails.
func runTool(t *testing.T, ctx context.Context, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false", "NO_COLOR=1")
	cmd.Env = append(cmd.Env, env...)
	var stderr testutil.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s %s:\n%s\n%s", filepath.Base(name), strings.Join(args, " "), out, stderr.String())
	return string(out)
}
