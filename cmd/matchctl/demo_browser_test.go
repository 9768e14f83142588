package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
)

// TestDemoInBrowser drives the demo page in headless Chromium as a student
// would, against the real API and worker (built from cmd/api and cmd/worker
// and run as processes), PostgreSQL and Redis, with `matchctl demo` serving
// the page: onboarding, two category swipes, then twelve swipes of the
// continuous feed. It checks the swipe count and phase the page shows, the
// feedback prompt after every probe swipe, the weights panel moving and the
// recommendations it lists, and the docs page rendering the OpenAPI document;
// the page must log no error and break no Content-Security-Policy rule (so
// nothing is loaded from elsewhere).
//
// Screenshots of the deck, the panel and the docs page go to
// $DEMO_SCREENSHOTS when set (`make screenshots` sets docs/), else to a
// temporary folder. Chromium comes from scripts/chromium.sh; without it the
// test is skipped, except under CI, where it fails.
func TestDemoInBrowser(t *testing.T) {
	browser := chromiumPath(t)
	bin := buildServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	dbURL := testutil.NewDBURL(t)
	pool, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = store.New(pool).UpsertSchools(ctx, catalog.Generate(2000, 1))
	require.NoError(t, err)
	testutil.NewRedis(t, testutil.RedisDBMatchctl) // flushed before and after
	secret := randomHex(t, 32)
	env := map[string]string{
		"DATABASE_URL":      dbURL,
		"REDIS_URL":         testutil.RedisURLFor(t, testutil.RedisDBMatchctl),
		"AUTH_HS256_SECRET": secret,
		"HTTP_ADDR":         "127.0.0.1:0",
		"OPS_ADDR":          "127.0.0.1:0",
	}

	worker := startServer(t, filepath.Join(bin, "worker"), env)
	api := startServer(t, filepath.Join(bin, "api"), env)
	apiURL, opsURL := "http://"+api.addrs(t, 2)[0], "http://"+api.addrs(t, 2)[1]
	worker.addrs(t, 1)
	require.Eventually(t, func() bool {
		resp, err := http.Get(opsURL + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "the API is ready")

	demoURL := startDemo(t, ctx, env, apiURL)

	// Chromium, with the flags this machine needs (no background
	// networking: only loopback is reachable). chromedp talks to it over a
	// pipe, so it opens no debugging port.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
		chromedp.Flag("no-sandbox", os.Geteuid() == 0),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	b, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	problems := watchConsole(t, b)
	defer func() { // before the browser closes
		if !t.Failed() {
			return
		}
		// What the page showed, said and logged, and the servers' logs.
		if shot, err := chromedp.Run(b, chromedp.FullScreenshot(100)); err == nil {
			if f, err := os.CreateTemp("", "demo-failed-*.png"); err == nil {
				_, _ = f.Write(shot)
				_ = f.Close()
				t.Logf("the page when the test failed: %s", f.Name())
			}
		}
		banner, _ := chromedp.Run(b, chromedp.Evaluate[string](`document.querySelector("#error")?.textContent ?? ""`))
		t.Logf("page error banner: %q", banner)
		t.Logf("console problems: %q", problems.list())
		t.Logf("worker log:\n%s\napi log:\n%s", worker.log.String(), api.log.String())
	}()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		require.NoError(t, chromedp.Do(b, steps...), what)
	}

	// 1. Onboarding with the form's values, then the six categories.
	do("onboarding",
		chromedp.Navigate(demoURL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#onboarding-form`)),
		chromedp.Click(chromedp.CSS(`#onboarding-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#category-list [data-category-id]`)),
	)
	categories := evaluate[[]string](t, b, `[...document.querySelectorAll('#category-list [data-category-id]')].map(e => e.dataset.categoryId)`)
	assert.Equal(t, []string{"selective-research", "liberal-arts", "public-flagship", "affordable-regional",
		"tech-engineering", "community-college"}, categories)
	do("category swipes",
		chromedp.Click(chromedp.CSS(`[data-category-id="tech-engineering"] [data-category-action="right"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-category-id="tech-engineering"][data-choice="liked"]`)),
		chromedp.Click(chromedp.CSS(`[data-category-id="community-college"] [data-category-action="left"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-category-id="community-college"][data-choice="disliked"]`)),
	)
	prior := weightsShown(t, b)
	require.Len(t, prior, 8, "the panel shows the eight preference weights")

	// 2. The deck of the continuous feed: twelve swipes, answering the
	// feedback prompt each probe swipe brings.
	do("the deck",
		chromedp.Click(chromedp.CSS(`#start-swiping`)),
		chromedp.WaitVisible(chromedp.CSS(`#deck .card[data-school-id]`)),
	)
	assert.Equal(t, "0", text(t, b, `#swipe-count`))
	assert.Equal(t, "discovery", attr(t, b, `#phase`, "data-phase"))

	student := text(t, b, `#student-id`)
	swiped := map[string]bool{}
	probes, prompts := 0, 0
	var probeAt []int
	for i := 1; i <= 12; i++ {
		school := attr(t, b, `#deck .card`, "data-school-id")
		probe := attr(t, b, `#deck .card`, "data-probe") == "true"
		require.False(t, swiped[school], "swipe %d: the deck shows %s again", i, school)
		swiped[school] = true
		action := "like"
		if i%3 == 0 {
			action = "dislike"
		}
		do(fmt.Sprintf("swipe %d", i),
			chromedp.Click(chromedp.CSS(`#deck .card [data-action="`+action+`"]`)),
			waitText(`#swipe-count`, strconv.Itoa(i)),
			// The page is done with the swipe (and any refill of the deck).
			chromedp.WaitVisible(chromedp.CSS(`#deck:not(.busy) .card[data-school-id]`)),
		)
		// A refill of the deck shows the continuous feed's total_swipes: it
		// counts this swipe too.
		assert.Equal(t, strconv.Itoa(i), text(t, b, `#swipe-count`), "after swipe %d", i)
		feedbackShown := visible(t, b, `#feedback`)
		if probe {
			probes++
			probeAt = append(probeAt, i)
			require.True(t, feedbackShown, "swipe %d was on a probe: the feedback prompt shows", i)
			assert.Equal(t, school, attr(t, b, `#feedback`, "data-school-id"))
		}
		if !feedbackShown {
			continue
		}
		prompts++
		if i == 12 {
			break // leave the last prompt on the screenshot
		}
		do(fmt.Sprintf("feedback after swipe %d", i),
			chromedp.Click(chromedp.CSS(`#feedback [data-reason="too_expensive"]`)),
			chromedp.WaitNotVisible(chromedp.CSS(`#feedback`)),
		)
	}
	t.Logf("12 swipes: probes at swipes %v, %d feedback prompts", probeAt, prompts)
	assert.GreaterOrEqual(t, probes, 1, "a probe at every 4th position of the feed")
	assert.Equal(t, "12", text(t, b, `#swipe-count`))
	assert.Equal(t, "refinement", attr(t, b, `#phase`, "data-phase"))
	assert.Contains(t, text(t, b, `#phase`), "Refining matches...")

	// 3. The panel catches up with the twelfth swipe: the learned weights
	// differ from the prior, and the top of POST /recommendations holds no
	// swiped school.
	do("the panel", waitText(`#panel-note`, "after 12 swipes"))
	require.Eventually(t, func() bool {
		w := weightsShown(t, b)
		for k, v := range prior {
			if w[k] != v {
				return true
			}
		}
		return false
	}, 15*time.Second, 200*time.Millisecond, "the learned weights move away from the prior")
	top := evaluate[[]string](t, b, `[...document.querySelectorAll('#top > li')].map(e => e.dataset.schoolId)`)
	require.Len(t, top, 5)
	for _, id := range top {
		assert.False(t, swiped[id], "a swiped school (%s) is never recommended again", id)
	}

	// The API agrees: twelve counted swipes for the page's student.
	assert.Equal(t, 12, totalSwipes(t, demoURL, student))

	dir := os.Getenv("DEMO_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	shoot(t, b, `#deck-column`, filepath.Join(dir, "demo-deck.png"))
	shoot(t, b, `#panel`, filepath.Join(dir, "demo-panel.png"))

	// 4. The docs page renders the OpenAPI document with the bundled
	// Swagger UI, and "Try it out" reaches the API through the proxy as the
	// demo student.
	do("the docs page",
		chromedp.Navigate(demoURL+"/docs"),
		chromedp.WaitVisible(chromedp.ID(`operations-recommendations-continuousFeed`)),
		waitText(`.swagger-ui .info .title`, "College Matching API"),
		chromedp.Click(chromedp.CSS(`#operations-operations-getHealth .opblock-summary-control`)),
		chromedp.Click(chromedp.CSS(`#operations-operations-getHealth .try-out__btn`)),
		chromedp.Click(chromedp.CSS(`#operations-operations-getHealth .execute`)),
		waitText(`#operations-operations-getHealth`, "Server response"),
	)
	health := text(t, b, `#operations-operations-getHealth`)
	assert.Contains(t, health, demoURL+"/api/health", "the request went through the proxy")
	assert.Contains(t, health, `"status": "ok"`, "and the API answered")

	assert.Empty(t, problems.list(), "the pages log no error and break no Content-Security-Policy rule")
}

// chromiumPath finds the browser scripts/chromium.sh installs.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium: .ci/run installs it with scripts/chromium.sh before the tests")
	}
	t.Skip("no Chromium on the PATH: scripts/chromium.sh installs Debian's chromium package")
	return ""
}

// buildServers builds cmd/api and cmd/worker into a temporary folder.
func buildServers(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"github.com/collegematch/matching/cmd/api", "github.com/collegematch/matching/cmd/worker")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return dir
}

// server is one of the service's binaries running for a test.
type server struct {
	log    *testutil.Buffer
	listen chan string // the addresses it logs as listening, in order
}

// startServer runs bin with env (and PATH, HOME) until the test ends, then
// stops it with SIGTERM.
func startServer(t *testing.T, bin string, env map[string]string) *server {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	s := &server{log: &testutil.Buffer{}, listen: make(chan string, 4)}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			s.log.Write(append(line, '\n'))
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(line, &rec) == nil && rec.Msg == "listening" {
				s.listen <- rec.Addr
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("%s did not stop within 20 s of SIGINT", filepath.Base(bin))
		}
	})
	return s
}

// addrs waits for the first n listening addresses the server logs.
func (s *server) addrs(t *testing.T, n int) []string {
	t.Helper()
	var got []string
	for len(got) < n {
		select {
		case a := <-s.listen:
			got = append(got, a)
		case <-time.After(30 * time.Second):
			t.Fatalf("the server did not listen within 30 s:\n%s", s.log.String())
		}
	}
	// Keep them for a later call.
	for _, a := range got {
		s.listen <- a
	}
	return got
}

// startDemo runs `matchctl demo` in this process, proxying to apiURL, and
// returns its URL.
func startDemo(t *testing.T, ctx context.Context, env map[string]string, apiURL string) string {
	t.Helper()
	return startDemoWith(t, ctx, env, "--api", apiURL)
}

// totalSwipes asks POST /recommendations, through the demo's proxy with the
// demo's token, for the student's counted swipes.
func totalSwipes(t *testing.T, demoURL, student string) int {
	t.Helper()
	resp, err := http.Get(demoURL + "/session")
	require.NoError(t, err)
	var sess struct {
		StudentID string `json:"student_id"`
		Token     string `json:"token"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&sess))
	resp.Body.Close()
	require.Equal(t, student, sess.StudentID, "the page shows the session's student")
	req, err := http.NewRequest(http.MethodPost, demoURL+"/api/recommendations",
		strings.NewReader(fmt.Sprintf(`{"student_id":%q,"limit":1}`, student)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+sess.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body struct {
		TotalSwipes int `json:"total_swipes"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return body.TotalSwipes
}

// consoleProblems collects the page's exceptions and error messages
// (Content-Security-Policy refusals and failed loads are among them).
type consoleProblems struct {
	mu   sync.Mutex
	msgs []string
}

func (c *consoleProblems) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs...)
}

func watchConsole(t *testing.T, ctx context.Context) *consoleProblems {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx)) // starts the browser
	c := &consoleProblems{}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				c.mu.Lock()
				c.msgs = append(c.msgs, fmt.Sprintf("%s %s (%s:%d)", m.Type, m.Text, m.URL, m.Line+1))
				c.mu.Unlock()
			}
		}
	}()
	return c
}

// waitText waits until the element's text contains want.
func waitText(sel, want string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](fmt.Sprintf(`(document.querySelector(%q)?.textContent ?? "").includes(%q)`, sel, want),
		chromedp.WithPollingTimeout(20*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))
}

func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, "evaluate %s", expr)
	return v
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ""`, sel))
}

func attr(t *testing.T, ctx context.Context, sel, name string) string {
	t.Helper()
	return evaluate[string](t, ctx, fmt.Sprintf(`document.querySelector(%q)?.getAttribute(%q) ?? ""`, sel, name))
}

func visible(t *testing.T, ctx context.Context, sel string) bool {
	t.Helper()
	return evaluate[bool](t, ctx, fmt.Sprintf(`(e => !!e && !e.hidden && e.offsetParent !== null)(document.querySelector(%q))`, sel))
}

// weightsShown reads the panel's weights by name.
func weightsShown(t *testing.T, ctx context.Context) map[string]string {
	t.Helper()
	return evaluate[map[string]string](t, ctx,
		`Object.fromEntries([...document.querySelectorAll('#weights [data-weight]')].map(e => [e.dataset.weight, e.querySelector('.value').textContent]))`)
}

// shoot saves a PNG of the element and checks it is one.
func shoot(t *testing.T, ctx context.Context, sel, path string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel), chromedp.NodeVisible))
	require.NoError(t, err, "screenshot of %s", sel)
	img, err := png.Decode(bytes.NewReader(buf))
	require.NoError(t, err)
	assert.Greater(t, img.Bounds().Dx(), 200)
	assert.Greater(t, img.Bounds().Dy(), 200)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, buf, 0o644))
	t.Logf("screenshot %s (%dx%d)", path, img.Bounds().Dx(), img.Bounds().Dy())
}
