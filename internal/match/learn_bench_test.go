package match

import (
	"fmt"
	"testing"
)

// BenchmarkObserve is one learner update (a counted swipe) after a history
// of 0, 100 and 10,000 observations: the cost does not grow with history.
func BenchmarkObserve(b *testing.B) {
	cat, p := learnCatalog, learnStudent()
	// A model after history swipes, built once and only for the
	// sub-benchmarks that run (10,000 swipes take seconds).
	models := map[int]Model{}
	after := func(history int) Model {
		if m, ok := models[history]; ok {
			return m
		}
		m := NewModel(SeedWeights(p))
		for k := range history {
			d := Like
			if k%3 == 0 {
				d = Dislike
			}
			m, _ = m.Observe(p, cat, SwipeObservation((k*7919)%cat.Len(), d))
		}
		models[history] = m
		return m
	}
	for _, history := range []int{0, 100, 10000} {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) {
			m := after(history)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_, _ = m.Observe(p, cat, SwipeObservation((i*104729)%cat.Len(), Direction(1-2*(i&1))))
				i++
			}
		})
		// The same update without the residual's refit (what the API
		// does): the difference is the refit's cost.
		b.Run(fmt.Sprintf("weights-only/history=%d", history), func(b *testing.B) {
			m := after(history)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_, _ = m.ObserveWeights(p, cat, SwipeObservation((i*104729)%cat.Len(), Direction(1-2*(i&1))))
				i++
			}
		})
	}
}

// BenchmarkPredict is one prediction (like probability and uncertainty).
func BenchmarkPredict(b *testing.B) {
	cat, p := learnCatalog, learnStudent()
	m := NewModel(SeedWeights(p))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = m.Predict(p, cat, i%cat.Len())
		i++
	}
}
