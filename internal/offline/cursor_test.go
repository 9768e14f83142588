package offline

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCursorRoundTripAndRefusals(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	me, other := uuid.New(), uuid.New()
	c := encodeCursor(key, me, 12345)
	pos, err := decodeCursor(key, me, c)
	require.NoError(t, err)
	assert.EqualValues(t, 12345, pos)

	for name, bad := range map[string]func() (string, uuid.UUID, []byte){
		"another student": func() (string, uuid.UUID, []byte) { return c, other, key },
		"another key":     func() (string, uuid.UUID, []byte) { return c, me, []byte("another-key-another-key-another!!") },
		"garbled":         func() (string, uuid.UUID, []byte) { return "%%%", me, key },
		"short":           func() (string, uuid.UUID, []byte) { return c[:10], me, key },
		"moved position": func() (string, uuid.UUID, []byte) {
			forged := encodeCursor([]byte("attacker-key-attacker-key-attack"), me, 99999)
			return forged, me, key
		},
	} {
		s, student, k := bad()
		_, err := decodeCursor(k, student, s)
		assert.Error(t, err, name)
	}
}
