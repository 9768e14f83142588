package query

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The stored page's envelope writes its string and number as
// encoding/json would, whichever path it takes.
func TestAppendJSONAsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "1.4.0", "learned-2026", "a\"b", `back\slash`, "<tag>", "a&b", "tab\t", "é", "\u2028", "\x7f"} {
		want, err := json.Marshal(s)
		assert.NoError(t, err)
		assert.Equal(t, string(want), string(appendJSONString([]byte("x"), s))[1:], "%q", s)
	}
	for _, v := range []float64{0, math.Copysign(0, -1), 1, 0.5, 0.1234, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789.125, -0.25, 1.0 / 3} {
		want, err := json.Marshal(v)
		assert.NoError(t, err)
		assert.Equal(t, string(want), string(appendJSONFloat([]byte("x"), v))[1:], "%v", v)
	}
}
