package match

import (
	"cmp"
	"slices"
	"sync"
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
	for i := range tmp {
		sc.score(&cat.feat[i], i, &b)
		tmp[i] = b.scored(i)
	}
	rankInto(out, tmp)
	return out
}

// sortScored sorts s into ranking order (better), using tmp (len(tmp) >=
// len(s)) as scratch.
func sortScored(s, tmp []Scored) {
	copy(tmp, s)
	rankInto(s, tmp[:len(s)])
}

// rankInto puts src into ranking order (better) in dst (len(dst) ==
// len(src)). It sorts 8-byte keys, not the schools: an LSD radix sort on
// the quantised score, which is stable, so schools with equal keys stay in
// src's order (index order, as the rankers fill src), then each school is
// copied once into place and runs of equal keys are put in exact order.
func rankInto(dst, src []Scored) {
	n := len(src)
	if n == 0 {
		return
	}
	buf := keyBuffers.Get().(*[]uint64)
	if cap(*buf) < 2*n {
		*buf = make([]uint64, 2*n)
	}
	keys, spare := (*buf)[:n], (*buf)[n:2*n]
	var counts [2][radixBuckets]int32
	for i := range src {
		k := sortKey(src[i].Score)
		keys[i] = uint64(k)<<32 | uint64(i)
		counts[0][k&radixMask]++
		counts[1][k>>radixBits]++
	}
	from, to := keys, spare
	for d := range 2 {
		c := &counts[d]
		shift := uint(32 + d*radixBits)
		if int(c[(from[0]>>shift)&radixMask]) == n {
			continue // every key has the same digit: this pass would not move anything
		}
		pos := int32(0)
		for j := range c {
			c[j], pos = pos, pos+c[j]
		}
		for _, k := range from {
			j := (k >> shift) & radixMask
			to[c[j]] = k
			c[j]++
		}
		from, to = to, from
	}
	for j, k := range from {
		dst[j] = src[uint32(k)]
	}
	// Runs of equal keys, in exact order.
	start, prev := 0, from[0]>>32
	for j := 1; j < n; j++ {
		if k := from[j] >> 32; k != prev {
			if j-start > 1 {
				sortRun(dst[start:j])
			}
			start, prev = j, k
		}
	}
	if n-start > 1 {
		sortRun(dst[start:])
	}
	keyBuffers.Put(buf)
}

// keyBuffers are rankInto's key buffers (*[]uint64).
var keyBuffers = sync.Pool{New: func() any { return new([]uint64) }}

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

// sortRun puts a run of schools whose keys are equal in exact order.
func sortRun(run []Scored) {
	if len(run) <= 12 {
		insertionSort(run)
	} else {
		slices.SortFunc(run, better)
	}
}

func insertionSort(s []Scored) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && better(s[j], s[j-1]) < 0; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
