package simulate

import (
	"fmt"
	"math"
	"strings"
)

// Checkpoints are the swipe counts the report's tables show: the start,
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
var tablePolicies = []Policy{Learner, OracleServed, LearnerRanking, Oracle, Popularity, Random, LearnerUniform}

// LikeRate is policy p's like rate over swipes from..to (inclusive), NaN
// when there are none.
func (r Result) LikeRate(p Policy, from, to int) float64 {
	if r.Like[p] == nil {
		return math.NaN()
	}
	sum, n := 0.0, 0
	for t := max(1, from); t <= min(to, len(r.Like[p])-1); t++ {
		sum += r.Like[p][t]
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// NDCGAt is policy p's mean NDCG@20 after t swipes, NaN when not measured.
func (r Result) NDCGAt(p Policy, t int) float64 {
	if r.NDCG[p] == nil || t < 0 || t >= len(r.NDCG[p]) {
		return math.NaN()
	}
	return r.NDCG[p][t]
}

// Ratio is policy a's NDCG@20 after t swipes over policy b's.
func (r Result) Ratio(a, b Policy, t int) float64 { return r.NDCGAt(a, t) / r.NDCGAt(b, t) }

// Table renders the results as Markdown: NDCG@20 by swipe count, like
// rate by phase, the learned model on the whole catalogue, the comparison
// after 30 swipes and, when measured, the cold start.
func (r Result) Table() string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "%d students, %d swipes each, %d schools, seed %d, client pages of %d\n\n",
		c.Students, c.Swipes, c.Schools, c.Seed, c.PageSize)

	var cols []Policy
	for _, p := range tablePolicies {
		if r.Ran[p] {
			cols = append(cols, p)
		}
	}
	b.WriteString("NDCG@20 after n swipes (mean over students; every policy on the schools not swiped yet)\n\n| swipes | phase |")
	for _, p := range cols {
		fmt.Fprintf(&b, " %s |", p)
	}
	b.WriteString("\n|---:|---|" + strings.Repeat("---:|", len(cols)) + "\n")
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

	b.WriteString("\nLike rate by phase (share of right swipes, each policy on its own swipes)\n\n| phase |")
	var likeCols []Policy
	for _, p := range cols {
		if r.Like[p] != nil {
			likeCols = append(likeCols, p)
			fmt.Fprintf(&b, " %s |", p)
		}
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(likeCols)) + "\n")
	for _, w := range phaseWindows {
		if w.from > c.Swipes {
			continue
		}
		fmt.Fprintf(&b, "| %s |", w.name)
		for _, p := range likeCols {
			fmt.Fprintf(&b, " %s |", num(r.LikeRate(p, w.from, min(w.to, c.Swipes))))
		}
		b.WriteString("\n")
	}

	b.WriteString("\nThe learned model on the whole catalogue (NDCG@20, swiped schools included)\n\n| swipes | learned model | hidden weights (oracle) | share |\n|---:|---:|---:|---:|\n")
	for _, t := range Checkpoints {
		if t > c.Swipes || r.Model[0] == nil {
			continue
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", t, num(r.Model[0][t]), num(r.Model[1][t]), pct(r.Model[0][t]/r.Model[1][t]))
	}

	fmt.Fprintf(&b, "\nLearner's swipes: %s on probes (liked %s), %s on exploration picks (liked %s); %s were pattern breaks (trigger_feedback)\n",
		pct(r.ProbeShare), pct(r.ProbeLikeRate), pct(r.ExploreShare), pct(r.ExploreLikeRate), pct(r.PatternBreakRate))

	if c.Swipes >= 30 {
		const t = 30
		l, lr := r.NDCGAt(Learner, t), r.NDCGAt(LearnerRanking, t)
		os, o := r.NDCGAt(OracleServed, t), r.NDCGAt(Oracle, t)
		pop, rnd := r.NDCGAt(Popularity, t), r.NDCGAt(Random, t)
		b.WriteString("\nAfter 30 swipes\n\n")
		fmt.Fprintf(&b, "- served feed: learner %s (+-%s) = %s of the oracle served %s (same feed rules)\n",
			num(l), num(r.NDCGSE[Learner][t]), pct(l/os), num(os))
		fmt.Fprintf(&b, "- ranking alone: learner %s (+-%s) = %s of the oracle %s\n",
			num(lr), num(r.NDCGSE[LearnerRanking][t]), pct(lr/o), num(o))
		fmt.Fprintf(&b, "- served feed against the oracle ranking: %s (the feed rules cost the oracle itself %s)\n",
			pct(l/o), pct(1-os/o))
		fmt.Fprintf(&b, "- baselines: popularity %s, random %s; the learner's served feed is %.1fx popularity and %.1fx random\n",
			num(pop), num(rnd), l/pop, l/rnd)
		if r.Ran[LearnerUniform] {
			fmt.Fprintf(&b, "- exploration, uncertainty-guided against uniform: served feed %s against %s (each on its own swipes); learned model on the whole catalogue %s against %s\n",
				num(l), num(r.NDCGAt(LearnerUniform, t)), num(r.Model[0][t]), num(r.Model[2][t]))
		}
	}
	if cs := r.ColdStart; cs != nil {
		fmt.Fprintf(&b, "\nCold start: %d students drawn from an archetype, NDCG@20 at 0 swipes\n\n", cs.Students)
		b.WriteString("| prior | served feed | ranking alone |\n|---|---:|---:|\n")
		fmt.Fprintf(&b, "| the archetype's weights | %s | %s |\n", num(cs.WithPrior), num(cs.RankingWithPrior))
		fmt.Fprintf(&b, "| the profile's only (SeedWeights) | %s | %s |\n", num(cs.WithoutPrior), num(cs.RankingWithoutPrior))
		fmt.Fprintf(&b, "| popularity order | %s | %s |\n", num(cs.Popularity), num(cs.Popularity))
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
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf("%.3f", v)
}

func pct(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

// Table renders a families-mode run as Markdown: NDCG@20 by checkpoint for
// every policy over all students, then the learner against the references
// by family at the first and last checkpoints, and the net lift.
func (r FamiliesResult) Table() string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "families mode, variant %d: %d students (%d per family), %d swipes each, %d schools, seed %d, client pages of %d, %s gains\n\n",
		c.Variant, r.Students[NumFamilies], r.Students[NumFamilies]/int(NumFamilies), c.Swipes, len(c.Schools), c.Seed, c.PageSize, c.Gain)
	b.WriteString("NDCG@20 after n swipes, all students (every policy on the schools the learner's student has not swiped)\n\n| swipes |")
	for p := range NumFamilyPolicies {
		fmt.Fprintf(&b, " %s |", p)
	}
	b.WriteString("\n|---:|" + strings.Repeat("---:|", int(NumFamilyPolicies)) + "\n")
	for k, t := range r.Checkpoints {
		fmt.Fprintf(&b, "| %d |", t)
		for p := range NumFamilyPolicies {
			fmt.Fprintf(&b, " %s |", num(r.NDCG[p][NumFamilies][k]))
		}
		b.WriteString("\n")
	}
	first, last := r.Checkpoints[0], r.Checkpoints[len(r.Checkpoints)-1]
	fmt.Fprintf(&b, "\nBy family, NDCG@20 at %d -> %d swipes; net lift is the learner's share of the ceiling at %d minus the same at %d\n\n| family | learner | weights only | ceiling | best 8 weights | logistic | popularity | net lift | net lift, weights only | stable like rate | ceiling's stable like rate |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n", first, last, last, first)
	for f := range NumFamilies + 1 {
		name := "all"
		if f < NumFamilies {
			name = f.String()
		}
		fmt.Fprintf(&b, "| %s |", name)
		for _, p := range []FamilyPolicy{FLearner, FWeightsOnly, FCeiling, FBest8, FLogistic, FPopularity} {
			fmt.Fprintf(&b, " %s -> %s |", num(r.NDCGAt(p, f, first)), num(r.NDCGAt(p, f, last)))
		}
		fmt.Fprintf(&b, " %+.3f | %+.3f | %s | %s |\n", r.Lift(FLearner, f), r.Lift(FWeightsOnly, f), num(r.StableLike[f]),
			num(r.StableLikeCeiling[f]))
	}
	return b.String()
}
