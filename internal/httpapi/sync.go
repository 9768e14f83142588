package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strconv"

	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/query"
)

// SyncPush is offline sync's write (command.Sync).
type SyncPush interface {
	// Charges says what each change costs of the student's allowances.
	Charges(studentID string, changes []command.Change) []command.Charge
	// Push stores the changes, but for those marked limited.
	Push(ctx context.Context, studentID string, changes []command.Change, limited []bool) (command.PushResult, error)
}

// SyncPull is offline sync's read (query.Sync).
type SyncPull interface {
	Pull(ctx context.Context, studentID, cursor string) (query.PullResult, error)
}

// syncPushRequest is the body of POST /m/sync/push. Each change is read on
// its own, so a bad change is rejected alone rather than failing the batch.
type syncPushRequest struct {
	StudentID json.RawMessage `json:"student_id"`
	Changes   json.RawMessage `json:"changes"`
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

// parse checks the push as a whole and reads each change on its own (a
// bad change is rejected alone, by Push).
func (q syncPushRequest) parse() ([]command.Change, map[string]string) {
	problems := map[string]string{}
	checkStudentID(q.StudentID, problems)
	var elems [][]byte
	if len(q.Changes) == 0 || string(q.Changes) == "null" {
		problems["changes"] = "is required (an array of at most " + strconv.Itoa(command.MaxChanges) + " changes)"
	} else {
		var tooMany, ok bool
		elems, tooMany, ok = elements(q.Changes, command.MaxChanges)
		switch {
		case tooMany:
			problems["changes"] = "must hold at most " + strconv.Itoa(command.MaxChanges) + " changes"
		case !ok:
			problems["changes"] = "must be an array of changes"
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	changes := make([]command.Change, len(elems))
	for i, raw := range elems {
		changes[i] = parseChange(raw)
	}
	return changes, nil
}

// readSyncPush decodes and validates POST /m/sync/push as a whole; each
// change carries its own problem, if any.
func readSyncPush(r *http.Request) ([]command.Change, error) {
	req, err := decode[syncPushRequest](r, syncPushBody)
	if err != nil {
		return nil, err
	}
	changes, problems := req.parse()
	if len(problems) > 0 {
		return nil, domain.Invalid(summarize(problems), problems)
	}
	return changes, nil
}

// handleSyncPush answers POST /m/sync/push. Every change it may store
// costs one unit of the student's swipes allowance, and a feedback's
// comment its bytes of the comment budget (command.Charge): the changes
// they cannot cover, in the order sent, are rejected as rate_limited and
// the answer carries Retry-After.
func handleSyncPush(log *slog.Logger, sync SyncPush, allowance carriedAllowance) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		changes, err := readSyncPush(r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		student := studentFrom(r.Context())
		limits, ok := allowance.push(w, r, len(changes), sync.Charges(student, changes))
		if !ok {
			return
		}
		res, err := sync.Push(r.Context(), student, changes, limits.limited)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		if res.RateLimited {
			allowance.limited(limits)
			w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(limits.retryAfter)))
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
	var problems []string
	nProblems := 0
	problem := func(p string) {
		nProblems++
		if len(problems) < maxReported {
			problems = append(problems, p)
		}
	}
	vals := make([][]byte, len(changeFields))
	ok := members(raw, func(rawKey, value []byte) bool {
		i := knownIndex(changeFields, rawKey)
		switch {
		case i < 0:
			nProblems++
			if len(problems) < maxReported {
				problems = append(problems, clip(keyString(rawKey), 64)+" is not a known field")
			}
		case vals[i] != nil:
			problem(changeFields[i] + " is given more than once")
		default:
			vals[i] = value
		}
		return true
	})
	if !ok {
		c.Problem = "a change must be a JSON object"
		return c
	}
	get := func(name string) []byte { return vals[slices.Index(changeFields, name)] }
	str := func(name string, dst *string) {
		v := get(name)
		if v == nil || bytes.Equal(v, []byte("null")) {
			return
		}
		c.Set[name] = true
		if json.Unmarshal(v, dst) != nil {
			problem(name + " must be a string")
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
	if v := get("time_spent"); v != nil && !bytes.Equal(v, []byte("null")) {
		c.Set["time_spent"] = true
		var f float64
		if json.Unmarshal(v, &f) != nil {
			problem("time_spent must be a number")
		} else {
			c.TimeSpent = &f
		}
	}
	if nProblems > 0 {
		sort.Strings(problems)
		c.Problem = problems[0]
		if nProblems > 1 {
			c.Problem += " (and " + strconv.Itoa(nProblems-1) + " more problems)"
		}
	}
	return c
}

// readSyncPull decodes and validates POST /m/sync/pull: the cursor, ""
// for none.
func readSyncPull(r *http.Request) (string, error) {
	req, err := decode[syncPullRequest](r, syncPullBody)
	if err != nil {
		return "", err
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
		return "", domain.Invalid(summarize(problems), problems)
	}
	return cursor, nil
}

// handleSyncPull answers POST /m/sync/pull.
func handleSyncPull(log *slog.Logger, sync SyncPull) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cursor, err := readSyncPull(r)
		if err != nil {
			respondErr(w, r, log, err)
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
