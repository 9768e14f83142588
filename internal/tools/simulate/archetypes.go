package simulate

import "github.com/collegematch/matching/internal/match"

// ServiceArchetypes are the service's onboarding categories
// (match.Archetypes) as cold-start priors: a student who liked category c
// starts from match.CategoryStart with a right swipe on c, the profile and
// prior weights the read side uses before any learning.
func ServiceArchetypes() []Archetype {
	var out []Archetype
	for _, a := range match.Archetypes() {
		prefs := []match.CategoryPreference{{ID: a.ID, Liked: true}}
		out = append(out, Archetype{
			Name:  a.Name,
			Start: func(p match.Profile) (match.Profile, match.Weights) { return match.CategoryStart(p, prefs) },
		})
	}
	return out
}
