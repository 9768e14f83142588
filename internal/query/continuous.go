package query

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/match"
)

// The continuous feed (POST /continuous-feed): the student's learned feed
// served as an endless stream. Each request first records the swipes sent
// along, exactly as POST /swipe records them, then returns the next items:
// the student's feed over the schools eligible now, neither swiped nor
// served by the continuous feed within the cooldown (FEED_COOLDOWN). When
// no school before them is left out, they are the stored feed's first
// items; otherwise the feed is assembled afresh from the student's state
// without those schools, with the same model and rules (probes at every
// 4th swipe, exploration, geographic mix). A school whose cooldown has
// ended is eligible again and ranks where the feed ranks it, like one never
// shown. What is served is recorded in the student's shown set
// (cache.Cooldowns) and the probes among it in the probe memory
// (cache.Probes), so a later swipe on one is a probe swipe.

// Continuous feed limits (decisions.md: limit 1-50, default 10).
const (
	DefaultContinuousLimit = 10
	MaxContinuousLimit     = 50
	// MaxContinuousSwipes is the most swipes one request may carry.
	MaxContinuousSwipes = 50
)

// CooldownStore is the continuous feed's Redis state (cache.Cooldowns).
type CooldownStore interface {
	// Read remembers swiped as swiped now and reads the stored feed, the
	// schools cooling down at now and the recent swipes, in one round trip.
	Read(ctx context.Context, studentID string, now time.Time, swiped []string) (cache.ContinuousState, error)
	// Show records schoolIDs as shown at now.
	Show(ctx context.Context, studentID string, now time.Time, schoolIDs []string) error
	// RememberSwiped records schoolIDs as swiped at now.
	RememberSwiped(ctx context.Context, studentID string, now time.Time, schoolIDs ...string) error
	// Cooldown is how long a shown school waits (FEED_COOLDOWN).
	Cooldown() time.Duration
}

// ProbeMemory remembers the schools served as probes (cache.Probes).
type ProbeMemory interface {
	Remember(ctx context.Context, studentID string, schoolIDs ...string) error
}

// ContinuousConfig is what NewContinuous needs.
type ContinuousConfig struct {
	Queries *Service      // the read side whose learned feed is served; required
	Store   CooldownStore // required
	Probes  ProbeMemory   // required
}

// Continuous serves POST /continuous-feed.
type Continuous struct {
	q      *Service
	store  CooldownStore
	probes ProbeMemory
}

// NewContinuous builds the continuous feed.
func NewContinuous(c ContinuousConfig) *Continuous {
	if c.Queries == nil || c.Store == nil || c.Probes == nil {
		panic("query.NewContinuous: missing dependency")
	}
	return &Continuous{q: c.Queries, store: c.Store, probes: c.Probes}
}

// ContinuousPage is the answer of POST /continuous-feed: the envelope of
// POST /recommendations, whose metadata adds next_available_at.
type ContinuousPage struct {
	Recommendations []Recommendation   `json:"recommendations"`
	Metadata        ContinuousMetadata `json:"metadata"`
	LearningState   LearningState      `json:"learning_state"`
	TotalSwipes     int                `json:"total_swipes"`
}

// ContinuousMetadata is Metadata and, when the page is short because every
// unswiped school is cooling down, when the first of them is free again.
type ContinuousMetadata struct {
	Metadata
	// NextAvailableAt is RFC 3339 UTC, rounded up to the second; present
	// only on a short page that has schools to wait for.
	NextAvailableAt string `json:"next_available_at,omitempty"`
}

// Carried is what the swipes a request carried changed, as the write side
// recorded them (command.Swipes.RecordCarried): whether any was recorded,
// the student's counted swipes after them and the schools they swiped.
type Carried struct {
	Recorded   bool
	SwipeCount int
	Swiped     []string
}

// ContinuousFeed returns the next limit items of the student's feed, after
// the swipes the request carried were recorded (carried; limit is
// validated by the caller). Any existing student is served, complete
// profile or not, as by RecommendationsV2.
func (c *Continuous) ContinuousFeed(ctx context.Context, studentID string, limit int, carried Carried) (ContinuousPage, error) {
	s := c.q
	cat := s.catalogs.Current()
	counts := swipeCounts{recorded: carried.Recorded, total: carried.SwipeCount}
	swiped := make([]string, len(carried.Swiped))
	for i, id := range carried.Swiped {
		swiped[i] = strings.ToLower(id)
	}

	now := s.now()
	st, err := c.store.Read(ctx, studentID, now, swiped)
	if err != nil {
		// Without Redis there is no cooldown to honour: the feed is computed
		// from PostgreSQL and only this request's swipes are left out.
		s.cacheErr(ctx, "continuous", studentID, err)
		st = cache.ContinuousState{FeedErr: err}
		st.Swiped = make(map[uuid.UUID]struct{}, len(swiped))
		for _, id := range swiped {
			if u, err := uuid.Parse(id); err == nil {
				st.Swiped[u] = struct{}{}
			}
		}
	}

	fs, ok := c.feedState(ctx, studentID, st, cat)
	for attempt := 0; ; attempt++ {
		if !ok {
			if fs, err = s.build(ctx, studentID, cat, true); err != nil {
				return ContinuousPage{}, err
			}
		}
		pick, complete := c.choose(ctx, studentID, fs, cat, st, now, limit, counts)
		if !complete && attempt == 0 {
			// A stored feed named a school this catalogue does not hold:
			// build on this one.
			ok = false
			continue
		}
		c.remember(ctx, studentID, now, pick.items)
		out := c.page(cat, pick, counts)
		if len(pick.items) < limit {
			out.Metadata.NextAvailableAt = nextAvailable(pick, now, c.store.Cooldown())
		}
		return out, nil
	}
}

// swipeCounts is what the recorded swipes say of the student.
type swipeCounts struct {
	recorded bool
	total    int // counted swipes after the last one
}

// feedState is the stored feed read with the cooldowns, when it is there
// and fresh (as Service.cachedFeed decides).
func (c *Continuous) feedState(ctx context.Context, studentID string, st cache.ContinuousState, cat *active.Catalog) (*feedState, bool) {
	s := c.q
	switch {
	case errors.Is(st.FeedErr, cache.ErrNotBuilt):
		s.m.FeedReads.WithLabelValues("continuous", "miss").Inc()
		return nil, false
	case st.FeedErr != nil:
		return nil, false // counted as an error by the caller when Redis failed
	case !fresh(st.Feed.CatalogVersion, st.Feed.AlgorithmVersion, cat):
		s.m.FeedReads.WithLabelValues("continuous", "stale").Inc()
		return nil, false
	}
	p, err := match.ParseProfile(st.Feed.Profile)
	if err != nil {
		s.m.FeedReads.WithLabelValues("continuous", "stale").Inc()
		return nil, false
	}
	s.m.FeedReads.WithLabelValues("continuous", "hit").Inc()
	return &feedState{feed: st.Feed, profile: p, weights: match.WeightsFromMap(st.Feed.Weights), missing: missingOf(p)}, true
}

// picked is what choose selected, and the feed it was taken from.
type picked struct {
	from  *feedState // profile, weights and counts the items were built with
	items []cache.FeedItem
	// nextFree is the earliest end of cooldown among the unswiped schools
	// left out for their cooldown; zero when none was.
	nextFree time.Time
	// swipes is the counted swipes the items were assembled for.
	swipes int
}

// walkChunk is how many stored items are decoded at a time.
const walkChunk = 64

// choose picks the next limit items. When nothing the student swiped or
// was served within the cooldown comes before them, they are the stored
// feed's first items, exactly as the feed placed them (no PostgreSQL, no
// ranking). Otherwise the feed is assembled afresh over the schools that
// are eligible now (reassemble): ranked by the same model, with its probes
// at every 4th swipe, its exploration picks and its geographic mix, as if
// the schools left out had never been there. complete is false when a
// stored item's school is not in cat.
func (c *Continuous) choose(ctx context.Context, studentID string, fs *feedState, cat *active.Catalog,
	st cache.ContinuousState, now time.Time, limit int, counts swipeCounts) (picked, bool) {
	cooldown := c.store.Cooldown()
	walk := picked{from: fs, swipes: fs.feed.TotalSwipes}
	prefix := true // no school was left out before the page filled
	n := fs.feed.Len()
	for from := 0; from < n && len(walk.items) < limit; from += walkChunk {
		for _, it := range fs.feed.Range(from, from+walkChunk) {
			if _, ok := cat.Index(it.SchoolID.String()); !ok {
				return walk, false
			}
			if _, ok := st.Swiped[it.SchoolID]; ok {
				prefix = false
				continue
			}
			if at, ok := st.Shown[it.SchoolID]; ok && at.Add(cooldown).After(now) {
				prefix = false
				if free := at.Add(cooldown); walk.nextFree.IsZero() || free.Before(walk.nextFree) {
					walk.nextFree = free
				}
				continue
			}
			walk.items = append(walk.items, it)
			if len(walk.items) == limit {
				break
			}
		}
	}
	// A stored feed built for another swipe count (the swipes just recorded
	// are not in it yet) has its probes elsewhere: assemble afresh.
	current := !counts.recorded || counts.total == fs.feed.TotalSwipes
	if prefix && current && (len(walk.items) == limit || n >= fs.feed.TotalCount) {
		return walk, true
	}
	if p, ok := c.reassemble(ctx, studentID, cat, st, now, limit, counts); ok {
		return p, true
	}
	// Without the student's state (PostgreSQL unavailable), the stored
	// items that are eligible, in the feed's order, are the best known.
	return walk, true
}

// reassemble builds the student's feed from their current state over the
// schools eligible now: neither swiped (in PostgreSQL or just now) nor
// cooling down. The probe positions follow the count the swipes just
// recorded answered, when there were any. ok is false when the state
// cannot be loaded.
func (c *Continuous) reassemble(ctx context.Context, studentID string, cat *active.Catalog,
	st cache.ContinuousState, now time.Time, limit int, counts swipeCounts) (picked, bool) {
	s := c.q
	state, err := s.students.LearnerState(ctx, studentID)
	if err != nil || state.Student.DeletedAt != nil {
		if err != nil {
			s.log.WarnContext(ctx, "student state not loaded; serving the stored feed's eligible items",
				"student_id", studentID, "err", err)
		}
		return picked{}, false
	}
	stateSwiped := state.SwipedSchools()
	swiped := make(map[uuid.UUID]struct{}, len(stateSwiped)+len(st.Swiped))
	for _, id := range stateSwiped {
		if u, err := uuid.Parse(id); err == nil {
			swiped[u] = struct{}{}
		}
	}
	exclude := make([]string, 0, len(st.Shown)+len(st.Swiped))
	for id := range st.Swiped {
		swiped[id] = struct{}{}
		exclude = append(exclude, id.String())
	}
	var out picked
	cooling := 0
	cooldown := c.store.Cooldown()
	for id, at := range st.Shown {
		free := at.Add(cooldown)
		if _, gone := swiped[id]; gone || !free.After(now) {
			continue
		}
		if _, ok := cat.Index(id.String()); !ok {
			continue
		}
		exclude = append(exclude, id.String())
		cooling++
		if out.nextFree.IsZero() || free.Before(out.nextFree) {
			out.nextFree = free
		}
	}
	slices.Sort(exclude) // the same state gives the same feed

	p, model, _ := match.Start(state)
	swipes := state.Student.SwipeCount
	if counts.recorded {
		swipes = counts.total
	}
	start := time.Now()
	f := BuildFeed(FeedInput{
		StudentID: studentID, StudentVersion: state.Version, LearningVersion: state.LearningVersion, Profile: p,
		Model: model, TotalSwipes: swipes, Swiped: stateSwiped, Exclude: exclude,
		Catalog: cat, Size: limit, Now: now,
	})
	s.m.FeedBuilds.Observe(time.Since(start).Seconds())
	f.TotalCount += cooling // the whole list counts the schools cooling down, as the stored feed does
	out.from = &feedState{feed: f, profile: p, weights: model.Weights(), missing: state.Student.Missing()}
	out.items, out.swipes = f.Items, swipes
	return out, true
}

// remember records the served schools as shown and the probes among them,
// best effort: a failure lets a school come back before its cooldown, or a
// swipe on a probe count as an ordinary swipe, and is logged.
func (c *Continuous) remember(ctx context.Context, studentID string, now time.Time, items []cache.FeedItem) {
	if len(items) == 0 || ctx.Err() != nil {
		return // nothing served, or nobody left to serve it to
	}
	ids := make([]string, len(items))
	var probes []string
	for i, it := range items {
		ids[i] = it.SchoolID.String()
		if it.Probe {
			probes = append(probes, ids[i])
		}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cache.CallTimeout)
	defer cancel()
	if err := c.store.Show(ctx, studentID, now, ids); err != nil {
		c.q.m.FeedWrites.WithLabelValues("error").Inc()
		if !errors.Is(err, cache.ErrUnavailable) {
			c.q.log.WarnContext(ctx, "shown schools not recorded", "student_id", studentID, "err", err)
		}
		return // Redis is failing: the probe memory is there too
	}
	if err := c.probes.Remember(ctx, studentID, probes...); err != nil {
		c.q.log.WarnContext(ctx, "served probes not remembered", "student_id", studentID, "err", err)
	}
}

// page renders the picked items in the envelope of POST /recommendations.
// The counts come from the swipes just recorded when there were any: they
// are exact, while the stored feed may predate them.
func (c *Continuous) page(cat *active.Catalog, pick picked, counts swipeCounts) ContinuousPage {
	fs := pick.from
	total := pick.swipes
	if counts.recorded {
		total = counts.total
	}
	phase := PhaseFor(total)
	recs := make([]Recommendation, 0, len(pick.items))
	d := fs.describer(cat)
	for _, it := range pick.items {
		idx, _ := cat.Index(it.SchoolID.String()) // checked by choose, or built on cat
		recs = append(recs, described(cat, &d, idx, it))
	}
	return ContinuousPage{
		Recommendations: recs,
		Metadata: ContinuousMetadata{Metadata: Metadata{TotalCount: fs.feed.TotalCount, LearningPhase: phase,
			AlgorithmVersion: fs.feed.AlgorithmVersion}},
		LearningState: LearningState{Phase: phase, Progress: round4(Progress(total)),
			PreferenceWeights: roundWeights(fs.feed.Weights), LearnedPreferences: match.LearnedTexts(d.Learned())},
		TotalSwipes: total,
	}
}

// nextAvailable is when the first school of a short page's student is free
// again: the earliest end of cooldown among the unswiped schools skipped,
// or of the schools served now when none was skipped; "" when there is
// nothing to wait for (every school is swiped). It is rounded up to the
// second, so at that time the school is free.
func nextAvailable(pick picked, now time.Time, cooldown time.Duration) string {
	next := pick.nextFree
	if next.IsZero() {
		if len(pick.items) == 0 {
			return ""
		}
		next = now.Add(cooldown)
	}
	if t := next.Truncate(time.Second); !t.Equal(next) {
		next = t.Add(time.Second)
	}
	return next.UTC().Format(time.RFC3339)
}
