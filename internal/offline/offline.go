// Package offline is mobile offline sync: POST /m/sync/push stores the
// swipes and feedback a client queued offline, exactly once per (student,
// change id); POST /m/sync/pull returns what changed since a cursor.
//
// Cursors are positions in change_seq, the one sequence every swipe,
// feedback, learning state and school row takes a value from when it is
// written. A value is taken when a row is written but becomes visible when
// its transaction commits, so values commit out of order: a cursor is only
// ever moved to a watermark below which every transaction has ended
// (store.ChangeWatermark), and a pull never skips a change.
//
// The package reads and writes through the store's sync methods, whose
// types (store.SyncChange and the rows a pull reads) it uses as they are.
package offline

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
)

// Store is what sync needs from PostgreSQL (*store.Store).
type Store interface {
	LearnerState(ctx context.Context, id string, withSwiped bool) (store.LearnerState, error)
	SyncPush(ctx context.Context, studentID string, changes []store.SyncChange, ev store.SyncEvents) (store.SyncResult, error)
	ChangeWatermark(ctx context.Context, maxWait time.Duration) (int64, bool, error)
	SyncChanges(ctx context.Context, studentID string, after, upTo int64, limit int) ([]store.SyncSwipe, []store.SyncFeedback, int64, bool, error)
	SyncSchools(ctx context.Context, studentID string, after, upTo int64, also []string) ([]domain.School, error)
	ServerKey(ctx context.Context, name string) ([]byte, error)
	MarkOutboxPublished(ctx context.Context, ids []int64) error
}

// CompactFeeds serves the compact first page of a student's feed
// (*query.Service), the `r` of a pull.
type CompactFeeds interface {
	CompactFeed(ctx context.Context, studentID string, pf query.Prefetched) (query.CompactPage, error)
}

// FeedVersions drops a student's stored feed once their state moved on
// (cache.Feeds.Invalidate).
type FeedVersions interface {
	Invalidate(ctx context.Context, studentID string, version int64) error
}

// Config is what New needs; fields are required unless marked.
type Config struct {
	Store    Store
	Feeds    CompactFeeds
	Versions FeedVersions
	Catalogs command.Catalogs
	Queue    tasks.Enqueuer
	Router   *tasks.Router // the API's outbox router (tasks.AddLearnRoutes and any others)
	Log      *slog.Logger
	Now      func() time.Time // optional, time.Now
	// MaxWait bounds the wait for transactions in progress before a cursor
	// may move past their changes; optional, DefaultMaxWait.
	MaxWait time.Duration
	// PullLimit is the most swipes and feedback one pull returns;
	// optional, DefaultPullLimit.
	PullLimit int
}

// Limits of sync.
const (
	// MaxChanges is the most changes one push may carry.
	MaxChanges = 500
	// DefaultPullLimit is the most swipes and feedback one pull returns;
	// has_more says when there are more.
	DefaultPullLimit = 1000
	// DefaultMaxWait bounds a pull's (or push's) wait for transactions in
	// progress (normally milliseconds; a catalogue import can take longer).
	DefaultMaxWait = 2 * time.Second
	// MaxFutureSkew is how far in the future a change's occurred_at may be
	// (device clocks drift).
	MaxFutureSkew = 5 * time.Minute
	// MaxAge is how old a change's occurred_at may be.
	MaxAge = 90 * 24 * time.Hour
)

// Service implements push and pull.
type Service struct {
	c Config

	keyMu sync.Mutex
	key   []byte
}

// New builds the sync service.
func New(c Config) *Service {
	if c.Store == nil || c.Feeds == nil || c.Versions == nil || c.Catalogs == nil || c.Queue == nil ||
		c.Router == nil || c.Log == nil {
		panic("offline.New: missing dependency")
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxWait <= 0 {
		c.MaxWait = DefaultMaxWait
	}
	if c.PullLimit <= 0 {
		c.PullLimit = DefaultPullLimit
	}
	return &Service{c: c}
}

// cursorKey is the signing key of cursors, read from PostgreSQL once.
func (s *Service) cursorKey(ctx context.Context) ([]byte, error) {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if s.key != nil {
		return s.key, nil
	}
	k, err := s.c.Store.ServerKey(ctx, "sync-cursor")
	if err != nil {
		return nil, err
	}
	s.key = k
	return k, nil
}

// Change is one change of a push as the client sent it. Problem is set by
// the decoder for a change it could not read (a field of the wrong type, an
// unknown field); such a change is rejected with it.
type Change struct {
	ID              string
	Type            string
	SchoolID        string
	Direction       string
	InteractionType string
	TimeSpent       *float64
	Reason          string
	Comment         string
	OccurredAt      string
	// Set is the set of fields present, for the fields a type forbids.
	Set     map[string]bool
	Problem string
}

// Rejection is a change that was not stored, and why.
type Rejection struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

// PushResult is the answer of a push: the change ids by outcome, in the
// order sent, and the cursor after the push (nil when it could not be
// settled within MaxWait).
type PushResult struct {
	Accepted   []string    `json:"accepted"`
	Duplicates []string    `json:"duplicates"`
	Rejected   []Rejection `json:"rejected"`
	Cursor     *string     `json:"cursor"`
	// SwipeCount and LearningPhase are the student's after the push.
	SwipeCount    int    `json:"swipe_count"`
	LearningPhase string `json:"learning_phase"`
}

// Push stores changes (at most MaxChanges) for student; see the package
// documentation and docs/decisions.md, "Offline sync".
func (s *Service) Push(ctx context.Context, studentID string, changes []Change) (PushResult, error) {
	if len(changes) > MaxChanges {
		return PushResult{}, domain.Invalid("a push carries at most 500 changes",
			map[string]string{"changes": "must hold at most 500 changes"})
	}
	sid, err := uuid.Parse(studentID)
	if err != nil {
		return PushResult{}, domain.Invalid("student_id must be a UUID", map[string]string{"student_id": "must be a UUID"})
	}
	studentID = sid.String()
	st, err := s.c.Store.LearnerState(ctx, studentID, false)
	if err != nil {
		return PushResult{}, err
	}
	if st.Student.DeletedAt != nil {
		return PushResult{}, domain.StudentNotFound(studentID)
	}
	key, err := s.cursorKey(ctx)
	if err != nil {
		return PushResult{}, err
	}

	// Validate; changes without a usable id are rejected here, the others
	// go to the store, which reports a stored id as a duplicate first.
	now := s.c.Now()
	res := PushResult{Accepted: []string{}, Duplicates: []string{}, Rejected: []Rejection{}}
	outcome := make([]store.SyncOutcome, len(changes))
	why := make([]string, len(changes))
	var valid []store.SyncChange
	var index []int // valid[k] is changes[index[k]]
	for i, c := range changes {
		sc, idOK := s.validate(c, now)
		if !idOK {
			outcome[i], why[i] = store.SyncRejected, sc.Problem
			continue
		}
		valid = append(valid, sc)
		index = append(index, i)
	}
	// Stored in the order they happened, so ids, change_seq and the
	// learner's order follow occurred_at.
	order := make([]int, len(valid))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return valid[a].OccurredAt.Compare(valid[b].OccurredAt) })
	sorted := make([]store.SyncChange, len(valid))
	for k, o := range order {
		sorted[k] = valid[o]
	}

	updated := s.weightMoves(st, sorted)
	ev := store.SyncEvents{
		Swipe: func(c store.SyncChange, swipeID int64) (string, any) {
			return tasks.TopicSwipeRecorded, command.SwipePayload{StudentID: studentID, SchoolID: c.SchoolID,
				Direction: c.Direction, Timestamp: command.Timestamp(c.OccurredAt), SwipeID: swipeID, LearnBatched: true}
		},
		Learn: func(swipes, feedback int) (string, any) {
			return tasks.TopicSyncPushed, SyncPushedPayload{StudentID: studentID, Swipes: swipes, Feedback: feedback}
		},
		Respond: func(c store.SyncChange, count int) ([]byte, error) {
			return command.SyncedSwipeResponse(count, updated[c.ClientID])
		},
	}
	stored, err := s.c.Store.SyncPush(ctx, studentID, sorted, ev)
	if err != nil {
		return PushResult{}, err
	}
	for k, o := range order {
		i := index[o]
		outcome[i], why[i] = stored.Outcomes[k], stored.Errors[k]
	}
	var accepted int
	for i, c := range changes {
		switch outcome[i] {
		case store.SyncAccepted:
			res.Accepted = append(res.Accepted, canonicalID(c.ID))
			accepted++
		case store.SyncDuplicate:
			res.Duplicates = append(res.Duplicates, canonicalID(c.ID))
		default:
			res.Rejected = append(res.Rejected, Rejection{ID: c.ID, Error: why[i]})
		}
	}
	res.SwipeCount, res.LearningPhase = stored.SwipeCount, string(match.PhaseFor(stored.SwipeCount))
	if accepted > 0 {
		s.afterCommit(ctx, studentID, stored)
	}
	pos, safe, err := s.c.Store.ChangeWatermark(ctx, s.c.MaxWait)
	if err != nil {
		return PushResult{}, err
	}
	if safe {
		c := encodeCursor(key, sid, pos)
		res.Cursor = &c
	}
	return res, nil
}

// SyncPushedPayload is the payload of the sync.pushed outbox event.
type SyncPushedPayload struct {
	StudentID string `json:"student_id"`
	Swipes    int    `json:"swipes"`
	Feedback  int    `json:"feedback"`
}

func canonicalID(id string) string {
	if u, err := uuid.Parse(id); err == nil {
		return u.String()
	}
	return id
}

// weightMoves says, per swipe change id, whether folding the swipe into the
// model stored now moves a preference weight (the stored response's
// updated_weights, as POST /swipe computes it).
func (s *Service) weightMoves(st store.LearnerState, changes []store.SyncChange) map[string]bool {
	out := map[string]bool{}
	cat := s.c.Catalogs.Current()
	if cat == nil {
		return out
	}
	cats := make([]match.CategoryPreference, len(st.Categories))
	for i, c := range st.Categories {
		cats[i] = match.CategoryPreferenceFrom(c.CategoryID, c.Direction)
	}
	p, prior := match.CategoryStart(match.NewProfile(st.Student), cats)
	model := command.StudentModel(st.Model, st.Weights, prior)
	for _, c := range changes {
		if c.Problem != "" || c.Type != store.ChangeSwipe {
			continue
		}
		idx, ok := cat.Index(c.SchoolID)
		if !ok {
			continue
		}
		dir, _ := match.ParseDirection(c.Direction)
		_, out[c.ClientID] = model.Observe(p, cat, match.Observation{Index: idx, Interaction: c.InteractionType, Direction: dir})
	}
	return out
}

// enqueueTimeout bounds the hand-over of a push's tasks; the worker's relay
// hands over what is left.
const enqueueTimeout = time.Second

// afterCommit drops the student's stored feed and hands the push's outbox
// rows to the queue (tasks.HandOver: their webhook deliveries written in
// one statement, then their tasks queued): the swipe.recorded rows produce
// no learn task (learn_batched; any webhook route still produces its
// jobs), the one sync.pushed row produces the student:learn task of the
// whole push, under the id derived from that row. Best effort: the relay
// hands over any row left unmarked, under the same task ids.
func (s *Service) afterCommit(ctx context.Context, studentID string, r store.SyncResult) {
	ctx = context.WithoutCancel(ctx)
	if r.Version > 0 {
		if err := s.c.Versions.Invalidate(ctx, studentID, r.Version); err != nil {
			s.c.Log.DebugContext(ctx, "feed not invalidated; the worker's rebuild replaces it", "student_id", studentID, "err", err)
		}
	}
	ectx, cancel := context.WithTimeout(ctx, enqueueTimeout)
	defer cancel()
	rows := make([]tasks.OutboxRow, len(r.Events))
	for i, row := range r.Events {
		rows[i] = tasks.OutboxRow{ID: row.ID, Topic: row.Topic, StudentID: row.StudentID, Payload: row.Payload}
	}
	handed, err := tasks.HandOver(ectx, s.c.Queue, s.c.Router, rows)
	if err != nil {
		s.c.Log.WarnContext(ctx, "outbox events not all handed over here; the outbox relay hands over the rest",
			"handed_over", len(handed), "of", len(rows), "err", err)
	}
	if err := s.c.Store.MarkOutboxPublished(ctx, handed); err != nil {
		s.c.Log.WarnContext(ctx, "outbox events queued but not marked; the relay's hand-over will be a duplicate", "err", err)
	}
}

// validate checks one change. idOK is false when the change has no usable
// id (it cannot be told apart from others, so it is rejected before the
// store); otherwise Problem says what else is wrong, if anything.
func (s *Service) validate(c Change, now time.Time) (sc store.SyncChange, idOK bool) {
	u, err := uuid.Parse(c.ID)
	if err != nil || len(c.ID) != 36 {
		return store.SyncChange{Problem: "id must be a UUID"}, false
	}
	sc = store.SyncChange{ClientID: u.String(), Type: c.Type, Direction: c.Direction, InteractionType: c.InteractionType,
		TimeSpent: c.TimeSpent, Reason: c.Reason, Comment: c.Comment}
	if sid, err := uuid.Parse(c.SchoolID); err == nil && len(c.SchoolID) == 36 {
		sc.SchoolID = sid.String()
	} else {
		sc.SchoolID = c.SchoolID
	}
	if sc.Type == store.ChangeSwipe && sc.InteractionType == "" {
		sc.InteractionType = match.InteractionSwipe
	}
	sc.Counted = sc.InteractionType == match.InteractionSwipe
	sc.Problem = c.Problem
	if sc.Problem != "" {
		return sc, true
	}
	problem := func(p string) (store.SyncChange, bool) { sc.Problem = p; return sc, true }
	switch c.Type {
	case store.ChangeSwipe:
		for _, f := range []string{"reason", "comment"} {
			if c.Set[f] {
				return problem(f + " is not allowed on a swipe")
			}
		}
		if _, ok := match.ParseDirection(c.Direction); !ok {
			return problem("direction must be left or right")
		}
		if !match.ValidInteraction(sc.InteractionType) {
			return problem("interaction_type must be swipe, tap, detail_view or save")
		}
		if t := c.TimeSpent; t != nil && (math.IsNaN(*t) || *t < 0 || *t > command.MaxTimeSpent) {
			return problem("time_spent must be a number of seconds from 0 to 86400")
		}
	case store.ChangeFeedback:
		for _, f := range []string{"direction", "interaction_type", "time_spent"} {
			if c.Set[f] {
				return problem(f + " is not allowed on feedback")
			}
		}
		if !match.ValidReason(c.Reason) {
			return problem("reason must be one of too_expensive, wrong_location, not_my_major, too_selective, perfect_match")
		}
		if utf8.RuneCountInString(c.Comment) > command.MaxCommentLength || !utf8.ValidString(c.Comment) {
			return problem("comment must be at most 1000 characters")
		}
	default:
		return problem("type must be swipe or feedback")
	}
	if _, err := uuid.Parse(c.SchoolID); err != nil || len(c.SchoolID) != 36 {
		return problem("school_id must be a UUID")
	}
	if c.OccurredAt == "" {
		return problem("occurred_at is required (RFC 3339)")
	}
	at, err := time.Parse(time.RFC3339Nano, c.OccurredAt)
	if err != nil {
		return problem("occurred_at must be an RFC 3339 date-time, e.g. 2026-05-01T12:30:00Z")
	}
	switch {
	case at.After(now.Add(MaxFutureSkew)):
		return problem("occurred_at is in the future (more than 5 minutes ahead of the server's clock)")
	case at.Before(now.Add(-MaxAge)):
		return problem("occurred_at is more than 90 days ago")
	}
	sc.OccurredAt = at.UTC()
	return sc, true
}

// PullResult is the answer of a pull.
type PullResult struct {
	Swipes          []PulledSwipe         `json:"swipes"`
	Feedback        []PulledFeedback      `json:"feedback"`
	LearningState   LearningState         `json:"learning_state"`
	R               json.RawMessage       `json:"r"`
	Schools         []query.CompactSchool `json:"schools"`
	InactiveSchools []string              `json:"inactive_schools"`
	Cursor          string                `json:"cursor"`
	HasMore         bool                  `json:"has_more"`
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

// LearningState is the student's learning state now.
type LearningState struct {
	Phase             string             `json:"phase"`
	Progress          float64            `json:"progress"`
	PreferenceWeights map[string]float64 `json:"preference_weights"`
	SwipeCount        int                `json:"swipe_count"`
}

// Pull returns what changed for student since cursor ("" for everything).
func (s *Service) Pull(ctx context.Context, studentID, cursor string) (PullResult, error) {
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
		if after, err = decodeCursor(key, sid, cursor); err != nil {
			return PullResult{}, err
		}
	}
	upTo, safe, err := s.c.Store.ChangeWatermark(ctx, s.c.MaxWait)
	if err != nil {
		return PullResult{}, err
	}
	out := PullResult{Swipes: []PulledSwipe{}, Feedback: []PulledFeedback{}, Schools: []query.CompactSchool{},
		InactiveSchools: []string{}, R: json.RawMessage("[]")}
	if !safe || upTo < after {
		// Changes below the watermark may still commit: answer none now and
		// keep the cursor where it was; the client pulls again.
		upTo, out.HasMore = after, !safe
	}
	sw, fb, upTo, more, err := s.c.Store.SyncChanges(ctx, studentID, after, upTo, s.c.PullLimit)
	if err != nil {
		return PullResult{}, err
	}
	out.HasMore = out.HasMore || more

	st, err := s.c.Store.LearnerState(ctx, studentID, false)
	if err != nil {
		return PullResult{}, err
	}
	if st.Student.DeletedAt != nil {
		return PullResult{}, domain.StudentNotFound(studentID)
	}
	for _, x := range sw {
		out.Swipes = append(out.Swipes, PulledSwipe{ID: x.ClientID, SchoolID: x.SchoolID, Direction: x.Direction,
			InteractionType: x.InteractionType, TimeSpent: x.TimeSpent, OccurredAt: stamp(x.OccurredAt), RecordedAt: stamp(x.RecordedAt)})
	}
	for _, x := range fb {
		out.Feedback = append(out.Feedback, PulledFeedback{ID: x.ClientID, SchoolID: x.SchoolID, Reason: x.Reason,
			Comment: x.Comment, OccurredAt: stamp(x.OccurredAt), RecordedAt: stamp(x.RecordedAt)})
	}
	out.LearningState = learningState(st)

	rIDs, err := s.recommendations(ctx, studentID, &out)
	if err != nil {
		return PullResult{}, err
	}
	schools, err := s.c.Store.SyncSchools(ctx, studentID, after, upTo, rIDs)
	if err != nil {
		return PullResult{}, err
	}
	var active []domain.School
	for _, sc := range schools {
		if sc.Active {
			active = append(active, sc)
		} else {
			out.InactiveSchools = append(out.InactiveSchools, sc.ID)
		}
	}
	out.Schools = append(out.Schools, query.CompactSchools(active)...)
	out.Cursor = encodeCursor(key, sid, upTo)
	return out, nil
}

// recommendations fills out.R with the compact first page of the feed (as
// GET /m/recommendations answers it; empty for an incomplete profile) and
// returns its school ids.
func (s *Service) recommendations(ctx context.Context, studentID string, out *PullResult) ([]string, error) {
	page, err := s.c.Feeds.CompactFeed(ctx, studentID, query.Prefetched{})
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
		return nil, errors.New("offline: the compact feed page has no r")
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

func learningState(st store.LearnerState) LearningState {
	cats := make([]match.CategoryPreference, len(st.Categories))
	for i, c := range st.Categories {
		cats[i] = match.CategoryPreferenceFrom(c.CategoryID, c.Direction)
	}
	_, prior := match.CategoryStart(match.NewProfile(st.Student), cats)
	w := command.StudentModel(st.Model, st.Weights, prior).Weights().Map()
	for k, v := range w {
		w[k] = math.Round(v*1e4) / 1e4
	}
	n := st.Student.SwipeCount
	return LearningState{Phase: string(match.PhaseFor(n)), Progress: math.Round(match.Progress(n)*1e4) / 1e4,
		PreferenceWeights: w, SwipeCount: n}
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
