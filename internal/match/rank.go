package match

import (
	"cmp"
	"slices"
)

// Rank scores every school of the catalogue for a student and returns them
// best first: by Score descending, ties broken by school ID ascending (the
// catalogue is held in ID order, so by Index). Every school appears once.
//
// Rank reuses dst: it needs cap(dst) >= 2*cat.Len() (the upper half is
// scratch for the sort) and allocates a new slice only when dst is smaller,
// so a caller that passes back what Rank returned ranks without allocating.
// The result aliases dst; entries beyond its length are scratch.
//
// Cost is linear in the catalogue size: one scoring pass, then a two-pass
// radix sort on a 22-bit quantised score. Schools whose quantised scores
// are equal (scores within about 2.4e-7) are put in exact order afterwards;
// such runs are short.
func Rank(dst []Scored, p Profile, w Weights, cat *Catalog) []Scored {
	n := cat.Len()
	if cap(dst) < 2*n {
		dst = make([]Scored, 2*n)
	}
	out, tmp := dst[:n], dst[n:2*n]
	if n == 0 {
		return out
	}
	sc := newScorer(p, w, cat)
	var b breakdown
	for i := range out {
		sc.score(&cat.feat[i], i, &b)
		out[i] = b.scored(i)
	}
	sortScored(out, tmp)
	return out
}

// sortScored sorts s into ranking order (better), using tmp (len(tmp) >=
// len(s)) as scratch: an LSD radix sort on the quantised score, which is
// stable, so schools with equal keys stay in index order, then orderTies.
func sortScored(s, tmp []Scored) {
	n := len(s)
	if n < 2 {
		return
	}
	var counts [2][radixBuckets]int32
	for i := range s {
		k := sortKey(s[i].Score)
		counts[0][k&radixMask]++
		counts[1][k>>radixBits]++
	}
	src, dst := s, tmp[:n]
	for d := range 2 {
		c := &counts[d]
		shift := uint(d * radixBits)
		if int(c[(sortKey(src[0].Score)>>shift)&radixMask]) == n {
			continue // every key has the same digit: this pass would not move anything
		}
		pos := int32(0)
		for j := range c {
			c[j], pos = pos, pos+c[j]
		}
		for i := range src {
			j := (sortKey(src[i].Score) >> shift) & radixMask
			dst[c[j]] = src[i]
			c[j]++
		}
		src, dst = dst, src
	}
	if &src[0] != &s[0] {
		copy(s, src)
	}
	orderTies(s)
}

const (
	radixBits    = 11
	radixBuckets = 1 << radixBits
	radixMask    = radixBuckets - 1
	keyMax       = 1<<(2*radixBits) - 1
)

// sortKey quantises a score in [0,1] to 22 bits, inverted so that ascending
// keys are descending scores. It never decreases as the score falls.
func sortKey(score float64) uint32 {
	return keyMax - uint32(clamp01(score)*keyMax)
}

// better is the exact ranking order: score descending, then index (ID) ascending.
func better(a, b Scored) int {
	return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Index, b.Index))
}

// orderTies puts each run of equal sort keys into exact order.
func orderTies(s []Scored) {
	for i := 0; i < len(s); {
		k := sortKey(s[i].Score)
		j := i + 1
		for j < len(s) && sortKey(s[j].Score) == k {
			j++
		}
		if run := s[i:j]; len(run) > 1 {
			if len(run) <= 12 {
				insertionSort(run)
			} else {
				slices.SortFunc(run, better)
			}
		}
		i = j
	}
}

func insertionSort(s []Scored) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && better(s[j], s[j-1]) < 0; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
