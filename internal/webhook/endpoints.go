// Package webhook is the outbound side of webhook delivery: the subscriber
// list (WEBHOOK_ENDPOINTS_FILE), Standard Webhooks signing, an HTTP client
// that refuses private destinations, and the classification of responses
// (delivered, retry, gone). What to deliver, when to retry and what to
// record is the worker's business (internal/tasks).
package webhook

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/collegematch/matching/internal/domain"
)

// Events is every event type an endpoint may subscribe to.
var Events = []string{"swipe.recorded"}

// SecretPrefix starts every signing secret, as in the Standard Webhooks
// scheme: "whsec_" + base64 of the key bytes.
const SecretPrefix = "whsec_"

// MinSecretBytes is the shortest key accepted (the Standard Webhooks
// recommendation is 24 to 64 bytes).
const MinSecretBytes = 24

// MaxNameLen bounds an endpoint's name.
const MaxNameLen = 63

// Endpoint is one subscriber.
type Endpoint struct {
	// Name identifies the endpoint to operators (matchctl webhooks) and in
	// metrics (the endpoint label): given in the file, or derived from the
	// URL's host; unique within the file.
	Name string
	URL  string
	// Keys are the decoded signing secrets, in the file's order: every
	// delivery carries one signature per key (Standard Webhooks allows
	// several, space-separated), so a secret is rolled without a window in
	// which the subscriber rejects deliveries.
	Keys         [][]byte
	Events       []string // subscribed event types
	AllowPrivate bool     // deliveries to loopback, private and link-local addresses are allowed
}

// Subscribes reports whether the endpoint wants events of type event.
func (e Endpoint) Subscribes(event string) bool { return slices.Contains(e.Events, event) }

// String shows the endpoint without its secret.
func (e Endpoint) String() string { return e.Name + " (" + Redact(e.URL) + ")" }

// Find returns the endpoint named nameOrURL, or with that URL.
func Find(endpoints []Endpoint, nameOrURL string) (Endpoint, bool) {
	for _, e := range endpoints {
		if e.Name == nameOrURL || e.URL == nameOrURL {
			return e, true
		}
	}
	return Endpoint{}, false
}

// Redact returns u as scheme://host/path, without credentials, query or
// fragment, for errors, logs and operator output (domain.RedactURL).
func Redact(u string) string { return domain.RedactURL(u) }

type entry struct {
	Name         string   `yaml:"name"`
	URL          string   `yaml:"url"`
	Secret       string   `yaml:"secret"`
	Secrets      []string `yaml:"secrets"`
	Events       []string `yaml:"events"`
	AllowPrivate bool     `yaml:"allow_private"`
}

// LoadFile reads and validates an endpoints file; an empty path means no
// endpoints. The file is YAML or JSON (JSON is read as YAML): a list of
// {name?, url, secret or secrets, events, allow_private?}, or a mapping
// whose only key "endpoints" holds that list.
func LoadFile(path string) ([]Endpoint, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("WEBHOOK_ENDPOINTS_FILE: %w", err)
	}
	eps, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("WEBHOOK_ENDPOINTS_FILE %s: %w", path, err)
	}
	return eps, nil
}

// Parse validates an endpoints document; every problem is reported, each
// naming its entry (1-based) and URL.
func Parse(b []byte) ([]Endpoint, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var entries []entry
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&entries); err != nil {
		var wrapped struct {
			Endpoints []entry `yaml:"endpoints"`
		}
		dec2 := yaml.NewDecoder(bytes.NewReader(b))
		dec2.KnownFields(true)
		if err2 := dec2.Decode(&wrapped); err2 != nil {
			if errors.Is(err, io.EOF) {
				return nil, nil
			}
			return nil, fmt.Errorf("not a list of endpoints {name, url, secrets, events, allow_private}: %w", err)
		}
		entries = wrapped.Endpoints
	}
	var (
		problems []error
		out      []Endpoint
		seen     = map[string]int{}
		names    = map[string]int{}
	)
	for i, e := range entries {
		name := fmt.Sprintf("endpoint %d", i+1)
		if e.URL != "" {
			name += " (" + Redact(e.URL) + ")"
		}
		ep, errs := validate(e)
		for _, err := range errs {
			problems = append(problems, fmt.Errorf("%s: %w", name, err))
		}
		if len(errs) > 0 {
			continue
		}
		if first, dup := seen[ep.URL]; dup {
			problems = append(problems, fmt.Errorf("%s: same url as endpoint %d; list each url once with all its events", name, first))
			continue
		}
		if ep.Name != "" {
			if first, dup := names[ep.Name]; dup {
				problems = append(problems, fmt.Errorf("%s: name %q is also endpoint %d's", name, ep.Name, first))
				continue
			}
			names[ep.Name] = i + 1
		}
		seen[ep.URL] = i + 1
		out = append(out, ep)
	}
	if len(problems) == 0 {
		defaultNames(out)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return out, nil
}

func validate(e entry) (Endpoint, []error) {
	var errs []error
	ep := Endpoint{URL: strings.TrimSpace(e.URL), AllowPrivate: e.AllowPrivate}
	switch u, err := url.Parse(ep.URL); {
	case ep.URL == "":
		errs = append(errs, errors.New("url is missing"))
	case err != nil:
		errs = append(errs, fmt.Errorf("url is not a valid URL: %v", err))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, fmt.Errorf("url scheme %q is not http or https", u.Scheme))
	case u.Hostname() == "":
		errs = append(errs, errors.New("url has no host"))
	case u.Fragment != "":
		errs = append(errs, errors.New("url has a fragment"))
	}
	switch secrets := e.Secrets; {
	case e.Secret != "" && len(secrets) > 0:
		errs = append(errs, errors.New("give secret or secrets, not both"))
	case len(secrets) == 0:
		secrets = []string{e.Secret}
		fallthrough
	default:
		for i, s := range secrets {
			key, err := DecodeSecret(s)
			if err != nil {
				if len(secrets) > 1 {
					err = fmt.Errorf("secrets[%d]: %w", i, err)
				}
				errs = append(errs, err)
				continue
			}
			if slices.ContainsFunc(ep.Keys, func(k []byte) bool { return bytes.Equal(k, key) }) {
				errs = append(errs, fmt.Errorf("secrets[%d] is listed twice", i))
				continue
			}
			ep.Keys = append(ep.Keys, key)
		}
	}
	if e.Name != "" {
		if err := checkName(e.Name); err != nil {
			errs = append(errs, err)
		}
		ep.Name = e.Name
	}
	if len(e.Events) == 0 {
		errs = append(errs, fmt.Errorf("events is empty; known events: %s", strings.Join(Events, ", ")))
	}
	for _, ev := range e.Events {
		if !slices.Contains(Events, ev) {
			errs = append(errs, fmt.Errorf("unknown event %q; known events: %s", ev, strings.Join(Events, ", ")))
			continue
		}
		if !slices.Contains(ep.Events, ev) {
			ep.Events = append(ep.Events, ev)
		}
	}
	return ep, errs
}

// defaultNames names the endpoints the file names not: by their URL's
// host (DefaultName); when another endpoint has that name too, by host
// and path; when that is taken as well, with "-2", "-3", ... in the
// file's order. A file that lists one host twice without names stays
// valid; only names given twice are an error.
func defaultNames(eps []Endpoint) {
	taken := map[string]bool{}
	hosts := map[string]int{}
	for _, e := range eps {
		if e.Name != "" {
			taken[e.Name] = true
		} else {
			hosts[DefaultName(e.URL)]++
		}
	}
	for i, e := range eps {
		if e.Name != "" {
			continue
		}
		n := DefaultName(e.URL)
		if hosts[n] > 1 || taken[n] {
			n = slug(n + "-" + urlPath(e.URL))
		}
		base := n
		for k := 2; taken[n]; k++ {
			suffix := "-" + strconv.Itoa(k)
			n = strings.TrimRight(base[:min(len(base), MaxNameLen-len(suffix))], "-._") + suffix
		}
		taken[n] = true
		eps[i].Name = n
	}
}

func urlPath(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Path)
}

// DefaultName is the name an endpoint gets from its URL: its host, lower
// case, with the port when there is one, as a name (checkName);
// "endpoint" when the URL has no host.
func DefaultName(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return "endpoint"
	}
	n := strings.ToLower(u.Hostname())
	if p := u.Port(); p != "" {
		n += "-" + p
	}
	return slug(n)
}

// slug makes s a name: characters a name may not hold become '-', runs of
// '-' one, trimmed, at most MaxNameLen; "endpoint" when nothing is left.
func slug(s string) string {
	n := strings.Map(func(r rune) rune {
		if nameRune(r) {
			return r
		}
		return '-'
	}, strings.ToLower(s))
	for strings.Contains(n, "--") {
		n = strings.ReplaceAll(n, "--", "-")
	}
	n = strings.Trim(n, "-._")
	if len(n) > MaxNameLen {
		n = strings.TrimRight(n[:MaxNameLen], "-._")
	}
	if n == "" {
		return "endpoint"
	}
	return n
}

func nameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
}

// checkName accepts 1 to MaxNameLen lower-case letters, digits, '-', '_'
// and '.', starting with a letter or digit: a name is typed on the command
// line and is a metric label value.
func checkName(n string) error {
	bad := len(n) > MaxNameLen || !(n[0] >= 'a' && n[0] <= 'z' || n[0] >= '0' && n[0] <= '9')
	for _, r := range n {
		bad = bad || !nameRune(r)
	}
	if bad {
		return fmt.Errorf("name %q is not 1 to %d lower-case letters, digits, '-', '_' or '.', starting with a letter or digit", n, MaxNameLen)
	}
	return nil
}

// DecodeSecret decodes a "whsec_<base64>" secret into its key bytes.
func DecodeSecret(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("secret is missing (whsec_ followed by base64 of 24 to 64 random bytes)")
	}
	if !strings.HasPrefix(s, SecretPrefix) {
		return nil, errors.New("secret does not start with whsec_")
	}
	raw := strings.TrimPrefix(s, SecretPrefix)
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(raw)
	}
	if err != nil {
		return nil, errors.New("secret is not whsec_ followed by standard base64")
	}
	if len(key) < MinSecretBytes {
		return nil, fmt.Errorf("secret is %d bytes; at least %d are required", len(key), MinSecretBytes)
	}
	return key, nil
}
