// Package periodic runs the worker's periodic jobs (the learn sweep, the
// webhook monitor, retention, the queue metrics, the outbox relay's passes):
// a pass at once and then every interval, and for a job that one replica
// of the fleet should run at a time, under a lease held in Redis.
//
// The lease stays with the replica that holds it for as long as it renews
// it (each pass, and every third of its TTL while a pass runs), and passes
// to another when the holder stops: at once when it stops in order (it
// releases the lease), within the TTL when it dies. So N replicas do the
// job's work once, and the replica doing it keeps whatever it learnt
// between passes.
package periodic

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Lease keeps one replica in charge of a job (handover.Leader).
type Lease interface {
	// Hold takes the lease named name for ttl, or extends it when this
	// replica holds it; false when another replica does.
	Hold(ctx context.Context, name string, ttl time.Duration) (bool, error)
	// Release gives the lease up when this replica holds it.
	Release(ctx context.Context, name string) error
}

// Config describes a job; Name and Interval are required.
type Config struct {
	// Name names the job in the log and its lease (the Redis key
	// lead:<name>).
	Name string
	// Interval is the time between the starts of two passes.
	Interval time.Duration
	// TTL is how long the lease outlives its last renewal: another replica
	// takes over this long after the holder stopped renewing it without
	// releasing it (it died). Default 3 × Interval.
	TTL time.Duration
	// Lease, when set, makes the job one replica's at a time; nil: every
	// replica runs it (jobs whose passes share the work among replicas).
	Lease Lease
	// Log hears about passes that fail; default slog.Default.
	Log *slog.Logger
}

// Runner runs one job.
type Runner struct {
	cfg Config
}

// New builds a runner for the job cfg describes.
func New(cfg Config) *Runner {
	if cfg.Name == "" || cfg.Interval <= 0 {
		panic("periodic.New: a job needs a name and an interval")
	}
	if cfg.TTL <= cfg.Interval {
		cfg.TTL = 3 * cfg.Interval
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Runner{cfg: cfg}
}

// Interval is the time between passes.
func (r *Runner) Interval() time.Duration { return r.cfg.Interval }

// ErrLeaseLost is the cause of a pass's context ending because another
// replica took the lease while the pass ran (this replica could not renew
// it in time).
var ErrLeaseLost = errors.New("periodic: lease lost to another replica")

// Do runs fn once when this replica holds the lease, taking it when it is
// free; ran is false when another replica holds it (fn did not run). While
// fn runs the lease is renewed every third of its TTL, and fn's context
// ends (cause ErrLeaseLost) if another replica has taken it meanwhile. err
// is the lease's (Redis did not answer: fn did not run) or fn's. Without a
// lease fn always runs.
func (r *Runner) Do(ctx context.Context, fn func(ctx context.Context) error) (ran bool, err error) {
	if r.cfg.Lease == nil {
		return true, fn(ctx)
	}
	held, err := r.cfg.Lease.Hold(ctx, r.cfg.Name, r.cfg.TTL)
	if err != nil || !held {
		return false, err
	}
	jctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	go r.renew(jctx, cancel, done)
	return true, fn(jctx)
}

// renew extends the lease every third of its TTL until done is closed,
// and cancels the pass when another replica holds it. A renewal that
// fails (Redis did not answer) is tried again at the next third: the
// lease may lapse, and another replica then runs a pass beside this one,
// which every job here tolerates (their work is idempotent; the lease
// saves work, it does not guard correctness).
func (r *Runner) renew(ctx context.Context, cancel context.CancelCauseFunc, done <-chan struct{}) {
	t := time.NewTicker(r.cfg.TTL / 3)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		held, err := r.cfg.Lease.Hold(ctx, r.cfg.Name, r.cfg.TTL)
		if err == nil && !held {
			cancel(ErrLeaseLost)
			return
		}
	}
}

// Run calls pass at once and then every Interval until ctx ends, and then
// releases the lease so that another replica takes the job over at its
// next pass. pass is typically a method that calls Do. A pass that fails
// does not stop the loop: the next one tries again. The first failure is
// logged as a warning, later ones while it keeps failing at debug level,
// and the recovery once.
func (r *Runner) Run(ctx context.Context, pass func(ctx context.Context) error) {
	defer r.release(ctx)
	tick := time.NewTicker(r.cfg.Interval)
	defer tick.Stop()
	var failing error
	for {
		err := pass(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil && failing == nil:
			r.cfg.Log.WarnContext(ctx, r.cfg.Name+" failing; the next pass tries again", "job", r.cfg.Name, "err", err)
		case err != nil:
			r.cfg.Log.DebugContext(ctx, r.cfg.Name+" still failing", "job", r.cfg.Name, "err", err)
		case failing != nil:
			r.cfg.Log.InfoContext(ctx, r.cfg.Name+" recovered", "job", r.cfg.Name)
		}
		failing = err
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (r *Runner) release(ctx context.Context) {
	if r.cfg.Lease == nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := r.cfg.Lease.Release(rctx, r.cfg.Name); err != nil {
		r.cfg.Log.Debug("lease not released; it expires on its own", "job", r.cfg.Name, "err", err)
	}
}
