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
	sorted := radixSort(keys, spare, counts[0][:], counts[1][:], radixBits)
	for j, k := range sorted {
		dst[j] = src[uint32(k)]
	}
	// Runs of equal keys, in exact order.
	for start, end := 0, 0; start < n; start = end {
		end = equalRun(sorted, start)
		if end-start > 1 {
			sortRun(dst[start:end])
		}
	}
	keyBuffers.Put(buf)
}

// radixSort sorts keys (a sort key << 32 | the entry's place in its
// list) by their upper half, stably, in two passes: the low digit is the
// key's lo bits, the high digit the rest, lo0 and hi their histograms
// (len(hi) covers every high digit). spare is scratch of the same length.
// It returns the sorted keys: keys or spare.
func radixSort(keys, spare []uint64, lo0, hi []int32, lo uint) []uint64 {
	n := len(keys)
	from, to := keys, spare
	for d, c := range [2][]int32{lo0, hi} {
		shift, mask := uint(32), uint64(len(lo0)-1)
		if d == 1 {
			shift, mask = 32+lo, uint64(len(hi)-1)
		}
		if int(c[(from[0]>>shift)&mask]) == n {
			continue // every key has the same digit: this pass would not move anything
		}
		pos := int32(0)
		for j := range c {
			c[j], pos = pos, pos+c[j]
		}
		for _, k := range from {
			j := (k >> shift) & mask
			to[c[j]] = k
			c[j]++
		}
		from, to = to, from
	}
	return from
}

// equalRun is the end of the run of sorted keys equal to sorted[start]'s
// upper half (start < len(sorted)).
func equalRun(sorted []uint64, start int) int {
	k := sorted[start] >> 32
	end := start + 1
	for end < len(sorted) && sorted[end]>>32 == k {
		end++
	}
	return end
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
