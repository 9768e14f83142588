package match

import (
	"github.com/collegematch/matching/internal/domain"
)

// Start is the one derivation of what a student is scored, predicted and
// learned with, used by every part of the service: the profile of
// CategoryStart (the liked categories' majors when the student named none),
// the prior (the profile's seed weights moved by the onboarding category
// swipes) and the model: the stored one; when it does not decode (a model
// of another version, until the learner refolds it), a model centred on
// the stored weights; before any learning, a model centred on the prior.
func Start(st domain.LearnerState) (p Profile, m Model, prior Weights) {
	p, m, prior, _ = StartStored(st)
	return p, m, prior
}

// StartProfile is Start's profile and prior alone, for a caller that
// holds the model already.
func StartProfile(st domain.LearnerState) (p Profile, prior Weights) {
	prefs := make([]CategoryPreference, len(st.Categories))
	for i, c := range st.Categories {
		prefs[i] = CategoryPreferenceFrom(c.CategoryID, c.Direction)
	}
	return CategoryStart(NewProfile(st.Student), prefs)
}

// StartStored is Start, and also reports whether a stored model was there
// and did not decode (the learner refolds such a model from the history).
func StartStored(st domain.LearnerState) (p Profile, m Model, prior Weights, undecodable bool) {
	p, prior = StartProfile(st)
	decoded := false
	if st.Model != nil {
		var err error
		m, err = DecodeModel(st.Model)
		decoded = err == nil
	}
	switch {
	case decoded:
	case st.Weights != nil:
		m = NewModel(WeightsFromMap(st.Weights))
	default:
		m = NewModel(prior)
	}
	return p, m, prior, st.Model != nil && !decoded
}
