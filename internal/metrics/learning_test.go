package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/metrics"
)

// Counted values keep their labels; anything outside a fixed set is
// counted as "other", so no caller can grow the label space.
func TestLearningLabelsStayInTheirSets(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.NewLearning(reg)
	m.Swipe("right", "refinement", "probe")
	m.Swipe("up", "refinement", "ranked")
	m.Swipe("left", "someday", "sideways")
	m.Feedback("too_expensive")
	m.Feedback("rude")

	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]map[string]float64{}
	for _, f := range families {
		got[f.GetName()] = map[string]float64{}
		for _, s := range f.GetMetric() {
			key := ""
			for _, l := range s.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + " "
			}
			got[f.GetName()][key] = s.GetCounter().GetValue()
		}
	}
	swipes, feedback := got["matching_swipes_total"], got["matching_feedback_total"]
	assert.Len(t, swipes, 2*3*3+2, "the fixed series and two with other")
	assert.Equal(t, 1.0, swipes["direction=right phase=refinement slot=probe "])
	assert.Equal(t, 1.0, swipes["direction=other phase=refinement slot=ranked "])
	assert.Equal(t, 1.0, swipes["direction=left phase=other slot=other "])
	assert.Equal(t, 0.0, swipes["direction=left phase=stable slot=exploration "])
	assert.Len(t, feedback, 5+1)
	assert.Equal(t, 1.0, feedback["reason=too_expensive "])
	assert.Equal(t, 1.0, feedback["reason=other "])
	assert.Equal(t, 0.0, feedback["reason=perfect_match "])
}
