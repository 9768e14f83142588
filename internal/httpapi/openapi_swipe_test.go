package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
)

// TestOpenAPISwipeAndFeedback checks the answers of POST /swipe and POST
// /feedback against the document: a recorded swipe, a weak signal, a
// replayed retry, the 409 of an id reused for another swipe, 400s and
// 404s, and feedback.
func TestOpenAPISwipeAndFeedback(t *testing.T) {
	c := newOAContract(t)
	schools := c.api.seedSchools(t, 50)
	student, tok := c.api.newStudent(t, completeProfile())
	swipe := func(body map[string]any, header ...map[string]string) oaRequest {
		body["student_id"] = student
		rq := oaRequest{method: http.MethodPost, path: "/swipe", tok: tok, body: body}
		if len(header) > 0 {
			rq.header = header[0]
		}
		return rq
	}

	id := uuid.NewString()
	first := c.valid(t, swipe(map[string]any{"school_id": schools[0].ID, "direction": "right", "time_spent": 2.5, "swipe_id": id}))
	require.Equal(t, http.StatusOK, first.Status)
	require.EqualValues(t, 1, first.Body["swipe_count"])
	again := c.valid(t, swipe(map[string]any{"school_id": schools[0].ID, "direction": "right", "swipe_id": id}))
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Equal(t, first.Body, again.Body)
	weak := c.valid(t, swipe(map[string]any{"school_id": schools[1].ID, "direction": "left", "interaction_type": "detail_view"},
		map[string]string{"Idempotency-Key": "detail-" + uuid.NewString()}))
	require.Equal(t, http.StatusOK, weak.Status)
	require.EqualValues(t, 1, weak.Body["swipe_count"])

	conflict := c.valid(t, swipe(map[string]any{"school_id": schools[2].ID, "direction": "right", "swipe_id": id}))
	require.Equal(t, http.StatusConflict, conflict.Status)
	require.Equal(t, domain.CodeInvalidRequest, conflict.errorCode())
	unknownSchool := c.valid(t, swipe(map[string]any{"school_id": uuid.NewString(), "direction": "right"}))
	require.Equal(t, http.StatusNotFound, unknownSchool.Status)
	require.Equal(t, domain.CodeInvalidSchoolID, unknownSchool.errorCode())
	bad := c.send(t, swipe(map[string]any{"school_id": schools[2].ID, "direction": "up"}))
	require.Equal(t, http.StatusBadRequest, bad.Status)
	require.Error(t, bad.reqErr, "the document rejects the body the server rejects")
	require.NoError(t, bad.resErr, "the 400 response matches the document: %s", bad.Raw)

	fb := c.valid(t, oaRequest{method: http.MethodPost, path: "/feedback", tok: tok,
		body: map[string]any{"student_id": student, "school_id": schools[0].ID, "reason": "wrong_location", "comment": "too far"}})
	require.Equal(t, http.StatusOK, fb.Status)
	require.Equal(t, true, fb.Body["updated_weights"])
	fb = c.valid(t, oaRequest{method: http.MethodPost, path: "/feedback", tok: tok,
		body: map[string]any{"student_id": student, "school_id": uuid.NewString(), "reason": "wrong_location"}})
	require.Equal(t, http.StatusNotFound, fb.Status)
}
