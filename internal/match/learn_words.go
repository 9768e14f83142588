package match

import (
	"math"
	"slices"
	"strconv"
)

// What the residual learned, in words a student understands.
//
// The residual's features come in groups that say one thing each (the
// price against the budget, the distance, the size, the selectivity
// against the student's scores, the setting, outcomes, value, programs,
// aid). A group's part of the residual is a curve over what it reads: the
// price, the miles, the enrolment. LearnedPreferences reads each curve
// back as a preference ("schools under about $20,000 a year", "schools of
// about 5,000 students") when it moves a school's score by at least
// learnedMin between the schools it favours and those it does not; the
// reasons of a school name the preference that lifts that school most.

// learnedMin is the least a group's part of the residual must move a
// score (across its range) to be named.
const learnedMin = 0.03

// Learned is one preference the model learned beyond the eight weights.
type Learned struct {
	// Key names the group: budget, distance, size, selectivity, setting,
	// outcomes, value, program, aid, scores.
	Key string `json:"key"`
	// Phrase names the schools preferred: "schools under about $20,000 a
	// year". Text is the preference as a sentence about the student.
	Phrase string `json:"phrase"`
	Text   string `json:"text"`
	// Strength is how much it moves a score, from the schools it favours
	// least to those it favours most, in match score units.
	Strength float64 `json:"strength"`

	// mid is the middle of the group's part across its range: a school
	// above it is one the preference favours.
	mid float64
}

// residualGroup is a group of residual features.
type residualGroup struct {
	key      string
	features []int
}

var residualGroups = []residualGroup{
	{"budget", []int{rInBudget, rBelowBudget}},
	{"distance", []int{rNear75, rNear300, rNear1200}},
	{"size", []int{rSize, rSizeSq}},
	{"selectivity", []int{rReach, rReachSq}},
	{"setting", []int{rCity, rSuburb, rTown, rRural}},
	{"outcomes", []int{rOutcomes}},
	{"value", []int{rValue}},
	{"program", []int{rProgram}},
	{"aid", []int{rAid}},
	{"scores", []int{rSAT}},
}

// groupPart is the part of the residual of group g for features phi.
func (m *Model) groupPart(g residualGroup, phi *[nResidual]float64) float64 {
	r := 0.0
	for _, j := range g.features {
		r += m.rmean[j] * phi[j]
	}
	return r
}

// LearnedPreferences lists what the model learned beyond the eight
// weights for the student p, strongest first; empty while the residual
// moves no score by learnedMin.
func (m Model) LearnedPreferences(p Profile, cat *Catalog) []Learned {
	m = m.orDefault()
	if m.nhist == 0 {
		return nil
	}
	sc := newScorer(p, m.Weights(), cat)
	var out []Learned
	for _, g := range residualGroups {
		if l, ok := m.learned(&sc, g); ok {
			out = append(out, l)
		}
	}
	slices.SortStableFunc(out, func(a, b Learned) int {
		switch {
		case a.Strength > b.Strength:
			return -1
		case a.Strength < b.Strength:
			return 1
		}
		return 0
	})
	return out
}

// curvePoint is one point of a group's curve: the value it reads and the
// group's part of the residual there.
type curvePoint struct{ x, r float64 }

// learned reads group g's curve back as a preference.
func (m *Model) learned(sc *scorer, g residualGroup) (Learned, bool) {
	strength := sc.strength()
	part := func(in residualIn) float64 {
		phi := residualFeatures(&in, strength)
		return m.groupPart(g, &phi)
	}
	neutral := residualIn{afford: Neutral, aid: Neutral, value: Neutral, sat: 0.75, prog: Neutral, outcomes: Neutral,
		score: 0.5, dist: -1, level: -1, size: -1, setting: -1}
	var curve []curvePoint
	sweep := func(n int, lo, hi float64, at func(x float64) residualIn) {
		curve = curve[:0]
		for k := 0; k <= n; k++ {
			x := lo + (hi-lo)*float64(k)/float64(n)
			curve = append(curve, curvePoint{x, part(at(x))})
		}
	}
	l := Learned{Key: g.key}
	switch g.key {
	case "budget":
		// x: the price as a share of the budget.
		sweep(40, 0, 2, func(q float64) residualIn {
			in := neutral
			in.afford = affordability(q*sc.budget, sc.budget)
			if !affordKnown(in.afford) {
				in.afford = math.Nextafter(Neutral, 1)
			}
			return in
		})
		lo, hi, down, at := crossing(curve)
		l.Strength, l.mid = hi-lo, (lo+hi)/2
		if down {
			l.Phrase = "schools under about " + roundMoney(at*sc.budget) + " a year"
		} else {
			l.Phrase = "schools that cost more than about " + roundMoney(at*sc.budget) + " a year"
		}
	case "distance":
		// x: miles, on a square-root scale.
		sweep(40, 0, 1, func(u float64) residualIn {
			in := neutral
			in.dist = u * u * maxTableMiles
			return in
		})
		lo, hi, down, at := crossing(curve)
		l.Strength, l.mid = hi-lo, (lo+hi)/2
		miles := roundMiles(at * at * maxTableMiles)
		if down {
			l.Phrase = "schools within about " + miles + " miles of home"
		} else {
			l.Phrase = "schools more than about " + miles + " miles from home"
		}
	case "size":
		// x: the size scale.
		sweep(30, 0, 1, func(s float64) residualIn {
			in := neutral
			in.size = s
			return in
		})
		lo, hi, _, _ := crossing(curve)
		l.Strength, l.mid = hi-lo, (lo+hi)/2
		switch peak := peakOf(curve); {
		case peak == len(curve)-1:
			_, _, _, at := crossing(curve)
			l.Phrase = "schools of more than about " + roundStudents(sizeAt(at)) + " students"
		case peak == 0:
			_, _, _, at := crossing(curve)
			l.Phrase = "schools of fewer than about " + roundStudents(sizeAt(at)) + " students"
		default:
			l.Phrase = "schools of about " + roundStudents(sizeAt(curve[peak].x)) + " students"
		}
	case "selectivity":
		// x: the school's selectivity level minus the student's strength.
		sweep(20, -0.5, 0.5, func(d float64) residualIn {
			in := neutral
			in.level = clamp01(strength + d)
			return in
		})
		lo, hi, _, _ := crossing(curve)
		l.Strength, l.mid = hi-lo, (lo+hi)/2
		switch d := curve[peakOf(curve)].x; {
		case d > 0.1:
			l.Phrase = "schools more selective than your scores suggest"
		case d < -0.1:
			l.Phrase = "less selective schools, where your scores stand out"
		default:
			l.Phrase = "schools whose selectivity matches your scores"
		}
	case "setting":
		var parts [4]float64
		for s := range parts {
			in := neutral
			in.setting = int8(s)
			parts[s] = part(in)
		}
		best, worst := 0, 0
		for s := range parts {
			if parts[s] > parts[best] {
				best = s
			}
			if parts[s] < parts[worst] {
				worst = s
			}
		}
		l.Strength, l.mid = parts[best]-parts[worst], (parts[best]+parts[worst])/2
		l.Phrase = [4]string{"schools in a city", "schools in the suburbs", "schools in a town", "rural schools"}[best]
	default:
		// One feature, read as "more of it" when its coefficient is
		// positive; a negative one is not named (a student does not
		// prefer lower graduation rates, they care less about them).
		j := g.features[0]
		l.Strength = 2 * m.rmean[j]
		l.Phrase = map[string]string{
			"outcomes": "schools with high graduation rates and earnings",
			"value":    "schools whose graduates earn well for what they pay",
			"program":  "schools strong in your intended majors",
			"aid":      "schools where more students get grants",
			"scores":   "schools where your test scores fit in",
		}[g.key]
	}
	if !(l.Strength >= learnedMin) {
		return Learned{}, false
	}
	l.Text = "prefers " + l.Phrase
	return l, true
}

// crossing reads a curve: its least and greatest values, whether it falls
// overall (its first point above its last), and where it first crosses
// the middle of its range from the side of its first point.
func crossing(curve []curvePoint) (lo, hi float64, down bool, at float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, c := range curve {
		lo, hi = min(lo, c.r), max(hi, c.r)
	}
	first, last := curve[0], curve[len(curve)-1]
	down = first.r > last.r
	mid := (lo + hi) / 2
	at = last.x
	for k := 1; k < len(curve); k++ {
		a, b := curve[k-1], curve[k]
		if (down && a.r >= mid && b.r < mid) || (!down && a.r <= mid && b.r > mid) {
			f := (mid - a.r) / (b.r - a.r)
			at = a.x + f*(b.x-a.x)
			break
		}
	}
	return lo, hi, down, at
}

// peakOf is the index of the curve's highest point, the first of equal
// ones.
func peakOf(curve []curvePoint) int {
	peak := 0
	for k, c := range curve {
		if c.r > curve[peak].r {
			peak = k
		}
	}
	return peak
}

// sizeAt is the enrolment at a point of the size scale.
func sizeAt(s float64) float64 { return sizeScaleMin * math.Pow(sizeScaleMax/sizeScaleMin, s) }

// roundMoney writes a yearly price rounded to $1,000.
func roundMoney(v float64) string { return "$" + commas(int(math.Round(max(0, v)/1000))*1000) }

// roundMiles writes a distance rounded to 10 miles under 200, else 50.
func roundMiles(v float64) string {
	step := 50.0
	if v < 200 {
		step = 10
	}
	return strconv.Itoa(int(max(step, math.Round(v/step)*step)))
}

// roundStudents writes an enrolment to two significant digits.
func roundStudents(n float64) string {
	p := math.Pow(10, math.Floor(math.Log10(max(n, 10)))-1)
	return commas(int(math.Round(n/p) * p))
}

// knows reports whether the school's data says what group key reads: a
// preference is never named for a school whose price, distance, size,
// selectivity or setting is unknown.
func (in *residualIn) knows(key string) bool {
	switch key {
	case "budget":
		return affordKnown(in.afford)
	case "distance":
		return in.dist >= 0
	case "size":
		return in.size >= 0
	case "selectivity":
		return in.level >= 0
	case "setting":
		return in.setting >= 0
	}
	return true
}

// learnedReason is the reason line for a school whose residual input is
// in: the learned preference that favours it most, among those it is on
// the favoured side of ("You tend to like schools under about $20,000 a
// year"); "" when there is none.
func (m *Model) learnedReason(prefs []Learned, in *residualIn, strength float64) string {
	if len(prefs) == 0 {
		return ""
	}
	phi := residualFeatures(in, strength)
	best, bestLift := "", 0.0
	for _, l := range prefs {
		for _, g := range residualGroups {
			if g.key != l.Key || !in.knows(g.key) {
				continue
			}
			if lift := m.groupPart(g, &phi) - l.mid; lift > bestLift && lift >= learnedMin/2 {
				best, bestLift = l.Phrase, lift
			}
		}
	}
	if best == "" {
		return ""
	}
	return "You tend to like " + best
}
