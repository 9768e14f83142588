package query_test

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/testutil"
)

// clock is a settable clock for the read side.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Now().Truncate(time.Second).Add(time.Hour)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// sw is a swipe a continuous-feed request carries.
type sw struct {
	school, direction, interaction string
}

// record stores carried swipes as the write side does (one batch, in
// order) and returns what the continuous feed is told of them.
func (e *env) record(t *testing.T, student string, swipes []sw) query.Carried {
	t.Helper()
	if len(swipes) == 0 {
		return query.Carried{}
	}
	changes := make([]domain.Change, len(swipes))
	for i, s := range swipes {
		kind := s.interaction
		if kind == "" {
			kind = domain.InteractionSwipe
		}
		changes[i] = domain.Change{Type: domain.ChangeSwipe, Swipe: domain.Swipe{StudentID: student,
			SchoolID: strings.ToLower(s.school), Direction: s.direction, Interaction: kind, ClientID: uuid.NewString()}}
	}
	res, err := e.Store.RecordBatch(context.Background(), student, changes)
	require.NoError(t, err)
	out := query.Carried{Recorded: true, SwipeCount: res.SwipeCount}
	for _, c := range changes {
		if c.Swipe.Counted() {
			out.Swiped = append(out.Swiped, c.Swipe.SchoolID)
		}
	}
	return out
}

// continuousEnv is the continuous feed over e's store and Redis, with a
// settable clock and a stored feed of feedSize items.
type continuousEnv struct {
	*env
	clock    *clock
	svc      *query.Service
	cf       *query.Continuous
	cooldown time.Duration
}

func newContinuousEnv(t *testing.T, schools, feedSize int, cooldown time.Duration) *continuousEnv {
	t.Helper()
	e := newEnv(t, schools, feedSize)
	c := &continuousEnv{env: e, clock: newClock(), cooldown: cooldown}
	c.svc = query.New(query.Config{Students: e.Students, Feeds: e.Feeds, Catalogs: e.Catalog, Log: testutil.Logger(t),
		Metrics: e.Metrics, FeedSize: feedSize, Now: c.clock.Now})
	c.cf = query.NewContinuous(query.ContinuousConfig{Queries: c.svc, Store: cache.NewCooldowns(e.Feeds, cooldown),
		Probes: cache.NewProbes(e.Redis, 5*time.Minute)})
	return c
}

// order is the student's whole feed, best first, as POST /recommendations pages it.
func (c *continuousEnv) order(t *testing.T, student string) []string {
	t.Helper()
	page, err := c.svc.RecommendationsV2(context.Background(), student, 100, 0)
	require.NoError(t, err)
	out := make([]string, len(page.Recommendations))
	for i, r := range page.Recommendations {
		out[i] = r.SchoolID
	}
	return out
}

func (c *continuousEnv) next(t *testing.T, student string, limit int, swipes ...sw) query.ContinuousPage {
	t.Helper()
	page, err := c.cf.ContinuousFeed(context.Background(), student, limit, c.record(t, student, swipes))
	require.NoError(t, err)
	return page
}

func ids(p query.ContinuousPage) []string {
	out := make([]string, len(p.Recommendations))
	for i, r := range p.Recommendations {
		out[i] = r.SchoolID
	}
	return out
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func TestContinuousFeedRecyclesAfterTheCooldown(t *testing.T) {
	c := newContinuousEnv(t, 35, 0, time.Minute)
	st := c.save(t, completeStudent())
	all := c.order(t, st.ID)
	require.Len(t, all, 35)
	t0 := c.clock.Now()

	// The first page is the feed's; shown schools then cool down, and each
	// call serves schools not shown yet.
	pages := [][]string{}
	served := map[string]bool{}
	for i := range 3 {
		p := c.next(t, st.ID, 10)
		got := ids(p)
		if i == 0 {
			assert.Equal(t, all[:10], got, "nothing is cooling down: the stored feed's first items")
		}
		require.Len(t, got, 10)
		for _, id := range got {
			assert.False(t, served[id], "call %d: %s is cooling down", i, id)
			served[id] = true
		}
		assert.Empty(t, p.Metadata.NextAvailableAt, "a full page says nothing of the cooldown")
		assert.Equal(t, 35, p.Metadata.TotalCount, "the whole list, cooling schools included")
		pages = append(pages, got)
		c.clock.advance(time.Second)
	}
	// Then the list runs out: a short page that says when the first school is free.
	p := c.next(t, st.ID, 10)
	require.Len(t, p.Recommendations, 5)
	for _, id := range ids(p) {
		assert.False(t, served[id])
		served[id] = true
	}
	assert.Len(t, served, 35, "every school was served once")
	assert.Equal(t, rfc3339(t0.Add(time.Minute)), p.Metadata.NextAvailableAt)
	p = c.next(t, st.ID, 10)
	assert.Empty(t, p.Recommendations, "every school is cooling down")
	assert.Equal(t, rfc3339(t0.Add(time.Minute)), p.Metadata.NextAvailableAt)

	// Just before the cooldown ends, nothing; at its end, the first page's
	// schools are eligible again, and only they.
	c.clock.advance(t0.Add(time.Minute - time.Millisecond).Sub(c.clock.Now()))
	p = c.next(t, st.ID, 10)
	assert.Empty(t, p.Recommendations)
	c.clock.advance(time.Millisecond)
	p = c.next(t, st.ID, 10)
	assert.ElementsMatch(t, pages[0], ids(p))
	p = c.next(t, st.ID, 10)
	assert.Empty(t, p.Recommendations)
	assert.Equal(t, rfc3339(t0.Add(time.Minute+time.Second)), p.Metadata.NextAvailableAt, "the second page's cooldown")
	c.clock.advance(time.Second)
	p = c.next(t, st.ID, 4)
	assert.Subset(t, pages[1], ids(p))

	// Once every cooldown is over, the schools rank as if never shown: the
	// feed's own order, top matches first.
	c.clock.advance(2 * time.Minute)
	p = c.next(t, st.ID, 10)
	assert.Equal(t, all[:10], ids(p))
}

// A property test over many calls on a small catalogue: every answer holds
// only eligible schools (neither swiped nor cooling down), each once, as
// many as asked while there are that many; a page is short only when
// nothing else is eligible, and then next_available_at is the earliest end
// of a cooldown; probes sit where the probe rule puts them (while the
// eligible schools fill a whole page).
func TestContinuousFeedNeverRunsDry(t *testing.T) {
	const cooldown = 30 * time.Second
	c := newContinuousEnv(t, 24, 0, cooldown)
	ctx := context.Background()
	st := c.save(t, completeStudent())
	all := c.order(t, st.ID)
	require.Len(t, all, 24)

	shown := map[string]time.Time{}
	swiped := map[string]bool{}
	var last []string
	short, reshuffled := 0, 0
	for call := range 80 {
		now := c.clock.Now()
		var swipes []sw
		// Swipe the first item of the last page, for the first 14 calls.
		if call < 14 && len(last) > 0 {
			dir := []string{"left", "right"}[call%2]
			swipes = append(swipes, sw{school: last[0], direction: dir})
			swiped[last[0]] = true
		}
		limit := 3 + call%5
		p, err := c.cf.ContinuousFeed(ctx, st.ID, limit, c.record(t, st.ID, swipes))
		require.NoError(t, err)

		eligible := map[string]bool{}
		var nextFree time.Time
		for _, id := range all {
			if swiped[id] {
				continue
			}
			if at, ok := shown[id]; ok && at.Add(cooldown).After(now) {
				if free := at.Add(cooldown); nextFree.IsZero() || free.Before(nextFree) {
					nextFree = free
				}
				continue
			}
			eligible[id] = true
		}
		got := ids(p)
		require.Len(t, got, min(limit, len(eligible)), "call %d: as many as asked while there are", call)
		seen := map[string]bool{}
		for i, id := range got {
			require.True(t, eligible[id], "call %d: %s is swiped or cooling down", call, id)
			require.False(t, seen[id], "call %d: %s twice", call, id)
			seen[id] = true
			if p.Recommendations[i].IsProbe && len(eligible) >= query.FeedPageSize {
				// (On a page the catalogue cannot fill, the items close up.)
				require.Zero(t, (p.TotalSwipes+i+1)%4, "call %d: a probe only where the rule puts one", call)
			}
		}
		if len(got) < limit {
			short++
			if nextFree.IsZero() && len(got) > 0 {
				nextFree = now.Add(cooldown)
			}
			require.NotZero(t, nextFree, "something is always cooling down here")
			require.Equal(t, rfc3339(nextFree), p.Metadata.NextAvailableAt, "call %d", call)
		} else {
			require.Empty(t, p.Metadata.NextAvailableAt)
		}
		if len(got) > 0 && got[0] != all[0] {
			reshuffled++
		}
		for _, id := range got {
			shown[id] = now
		}
		last = got
		c.clock.advance(3 * time.Second)
	}
	assert.GreaterOrEqual(t, len(swiped), 6)
	assert.Positive(t, short, "the test reaches pages cut short by the cooldown")
	assert.Positive(t, reshuffled, "and pages assembled without cooling schools")
	var n int
	require.NoError(t, c.Store.Pool().QueryRow(ctx, `SELECT count(*) FROM swipes WHERE student_id = $1`, st.ID).Scan(&n))
	assert.Equal(t, len(swiped), n, "every swipe sent along was recorded once")
}

func TestContinuousFeedRanksPastTheStoredFeed(t *testing.T) {
	c := newContinuousEnv(t, 30, 10, time.Minute)
	st := c.save(t, completeStudent())
	all := c.order(t, st.ID)
	require.Len(t, all, 30, "the list goes on past the 10 stored items")
	got := []string{}
	for range 4 {
		got = append(got, ids(c.next(t, st.ID, 8))...)
	}
	assert.Equal(t, all[:8], got[:8], "the stored feed's first items")
	assert.ElementsMatch(t, all, got, "then the rest of the catalogue, each school once")
	p := c.next(t, st.ID, 8)
	assert.Empty(t, p.Recommendations)
	assert.NotEmpty(t, p.Metadata.NextAvailableAt)

	// Schools swiped long ago (not in the stored items, not recent swipes of
	// this endpoint) stay out past the stored feed too.
	c2 := newContinuousEnv(t, 30, 10, time.Minute)
	st2 := c2.save(t, completeStudent())
	all2 := c2.order(t, st2.ID)
	for _, id := range []string{all2[12], all2[25]} {
		_, err := c2.Store.RecordSwipe(context.Background(), domain.Swipe{StudentID: st2.ID, SchoolID: id,
			Direction: "left", Interaction: domain.InteractionSwipe})
		require.NoError(t, err)
	}
	got = []string{}
	for range 4 {
		got = append(got, ids(c2.next(t, st2.ID, 8))...)
	}
	assert.Len(t, got, 28)
	assert.NotContains(t, got, all2[12])
	assert.NotContains(t, got, all2[25])
	seen := map[string]bool{}
	for _, id := range got {
		assert.False(t, seen[id], "each school once")
		seen[id] = true
	}
}

func TestContinuousFeedRemembersProbes(t *testing.T) {
	c := newContinuousEnv(t, 40, 0, time.Minute)
	ctx := context.Background()
	st := c.save(t, completeStudent())
	c.order(t, st.ID) // builds and stores the feed
	// Flag every 4th stored item a probe, as the feed rules do.
	f, err := c.Feeds.Feed(ctx, st.ID)
	require.NoError(t, err)
	f.Items = f.Range(0, f.Len())
	for i := range f.Items {
		f.Items[i].Probe = i%4 == 3
	}
	stored, err := c.Feeds.Put(ctx, f)
	require.NoError(t, err)
	require.True(t, stored)

	p := c.next(t, st.ID, 8)
	probes := cache.NewProbes(c.Redis, 5*time.Minute)
	for i, r := range p.Recommendations {
		assert.Equal(t, i%4 == 3, r.IsProbe, "item %d keeps the feed's flag", i)
		was, err := probes.WasProbe(ctx, st.ID, r.SchoolID)
		require.NoError(t, err)
		assert.Equal(t, r.IsProbe, was, "item %d: served as a probe is remembered as one", i)
	}
}

// The page after carried swipes shows the counts they left and leaves
// their schools out.
func TestContinuousFeedAfterCarriedSwipes(t *testing.T) {
	c := newContinuousEnv(t, 40, 0, time.Minute)
	st := c.save(t, completeStudent())
	all := c.order(t, st.ID)

	p := c.next(t, st.ID, 5,
		sw{school: strings.ToUpper(all[0]), direction: "right"},
		sw{school: all[1], direction: "left", interaction: "tap"},
		sw{school: all[2], direction: "left"},
	)
	assert.Equal(t, 2, p.TotalSwipes, "the counts after the swipes: a tap is not counted")
	assert.Equal(t, "discovery", p.Metadata.LearningPhase)
	assert.InDelta(t, 2.0/31, p.LearningState.Progress, 1e-4)
	assert.Len(t, p.Recommendations, 5)
	assert.NotContains(t, ids(p), all[0], "swiped schools are left out")
	assert.NotContains(t, ids(p), all[2])

	// Swiped schools never come back, whatever the cooldown does.
	c.clock.advance(2 * time.Minute)
	p = c.next(t, st.ID, 40)
	assert.Len(t, p.Recommendations, 38)
	assert.NotContains(t, ids(p), all[0])
	assert.NotContains(t, ids(p), all[2])

	// Nine more swipes move the phase to refinement (11 counted swipes).
	var swipes []sw
	for _, id := range all[10:19] {
		swipes = append(swipes, sw{school: id, direction: "right"})
	}
	c.clock.advance(2 * time.Minute)
	p = c.next(t, st.ID, 40, swipes...)
	assert.Equal(t, 11, p.TotalSwipes)
	assert.Equal(t, "refinement", p.Metadata.LearningPhase)
	assert.Equal(t, "refinement", p.LearningState.Phase)
	assert.Len(t, p.Recommendations, 40-11)
}

func TestContinuousFeedServesAnyStudent(t *testing.T) {
	c := newContinuousEnv(t, 30, 0, time.Minute)
	ctx := context.Background()
	partial := c.save(t, domain.Student{ID: uuid.NewString(), Name: "P", Email: "p@example.com", GraduationYear: "2027"})
	p, err := c.cf.ContinuousFeed(ctx, partial.ID, 10, query.Carried{})
	require.NoError(t, err, "an incomplete profile is served, as by POST /v2/recommendations")
	assert.Len(t, p.Recommendations, 10)
	for _, r := range p.Recommendations {
		assert.Nil(t, r.Distance)
	}
	_, err = c.cf.ContinuousFeed(ctx, uuid.NewString(), 10, query.Carried{})
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	assert.Equal(t, domain.CodeInvalidStudentID, de.Code)
}

// Without Redis the feed is computed from PostgreSQL; nothing cools down.
func TestContinuousFeedWithoutRedis(t *testing.T) {
	e := newEnv(t, 30, 0)
	st := e.save(t, completeStudent())
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	feeds := cache.NewFeeds(down, time.Minute)
	svc := e.service(t, e.Students, feeds, 0)
	cf := query.NewContinuous(query.ContinuousConfig{Queries: svc, Store: cache.NewCooldowns(feeds, time.Minute),
		Probes: cache.NewProbes(down, time.Minute)})
	want, err := svc.Recommendations(context.Background(), st.ID, 6, 0)
	require.NoError(t, err)
	p, err := cf.ContinuousFeed(context.Background(), st.ID, 5,
		e.record(t, st.ID, []sw{{school: want.Recommendations[0].SchoolID, direction: "right"}}))
	require.NoError(t, err)
	assert.Len(t, p.Recommendations, 5)
	assert.NotContains(t, ids(p), want.Recommendations[0].SchoolID, "this request's swipe is left out")
	assert.Equal(t, 1, p.TotalSwipes)
	assert.False(t, math.IsNaN(p.LearningState.Progress))
}

// roundTrips counts the Redis round trips a client makes for data (a
// pipeline or a MULTI/EXEC is one); a new connection's handshake is not
// counted.
type roundTrips struct {
	mu sync.Mutex
	n  int
}

func (r *roundTrips) count(name string) {
	switch name {
	case "hello", "select", "client", "auth", "ping":
		return
	}
	r.mu.Lock()
	r.n++
	r.mu.Unlock()
}

func (r *roundTrips) get() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.count(cmd.Name()); return next(ctx, cmd) }
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 {
			r.count(cmds[0].Name())
		}
		return next(ctx, cmds)
	}
}

// A warm read is one round trip for the feed, the cooldowns and the recent
// swipes, and one for recording what was served (no probe on the page).
func TestContinuousFeedRoundTrips(t *testing.T) {
	c := newContinuousEnv(t, 60, 0, time.Minute)
	st := c.save(t, completeStudent())
	c.order(t, st.ID) // stores the feed
	rt := &roundTrips{}
	c.Redis.(*redis.Client).AddHook(rt)
	p := c.next(t, st.ID, 3) // positions 1-3: no probe at 0 swipes
	require.Len(t, p.Recommendations, 3)
	for _, r := range p.Recommendations {
		require.False(t, r.IsProbe)
	}
	assert.Equal(t, 2, rt.get(), "one read, one write")
	assert.Zero(t, c.Students.loads.Load()-1, "no PostgreSQL read beyond the first build")
}
