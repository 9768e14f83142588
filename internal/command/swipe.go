package command

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/tasks"
)

// SwipeStore is what recording swipes needs from PostgreSQL (*store.Store).
type SwipeStore interface {
	// RecordSwipe stores a swipe in one statement: the student's lock, the
	// idempotency check, the school check, the row, the count and version
	// and the swipe.recorded event. INVALID_STUDENT_ID for an unknown or
	// erased student, INVALID_SCHOOL_ID for an unknown or inactive school.
	RecordSwipe(ctx context.Context, s domain.Swipe) (domain.RecordedSwipe, error)
	// LearnerState reads the student with the learned model: what a swipe
	// is predicted from when Redis has no read model of the student.
	LearnerState(ctx context.Context, studentID string) (domain.LearnerState, error)
}

// SwipeRedis is the write side's Redis (*cache.SwipeTrips): one round trip
// before the commit, one after.
type SwipeRedis interface {
	// BeforeSwipe reads what answers are predicted from: the stored feed's
	// profile and model, and each school's slot in it and probe memory.
	BeforeSwipe(ctx context.Context, studentID string, schoolIDs ...string) (cache.SwipeView, error)
	// ViewRead is BeforeSwipe's read as a command for a caller's pipeline.
	ViewRead(studentID string, schoolIDs ...string) (*cache.SwipeViewRead, error)
	// AfterWrite patches the stored feed to committed writes (counts,
	// version, the swiped schools out) and queues jobs, and says what the
	// patch did.
	AfterWrite(ctx context.Context, p cache.FeedPatch, jobs ...handover.Job) (cache.PatchResult, error)
}

// Catalogs gives the school catalogue currently held in memory.
type Catalogs interface {
	Scoring() *match.Catalog
}

// SwipesConfig is what NewSwipes needs; every field is required.
type SwipesConfig struct {
	Store    SwipeStore
	Batch    BatchStore // the swipes a continuous-feed request carries
	Redis    SwipeRedis
	Catalogs Catalogs
	Log      *slog.Logger
	Count    Counter // optional: what was recorded is counted here
}

// Swipes records students' swipes (POST /swipe, the swipes sent with POST
// /continuous-feed).
type Swipes struct {
	store    SwipeStore
	batch    BatchStore
	redis    SwipeRedis
	catalogs Catalogs
	log      *slog.Logger
	count    Counter
}

// NewSwipes builds the swipe recorder.
func NewSwipes(c SwipesConfig) *Swipes {
	if c.Store == nil || c.Batch == nil || c.Redis == nil || c.Catalogs == nil || c.Log == nil {
		panic("command.NewSwipes: missing dependency")
	}
	return &Swipes{store: c.Store, batch: c.Batch, redis: c.Redis, catalogs: c.Catalogs, log: c.Log, count: orNoCount(c.Count)}
}

// Bounds of what a swipe may carry.
const (
	// MaxTimeSpent is the largest time_spent accepted: a day, in seconds.
	MaxTimeSpent = 86400
	// MaxClientIDLength bounds an Idempotency-Key.
	MaxClientIDLength = 255
)

// Timestamp formats an event time: ISO 8601 in UTC with milliseconds.
func Timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// ValidateSwipe is the one check of a swipe, whatever carried it (POST
// /swipe, POST /continuous-feed, a sync push): ids that are UUIDs (put in
// canonical lower case), a direction, an interaction type (swipe by
// default), a time spent within a day (kept to the millisecond) and a
// client id of printable ASCII. It returns the problems by field, none
// when the swipe is valid.
func ValidateSwipe(in SwipeInput) (domain.Swipe, map[string]string) {
	var problems map[string]string // made at the first problem: none for a valid swipe
	add := func(field, problem string) {
		if problems == nil {
			problems = map[string]string{}
		}
		problems[field] = problem
	}
	out := domain.Swipe{Direction: in.Direction, Interaction: in.InteractionType, ClientID: in.ClientID,
		OccurredAt: in.OccurredAt}
	var ok bool
	if out.StudentID, ok = canonicalUUID(in.StudentID); !ok {
		add("student_id", "must be a UUID")
	}
	if out.SchoolID, ok = canonicalUUID(in.SchoolID); !ok {
		add("school_id", "must be a UUID")
	}
	if _, ok := match.ParseDirection(in.Direction); !ok {
		add("direction", "must be left or right")
	}
	if out.Interaction == "" {
		out.Interaction = domain.InteractionSwipe
	}
	if !match.ValidInteraction(out.Interaction) {
		add("interaction_type", "must be swipe, tap, detail_view or save")
	}
	if t := in.TimeSpent; t != nil {
		if math.IsNaN(*t) || *t < 0 || *t > MaxTimeSpent {
			add("time_spent", fmt.Sprintf("must be a number of seconds from 0 to %d", MaxTimeSpent))
		} else {
			v := math.Round(*t*1000) / 1000 // to the millisecond, as it comes back
			out.TimeSpent = &v
		}
	}
	if p := ClientIDProblem(in.ClientID); p != "" {
		add("swipe_id", p)
	}
	if id, ok := canonicalUUID(in.ClientID); ok {
		out.ClientID = id // one spelling of a UUID key, whatever its letter case
	}
	return out, problems
}

// canonicalUUID is s in canonical form (8-4-4-4-12 hex digits, lower
// case), or false when s is not a UUID in 8-4-4-4-12 form. A UUID already
// in canonical form is returned as it is (no copy).
func canonicalUUID(s string) (string, bool) {
	u, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'F' {
			return u.String(), true
		}
	}
	return s, true
}

// ClientIDProblem says what is wrong with a client id (a swipe_id or an
// Idempotency-Key), "" when nothing: at most MaxClientIDLength printable
// ASCII characters.
func ClientIDProblem(id string) string {
	if len(id) > MaxClientIDLength {
		return fmt.Sprintf("must be at most %d characters", MaxClientIDLength)
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return "must be printable ASCII without spaces"
		}
	}
	return ""
}

func summarize(problems map[string]string) string {
	if len(problems) == 1 {
		for f, p := range problems {
			return f + " " + p
		}
	}
	return fmt.Sprintf("%d fields are invalid; see details.fields", len(problems))
}

// Redis calls on the swipe path are bounded (cache.CallTimeout, and the
// cache's breaker skips Redis for a second after a failure), so a slow or
// unreachable Redis costs a swipe little: it is committed either way.

// Record records one swipe and answers with the exact swipe count, the
// phase and what the client should do next; a nil error means it is
// committed. One Redis round trip before the commit, one PostgreSQL
// statement, one Redis round trip after it:
//
//   - before: the probe memory (a counted swipe on a school served as a
//     probe asks for feedback) and the student's learned model from their
//     stored feed, to predict the swipe: UpdatedWeights (folding it moves a
//     preference weight) and a pattern break (the model gave the other
//     direction a probability of at least 0.8; it asks for feedback too).
//     Without a stored feed (or without Redis) the model is read from
//     PostgreSQL instead.
//   - the statement stores the swipe with what its answer says, so a retry
//     with the same client id gets the same answer, derived from the row;
//     used for another school, direction or interaction the id is 409.
//   - after: the stored feed is patched (count, phase, progress and version
//     move, a counted swipe's school leaves the list: the next read is a
//     cache hit with the exact count) and the student is marked in their
//     shard's learn drain (tasks.LearnMark).
//     A failure is logged and left to the worker's rebuild and learn sweep.
//
// Only interaction_type swipe is counted and published (swipe.recorded);
// tap, detail_view and save are stored as weak signals for the learner.
func (s *Swipes) Record(ctx context.Context, in SwipeInput) (SwipeResult, error) {
	return s.RecordRead(ctx, in, nil)
}

// SwipeRead is the read a swipe is predicted from (cache.SwipeViewRead),
// made in a round trip of the caller's.
type SwipeRead = cache.SwipeViewRead

// ReadBefore builds the read a swipe of studentID on schoolID is predicted
// from, for the caller to make in a round trip of its own (POST /swipe
// makes it with the request's rate-limit count) and hand to RecordRead;
// nil when there is nothing to read (schoolID is not a UUID: the swipe is
// refused).
func (s *Swipes) ReadBefore(studentID, schoolID string) *SwipeRead {
	school, ok := canonicalUUID(schoolID)
	if !ok {
		return nil
	}
	read, err := s.redis.ViewRead(studentID, school) // as ValidateSwipe writes it
	if err != nil {
		return nil
	}
	return read
}

// RecordRead is Record with the read before the commit already made
// (ReadBefore): when it is of this swipe and answered, the swipe makes no
// Redis round trip of its own before the commit. nil, or a read that
// failed, and Record reads as usual.
func (s *Swipes) RecordRead(ctx context.Context, in SwipeInput, read *SwipeRead) (SwipeResult, error) {
	sw, problems := ValidateSwipe(in)
	if len(problems) > 0 {
		return SwipeResult{}, domain.Invalid(summarize(problems), problems)
	}
	batch := []domain.Swipe{sw}
	slot := s.predictRead(ctx, batch, read)[0]
	sw = batch[0]
	rec, err := s.store.RecordSwipe(ctx, sw)
	if err != nil {
		return SwipeResult{}, err
	}
	if rec.Duplicate {
		return replay(sw, rec)
	}
	s.afterCommit(ctx, rec)
	countSwipe(s.count, rec, slot)
	res := Answer(rec)
	res.Slot = slot
	return res, nil
}

// predict fills in what the answers of swipes (one student's, in order)
// say before they are stored, and returns each school's slot in the stored
// feed ("" when not known). Each swipe is predicted with the model that
// has folded the ones before it.
func (s *Swipes) predict(ctx context.Context, sws []domain.Swipe) []string {
	return s.predictRead(ctx, sws, nil)
}

// predictRead is predict from read when it is the read of these swipes and
// it answered.
func (s *Swipes) predictRead(ctx context.Context, sws []domain.Swipe, read *SwipeRead) []string {
	if len(sws) == 0 {
		return nil
	}
	schools := make([]string, len(sws))
	for i, sw := range sws {
		schools[i] = sw.SchoolID
	}
	var view cache.SwipeView
	made := false
	if read.For(sws[0].StudentID, schools...) {
		var err error
		view, err = read.View()
		made = err == nil
	}
	if !made {
		var err error
		if view, err = s.redis.BeforeSwipe(ctx, sws[0].StudentID, schools...); err != nil {
			s.log.DebugContext(ctx, "no read model before a swipe; predicting from PostgreSQL", "student_id", sws[0].StudentID, "err", err)
			view = cache.SwipeView{Slots: make([]string, len(sws)), WasProbe: make([]bool, len(sws))}
		}
	}
	for i := range sws {
		sws[i].IsProbe = sws[i].Counted() && view.WasProbe[i]
		sws[i].TriggerFeedback = sws[i].IsProbe
	}
	cat := s.catalogs.Scoring()
	if cat == nil {
		return view.Slots
	}
	p, m, ok := viewModel(view)
	if !ok {
		st, err := s.store.LearnerState(ctx, sws[0].StudentID)
		if err != nil || st.Student.DeletedAt != nil {
			return view.Slots // the statement answers for an unknown or erased student
		}
		p, m, _ = match.Start(st)
	}
	for i := range sws {
		sw := &sws[i]
		idx, known := cat.Index(sw.SchoolID)
		if !known {
			continue
		}
		dir, _ := match.ParseDirection(sw.Direction)
		sw.TriggerFeedback = sw.IsProbe || (sw.Counted() && m.PatternBreak(p, cat, idx, dir))
		m, sw.UpdatedWeights = m.ObserveWeights(p, cat, match.Observation{Index: idx, Interaction: sw.Interaction, Direction: dir})
	}
	return view.Slots
}

// viewModel decodes the profile and model of a stored feed.
func viewModel(v cache.SwipeView) (match.Profile, match.Model, bool) {
	var m match.Model
	if !v.Found {
		return match.Profile{}, m, false
	}
	p, err := match.ParseProfile(v.Profile)
	if err != nil {
		return p, m, false
	}
	m, err = match.DecodeModel(v.Model)
	if err != nil {
		return p, m, false
	}
	return p, m, true
}

// afterCommit patches the student's stored feed and hands the learn task
// over (the student marked for their shard's learn drain), in one Redis
// round trip, even if the client has gone.
func (s *Swipes) afterCommit(ctx context.Context, rec domain.RecordedSwipe) {
	ctx = context.WithoutCancel(ctx)
	patch := cache.FeedPatch{StudentID: rec.StudentID, Version: rec.Version, SwipeCount: rec.SwipeCount}
	if rec.Counted() {
		patch.Swiped = []string{rec.SchoolID}
	}
	result, err := s.redis.AfterWrite(ctx, patch, tasks.LearnMark(rec.StudentID, rec.Version))
	if err != nil {
		s.log.DebugContext(ctx, "feed not patched or learn task not queued; the worker's rebuild and learn sweep do it",
			"student_id", rec.StudentID, "err", err)
		return
	}
	s.count.FeedPatch(string(result))
}

// Answer is what a recorded swipe answers, derived from the row: the count
// once it was recorded, its phase, and the flags it was stored with.
func Answer(rec domain.RecordedSwipe) SwipeResult {
	phase := match.PhaseFor(rec.SwipeCount)
	return SwipeResult{SwipeCount: rec.SwipeCount, Phase: string(phase), UIMessage: phase.UIMessage(),
		Progress: match.Progress(rec.SwipeCount), UpdatedWeights: rec.UpdatedWeights,
		TriggerFeedback: rec.TriggerFeedback, FeedbackOptions: match.FeedbackOptions(), IsProbe: rec.IsProbe,
		Duplicate: rec.Duplicate}
}

// replay answers a retry with the first swipe's answer, or a conflict when
// the client id named another swipe.
func replay(in domain.Swipe, first domain.RecordedSwipe) (SwipeResult, error) {
	if !strings.EqualFold(first.SchoolID, in.SchoolID) || first.Direction != in.Direction || first.Interaction != in.Interaction {
		return SwipeResult{}, &domain.Error{Kind: domain.KindConflict, Code: domain.CodeInvalidRequest,
			Message: "this swipe_id (or Idempotency-Key) was already used for another swipe; use a new id for a new swipe",
			Details: map[string]any{
				"fields": map[string]string{"swipe_id": "was already used for a swipe with another school_id, direction or interaction_type"},
				"first":  map[string]string{"school_id": first.SchoolID, "direction": first.Direction, "interaction_type": first.Interaction},
			}}
	}
	return Answer(first), nil
}

// Carried is what recording the swipes a continuous-feed request carried
// did: whether any was recorded, the student's counted swipes after them,
// and the schools they swiped (counted swipes), which the page leaves out.
type Carried struct {
	Recorded   bool
	SwipeCount int
	Swiped     []string
}

// RecordCarried records the swipes a continuous-feed request carries, in
// order, exactly as Record records each (the same check, prediction, row,
// count and event), in one transaction sent in one round trip, then
// patches the stored feed and queues the learn task in one more. A swipe
// that is invalid or names a school the catalogue does not hold fails the
// request before anything is stored, with the error named after it
// (swipes[2].school_id); so does a client id used before for another swipe,
// after the others are stored (details.swipes_recorded says how many).
func (s *Swipes) RecordCarried(ctx context.Context, studentID string, in []SwipeInput) (Carried, error) {
	if len(in) == 0 {
		return Carried{}, nil
	}
	sws := make([]domain.Swipe, len(in))
	for i, x := range in {
		x.StudentID = studentID
		sw, problems := ValidateSwipe(x)
		if len(problems) > 0 {
			return Carried{}, carriedError(i, 0, domain.Invalid(summarize(problems), problems))
		}
		sws[i] = sw
	}
	if cat := s.catalogs.Scoring(); cat != nil {
		for i, sw := range sws {
			if _, ok := cat.Index(sw.SchoolID); !ok {
				// The student is checked before the school, as everywhere.
				if st, err := s.store.LearnerState(ctx, studentID); err != nil {
					return Carried{}, err
				} else if st.Student.DeletedAt != nil {
					return Carried{}, domain.StudentNotFound(studentID)
				}
				return Carried{}, carriedError(i, 0, domain.SchoolNotFound(sw.SchoolID))
			}
		}
	}
	slots := make(map[string]string, len(sws))
	for i, slot := range s.predict(ctx, sws) {
		slots[sws[i].SchoolID] = slot
	}
	changes := make([]domain.Change, len(sws))
	for i, sw := range sws {
		if sw.ClientID == "" {
			sw.ClientID = uuid.NewString() // a batch stores each change under an id
		}
		changes[i] = domain.Change{Type: domain.ChangeSwipe, Swipe: sw}
	}
	stored, err := s.batch.RecordBatch(ctx, studentID, changes)
	if err != nil {
		return Carried{}, err
	}
	out := Carried{SwipeCount: stored.SwipeCount}
	recorded := 0
	var failed error
	for i, o := range stored.Outcomes {
		switch o {
		case domain.Accepted, domain.Duplicate:
			recorded++
			out.Recorded = true
			if sws[i].Counted() {
				out.Swiped = append(out.Swiped, sws[i].SchoolID)
			}
		default:
			if failed == nil {
				failed = carriedError(i, 0, carriedRejection(sws[i], stored.Errors[i]))
			}
		}
	}
	if len(stored.Swipes) > 0 {
		afterBatch(ctx, s.redis, s.count, s.log, studentID, stored)
	}
	countBatch(s.count, changes, stored, slots)
	if failed != nil {
		var de *domain.Error
		if errors.As(failed, &de) {
			de.Details["swipes_recorded"] = recorded
		}
		return out, failed
	}
	return out, nil
}

// carriedRejection is the error of a carried swipe the batch rejected.
func carriedRejection(sw domain.Swipe, why string) error {
	if strings.HasPrefix(why, "school_id") {
		return domain.SchoolNotFound(sw.SchoolID)
	}
	return &domain.Error{Kind: domain.KindConflict, Code: domain.CodeInvalidRequest,
		Message: "this swipe_id (or Idempotency-Key) was already used for another swipe; use a new id for a new swipe",
		Details: map[string]any{"fields": map[string]string{"swipe_id": "was already used for a swipe with another school_id, direction or interaction_type"}}}
}

// carriedError names err after the carried swipe at index i
// (swipes[i].field), with how many swipes were recorded.
func carriedError(i, recorded int, err error) error {
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind == domain.KindInternal {
		return err
	}
	out := *de
	prefix := "swipes[" + strconv.Itoa(i) + "]"
	out.Message = prefix + ": " + de.Message
	out.Details = maps.Clone(de.Details)
	if out.Details == nil {
		out.Details = map[string]any{}
	}
	switch f := de.Details["fields"].(type) {
	case map[string]string:
		named := make(map[string]string, len(f))
		for k, v := range f {
			named[prefix+"."+k] = v
		}
		out.Details["fields"] = named
	case map[string]any:
		named := make(map[string]any, len(f))
		for k, v := range f {
			named[prefix+"."+k] = v
		}
		out.Details["fields"] = named
	}
	if de.Code == domain.CodeInvalidSchoolID {
		out.Details["field"] = prefix + ".school_id"
	}
	out.Details["swipe_index"] = i
	out.Details["swipes_recorded"] = recorded
	return &out
}
