package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sort"
	"strconv"

	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/query"
)

// SyncPush is offline sync's write (command.Sync).
type SyncPush interface {
	Push(ctx context.Context, studentID string, changes []command.Change, allowance int) (command.PushResult, error)
}

// SyncPull is offline sync's read (query.Sync).
type SyncPull interface {
	Pull(ctx context.Context, studentID, cursor string) (query.PullResult, error)
}

// syncPushRequest is the body of POST /m/sync/push. Each change is read on
// its own, so a bad change is rejected alone rather than failing the batch.
type syncPushRequest struct {
	StudentID json.RawMessage   `json:"student_id"`
	Changes   []json.RawMessage `json:"changes"`
}

// syncPullRequest is the body of POST /m/sync/pull.
type syncPullRequest struct {
	StudentID json.RawMessage `json:"student_id"`
	Cursor    json.RawMessage `json:"cursor"`
}

func checkStudentID(raw json.RawMessage, problems map[string]string) {
	s, p := stringField(raw)
	if p == "" && !isUUID(s) {
		p = "must be a UUID"
	}
	if p != "" {
		problems["student_id"] = p
	}
}

// handleSyncPush answers POST /m/sync/push.
func handleSyncPush(log *slog.Logger, sync SyncPush) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[syncPushRequest](r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		problems := map[string]string{}
		checkStudentID(req.StudentID, problems)
		switch {
		case req.Changes == nil:
			problems["changes"] = "is required (an array of at most 500 changes)"
		case len(req.Changes) > command.MaxChanges:
			problems["changes"] = "must hold at most " + strconv.Itoa(command.MaxChanges) + " changes, got " + strconv.Itoa(len(req.Changes))
		}
		if len(problems) > 0 {
			respondErr(w, r, log, domain.Invalid(summarize(problems), problems))
			return
		}
		changes := make([]command.Change, len(req.Changes))
		for i, raw := range req.Changes {
			changes[i] = parseChange(raw)
		}
		res, err := sync.Push(r.Context(), studentFrom(r.Context()), changes, -1)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		encode(w, http.StatusOK, res)
	})
}

// changeFields are the fields a change may have.
var changeFields = []string{"id", "type", "school_id", "direction", "interaction_type", "time_spent", "reason",
	"comment", "occurred_at"}

// parseChange reads one change. A change that is not an object, has an
// unknown field or a field of the wrong type gets a Problem, with its id
// kept when it has one, so it is rejected under that id.
func parseChange(raw json.RawMessage) command.Change {
	c := command.Change{Set: map[string]bool{}}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		c.Problem = "a change must be a JSON object"
		return c
	}
	var problems []string
	for k := range m {
		if !contains(changeFields, k) {
			problems = append(problems, k+" is not a known field")
		}
	}
	str := func(name string, dst *string) {
		v, ok := m[name]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return
		}
		c.Set[name] = true
		if json.Unmarshal(v, dst) != nil {
			problems = append(problems, name+" must be a string")
		}
	}
	str("id", &c.ID)
	str("type", &c.Type)
	str("school_id", &c.SchoolID)
	str("direction", &c.Direction)
	str("interaction_type", &c.InteractionType)
	str("reason", &c.Reason)
	str("comment", &c.Comment)
	str("occurred_at", &c.OccurredAt)
	if v, ok := m["time_spent"]; ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		c.Set["time_spent"] = true
		var f float64
		if json.Unmarshal(v, &f) != nil {
			problems = append(problems, "time_spent must be a number")
		} else {
			c.TimeSpent = &f
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		c.Problem = problems[0]
		if len(problems) > 1 {
			c.Problem += " (and " + strconv.Itoa(len(problems)-1) + " more problems)"
		}
	}
	return c
}

// handleSyncPull answers POST /m/sync/pull.
func handleSyncPull(log *slog.Logger, sync SyncPull) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[syncPullRequest](r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		problems := map[string]string{}
		checkStudentID(req.StudentID, problems)
		var cursor string
		if len(req.Cursor) > 0 && string(req.Cursor) != "null" {
			if json.Unmarshal(req.Cursor, &cursor) != nil {
				problems["cursor"] = "must be a string (the cursor of the previous pull)"
			}
		}
		if len(problems) > 0 {
			respondErr(w, r, log, domain.Invalid(summarize(problems), problems))
			return
		}
		res, err := sync.Pull(r.Context(), studentFrom(r.Context()), cursor)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		encode(w, http.StatusOK, res)
	})
}
