package httpapi_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/catalog"
	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/httpapi"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/testutil"
)

// syncChanges makes n changes on schools: every 4th is feedback, every 7th
// a tap, the rest counted swipes; occurred_at one second apart, in the past.
func syncChanges(schools []domain.School, n int) []map[string]any {
	base := time.Now().Add(-2 * time.Hour).UTC()
	out := make([]map[string]any, n)
	for i := range out {
		c := map[string]any{"id": uuid.NewString(), "school_id": schools[i%len(schools)].ID,
			"occurred_at": base.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano)}
		switch {
		case i%4 == 3:
			c["type"], c["reason"] = "feedback", "too_expensive"
		case i%7 == 6:
			c["type"], c["direction"], c["interaction_type"] = "swipe", "right", "tap"
		default:
			c["type"], c["direction"], c["time_spent"] = "swipe", []string{"left", "right"}[i%2], 1.5
		}
		out[i] = c
	}
	return out
}

func counted(changes []map[string]any) int {
	n := 0
	for _, c := range changes {
		if c["type"] == "swipe" && c["interaction_type"] == nil {
			n++
		}
	}
	return n
}

func ids(changes []map[string]any) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c["id"].(string)
	}
	return out
}

func strs(v any) []string {
	out := []string{}
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func (a *testAPI) push(t testing.TB, tok, student string, changes []map[string]any) map[string]any {
	t.Helper()
	res := a.do(t, "POST", "/m/sync/push", tok, map[string]any{"student_id": student, "changes": changes})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	return res.Body
}

func (a *testAPI) pull(t testing.TB, tok, student string, cursor any) map[string]any {
	t.Helper()
	body := map[string]any{"student_id": student}
	if cursor != nil {
		body["cursor"] = cursor
	}
	res := a.do(t, "POST", "/m/sync/pull", tok, body)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	return res.Body
}

// pulledIDs are the client ids of the swipes and feedback of a pull.
func pulledIDs(body map[string]any) []string {
	out := []string{}
	for _, list := range []string{"swipes", "feedback"} {
		for _, x := range body[list].([]any) {
			if id, ok := x.(map[string]any)["id"].(string); ok {
				out = append(out, id)
			}
		}
	}
	return out
}

// newSyncAPI is a test API over n generated schools whose sync service
// waits at most wait for writes in progress.
func newSyncAPI(t *testing.T, wait time.Duration, n int) (*testAPI, []domain.School) {
	t.Helper()
	ctx := context.Background()
	pool, rdb := testutil.NewDB(t), testutil.NewRedis(t, testutil.RedisDBHTTPAPI)
	db := store.New(pool)
	schools := catalog.Generate(n, 7)
	_, err := db.UpsertSchools(ctx, schools)
	require.NoError(t, err)
	log := testutil.Logger(t)
	qm := query.NewMetrics(prometheus.NewRegistry())
	holder := active.NewHolder(db, log, nil, time.Hour)
	require.NoError(t, holder.Load(ctx))
	feeds := cache.NewFeeds(rdb, 5*time.Minute)
	queries := query.New(query.Config{Students: db, Feeds: feeds, Catalogs: holder, Log: log, Metrics: qm})
	push := command.NewSync(command.SyncConfig{Store: db, Redis: cache.NewSwipeTrips(feeds, handover.NewQueuer()),
		Catalogs: holder, Log: log, MaxWait: wait})
	pull := query.NewSync(queries, db, 0, wait)
	return newTestAPIOn(t, pool, rdb, func(d *httpapi.Deps) { d.SyncPush, d.SyncPull = push, pull }), schools
}

func TestSyncPushReplayedInShuffledBatchesStoresEachOnce(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 60)
	student, tok := api.newStudent(t, completeProfile())
	changes := syncChanges(schools[:25], 60)
	rng := rand.New(rand.NewPCG(1, 2))

	accepted := map[string]int{}
	for round := range 3 {
		shuffled := slices.Clone(changes)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		cut1, cut2 := 5+rng.IntN(20), 30+rng.IntN(20)
		for _, batch := range [][]map[string]any{shuffled[:cut1], shuffled[cut1:cut2], shuffled[cut2:]} {
			body := api.push(t, tok, student, batch)
			require.Empty(t, body["rejected"], "round %d", round)
			for _, id := range strs(body["accepted"]) {
				accepted[id]++
			}
			if round > 0 {
				require.Empty(t, body["accepted"], "a replay stores nothing")
				require.ElementsMatch(t, ids(batch), strs(body["duplicates"]))
			}
		}
	}
	require.Len(t, accepted, len(changes))
	for id, n := range accepted {
		require.Equal(t, 1, n, "change %s accepted once", id)
	}
	swipes := api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1`, student)
	feedback := api.count(t, `SELECT count(*) FROM feedback WHERE student_id = $1`, student)
	assert.Equal(t, 45, swipes)
	assert.Equal(t, 15, feedback)
	assert.Equal(t, counted(changes), api.count(t, `SELECT swipe_count FROM students WHERE id = $1`, student))
	assert.Equal(t, counted(changes), api.count(t,
		`SELECT count(*) FROM outbox WHERE topic = 'swipe.recorded' AND student_id = $1`, student), "one webhook event per counted swipe")
	assert.Equal(t, counted(changes), api.count(t, `SELECT count(*) FROM outbox WHERE published_at IS NULL`),
		"every event waits for the worker's relay")

	// occurred_at is kept.
	first := changes[0]
	var occurred time.Time
	require.NoError(t, api.Pool.QueryRow(context.Background(), `SELECT occurred_at FROM swipes WHERE student_id = $1 AND client_id = $2`,
		student, first["id"]).Scan(&occurred))
	want, _ := time.Parse(time.RFC3339Nano, first["occurred_at"].(string))
	assert.True(t, want.Truncate(time.Microsecond).Equal(occurred), "occurred_at kept: %v vs %v", want, occurred)
}

func TestSyncConcurrentPushesOfOverlappingChangesStoreEachOnce(t *testing.T) {
	// 360 changes pushed, each a unit of the swipes allowance: more than a
	// minute's.
	api := newTestAPI(t, withWideSwipeAllowance(t))
	schools := api.seedSchools(t, 60)
	student, tok := api.newStudent(t, completeProfile())
	changes := syncChanges(schools[:30], 90)
	a, b := changes[:60], changes[30:]
	for attempt := range 3 {
		if attempt > 0 {
			changes = syncChanges(schools[:30], 90)
			a, b = changes[:60], changes[30:]
		}
		var wg sync.WaitGroup
		results := make([]map[string]any, 2)
		for i, batch := range [][]map[string]any{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := api.do(t, "POST", "/m/sync/push", tok, map[string]any{"student_id": student, "changes": batch})
				assert.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
				results[i] = res.Body
			}()
		}
		wg.Wait()
		all := append(strs(results[0]["accepted"]), strs(results[1]["accepted"])...)
		require.ElementsMatch(t, ids(changes), all, "each change accepted by exactly one push")
		dups := append(strs(results[0]["duplicates"]), strs(results[1]["duplicates"])...)
		require.ElementsMatch(t, ids(changes[30:60]), dups, "the overlap is a duplicate in the other push")
	}
	assert.Equal(t, 3*90, api.count(t, `SELECT (SELECT count(*) FROM swipes WHERE student_id = $1) + (SELECT count(*) FROM feedback WHERE student_id = $1)`, student))
	assert.Equal(t, 3*counted(changes), api.count(t, `SELECT swipe_count FROM students WHERE id = $1`, student))
}

func TestSyncPushBatchLimitsAndRejections(t *testing.T) {
	api := newTestAPI(t, withWideSwipeAllowance(t)) // more swipes than a minute's allowance
	schools := api.seedSchools(t, 30)
	student, tok := api.newStudent(t, completeProfile())

	over := syncChanges(schools, 501)
	res := api.do(t, "POST", "/m/sync/push", tok, map[string]any{"student_id": student, "changes": over})
	require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Raw)
	require.Equal(t, "INVALID_REQUEST", res.errorCode())
	require.Contains(t, res.errorFields(), "changes")
	require.Zero(t, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1`, student), "nothing of a refused batch is stored")
	require.Equal(t, http.StatusOK, api.do(t, "POST", "/m/sync/push", tok,
		map[string]any{"student_id": student, "changes": over[:500]}).Status, "500 is allowed")

	for _, body := range []string{`{"student_id": "` + student + `", "changes": [`, `not json`,
		`{"student_id": "` + student + `"}`, `{"student_id": "` + student + `", "changes": {}}`,
		`{"student_id": "` + student + `", "changes": [], "extra": 1}`} {
		res := api.do(t, "POST", "/m/sync/push", tok, body)
		require.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", body, res.Raw)
		require.Equal(t, "INVALID_REQUEST", res.errorCode())
	}
	res = api.do(t, "POST", "/m/sync/push", token(t, uuid.NewString(), true),
		map[string]any{"student_id": uuid.NewString(), "changes": []any{}})
	require.Equal(t, http.StatusNotFound, res.Status, "%s", res.Raw)
	require.Equal(t, "INVALID_STUDENT_ID", res.errorCode())

	now := time.Now().UTC()
	ok := func(mod func(c map[string]any)) map[string]any {
		c := map[string]any{"id": uuid.NewString(), "type": "swipe", "school_id": schools[0].ID, "direction": "right",
			"occurred_at": now.Add(-time.Minute).Format(time.RFC3339)}
		mod(c)
		return c
	}
	stored := ok(func(map[string]any) {})
	api.push(t, tok, student, []map[string]any{stored})
	cases := map[string]map[string]any{
		"id":               ok(func(c map[string]any) { c["id"] = "not-a-uuid" }),
		"unknown school":   ok(func(c map[string]any) { c["school_id"] = uuid.NewString() }),
		"future":           ok(func(c map[string]any) { c["occurred_at"] = now.Add(time.Hour).Format(time.RFC3339) }),
		"too old":          ok(func(c map[string]any) { c["occurred_at"] = now.Add(-100 * 24 * time.Hour).Format(time.RFC3339) }),
		"not RFC 3339":     ok(func(c map[string]any) { c["occurred_at"] = "yesterday" }),
		"no occurred_at":   ok(func(c map[string]any) { delete(c, "occurred_at") }),
		"no direction":     ok(func(c map[string]any) { delete(c, "direction") }),
		"reason on swipe":  ok(func(c map[string]any) { c["reason"] = "too_expensive" }),
		"bad type":         ok(func(c map[string]any) { c["type"] = "like" }),
		"wrong JSON type":  ok(func(c map[string]any) { c["time_spent"] = "long" }),
		"unknown field":    ok(func(c map[string]any) { c["mood"] = "happy" }),
		"feedback reason":  ok(func(c map[string]any) { c["type"], c["direction"], c["reason"] = "feedback", nil, "meh" }),
		"reused id":        ok(func(c map[string]any) { c["id"], c["direction"] = stored["id"], "left" }),
		"bad interaction":  ok(func(c map[string]any) { c["interaction_type"] = "stare" }),
		"negative seconds": ok(func(c map[string]any) { c["time_spent"] = -1 }),
	}
	good := ok(func(c map[string]any) { c["school_id"] = schools[1].ID })
	batch := []map[string]any{good}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range cases {
			if !yield(k) {
				return
			}
		}
	}) {
		batch = append(batch, cases[name])
	}
	body := api.push(t, tok, student, batch)
	require.Equal(t, []string{good["id"].(string)}, strs(body["accepted"]))
	require.Empty(t, body["duplicates"])
	rejected := map[string]string{}
	for _, r := range body["rejected"].([]any) {
		m := r.(map[string]any)
		rejected[m["id"].(string)] = m["error"].(string)
	}
	require.Len(t, rejected, len(cases), "%v", rejected)
	for name, c := range cases {
		assert.NotEmpty(t, rejected[c["id"].(string)], name)
	}
	assert.Contains(t, rejected[cases["reused id"]["id"].(string)], "already used")
	assert.Contains(t, rejected[cases["future"]["id"].(string)], "future")
}

func TestSyncPushCountsTowardPhaseAndHandsOverOneLearnTask(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 60)
	student, tok := api.newStudent(t, completeProfile())
	changes := syncChanges(schools, 24) // 15 counted swipes, 3 taps, 6 feedback
	require.Equal(t, 15, counted(changes))
	body := api.push(t, tok, student, changes)
	require.Len(t, strs(body["accepted"]), 24)
	assert.EqualValues(t, 15, body["swipe_count"])
	assert.Equal(t, "refinement", body["learning_phase"])
	require.NotNil(t, body["cursor"])

	pulled := api.pull(t, tok, student, nil)
	ls := pulled["learning_state"].(map[string]any)
	assert.EqualValues(t, 15, ls["swipe_count"])
	assert.Equal(t, "refinement", ls["phase"])
	assert.InDelta(t, 15.0/31, ls["progress"], 1e-4)

	// One hand-over for the whole push: the student marked for their
	// shard's learn drain under the version it left, one drain task queued.
	var version int64
	require.NoError(t, api.Pool.QueryRow(context.Background(),
		`SELECT version FROM students WHERE id = $1`, student).Scan(&version))
	pendingKey, _ := tasks.LearnDrainKeys(student)
	score, err := api.Redis.ZScore(context.Background(), pendingKey, student).Result()
	require.NoError(t, err)
	assert.EqualValues(t, version, score)
	insp := asynq.NewInspectorFromRedisClient(api.Redis)
	pending, err := insp.ListPendingTasks(tasks.QueueCritical, asynq.PageSize(1000))
	require.NoError(t, err)
	var learn []string
	for _, ti := range pending {
		if ti.Type == tasks.TypeStudentLearn || ti.Type == tasks.TypeLearnDrain {
			learn = append(learn, ti.Type)
		}
	}
	assert.Equal(t, []string{tasks.TypeLearnDrain}, learn)

	// POST /swipe with a pushed change id is a retry of it.
	retry := api.do(t, "POST", "/swipe", tok, map[string]any{"student_id": student, "school_id": changes[0]["school_id"],
		"direction": changes[0]["direction"], "swipe_id": changes[0]["id"]})
	require.Equal(t, http.StatusOK, retry.Status, "%s", retry.Raw)
	assert.EqualValues(t, 1, retry.Body["swipe_count"], "the first answer: the first swipe of the push")
	assert.Equal(t, 15, api.count(t, `SELECT swipe_count FROM students WHERE id = $1`, student))
}

func TestSyncPullReturnsExactlyWhatChanged(t *testing.T) {
	api := newTestAPI(t, withWideSwipeAllowance(t)) // more swipes than a minute's allowance
	schools := api.seedSchools(t, 200)
	student, tok := api.newStudent(t, completeProfile())
	other, otherTok := api.newStudent(t, completeProfile())

	// A live swipe and feedback before any sync.
	api.swipe(t, tok, map[string]any{"student_id": student, "school_id": schools[0].ID, "direction": "right"})
	first := api.pull(t, tok, student, nil)
	require.Len(t, first["swipes"], 1, "a pull without a cursor returns everything")
	sw := first["swipes"].([]any)[0].(map[string]any)
	assert.Nil(t, sw["id"], "a swipe sent without an id")
	assert.Len(t, first["r"], 20)
	assert.Equal(t, false, first["has_more"])
	var schoolIDs []string
	for _, s := range first["schools"].([]any) {
		schoolIDs = append(schoolIDs, s.(map[string]any)["i"].(string))
	}
	assert.Contains(t, schoolIDs, schools[0].ID, "the swiped school's record")
	cursor := first["cursor"].(string)

	again := api.pull(t, tok, student, cursor)
	assert.Empty(t, again["swipes"])
	assert.Empty(t, again["feedback"])
	assert.Empty(t, again["schools"], "nothing changed")
	assert.Len(t, again["r"], 20, "r is always the current page")
	assert.EqualValues(t, 1, again["learning_state"].(map[string]any)["swipe_count"])

	changes := syncChanges(schools[10:40], 30)
	api.push(t, tok, student, changes)
	api.push(t, otherTok, other, syncChanges(schools[50:60], 10)) // another student's changes never show
	next := api.pull(t, tok, student, again["cursor"])
	assert.ElementsMatch(t, ids(changes), pulledIDs(next), "exactly the new changes")
	for _, x := range next["swipes"].([]any) {
		m := x.(map[string]any)
		assert.NotEmpty(t, m["occurred_at"])
		assert.NotEmpty(t, m["recorded_at"])
	}
	empty := api.pull(t, tok, student, next["cursor"])
	assert.Empty(t, pulledIDs(empty), "nothing old again")
	assert.Equal(t, next["cursor"], api.pull(t, tok, student, empty["cursor"])["cursor"], "the cursor stays while nothing changes")

	// A school's data changes: it comes once, to a student who swiped it.
	_, err := api.Pool.Exec(context.Background(), `UPDATE schools SET name = name || ' (renamed)' WHERE id = $1`, changes[0]["school_id"])
	require.NoError(t, err)
	renamed := api.pull(t, tok, student, empty["cursor"])
	require.Len(t, renamed["schools"], 1)
	assert.True(t, strings.HasSuffix(renamed["schools"].([]any)[0].(map[string]any)["n"].(string), "(renamed)"),
		"records come from the database, not the catalogue in memory")
	assert.Empty(t, api.pull(t, otherTok, other, api.pull(t, otherTok, other, nil)["cursor"])["schools"])
	_, err = api.Pool.Exec(context.Background(), `UPDATE schools SET active = false WHERE id = $1`, changes[1]["school_id"])
	require.NoError(t, err)
	gone := api.pull(t, tok, student, renamed["cursor"])
	assert.Equal(t, []string{changes[1]["school_id"].(string)}, strs(gone["inactive_schools"]))

	// A pull of many changes comes in pages of at most 1000.
	var pushed []string
	for _, n := range []int{500, 500, 30} {
		pushed = append(pushed, strs(api.push(t, tok, student, syncChanges(schools, n))["accepted"])...)
	}
	require.Greater(t, len(pushed), 1000)
	p1 := api.pull(t, tok, student, gone["cursor"])
	assert.Len(t, pulledIDs(p1), 1000)
	assert.Equal(t, true, p1["has_more"])
	p2 := api.pull(t, tok, student, p1["cursor"])
	assert.Equal(t, false, p2["has_more"])
	assert.ElementsMatch(t, pushed, append(pulledIDs(p1), pulledIDs(p2)...), "pages tile the changes")
}

func TestSyncPullRefusesForeignAndForgedCursors(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 30)
	student, tok := api.newStudent(t, completeProfile())
	other, otherTok := api.newStudent(t, completeProfile())
	mine := api.pull(t, tok, student, nil)["cursor"].(string)
	theirs := api.pull(t, otherTok, other, nil)["cursor"].(string)

	flip := []byte(mine)
	if flip[3] == 'A' {
		flip[3] = 'B'
	} else {
		flip[3] = 'A'
	}
	for name, c := range map[string]any{"another student's": theirs, "tampered": string(flip), "garbled": "abc!",
		"truncated": mine[:len(mine)-2], "not a string": 42, "random": "AQAAAAAAAAAA" + strings.Repeat("x", 22)} {
		res := api.do(t, "POST", "/m/sync/pull", tok, map[string]any{"student_id": student, "cursor": c})
		require.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", name, res.Raw)
		require.Equal(t, "INVALID_REQUEST", res.errorCode(), name)
		require.Contains(t, res.errorFields(), "cursor", name)
	}
	// A service token acting for the student may use the student's cursor.
	res := api.do(t, "POST", "/m/sync/pull", token(t, "", true), map[string]any{"student_id": student, "cursor": mine})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	// The other student's token cannot pull for this student at all.
	res = api.do(t, "POST", "/m/sync/pull", otherTok, map[string]any{"student_id": student, "cursor": theirs})
	require.Equal(t, http.StatusForbidden, res.Status)
}

// A change_seq value taken by a transaction that commits after a later one
// is never skipped: the cursor does not move past it while it is in flight.
func TestSyncPullNeverSkipsAChangeCommittedOutOfOrder(t *testing.T) {
	api, schools := newSyncAPI(t, 300*time.Millisecond, 40)
	student, tok := api.newStudent(t, completeProfile())
	swiped := syncChanges(schools[:5], 5)
	api.push(t, tok, student, swiped[:1])
	start := api.pull(t, tok, student, nil)
	ctx := context.Background()

	// An import in flight takes a value now (a swiped school's row)...
	tx, err := api.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	var early int64
	require.NoError(t, tx.QueryRow(ctx, `UPDATE schools SET name = name || ' (2026)' WHERE id = $1 RETURNING change_seq`,
		swiped[0]["school_id"]).Scan(&early))
	// ...then a push takes later values and commits first.
	api.push(t, tok, student, swiped[1:3])
	var later int64
	require.NoError(t, api.Pool.QueryRow(ctx, `SELECT max(change_seq) FROM swipes WHERE student_id = $1`, student).Scan(&later))
	require.Less(t, early, later, "the values were taken in this order")

	blocked := api.pull(t, tok, student, start["cursor"])
	assert.Empty(t, pulledIDs(blocked), "nothing is handed out past a value still in flight")
	assert.Equal(t, true, blocked["has_more"])
	assert.Equal(t, start["cursor"], blocked["cursor"], "the cursor stays")

	require.NoError(t, tx.Commit(ctx))
	after := api.pull(t, tok, student, blocked["cursor"])
	assert.ElementsMatch(t, ids(swiped[1:3]), pulledIDs(after))
	require.Len(t, after["schools"], 1, "the change that committed last is there too")
	assert.Equal(t, swiped[0]["school_id"], after["schools"].([]any)[0].(map[string]any)["i"])
	assert.Empty(t, pulledIDs(api.pull(t, tok, student, after["cursor"])))

	// A write that ends while the pull waits is waited for.
	tx2, err := api.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx2.Exec(ctx, `UPDATE schools SET name = name || '!' WHERE id = $1`, swiped[1]["school_id"])
	require.NoError(t, err)
	api.push(t, tok, student, swiped[3:])
	committed := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		committed <- tx2.Commit(ctx)
	}()
	waited := api.pull(t, tok, student, after["cursor"])
	require.NoError(t, <-committed)
	assert.ElementsMatch(t, ids(swiped[3:]), pulledIDs(waited))
	assert.Len(t, waited["schools"], 1)
	assert.Equal(t, false, waited["has_more"])
}

func TestSyncPushAndPullForAnErasedOrUnknownStudent(t *testing.T) {
	api := newTestAPI(t)
	api.seedSchools(t, 10)
	unknown := uuid.NewString()
	res := api.do(t, "POST", "/m/sync/pull", token(t, unknown, false), map[string]any{"student_id": unknown})
	require.Equal(t, http.StatusNotFound, res.Status, "%s", res.Raw)
	require.Equal(t, "INVALID_STUDENT_ID", res.errorCode())
	res = api.do(t, "POST", "/m/sync/pull", token(t, unknown, false), map[string]any{"student_id": "nope"})
	require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Raw)
}
