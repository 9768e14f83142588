package domain

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// What a webhook delivery's failure records (the attempt log, the
// delivery's last error, the queue's stored error, logs, operator output
// and a student's export) names the endpoint without the secrets its URL
// may carry and quotes the subscriber only as a bounded, escaped prefix
// (decisions.md, "Errors keep no secrets"). The functions here are the one
// place that says how; internal/webhook builds its errors with them and
// the worker and the store apply ScrubError again to whatever they record.

// MaxErrorBytes bounds a recorded error text.
const MaxErrorBytes = 1024

// MaxQuotedBytes bounds the part of a subscriber's answer an error quotes.
const MaxQuotedBytes = 200

// RedactURL returns raw as scheme://host/path: without user info, query
// string or fragment, which may carry a subscriber's credentials. Text that
// does not parse as a URL is cut the same way by hand.
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Opaque == "" {
		u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
		return u.String()
	}
	s := raw
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	host, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host, path = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	return scheme + "://" + host + path
}

// urlInText finds URLs in free text (Go's *url.Error prints the whole URL
// in quotes): a scheme, "://" and everything up to a space, a quote, a
// backslash or an angle bracket.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'<>\\]+`)

// ScrubError returns s fit to be recorded: every URL in it redacted
// (RedactURL), control characters and invalid UTF-8 escaped as Go escapes
// them (\x1b, \n, \u2028), and at most MaxErrorBytes long ("..." ends a
// text that was cut). It is idempotent.
func ScrubError(s string) string {
	s = urlInText.ReplaceAllStringFunc(s, RedactURL)
	s = escapeControl(s)
	if len(s) > MaxErrorBytes {
		s = s[:MaxErrorBytes-3]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "..."
	}
	return s
}

// Scrub returns err with its text scrubbed (ScrubError), still wrapping
// err so that errors.Is and errors.As see through it; nil stays nil, and
// an error whose text needs nothing is returned as it is.
func Scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := ScrubError(err.Error())
	if msg == err.Error() {
		return err
	}
	return &scrubbedError{msg: msg, err: err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// QuoteAnswer quotes at most MaxQuotedBytes of a subscriber's answer as a
// Go string literal (control characters and invalid UTF-8 escaped), with
// "..." after the closing quote when the answer was longer; "" for an
// empty answer.
func QuoteAnswer(b []byte) string {
	b = []byte(strings.TrimSpace(string(b)))
	if len(b) == 0 {
		return ""
	}
	cut := len(b) > MaxQuotedBytes
	if cut {
		b = b[:MaxQuotedBytes]
		// Not in the middle of a character that was valid.
		for n := 0; n < utf8.UTFMax-1 && len(b) > 0 && !utf8.Valid(b); n++ {
			if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size != 1 {
				break
			}
			b = b[:len(b)-1]
		}
	}
	q := strconv.Quote(string(b))
	if cut {
		q += "..."
	}
	return q
}

// escapeControl escapes every rune that is not printable (space aside) and
// every byte that is not UTF-8.
func escapeControl(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || (r != ' ' && !strconv.IsPrint(r)) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case r != ' ' && !strconv.IsPrint(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
