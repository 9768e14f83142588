package query

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// Offline sync's read, POST /m/sync/pull: what changed for a student since
// a cursor. Cursors are positions in change_seq, the one sequence every
// swipe, feedback and school row takes a value from when it is written
// (the learning state is sent as it is now, whatever the cursor). A value
// is taken when a row is written but becomes visible when its transaction
// commits, so values commit out of order: a cursor is only ever moved to a
// watermark below which every transaction has ended (ChangeWatermark), and
// a pull never skips a change.

// SyncStore is what a pull needs from PostgreSQL (*store.Store).
type SyncStore interface {
	ChangeWatermark(ctx context.Context, maxWait time.Duration) (int64, bool, error)
	SyncRead(ctx context.Context, studentID string, after, upTo int64, limit int, also []string) (domain.SyncRead, error)
	ServerKey(ctx context.Context, name string) ([]byte, error)
}

// Limits of a pull.
const (
	// DefaultPullLimit is the most swipes and feedback one pull returns;
	// has_more says when there are more.
	DefaultPullLimit = 1000
	// DefaultPullMaxWait bounds a pull's wait for transactions in progress
	// (normally milliseconds; a catalogue import can take longer).
	DefaultPullMaxWait = 2 * time.Second
	// SyncCursorKey names the server key cursors are signed with (the same
	// as command.SyncCursorKey).
	SyncCursorKey = "sync-cursor"
)

// Sync answers pulls over the read side's feeds.
type Sync struct {
	q       *Service
	store   SyncStore
	limit   int
	maxWait time.Duration

	keyMu sync.Mutex
	key   []byte
}

// NewSync builds the pull; limit and maxWait are optional (the defaults).
func NewSync(q *Service, store SyncStore, limit int, maxWait time.Duration) *Sync {
	if q == nil || store == nil {
		panic("query.NewSync: missing dependency")
	}
	if limit <= 0 {
		limit = DefaultPullLimit
	}
	if maxWait <= 0 {
		maxWait = DefaultPullMaxWait
	}
	return &Sync{q: q, store: store, limit: limit, maxWait: maxWait}
}

func (s *Sync) cursorKey(ctx context.Context) ([]byte, error) {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if s.key != nil {
		return s.key, nil
	}
	k, err := s.store.ServerKey(ctx, SyncCursorKey)
	if err != nil {
		return nil, err
	}
	s.key = k
	return k, nil
}

// PullResult is the answer of a pull.
type PullResult struct {
	Swipes          []PulledSwipe    `json:"swipes"`
	Feedback        []PulledFeedback `json:"feedback"`
	LearningState   SyncLearning     `json:"learning_state"`
	R               json.RawMessage  `json:"r"`
	Schools         []CompactSchool  `json:"schools"`
	InactiveSchools []string         `json:"inactive_schools"`
	Cursor          string           `json:"cursor"`
	HasMore         bool             `json:"has_more"`
}

// PulledSwipe is a swipe in a pull.
type PulledSwipe struct {
	ID              *string  `json:"id"` // the client's change or swipe id; null when it sent none
	SchoolID        string   `json:"school_id"`
	Direction       string   `json:"direction"`
	InteractionType string   `json:"interaction_type"`
	TimeSpent       *float64 `json:"time_spent"`
	OccurredAt      string   `json:"occurred_at"`
	RecordedAt      string   `json:"recorded_at"`
}

// PulledFeedback is a feedback reason in a pull.
type PulledFeedback struct {
	ID         *string `json:"id"`
	SchoolID   string  `json:"school_id"`
	Reason     string  `json:"reason"`
	Comment    *string `json:"comment"`
	OccurredAt string  `json:"occurred_at"`
	RecordedAt string  `json:"recorded_at"`
}

// SyncLearning is the student's learning state in a pull.
type SyncLearning struct {
	Phase             string             `json:"phase"`
	Progress          float64            `json:"progress"`
	PreferenceWeights map[string]float64 `json:"preference_weights"`
	SwipeCount        int                `json:"swipe_count"`
}

// Pull returns what changed for student since cursor ("" for everything).
func (s *Sync) Pull(ctx context.Context, studentID, cursor string) (PullResult, error) {
	sid, err := uuid.Parse(studentID)
	if err != nil {
		return PullResult{}, domain.Invalid("student_id must be a UUID", map[string]string{"student_id": "must be a UUID"})
	}
	studentID = sid.String()
	key, err := s.cursorKey(ctx)
	if err != nil {
		return PullResult{}, err
	}
	var after int64
	if cursor != "" {
		if after, err = domain.DecodeCursor(key, studentID, cursor); err != nil {
			return PullResult{}, err
		}
	}
	out := PullResult{Swipes: []PulledSwipe{}, Feedback: []PulledFeedback{}, Schools: []CompactSchool{},
		InactiveSchools: []string{}, R: json.RawMessage("[]")}
	// The first page first: its schools are read with the changes. A pull
	// is then two round trips to PostgreSQL, the watermark and one batch.
	rIDs, err := s.recommendations(ctx, studentID, &out)
	if err != nil {
		return PullResult{}, err
	}
	upTo, safe, err := s.store.ChangeWatermark(ctx, s.maxWait)
	if err != nil {
		return PullResult{}, err
	}
	if !safe || upTo < after {
		// Changes below the watermark may still commit: answer none now and
		// keep the cursor where it was; the client pulls again.
		upTo, out.HasMore = after, !safe
	}
	read, err := s.store.SyncRead(ctx, studentID, after, upTo, s.limit, rIDs)
	if err != nil {
		return PullResult{}, err
	}
	upTo, out.HasMore = read.UpTo, out.HasMore || read.More
	st := read.State
	if st.Student.DeletedAt != nil {
		return PullResult{}, domain.StudentNotFound(studentID)
	}
	for _, x := range read.Swipes {
		out.Swipes = append(out.Swipes, PulledSwipe{ID: x.ClientID, SchoolID: x.SchoolID, Direction: x.Direction,
			InteractionType: x.InteractionType, TimeSpent: x.TimeSpent, OccurredAt: stamp(x.OccurredAt), RecordedAt: stamp(x.RecordedAt)})
	}
	for _, x := range read.Feedback {
		out.Feedback = append(out.Feedback, PulledFeedback{ID: x.ClientID, SchoolID: x.SchoolID, Reason: x.Reason,
			Comment: x.Comment, OccurredAt: stamp(x.OccurredAt), RecordedAt: stamp(x.RecordedAt)})
	}
	out.LearningState = syncLearning(st)
	schools := read.Schools
	var live []domain.School
	for _, sc := range schools {
		if sc.Active {
			live = append(live, sc)
		} else {
			out.InactiveSchools = append(out.InactiveSchools, sc.ID)
		}
	}
	out.Schools = append(out.Schools, CompactSchools(live)...)
	out.Cursor = domain.EncodeCursor(key, studentID, upTo)
	return out, nil
}

// recommendations fills out.R with the compact first page of the feed (as
// GET /m/recommendations answers it; empty for an incomplete profile) and
// returns its school ids.
func (s *Sync) recommendations(ctx context.Context, studentID string, out *PullResult) ([]string, error) {
	page, err := s.q.CompactFeed(ctx, studentID, Prefetched{})
	var de *domain.Error
	if errors.As(err, &de) && de.Code == domain.CodeMissingProfile {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var body struct {
		R json.RawMessage `json:"r"`
	}
	if err := json.Unmarshal(page.Body, &body); err != nil || len(body.R) == 0 {
		return nil, errors.New("query: the compact feed page has no r")
	}
	var items []struct {
		I string `json:"i"`
	}
	if err := json.Unmarshal(body.R, &items); err != nil {
		return nil, err
	}
	out.R = body.R
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.I
	}
	return ids, nil
}

func syncLearning(st domain.LearnerState) SyncLearning {
	_, model, _ := match.Start(st)
	w := model.Weights().Map()
	for k, v := range w {
		w[k] = math.Round(v*1e4) / 1e4
	}
	n := st.Student.SwipeCount
	return SyncLearning{Phase: string(match.PhaseFor(n)), Progress: math.Round(match.Progress(n)*1e4) / 1e4,
		PreferenceWeights: w, SwipeCount: n}
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
