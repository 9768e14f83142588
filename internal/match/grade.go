package match

import "math"

// Percent is a match score on the 0-100 scale of the compact endpoints:
// round(score*100), halves rounded up, clamped to 0-100; NaN gives 0. The
// compact `s` and the grade are both derived from it, so they always agree.
func Percent(score float64) int {
	if !(score > 0) {
		return 0
	}
	return int(math.Round(min(score, 1) * 100))
}

// Grade is the letter grade of a match score in [0,1]. It reads Percent(score)
// against the spec's table (A+ 90-100, A 85-89, A- 80-84, B+ 75-79, B 70-74,
// B- 65-69, C+ 60-64, C 55-59) and, below C, C- 50-54, D 40-49, F below 40.
// Because the percent is rounded, 0.895 is 90 and an A+, and 0.8949 is 89
// and an A: the grade is always the one the 0-100 score shown next to it
// falls in.
func Grade(score float64) string {
	switch p := Percent(score); {
	case p >= 90:
		return "A+"
	case p >= 85:
		return "A"
	case p >= 80:
		return "A-"
	case p >= 75:
		return "B+"
	case p >= 70:
		return "B"
	case p >= 65:
		return "B-"
	case p >= 60:
		return "C+"
	case p >= 55:
		return "C"
	case p >= 50:
		return "C-"
	case p >= 40:
		return "D"
	}
	return "F"
}
