package tasks

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/periodic"
)

// LearnDebts is what the learn sweep reads from the database (*store.Store
// through an adapter).
type LearnDebts interface {
	// LearnSweepCursor is where the sweep has got to.
	LearnSweepCursor(ctx context.Context) (domain.SweepCursor, error)
	// UnlearnedStudents lists up to limit students with swipes or feedback
	// after the cursor, recorded more than grace ago, that their learned
	// state does not cover.
	UnlearnedStudents(ctx context.Context, cur domain.SweepCursor, grace time.Duration, limit int) ([]domain.Unlearned, error)
	// AdvanceLearnSweep moves the cursor from cur past what was recorded
	// more than settled ago, except the events recorded within holdBack
	// that their learned state still lacks.
	AdvanceLearnSweep(ctx context.Context, cur domain.SweepCursor, settled, holdBack time.Duration) (domain.SweepCursor, error)
}

// LearnMarks is what the learn sweep asks of the learn drains
// (*LearnDrains).
type LearnMarks interface {
	// Pending reports which of studentIDs are marked in their shard's
	// learn drain while the drain is armed (its task queued or running),
	// which folds them without the sweep.
	Pending(ctx context.Context, studentIDs []string) (map[string]bool, error)
}

// LearnSweepConfig tunes the sweep; zero fields take the defaults.
type LearnSweepConfig struct {
	Interval time.Duration // between passes; default 15 s
	Grace    time.Duration // how old an unlearned event must be before a task is queued again for it; default 10 s
	Settled  time.Duration // how old events must be for the cursor to move past them; default 1 min
	Limit    int           // students per pass; default 5,000
	// HoldBack is how long the cursor waits for an event to be learned
	// before it moves past it anyway; default 1 h. Within it, a learn task
	// that was queued and lost with Redis's data is queued again.
	HoldBack time.Duration
}

func (c LearnSweepConfig) withDefaults() LearnSweepConfig {
	if c.Interval <= 0 {
		c.Interval = 15 * time.Second
	}
	if c.Grace <= 0 {
		c.Grace = 10 * time.Second
	}
	if c.Settled <= 0 {
		c.Settled = time.Minute
	}
	c.Settled = max(c.Settled, c.Grace)
	if c.Limit <= 0 {
		c.Limit = 5000
	}
	if c.HoldBack <= 0 {
		c.HoldBack = time.Hour
	}
	c.HoldBack = max(c.HoldBack, c.Settled)
	return c
}

// LearnSweep is the repair path of learning: every swipe marks its
// student in their shard's learn drain after the commit (and feedback
// queues a student:learn task), but a mark is lost when the write could
// not set it (Redis down, the API killed between commit and mark) or when
// Redis loses its data (a restart without persistence). The sweep finds,
// from PostgreSQL, students with events recorded more than Grace ago that
// their learned state does not cover, and hands each back to their learn
// drain with the mark a swipe sets (LearnMark), which queues the shard's
// drain when none is armed; the drains then fold them in batches, as they
// fold every swipe. A student still marked in an armed drain is left to
// it: that drain folds them (at a high rate a drain lags by more than the
// grace, and reading each such student again would do its work twice).
// So nothing a student did stays unlearned for much more than Interval +
// Grace once Redis answers; a drain whose task died holds its students
// back until its arm lapses (a minute), and the next pass hands them on.
//
// A pass reads the events after a cursor kept in PostgreSQL; the cursor
// moves past events once they are Settled (no transaction that could still
// commit one is running) and learned. A mark is no proof: Redis may lose
// it, and the sweep then finds every event it stood for. The cursor moves
// past an unlearned event only once it is HoldBack old (a student whose
// fold fails for good must not pin it forever; such a student's next
// swipe marks them again, and the fold takes everything). One replica at a
// time runs the passes (the learn-sweep lease, periodic.Lease): with N
// worker replicas the sweep's work does not grow N-fold.
type LearnSweep struct {
	log    *slog.Logger
	debts  LearnDebts
	marks  LearnMarks
	q      Queue
	job    *periodic.Runner
	cfg    LearnSweepConfig
	queued prometheus.Counter
	passes *prometheus.CounterVec
}

// NewLearnSweep builds the sweep; its collectors are registered on reg.
func NewLearnSweep(log *slog.Logger, debts LearnDebts, marks LearnMarks, q Queue, lease periodic.Lease, reg prometheus.Registerer,
	cfg LearnSweepConfig) *LearnSweep {
	if log == nil || debts == nil || marks == nil || q == nil || lease == nil || reg == nil {
		panic("tasks.NewLearnSweep: nil dependency")
	}
	cfg = cfg.withDefaults()
	s := &LearnSweep{log: log, debts: debts, marks: marks, q: q, cfg: cfg,
		job: periodic.New(periodic.Config{Name: "learn-sweep", Interval: cfg.Interval, Lease: lease, Log: log}),
		queued: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matching_learn_requeued_total",
			Help: "Students the learn sweep marked again in their learn drain for events their learned state lacked (their mark was lost).",
		}),
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "matching_learn_sweep_passes_total",
			Help: "Learn sweep passes, by result (ok, skipped: another replica leads, error).",
		}, []string{"result"}),
	}
	for _, r := range []string{"ok", "skipped", "error"} {
		s.passes.WithLabelValues(r)
	}
	reg.MustRegister(s.queued, s.passes)
	return s
}

// Run passes at once and then every Interval until ctx ends.
func (s *LearnSweep) Run(ctx context.Context) {
	s.job.Run(ctx, func(ctx context.Context) error {
		_, err := s.Pass(ctx)
		return err
	})
}

// Pass runs one pass when this replica holds the lease, and returns how
// many students it marked again.
func (s *LearnSweep) Pass(ctx context.Context) (int, error) {
	n := 0
	lead, err := s.job.Do(ctx, func(ctx context.Context) (err error) {
		n, err = s.pass(ctx)
		return err
	})
	if !lead && err == nil {
		s.passes.WithLabelValues("skipped").Inc()
		return 0, nil
	}
	if err != nil {
		s.passes.WithLabelValues("error").Inc()
		return n, err
	}
	s.passes.WithLabelValues("ok").Inc()
	return n, nil
}

func (s *LearnSweep) pass(ctx context.Context) (int, error) {
	cur, err := s.debts.LearnSweepCursor(ctx)
	if err != nil {
		return 0, err
	}
	debts, err := s.debts.UnlearnedStudents(ctx, cur, s.cfg.Grace, s.cfg.Limit)
	if err != nil {
		return 0, err
	}
	marked, err := s.remark(ctx, debts)
	if err != nil {
		return 0, err // the cursor stays: the next pass finds them again
	}
	if len(debts) == s.cfg.Limit {
		return marked, nil // more to look at: the cursor stays until a pass sees them all
	}
	_, err = s.debts.AdvanceLearnSweep(ctx, cur, s.cfg.Settled, s.cfg.HoldBack)
	return marked, err
}

// remark marks again, in their learn drains, the students of debts that an
// armed drain does not hold, and returns how many it marked.
func (s *LearnSweep) remark(ctx context.Context, debts []domain.Unlearned) (int, error) {
	if len(debts) == 0 {
		return 0, nil
	}
	ids := make([]string, len(debts))
	for i, d := range debts {
		ids[i] = d.StudentID
	}
	pending, err := s.marks.Pending(ctx, ids)
	if err != nil {
		return 0, err
	}
	var jobs []handover.Job
	for _, d := range debts {
		if !pending[d.StudentID] {
			jobs = append(jobs, LearnMark(d.StudentID, d.Version))
		}
	}
	s.log.DebugContext(ctx, "learn sweep", "unlearned", len(debts), "left_to_drains", len(debts)-len(jobs), "marked", len(jobs))
	if len(jobs) == 0 {
		return 0, nil
	}
	if _, err := s.q.Queue(ctx, jobs...); err != nil {
		return 0, err
	}
	s.queued.Add(float64(len(jobs)))
	s.log.WarnContext(ctx, "students with unlearned events marked again in their learn drains", "marked", len(jobs),
		"unlearned", len(debts))
	return len(jobs), nil
}
