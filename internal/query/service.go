// Package query is the read side: recommendations, the compact mobile
// feed, match detail and compact school records. It serves students'
// precomputed feeds from Redis and the school catalogue from memory; a
// missing feed is built inline from PostgreSQL with the pure core
// (internal/match) and stored for the next read.
//
// It depends on the read-model types of internal/cache (the stored feed
// document), never on a Redis or PostgreSQL client: cmd/api passes the
// implementations of the interfaces declared here.
package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// Students is what the read side needs from PostgreSQL.
type Students interface {
	// LearnerState loads a student with their learned state, in one
	// snapshot; INVALID_STUDENT_ID when unknown.
	LearnerState(ctx context.Context, id string) (domain.LearnerState, error)
	// StudentVersion is the current version of a student's state.
	StudentVersion(ctx context.Context, id string) (int64, error)
}

// FeedStore holds students' precomputed feeds (implemented by cache.Feeds).
// Reads return cache.ErrNotBuilt when there is no feed.
type FeedStore interface {
	Feed(ctx context.Context, studentID string) (cache.Feed, error)
	HeaderModel(ctx context.Context, studentID string) (cache.Feed, error)
	ReadCompact(ctx context.Context, studentID string, made *cache.CompactRead) (cache.StoredCompact, error)
	CompactRead(studentID string) *cache.CompactRead
	Put(ctx context.Context, f cache.Feed) (bool, error)
	// PutMany stores several feeds, and also's writes, in one round trip.
	PutMany(ctx context.Context, feeds []cache.Feed, also ...cache.Write) ([]bool, error)
	LearnedVersion(ctx context.Context, studentID string) (int64, bool, error)
	Model(ctx context.Context, studentID string) ([]byte, error)
	Invalidate(ctx context.Context, studentID string, version int64) error
	Delete(ctx context.Context, studentID string) error
	TTL() time.Duration
	ReadPage(ctx context.Context, studentID string, offset, limit int, made *cache.PageRead) (cache.StoredPage, error)
	PageRead(studentID string, offset, limit int) *cache.PageRead
}

// ProbeRecorder remembers the schools served to a student as probes
// (cache.Probes), so that a swipe on one is known as a probe swipe.
type ProbeRecorder interface {
	Remember(ctx context.Context, studentID string, schoolIDs ...string) error
	RememberUntil(ctx context.Context, studentID string, until time.Time, schoolIDs ...string) error
	// RememberUntilWrite is RememberUntil as commands for PutMany's
	// transaction (nil when there is nothing to remember).
	RememberUntilWrite(studentID string, until time.Time, schoolIDs ...string) cache.Write
}

// Catalogs gives the catalogue currently held (active.Holder).
type Catalogs interface {
	Current() *active.Catalog
}

// Config is what New needs. Every field is required unless marked.
type Config struct {
	Students Students
	Feeds    FeedStore
	Catalogs Catalogs
	Log      *slog.Logger
	Metrics  *Metrics
	FeedSize int // items a stored feed keeps; optional, DefaultFeedSize
	// Probes remembers what is served as a probe; optional (without it no
	// swipe is known as a probe swipe).
	Probes ProbeRecorder
	Now    func() time.Time // optional, time.Now
	// ImageBaseURL is the base of school image URLs (IMAGE_BASE_URL);
	// optional, match.DefaultImageBaseURL.
	ImageBaseURL string
	// FactorCacheBytes bounds the memory of the students' score factors
	// kept between builds (FactorCache); optional, DefaultFactorCacheBytes;
	// negative keeps none.
	FactorCacheBytes int
}

// Service answers the read side's queries.
type Service struct {
	students Students
	feeds    FeedStore
	catalogs Catalogs
	probes   ProbeRecorder // nil: probes are not remembered
	log      *slog.Logger
	m        *Metrics
	size     int
	now      func() time.Time
	images   string

	builds     singleflight.Group // one build per student at a time
	factors    *FactorCache       // nil: none kept
	categories atomic.Pointer[categoriesMemo]
}

// New builds the query service.
func New(c Config) *Service {
	if c.Students == nil || c.Feeds == nil || c.Catalogs == nil || c.Log == nil || c.Metrics == nil {
		panic("query.New: missing dependency")
	}
	if c.FeedSize <= 0 {
		c.FeedSize = DefaultFeedSize
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	s := &Service{students: c.Students, feeds: c.Feeds, catalogs: c.Catalogs, probes: c.Probes, log: c.Log, m: c.Metrics,
		size: c.FeedSize, now: c.Now, images: c.ImageBaseURL}
	if c.FactorCacheBytes >= 0 {
		s.factors = NewFactorCache(c.FactorCacheBytes, c.Metrics)
	}
	return s
}

// buildTimeout bounds one inline build (load, rank, store), which runs on
// behalf of every request waiting for it, whichever of them gives up.
const buildTimeout = 10 * time.Second

// feedState is a feed with the profile and weights it was built from.
type feedState struct {
	feed    cache.Feed
	profile match.Profile
	weights match.Weights
	missing []string // what the profile lacks to be complete (domain.Student.Missing)
	// learner is the model and the swiped schools the feed was built from;
	// nil for a feed read from Redis (loaded when a deeper page needs them).
	learner *learnerState
}

// learnerState is what ranks and assembles a student's feed beyond the
// profile: the learned model and the swiped schools.
type learnerState struct {
	model  match.Model
	swiped []string
}

// MissingProfile is 422 MISSING_PROFILE for an incomplete profile.
func MissingProfile(studentID string, missing []string) error {
	return &domain.Error{Kind: domain.KindUnprocessable, Code: domain.CodeMissingProfile,
		Message: fmt.Sprintf("the student's profile is incomplete; missing: %v", missing),
		Details: map[string]any{"missing": missing, "student_id": studentID}}
}

// missingOf is what a profile lacks to be complete, read from its scoring
// view: the same groups as domain.Student.Missing.
func missingOf(p match.Profile) []string {
	missing := []string{}
	if p.Basis == match.BasisNone {
		missing = append(missing, domain.MissingAcademic)
	}
	if !p.HasHome {
		missing = append(missing, domain.MissingLocation)
	}
	return missing
}

// fresh reports whether a stored feed was built from the catalogue and
// scoring now in use.
func fresh(catalogVersion int64, algorithm string, cat *active.Catalog) bool {
	return catalogVersion == cat.Version && algorithm == match.AlgorithmVersion
}

// cacheErr records a failed cache read; it logs only the call that found
// Redis failing, not every request served while it stays down. A read
// that ended because its reader went away (domain.ClientGone) is neither
// counted nor logged: Redis did not fail, and build starts nothing for
// that reader.
func (s *Service) cacheErr(ctx context.Context, endpoint, studentID string, err error) {
	if domain.ClientGone(ctx, err) {
		return
	}
	s.m.FeedReads.WithLabelValues(endpoint, "error").Inc()
	if !errors.Is(err, cache.ErrUnavailable) {
		s.log.WarnContext(ctx, "feed cache unavailable, computing inline", "endpoint", endpoint,
			"student_id", studentID, "err", err)
	}
}

// cachedFeed returns the student's stored feed when it is there and fresh.
func (s *Service) cachedFeed(ctx context.Context, endpoint, studentID string, cat *active.Catalog) (*feedState, bool) {
	f, err := s.feeds.Feed(ctx, studentID)
	switch {
	case errors.Is(err, cache.ErrNotBuilt):
		s.m.FeedReads.WithLabelValues(endpoint, "miss").Inc()
		return nil, false
	case err != nil:
		s.cacheErr(ctx, endpoint, studentID, err)
		return nil, false
	case !fresh(f.CatalogVersion, f.AlgorithmVersion, cat):
		s.m.FeedReads.WithLabelValues(endpoint, "stale").Inc()
		return nil, false
	}
	p, err := match.ParseProfile(f.Profile)
	if err != nil {
		s.m.FeedReads.WithLabelValues(endpoint, "stale").Inc()
		return nil, false
	}
	s.m.readHit(endpoint)
	return &feedState{feed: f, profile: p, weights: match.WeightsFromMap(f.Weights), missing: missingOf(p)}, true
}

// build loads the student, builds the feed on cat and stores it (best
// effort). Concurrent builds for one student share one run. With
// anyProfile false an incomplete profile is MISSING_PROFILE and nothing is
// built; with anyProfile true (POST /v2/recommendations) it is built and
// stored without a compact page, which only complete profiles have. An
// erased student is INVALID_STUDENT_ID.
func (s *Service) build(ctx context.Context, studentID string, cat *active.Catalog, anyProfile bool) (*feedState, error) {
	if err := ctx.Err(); err != nil {
		// The reader is gone (or out of time): no build is started for it.
		// A build already under way for another reader goes on (below, it
		// runs detached from the reader that started it).
		return nil, err
	}
	key := studentID
	if anyProfile {
		key = "any:" + studentID
	}
	v, err, _ := s.builds.Do(key, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), buildTimeout)
		defer cancel()
		fs, err := s.compute(ctx, studentID, cat, anyProfile)
		if err != nil {
			return nil, err
		}
		_ = s.store(ctx, fs) // a failure only costs the next read a rebuild
		return fs, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*feedState), nil
}

// compute loads the student and builds their feed on cat; see build.
func (s *Service) compute(ctx context.Context, studentID string, cat *active.Catalog, anyProfile bool) (*feedState, error) {
	// LearnerState reads the version in the same snapshot as the swipes and
	// the model, so the feed never claims a version newer than its content.
	st, err := s.students.LearnerState(ctx, studentID)
	if err != nil {
		return nil, err
	}
	if st.Student.DeletedAt != nil {
		return nil, domain.StudentNotFound(studentID)
	}
	if missing := st.Student.Missing(); len(missing) > 0 && !anyProfile {
		return nil, MissingProfile(studentID, missing)
	}
	return s.project(st, cat, nil), nil
}

// project builds the feed of a student from their state on cat: the one
// place a feed is built, for a read's miss and for the worker's rebuild.
func (s *Service) project(st domain.LearnerState, cat *active.Catalog, folded *match.Model) *feedState {
	missing := st.Student.Missing()
	var (
		p     match.Profile
		model match.Model
	)
	if folded != nil {
		p, _ = match.StartProfile(st)
		model = *folded
	} else {
		p, model, _ = match.Start(st)
	}
	swiped := st.SwipedSchools()
	fs := &feedState{profile: p, weights: model.Weights(), missing: missing,
		learner: &learnerState{model: model, swiped: swiped}}
	var learned int64
	if len(st.New) == 0 {
		learned = st.Version // every event of this snapshot is folded in
	}
	start := time.Now()
	fs.feed = BuildFeed(FeedInput{
		StudentID: st.Student.ID, StudentVersion: st.Version, LearningVersion: st.LearningVersion,
		LearnedVersion: learned, Profile: p, Model: model, TotalSwipes: st.Student.SwipeCount, Swiped: swiped,
		Catalog: cat, Size: s.size, Describe: DescribedItems, Now: s.now(), Factors: s.factors,
	})
	s.m.FeedBuilds.Observe(time.Since(start).Seconds())
	fs.feed.Complete = len(missing) == 0
	if len(missing) > 0 {
		// GET /m/recommendations refuses an incomplete profile: a stored
		// page without an ETag sends it to a build, which says why.
		fs.feed.Compact = cache.Compact{}
	}
	return fs
}

// store writes a built feed and remembers the probes of its compact page
// (GET /m/recommendations serves that page from Redis in one round trip,
// so they are remembered here rather than when served).
func (s *Service) store(ctx context.Context, fs *feedState) error {
	f := fs.feed
	stored, err := s.feeds.Put(ctx, f)
	switch {
	case err != nil:
		s.m.FeedWrites.WithLabelValues("error").Inc()
		if !errors.Is(err, cache.ErrUnavailable) {
			s.log.WarnContext(ctx, "feed not stored", "student_id", f.StudentID, "err", err)
		}
		return err
	case stored:
		s.m.FeedWrites.WithLabelValues("stored").Inc()
		s.rememberStoredProbes(ctx, &f)
	default:
		s.m.FeedWrites.WithLabelValues("kept_newer").Inc()
	}
	return nil
}

// probeTimeout bounds remembering probes, which is best effort.
const probeTimeout = 250 * time.Millisecond

// rememberStoredProbes records the probes a stored feed's cached pages
// serve (its compact page and its described items, which GET
// /m/recommendations and POST /recommendations answer from Redis without
// writing anything) as served until the feed expires.
func (s *Service) rememberStoredProbes(ctx context.Context, f *cache.Feed) {
	probes := StoredProbes(f)
	if s.probes == nil || len(probes) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	if err := s.probes.RememberUntil(ctx, f.StudentID, time.Now().Add(s.feeds.TTL()), probes...); err != nil {
		s.log.DebugContext(ctx, "probes not remembered", "student_id", f.StudentID, "err", err)
	}
}

// rememberProbes records schools served to the student as probes.
func (s *Service) rememberProbes(ctx context.Context, studentID string, schoolIDs []string) {
	if s.probes == nil || len(schoolIDs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	if err := s.probes.Remember(ctx, studentID, schoolIDs...); err != nil {
		s.log.DebugContext(ctx, "probes not remembered", "student_id", studentID, "err", err)
	}
}

// RebuildFeed builds a student's feed from st and stores it, newer
// versions winning: the worker's rebuild after a fold, from the state it
// folded (no read), with the model it folded when learned is not nil (st.Model
// is then not decoded again). Any student's feed is built, complete profile or not;
// an erased student is INVALID_STUDENT_ID. An error means the feed was not
// stored.
func (s *Service) RebuildFeed(ctx context.Context, st domain.LearnerState, learned *match.Model) error {
	if st.Student.DeletedAt != nil {
		return domain.StudentNotFound(st.Student.ID)
	}
	return s.store(ctx, s.project(st, s.catalogs.Current(), learned))
}

// RebuildFeeds is RebuildFeed for several students (the worker's drain),
// stored as cache.Feeds.PutMany stores them: eight to a Redis round trip.
// states[i] with learned[i] (nil: decode states[i].Model). Erased students
// are left out. After an error, some of the feeds may have been stored.
func (s *Service) RebuildFeeds(ctx context.Context, states []domain.LearnerState, learned []*match.Model) error {
	cat := s.catalogs.Current()
	feeds := make([]cache.Feed, 0, len(states))
	for i, st := range states {
		if st.Student.DeletedAt != nil {
			continue
		}
		feeds = append(feeds, s.project(st, cat, learned[i]).feed)
	}
	var probes []cache.Write
	if s.probes != nil {
		until := time.Now().Add(s.feeds.TTL())
		for i := range feeds {
			probes = append(probes, s.probes.RememberUntilWrite(feeds[i].StudentID, until, StoredProbes(&feeds[i])...))
		}
	}
	stored, err := s.feeds.PutMany(ctx, feeds, probes...)
	if err != nil {
		s.m.FeedWrites.WithLabelValues("error").Add(float64(len(feeds)))
		if !errors.Is(err, cache.ErrUnavailable) {
			s.log.WarnContext(ctx, "feeds not stored", "feeds", len(feeds), "err", err)
		}
		return err
	}
	for _, ok := range stored {
		if ok {
			s.m.FeedWrites.WithLabelValues("stored").Inc()
		} else {
			s.m.FeedWrites.WithLabelValues("kept_newer").Inc()
		}
	}
	return nil
}

// LearnedVersion is the student version the stored feed's learned state
// covers; found is false when none is stored (or only a tombstone).
func (s *Service) LearnedVersion(ctx context.Context, studentID string) (int64, bool, error) {
	return s.feeds.LearnedVersion(ctx, studentID)
}

// Recommendations is one page of the student's ranked feed (POST
// /recommendations); an incomplete profile is MISSING_PROFILE. limit and
// offset are validated by the caller.
func (s *Service) Recommendations(ctx context.Context, studentID string, limit, offset int) (RecommendationsPage, error) {
	return s.recommendations(ctx, "recommendations", studentID, limit, offset, false)
}

// RecommendationsV2 is one page of the student's ranked feed for any
// existing student, complete profile or not (POST /v2/recommendations):
// what the profile lacks scores neutral. It is the same feed as
// Recommendations for a complete profile.
func (s *Service) RecommendationsV2(ctx context.Context, studentID string, limit, offset int) (RecommendationsPage, error) {
	return s.recommendations(ctx, "v2_recommendations", studentID, limit, offset, true)
}

func (s *Service) recommendations(ctx context.Context, endpoint, studentID string, limit, offset int, anyProfile bool) (RecommendationsPage, error) {
	cat := s.catalogs.Current()
	fs, ok := s.cachedFeed(ctx, endpoint, studentID, cat)
	for attempt := 0; ; attempt++ {
		if !ok {
			var err error
			if fs, err = s.build(ctx, studentID, cat, anyProfile); err != nil {
				return RecommendationsPage{}, err
			}
		}
		if len(fs.missing) > 0 && !anyProfile {
			return RecommendationsPage{}, MissingProfile(studentID, fs.missing)
		}
		recs, learned, complete := s.page(studentID, fs, cat, limit, offset)
		if complete || attempt > 0 {
			var probes []string
			for _, r := range recs {
				if r.IsProbe {
					probes = append(probes, r.SchoolID)
				}
			}
			s.rememberProbes(ctx, studentID, probes)
			f := &fs.feed
			return RecommendationsPage{
				Recommendations: recs,
				Metadata: Metadata{TotalCount: f.TotalCount, LearningPhase: PhaseFor(f.TotalSwipes),
					AlgorithmVersion: f.AlgorithmVersion},
				LearningState: LearningState{Phase: PhaseFor(f.TotalSwipes), Progress: round4(Progress(f.TotalSwipes)),
					PreferenceWeights: roundWeights(f.Weights), LearnedPreferences: learned},
				TotalSwipes: f.TotalSwipes,
			}, nil
		}
		// A stored feed named a school this catalogue does not hold (another
		// replica loaded a newer catalogue first): build on this one.
		ok = false
	}
}

// StoredRecommendations answers a page of POST /recommendations (of POST
// /v2/recommendations when anyProfile) from the stored feed's described
// items, in one Redis round trip and without decoding them: the body is
// the envelope written around the stored bytes, exactly what the full path
// encodes for the same feed. ok is false, and the caller takes the full
// path (Recommendations), when the stored feed cannot answer: not there,
// built on another catalogue or ranking, the page deeper than the
// described items, an incomplete profile POST /recommendations refuses, or
// Redis unavailable. The page's probes were remembered as served when the
// feed was stored (store). pf.Page is the page read already made
// (PageRead), if any. The body is appended to dst (AppendPageBody), so a
// caller can hand it a buffer of its own to reuse.
func (s *Service) StoredRecommendations(ctx context.Context, studentID string, limit, offset int, anyProfile bool, pf Prefetched, dst []byte) (body []byte, ok bool) {
	endpoint := "recommendations"
	if anyProfile {
		endpoint = "v2_recommendations"
	}
	cat := s.catalogs.Current()
	p, err := s.feeds.ReadPage(ctx, studentID, offset, limit, pf.Page)
	switch {
	case errors.Is(err, cache.ErrNotBuilt):
		return nil, false // the full path counts the read
	case err != nil:
		s.cacheErr(ctx, endpoint, studentID, err)
		return nil, false
	case !fresh(p.CatalogVersion, p.AlgorithmVersion, cat), !p.Complete && !anyProfile:
		return nil, false
	}
	s.m.readHit(endpoint)
	return AppendPageBody(dst, p), true
}

// PageRead is a page read of the stored feed (cache.PageRead).
type PageRead = cache.PageRead

// PageRead is the read StoredRecommendations makes, for a caller that
// queues it in a round trip of its own and hands it back (Prefetched).
func (s *Service) PageRead(studentID string, limit, offset int) *PageRead {
	return s.feeds.PageRead(studentID, offset, limit)
}

// AppendPageBody appends to b the envelope of POST /recommendations
// around a stored page's items, as json.Marshal writes
// RecommendationsPage, and a newline: the items' bytes are copied once,
// from the strings Redis answered into b.
func AppendPageBody(b []byte, p cache.StoredPage) []byte {
	phase := PhaseFor(p.TotalSwipes)
	size := len(p.Weights) + 256
	for _, it := range p.Items {
		size += len(it) + 1
	}
	b = slices.Grow(b, size)
	b = append(b, `{"recommendations":[`...)
	for k, it := range p.Items {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, `],"metadata":{"total_count":`...)
	b = strconv.AppendInt(b, int64(p.TotalCount), 10)
	b = append(b, `,"learning_phase":"`...)
	b = append(b, phase...)
	b = append(b, `","algorithm_version":`...)
	b = appendJSONString(b, p.AlgorithmVersion)
	b = append(b, `},"learning_state":{"phase":"`...)
	b = append(b, phase...)
	b = append(b, `","progress":`...)
	b = appendJSONFloat(b, round4(Progress(p.TotalSwipes)))
	b = append(b, `,"preference_weights":`...)
	b = append(b, p.Weights...)
	b = append(b, `,"learned_preferences":`...)
	if len(p.Learned) > 0 {
		b = append(b, p.Learned...)
	} else {
		b = append(b, "[]"...)
	}
	b = append(b, `},"total_swipes":`...)
	b = strconv.AppendInt(b, int64(p.TotalSwipes), 10)
	return append(b, "}\n"...)
}

// appendJSONString appends s as encoding/json writes it: quoted as it
// is when it holds only printable ASCII that needs no escape (an
// algorithm version does), else through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string: cannot fail
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONFloat appends v as encoding/json writes a float64: in
// decimal notation ('f', shortest) when it is 0 or between 1e-6 and 1e21
// in magnitude, else through encoding/json (exponent notation).
func appendJSONFloat(b []byte, v float64) []byte {
	if abs := math.Abs(v); abs == 0 || (abs >= 1e-6 && abs < 1e21) {
		return strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	q, _ := json.Marshal(v) // finite: cannot fail
	return append(b, q...)
}

// page renders items [offset, offset+limit) of the feed; complete is false
// when a stored item's school is not in cat.
func (s *Service) page(studentID string, fs *feedState, cat *active.Catalog, limit, offset int) (recs []Recommendation, learned []string, complete bool) {
	end := offset + limit
	var page []cache.FeedItem
	if n := fs.feed.Len(); end > n && n < fs.feed.TotalCount && offset < fs.feed.TotalCount {
		items := s.deeper(studentID, fs, cat, min(end, fs.feed.TotalCount))
		page = items[min(offset, len(items)):min(end, len(items))]
	} else {
		page = fs.feed.Range(offset, end)
	}
	recs = make([]Recommendation, 0, len(page))
	d := fs.describer(cat)
	learned = match.LearnedTexts(d.Learned())
	for _, it := range page {
		idx, ok := cat.Index(it.SchoolID.String())
		if !ok {
			return recs, learned, false
		}
		recs = append(recs, described(cat, &d, idx, it))
	}
	return recs, learned, true
}

// deeper builds the feed past the stored items, to n items: the same
// ranking and assembly as the stored feed, which is a prefix of it. A feed
// that swipes patched since it was built (their schools taken off its top,
// cache.Feed.Removed) is extended as it was built, at the count and with
// the swiped schools of then, its removed head dropped again, so every
// page tiles the same list. A feed read from Redis does not carry the model
// and the swiped schools; they are loaded (a page this deep is rare): the
// model the feed was ranked with from Redis, the swiped schools from
// PostgreSQL; without them the stored weights and profile stand in.
func (s *Service) deeper(studentID string, fs *feedState, cat *active.Catalog, n int) []cache.FeedItem {
	l := fs.learner
	if l == nil {
		l = s.loadLearner(studentID, fs)
	}
	removed := fs.feed.Removed
	swiped := l.swiped
	if len(removed) > 0 {
		taken := make(map[string]bool, len(removed))
		for _, u := range removed {
			taken[u.String()] = true
		}
		swiped = slices.DeleteFunc(slices.Clone(swiped), func(id string) bool { return taken[strings.ToLower(id)] })
	}
	f := BuildFeed(FeedInput{
		StudentID: studentID, StudentVersion: fs.feed.StudentVersion, Profile: fs.profile, Model: l.model,
		TotalSwipes: fs.feed.TotalSwipes - len(removed), Swiped: swiped, Catalog: cat, Size: n + len(removed),
		Now: fs.feed.BuiltAt,
	})
	items := f.Items
	for len(removed) > 0 && len(items) > 0 && items[0].SchoolID == removed[0] {
		items, removed = items[1:], removed[1:]
	}
	return items
}

// loadLearner loads the learned model and swiped schools for a feed read
// from Redis.
func (s *Service) loadLearner(studentID string, fs *feedState) *learnerState {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	st, err := s.students.LearnerState(ctx, studentID)
	if err != nil {
		s.log.WarnContext(ctx, "learning state not loaded for a deep page; using the stored weights",
			"student_id", studentID, "err", err)
		return &learnerState{model: match.NewModel(fs.weights)}
	}
	_, model, _ := match.Start(st)
	if raw, err := s.feeds.Model(ctx, studentID); err == nil {
		if m, err := match.DecodeModel(raw); err == nil {
			model = m // the model the stored items were ranked with
		}
	}
	return &learnerState{model: model, swiped: st.SwipedSchools()}
}

// Prefetched are reads made before the query was called (in the same
// Redis round trip as the rate-limit count), their commands run.
type Prefetched struct {
	Done bool // the round trip was made
	// Page is a page read made for StoredRecommendations (PageRead).
	Page *PageRead
	// Compact is a compact page read made for CompactFeed (CompactRead).
	Compact *CompactRead
}

// CompactRead is a read of the stored compact page (cache.CompactRead).
type CompactRead = cache.CompactRead

// CompactRead is the read CompactFeed makes, for a caller that queues it
// in a round trip of its own (with the request's rate-limit count).
func (s *Service) CompactRead(studentID string) *CompactRead {
	return s.feeds.CompactRead(studentID)
}

// CompactFeed is the compact first page of the student's feed (GET
// /m/recommendations), as stored bytes and their ETag. A fresh stored page
// is returned without touching PostgreSQL or re-encoding anything.
func (s *Service) CompactFeed(ctx context.Context, studentID string, pf Prefetched) (CompactPage, error) {
	cat := s.catalogs.Current()
	c, err := s.feeds.ReadCompact(ctx, studentID, pf.Compact)
	switch {
	case errors.Is(err, cache.ErrNotBuilt):
		s.m.FeedReads.WithLabelValues("compact", "miss").Inc()
		return s.compactBuild(ctx, studentID, cat)
	case err != nil && !errors.Is(err, cache.ErrMalformed):
		s.cacheErr(ctx, "compact", studentID, err)
		return s.compactBuild(ctx, studentID, cat)
	}
	if err != nil || c.ETag == "" || !fresh(c.CatalogVersion, c.AlgorithmVersion, cat) {
		s.m.FeedReads.WithLabelValues("compact", "stale").Inc()
		return s.compactBuild(ctx, studentID, cat)
	}
	s.m.readHit("compact")
	return c.Compact, nil
}

func (s *Service) compactBuild(ctx context.Context, studentID string, cat *active.Catalog) (CompactPage, error) {
	fs, err := s.build(ctx, studentID, cat, false)
	if err != nil {
		return cache.Compact{}, err
	}
	return fs.feed.Compact, nil
}

// MatchDetail is the full breakdown of one student-school pair (GET
// /match/{student_id}/{school_id}). The student's profile and weights come
// from their stored feed when there is one, else from PostgreSQL; an
// incomplete profile still gets a detail, in which what the student has
// not given scores neutral and lowers confidence, and missing says what.
func (s *Service) MatchDetail(ctx context.Context, studentID, schoolID string) (MatchDetailView, error) {
	cat := s.catalogs.Current()
	var (
		p       match.Profile
		model   match.Model
		weights *match.Weights // a stored feed's weights, when its model does not decode
		missing = []string{}
		loaded  bool
	)
	h, err := s.feeds.HeaderModel(ctx, studentID)
	switch {
	case err == nil:
		if p, err = match.ParseProfile(h.Profile); err == nil {
			s.m.FeedReads.WithLabelValues("match", "hit").Inc()
			loaded = true
			if model, err = match.DecodeModel(h.Model); err != nil {
				// A feed stored without its model (or with one of another
				// version): its weights as stored, without a residual.
				w := match.WeightsFromMap(h.Weights)
				weights = &w
			}
		} else {
			s.m.FeedReads.WithLabelValues("match", "stale").Inc()
		}
	case errors.Is(err, cache.ErrNotBuilt):
		s.m.FeedReads.WithLabelValues("match", "miss").Inc()
	default:
		s.cacheErr(ctx, "match", studentID, err)
	}
	if !loaded {
		st, err := s.students.LearnerState(ctx, studentID)
		if err != nil {
			return MatchDetailView{}, err
		}
		if st.Student.DeletedAt != nil { // erased: unknown, as on every other read
			return MatchDetailView{}, domain.StudentNotFound(studentID)
		}
		p, model, _ = match.Start(st)
		missing = st.Student.Missing()
	}
	idx, ok := cat.School(schoolID)
	if !ok {
		return MatchDetailView{}, domain.SchoolNotFound(schoolID)
	}
	var d match.MatchDetail
	if weights != nil {
		d = match.Detail(p, *weights, cat.Catalog, idx)
	} else {
		d = match.DetailModel(p, model, cat.Catalog, idx)
	}
	score := round4(d.OverallScore)
	return MatchDetailView{
		StudentID:    studentID,
		SchoolID:     cat.Schools[idx].ID,
		OverallScore: score,
		Grade:        match.Grade(score),
		Components: DetailComponents{
			Academic: detailComponent(d.Components.Academic), Financial: detailComponent(d.Components.Financial),
			Campus: detailComponent(d.Components.Campus), Outcomes: detailComponent(d.Components.Outcomes),
		},
		Explanation:      d.Explanation,
		MatchReasons:     d.Reasons,
		AdmissionBand:    d.AdmissionBand,
		NetPrice:         netPriceView(d.NetPrice),
		Distance:         distancePtr(roundMiles(d.Distance)),
		MatchedMajors:    majorNames(d.MatchedMajors),
		Confidence:       round4(d.Confidence),
		Missing:          missing,
		School:           schoolView(cat, p, idx),
		AlgorithmVersion: match.AlgorithmVersion,
	}, nil
}

// Schools returns the active schools among ids in compact form, in the
// order given, and the ids not served (unknown or inactive) in missing.
// ids must be UUIDs; duplicates (in any letter case) are returned once.
func (s *Service) Schools(_ context.Context, ids []string) BatchSchools {
	cat := s.catalogs.Current()
	out := BatchSchools{R: make([]CompactSchool, 0, len(ids)), Missing: []string{}}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		idx, ok := cat.School(id)
		key := id
		if ok {
			key = cat.Schools[idx].ID
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		if ok {
			out.R = append(out.R, compactSchool(cat, idx))
		} else {
			out.Missing = append(out.Missing, id)
		}
	}
	return out
}

// InvalidateFeed drops a student's stored feed after their profile changed,
// leaving a tombstone with the new version so that a build started before
// the change cannot store its stale result. Best effort: a failure is
// logged, and the feed's TTL bounds how long it can be served.
func (s *Service) InvalidateFeed(ctx context.Context, studentID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	v, err := s.students.StudentVersion(ctx, studentID)
	if err == nil {
		err = s.feeds.Invalidate(ctx, studentID, v)
	} else {
		err = errors.Join(err, s.feeds.Delete(ctx, studentID))
	}
	if err != nil {
		s.log.WarnContext(ctx, "feed not invalidated; it expires with its TTL", "student_id", studentID, "err", err)
	}
}
