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

// LearnSweep is the repair path of learning: every swipe and feedback is
// folded in by the student:learn task its write queued after the commit,
// but that task is lost when the write could not queue it (Redis down, the
// API killed between commit and queue) or when Redis loses its queue (a
// restart without persistence). The sweep finds, from PostgreSQL, students
// with events recorded more than Grace ago that their learned state does
// not cover, and queues their task again under the id the write used (the
// queue refuses it while the original is there). So nothing a student did
// stays unlearned for much more than Interval + Grace once Redis answers.
//
// A pass reads the events after a cursor kept in PostgreSQL; the cursor
// moves past events once they are Settled (no transaction that could still
// commit one is running) and learned. A queued task is no proof: Redis may
// lose its queues with their tasks, and the sweep then finds every event
// that waited in them. The cursor moves past an unlearned event only once
// it is HoldBack old (a student whose task fails for good must not pin it
// forever; such a student's next swipe queues a task that folds
// everything). One replica at a time runs the passes (the learn-sweep
// lease, periodic.Lease): with N worker replicas the sweep's work does not
// grow N-fold.
type LearnSweep struct {
	log    *slog.Logger
	debts  LearnDebts
	q      Queue
	job    *periodic.Runner
	cfg    LearnSweepConfig
	queued prometheus.Counter
	passes *prometheus.CounterVec

	// owed is what the last pass found unlearned. A debt a whole pass
	// later is queued under a second id (sweepIDSuffix): the task the write
	// queued may be held by a worker that died (asynq keeps it active
	// until its lease runs out and its recoverer sends it to retry, a
	// minute or more), and a task under its id is refused meanwhile. One
	// second id, not one per pass, so a debt that is only waiting in a
	// long queue adds one task at most.
	owed map[domain.Unlearned]bool
}

// sweepIDSuffix makes the second id of a learn task the sweep queues.
const sweepIDSuffix = ":sweep"

// NewLearnSweep builds the sweep; its collectors are registered on reg.
func NewLearnSweep(log *slog.Logger, debts LearnDebts, q Queue, lease periodic.Lease, reg prometheus.Registerer, cfg LearnSweepConfig) *LearnSweep {
	if log == nil || debts == nil || q == nil || lease == nil || reg == nil {
		panic("tasks.NewLearnSweep: nil dependency")
	}
	cfg = cfg.withDefaults()
	s := &LearnSweep{log: log, debts: debts, q: q, cfg: cfg,
		job: periodic.New(periodic.Config{Name: "learn-sweep", Interval: cfg.Interval, Lease: lease, Log: log}),
		queued: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "matching_learn_requeued_total",
			Help: "student:learn tasks queued again by the learn sweep for events their learned state lacked (the task was lost).",
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
// many tasks it queued again.
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
	queued := 0
	if len(debts) == 0 {
		s.owed = nil
	} else {
		jobs := make([]handover.Job, len(debts))
		owed := make(map[domain.Unlearned]bool, len(debts))
		for i, d := range debts {
			jobs[i] = LearnJob(d.StudentID, d.Version, d.LastFeedbackID)
			if s.owed[d] {
				jobs[i].ID += sweepIDSuffix
			}
			owed[d] = true
		}
		s.owed = owed
		if queued, err = s.q.Queue(ctx, jobs...); err != nil {
			return 0, err // the cursor stays: the next pass finds them again
		}
		s.queued.Add(float64(queued))
		if queued > 0 {
			s.log.WarnContext(ctx, "student:learn tasks queued again for unlearned events", "queued", queued,
				"unlearned", len(debts))
		}
	}
	if len(debts) == s.cfg.Limit {
		return queued, nil // more to look at: the cursor stays until a pass sees them all
	}
	_, err = s.debts.AdvanceLearnSweep(ctx, cur, s.cfg.Settled, s.cfg.HoldBack)
	return queued, err
}
