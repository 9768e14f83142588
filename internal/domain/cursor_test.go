package domain_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
)

func TestCursorRoundTripAndRefusals(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	me, other := uuid.NewString(), uuid.NewString()
	c := domain.EncodeCursor(key, me, 12345)
	pos, err := domain.DecodeCursor(key, me, c)
	require.NoError(t, err)
	assert.EqualValues(t, 12345, pos)

	for name, bad := range map[string]func() (string, string, []byte){
		"another student": func() (string, string, []byte) { return c, other, key },
		"another key":     func() (string, string, []byte) { return c, me, []byte("another-key-another-key-another!!") },
		"garbled":         func() (string, string, []byte) { return "%%%", me, key },
		"short":           func() (string, string, []byte) { return c[:10], me, key },
		"moved position": func() (string, string, []byte) {
			forged := domain.EncodeCursor([]byte("attacker-key-attacker-key-attack"), me, 99999)
			return forged, me, key
		},
	} {
		s, student, k := bad()
		_, err := domain.DecodeCursor(k, student, s)
		assert.Error(t, err, name)
		assert.Equal(t, domain.CodeInvalidRequest, domain.CodeOf(err), name)
	}
}
