package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/catalog/bundled"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/testutil"
	"github.com/collegematch/matching/internal/tools/inspect"
	"github.com/collegematch/matching/internal/tools/simulate/live"
)

// startAPI runs the API (run) over a fresh database holding the bundled
// catalogue and this package's Redis DB, and returns its public and
// operations base URLs.
func startAPI(t *testing.T) (public, ops string, db *store.Store) {
	t.Helper()
	dbURL := testutil.NewDBURL(t)
	ctx := context.Background()
	pool, err := store.Open(ctx, dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	db = store.New(pool)
	schools, err := bundled.Schools()
	require.NoError(t, err)
	_, err = db.UpsertSchools(ctx, schools)
	require.NoError(t, err)

	env := map[string]string{
		"DATABASE_URL":      dbURL,
		"REDIS_URL":         testutil.RedisURLFor(t, testutil.RedisDBCmdAPI),
		"HTTP_ADDR":         "127.0.0.1:0",
		"OPS_ADDR":          "127.0.0.1:0",
		"AUTH_HS256_SECRET": secret,
	}
	testutil.NewRedis(t, testutil.RedisDBCmdAPI) // flushed before and after
	runCtx, cancel := context.WithCancel(ctx)
	ready := make(chan [2]string, 1)
	done := make(chan error, 1)
	go func() { done <- run(runCtx, func(k string) string { return env[k] }, io.Discard, ready) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(25 * time.Second):
			t.Error("api did not shut down")
		}
	})
	select {
	case addrs := <-ready:
		return "http://" + addrs[0], "http://" + addrs[1], db
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("api did not start")
	}
	return "", "", nil
}

// series is one sample of /metrics: its labels and value.
type series struct {
	labels map[string]string
	value  float64
}

// scrape reads the operations port's /metrics: the samples of each metric
// by name. Label values of the service's own metrics hold no quote or
// comma, which keeps this reader small.
func scrape(t *testing.T, ops string) map[string][]series {
	t.Helper()
	res, err := http.Get(ops + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := map[string][]series{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		head, val, ok := strings.Cut(line, " ")
		require.True(t, ok, "metrics line %q", line)
		v, err := strconv.ParseFloat(val, 64)
		require.NoError(t, err, "metrics line %q", line)
		name, rest, _ := strings.Cut(head, "{")
		s := series{labels: map[string]string{}, value: v}
		if rest = strings.TrimSuffix(rest, "}"); rest != "" {
			for _, pair := range strings.Split(rest, ",") {
				k, v, _ := strings.Cut(pair, "=")
				s.labels[k] = strings.Trim(v, `"`)
			}
		}
		out[name] = append(out[name], s)
	}
	return out
}

// counter is the value of the sample of name with exactly labels, -1 when
// there is none.
func counter(families map[string][]series, name string, labels map[string]string) float64 {
	for _, s := range families[name] {
		if maps.Equal(s.labels, labels) {
			return s.value
		}
	}
	return -1
}

func mint(t *testing.T, id string) string {
	t.Helper()
	tok, err := auth.MintHS256([]byte(secret), auth.MintOptions{Subject: id, TTL: time.Hour})
	require.NoError(t, err)
	return tok
}

// The simulation's students drive the real API (onboarding, continuous
// feed, swipes, feedback when asked); the API's learning counters move by
// exactly what it recorded, by label. Then `students explain` (inspect)
// shows one of them the feed POST /recommendations serves.
func TestSimulationThroughTheAPIMovesTheLearningCounters(t *testing.T) {
	public, ops, db := startAPI(t)
	before := scrape(t, ops)
	for _, d := range []string{"left", "right"} {
		for _, p := range []string{"discovery", "refinement", "stable"} {
			for _, s := range []string{"ranked", "exploration", "probe"} {
				require.Zero(t, counter(before, "matching_swipes_total", map[string]string{"direction": d, "phase": p, "slot": s}),
					"every series starts at zero: %s %s %s", d, p, s)
			}
		}
	}

	schools, err := db.ActiveSchools(context.Background())
	require.NoError(t, err)
	const students, swipes = 4, 12
	res, err := live.Run(context.Background(), live.Config{
		API: public, Schools: schools, Students: students, Swipes: swipes, PageSize: 10, Seed: 3, Workers: 2,
		Token: func(id string) (string, error) { return mint(t, id), nil },
	})
	require.NoError(t, err)
	t.Logf("\n%s", res.Table())
	require.Equal(t, students*swipes, res.Swipes)
	require.Len(t, res.StudentIDs, students)
	require.Positive(t, res.Where(func(k live.Key) bool { return k.Probe }).Swipes, "probes were served and swiped")

	after := scrape(t, ops)
	swiped := func(d, p, s string) float64 {
		return counter(after, "matching_swipes_total", map[string]string{"direction": d, "phase": p, "slot": s})
	}
	total := 0.0
	for _, d := range []string{"left", "right"} {
		for _, p := range []string{"discovery", "refinement", "stable"} {
			client := res.Where(func(k live.Key) bool { return k.Direction == d && k.Phase == p })
			server := swiped(d, p, "ranked") + swiped(d, p, "exploration") + swiped(d, p, "probe")
			assert.Equal(t, float64(client.Swipes), server, "%s swipes in %s", d, p)
			// Every school the continuous feed served as a probe is known
			// to the API as one (it may know more: see the report).
			probes := res.Where(func(k live.Key) bool { return k.Direction == d && k.Phase == p && k.Probe })
			assert.GreaterOrEqual(t, swiped(d, p, "probe"), float64(probes.Swipes), "%s probe swipes in %s", d, p)
			total += server
		}
	}
	serverProbes := 0.0
	for _, d := range []string{"left", "right"} {
		for _, p := range []string{"discovery", "refinement", "stable"} {
			serverProbes += swiped(d, p, "probe")
		}
	}
	t.Logf("probe swipes: %v counted by the API, %d served as probes by the continuous feed",
		serverProbes, res.Where(func(k live.Key) bool { return k.Probe }).Swipes)
	assert.Equal(t, float64(students*swipes), total)
	assert.Equal(t, float64(students*10), swiped("left", "discovery", "ranked")+swiped("left", "discovery", "probe")+
		swiped("left", "discovery", "exploration")+swiped("right", "discovery", "ranked")+swiped("right", "discovery", "probe")+
		swiped("right", "discovery", "exploration"), "swipes 1-10 of each student are discovery")
	sent := 0
	for _, reason := range match.FeedbackOptions() {
		got := counter(after, "matching_feedback_total", map[string]string{"reason": reason})
		assert.Equal(t, float64(res.Feedback[reason]), got, "feedback %s", reason)
		sent += res.Feedback[reason]
	}
	assert.Equal(t, res.Prompts, sent, "every prompt was answered")

	t.Run("explain agrees with POST /recommendations", func(t *testing.T) {
		explainAgrees(t, public, db, res.StudentIDs[0])
	})
}

// explainAgrees compares POST /recommendations (limit 20) with
// inspect.Explain for one student.
func explainAgrees(t *testing.T, public string, db *store.Store, id string) {
	body, err := json.Marshal(map[string]any{"student_id": id, "limit": 20})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, public+"/recommendations", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+mint(t, id))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var page query.RecommendationsPage
	require.NoError(t, json.NewDecoder(res.Body).Decode(&page))
	require.Len(t, page.Recommendations, 20)

	// A client of its own: testutil.NewRedis would flush the stored feed.
	rdb, _, err := cache.Open(context.Background(), testutil.RedisURLFor(t, testutil.RedisDBCmdAPI))
	require.NoError(t, err)
	defer rdb.Close()
	ex, err := inspect.Explain(context.Background(), inspect.Deps{DB: db, Redis: rdb, FeedTTL: 5 * time.Minute}, id, 20)
	require.NoError(t, err)

	assert.Equal(t, "stored", ex.Feed.Source, "explain reads the feed the API stored")
	assert.Equal(t, page.TotalSwipes, ex.SwipeCount)
	assert.Equal(t, page.Metadata.LearningPhase, ex.Phase)
	assert.Equal(t, page.TotalSwipes, ex.Feed.TotalSwipes)
	assert.Equal(t, page.Metadata.TotalCount, ex.Feed.TotalCount)
	assert.Equal(t, page.Metadata.AlgorithmVersion, ex.Feed.AlgorithmVersion)
	assert.Equal(t, page.LearningState.PreferenceWeights, ex.Feed.Weights)
	for k, w := range page.LearningState.PreferenceWeights {
		assert.Equal(t, w, ex.Weights[k].Value, "weight %s", k)
		assert.Greater(t, ex.Weights[k].Uncertainty, 0.0, "weight %s", k)
	}
	require.Len(t, ex.Feed.Items, len(page.Recommendations))
	for i, r := range page.Recommendations {
		it := ex.Feed.Items[i]
		assert.Equal(t, i+1, it.Position)
		assert.Equal(t, r.SchoolID, it.SchoolID, "item %d", i+1)
		assert.Equal(t, r.Name, it.Name)
		assert.Equal(t, r.MatchScore, it.MatchScore)
		assert.Equal(t, r.MatchGrade, it.MatchGrade)
		assert.Equal(t, r.AdmissionBand, it.AdmissionBand)
		assert.Equal(t, r.MatchReasons, it.Reasons)
		assert.Equal(t, r.IsProbe, it.Slot == inspect.SlotProbe, "item %d is_probe %v, slot %s", i+1, r.IsProbe, it.Slot)
		assert.Equal(t, query.IsProbePosition(page.TotalSwipes, i+1), it.Slot == inspect.SlotProbe, "probe positions")
		assert.Contains(t, []string{inspect.SlotRanked, inspect.SlotExploration, inspect.SlotProbe}, it.Slot)
	}
}
