package domain_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/collegematch/matching/internal/domain"
)

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.example.com/in":                         "https://hooks.example.com/in",
		"https://user:pw@hooks.example.com/in?token=S#frag":    "https://hooks.example.com/in",
		"http://127.0.0.1:8080/hook?token=S":                   "http://127.0.0.1:8080/hook",
		"http://[::1]:9/h?":                                    "http://[::1]:9/h",
		"http://u:p@host:1/%zz?token=S":                        "http://host:1/%zz", // does not parse
		"not a url?token=S":                                    "not%20a%20url",
		"https://hooks.example.com/in?next=https://x/?token=S": "https://hooks.example.com/in",
	} {
		assert.Equal(t, want, domain.RedactURL(in), in)
	}
}

// Go's *url.Error prints the whole URL; a subscriber's answer may hold
// anything: what is recorded names no secret and holds no raw control
// byte, whatever the text.
func TestScrubError(t *testing.T) {
	ue := &url.Error{Op: "Post", URL: "http://hookuser:SECRET@127.0.0.1:1/hook?token=SECRET",
		Err: errors.New("dial tcp 127.0.0.1:1: connect: connection refused")}
	got := domain.ScrubError(ue.Error())
	assert.Equal(t, `Post "http://127.0.0.1:1/hook": dial tcp 127.0.0.1:1: connect: connection refused`, got)

	got = domain.ScrubError("HTTP 500: marker\x1b[31m\n\xff\u2028 end")
	assert.Equal(t, `HTTP 500: marker\x1b[31m\n\xff\u2028 end`, got)
	assert.Equal(t, got, domain.ScrubError(got), "idempotent")

	long := domain.ScrubError(strings.Repeat("é\x00", 1000))
	assert.LessOrEqual(t, len(long), domain.MaxErrorBytes)
	assert.True(t, utf8.ValidString(long))
	assert.True(t, strings.HasSuffix(long, "..."))
	assert.Equal(t, long, domain.ScrubError(long), "idempotent when cut")

	wrapped := domain.Scrub(fmt.Errorf("attempt: %w", ue))
	assert.NotContains(t, wrapped.Error(), "SECRET")
	var back *url.Error
	assert.True(t, errors.As(wrapped, &back), "still wraps the original")
	assert.Nil(t, domain.Scrub(nil))
	plain := errors.New("HTTP 500")
	assert.Same(t, plain, domain.Scrub(plain))
}

func TestQuoteAnswer(t *testing.T) {
	assert.Equal(t, "", domain.QuoteAnswer([]byte("  \n")))
	assert.Equal(t, `"down \x1b[0m\xff"`, domain.QuoteAnswer([]byte("down \x1b[0m\xff\n")))
	long := domain.QuoteAnswer([]byte(strings.Repeat("a", 199) + "éééé"))
	assert.Equal(t, `"`+strings.Repeat("a", 199)+`"...`, long, "cut at 200 bytes, not inside a character")
	assert.Equal(t, `"`+strings.Repeat("\\x00", 200)+`"...`, domain.QuoteAnswer([]byte(strings.Repeat("\x00", 300))))
}
