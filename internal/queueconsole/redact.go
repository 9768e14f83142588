package queueconsole

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/collegematch/matching/internal/domain"
)

// What the console shows of a task keeps no student id and no endpoint
// secret: a task's id, payload and stored error pass through the functions
// here. A UUID (a student's id, or an event's) becomes "uuid:" and the
// first eight hex digits of its SHA-256, which tells tasks of one student
// apart and together without naming the student (an operator who has the
// id computes the same digest); a URL keeps its scheme, host and path
// (domain.RedactURL: no user info, query or fragment); a JSON field whose
// name says it holds a secret is replaced whole.

// maxShown bounds a payload or error as the console shows it.
const maxShown = 2048

var uuidRE = regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// secretKey matches JSON field names whose values are never shown.
var secretKey = regexp.MustCompile(`(?i)secret|token|password|signature|authorization|api[_-]?key`)

// redactIDs replaces every UUID in s by "uuid:" and a short digest of it.
func redactIDs(s string) string {
	return uuidRE.ReplaceAllStringFunc(s, func(id string) string {
		sum := sha256.Sum256([]byte(strings.ToLower(id)))
		return "uuid:" + hex.EncodeToString(sum[:4])
	})
}

// RedactText returns free text (a task id, a stored error) fit to show:
// URLs redacted and control characters escaped (domain.ScrubError), then
// UUIDs replaced.
func RedactText(s string) string {
	return cut(redactIDs(domain.ScrubError(s)))
}

// RedactPayload returns a task's payload fit to show. A JSON payload is
// walked value by value (so an escaped character cannot hide part of a
// URL from the redaction) and shown compact; anything else is redacted as
// text.
func RedactPayload(p []byte) string {
	var v any
	if err := json.Unmarshal(p, &v); err != nil {
		return RedactText(string(p))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(redactValue(v)); err != nil {
		return RedactText(string(p))
	}
	return cut(strings.TrimSuffix(b.String(), "\n"))
}

func redactValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if secretKey.MatchString(k) {
				x[k] = "[redacted]"
				continue
			}
			x[k] = redactValue(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = redactValue(e)
		}
		return x
	case string:
		if strings.Contains(x, "://") {
			x = domain.ScrubError(x)
		}
		return redactIDs(x)
	}
	return v
}

func cut(s string) string {
	if len(s) <= maxShown {
		return s
	}
	s = s[:maxShown-3]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "..."
}
