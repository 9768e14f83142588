package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/httpapi"
	"github.com/collegematch/matching/internal/ratelimit"
)

// unlimited is an allowance no benchmark reaches, so every request is
// counted and allowed.
func unlimited() config.RateLimits {
	r := config.Rate{N: 1_000_000_000, Period: time.Minute}
	return config.RateLimits{Recommendations: r, Swipes: r, Batch: r, Default: r}
}

// benchAPI is the real router over real PostgreSQL and Redis with a
// 6,500-school catalogue and one student whose feed is cached.
func benchAPI(b testing.TB, schools int) (api *testAPI, student, tok string) {
	// Request logs as in production (JSON lines at info, where a request
	// answered 2xx writes none), written nowhere:
	// the test logger would send each one to the test log under -v.
	quiet := func(d *httpapi.Deps) { d.Log = slog.New(slog.NewJSONHandler(io.Discard, nil)) }
	api = newTestAPI(b, withRates(redisClient(b), unlimited()), quiet)
	api.seedSchools(b, schools)
	student, tok = api.newStudent(b, completeProfile())
	res := api.do(b, "GET", "/m/recommendations/"+student, tok, nil)
	require.Equal(b, http.StatusOK, res.Status, "%s", res.Raw)
	return api, student, tok
}

func serve(b *testing.B, h http.Handler, req func() *http.Request, want int) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req())
		if w.Code != want {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkCompactCached is a cached GET /m/recommendations through the
// whole router: request id, logging, metrics, token (cached claims), the
// pipelined rate-limit count and feed read (one Redis round trip), stored
// bytes written as they are.
func BenchmarkCompactCached(b *testing.B) {
	api, student, tok := benchAPI(b, 6500)
	req := httptest.NewRequest("GET", "/m/recommendations/"+student, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	serve(b, api.Handler, func() *http.Request { return req }, http.StatusOK)
}

// BenchmarkCompactNotModified is the same read answered 304.
func BenchmarkCompactNotModified(b *testing.B) {
	api, student, tok := benchAPI(b, 6500)
	etag := api.do(b, "GET", "/m/recommendations/"+student, tok, nil).Header.Get("ETag")
	req := httptest.NewRequest("GET", "/m/recommendations/"+student, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("If-None-Match", etag)
	serve(b, api.Handler, func() *http.Request { return req }, http.StatusNotModified)
}

// BenchmarkRecommendationsCached is a cached POST /recommendations page of 20:
// the stored feed read and decoded, 20 items described (reasons, band,
// price, majors) and encoded.
func BenchmarkRecommendationsCached(b *testing.B) {
	api, student, tok := benchAPI(b, 6500)
	body := []byte(`{"student_id":"` + student + `"}`)
	serve(b, api.Handler, func() *http.Request {
		req := httptest.NewRequest("POST", "/recommendations", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		return req
	}, http.StatusOK)
}

// BenchmarkCompactMiss is GET /m/recommendations when the feed is not
// cached: the student loaded from PostgreSQL, 6,500 schools ranked, the
// feed encoded and stored.
func BenchmarkCompactMiss(b *testing.B) {
	api, student, tok := benchAPI(b, 6500)
	req := httptest.NewRequest("GET", "/m/recommendations/"+student, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	ctx := context.Background()
	serve(b, api.Handler, func() *http.Request {
		b.StopTimer()
		if err := api.Redis.Del(ctx, cache.FeedKey(student)).Err(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		return req
	}, http.StatusOK)
}

var wrkRate = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

// TestLoadCompactAgainstBareRedisGet is the hot path's load figure: wrk on
// loopback against the cached GET /m/recommendations of the real router,
// and against a bare chi handler that makes one Redis GET of a value of the
// same size, in alternating rounds of one run. It needs wrk and
// MATCHING_LOAD=1 (see docs/benchmarks.md).
func TestLoadCompactAgainstBareRedisGet(t *testing.T) {
	if os.Getenv("MATCHING_LOAD") != "1" {
		t.Skip("set MATCHING_LOAD=1 to run the load comparison (needs wrk)")
	}
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		t.Skip("wrk is not installed")
	}
	api, student, tok := benchAPI(t, 6500)
	ctx := context.Background()
	key, field := cache.FeedKey(student), cache.FieldCompact
	value, err := api.Redis.HGet(ctx, key, field).Bytes()
	require.NoError(t, err)
	bareKey := "bench:bare"
	require.NoError(t, api.Redis.Set(ctx, bareKey, value, time.Hour).Err())

	bare := chi.NewRouter()
	bare.Get("/bare/{id}", func(w http.ResponseWriter, r *http.Request) {
		v, err := api.Redis.Get(r.Context(), bareKey).Bytes()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(v)
	})
	// The same Redis work as the hot path (the GCRA script and the feed read
	// in one pipeline) with no middleware: what the limiter's script costs
	// against a plain GET, apart from authentication, logging and metrics.
	limiter := ratelimit.NewPipelined(api.Redis, unlimited())
	bare.Get("/bare-limited/{id}", func(w http.ResponseWriter, r *http.Request) {
		_, got, err := limiter.AllowFetch(r.Context(), ratelimit.GroupRecommendations, chi.URLParam(r, "id"),
			ratelimit.Fetch{Key: key, Field: field})
		if err != nil || !got.Found {
			http.Error(w, fmt.Sprint(err), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(got.Value)
	})
	bareSrv := httptest.NewServer(bare)
	t.Cleanup(bareSrv.Close)

	duration := os.Getenv("MATCHING_LOAD_DURATION")
	if duration == "" {
		duration = "5s"
	}
	cpu := func() time.Duration {
		var ru syscall.Rusage
		require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	run := func(url string, headers ...string) float64 {
		start := cpu()
		defer func() { t.Logf("server CPU: %v", cpu()-start) }()
		args := []string{"-t2", "-c32", "-d" + duration, "--latency"}
		for _, h := range headers {
			args = append(args, "-H", h)
		}
		out, err := exec.Command(wrk, append(args, url)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		t.Logf("%s\n%s", url, out)
		m := wrkRate.FindSubmatch(out)
		require.NotNil(t, m, "%s", out)
		v, err := strconv.ParseFloat(string(m[1]), 64)
		require.NoError(t, err)
		return v
	}
	var bareSum, limitedSum, apiSum float64
	const rounds = 3
	for range rounds {
		bareSum += run(bareSrv.URL + "/bare/" + student)
		limitedSum += run(bareSrv.URL + "/bare-limited/" + student)
		apiSum += run(api.URL+"/m/recommendations/"+student, "Authorization: Bearer "+tok)
	}
	res := api.do(t, "GET", "/m/recommendations/"+student, tok, nil)
	require.Equal(t, http.StatusOK, res.Status, "the API answered 200s, not 429s")
	report := fmt.Sprintf("bare chi + one Redis GET: %.0f req/s; bare chi + pipelined GCRA and HGET: %.0f req/s (%.2f); "+
		"cached GET /m/recommendations: %.0f req/s; ratio to the bare GET %.2f",
		bareSum/rounds, limitedSum/rounds, limitedSum/bareSum, apiSum/rounds, apiSum/bareSum)
	t.Log(report)
	fmt.Println(report)
}

// BenchmarkSwipe is POST /swipe through the whole router, in process:
// the token, the rate-limit count, the read before the commit (the stored
// feed's profile and model), the prediction, the one statement, the patch
// and the learn task. Students take turns; each swipes schools down the
// catalogue, so after the first the feed is patched or its model kept.
func BenchmarkSwipe(b *testing.B) {
	api, _, _ := benchAPI(b, 6500)
	schools := api.Catalog.Current().Schools
	type student struct{ id, tok string }
	students := make([]student, 64)
	for i := range students {
		id, tok := api.newStudent(b, completeProfile())
		res := api.do(b, "GET", "/m/recommendations/"+id, tok, nil)
		require.Equal(b, http.StatusOK, res.Status)
		students[i] = student{id, tok}
	}
	n := 0
	serve(b, api.Handler, func() *http.Request {
		s := students[n%len(students)]
		body := `{"student_id":"` + s.id + `","school_id":"` + schools[(n*7)%len(schools)].ID + `","direction":"left"}`
		n++
		req := httptest.NewRequest("POST", "/swipe", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+s.tok)
		req.Header.Set("Content-Type", "application/json")
		return req
	}, http.StatusOK)
}

// BenchmarkSyncPull is POST /m/sync/pull through the whole router for a
// student with 30 swipes: "first" pulls everything (no cursor), "since"
// pulls with the cursor the first pull gave (nothing new).
func BenchmarkSyncPull(b *testing.B) {
	api, id, tok := benchAPI(b, 6500)
	schools := api.Catalog.Current().Schools
	for i := range 30 {
		api.swipe(b, tok, map[string]any{"student_id": id, "school_id": schools[i*11].ID, "direction": "left"})
	}
	first := api.do(b, "POST", "/m/sync/pull", tok, map[string]any{"student_id": id})
	require.Equal(b, http.StatusOK, first.Status, "%s", first.Raw)
	cursor := first.Body["cursor"].(string)
	for _, c := range []struct{ name, body string }{
		{"first", `{"student_id":"` + id + `"}`},
		{"since", `{"student_id":"` + id + `","cursor":"` + cursor + `"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			serve(b, api.Handler, func() *http.Request {
				req := httptest.NewRequest("POST", "/m/sync/pull", strings.NewReader(c.body))
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("Content-Type", "application/json")
				return req
			}, http.StatusOK)
		})
	}
}
