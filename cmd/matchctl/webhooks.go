package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/handover"
	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/tasks"
	"github.com/collegematch/matching/internal/webhook"
)

func init() {
	register("webhooks", command{
		usage: "webhooks endpoints | ping NAME-or-URL | log [NAME-or-URL] [--event ID] [--student ID] [--limit N] | " +
			"enable NAME-or-URL | failed [--limit N] | replay ID... | replay --since TIME [--until TIME] [--endpoint NAME-or-URL]",
		help: "the subscribers of WEBHOOK_ENDPOINTS_FILE: each endpoint's state (endpoints), a signed test event " +
			"(ping), the attempts newest first by endpoint, event (its id or webhook-id) or student (log), " +
			"an endpoint disabled by 410 Gone attempted again (enable); parked and disabled deliveries listed (failed) " +
			"or sent again with the same webhook-id (replay, which also re-enables their endpoint); TIME is RFC 3339, " +
			"a date or a duration ago such as 24h",
		run: runWebhooks,
	})
}

// maxReplay bounds one replay by time range.
const maxReplay = 10000

func runWebhooks(ctx context.Context, e env, args []string) error {
	fs := e.flagSet("webhooks")
	limitFlag := fs.Int("limit", 100, "failed, log: list at most this many deliveries or attempts")
	sinceFlag := fs.String("since", "", "replay: every parked or disabled delivery created since `TIME`")
	untilFlag := fs.String("until", "", "replay: ... and before `TIME` (default now)")
	endpointFlag := fs.String("endpoint", "", "replay --since: only the deliveries to `ENDPOINT` (its name or URL)")
	eventFlag := fs.String("event", "", "log: the attempts of this event (its `ID`, or a webhook-id msg_...)")
	studentFlag := fs.String("student", "", "log: the attempts of this student's events (`ID`)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("missing subcommand: endpoints, ping, log, enable, failed or replay")
	}
	sub, ids := pos[0], pos[1:]
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, of := range map[string][]string{"limit": {"failed", "log"}, "since": {"replay"}, "until": {"replay"},
		"endpoint": {"replay"}, "event": {"log"}, "student": {"log"}} {
		if set[name] && !slices.Contains(of, sub) {
			return usageErr("--%s is a flag of %s only", name, strings.Join(of, " and "))
		}
	}
	now := time.Now()
	switch sub {
	case "endpoints":
		if len(ids) > 0 {
			return usageErr("endpoints takes no arguments")
		}
		return webhookEndpoints(ctx, e, now)
	case "ping":
		if len(ids) != 1 {
			return usageErr("ping needs one endpoint: its name or URL")
		}
		return webhookPing(ctx, e, ids[0], now)
	case "enable":
		if len(ids) != 1 {
			return usageErr("enable needs one endpoint: its name or URL")
		}
		return webhookEnable(ctx, e, ids[0])
	case "log":
		if len(ids) > 1 {
			return usageErr("log takes at most one endpoint")
		}
		if *limitFlag <= 0 {
			return usageErr("--limit %d is not a positive number", *limitFlag)
		}
		var f store.WebhookAttemptFilter
		if ev := *eventFlag; ev != "" {
			if strings.HasPrefix(ev, "msg_") {
				f.WebhookID = ev
			} else if n, err := strconv.ParseInt(ev, 10, 64); err == nil && n > 0 {
				f.OutboxID = n
			} else {
				return usageErr("--event %q is neither an event id (a positive number) nor a webhook-id (msg_...)", ev)
			}
		}
		if st := *studentFlag; st != "" {
			if _, err := uuid.Parse(st); err != nil {
				return usageErr("--student %q is not a student id (a UUID)", st)
			}
			f.StudentID = strings.ToLower(st)
		}
		eps, err := webhook.LoadFile(e.cfg.WebhookEndpointsFile)
		if err != nil {
			return err
		}
		if len(ids) == 1 {
			if f.Endpoint, err = resolveEndpoint(eps, ids[0]); err != nil {
				return err
			}
		}
		return webhookLog(ctx, e, eps, f, *limitFlag, now)
	case "failed":
		if len(ids) > 0 {
			return usageErr("failed takes no arguments")
		}
		limit := *limitFlag
		if limit <= 0 {
			return usageErr("--limit %d is not a positive number", limit)
		}
		st, closeDB, err := openStore(ctx, e)
		if err != nil {
			return err
		}
		defer closeDB()
		ds, err := st.FailedWebhookDeliveries(ctx, limit)
		if err != nil {
			return err
		}
		printDeliveries(e.stdout, ds, now)
		return nil
	case "replay":
		since, hasSince := *sinceFlag, set["since"]
		until, hasUntil := *untilFlag, set["until"]
		switch {
		case hasSince && len(ids) > 0:
			return usageErr("give delivery IDs or --since, not both")
		case !hasSince && hasUntil:
			return usageErr("--until needs --since")
		case !hasSince && len(ids) == 0:
			return usageErr("replay needs delivery IDs or --since TIME")
		case set["endpoint"] && !hasSince:
			return usageErr("--endpoint needs --since")
		}
		var endpoint string
		if set["endpoint"] {
			eps, err := webhook.LoadFile(e.cfg.WebhookEndpointsFile)
			if err != nil {
				return err
			}
			if endpoint, err = resolveEndpoint(eps, *endpointFlag); err != nil {
				return err
			}
		}
		var (
			from, to time.Time
			nums     []int64
		)
		if hasSince {
			if from, err = parseTime(since, now); err != nil {
				return usageErr("--since: %v", err)
			}
			if hasUntil {
				if to, err = parseTime(until, now); err != nil {
					return usageErr("--until: %v", err)
				}
				if !to.After(from) {
					return usageErr("--until must be after --since")
				}
			}
		}
		for _, id := range ids {
			n, err := strconv.ParseInt(id, 10, 64)
			if err != nil || n <= 0 {
				return usageErr("delivery ID %q is not a positive number", id)
			}
			nums = append(nums, n)
		}
		st, closeDB, err := openStore(ctx, e)
		if err != nil {
			return err
		}
		defer closeDB()
		rdb, _, err := cache.Open(ctx, e.cfg.RedisURL)
		if err != nil {
			return err
		}
		defer rdb.Close()
		q := handover.NewClient(rdb, handover.NewQueuer())

		var ds []store.WebhookDelivery
		if hasSince {
			if ds, err = st.ReplayWebhookDeliveries(ctx, from, to, endpoint, maxReplay); err != nil {
				return err
			}
		} else {
			for _, n := range nums {
				d, err := st.ReplayWebhookDelivery(ctx, n)
				var de *domain.Error
				if errors.As(err, &de) && de.Kind == domain.KindNotFound {
					return fmt.Errorf("webhook delivery %d not found", n)
				}
				if err != nil {
					return err
				}
				ds = append(ds, d)
			}
		}
		return enqueueReplays(ctx, e, q, ds)
	default:
		return usageErr("unknown subcommand %q: use endpoints, ping, log, enable, failed or replay", sub)
	}
}

// enqueueReplays queues each replayed delivery under a task id of its own
// (the replay count), with the same webhook-id. A delivery whose task
// cannot be queued now stays pending and the worker's monitor queues it
// within minutes.
func enqueueReplays(ctx context.Context, e env, q tasks.Queue, ds []store.WebhookDelivery) error {
	var failed int
	for _, d := range ds {
		if _, err := q.Queue(ctx, tasks.WebhookJob(d.OutboxID, d.Endpoint, d.Replays, nil)); err != nil {
			failed++
			fmt.Fprintf(e.stderr, "delivery %d: not queued now (%v); it is pending and the worker queues it again within minutes\n", d.ID, err)
			continue
		}
		fmt.Fprintf(e.stdout, "replaying delivery %d (%s event %d to %s, webhook-id %s)\n", d.ID, d.Event, d.OutboxID,
			webhook.Redact(d.Endpoint), d.WebhookID)
	}
	fmt.Fprintf(e.stdout, "%d deliveries replayed\n", len(ds)-failed)
	if failed > 0 {
		return fmt.Errorf("%d of %d replays not queued yet (Redis unreachable?)", failed, len(ds))
	}
	return nil
}

func printDeliveries(w io.Writer, ds []store.WebhookDelivery, now time.Time) {
	if len(ds) == 0 {
		fmt.Fprintln(w, "no parked or disabled webhook deliveries")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tENDPOINT\tEVENT\tWEBHOOK-ID\tATTEMPTS\tAGE\tLAST ERROR")
	for _, d := range ds {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.ID, d.Status, webhook.Redact(d.Endpoint), d.Event, d.WebhookID,
			d.Attempts, age(now.Sub(d.EventAt)), oneLine(d.LastError, 80))
	}
	_ = tw.Flush()
}

func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n-3] + "..."
	}
	if s == "" {
		s = "-"
	}
	return s
}

// parseTime reads RFC 3339, a date (UTC midnight), or a duration ago.
func parseTime(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not RFC 3339 (2026-05-01T12:00:00Z), a date (2026-05-01) or a duration ago (24h)", v)
}

func openStore(ctx context.Context, e env) (*store.Store, func(), error) {
	pool, err := store.Open(ctx, e.cfg.DatabaseURL)
	if err != nil {
		return nil, nil, err
	}
	return store.New(pool), pool.Close, nil
}
