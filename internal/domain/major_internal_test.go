package domain

import "testing"

// Every key, display name and alias names one major only.
func TestMajorNamesAreUnambiguous(t *testing.T) {
	seen := map[string]Major{}
	add := func(name string, m Major) {
		n := normalizeMajor(name)
		if prev, ok := seen[n]; ok && prev != m {
			t.Errorf("%q names both %s and %s", name, prev, m)
		}
		seen[n] = m
	}
	for _, mj := range Majors {
		add(string(mj.Key), mj.Key)
		add(mj.Name, mj.Key)
	}
	for m, aliases := range majorAliases {
		if MajorName(m) == string(m) {
			t.Errorf("aliases filed under %q, which is not a major", m)
		}
		for _, a := range aliases {
			if normalizeMajor(a) != a {
				t.Errorf("alias %q of %s is not written normalized (%q)", a, m, normalizeMajor(a))
			}
			add(a, m)
		}
	}
}
