package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/collegematch/matching/internal/store"
	"github.com/collegematch/matching/internal/webhook"
)

// PingEvent is the event type of the test event `webhooks ping` sends.
const PingEvent = "webhook.ping"

// resolveEndpoint finds the endpoint of WEBHOOK_ENDPOINTS_FILE named
// nameOrURL, or with that URL, and returns its URL.
func resolveEndpoint(eps []webhook.Endpoint, nameOrURL string) (string, error) {
	if ep, ok := webhook.Find(eps, nameOrURL); ok {
		return ep.URL, nil
	}
	return "", unknownEndpoint(eps, nameOrURL)
}

func unknownEndpoint(eps []webhook.Endpoint, nameOrURL string) error {
	if len(eps) == 0 {
		return fmt.Errorf("no endpoint %q: WEBHOOK_ENDPOINTS_FILE lists none (is it set?)", webhook.Redact(nameOrURL))
	}
	names := make([]string, len(eps))
	for i, e := range eps {
		names[i] = e.Name
	}
	return fmt.Errorf("no endpoint %q in WEBHOOK_ENDPOINTS_FILE; its endpoints: %s", webhook.Redact(nameOrURL), strings.Join(names, ", "))
}

// endpointName names url for operator output: its name in the file, else
// its URL redacted.
func endpointName(eps []webhook.Endpoint, url string) string {
	if ep, ok := webhook.Find(eps, url); ok {
		return ep.Name
	}
	return webhook.Redact(url)
}

// webhookEndpoints prints every endpoint of the file, and every other
// endpoint the database still holds deliveries for, with its state.
func webhookEndpoints(ctx context.Context, e env, now time.Time) error {
	eps, err := webhook.LoadFile(e.cfg.WebhookEndpointsFile)
	if err != nil {
		return err
	}
	st, closeDB, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer closeDB()
	states, err := st.WebhookEndpointStates(ctx)
	if err != nil {
		return err
	}
	if e.cfg.WebhookEndpointsFile == "" {
		fmt.Fprintln(e.stderr, "WEBHOOK_ENDPOINTS_FILE is not set: endpoints are shown by URL only")
	}
	type row struct {
		name, url string
		st        store.WebhookEndpointState
	}
	var rows []row
	for _, ep := range eps {
		rows = append(rows, row{ep.Name, ep.URL, states[ep.URL]})
		delete(states, ep.URL)
	}
	var others []string
	for url := range states {
		others = append(others, url)
	}
	slices.Sort(others)
	for _, url := range others {
		rows = append(rows, row{webhook.UnconfiguredEndpoint, url, states[url]})
	}
	if len(rows) == 0 {
		fmt.Fprintln(e.stdout, "no webhook endpoints")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tURL\tSTATE\tLAST SUCCESS\tFAILING SINCE\tPENDING\tPARKED/DISABLED")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\n", r.name, webhook.Redact(r.url), endpointState(r.st, now),
			ago(r.st.LastSuccess, now), ago(r.st.FailingSince, now), r.st.Pending, r.st.Failed)
	}
	return tw.Flush()
}

// endpointState is disabled (a 410 Gone; `webhooks enable`), failing (an
// attempt failed since the last success), healthy, or idle (no attempt
// kept).
func endpointState(s store.WebhookEndpointState, now time.Time) string {
	switch {
	case !s.DisabledAt.IsZero():
		return "disabled (" + oneLine(s.Reason, 40) + ", " + ago(s.DisabledAt, now) + ")"
	case !s.FailingSince.IsZero():
		return "failing"
	case !s.LastSuccess.IsZero():
		return "healthy"
	default:
		return "idle"
	}
}

func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return age(max(now.Sub(t), 0)) + " ago"
}

// webhookPing sends a signed test event to one endpoint of the file, as a
// delivery would be sent (every secret's signature, the same client and
// guard), and reports the answer. Nothing is recorded.
func webhookPing(ctx context.Context, e env, nameOrURL string, now time.Time) error {
	eps, err := webhook.LoadFile(e.cfg.WebhookEndpointsFile)
	if err != nil {
		return err
	}
	ep, ok := webhook.Find(eps, nameOrURL)
	if !ok {
		return unknownEndpoint(eps, nameOrURL)
	}
	id := "msg_ping_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	body, err := json.Marshal(map[string]any{"id": id, "event": PingEvent,
		"data": map[string]string{"endpoint": ep.Name, "timestamp": now.UTC().Format("2006-01-02T15:04:05.000Z")}})
	if err != nil {
		return err
	}
	res := webhook.NewSender([]webhook.Endpoint{ep}, webhook.Config{}).Send(ctx, ep.URL, id, body)
	fmt.Fprintf(e.stdout, "ping %s (%s): %s", ep.Name, webhook.Redact(ep.URL), res.Outcome)
	if res.StatusCode != 0 {
		fmt.Fprintf(e.stdout, ", HTTP %d", res.StatusCode)
	}
	fmt.Fprintf(e.stdout, " in %s; webhook-id %s, signed with %d secret(s)\n", res.Latency.Round(time.Millisecond), id, len(ep.Keys))
	if res.Outcome != webhook.Delivered {
		return fmt.Errorf("ping %s not delivered: %v", ep.Name, res.Err)
	}
	return nil
}

// webhookEnable attempts again the deliveries of an endpoint a 410 Gone
// disabled; those it disabled meanwhile are replayed separately.
func webhookEnable(ctx context.Context, e env, nameOrURL string) error {
	eps, err := webhook.LoadFile(e.cfg.WebhookEndpointsFile)
	if err != nil {
		return err
	}
	ep, ok := webhook.Find(eps, nameOrURL)
	if !ok {
		return unknownEndpoint(eps, nameOrURL)
	}
	st, closeDB, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer closeDB()
	was, disabled, err := st.EnableWebhookEndpoint(ctx, ep.URL)
	if err != nil {
		return err
	}
	if !was {
		fmt.Fprintf(e.stdout, "endpoint %s is not disabled\n", ep.Name)
	} else {
		fmt.Fprintf(e.stdout, "endpoint %s enabled: its new events are delivered again\n", ep.Name)
	}
	if disabled > 0 {
		fmt.Fprintf(e.stdout, "%d of its deliveries were disabled with it; send them again with "+
			"`matchctl webhooks replay --endpoint %s --since TIME`\n", disabled, ep.Name)
	}
	return nil
}

// webhookLog prints attempts, newest first.
func webhookLog(ctx context.Context, e env, eps []webhook.Endpoint, f store.WebhookAttemptFilter, limit int, now time.Time) error {
	st, closeDB, err := openStore(ctx, e)
	if err != nil {
		return err
	}
	defer closeDB()
	entries, err := st.WebhookAttemptLog(ctx, f, limit)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		fmt.Fprintln(e.stdout, "no webhook attempts")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tENDPOINT\tEVENT\tWEBHOOK-ID\tDELIVERY\tATTEMPT\tSTATUS\tLATENCY\tERROR")
	for _, a := range entries {
		status := "-"
		if a.StatusCode != 0 {
			status = fmt.Sprint(a.StatusCode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d (%s)\t%d\t%s\t%s\t%s\n", a.At.UTC().Format(time.RFC3339), endpointName(eps, a.Endpoint),
			a.OutboxID, a.WebhookID, a.DeliveryID, a.Status, a.Attempt, status, a.Latency, oneLine(a.Error, 60))
	}
	return tw.Flush()
}
