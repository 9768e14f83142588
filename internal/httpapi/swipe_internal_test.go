package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/domain"
)

// The answer of POST /swipe is written byte for byte as encoding/json
// writes it, whatever the count, phase, flags and texts.
func TestSwipeAnswerEncodesAsEncodingJSON(t *testing.T) {
	var results []command.SwipeResult
	for n := range 40 {
		r := command.Answer(domain.RecordedSwipe{SwipeCount: n})
		r.UpdatedWeights, r.TriggerFeedback = n%2 == 0, n%3 == 0
		results = append(results, r)
	}
	odd := command.SwipeResult{SwipeCount: 7, Phase: `a "quoted" <phase> & more`, UIMessage: "é\u2028\x01",
		Progress: 1e-7, FeedbackOptions: []string{"x<y", ""}}
	results = append(results, odd, command.SwipeResult{Progress: 3e21}, command.SwipeResult{Progress: 0.12345678})
	for _, r := range results {
		a := swipeAnswer(r)
		want, err := json.Marshal(a)
		assert.NoError(t, err)
		assert.Equal(t, string(want)+"\n", string(a.appendJSON(nil)))
	}
	a := swipeAnswer(results[0])
	a.FeedbackOptions = nil
	want, _ := json.Marshal(a)
	assert.Equal(t, string(want)+"\n", string(a.appendJSON(nil)), "no options: null, as encoding/json writes it")
}
