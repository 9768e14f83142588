package loadtest

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// histogram is a Prometheus histogram read from the text format: the
// cumulative count of each bucket by upper bound.
type histogram struct {
	bounds []float64
	counts []float64 // cumulative
	count  float64
}

// eachMetricLine calls f with every line of every operations port's
// metrics (the Prometheus text format); a port that does not answer within
// 3 s is left out.
func (r *runner) eachMetricLine(ctx context.Context, f func(line string)) {
	for _, u := range r.c.OpsURLs {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+"/metrics", nil)
		if err != nil {
			cancel()
			continue
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			f(sc.Text())
		}
		resp.Body.Close()
		cancel()
	}
}

// histogram sums the named histogram over every operations port.
func (r *runner) histogram(ctx context.Context, name string) histogram {
	byBound := map[float64]float64{}
	var h histogram
	r.eachMetricLine(ctx, func(line string) {
		switch {
		case strings.HasPrefix(line, name+"_bucket{"):
			i := strings.Index(line, `le="`)
			if i < 0 {
				return
			}
			j := strings.Index(line[i+4:], `"`)
			if j < 0 {
				return
			}
			le := line[i+4 : i+4+j]
			b := math.Inf(1)
			if le != "+Inf" {
				b, _ = strconv.ParseFloat(le, 64)
			}
			v, _ := strconv.ParseFloat(strings.TrimSpace(line[strings.LastIndexByte(line, ' ')+1:]), 64)
			byBound[b] += v
		case strings.HasPrefix(line, name+"_count "):
			v, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, name+"_count ")), 64)
			h.count += v
		}
	})
	for b := range byBound {
		h.bounds = append(h.bounds, b)
	}
	slices.Sort(h.bounds)
	for _, b := range h.bounds {
		h.counts = append(h.counts, byBound[b])
	}
	return h
}

// counters sums a counter with one label over every operations port, by
// the label's value (none for a build that does not export it).
func (r *runner) counters(ctx context.Context, name string) map[string]float64 {
	out := map[string]float64{}
	r.eachMetricLine(ctx, func(line string) {
		if label, v, ok := labelledSample(line, name); ok {
			out[label] += v
		}
	})
	return out
}

// labelledSample reads a sample of name with one label from a line of the
// Prometheus text format: `name{label="value"} 12`.
func labelledSample(line, name string) (label string, v float64, ok bool) {
	rest, ok := strings.CutPrefix(line, name+"{")
	if !ok {
		return "", 0, false
	}
	i := strings.Index(rest, `="`)
	j := strings.Index(rest, `"} `)
	if i < 0 || j < i+2 {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(rest[j+3:]), 64)
	return rest[i+2 : j], v, err == nil
}

// patchShares is what the writes' patches of the stored feed did between
// before and after (matching_feed_patches_total), as shares of the
// writes, or a note when the build does not count them.
func patchShares(before, after map[string]float64) string {
	total := 0.0
	for k, v := range after {
		total += v - before[k]
	}
	if total <= 0 {
		return "not counted by this build"
	}
	var parts []string
	for _, k := range []string{"patched", "dropped", "tombstone", "stale", "none"} {
		parts = append(parts, fmt.Sprintf("%s %.1f %%", k, 100*(after[k]-before[k])/total))
	}
	return fmt.Sprintf("%s (%.0f writes)", strings.Join(parts, ", "), total)
}

// sub is what was observed between before and h.
func (h histogram) sub(before histogram) histogram {
	out := histogram{bounds: h.bounds, count: h.count - before.count}
	for i, b := range h.bounds {
		c := h.counts[i]
		if j := slices.Index(before.bounds, b); j >= 0 {
			c -= before.counts[j]
		}
		out.counts = append(out.counts, c)
	}
	return out
}

// quantile interpolates linearly within the bucket holding the q-quantile,
// as Prometheus' histogram_quantile does.
func (h histogram) quantile(q float64) float64 {
	if h.count <= 0 || len(h.bounds) == 0 {
		return 0
	}
	rank := q * h.count
	lower, prev := 0.0, 0.0
	for i, b := range h.bounds {
		c := h.counts[i]
		if c >= rank {
			if math.IsInf(b, 1) {
				return lower
			}
			if c == prev {
				return b
			}
			return lower + (b-lower)*(rank-prev)/(c-prev)
		}
		lower, prev = b, c
	}
	return lower
}
