package simulate

import (
	"fmt"
	"strings"
)

// Checkpoints are the swipe counts the report's table shows: the start,
// the end of discovery (10), the end of refinement (30) and 40.
var Checkpoints = []int{0, 10, 30, 40}

// phaseWindows are the swipes the like rate of each phase is measured over.
var phaseWindows = []struct {
	name     string
	from, to int
}{
	{"discovery (swipes 1-10)", 1, 10},
	{"refinement (swipes 11-30)", 11, 30},
	{"stable (swipes 31-40)", 31, 40},
}

// tablePolicies is the column order of the tables.
var tablePolicies = []Policy{Learner, LearnerRanking, OracleServed, Oracle, Popularity, Random, LearnerUniform}

// LikeRate is policy p's like rate over swipes from..to (inclusive), or
// NaN when there are none.
func (r Result) LikeRate(p Policy, from, to int) float64 {
	if r.Like[p] == nil {
		return nan()
	}
	sum, n := 0.0, 0
	for t := max(1, from); t <= min(to, len(r.Like[p])-1); t++ {
		sum += r.Like[p][t]
		n++
	}
	if n == 0 {
		return nan()
	}
	return sum / float64(n)
}

// NDCGAt is policy p's mean NDCG@20 after t swipes, NaN when not measured.
func (r Result) NDCGAt(p Policy, t int) float64 {
	if r.NDCG[p] == nil || t < 0 || t >= len(r.NDCG[p]) {
		return nan()
	}
	return r.NDCG[p][t]
}

// Table renders the results as Markdown tables: NDCG@20 by swipe count,
// like rate by phase, the comparison after 30 swipes and the cold start.
func (r Result) Table() string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "%d students, %d swipes each, %d schools, seed %d, client page %d\n\n",
		c.Students, c.Swipes, c.Schools, c.Seed, c.PageSize)

	var cols []Policy
	for _, p := range tablePolicies {
		if r.Ran[p] {
			cols = append(cols, p)
		}
	}
	fmt.Fprintf(&b, "NDCG@20 of the feed after n swipes (mean over students)\n\n| swipes | phase |")
	for _, p := range cols {
		fmt.Fprintf(&b, " %s |", p)
	}
	b.WriteString("\n|---:|---|")
	for range cols {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, t := range Checkpoints {
		if t > c.Swipes {
			continue
		}
		fmt.Fprintf(&b, "| %d | %s |", t, phaseAfter(t))
		for _, p := range cols {
			fmt.Fprintf(&b, " %s |", num(r.NDCGAt(p, t)))
		}
		b.WriteString("\n")
	}

	fmt.Fprintf(&b, "\nLike rate by phase (share of swipes that were right swipes)\n\n| phase |")
	var likeCols []Policy
	for _, p := range cols {
		if p.hasSwipes() {
			likeCols = append(likeCols, p)
			fmt.Fprintf(&b, " %s |", p)
		}
	}
	b.WriteString("\n|---|")
	for range likeCols {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, w := range phaseWindows {
		if w.from > c.Swipes {
			continue
		}
		fmt.Fprintf(&b, "| %s |", w.name)
		for _, p := range likeCols {
			fmt.Fprintf(&b, " %s |", num(r.LikeRate(p, w.from, w.to)))
		}
		b.WriteString("\n")
	}

	if c.Swipes >= 30 {
		t := 30
		l, lr := r.NDCGAt(Learner, t), r.NDCGAt(LearnerRanking, t)
		os, o := r.NDCGAt(OracleServed, t), r.NDCGAt(Oracle, t)
		pop, rnd := r.NDCGAt(Popularity, t), r.NDCGAt(Random, t)
		fmt.Fprintf(&b, "\nAfter 30 swipes\n\n")
		fmt.Fprintf(&b, "- served feed: learner %s (+-%s) = %s of the oracle served %s, %s of the oracle ranking %s\n",
			num(l), num(r.NDCGSE[Learner][t]), pct(l/os), num(os), pct(l/o), num(o))
		fmt.Fprintf(&b, "- ranking alone: learner %s (+-%s) = %s of the oracle %s\n", num(lr), num(r.NDCGSE[LearnerRanking][t]), pct(lr/o), num(o))
		fmt.Fprintf(&b, "- baselines: popularity %s, random %s (learner served is %.1fx popularity, %.1fx random)\n",
			num(pop), num(rnd), l/pop, l/rnd)
		if r.Ran[LearnerUniform] {
			fmt.Fprintf(&b, "- exploration: uncertainty-guided %s vs uniform %s (learned ranking %s vs %s)\n",
				num(l), num(r.NDCGAt(LearnerUniform, t)), num(lr), "n/a")
		}
	}
	if cs := r.ColdStart; cs != nil {
		fmt.Fprintf(&b, "\nCold start (%d students drawn from an archetype, NDCG@20 at 0 swipes)\n\n", cs.Students)
		fmt.Fprintf(&b, "| | served feed | ranking alone |\n|---|---:|---:|\n")
		fmt.Fprintf(&b, "| archetype prior | %s | %s |\n", num(cs.WithPrior), num(cs.RankingWithPrior))
		fmt.Fprintf(&b, "| profile prior only | %s | %s |\n", num(cs.WithoutPrior), num(cs.RankingWithoutPrior))
		fmt.Fprintf(&b, "| popularity | %s | %s |\n", num(cs.Popularity), num(cs.Popularity))
	}
	return b.String()
}

func phaseAfter(t int) string {
	switch {
	case t <= 10:
		return "discovery"
	case t <= 30:
		return "refinement"
	}
	return "stable"
}

func num(v float64) string {
	if v != v {
		return "-"
	}
	return fmt.Sprintf("%.3f", v)
}

func pct(v float64) string {
	if v != v {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

func nan() float64 { var z float64; return z / z }
