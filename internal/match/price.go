package match

import "math"

// NetPrice is the yearly price estimated for a student at a school, with
// where the figure comes from.
type NetPrice struct {
	Amount int    `json:"amount"` // USD a year; 0 when Source is ""
	Source string `json:"source"` // e.g. "net price for families earning $48k-75k (College Scorecard)"; "" when unknown
}

// Known reports whether the school reports any price.
func (n NetPrice) Known() bool { return n.Source != "" }

// incomeBandLabels name the Scorecard's family income bands.
var incomeBandLabels = [...]string{"$0-30k", "$30k-48k", "$48k-75k", "$75k-110k", "over $110k"}

// EstimateNetPrice is the price scoring uses for this student at school idx,
// trying in order: the net price for the student's family income band
// (when the student gave an income and the school reports that band), the
// school's average net price, then published tuition (in-state for a
// student from the school's state, else out-of-state, else whichever is
// reported). Figures from an imported College Scorecard record say so.
func EstimateNetPrice(p Profile, cat *Catalog, idx int) NetPrice {
	sc := newScorer(p, DefaultWeights(), cat)
	var b breakdown
	sc.score(&cat.feat[idx], idx, &b)
	return netPrice(&sc, &b, cat.Schools[idx].Source)
}

func netPrice(sc *scorer, b *breakdown, schoolSource string) NetPrice {
	k := 0
	if schoolSource == "scorecard" {
		k = 1
	}
	var src string
	switch b.priceSrc {
	case srcNone:
		return NetPrice{}
	case srcBand:
		src = priceSources.band[sc.band][k]
	case srcAverage, srcTuitionIn, srcTuitionOut:
		src = priceSources.other[b.priceSrc][k]
	}
	return NetPrice{Amount: int(math.Round(b.price)), Source: src}
}

// priceSources are NetPrice.Source by price source (income band for the
// band's net price) and whether the figures are the College Scorecard's
// (second column), made once.
var priceSources = func() (t struct {
	band  [len(incomeBandLabels)][2]string
	other [srcTuitionOut + 1][2]string
}) {
	words := func(s string) [2]string { return [2]string{s, s + " (College Scorecard)"} }
	for i, l := range incomeBandLabels {
		t.band[i] = words("net price for families earning " + l)
	}
	t.other[srcAverage] = words("average net price")
	t.other[srcTuitionIn] = words("published in-state tuition")
	t.other[srcTuitionOut] = words("published out-of-state tuition")
	return t
}()
