package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/tasks"
)

// ScoringState is what the write side reads about a student to predict a
// swipe: the profile, the onboarding category preferences and the stored
// learned model.
type ScoringState struct {
	Student    domain.Student
	Categories []match.CategoryPreference
	// Model is learning_state.model (JSON) and Weights learning_state.weights,
	// nil before any learning.
	Model   []byte
	Weights map[string]float64
}

// SwipeRecord is one swipe as the store records it.
type SwipeRecord struct {
	StudentID       string
	SchoolID        string
	Direction       string
	InteractionType string
	Counted         bool
	IsProbe         bool
	TimeSpent       *float64
	ClientID        string
	OccurredAt      time.Time
}

// StoredSwipe is what the store recorded, or found under the same client id.
type StoredSwipe struct {
	ID              int64
	Duplicate       bool // the client id was used before; the fields are the first swipe's
	SchoolID        string
	Direction       string
	InteractionType string
	Response        []byte
	SwipeCount      int
	Version         int64
	OutboxID        int64
}

// Event is an outbox event written with a fact: its topic and payload.
type Event struct {
	Topic   string
	Payload any
}

// SwipeStore is what recording swipes needs from the database.
type SwipeStore interface {
	// ScoringState loads the student; INVALID_STUDENT_ID when unknown. An
	// erased student is returned with DeletedAt set.
	ScoringState(ctx context.Context, studentID string) (ScoringState, error)
	// RecordSwipe stores the swipe, the event made by event and the
	// response made by respond from the exact swipe count, in one
	// transaction; see store.Store.RecordSwipe.
	RecordSwipe(ctx context.Context, r SwipeRecord, event func(swipeID int64, at time.Time) Event,
		respond func(swipeCount int) ([]byte, error)) (StoredSwipe, error)
	// MarkOutboxPublished marks events whose tasks were queued.
	MarkOutboxPublished(ctx context.Context, ids []int64) error
}

// ProbeMemory tells whether a school was served to a student as a probe
// recently (cache.Probes).
type ProbeMemory interface {
	WasProbe(ctx context.Context, studentID, schoolID string) (bool, error)
}

// FeedVersions drops a student's stored feed once their state has moved
// to version (cache.Feeds.Invalidate), so reads after a swipe never show
// the count, phase or list from before it.
type FeedVersions interface {
	Invalidate(ctx context.Context, studentID string, version int64) error
}

// Catalogs gives the school catalogue currently held in memory.
type Catalogs interface {
	Current() *match.Catalog
}

// SwipesConfig is what NewSwipes needs; every field is required.
type SwipesConfig struct {
	Store    SwipeStore
	Probes   ProbeMemory
	Feeds    FeedVersions
	Catalogs Catalogs
	Queue    tasks.Enqueuer
	// Router routes the outbox topics the write side writes. It must hold
	// every route the worker's router has for those topics: the fast path
	// marks a row published once its router's jobs are queued, and the
	// relay then never hands it over again.
	Router *tasks.Router
	Log    *slog.Logger
}

// Swipes records students' swipes (POST /swipe, the swipes sent with POST
// /continuous-feed).
type Swipes struct {
	store    SwipeStore
	probes   ProbeMemory
	feeds    FeedVersions
	catalogs Catalogs
	queue    tasks.Enqueuer
	router   *tasks.Router
	log      *slog.Logger
	redis    breaker // probe lookups and enqueues: Redis
}

// NewSwipes builds the swipe recorder.
func NewSwipes(c SwipesConfig) *Swipes {
	if c.Store == nil || c.Probes == nil || c.Feeds == nil || c.Catalogs == nil || c.Queue == nil || c.Router == nil || c.Log == nil {
		panic("command.NewSwipes: missing dependency")
	}
	return &Swipes{store: c.Store, probes: c.Probes, feeds: c.Feeds, catalogs: c.Catalogs, queue: c.Queue,
		router: c.Router, log: c.Log}
}

// Bounds of what a swipe may carry.
const (
	// MaxTimeSpent is the largest time_spent accepted: a day, in seconds.
	MaxTimeSpent = 86400
	// MaxClientIDLength bounds an Idempotency-Key.
	MaxClientIDLength = 255
)

// Redis calls on the swipe path are bounded, so an unreachable Redis costs
// a swipe little: the swipe is committed either way.
const (
	probeTimeout   = 250 * time.Millisecond
	enqueueTimeout = time.Second
	// redisPause is how long Redis is left alone after a failed call.
	redisPause = time.Second
)

// breaker skips a dependency for a while after it failed.
type breaker struct{ downUntil atomic.Int64 }

func (b *breaker) open() bool { return time.Now().UnixNano() < b.downUntil.Load() }
func (b *breaker) failed()    { b.downUntil.Store(time.Now().Add(redisPause).UnixNano()) }
func (b *breaker) succeeded() { b.downUntil.Store(0) }

// storedResponse is the response kept on the swipe row, returned as it is
// to a retry with the same client id.
type storedResponse struct {
	SwipeCount      int      `json:"swipe_count"`
	Phase           string   `json:"learning_phase"`
	UIMessage       string   `json:"ui_message"`
	Progress        float64  `json:"progress"`
	UpdatedWeights  bool     `json:"updated_weights"`
	TriggerFeedback bool     `json:"trigger_feedback"`
	FeedbackOptions []string `json:"feedback_options"`
	IsProbe         bool     `json:"is_probe"`
}

func (r storedResponse) result(duplicate bool) SwipeResult {
	opts := r.FeedbackOptions
	if opts == nil {
		opts = match.FeedbackOptions()
	}
	return SwipeResult{SwipeCount: r.SwipeCount, Phase: r.Phase, UIMessage: r.UIMessage, Progress: r.Progress,
		UpdatedWeights: r.UpdatedWeights, TriggerFeedback: r.TriggerFeedback, FeedbackOptions: opts,
		IsProbe: r.IsProbe, Duplicate: duplicate}
}

// SwipePayload is the payload of the swipe.recorded and interaction.recorded
// outbox events: the webhook's data (student_id, school_id, direction,
// timestamp) and the swipe's row id.
type SwipePayload struct {
	StudentID string `json:"student_id"`
	SchoolID  string `json:"school_id"`
	Direction string `json:"direction"`
	Timestamp string `json:"timestamp"` // ISO 8601, UTC, milliseconds
	SwipeID   int64  `json:"swipe_id"`
	// InteractionType is set on interaction.recorded only.
	InteractionType string `json:"interaction_type,omitempty"`
	// LearnBatched is set on the swipes of an offline sync push: the push's
	// own sync.pushed event asks for their learning (tasks.LearnRoute).
	LearnBatched bool `json:"learn_batched,omitempty"`
}

// SyncedSwipeResponse is the response stored with a swipe an offline sync
// push recorded, which POST /swipe returns to a retry with the same id:
// the exact swipe count once it was recorded, its phase, and whether it
// moves the weights of the model stored when it arrived. A synced swipe is
// never taken as a probe and asks for no feedback: the moment has passed.
func SyncedSwipeResponse(swipeCount int, updatedWeights bool) ([]byte, error) {
	phase := match.PhaseFor(swipeCount)
	return json.Marshal(storedResponse{SwipeCount: swipeCount, Phase: string(phase), UIMessage: phase.UIMessage(),
		Progress: match.Progress(swipeCount), UpdatedWeights: updatedWeights, FeedbackOptions: match.FeedbackOptions()})
}

// Timestamp formats an event time: ISO 8601 in UTC with milliseconds.
func Timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// normalize validates a swipe and puts its ids and interaction in canonical
// form.
func normalize(in SwipeInput) (SwipeInput, error) {
	problems := map[string]string{}
	for field, v := range map[string]*string{"student_id": &in.StudentID, "school_id": &in.SchoolID} {
		u, err := uuid.Parse(*v)
		if err != nil || len(*v) != 36 {
			problems[field] = "must be a UUID"
			continue
		}
		*v = u.String()
	}
	if _, ok := match.ParseDirection(in.Direction); !ok {
		problems["direction"] = "must be left or right"
	}
	if in.InteractionType == "" {
		in.InteractionType = match.InteractionSwipe
	}
	if !match.ValidInteraction(in.InteractionType) {
		problems["interaction_type"] = "must be swipe, tap, detail_view or save"
	}
	if t := in.TimeSpent; t != nil && (math.IsNaN(*t) || *t < 0 || *t > MaxTimeSpent) {
		problems["time_spent"] = fmt.Sprintf("must be a number of seconds from 0 to %d", MaxTimeSpent)
	}
	if p := ClientIDProblem(in.ClientID); p != "" {
		problems["swipe_id"] = p
	}
	if len(problems) > 0 {
		return in, domain.Invalid(summarize(problems), problems)
	}
	if u, err := uuid.Parse(in.ClientID); err == nil && len(in.ClientID) == 36 {
		in.ClientID = u.String() // one spelling of a UUID key, whatever its letter case
	}
	return in, nil
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

// Record records one swipe and answers with the exact swipe count, the
// phase and what the client should do next. A 200 built from its result
// means the swipe is committed.
//
//   - Only interaction_type swipe is counted and writes swipe.recorded (the
//     webhook event); tap, detail_view and save are stored as weak signals
//     and write interaction.recorded, which only the learner reads.
//   - UpdatedWeights: whether folding this swipe into the student's stored
//     model moves any preference weight. The worker folds it within about
//     a second; the weights themselves are not in the answer.
//   - TriggerFeedback: for a counted swipe, the school had been served to
//     the student as a probe (within FEED_CACHE_TTL), or the stored model
//     had given the other direction a probability of at least 0.8.
//   - A client id used before by the student returns the first answer
//     (Duplicate) and stores nothing; used for another school, direction
//     or interaction it is 409 with code INVALID_REQUEST.
//   - Redis is not needed: an unreachable Redis means "not known as a
//     probe", and the learn task is handed over by the worker's relay.
func (s *Swipes) Record(ctx context.Context, in SwipeInput) (SwipeResult, error) {
	in, err := normalize(in)
	if err != nil {
		return SwipeResult{}, err
	}
	st, err := s.store.ScoringState(ctx, in.StudentID)
	if err != nil {
		return SwipeResult{}, err
	}
	if st.Student.DeletedAt != nil {
		return SwipeResult{}, domain.StudentNotFound(in.StudentID)
	}
	dir, _ := match.ParseDirection(in.Direction)
	counted := in.InteractionType == match.InteractionSwipe
	isProbe := counted && s.wasProbe(ctx, in.StudentID, in.SchoolID)

	// What the stored model says about this swipe, before it is folded in.
	cat := s.catalogs.Current()
	p, prior := match.CategoryStart(match.NewProfile(st.Student), st.Categories)
	model := StudentModel(st.Model, st.Weights, prior)
	var patternBreak, updated bool
	if cat != nil {
		if idx, ok := cat.Index(in.SchoolID); ok {
			obs := match.Observation{Index: idx, Interaction: in.InteractionType, Direction: dir}
			_, updated = model.Observe(p, cat, obs)
			patternBreak = counted && model.PatternBreak(p, cat, idx, dir)
		}
	}
	resp := storedResponse{UpdatedWeights: updated, TriggerFeedback: isProbe || patternBreak,
		FeedbackOptions: match.FeedbackOptions(), IsProbe: isProbe}

	rec := SwipeRecord{StudentID: in.StudentID, SchoolID: in.SchoolID, Direction: in.Direction,
		InteractionType: in.InteractionType, Counted: counted, IsProbe: isProbe, TimeSpent: in.TimeSpent,
		ClientID: in.ClientID, OccurredAt: in.OccurredAt}
	topic := tasks.TopicSwipeRecorded
	if !counted {
		topic = tasks.TopicInteractionRecorded
	}
	event := func(id int64, at time.Time) Event {
		pl := SwipePayload{StudentID: in.StudentID, SchoolID: in.SchoolID, Direction: in.Direction,
			Timestamp: Timestamp(at), SwipeID: id}
		if !counted {
			pl.InteractionType = in.InteractionType
		}
		return Event{Topic: topic, Payload: pl}
	}
	respond := func(count int) ([]byte, error) {
		phase := match.PhaseFor(count)
		resp.SwipeCount, resp.Phase, resp.UIMessage, resp.Progress = count, string(phase), phase.UIMessage(), match.Progress(count)
		return json.Marshal(resp)
	}
	stored, err := s.store.RecordSwipe(ctx, rec, event, respond)
	if err != nil {
		return SwipeResult{}, err
	}
	if stored.Duplicate {
		return s.replay(in, stored)
	}
	s.afterCommit(ctx, in.StudentID, stored.Version, stored.OutboxID, topic)
	res := resp.result(false)
	res.Slot = "ranked"
	if res.IsProbe {
		res.Slot = "probe"
	}
	return res, nil
}

// replay answers a retry with the first swipe's stored response, or a
// conflict when the client id named another swipe.
func (s *Swipes) replay(in SwipeInput, first StoredSwipe) (SwipeResult, error) {
	if !strings.EqualFold(first.SchoolID, in.SchoolID) || first.Direction != in.Direction || first.InteractionType != in.InteractionType {
		return SwipeResult{}, &domain.Error{Kind: domain.KindConflict, Code: domain.CodeInvalidRequest,
			Message: "this swipe_id (or Idempotency-Key) was already used for another swipe; use a new id for a new swipe",
			Details: map[string]any{
				"fields": map[string]string{"swipe_id": "was already used for a swipe with another school_id, direction or interaction_type"},
				"first":  map[string]string{"school_id": first.SchoolID, "direction": first.Direction, "interaction_type": first.InteractionType},
			}}
	}
	if first.Response == nil {
		return SwipeResult{}, errors.New("a recorded swipe has no stored response")
	}
	var r storedResponse
	if err := json.Unmarshal(first.Response, &r); err != nil {
		return SwipeResult{}, fmt.Errorf("decode the stored swipe response: %w", err)
	}
	return r.result(true), nil
}

// wasProbe asks the probe memory; any failure means "not known as a probe".
func (s *Swipes) wasProbe(ctx context.Context, studentID, schoolID string) bool {
	if s.redis.open() {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	ok, err := s.probes.WasProbe(ctx, studentID, schoolID)
	if err != nil {
		s.redis.failed()
		s.log.WarnContext(ctx, "probe memory unavailable; the swipe is taken as no probe", "student_id", studentID, "err", err)
		return false
	}
	s.redis.succeeded()
	return ok
}

// afterCommit drops the student's stored feed and hands the event's tasks
// to the queue. Both are best effort: the feed's TTL and the worker's
// rebuild bound a stale feed, and the relay hands over what is not marked.
func (s *Swipes) afterCommit(ctx context.Context, studentID string, version, outboxID int64, topic string) {
	ctx = context.WithoutCancel(ctx) // the swipe is committed: finish even if the client left
	if err := s.feeds.Invalidate(ctx, studentID, version); err != nil {
		s.log.DebugContext(ctx, "feed not invalidated; the worker's rebuild replaces it", "student_id", studentID, "err", err)
	}
	handOver(ctx, s.log, &s.redis, s.store, s.queue, s.router, tasks.OutboxRow{ID: outboxID, Topic: topic, StudentID: studentID})
}

// outboxMarker marks outbox rows as handed over.
type outboxMarker interface {
	MarkOutboxPublished(ctx context.Context, ids []int64) error
}

// handOver hands a committed outbox row to the queue (tasks.HandOver: its
// webhook deliveries written, its tasks queued under their row-derived
// ids) and marks it published. A failure is logged and left to the
// worker's relay; a queue failure pauses hand-overs for a moment.
func handOver(ctx context.Context, log *slog.Logger, b *breaker, marker outboxMarker, q tasks.Enqueuer, router *tasks.Router, row tasks.OutboxRow) {
	if b.open() {
		log.DebugContext(ctx, "task queue paused after a failure; the relay hands the event over", "outbox_id", row.ID)
		return
	}
	ectx, cancel := context.WithTimeout(ctx, enqueueTimeout)
	defer cancel()
	handed, err := tasks.HandOver(ectx, q, router, []tasks.OutboxRow{row})
	switch {
	case errors.Is(err, tasks.ErrNotQueued):
		b.failed()
		log.WarnContext(ctx, "task not queued; the outbox relay will hand the event over", "outbox_id", row.ID, "err", err)
	case err != nil:
		log.WarnContext(ctx, "outbox event not handed over here; the outbox relay will", "outbox_id", row.ID, "err", err)
	case len(handed) == 0:
		log.DebugContext(ctx, "outbox event being handed over by the relay", "outbox_id", row.ID)
	default:
		b.succeeded()
	}
	if err := marker.MarkOutboxPublished(ctx, handed); err != nil {
		log.WarnContext(ctx, "outbox event queued but not marked; the relay's hand-over will be a duplicate", "outbox_id", row.ID, "err", err)
	}
}

// StudentModel is the learned model a student is scored and predicted
// with: the stored model; when it cannot be read (a model of another
// version), a model centred on the stored weights; before any learning, a
// model centred on the prior.
func StudentModel(raw []byte, learned map[string]float64, prior match.Weights) match.Model {
	if raw != nil {
		var m match.Model
		if err := json.Unmarshal(raw, &m); err == nil {
			return m
		}
	}
	if learned != nil {
		return match.NewModel(match.WeightsFromMap(learned))
	}
	return match.NewModel(prior)
}
