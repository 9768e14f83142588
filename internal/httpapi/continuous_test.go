package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/httpapi"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/testutil"
)

// spyCarried passes the swipes a request carries on to the write side and
// keeps them, so a test sees what the handler asked to record.
type spyCarried struct {
	next  httpapi.CarriedSwipes
	mu    sync.Mutex
	calls []command.SwipeInput
}

func (s *spyCarried) RecordCarried(ctx context.Context, student string, in []command.SwipeInput) (command.Carried, error) {
	s.mu.Lock()
	for _, x := range in {
		x.StudentID = student
		s.calls = append(s.calls, x)
	}
	s.mu.Unlock()
	return s.next.RecordCarried(ctx, student, in)
}

func (s *spyCarried) recorded() []command.SwipeInput {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]command.SwipeInput(nil), s.calls...)
}

// withContinuous serves POST /continuous-feed over rdb with the given
// cooldown (FEED_COOLDOWN); spy, when not nil, sees the swipes carried.
func withContinuous(rdb redis.UniversalClient, cooldown time.Duration, spy *spyCarried) apiOption {
	return func(d *httpapi.Deps) {
		if spy != nil {
			spy.next = d.Carried
			d.Carried = spy
		}
		d.Continuous = query.NewContinuous(query.ContinuousConfig{Queries: d.Queries.(*query.Service),
			Store:  cache.NewCooldowns(cache.NewFeeds(rdb, 5*time.Minute), cooldown),
			Probes: cache.NewProbes(rdb, 5*time.Minute)})
	}
}

// feedIDs are the school ids of a continuous-feed answer.
func feedIDs(t *testing.T, res result) []string {
	t.Helper()
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	recs, _ := res.Body["recommendations"].([]any)
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.(map[string]any)["school_id"].(string)
	}
	return out
}

func nextAvailableAt(res result) string {
	m, _ := res.Body["metadata"].(map[string]any)
	s, _ := m["next_available_at"].(string)
	return s
}

func TestContinuousFeedRequests(t *testing.T) {
	rdb := testutil.NewRedis(t, testutil.RedisDBHTTPAPI)
	rec := &spyCarried{}
	api := newTestAPIOn(t, testutil.NewDB(t), rdb, withContinuous(rdb, 5*time.Minute, rec))
	schools := api.seedSchools(t, 60)
	student, tok := api.newStudent(t, completeProfile())
	school := schools[3].ID
	cf := func(body any, headers ...map[string]string) result {
		h := map[string]string{}
		if len(headers) > 0 {
			h = headers[0]
		}
		return api.doHeaders(t, "POST", "/continuous-feed", tok, h, body)
	}
	body := func(kv ...any) map[string]any {
		b := map[string]any{"student_id": student}
		for i := 0; i < len(kv); i += 2 {
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	swipe := func(kv ...any) map[string]any {
		s := map[string]any{"school_id": school, "direction": "left"}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(s, kv[i].(string))
				continue
			}
			s[kv[i].(string)] = kv[i+1]
		}
		return s
	}
	many := make([]any, 51)
	for i := range many {
		many[i] = swipe()
	}

	t.Run("400 names the field", func(t *testing.T) {
		for _, c := range []struct {
			body    any
			headers map[string]string
			field   string
		}{
			{body("limit", 0), nil, "limit"},
			{body("limit", 51), nil, "limit"},
			{body("limit", "5"), nil, "limit"},
			{body("limit", 2.5), nil, "limit"},
			{body("swipes", "x"), nil, "swipes"},
			{body("swipes", nil), nil, "swipes"},
			{body("swipes", many), nil, "swipes"},
			{body("swipes", []any{swipe(), 5}), nil, "swipes[1]"},
			{body("swipes", []any{swipe(), swipe("direction", "up")}), nil, "swipes[1].direction"},
			{body("swipes", []any{swipe("direction", nil)}), nil, "swipes[0].direction"},
			{body("swipes", []any{swipe("school_id", nil)}), nil, "swipes[0].school_id"},
			{body("swipes", []any{swipe("school_id", "school-3")}), nil, "swipes[0].school_id"},
			{body("swipes", []any{swipe("foo", 1)}), nil, "swipes[0].foo"},
			{body("swipes", []any{swipe("time_spent", -1)}), nil, "swipes[0].time_spent"},
			{body("swipes", []any{swipe("time_spent", 86401)}), nil, "swipes[0].time_spent"},
			{body("swipes", []any{swipe("time_spent", "2")}), nil, "swipes[0].time_spent"},
			{body("swipes", []any{swipe("interaction_type", "like")}), nil, "swipes[0].interaction_type"},
			{body("swipes", []any{swipe("swipe_id", "x")}), nil, "swipes[0].swipe_id"},
			{body("swipes", []any{swipe()}), map[string]string{"Idempotency-Key": "a b"}, "Idempotency-Key"},
			{body("offset", 1), nil, "offset"},
			{map[string]any{"limit": 5}, nil, "student_id"},
		} {
			res := cf(c.body, c.headers)
			require.Equal(t, http.StatusBadRequest, res.Status, "%v: %s", c.body, res.Raw)
			assert.Equal(t, domain.CodeInvalidRequest, res.errorCode())
			assert.Contains(t, res.errorFields(), c.field, "%s", res.Raw)
		}
		assert.Empty(t, rec.recorded(), "a request with a bad swipe records none")
	})

	t.Run("404", func(t *testing.T) {
		res := cf(body("swipes", []any{swipe(), swipe("school_id", uuid.NewString())}))
		require.Equal(t, http.StatusNotFound, res.Status, "%s", res.Raw)
		assert.Equal(t, domain.CodeInvalidSchoolID, res.errorCode())
		details := res.Body["error"].(map[string]any)["details"].(map[string]any)
		assert.Equal(t, "swipes[1].school_id", details["field"])
		assert.EqualValues(t, 0, details["swipes_recorded"])
		assert.Zero(t, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1`, student),
			"nothing is recorded when a school is unknown")
		rec.mu.Lock()
		rec.calls = nil
		rec.mu.Unlock()

		other := uuid.NewString()
		res = api.do(t, "POST", "/continuous-feed", token(t, other, false), map[string]any{"student_id": other})
		require.Equal(t, http.StatusNotFound, res.Status, "%s", res.Raw)
		assert.Equal(t, domain.CodeInvalidStudentID, res.errorCode())
	})

	t.Run("403 for another student", func(t *testing.T) {
		res := api.do(t, "POST", "/continuous-feed", token(t, "", false), body())
		assert.Equal(t, http.StatusForbidden, res.Status)
	})

	t.Run("200 records the swipes, then answers the envelope", func(t *testing.T) {
		res := cf(body())
		got := feedIDs(t, res)
		require.Len(t, got, query.DefaultContinuousLimit, "limit defaults to 10")
		assert.Equal(t, "60", res.Header.Get("X-RateLimit-Limit"), "counted in the recommendations group")
		assert.ElementsMatch(t, []string{"recommendations", "metadata", "learning_state", "total_swipes"}, keys(res.Body))
		meta := res.Body["metadata"].(map[string]any)
		assert.ElementsMatch(t, []string{"total_count", "learning_phase", "algorithm_version"}, keys(meta),
			"next_available_at only on a short page")
		item := res.Body["recommendations"].([]any)[0].(map[string]any)
		assert.ElementsMatch(t, []string{"school_id", "name", "match_score", "match_grade", "match_reasons", "components",
			"school", "explanations", "is_probe", "matched_majors", "distance", "admission_band"}, keys(item))

		swipeID := strings.ToUpper(uuid.NewString())
		res = cf(body("limit", 3, "swipes", []any{
			swipe("school_id", got[0], "direction", "right", "time_spent", 4.5, "swipe_id", swipeID),
			swipe("school_id", got[1], "interaction_type", "detail_view"),
			swipe("school_id", got[2]),
		}), map[string]string{"Idempotency-Key": "retry-1"})
		next := feedIDs(t, res)
		assert.Len(t, next, 3)
		assert.EqualValues(t, 2, res.Body["total_swipes"], "the counts after the swipes sent along")
		calls := rec.recorded()
		require.Len(t, calls, 3)
		spent := 4.5
		assert.Equal(t, command.SwipeInput{StudentID: student, SchoolID: got[0], Direction: "right", TimeSpent: &spent,
			ClientID: strings.ToLower(swipeID)}, calls[0], "recorded in order, as POST /swipe records them")
		assert.Equal(t, "detail_view", calls[1].InteractionType)
		assert.NotEmpty(t, calls[2].ClientID, "a swipe without swipe_id gets an id from the Idempotency-Key")
		assert.NotEqual(t, calls[1].ClientID, calls[2].ClientID)
		for _, id := range next {
			assert.NotContains(t, got, id, "the first page is cooling down")
		}

		// The same request again (a retry) gives each swipe the same id.
		cf(body("limit", 3, "swipes", []any{
			swipe("school_id", got[0], "direction", "right", "time_spent", 4.5, "swipe_id", swipeID),
			swipe("school_id", got[1], "interaction_type", "detail_view"),
			swipe("school_id", got[2]),
		}), map[string]string{"Idempotency-Key": "retry-1"})
		again := rec.recorded()[3:]
		for i := range again {
			assert.Equal(t, calls[i].ClientID, again[i].ClientID, "swipe %d", i)
		}
	})

	t.Run("any existing student", func(t *testing.T) {
		partial, ptok := api.newStudent(t, map[string]any{"name": "P", "email": "p@example.com", "graduation_year": "2027"})
		res := api.do(t, "POST", "/continuous-feed", ptok, map[string]any{"student_id": partial, "limit": 5})
		assert.Len(t, feedIDs(t, res), 5, "served like POST /v2/recommendations, never 422")
	})
}

// The cooldown on real time: FEED_COOLDOWN of two seconds, swipes recorded
// by the swipe command of POST /swipe.
func TestContinuousFeedCooldownOnRealTime(t *testing.T) {
	const cooldown = 2 * time.Second
	rdb := testutil.NewRedis(t, testutil.RedisDBHTTPAPI)
	api := newTestAPIOn(t, testutil.NewDB(t), rdb, withContinuous(rdb, cooldown, nil))
	api.seedSchools(t, 25)
	student, tok := api.newStudent(t, completeProfile())
	cf := func(b map[string]any) result {
		b["student_id"] = student
		return api.do(t, "POST", "/continuous-feed", tok, b)
	}
	// order is the student's whole list now, as POST /v2/recommendations
	// pages it (it starts no cooldown), without the schools swiped.
	swiped := map[string]bool{}
	order := func() []string {
		res := api.do(t, "POST", "/v2/recommendations", tok, map[string]any{"student_id": student, "limit": 100})
		var out []string
		for _, id := range feedIDs(t, res) {
			if !swiped[id] {
				out = append(out, id)
			}
		}
		return out
	}
	all := order()
	require.Len(t, all, 25)

	start := time.Now()
	first := feedIDs(t, cf(map[string]any{}))
	require.Equal(t, all[:10], first)
	// Two of the first page are swiped: they never come back. The feed is
	// rebuilt after the swipes; the next items are its best ones not cooling down.
	second := cf(map[string]any{"swipes": []any{
		map[string]any{"school_id": first[0], "direction": "right"},
		map[string]any{"school_id": first[5], "direction": "left"},
	}})
	swiped[first[0]], swiped[first[5]] = true, true
	require.EqualValues(t, 2, second.Body["total_swipes"])
	shown := map[string]bool{}
	for _, id := range first {
		shown[id] = true
	}
	// The next items come from the feed over the schools neither swiped nor
	// cooling down; then the 5 left, a short page.
	for _, page := range []struct {
		res result
		n   int
	}{{second, 10}, {cf(map[string]any{}), 5}} {
		got := feedIDs(t, page.res)
		require.Len(t, got, page.n)
		for _, id := range got {
			require.False(t, shown[id], "%s is cooling down or swiped", id)
			shown[id] = true
		}
	}
	require.Len(t, shown, 25)
	third := cf(map[string]any{"limit": 1})
	require.Empty(t, feedIDs(t, third), "every unswiped school is cooling down")
	next := nextAvailableAt(third)
	require.NotEmpty(t, next)
	empty := cf(map[string]any{})
	if time.Since(start) < cooldown {
		require.Empty(t, feedIDs(t, empty), "nothing is free before the cooldown ends")
		require.Equal(t, next, nextAvailableAt(empty))
	}
	at, err := time.Parse(time.RFC3339, next)
	require.NoError(t, err)
	assert.WithinDuration(t, start.Add(cooldown), at, time.Second+200*time.Millisecond,
		"the first page's cooldown ends then (rounded up to the second)")
	assert.Equal(t, time.UTC, at.Location())

	// At next_available_at the first page's unswiped schools are free again.
	time.Sleep(time.Until(at))
	back := feedIDs(t, cf(map[string]any{"limit": 8}))
	require.Len(t, back, 8)
	for _, id := range back {
		assert.False(t, swiped[id], "a swiped school never comes back")
	}
	// Once every cooldown has ended, the best matches come back first,
	// ranked as if never shown.
	time.Sleep(cooldown + 100*time.Millisecond)
	again := feedIDs(t, cf(map[string]any{"limit": 12}))
	require.Equal(t, order()[:12], again)
}

// The swipes sent along go through the same command as POST /swipe: the
// same rows, counts, events and idempotency, and the counts in the answer
// are the ones after them. Probes served here are probes to a later swipe.
func TestContinuousFeedRecordsSwipesAsPostSwipe(t *testing.T) {
	api := newTestAPI(t) // the continuous feed records with the real swipe command
	schools := api.seedSchools(t, 80)
	id, tok := api.newStudent(t, completeProfile())
	ref, rtok := api.newStudent(t, completeProfile())
	cf := func(b map[string]any) result {
		b["student_id"] = id
		return api.do(t, "POST", "/continuous-feed", tok, b)
	}
	first := feedIDs(t, cf(map[string]any{"limit": 5}))

	// Three swipes sent along; the same three through POST /swipe for another student.
	sent := []map[string]any{
		{"school_id": first[0], "direction": "right", "time_spent": 2.5, "swipe_id": uuid.NewString()},
		{"school_id": first[1], "direction": "left", "interaction_type": "tap"},
		{"school_id": first[2], "direction": "left", "swipe_id": uuid.NewString()},
	}
	swipes := make([]any, len(sent))
	for i, s := range sent {
		swipes[i] = s
	}
	res := cf(map[string]any{"limit": 5, "swipes": swipes})
	page := feedIDs(t, res)
	for i, s := range sent {
		b := map[string]any{"student_id": ref}
		for k, v := range s {
			if k != "swipe_id" {
				b[k] = v
			}
		}
		if i != 1 {
			b["swipe_id"] = uuid.NewString()
		}
		api.swipe(t, rtok, b)
	}
	assert.EqualValues(t, 2, res.Body["total_swipes"], "the exact count after the swipes; a tap is not counted")
	assert.Equal(t, "discovery", res.Body["learning_state"].(map[string]any)["phase"])
	rows := `SELECT count(*) FROM swipes WHERE student_id = $1`
	counted := `SELECT count(*) FROM swipes WHERE student_id = $1 AND counted`
	events := `SELECT count(*) FROM outbox WHERE student_id = $1 AND topic = 'swipe.recorded'`
	for _, q := range []string{rows, counted, events, `SELECT swipe_count FROM students WHERE id = $1`} {
		assert.Equal(t, api.count(t, q, ref), api.count(t, q, id), "as POST /swipe records them: %s", q)
	}
	assert.Equal(t, 3, api.count(t, rows, id))
	assert.Equal(t, 2, api.count(t, counted, id))
	assert.Equal(t, 1, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1 AND time_spent = 2.5`, id))
	assert.NotContains(t, page, first[0])
	assert.NotContains(t, page, first[2])

	// A retry with the same swipe_ids stores nothing twice.
	res = cf(map[string]any{"limit": 5, "swipes": []any{sent[0], sent[2]}})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.Equal(t, 3, api.count(t, rows, id))
	assert.EqualValues(t, 2, res.Body["total_swipes"])

	// Nine more in one request: 11 counted swipes, refinement, before the items are chosen.
	var nine []any
	for _, s := range schools[40:49] {
		nine = append(nine, map[string]any{"school_id": s.ID, "direction": "right"})
	}
	res = cf(map[string]any{"limit": 50, "swipes": nine})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	assert.EqualValues(t, 11, res.Body["total_swipes"])
	assert.Equal(t, "refinement", res.Body["metadata"].(map[string]any)["learning_phase"])
	swiped := map[string]bool{first[0]: true, first[2]: true}
	for _, s := range schools[40:49] {
		swiped[s.ID] = true
	}
	for _, sid := range feedIDs(t, res) {
		assert.False(t, swiped[sid], "a swiped school is never served")
	}

	// Probes: flag items of the stored feed as probes, serve them, swipe one.
	ctx := context.Background()
	feeds := cache.NewFeeds(api.Redis, 5*time.Minute)
	_ = api.do(t, "POST", "/v2/recommendations", tok, map[string]any{"student_id": id, "limit": 1}) // stores the feed
	f, err := feeds.Feed(ctx, id)
	require.NoError(t, err)
	f.Items = f.Range(0, f.Len())
	for i := range f.Items {
		f.Items[i].Probe = i%4 == 3
	}
	_, err = feeds.Put(ctx, f)
	require.NoError(t, err)
	require.NoError(t, api.Redis.Del(ctx, cache.ShownKey(id)).Err()) // everything may be served again
	res = cf(map[string]any{"limit": 8})
	memory := cache.NewProbes(api.Redis, 5*time.Minute)
	var probe, plain string
	for _, r := range res.Body["recommendations"].([]any) {
		item := r.(map[string]any)
		sid := item["school_id"].(string)
		was, err := memory.WasProbe(ctx, id, sid)
		require.NoError(t, err)
		switch {
		case item["is_probe"] == true:
			assert.True(t, was, "a probe served is remembered as one")
			if probe == "" {
				probe = sid
			}
		case plain == "" && !was: // not served as a probe by any endpoint
			plain = sid
		}
	}
	require.NotEmpty(t, probe, "the feed's probe flags are served: %s", res.Raw)
	body := api.swipe(t, tok, map[string]any{"student_id": id, "school_id": probe, "direction": "left"})
	assert.Equal(t, true, body["trigger_feedback"], "a swipe on a probe served by the continuous feed asks for feedback")
	assert.Equal(t, 1, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1 AND school_id = $2 AND is_probe`, id, probe))
	require.NotEmpty(t, plain)
	api.swipe(t, tok, map[string]any{"student_id": id, "school_id": plain, "direction": "left"})
	assert.Equal(t, 0, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1 AND school_id = $2 AND is_probe`, id, plain))
}

// A client that swipes every item it is shown and sends the swipes along
// gets a probe at every 4th swipe: the item at 1-based position p of each
// answer is a probe exactly when total_swipes + p is a multiple of 4, and a
// swipe on it is a probe swipe.
func TestContinuousFeedProbesAtEveryFourthSwipe(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 400)
	id, tok := api.newStudent(t, completeProfile())
	var swipes []any
	probes, swipedProbes := 0, 0
	for page := range 5 {
		body := map[string]any{"student_id": id, "limit": 7}
		if swipes != nil {
			body["swipes"] = swipes
		}
		res := api.do(t, "POST", "/continuous-feed", tok, body)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		total := int(res.Body["total_swipes"].(float64))
		require.Equal(t, page*7, total)
		swipes = nil
		for i, r := range res.Body["recommendations"].([]any) {
			item := r.(map[string]any)
			p := i + 1
			assert.Equal(t, (total+p)%4 == 0, item["is_probe"], "page %d position %d (total_swipes %d)", page, p, total)
			if item["is_probe"] == true {
				probes++
				if page < 4 {
					swipedProbes++
				}
			}
			swipes = append(swipes, map[string]any{"school_id": item["school_id"], "direction": []string{"left", "right"}[i%2]})
		}
	}
	assert.Equal(t, 35/4, probes, "one item in four")
	assert.Equal(t, swipedProbes, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1 AND is_probe`, id),
		"every probe swiped was recorded as a probe swipe (the last page is not swiped)")

	// A client that swipes nothing pages on through schools not shown yet,
	// and each answer keeps the rule: positions count within the answer.
	other, otok := api.newStudent(t, completeProfile())
	seen := map[string]bool{}
	for page := range 4 {
		res := api.do(t, "POST", "/continuous-feed", otok, map[string]any{"student_id": other, "limit": 6})
		for i, r := range res.Body["recommendations"].([]any) {
			item := r.(map[string]any)
			assert.Equal(t, (i+1)%4 == 0, item["is_probe"], "page %d position %d", page, i+1)
			assert.False(t, seen[item["school_id"].(string)], "cooling down")
			seen[item["school_id"].(string)] = true
		}
	}
	assert.Len(t, seen, 24)
}
