package match

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The binary form carries exactly what the JSON form does, in fewer bytes;
// DecodeModel reads either; damaged or cut input is an error, never a
// model that is unsafe to use.
func TestModelBinaryRoundTrip(t *testing.T) {
	cat, p := learnCatalog, learnStudent()
	m := NewModel(SeedWeights(p))
	for k, i := range []int{1, 20, 300, 4, 77, 900} {
		d := Like
		if k%2 == 1 {
			d = Dislike
		}
		m, _ = m.Observe(p, cat, SwipeObservation(i, d))
	}
	m, _ = m.Observe(p, cat, Observation{Index: 5, Interaction: InteractionSave})
	m, _ = m.Observe(p, cat, FeedbackObservation(5, ReasonTooExpensive))

	bin, err := m.MarshalBinary()
	require.NoError(t, err)
	js, err := json.Marshal(m)
	require.NoError(t, err)
	assert.Less(t, len(bin), len(js)/2, "binary %d bytes, JSON %d", len(bin), len(js))

	var back Model
	require.NoError(t, back.UnmarshalBinary(bin))
	assert.Equal(t, m, back)
	for _, b := range [][]byte{bin, js} {
		d, err := DecodeModel(b)
		require.NoError(t, err)
		assert.Equal(t, m, d)
	}
	var zero Model
	zb, err := zero.MarshalBinary()
	require.NoError(t, err)
	z, err := DecodeModel(zb)
	require.NoError(t, err)
	assert.Equal(t, NewModel(DefaultWeights()).Weights(), z.Weights(), "the zero Model encodes as the default")

	// Cut short, another layout or another version: an error.
	for _, bad := range [][]byte{nil, {}, bin[:1], bin[:len(bin)-1], append(append([]byte{}, bin...), 0), {'M', ModelVersion}} {
		_, err := DecodeModel(bad)
		require.Error(t, err, "%d bytes", len(bad))
	}
	other := append([]byte{}, bin...)
	other[1] = ModelVersion + 1
	_, err = DecodeModel(other)
	require.ErrorIs(t, err, ErrModelVersion)

	// Damaged values are replaced by safe ones, as in the JSON form.
	damaged := append([]byte{}, bin...)
	// Every float after the counts (7 swipes, 1 signal, 1 feedback: a byte
	// each) up to the history.
	for i := 2 + 3; i < 2+3+binaryModelSize; i += 8 {
		copy(damaged[i:], []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x7f}) // NaN
	}
	d, err := DecodeModel(damaged)
	require.NoError(t, err)
	for j, v := range weightArray(d.Weights()) {
		assert.False(t, math.IsNaN(v), WeightKeys[j])
		unit(t, v, WeightKeys[j])
	}
}

// A memoised prior level grid is the one computed afresh.
func TestLevelPriorMemo(t *testing.T) {
	for l := range nLevels {
		for _, w := range []float64{0, 0.2, 0.5, 0.77, 1} {
			first := levelPrior(l, w)
			assert.Equal(t, first, levelPrior(l, w))
			assert.Equal(t, computeLevelPrior(l, w), first)
		}
	}
}

// BenchmarkDecodeModel decodes a stored model with a full history, as the
// API does on every swipe predicted from a stored feed.
func BenchmarkDecodeModel(b *testing.B) {
	cat, p := learnCatalog, learnStudent()
	m := NewModel(SeedWeights(p))
	for i := range historyLen + 4 {
		d := Like
		if i%3 == 0 {
			d = Dislike
		}
		m, _ = m.Observe(p, cat, SwipeObservation(i*7%len(cat.Schools), d))
	}
	bin, err := m.MarshalBinary()
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeModel(bin); err != nil {
			b.Fatal(err)
		}
	}
}
