package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/collegematch/matching/internal/periodic"
)

// Fingerprint identifies a subscriber list by what decides its deliveries:
// each endpoint's URL, events and allow_private, in any order; secrets are
// left out, so the fingerprint can be shared and logged. Processes whose
// fingerprints are equal write and send the same deliveries.
func Fingerprint(endpoints []Endpoint) string {
	lines := make([]string, 0, len(endpoints))
	for _, e := range endpoints {
		events := slices.Sorted(slices.Values(e.Events))
		lines = append(lines, e.URL+"\t"+strings.Join(events, ",")+"\t"+strconv.FormatBool(e.AllowPrivate))
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:8])
}

// Peers is where the processes of a fleet publish their subscriber list's
// fingerprint (cache.ConfigPeers).
type Peers interface {
	// Publish records this process's fingerprint and returns every live
	// process's, this one's included, by member id.
	Publish(ctx context.Context, fingerprint string) (map[string]string, error)
	// Withdraw removes this process's fingerprint.
	Withdraw(ctx context.Context) error
}

// AgreementName names the subscriber list's fingerprints in Redis
// (cache.ConfigPeers).
const AgreementName = "webhook-subscribers"

// AgreementInterval is how often a process publishes its fingerprint and
// compares it with the fleet's; a process silent for three intervals is
// taken as gone.
const AgreementInterval = 30 * time.Second

// Agreement checks that every process reading WEBHOOK_ENDPOINTS_FILE (each
// worker replica, and an API given the file) reads the same subscriber
// list: the outbox relay of whichever worker hands an event over writes its
// deliveries, so two lists would deliver an event to one set of subscribers
// or the other by chance. A difference is logged (at start, and whenever
// the fleet changes from agreeing to not) and exported as
// matching_webhook_config_mismatch = 1.
type Agreement struct {
	log         *slog.Logger
	peers       Peers
	fingerprint string
	endpoints   int
	mismatch    prometheus.Gauge
	state       int // -1 not checked yet, 0 agrees, 1 differs
}

// NewAgreementGauge registers matching_webhook_config_mismatch on reg; it
// stays 0 in a process that reads no subscriber file.
func NewAgreementGauge(reg prometheus.Registerer) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "matching_webhook_config_mismatch",
		Help: "1 when another process of the fleet reads a different webhook subscriber list (URLs, events, allow_private) than this one, else 0.",
	})
	reg.MustRegister(g)
	return g
}

// NewAgreement compares endpoints with the fleet's through peers, setting
// mismatch.
func NewAgreement(log *slog.Logger, peers Peers, endpoints []Endpoint, mismatch prometheus.Gauge) *Agreement {
	return &Agreement{log: log, peers: peers, fingerprint: Fingerprint(endpoints), endpoints: len(endpoints),
		mismatch: mismatch, state: -1}
}

// Check publishes this process's fingerprint and compares it with every
// live process's; it returns the processes that differ (member id ->
// fingerprint). When Redis does not answer, the gauge keeps its value.
func (a *Agreement) Check(ctx context.Context) (map[string]string, error) {
	all, err := a.peers.Publish(ctx, a.fingerprint)
	if err != nil {
		return nil, err
	}
	differ := map[string]string{}
	for member, fp := range all {
		if fp != a.fingerprint {
			differ[member] = fp
		}
	}
	state := 0
	if len(differ) > 0 {
		state = 1
	}
	a.mismatch.Set(float64(state))
	if state != a.state {
		if state == 1 {
			a.log.ErrorContext(ctx, "the webhook subscriber list differs across the fleet: processes that relay events "+
				"deliver them to different subscribers; give every worker (and any API given it) the same WEBHOOK_ENDPOINTS_FILE",
				"fingerprint", a.fingerprint, "endpoints", a.endpoints, "differing", differ,
				"processes", slices.Sorted(maps.Keys(all)))
		} else {
			a.log.InfoContext(ctx, "the webhook subscriber list agrees across the fleet",
				"fingerprint", a.fingerprint, "endpoints", a.endpoints, "processes", len(all))
		}
		a.state = state
	}
	return differ, nil
}

// Run checks now and then every interval until ctx ends, then withdraws
// this process's fingerprint. Every process runs it (no lease).
func (a *Agreement) Run(ctx context.Context, interval time.Duration) {
	periodic.New(periodic.Config{Name: "webhook subscriber agreement", Interval: interval, Log: a.log}).
		Run(ctx, func(ctx context.Context) error {
			_, err := a.Check(ctx)
			return err
		})
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	_ = a.peers.Withdraw(wctx)
	cancel()
}
