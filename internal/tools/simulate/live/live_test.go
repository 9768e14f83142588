package live_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/tools/simulate/live"
)

// The run against the real API, and its counters, is tested in cmd/api
// (TestSimulationThroughTheAPIMovesTheLearningCounters). These tests cover
// the client's own handling of what a service may answer.

// fakeAPI answers the five calls the clients make, with a handler per path
// that may override the default answer.
func fakeAPI(t *testing.T, schools []domain.School, override map[string]http.HandlerFunc) string {
	t.Helper()
	var swipes atomic.Int64
	mux := http.NewServeMux()
	write := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	defaults := map[string]http.HandlerFunc{
		"/v2/onboarding/minimal": func(w http.ResponseWriter, r *http.Request) { write(w, http.StatusCreated, map[string]any{}) },
		"/continuous-feed": func(w http.ResponseWriter, r *http.Request) {
			var items []map[string]any
			for i := range 3 {
				items = append(items, map[string]any{"school_id": schools[int(swipes.Load())+i].ID, "is_probe": i == 1})
			}
			write(w, http.StatusOK, map[string]any{"recommendations": items})
		},
		"/swipe": func(w http.ResponseWriter, r *http.Request) {
			n := int(swipes.Add(1))
			write(w, http.StatusOK, map[string]any{"swipe_count": n, "learning_phase": string(match.PhaseFor(n)),
				"trigger_feedback": n == 2})
		},
		"/feedback": func(w http.ResponseWriter, r *http.Request) { write(w, http.StatusOK, map[string]any{"success": true}) },
		"/recommendations": func(w http.ResponseWriter, r *http.Request) {
			write(w, http.StatusOK, map[string]any{"recommendations": []any{}})
		},
	}
	for path, h := range defaults {
		if o, ok := override[path]; ok {
			h = o
		}
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer tok-") {
				t.Errorf("%s without the student's token", path)
			}
			h(w, r)
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func config(api string, schools []domain.School) live.Config {
	return live.Config{API: api, Schools: schools, Students: 1, Swipes: 5, PageSize: 3, Workers: 1,
		Token: func(id string) (string, error) { return "tok-" + id, nil }}
}

func TestRunTalliesWhatTheServiceAnswered(t *testing.T) {
	schools := catalog.Generate(200, 2)
	res, err := live.Run(context.Background(), config(fakeAPI(t, schools, nil), schools))
	require.NoError(t, err)
	assert.Equal(t, 1, res.Students)
	assert.Equal(t, 5, res.Swipes)
	assert.Len(t, res.StudentIDs, 1)
	assert.Equal(t, 5, res.Where(func(k live.Key) bool { return k.Phase == "discovery" }).Swipes)
	assert.Equal(t, 2, res.Where(func(k live.Key) bool { return k.Probe }).Swipes, "items 2 and 5 were probes")
	assert.Equal(t, 1, res.Prompts)
	sent := 0
	for _, n := range res.Feedback {
		sent += n
	}
	assert.Equal(t, 1, sent, "the prompt was answered")
	assert.Contains(t, res.Table(), "| discovery | 5 |")
}

func TestRunRetriesARateLimitedCall(t *testing.T) {
	schools := catalog.Generate(200, 2)
	var limited atomic.Int64
	api := fakeAPI(t, schools, map[string]http.HandlerFunc{
		"/feedback": func(w http.ResponseWriter, r *http.Request) {
			if limited.Add(1) == 1 {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			w.WriteHeader(http.StatusOK)
		},
	})
	res, err := live.Run(context.Background(), config(api, schools))
	require.NoError(t, err)
	assert.Equal(t, int64(2), limited.Load(), "asked again after Retry-After")
	assert.Equal(t, 5, res.Swipes)
}

func TestRunStopsAtAnUnexpectedAnswer(t *testing.T) {
	schools := catalog.Generate(200, 2)
	cases := map[string]struct {
		override map[string]http.HandlerFunc
		want     string
	}{
		"refused onboarding": {map[string]http.HandlerFunc{"/v2/onboarding/minimal": func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"code":"UNAUTHORIZED"}}`, http.StatusUnauthorized)
		}}, "onboarding: POST /v2/onboarding/minimal: 401"},
		"empty feed": {map[string]http.HandlerFunc{"/continuous-feed": func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"recommendations":[]}`))
		}}, "served nothing after 0 swipes"},
		"miscounted swipe": {map[string]http.HandlerFunc{"/swipe": func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"swipe_count":7,"learning_phase":"discovery"}`))
		}}, "the service counted 7"},
		"unknown school": {map[string]http.HandlerFunc{"/continuous-feed": func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"recommendations":[{"school_id":"00000000-0000-0000-0000-000000000001"}]}`))
		}}, "not in the catalogue given"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := live.Run(context.Background(), config(fakeAPI(t, schools, tc.override), schools))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	_, err := live.Run(context.Background(), config("http://127.0.0.1:1", schools))
	assert.ErrorContains(t, err, "connection refused", "no service there")
	_, err = live.Run(context.Background(), live.Config{API: "http://127.0.0.1:1"})
	assert.ErrorContains(t, err, "required")
}
