package domain_test

import (
	"strings"
	"testing"

	"github.com/collegematch/matching/internal/domain"
)

// FuzzParseMajor: whatever a student types, ParseMajor answers a major key
// or nothing, and what it answers reads back as itself by key and by name.
func FuzzParseMajor(f *testing.F) {
	for _, s := range []string{"computer", "Comp Sci", "Communications", "11.0701", "110701", "11", "PCIP52",
		"Business, Management & Marketing", "pre-med", "biologies", "c", "", "\x00", "ſ", "11..07", strings.Repeat("s", 500)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, ok := domain.ParseMajor(s)
		if !ok {
			if m != "" {
				t.Fatalf("%q: not a major, yet %q", s, m)
			}
			return
		}
		if domain.MajorName(m) == string(m) {
			t.Fatalf("%q gave %q, which is not a key", s, m)
		}
		for _, again := range []string{string(m), domain.MajorName(m)} {
			if got, ok := domain.ParseMajor(again); !ok || got != m {
				t.Fatalf("%q gave %q, but %q gives %q", s, m, again, got)
			}
		}
	})
}
