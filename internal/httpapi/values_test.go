package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A NUL in one change's comment rejects that change only; the others of the
// push are stored.
func TestSyncPushNULInOneCommentRejectsThatChangeOnly(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 10)
	student, tok := api.newStudent(t, completeProfile())
	at := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	swipe := map[string]any{"id": uuid.NewString(), "type": "swipe", "school_id": schools[0].ID, "direction": "right", "occurred_at": at}
	bad := map[string]any{"id": uuid.NewString(), "type": "feedback", "school_id": schools[1].ID, "reason": "too_expensive",
		"comment": "far\u0000away", "occurred_at": at}
	good := map[string]any{"id": uuid.NewString(), "type": "feedback", "school_id": schools[2].ID, "reason": "wrong_location",
		"comment": "far away", "occurred_at": at}

	// An unknown field whose name holds a NUL is that change's problem too.
	odd := map[string]any{"id": uuid.NewString(), "type": "swipe", "school_id": schools[3].ID, "direction": "left",
		"occurred_at": at, "x\u0000y": 1}

	body := api.push(t, tok, student, []map[string]any{swipe, bad, good, odd})
	assert.ElementsMatch(t, []string{swipe["id"].(string), good["id"].(string)}, strs(body["accepted"]))
	rejected := body["rejected"].([]any)
	require.Len(t, rejected, 2)
	r := rejected[0].(map[string]any)
	assert.Equal(t, bad["id"], r["id"])
	assert.Contains(t, r["error"], "NUL")
	r = rejected[1].(map[string]any)
	assert.Equal(t, odd["id"], r["id"])
	assert.Contains(t, r["error"], "is not a known field")
	assert.Equal(t, 1, api.count(t, `SELECT count(*) FROM feedback WHERE student_id = $1`, student))
	assert.Equal(t, 1, api.count(t, `SELECT count(*) FROM swipes WHERE student_id = $1`, student))
}

// time_spent comes back as it was sent (to the millisecond) through every
// way in (POST /swipe, POST /continuous-feed, POST /m/sync/push) and every
// way out (POST /m/sync/pull, the export).
func TestTimeSpentComesBackAsSent(t *testing.T) {
	api := newTestAPI(t)
	schools := api.seedSchools(t, 10)
	student, tok := api.newStudent(t, completeProfile())

	sent := map[string]float64{}
	id := uuid.NewString()
	sent[id] = 4.2
	api.swipe(t, tok, map[string]any{"student_id": student, "school_id": schools[0].ID, "direction": "right",
		"time_spent": 4.2, "swipe_id": id})
	id = uuid.NewString()
	sent[id] = 0.1
	res := api.do(t, "POST", "/continuous-feed", tok, map[string]any{"student_id": student, "limit": 1,
		"swipes": []any{map[string]any{"school_id": schools[1].ID, "direction": "left", "time_spent": 0.1, "swipe_id": id}}})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	id = uuid.NewString()
	sent[id] = 12.345
	api.push(t, tok, student, []map[string]any{{"id": id, "type": "swipe", "school_id": schools[2].ID, "direction": "right",
		"time_spent": 12.345, "occurred_at": time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)}})

	pulled := map[string]any{}
	for _, x := range api.pull(t, tok, student, nil)["swipes"].([]any) {
		m := x.(map[string]any)
		pulled[m["id"].(string)] = m["time_spent"]
	}
	ex, err := api.Store.ExportStudent(context.Background(), student)
	require.NoError(t, err)
	exported := map[string]float64{}
	for _, sw := range ex.Swipes {
		require.NotNil(t, sw.ClientID)
		require.NotNil(t, sw.TimeSpent)
		exported[*sw.ClientID] = *sw.TimeSpent
	}
	for id, v := range sent {
		assert.Equal(t, v, pulled[id], "sync pull of %v", v)
		assert.Equal(t, v, exported[id], "export of %v", v)
	}
}
