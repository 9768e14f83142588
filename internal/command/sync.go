package command

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/tasks"
)

// Offline sync's write: POST /m/sync/push stores the swipes and feedback a
// client queued offline, exactly once per (student, change id), in one
// transaction sent in one round trip (store.RecordBatch); the read, POST
// /m/sync/pull, is query.Sync. Cursors are positions in change_seq that a
// push hands out too (domain.EncodeCursor).

// Limits of a push.
const (
	// MaxChanges is the most changes one push may carry.
	MaxChanges = 500
	// MaxFutureSkew is how far in the future a change's occurred_at may be
	// (device clocks drift).
	MaxFutureSkew = 5 * time.Minute
	// MaxAge is how old a change's occurred_at may be.
	MaxAge = 90 * 24 * time.Hour
	// DefaultMaxWait bounds a push's wait for transactions in progress
	// before its cursor may move past their changes.
	DefaultMaxWait = 2 * time.Second
)

// RateLimited is the error of a change that the student's allowances
// could not cover (the swipes allowance, or the comment budget for a
// feedback's comment); the client pushes it again later under the same id.
const RateLimited = "rate_limited"

// BatchStore is what batches of writes need from PostgreSQL.
type BatchStore interface {
	RecordBatch(ctx context.Context, studentID string, changes []domain.Change) (domain.BatchResult, error)
	LearnerState(ctx context.Context, studentID string) (domain.LearnerState, error)
}

// SyncStore is what a push needs from PostgreSQL (*store.Store).
type SyncStore interface {
	BatchStore
	ChangeWatermark(ctx context.Context, maxWait time.Duration) (int64, bool, error)
	ServerKey(ctx context.Context, name string) ([]byte, error)
}

// SyncConfig is what NewSync needs; fields are required unless marked.
type SyncConfig struct {
	Store    SyncStore
	Redis    SwipeRedis
	Catalogs Catalogs
	Log      *slog.Logger
	Now      func() time.Time // optional, time.Now
	MaxWait  time.Duration    // optional, DefaultMaxWait
	Count    Counter          // optional: what a push stored is counted here
}

// Sync records pushes.
type Sync struct {
	c SyncConfig

	keyMu sync.Mutex
	key   []byte
}

// NewSync builds the push.
func NewSync(c SyncConfig) *Sync {
	if c.Store == nil || c.Redis == nil || c.Catalogs == nil || c.Log == nil {
		panic("command.NewSync: missing dependency")
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxWait <= 0 {
		c.MaxWait = DefaultMaxWait
	}
	c.Count = orNoCount(c.Count)
	return &Sync{c: c}
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
	// RateLimited is true when the allowances left changes out (they are
	// among Rejected with error rate_limited).
	RateLimited bool `json:"-"`
}

// Charge is what one change of a push costs (docs/security.md, "every
// stored write costs allowance"): one unit of the student's swipes
// allowance, whatever its kind (a counted swipe, a tap, a detail view, a
// save or a feedback), as POST /swipe and POST /feedback cost one each;
// and a feedback's comment its length in bytes of the student's comment
// budget (FEEDBACK_COMMENT_BYTES_PER_MIN).
type Charge struct {
	Index        int // the change's position in the push
	CommentBytes int
}

// Charges lists, in the order sent, what the changes of a push that may be
// stored cost. A change rejected whatever the allowances (no usable id, a
// bad field, a date out of range) costs nothing; a replayed change costs
// what a new one does, since which ids are stored is known only once the
// push is. An invalid student id costs nothing (the push is refused).
func (s *Sync) Charges(studentID string, changes []Change) []Charge {
	sid, err := uuid.Parse(studentID)
	if err != nil || len(changes) > MaxChanges {
		return nil
	}
	now := s.c.Now()
	out := make([]Charge, 0, len(changes))
	for i, c := range changes {
		dc, ok := validateChange(sid.String(), c, now)
		if !ok || dc.Problem != "" {
			continue
		}
		ch := Charge{Index: i}
		if dc.Type == domain.ChangeFeedback {
			ch.CommentBytes = len(dc.Feedback.Comment)
		}
		out = append(out, ch)
	}
	return out
}

// cursorKey is the signing key of cursors, read from PostgreSQL once.
func (s *Sync) cursorKey(ctx context.Context) ([]byte, error) {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if s.key != nil {
		return s.key, nil
	}
	k, err := s.c.Store.ServerKey(ctx, SyncCursorKey)
	if err != nil {
		return nil, err
	}
	s.key = k
	return k, nil
}

// SyncCursorKey names the server key sync cursors are signed with.
const SyncCursorKey = "sync-cursor"

// Push stores changes (at most MaxChanges) for student: see docs/decisions.md,
// "Offline sync". limited marks the changes the student's allowances could
// not cover (Charges says what each costs; nil: none): such a change, when
// otherwise valid, is rejected with RateLimited, stores nothing, and the
// client pushes it again later.
func (s *Sync) Push(ctx context.Context, studentID string, changes []Change, limited []bool) (PushResult, error) {
	if len(changes) > MaxChanges {
		return PushResult{}, domain.Invalid("a push carries at most 500 changes",
			map[string]string{"changes": "must hold at most 500 changes"})
	}
	sid, err := uuid.Parse(studentID)
	if err != nil {
		return PushResult{}, domain.Invalid("student_id must be a UUID", map[string]string{"student_id": "must be a UUID"})
	}
	studentID = sid.String()
	key, err := s.cursorKey(ctx)
	if err != nil {
		return PushResult{}, err
	}

	now := s.c.Now()
	res := PushResult{Accepted: []string{}, Duplicates: []string{}, Rejected: []Rejection{}}
	outcome := make([]domain.Outcome, len(changes))
	why := make([]string, len(changes))
	var (
		valid []domain.Change
		index []int // valid[k] is changes[index[k]]
	)
	for i, c := range changes {
		dc, ok := validateChange(studentID, c, now)
		if !ok {
			outcome[i], why[i] = domain.Rejected, dc.Problem
			continue
		}
		if dc.Problem == "" && i < len(limited) && limited[i] {
			outcome[i], why[i], res.RateLimited = domain.Rejected, RateLimited, true
			continue
		}
		valid = append(valid, dc)
		index = append(index, i)
	}
	// Stored in the order they happened, so ids, change_seq and the
	// learner's order follow occurred_at.
	order := make([]int, len(valid))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return occurredAt(valid[a]).Compare(occurredAt(valid[b]))
	})
	sorted := make([]domain.Change, len(valid))
	for k, o := range order {
		sorted[k] = valid[o]
	}
	predictBatch(ctx, s.c.Redis, s.c.Store, s.c.Catalogs, s.c.Log, studentID, sorted)

	stored, err := s.c.Store.RecordBatch(ctx, studentID, sorted)
	if err != nil {
		return PushResult{}, err
	}
	for k, o := range order {
		i := index[o]
		outcome[i], why[i] = stored.Outcomes[k], stored.Errors[k]
	}
	accepted := 0
	for i, c := range changes {
		switch outcome[i] {
		case domain.Accepted:
			res.Accepted = append(res.Accepted, canonicalID(c.ID))
			accepted++
		case domain.Duplicate:
			res.Duplicates = append(res.Duplicates, canonicalID(c.ID))
		default:
			res.Rejected = append(res.Rejected, Rejection{ID: c.ID, Error: why[i]})
		}
	}
	res.SwipeCount, res.LearningPhase = stored.SwipeCount, string(match.PhaseFor(stored.SwipeCount))
	if accepted > 0 {
		afterBatch(ctx, s.c.Redis, s.c.Count, s.c.Log, studentID, stored)
	}
	countBatch(s.c.Count, sorted, stored, nil) // a synced swipe's slot is not known: ranked
	pos, safe, err := s.c.Store.ChangeWatermark(ctx, s.c.MaxWait)
	if err != nil {
		return PushResult{}, err
	}
	if safe {
		c := domain.EncodeCursor(key, studentID, pos)
		res.Cursor = &c
	}
	return res, nil
}

func occurredAt(c domain.Change) time.Time {
	if c.Type == domain.ChangeFeedback {
		return c.Feedback.OccurredAt
	}
	return c.Swipe.OccurredAt
}

// predictBatch fills in what each new swipe's stored answer says: whether
// folding it moves a weight of the model known now (read as before a
// swipe, else from PostgreSQL). A batched swipe is never taken as a probe
// here and asks for no feedback, unless the caller set those.
func predictBatch(ctx context.Context, r SwipeRedis, st BatchStore, cats Catalogs, log *slog.Logger, studentID string, changes []domain.Change) {
	cat := cats.Scoring()
	if cat == nil {
		return
	}
	var (
		p     match.Profile
		model match.Model
		ok    bool
	)
	if view, err := r.BeforeSwipe(ctx, studentID); err == nil {
		p, model, ok = viewModel(view)
	}
	if !ok {
		ls, err := st.LearnerState(ctx, studentID)
		if err != nil || ls.Student.DeletedAt != nil {
			return // the store answers for an unknown or erased student
		}
		p, model, _ = match.Start(ls)
	}
	for k := range changes {
		c := &changes[k]
		if c.Type != domain.ChangeSwipe || c.Problem != "" {
			continue
		}
		idx, known := cat.Index(c.Swipe.SchoolID)
		if !known {
			continue
		}
		dir, _ := match.ParseDirection(c.Swipe.Direction)
		_, c.Swipe.UpdatedWeights = model.ObserveWeights(p, cat, match.Observation{Index: idx, Interaction: c.Swipe.Interaction, Direction: dir})
	}
	_ = log
}

// afterBatch patches the student's stored feed to the batch (its counts,
// its swiped schools out) and queues its learn task, in one round trip and
// best effort (the learn sweep repairs a lost task, and the worker's
// rebuild the feed).
func afterBatch(ctx context.Context, r SwipeRedis, count Counter, log *slog.Logger, studentID string, stored domain.BatchResult) {
	ctx = context.WithoutCancel(ctx)
	job := tasks.LearnMark(studentID, stored.Version)
	if len(stored.Swipes) == 0 && stored.LastFeedbackID != 0 {
		job = tasks.LearnJob(studentID, 0, stored.LastFeedbackID)
	}
	patch := cache.FeedPatch{StudentID: studentID, Version: stored.Version, SwipeCount: stored.SwipeCount}
	for _, sw := range stored.Swipes {
		if sw.Counted() {
			patch.Swiped = append(patch.Swiped, sw.SchoolID)
		}
	}
	result, err := r.AfterWrite(ctx, patch, job)
	if err != nil {
		log.DebugContext(ctx, "feed not dropped or learn task not queued; the worker's rebuild and learn sweep do it",
			"student_id", studentID, "err", err)
		return
	}
	count.FeedPatch(string(result))
}

func canonicalID(id string) string {
	if u, err := uuid.Parse(id); err == nil {
		return u.String()
	}
	return id
}

// validateChange checks one change of a push with the validators of POST
// /swipe and POST /feedback, and the rules of sync: occurred_at is required
// and recent, and fields of the other type are refused. ok is false when
// the change has no usable id (it cannot be told apart from others, so it
// is rejected before the store); otherwise Problem says what else is
// wrong, if anything.
func validateChange(studentID string, c Change, now time.Time) (dc domain.Change, ok bool) {
	u, err := uuid.Parse(c.ID)
	if err != nil || len(c.ID) != 36 {
		return domain.Change{Problem: "id must be a UUID"}, false
	}
	id := u.String()
	school := c.SchoolID
	if sid, err := uuid.Parse(c.SchoolID); err == nil && len(c.SchoolID) == 36 {
		school = sid.String()
	}
	dc = domain.Change{Type: c.Type,
		Swipe: domain.Swipe{StudentID: studentID, SchoolID: school, Direction: c.Direction, Interaction: c.InteractionType,
			TimeSpent: c.TimeSpent, ClientID: id},
		Feedback: domain.Feedback{StudentID: studentID, SchoolID: school, Reason: c.Reason, Comment: c.Comment, ClientID: id}}
	if dc.Type == domain.ChangeSwipe && dc.Swipe.Interaction == "" {
		dc.Swipe.Interaction = domain.InteractionSwipe
	}
	problem := func(p string) (domain.Change, bool) { dc.Problem = p; return dc, true }
	if c.Problem != "" {
		return problem(c.Problem)
	}
	var problems map[string]string
	switch c.Type {
	case domain.ChangeSwipe:
		for _, f := range []string{"reason", "comment"} {
			if c.Set[f] {
				return problem(f + " is not allowed on a swipe")
			}
		}
		var sw domain.Swipe
		sw, problems = ValidateSwipe(SwipeInput{StudentID: studentID, SchoolID: c.SchoolID, Direction: c.Direction,
			InteractionType: c.InteractionType, TimeSpent: c.TimeSpent, ClientID: id})
		dc.Swipe = sw
	case domain.ChangeFeedback:
		for _, f := range []string{"direction", "interaction_type", "time_spent"} {
			if c.Set[f] {
				return problem(f + " is not allowed on feedback")
			}
		}
		var fb domain.Feedback
		fb, problems = ValidateFeedback(FeedbackInput{StudentID: studentID, SchoolID: c.SchoolID, Reason: c.Reason, Comment: c.Comment})
		fb.ClientID = id
		dc.Feedback = fb
	default:
		return problem("type must be swipe or feedback")
	}
	for _, f := range []string{"school_id", "direction", "interaction_type", "time_spent", "reason", "comment"} {
		if p, bad := problems[f]; bad {
			return problem(f + " " + p)
		}
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
	dc.Swipe.OccurredAt, dc.Feedback.OccurredAt = at.UTC(), at.UTC()
	return dc, true
}
