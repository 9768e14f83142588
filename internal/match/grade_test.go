package match

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGrade(t *testing.T) {
	tests := []struct {
		score float64
		want  string
	}{
		{1.0, "A+"}, {0.95, "A+"}, {0.90, "A+"},
		// Grades come from round(score*100): 0.895 shows as 90, so A+.
		{0.8999, "A+"}, {0.895, "A+"}, {0.8949, "A"},
		{0.89, "A"}, {0.85, "A"}, {0.8449, "A-"},
		{0.84, "A-"}, {0.80, "A-"}, {0.7949, "B+"},
		{0.79, "B+"}, {0.75, "B+"}, {0.7449, "B"},
		{0.74, "B"}, {0.70, "B"}, {0.6949, "B-"},
		{0.69, "B-"}, {0.65, "B-"}, {0.6449, "C+"},
		{0.64, "C+"}, {0.60, "C+"}, {0.5949, "C"},
		{0.59, "C"}, {0.55, "C"}, {0.545, "C"}, {0.5449, "C-"}, {0.5499, "C"},
		{0.54, "C-"}, {0.50, "C-"}, {0.4949, "D"},
		{0.49, "D"}, {0.40, "D"}, {0.395, "D"}, {0.3949, "F"}, {0.3999, "D"},
		{0.39, "F"}, {0.01, "F"}, {0, "F"},
		// Out of range and NaN are clamped.
		{1.7, "A+"}, {-0.2, "F"}, {math.NaN(), "F"}, {math.Inf(1), "A+"}, {math.Inf(-1), "F"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Grade(tt.score), "Grade(%v)", tt.score)
	}
}

func TestPercent(t *testing.T) {
	tests := []struct {
		score float64
		want  int
	}{
		{0, 0}, {0.004, 0}, {0.005, 1}, {0.5449, 54}, {0.545, 55}, {0.8999, 90}, {0.875, 88}, {1, 100},
		{1.2, 100}, {-1, 0}, {math.NaN(), 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Percent(tt.score), "Percent(%v)", tt.score)
	}
}

// The grade is always the one the compact 0-100 score falls in.
func TestGradeAgreesWithPercent(t *testing.T) {
	letter := func(p int) string {
		for _, row := range []struct {
			min   int
			grade string
		}{{90, "A+"}, {85, "A"}, {80, "A-"}, {75, "B+"}, {70, "B"}, {65, "B-"}, {60, "C+"}, {55, "C"}, {50, "C-"}, {40, "D"}} {
			if p >= row.min {
				return row.grade
			}
		}
		return "F"
	}
	for i := 0; i <= 100000; i++ {
		s := float64(i) / 100000
		assert.Equal(t, letter(Percent(s)), Grade(s), "score %v", s)
	}
}
