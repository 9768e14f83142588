package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/hibiken/asynq"

	"github.com/collegematch/matching/internal/cache"
	"github.com/collegematch/matching/internal/queueconsole"
	"github.com/collegematch/matching/internal/tasks"
)

func init() {
	register("queues", command{
		usage: "queues [--json]",
		help: "print each queue's pending, active, scheduled, retry and archived tasks, as asynq counts them and " +
			"the worker's queue console (/queues on its ops port) shows them, and the outbox rows not yet handed to asynq",
		run: runQueues,
	})
}

func runQueues(ctx context.Context, e env, args []string) error {
	fs := e.flagSet("queues")
	asJSON := fs.Bool("json", false, "print the counts as JSON, as the console's /queues?format=json does")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr("queues takes no arguments")
	}
	rdb, _, err := cache.Open(ctx, e.cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	counts, err := queueconsole.Read(asynq.NewInspectorFromRedisClient(rdb), tasks.Queues())
	if err != nil {
		return fmt.Errorf("read the queues: %w", err)
	}
	st, closeDB, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer closeDB()
	outside, err := queueconsole.Outsides(queueconsole.OutboxBacklog(st.OutboxBacklog),
		queueconsole.LearnMarks(func(ctx context.Context) (int, error) { return tasks.LearnPending(ctx, rdb) }))(ctx)
	if err != nil {
		return fmt.Errorf("read the work outside asynq: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"queues": counts, "outside": outside})
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tPENDING\tACTIVE\tSCHEDULED\tRETRY\tARCHIVED\tLATENCY\tPAUSED")
	for _, c := range counts {
		paused := ""
		if c.Paused {
			paused = "paused"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", c.Queue, c.Pending, c.Active, c.Scheduled, c.Retry, c.Archived,
			c.Latency.Round(time.Millisecond), paused)
	}
	_ = tw.Flush()
	fmt.Fprintln(e.stdout, "\nwaiting outside asynq:")
	tw = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, o := range outside {
		oldest := ""
		if !o.Oldest.IsZero() {
			oldest = "oldest " + age(time.Since(o.Oldest))
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", o.Name, o.Count, oldest)
	}
	return tw.Flush()
}
