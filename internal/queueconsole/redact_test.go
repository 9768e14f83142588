package queueconsole_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/collegematch/matching/internal/queueconsole"
)

// A payload shows without student ids, URL secrets or secret fields, even
// where JSON escapes a character inside the URL (json.Marshal writes & as
// \u0026, which would end a URL found in the text short of its query).
func TestRedactPayload(t *testing.T) {
	const student = "7C9E6679-7425-40DE-944B-E07FC1F90AE7"
	p := []byte(`{"student_id":"` + student + `","endpoint":"https://u:pw@hooks.example/in?a=1\u0026token=s3cr3t#f",` +
		`"secret":"whsec_abc","list":["learn:` + strings.ToLower(student) + `:v3"],"n":3}`)
	got := queueconsole.RedactPayload(p)
	for _, leak := range []string{strings.ToLower(student), student, "s3cr3t", "pw@", "whsec_abc", "a=1"} {
		assert.NotContains(t, got, leak)
	}
	assert.Contains(t, got, `"endpoint":"https://hooks.example/in"`)
	assert.Contains(t, got, `"secret":"[redacted]"`)
	assert.Contains(t, got, `"n":3`)
	// One student reads as one digest, whatever the case of the id.
	d := strings.Count(got, "uuid:")
	assert.Equal(t, 2, d, got)
	first := got[strings.Index(got, "uuid:"):][:13]
	assert.Equal(t, 2, strings.Count(got, first), got)

	// Not JSON: redacted as text.
	assert.Equal(t, "id "+first+" at https://h.example/p", queueconsole.RedactPayload([]byte("id "+student+" at https://h.example/p?k=v")))
}

func TestRedactTextBoundsAndEscapes(t *testing.T) {
	got := queueconsole.RedactText("line\nbreak " + strings.Repeat("é", 3000))
	assert.LessOrEqual(t, len(got), 2048)
	assert.True(t, strings.HasPrefix(got, `line\nbreak `), got)
	assert.True(t, strings.HasSuffix(got, "..."))
}
