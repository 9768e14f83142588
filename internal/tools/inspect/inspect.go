// Package inspect explains a student to an operator: where they are in
// the learning loop, what the learned model believes and with what
// uncertainty, and the head of the feed they are served with each item's
// slot kind and reasons, read from the real stores (PostgreSQL and the
// Redis read models) through the read side's own code, so it shows what
// POST /recommendations serves. `matchctl students explain` prints it.
package inspect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/store"
)

// WeightOrder is the order weights are listed in.
var WeightOrder = []string{
	match.KeyCostWeight, match.KeyDistanceWeight, match.KeyOutcomesWeight, match.KeyCampusWeight,
	match.KeyProgramWeight, match.KeyAidWeight, match.KeyAcademicSelectivity, match.KeySizePreference,
}

// Slot kinds of a feed item.
const (
	SlotRanked      = "ranked"
	SlotExploration = "exploration"
	SlotProbe       = "probe"
)

// MaxItems is the most feed items Explain shows.
const MaxItems = 100

// Deps are the stores Explain reads. Every field is required but Log.
type Deps struct {
	DB    *store.Store
	Redis redis.UniversalClient
	// FeedTTL is FEED_CACHE_TTL: a feed Explain has to build is stored for
	// it, as the API stores it.
	FeedTTL time.Duration
	// ImageBaseURL is IMAGE_BASE_URL (optional).
	ImageBaseURL string
	Log          *slog.Logger // optional
}

// ErrErased is returned for a student whose personal data was erased.
var ErrErased = errors.New("student erased")

// Explanation is what Explain tells of a student. Phase, SwipeCount,
// Progress and the weights are the student's now (PostgreSQL); Feed is
// the feed served, built from the student's state at Feed.StudentVersion.
type Explanation struct {
	StudentID  string  `json:"student_id"`
	Phase      string  `json:"phase"`
	SwipeCount int     `json:"swipe_count"`
	Progress   float64 `json:"progress"`
	// Learned is false before the worker has folded any swipe in: the
	// weights are then the prior (the profile's seed weights moved by the
	// onboarding categories).
	Learned bool `json:"learned"`
	// ModelSwipes, ModelSignals and ModelFeedback are what the stored
	// model has folded in (the worker may be a swipe or two behind).
	ModelSwipes   int               `json:"model_swipes"`
	ModelSignals  int               `json:"model_signals"`
	ModelFeedback int               `json:"model_feedback"`
	Weights       map[string]Weight `json:"preference_weights"`
	// LearnedPreferences is what the model learned beyond the eight
	// weights (its residual), strongest first, in words.
	LearnedPreferences []match.Learned `json:"learned_preferences"`
	// Residual is the residual's coefficient of each feature (match
	// score units per standard deviation of the feature), and
	// ResidualSchools how many schools it was fitted on.
	Residual        map[string]float64   `json:"residual"`
	ResidualSchools int                  `json:"residual_schools"`
	Categories      []CategoryPreference `json:"onboarding_categories"`
	Feed            Feed                 `json:"feed"`
}

// Weight is a preference weight and its posterior standard deviation on
// the [0,1] scale (match.Model.WeightUncertainty): it falls as swipes
// inform the weight.
type Weight struct {
	Value       float64 `json:"value"`
	Uncertainty float64 `json:"uncertainty"`
}

// CategoryPreference is an onboarding category swipe.
type CategoryPreference struct {
	CategoryID string `json:"category_id"`
	Direction  string `json:"direction"`
}

// Feed is the head of the student's feed, as POST
// /v2/recommendations (and, for a complete profile, POST /recommendations)
// serves it.
type Feed struct {
	// Source is "stored" when the feed was read from Redis, "built" when
	// none fresh was stored and it was ranked now (and stored, as the API
	// would), "built, not stored" when Redis could not take it.
	Source         string    `json:"source"`
	BuiltAt        time.Time `json:"built_at"`
	StudentVersion int64     `json:"student_version"`
	// Phase, TotalSwipes and Weights are the feed's, as POST
	// /recommendations shows them (learning_phase, total_swipes,
	// preference_weights): equal to the student's unless the feed is being
	// rebuilt after a swipe.
	Phase            string             `json:"learning_phase"`
	TotalSwipes      int                `json:"total_swipes"`
	Weights          map[string]float64 `json:"preference_weights"`
	AlgorithmVersion string             `json:"algorithm_version"`
	TotalCount       int                `json:"total_count"`
	Items            []Item             `json:"items"`
}

// Item is one item of the feed.
type Item struct {
	Position int    `json:"position"`
	SchoolID string `json:"school_id"`
	Name     string `json:"name"`
	City     string `json:"city"`
	State    string `json:"state"`
	// Slot is the kind of slot: "ranked" (the next best match), "exploration"
	// (a pick to learn from) or "probe" (a deliberate test of the model).
	Slot          string   `json:"slot"`
	MatchScore    float64  `json:"match_score"`
	MatchGrade    string   `json:"match_grade"`
	AdmissionBand string   `json:"admission_band"`
	Reasons       []string `json:"match_reasons"`
}

// Explain reads student id's state from PostgreSQL and the first limit
// items (1 to MaxItems) of their feed through the read side, over the
// active catalogue: the stored feed when it is there and fresh, else one
// ranked now and stored, as the API would. Explaining serves nothing: no
// probe is remembered as shown. An unknown student is the store's
// INVALID_STUDENT_ID error.
func Explain(ctx context.Context, d Deps, id string, limit int) (Explanation, error) {
	if d.DB == nil || d.Redis == nil {
		panic("inspect.Explain: missing dependency")
	}
	if limit < 1 || limit > MaxItems {
		return Explanation{}, fmt.Errorf("limit %d is not between 1 and %d", limit, MaxItems)
	}
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st, err := d.DB.LearnerState(ctx, id)
	if err != nil {
		return Explanation{}, err
	}
	if st.Student.DeletedAt != nil {
		return Explanation{}, fmt.Errorf("%w: %s on %s", ErrErased, id, st.Student.DeletedAt.UTC().Format(time.RFC3339))
	}

	qm := query.NewMetrics(prometheus.NewRegistry())
	holder := active.NewHolder(d.DB, log, nil, time.Hour)
	if err := holder.Load(ctx); err != nil {
		return Explanation{}, fmt.Errorf("load the school catalogue: %w", err)
	}
	feeds := &seenFeeds{Feeds: cache.NewFeeds(d.Redis, d.FeedTTL)}
	// With the probe memory: a feed this stores serves its pages' probes
	// from Redis, and they are remembered when it is stored.
	queries := query.New(query.Config{Students: d.DB, Feeds: feeds, Catalogs: holder, Log: log,
		Probes: cache.NewProbes(d.Redis, d.FeedTTL), Metrics: qm, ImageBaseURL: d.ImageBaseURL})
	page, err := queries.RecommendationsV2(ctx, id, limit, 0)
	if err != nil {
		return Explanation{}, err
	}

	p, model, _ := match.Start(st)
	values, sds := model.Weights().Map(), model.WeightUncertainty().Map()
	ex := Explanation{
		StudentID: id, SwipeCount: st.Student.SwipeCount, Phase: string(match.PhaseFor(st.Student.SwipeCount)),
		Progress: round4(match.Progress(st.Student.SwipeCount)), Learned: st.Model != nil || st.Weights != nil,
		ModelSwipes: model.Swipes(), ModelSignals: model.Signals(), ModelFeedback: model.FeedbackCount(),
		Weights:    make(map[string]Weight, len(values)),
		Categories: []CategoryPreference{},
	}
	for k, v := range values {
		ex.Weights[k] = Weight{Value: round4(v), Uncertainty: round4(sds[k])}
	}
	ex.LearnedPreferences = model.LearnedPreferences(p, holder.Current().Catalog)
	if ex.LearnedPreferences == nil {
		ex.LearnedPreferences = []match.Learned{}
	}
	ex.Residual, ex.ResidualSchools = model.Residual(), model.HistoryLen()
	for k, v := range ex.Residual {
		ex.Residual[k] = round4(v)
	}
	for _, c := range st.Categories {
		dir := "dislike"
		if c.Direction == "right" {
			dir = "like"
		}
		ex.Categories = append(ex.Categories, CategoryPreference{CategoryID: c.CategoryID, Direction: dir})
	}

	f, source := feeds.last()
	// A stored feed keeps its time to the millisecond; one built now shows the same.
	ex.Feed = Feed{Source: source, BuiltAt: f.BuiltAt.UTC().Truncate(time.Millisecond), StudentVersion: f.StudentVersion,
		Phase: page.Metadata.LearningPhase, TotalSwipes: page.TotalSwipes,
		AlgorithmVersion: page.Metadata.AlgorithmVersion, TotalCount: page.Metadata.TotalCount,
		Weights: page.LearningState.PreferenceWeights, Items: []Item{}}
	items := f.Range(0, len(page.Recommendations))
	for i, r := range page.Recommendations {
		slot := SlotRanked
		switch {
		case r.IsProbe:
			slot = SlotProbe
		case i < len(items) && items[i].SchoolID.String() == r.SchoolID && items[i].Exploration:
			slot = SlotExploration
		}
		ex.Feed.Items = append(ex.Feed.Items, Item{Position: i + 1, SchoolID: r.SchoolID, Name: r.Name,
			City: r.School.City, State: r.School.State, Slot: slot, MatchScore: r.MatchScore, MatchGrade: r.MatchGrade,
			AdmissionBand: r.AdmissionBand, Reasons: r.MatchReasons})
	}
	return ex, nil
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// seenFeeds is the Redis feed store, remembering the last feed the read
// side read or stored: the feed a page was rendered from, with the slot
// kinds the page does not carry.
type seenFeeds struct {
	*cache.Feeds
	mu     sync.Mutex
	feed   cache.Feed
	source string
}

func (s *seenFeeds) Feed(ctx context.Context, studentID string) (cache.Feed, error) {
	f, err := s.Feeds.Feed(ctx, studentID)
	if err == nil {
		s.seen(f, "stored")
	}
	return f, err
}

func (s *seenFeeds) Put(ctx context.Context, f cache.Feed) (bool, error) {
	ok, err := s.Feeds.Put(ctx, f)
	switch {
	case err != nil:
		s.seen(f, "built, not stored")
	default:
		s.seen(f, "built")
	}
	return ok, err
}

func (s *seenFeeds) seen(f cache.Feed, source string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.feed, s.source = f, source
}

func (s *seenFeeds) last() (cache.Feed, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.feed, s.source
}
