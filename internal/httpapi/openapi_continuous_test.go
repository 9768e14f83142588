package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/testutil"
)

// TestOpenAPIContinuousFeed checks POST /continuous-feed's answers against
// the document: a full page, a short page with next_available_at, 400s and
// 404s.
func TestOpenAPIContinuousFeed(t *testing.T) {
	c := newOAContract(t)
	rdb := testutil.NewRedis(t, testutil.RedisDBOpenAPI)
	c.api = newTestAPIOn(t, testutil.NewDB(t), rdb, withContinuous(rdb, time.Minute, nil))
	schools := c.api.seedSchools(t, 14)
	student, tok := c.api.newStudent(t, completeProfile())
	unknown := uuid.NewString()
	utok := token(t, unknown, false)
	cf := func(tok string, body any, header ...map[string]string) oaRequest {
		rq := oaRequest{method: http.MethodPost, path: "/continuous-feed", tok: tok, body: body}
		if len(header) > 0 {
			rq.header = header[0]
		}
		return rq
	}

	t.Run("200", func(t *testing.T) {
		res := c.valid(t, cf(tok, map[string]any{"student_id": student, "limit": 6}))
		require.Equal(t, http.StatusOK, res.Status)
		first := feedIDs(t, res.result)
		require.Len(t, first, 6)
		require.Empty(t, nextAvailableAt(res.result))

		res = c.valid(t, cf(tok, map[string]any{"student_id": student, "limit": 4, "swipes": []any{
			map[string]any{"school_id": first[0], "direction": "right", "time_spent": 3.25,
				"interaction_type": "swipe", "swipe_id": uuid.NewString()},
			map[string]any{"school_id": first[1], "direction": "left"},
		}}, map[string]string{"Idempotency-Key": "k-" + uuid.NewString()}))
		require.Equal(t, http.StatusOK, res.Status)
		require.Len(t, feedIDs(t, res.result), 4)
		require.EqualValues(t, 2, res.Body["total_swipes"])
	})
	t.Run("200 with next_available_at", func(t *testing.T) {
		// 14 schools: 10 shown (2 of them swiped); 4 left, then none.
		res := c.valid(t, cf(tok, map[string]any{"student_id": student, "limit": 5}))
		require.Len(t, feedIDs(t, res.result), 4)
		require.NotEmpty(t, nextAvailableAt(res.result))
		res = c.valid(t, cf(tok, map[string]any{"student_id": student}))
		require.Empty(t, feedIDs(t, res.result))
		at, err := time.Parse(time.RFC3339, nextAvailableAt(res.result))
		require.NoError(t, err)
		require.WithinDuration(t, time.Now().Add(time.Minute), at, 5*time.Second)
	})
	t.Run("400", func(t *testing.T) {
		for _, body := range []any{
			map[string]any{"student_id": student, "limit": 51},
			map[string]any{"student_id": student, "offset": 0},
			map[string]any{"student_id": student, "swipes": []any{map[string]any{"school_id": schools[0].ID, "direction": "up"}}},
			map[string]any{"student_id": student, "swipes": []any{map[string]any{"school_id": schools[0].ID}}},
			map[string]any{"student_id": student, "swipes": []any{map[string]any{"school_id": "x", "direction": "left"}}},
			map[string]any{"student_id": student, "swipes": []any{map[string]any{"school_id": schools[0].ID, "direction": "left", "time_spent": -2}}},
			map[string]any{"student_id": student, "swipes": []any{map[string]any{"school_id": schools[0].ID, "direction": "left", "liked": true}}},
			map[string]any{"student_id": student, "swipes": map[string]any{}},
			`{"student_id": `,
		} {
			res := c.send(t, cf(tok, body))
			require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Raw)
			require.Error(t, res.reqErr, "the document rejects what the server rejects: %v", body)
			require.NoError(t, res.resErr, "the 400 matches the document: %s", res.Raw)
		}
	})
	t.Run("409", func(t *testing.T) {
		reused := uuid.NewString()
		res := c.valid(t, cf(tok, map[string]any{"student_id": student, "swipes": []any{
			map[string]any{"school_id": schools[5].ID, "direction": "left", "swipe_id": reused},
			map[string]any{"school_id": schools[6].ID, "direction": "left", "swipe_id": reused},
		}}))
		require.Equal(t, http.StatusConflict, res.Status, "%s", res.Raw)
		require.Contains(t, res.errorFields(), "swipes[1].swipe_id")
		details := res.Body["error"].(map[string]any)["details"].(map[string]any)
		require.EqualValues(t, 1, details["swipes_recorded"])
	})
	t.Run("404", func(t *testing.T) {
		res := c.valid(t, cf(utok, map[string]any{"student_id": unknown}))
		require.Equal(t, http.StatusNotFound, res.Status)
		require.Equal(t, domain.CodeInvalidStudentID, res.errorCode())
		res = c.valid(t, cf(tok, map[string]any{"student_id": student, "swipes": []any{
			map[string]any{"school_id": uuid.NewString(), "direction": "left"}}}))
		require.Equal(t, http.StatusNotFound, res.Status)
		require.Equal(t, domain.CodeInvalidSchoolID, res.errorCode())
	})
}
