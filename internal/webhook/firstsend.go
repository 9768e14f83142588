package webhook

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/tasks"
)

// senders bounds the first attempts a relay has on the wire: in all, and
// to each endpoint.
type senders struct {
	all         chan struct{}
	perEndpoint int

	mu        sync.Mutex
	endpoints map[string]chan struct{}
	// late counts, by endpoint, the senders held by attempts that outlived
	// their batch's wait: a subscriber that slow frees none soon.
	late map[string]int
}

func newSenders(all, perEndpoint int) *senders {
	return &senders{all: make(chan struct{}, all), perEndpoint: perEndpoint, endpoints: map[string]chan struct{}{},
		late: map[string]int{}}
}

// stuck reports whether every sender of url is held by an attempt that
// outlived its batch: a batch then does not wait for one.
func (s *senders) stuck(url string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.late[url] >= s.perEndpoint
}

// outlived counts (n = 1) or uncounts (n = -1) a sender of url held by an
// attempt that outlived its batch's wait.
func (s *senders) outlived(url string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.late[url] += n
}

func (s *senders) endpoint(url string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.endpoints[url]
	if !ok {
		c = make(chan struct{}, s.perEndpoint)
		s.endpoints[url] = c
	}
	return c
}

// acquire takes a sender for url, waiting until deadline at most, and not
// at all when url's senders are stuck.
func (s *senders) acquire(url string, deadline time.Time) bool {
	if s.stuck(url) {
		return false
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	ep := s.endpoint(url)
	select {
	case ep <- struct{}{}:
	case <-t.C:
		return false
	}
	select {
	case s.all <- struct{}{}:
		return true
	case <-t.C:
		<-ep
		return false
	}
}

func (s *senders) release(url string) {
	<-s.all
	<-s.endpoint(url)
}

// How a new delivery's first attempt is made.
const (
	byQueue = iota // a webhook:deliver task makes it
	byRelay        // the relay makes it
	none           // the delivery is written ended, without an attempt
)

// Where a first attempt the relay makes is.
const (
	notSent = iota
	sending
	sent
)

// firstAttempt is a new delivery of a batch and its first attempt.
type firstAttempt struct {
	ev    *domain.ClaimedEvent
	url   string
	name  string // the endpoint's metrics label
	msgID string
	body  []byte
	how   int
	ended domain.DeliveryWrite // how == none

	// The relay's attempt, under relayBatch.mu until the hand-off.
	state int
	res   Result
	o     outcome
	at    time.Time // when its result came

	id  int64      // the delivery's row, once written (0: it was there already)
	row chan int64 // an attempt on the wire at the hand-off learns its row here once the batch ended (0: not written)
}

func (f *firstAttempt) attempt() domain.WebhookAttempt {
	a := domain.WebhookAttempt{StatusCode: f.res.StatusCode, Latency: f.res.Latency}
	if f.res.Err != nil {
		a.Error = f.res.Err.Error()
	}
	if f.o.label == "interrupted" {
		a.Error = "interrupted: " + a.Error
	}
	return a
}

// relayBatch is one batch of a relay: the deliveries of the events it
// claimed.
type relayBatch struct {
	r     *Relay
	lease time.Duration // of a first attempt handed to the queue
	all   []*firstAttempt

	mu        sync.Mutex
	handedOff bool // the batch stopped waiting: no attempt starts after this
	attempted bool // an attempt was made
	queued    []*firstAttempt
}

// plan lists the deliveries of events to the subscriptions of their
// topics, but for those that exist already, and decides how each first
// attempt is made.
func (r *Relay) plan(events []domain.ClaimedEvent, disabled map[string]string, lease time.Duration) *relayBatch {
	b := &relayBatch{r: r, lease: lease}
	for i := range events {
		ev := &events[i]
		for _, sub := range r.subs {
			if !slices.Contains(sub.Events, ev.Topic) || slices.Contains(ev.Delivered, sub.URL) {
				continue
			}
			f := &firstAttempt{ev: ev, url: sub.URL, msgID: "msg_" + strconv.FormatInt(ev.ID, 10) + "_" + sub.Key, how: byQueue}
			b.all = append(b.all, f)
			if reason, ok := disabled[sub.URL]; ok {
				f.how, f.ended = none, domain.DeliveryWrite{Status: domain.DeliveryDisabled, LastError: "endpoint disabled: " + reason}
				continue
			}
			if r.hooks == nil {
				continue
			}
			f.name = r.hooks.label(sub.URL)
			body, err := Body(f.msgID, domain.WebhookEvent{Topic: ev.Topic, Payload: ev.Payload, CreatedAt: ev.CreatedAt})
			if err != nil {
				r.log.Error("webhook event cannot be encoded; delivery parked", "outbox_id", ev.ID, "err", err)
				r.hooks.m.Deliveries.WithLabelValues(domain.DeliveryParked, f.name).Inc()
				f.how, f.ended = none, domain.DeliveryWrite{Status: domain.DeliveryParked, LastError: err.Error()}
				continue
			}
			f.how, f.body = byRelay, body
		}
	}
	return b
}

// send makes the batch's first attempts, as many at once as there are
// senders, and waits for them until FirstWait has passed: then the batch
// is handed off, and no attempt starts any more. The outbox rows are
// locked meanwhile, so an erasure of their student waits: no attempt
// about an erased student starts after its erasure.
func (b *relayBatch) send(ctx context.Context) {
	r := b.r
	var mine []*firstAttempt
	for _, f := range b.all {
		if f.how == byRelay {
			mine = append(mine, f)
		}
	}
	if len(mine) == 0 {
		return
	}
	deadline := time.Now().Add(r.cfg.FirstWait)
	// An attempt is not cut short by the end of ctx (shutdown) at once: it
	// gets ShutdownTimeout more (Run), and Run waits for the ones that
	// outlive their batch.
	sctx := r.sends
	settled := make(chan struct{}, len(mine)) // one per attempt that ended or never started
	for _, f := range mine {
		r.late.Add(1)
		go func() {
			defer r.late.Done()
			b.sendOne(sctx, f, deadline, settled)
		}()
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
wait:
	for range mine {
		select {
		case <-settled:
		case <-t.C:
			break wait
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.handedOff = true
	for _, f := range mine {
		switch f.state {
		case notSent:
			f.how = byQueue
		case sending:
			f.row = make(chan int64, 1)
			r.senders.outlived(f.url, 1)
			r.m.FirstAttempts.WithLabelValues("in_flight").Inc()
		}
	}
}

// sendOne makes one first attempt when a sender is free in time; if it is
// still on the wire when its batch is handed off, it records it later.
func (b *relayBatch) sendOne(ctx context.Context, f *firstAttempt, deadline time.Time, settled chan<- struct{}) {
	r := b.r
	if !r.senders.acquire(f.url, deadline) {
		settled <- struct{}{}
		return
	}
	b.mu.Lock()
	if b.handedOff {
		b.mu.Unlock()
		r.senders.release(f.url)
		return // handed to the queue
	}
	f.state, b.attempted = sending, true
	b.mu.Unlock()

	res := r.hooks.sender.Send(ctx, f.url, f.msgID, f.body)
	if res.Err != nil {
		res.Err = domain.Scrub(res.Err) // what is recorded names no secret and quotes no raw bytes
	}
	now := r.hooks.cfg.Now()
	o := r.hooks.outcome(res, 0, ctx.Err() != nil, now)
	b.mu.Lock()
	f.res, f.o, f.at = res, o, now
	late := b.handedOff
	if late {
		r.senders.outlived(f.url, -1)
	} else {
		f.state = sent
	}
	b.mu.Unlock()
	r.senders.release(f.url)
	r.hooks.m.AttemptLatency.WithLabelValues(f.name).Observe(res.Latency.Seconds())
	r.hooks.m.Attempts.WithLabelValues(o.label, f.name).Inc()
	if !late {
		r.m.FirstAttempts.WithLabelValues("sent").Inc()
		settled <- struct{}{}
		return
	}
	b.recordLate(f)
}

// write writes the batch's deliveries, each once: after its first attempt
// with the attempt, or leased to the attempt still on the wire, or leased
// to the task that will make it; then it queues those tasks. Tasks that
// Redis does not take fail the batch (it rolls back) when it made no
// attempt; otherwise the attempts are kept, and the monitor queues the
// tasks again once their lease is over.
func (b *relayBatch) write(ctx context.Context, write func(context.Context, []domain.DeliveryWrite) ([]int64, error)) error {
	r := b.r
	if b.attempted {
		// Attempts were made: they are recorded even when the worker is
		// stopping (each call is bounded by the store's limits), or the
		// next worker would make them again.
		ctx = context.WithoutCancel(ctx)
	}
	now := time.Now()
	ds := make([]domain.DeliveryWrite, len(b.all))
	for i, f := range b.all {
		d := domain.DeliveryWrite{Status: domain.DeliveryPending}
		switch {
		case f.how == none:
			d = f.ended
		case f.how == byQueue:
			d.Next = now.Add(b.lease)
		case f.state == sent:
			a := f.attempt()
			d.Status, d.Next, d.LastError = f.o.status, f.o.next(f.at), a.Error
			d.Attempt = &a
		default: // on the wire: leased to it as a claimed attempt is
			d.Next = now.Add(domain.WebhookLease)
		}
		d.OutboxID, d.Endpoint, d.WebhookID, d.Topic = f.ev.ID, f.url, f.msgID, f.ev.Topic
		ds[i] = d
	}
	ids, err := write(ctx, ds)
	if err != nil {
		return err
	}
	var jobs []handover.Job
	for i, f := range b.all {
		f.id = ids[i]
		if f.how != byQueue || f.id == 0 {
			continue
		}
		jobs = append(jobs, tasks.WebhookJob(f.ev.ID, f.url, 0, &tasks.FirstAttempt{DeliveryID: f.id,
			LeasedUntil: ds[i].Next.UnixMilli(), LeasedFor: b.lease.Milliseconds(), Topic: f.ev.Topic,
			Payload: f.ev.Payload, CreatedAt: f.ev.CreatedAt}))
		b.queued = append(b.queued, f)
	}
	if len(jobs) == 0 {
		return nil
	}
	qctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	if _, err := r.q.Queue(qctx, jobs...); err != nil {
		if !b.attempted {
			return err
		}
		r.m.Errors.WithLabelValues("queue").Inc()
		r.log.WarnContext(ctx, "first attempts not queued; the monitor queues them once their lease is over",
			"tasks", len(jobs), "err", err)
		return nil
	}
	r.m.Tasks.WithLabelValues(tasks.TypeWebhookDeliver, "enqueued").Add(float64(len(jobs)))
	r.m.FirstAttempts.WithLabelValues("queued").Add(float64(len(jobs)))
	return nil
}

// end finishes the batch once its transaction ended (committed or not):
// the attempts still on the wire learn their rows, and the attempts made
// get what their outcome asks (a retry task, an endpoint disabled).
func (b *relayBatch) end(ctx context.Context, committed bool) {
	r := b.r
	// The attempts made within the wait are settled (their fields no
	// longer move); those still on the wire only read what is sent here.
	for _, f := range b.all {
		if f.row == nil {
			continue
		}
		if committed {
			f.row <- f.id
		} else {
			f.row <- 0
		}
	}
	if !committed || r.hooks == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	var jobs []handover.Job
	for _, f := range b.all {
		if f.how != byRelay || f.state != sent {
			continue
		}
		if f.id == 0 {
			// A task of an older build wrote the delivery between the claim
			// and the write: its attempts are its own.
			r.log.WarnContext(ctx, "first attempt made but its delivery was written by another task; attempt not recorded",
				"outbox_id", f.ev.ID, "webhook_id", f.msgID)
			continue
		}
		if job, ok := b.after(ctx, f); ok {
			jobs = append(jobs, job)
		}
	}
	b.queueRetries(ctx, jobs)
}

// after does what a recorded first attempt's outcome asks; ok is true with
// the task of its retry.
func (b *relayBatch) after(ctx context.Context, f *firstAttempt) (handover.Job, bool) {
	r := b.r
	log := r.log.With("outbox_id", f.ev.ID, "delivery_id", f.id, "webhook_id", f.msgID, "endpoint", f.name)
	if err := r.hooks.ended(ctx, log, f.o, f.url, f.name, f.id, 0, f.ev.CreatedAt, f.attempt().Error, f.at); err != nil {
		log.ErrorContext(ctx, "endpoint not disabled after 410 Gone; its next delivery tries again", "err", err)
	}
	if f.o.status != domain.DeliveryPending {
		return handover.Job{}, false
	}
	// The retry's task, for its time; an interrupted attempt's at once.
	job := tasks.WebhookJob(f.ev.ID, f.url, 0, nil)
	if f.o.delay > 0 {
		job.ProcessAt = f.o.next(f.at)
	}
	return job, true
}

// queueRetries queues the retries of first attempts that failed, each at
// its time; when Redis does not take them, the monitor queues them once
// they are overdue.
func (b *relayBatch) queueRetries(ctx context.Context, jobs []handover.Job) {
	r := b.r
	if len(jobs) == 0 {
		return
	}
	qctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	if _, err := r.q.Queue(qctx, jobs...); err != nil {
		r.m.Errors.WithLabelValues("queue").Inc()
		r.log.WarnContext(ctx, "webhook retries not queued; the monitor queues them once overdue", "tasks", len(jobs), "err", err)
		return
	}
	r.m.Tasks.WithLabelValues(tasks.TypeWebhookDeliver, "enqueued").Add(float64(len(jobs)))
}

// recordLate records a first attempt that was still on the wire when its
// batch was handed off, once the batch has ended, as a task records its
// first attempt (group commit). A batch that did not commit wrote no row:
// its events are claimed again and attempted again by a later pass, and
// this attempt goes unrecorded, as any attempt whose record fails.
func (b *relayBatch) recordLate(f *firstAttempt) {
	r := b.r
	id := <-f.row
	if id == 0 {
		return
	}
	f.id = id
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	a := f.attempt()
	record := r.hooks.unlessGone(f.ev.ID, r.hooks.recordFirst(f.ev.ID))
	err := record(ctx, id, a, f.o.status, f.o.next(f.at), 0)
	switch {
	case errors.Is(err, errDeliveryGone):
		return // erased while the attempt was on the wire
	case err != nil:
		r.log.WarnContext(ctx, "first attempt not recorded; the delivery is attempted again once its lease is over",
			"outbox_id", f.ev.ID, "delivery_id", id, "err", err)
		return
	}
	if job, ok := b.after(ctx, f); ok {
		b.queueRetries(ctx, []handover.Job{job})
	}
}
