package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
)

// TestOpenAPISync checks the answers of POST /m/sync/push and POST
// /m/sync/pull against the document: accepted, duplicate and rejected
// changes, full and incremental pulls, and the 400s and 404s.
func TestOpenAPISync(t *testing.T) {
	c := newOAContract(t)
	schools := c.api.seedSchools(t, 60)
	student, tok := c.api.newStudent(t, completeProfile())
	push := func(changes any) oaRequest {
		return oaRequest{method: http.MethodPost, path: "/m/sync/push", tok: tok,
			body: map[string]any{"student_id": student, "changes": changes}}
	}
	pull := func(cursor any) oaRequest {
		body := map[string]any{"student_id": student}
		if cursor != nil {
			body["cursor"] = cursor
		}
		return oaRequest{method: http.MethodPost, path: "/m/sync/pull", tok: tok, body: body}
	}
	at := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	changes := []any{
		map[string]any{"id": uuid.NewString(), "type": "swipe", "school_id": schools[0].ID, "direction": "right",
			"time_spent": 3.5, "occurred_at": at},
		map[string]any{"id": uuid.NewString(), "type": "swipe", "school_id": schools[1].ID, "direction": "left",
			"interaction_type": "detail_view", "occurred_at": at},
		map[string]any{"id": uuid.NewString(), "type": "feedback", "school_id": schools[0].ID, "reason": "too_expensive",
			"comment": "over budget", "occurred_at": at},
		map[string]any{"id": uuid.NewString(), "type": "swipe", "school_id": uuid.NewString(), "direction": "left",
			"occurred_at": at},
	}

	first := c.valid(t, push(changes))
	require.Equal(t, http.StatusOK, first.Status)
	require.Len(t, first.Body["accepted"], 3)
	require.Len(t, first.Body["rejected"], 1)
	again := c.valid(t, push(changes[:2]))
	require.Len(t, again.Body["duplicates"], 2)

	full := c.valid(t, pull(nil))
	require.Equal(t, http.StatusOK, full.Status)
	require.Len(t, full.Body["swipes"], 2)
	require.Len(t, full.Body["feedback"], 1)
	next := c.valid(t, pull(full.Body["cursor"]))
	require.Empty(t, next.Body["swipes"])
	require.Equal(t, http.StatusOK, c.valid(t, pull(nil)).Status)

	forged := c.valid(t, pull(strings.Repeat("A", 34)))
	require.Equal(t, http.StatusBadRequest, forged.Status)
	require.Contains(t, forged.errorFields(), "cursor")

	over := make([]any, 501)
	for i := range over {
		over[i] = changes[0]
	}
	tooMany := c.send(t, push(over))
	require.Equal(t, http.StatusBadRequest, tooMany.Status)
	require.Error(t, tooMany.reqErr, "the document refuses 501 changes too")
	require.NoError(t, tooMany.resErr, "the 400 matches the document: %s", tooMany.Raw)

	unknown := uuid.NewString()
	missing := c.valid(t, oaRequest{method: http.MethodPost, path: "/m/sync/pull", tok: token(t, unknown, false),
		body: map[string]any{"student_id": unknown}})
	require.Equal(t, http.StatusNotFound, missing.Status)
	require.Equal(t, domain.CodeInvalidStudentID, missing.errorCode())

	for name, mutate := range map[string]func(b map[string]any){
		"accepted not an array":    func(b map[string]any) { b["accepted"] = "all" },
		"rejected without error":   func(b map[string]any) { delete(b["rejected"].([]any)[0].(map[string]any), "error") },
		"missing cursor":           func(b map[string]any) { delete(b, "cursor") },
		"unknown phase":            func(b map[string]any) { b["learning_phase"] = "expert" },
		"duplicates not UUIDs":     func(b map[string]any) { b["duplicates"] = []any{"x"} },
		"undocumented extra field": func(b map[string]any) { b["extra"] = true },
	} {
		t.Run("push: "+name, func(t *testing.T) {
			b := syncClone(first.Body)
			mutate(b)
			require.Error(t, syncRevalidate(t, c, first.route, first.Status, first.Header, b))
		})
	}
	for name, mutate := range map[string]func(b map[string]any){
		"swipe without occurred_at": func(b map[string]any) { delete(b["swipes"].([]any)[0].(map[string]any), "occurred_at") },
		"feedback with a bad reason": func(b map[string]any) {
			b["feedback"].([]any)[0].(map[string]any)["reason"] = "meh"
		},
		"learning_state without swipe_count": func(b map[string]any) {
			delete(b["learning_state"].(map[string]any), "swipe_count")
		},
		"r item without a score": func(b map[string]any) { delete(b["r"].([]any)[0].(map[string]any), "s") },
		"cursor a number":        func(b map[string]any) { b["cursor"] = 7 },
		"missing has_more":       func(b map[string]any) { delete(b, "has_more") },
	} {
		t.Run("pull: "+name, func(t *testing.T) {
			b := syncClone(full.Body)
			mutate(b)
			require.Error(t, syncRevalidate(t, c, full.route, full.Status, full.Header, b))
		})
	}
}

// syncRevalidate checks body (re-encoded) as the answer to route with status.
func syncRevalidate(t *testing.T, c *oaContract, route *routers.Route, status int, header http.Header, body any) error {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(route.Method, c.api.URL+route.Path, nil)
	require.NoError(t, err)
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, Route: route, Options: oaFilterOptions()},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(raw)),
		Options:                oaFilterOptions(),
	})
}

func syncClone(v map[string]any) map[string]any {
	raw, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}
