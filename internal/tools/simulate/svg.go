package simulate

import (
	"fmt"
	"math"
	"strings"
)

// series is one line of a plot.
type series struct {
	name  string
	color string
	dash  string // stroke-dasharray, "" for solid
	width float64
	ys    []float64 // by swipe count; NaN points are skipped
}

// plotStyles are how each policy is drawn.
var plotStyles = map[Policy]struct {
	color, dash string
	width       float64
}{
	Learner:        {"#c0392b", "", 3},
	LearnerRanking: {"#c0392b", "7 4", 2},
	OracleServed:   {"#2c3e50", "", 2},
	Oracle:         {"#2c3e50", "7 4", 2},
	Popularity:     {"#2471a3", "", 2},
	Random:         {"#7f8c8d", "2 4", 2},
	LearnerUniform: {"#e67e22", "", 2},
}

// likeWindow is the width of the moving average the like-rate curves are
// smoothed with (a swipe is one Bernoulli outcome per student).
const likeWindow = 5

// SVG draws the learning curves: NDCG@20 and like rate against the number
// of swipes for every policy run, with the phase boundaries marked. It is
// a self-contained SVG document.
func (r Result) SVG() []byte {
	const (
		width  = 960
		panelH = 300
		top    = 100
		gap    = 90
		left   = 70
		plotW  = 620
	)
	T := r.Config.Swipes
	var ndcg, like []series
	for _, p := range tablePolicies {
		if !r.Ran[p] {
			continue
		}
		st := plotStyles[p]
		ndcg = append(ndcg, series{p.String(), st.color, st.dash, st.width, r.NDCG[p]})
		if r.Like[p] != nil {
			like = append(like, series{p.String(), st.color, st.dash, st.width, smooth(r.Like[p], likeWindow)})
		}
	}
	model := []series{
		{"learned model", plotStyles[Learner].color, "", 3, r.Model[0]},
		{"hidden weights (oracle)", plotStyles[Oracle].color, "7 4", 2, r.Model[1]},
	}
	height := top + 3*panelH + 2*gap + 60
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="30" font-size="20" font-weight="bold">Learning curves: %d simulated students, %d schools</text>`+"\n",
		left, r.Config.Students, r.Config.Schools)
	fmt.Fprintf(&b, `<text x="%d" y="52" font-size="13" fill="#555">matchctl simulate --students %d --swipes %d --schools %d --seed %d; oracle: the match score with the student's hidden weights;</text>`+"\n",
		left, r.Config.Students, T, r.Config.Schools, r.Config.Seed)
	fmt.Fprintf(&b, `<text x="%d" y="68" font-size="13" fill="#555">served: through the feed rules (probes, exploration, geographic mix), pages of %d swiped in order.</text>`+"\n",
		left, r.Config.PageSize)
	panel(&b, left, top, plotW, panelH, T, "NDCG@20 of the feed, on the schools not swiped yet", 0, ndcg)
	panel(&b, left, top+panelH+gap, plotW, panelH, T,
		fmt.Sprintf("Like rate (moving average of %d swipes, each policy on its own swipes)", likeWindow), 1, like)
	panel(&b, left, top+2*(panelH+gap), plotW, panelH, T,
		"How well the model knows the student: NDCG@20 of the whole catalogue", 0, model)
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// panel draws one plot with its axes, phase marks and legend; the x axis
// runs over swipes from..T.
func panel(b *strings.Builder, x0, y0, w, h, T int, title string, from int, lines []series) {
	xs := func(t float64) float64 { return float64(x0) + float64(w)*(t-float64(from))/float64(max(1, T-from)) }
	ys := func(v float64) float64 { return float64(y0+h) - float64(h)*v }
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="15" font-weight="bold">%s</text>`+"\n", x0, y0-10, escape(title))
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", x0, y0, w, h)
	for v := 0.0; v <= 1.0001; v += 0.2 {
		y := ys(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", x0, y, x0+w, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="12" text-anchor="end">%.1f</text>`+"\n", x0-6, y+4, v)
	}
	step := 5
	if T > 60 {
		step = 10 * ((T + 59) / 60)
	}
	for t := from; t <= T; t++ {
		if t%step != 0 && t != from {
			continue
		}
		x := xs(float64(t))
		fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="12" text-anchor="middle">%d</text>`+"\n", x, y0+h+16, t)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="12" text-anchor="middle">swipes</text>`+"\n", x0+w/2, y0+h+34)
	// Phase boundaries: discovery 0-10, refinement 11-30, stable 31+.
	for _, t := range []int{10, 30} {
		if t > from && t < T {
			x := xs(float64(t) + 0.5)
			fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999" stroke-dasharray="3 3"/>`+"\n", x, y0, x, y0+h)
		}
	}
	for _, ph := range []struct {
		name     string
		from, to float64
	}{{"discovery", 0, 10.5}, {"refinement", 10.5, 30.5}, {"stable", 30.5, float64(T)}} {
		a, z := max(ph.from, float64(from)), min(ph.to, float64(T))
		if z-a < 3 {
			continue
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="11" fill="#888" text-anchor="middle">%s</text>`+"\n", (xs(a)+xs(z))/2, y0+14, ph.name)
	}
	for _, s := range lines {
		var pts []string
		for t := from; t < len(s.ys) && t <= T; t++ {
			if v := s.ys[t]; !math.IsNaN(v) {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xs(float64(t)), ys(v)))
			}
		}
		dash := ""
		if s.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, s.dash)
		}
		fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="%.1f"%s points="%s"/>`+"\n", s.color, s.width, dash, strings.Join(pts, " "))
	}
	// Legend, right of the plot.
	lx, ly := x0+w+24, y0+12
	for k, s := range lines {
		y := ly + 22*k
		dash := ""
		if s.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, s.dash)
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%.1f"%s/>`+"\n", lx, y, lx+30, y, s.color, s.width, dash)
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="13">%s</text>`+"\n", lx+38, y+4, escape(s.name))
	}
}

// smooth is a centred moving average over ys[1:] (index 0 is unused and
// stays NaN).
func smooth(ys []float64, window int) []float64 {
	out := make([]float64, len(ys))
	if len(out) > 0 {
		out[0] = math.NaN()
	}
	h := window / 2
	for t := 1; t < len(ys); t++ {
		sum, n := 0.0, 0
		for k := max(1, t-h); k <= min(len(ys)-1, t+h); k++ {
			sum += ys[k]
			n++
		}
		out[t] = sum / float64(n)
	}
	return out
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// familyPlotStyles are how each families-mode policy is drawn.
var familyPlotStyles = [NumFamilyPolicies]struct {
	color, dash string
	width       float64
}{
	FLearner:     {"#c0392b", "", 3},
	FWeightsOnly: {"#e67e22", "7 4", 2},
	FCeiling:     {"#2c3e50", "", 2},
	FBest8:       {"#2c3e50", "7 4", 2},
	FLogistic:    {"#27ae60", "", 2},
	FPopularity:  {"#2471a3", "", 2},
	FRandom:      {"#7f8c8d", "2 4", 2},
}

// familyColors are the families' colours in the by-family panel.
var familyColors = [NumFamilies]string{"#c0392b", "#8e44ad", "#2471a3", "#27ae60", "#d4ac0d"}

// SVG draws a families-mode run: NDCG@20 of every policy over all
// students, then, by family, the learner's share of the ceiling (solid)
// beside the weights-only learner's (dashed), at the checkpoints.
func (r FamiliesResult) SVG() []byte {
	const (
		width  = 960
		panelH = 300
		top    = 100
		gap    = 90
		left   = 70
		plotW  = 620
	)
	T := r.Config.Swipes
	at := func(vals []float64) []float64 {
		ys := make([]float64, T+1)
		for t := range ys {
			ys[t] = math.NaN()
		}
		for k, t := range r.Checkpoints {
			ys[t] = vals[k]
		}
		return ys
	}
	var all []series
	for p := range NumFamilyPolicies {
		st := familyPlotStyles[p]
		all = append(all, series{p.String(), st.color, st.dash, st.width, at(r.NDCG[p][NumFamilies])})
	}
	var share []series
	for f := range NumFamilies {
		for _, p := range []FamilyPolicy{FLearner, FWeightsOnly} {
			vals := make([]float64, len(r.Checkpoints))
			for k := range vals {
				vals[k] = r.NDCG[p][f][k] / r.NDCG[FCeiling][f][k]
			}
			name, dash, w := f.String(), "", 3.0
			if p == FWeightsOnly {
				name, dash, w = f.String()+", weights only", "7 4", 1.5
			}
			share = append(share, series{name, familyColors[f], dash, w, at(vals)})
		}
	}
	height := top + 2*panelH + gap + 60
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n",
		width, height+120, width, height+120)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height+120)
	fmt.Fprintf(&b, `<text x="%d" y="30" font-size="20" font-weight="bold">Tastes that are not the score: %d students, %d schools, variant %d</text>`+"\n",
		left, r.Students[NumFamilies], len(r.Config.Schools), r.Config.Variant)
	fmt.Fprintf(&b, `<text x="%d" y="52" font-size="13" fill="#555">matchctl simulate --families --variant %d --students %d --swipes %d --seed %d; five families of hidden tastes;</text>`+"\n",
		left, r.Config.Variant, r.Config.Students, T, r.Config.Seed)
	fmt.Fprintf(&b, `<text x="%d" y="68" font-size="13" fill="#555">ceiling: the student's ideal order served under the feed rules; every policy on the schools the learner's student has not swiped.</text>`+"\n", left)
	panel(&b, left, top, plotW, panelH, T, "NDCG@20, all students", 0, all)
	panel(&b, left, top+panelH+gap, plotW, panelH, T, "By family: share of the ceiling (learner solid, weights only dashed)", 0, share)
	b.WriteString("</svg>\n")
	return []byte(b.String())
}
