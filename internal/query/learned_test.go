package query_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
)

// learnedStudents answers a student's state with a learned model: one
// whose swipes liked every school within the budget and disliked the
// rest, so its residual learned a budget gate the weights cannot draw.
type learnedStudents struct {
	query.Students
	model []byte
}

func (l learnedStudents) LearnerState(ctx context.Context, id string) (domain.LearnerState, error) {
	st, err := l.Students.LearnerState(ctx, id)
	st.Model = l.model
	return st, err
}

// The whole model is what every read shows: the stored page and the full
// path say the same learned preferences, the reasons name them, and
// match_score in a list is what GET /match reports.
func TestLearnedPreferencesReachEveryRead(t *testing.T) {
	e := newEnv(t, 300, 0)
	ctx := context.Background()
	st := e.save(t, completeStudent())
	cat := e.Catalog.Current().Catalog
	p := match.NewProfile(st)
	m := match.NewModel(match.SeedWeights(p))
	for i := range cat.Len() {
		np := match.EstimateNetPrice(p, cat, i)
		if !np.Known() || i%3 != 0 {
			continue
		}
		d := match.Dislike
		if np.Amount <= *st.Budget {
			d = match.Like
		}
		m, _ = m.Observe(p, cat, match.SwipeObservation(i, d))
	}
	prefs := m.LearnedPreferences(p, cat)
	require.NotEmpty(t, prefs, "the swipes taught something beyond the weights")
	model, err := m.MarshalBinary()
	require.NoError(t, err)
	svc := e.service(t, learnedStudents{Students: e.Students, model: model}, e.Feeds, 0)

	full, err := svc.Recommendations(ctx, st.ID, 20, 0)
	require.NoError(t, err)
	assert.Equal(t, match.LearnedTexts(prefs), full.LearningState.LearnedPreferences)
	named := 0
	for _, r := range full.Recommendations {
		if len(r.MatchReasons) > 0 && r.MatchReasons[0] == "You tend to like "+prefs[0].Phrase {
			named++
		}
		d, err := svc.MatchDetail(ctx, st.ID, r.SchoolID)
		require.NoError(t, err)
		assert.Equal(t, r.MatchScore, d.OverallScore, "list and detail agree")
	}
	assert.Positive(t, named, "the reasons name what was learned")

	stored, ok := svc.StoredRecommendations(ctx, st.ID, 20, 0, false, query.Prefetched{}, nil)
	require.True(t, ok)
	var doc struct {
		LearningState query.LearningState `json:"learning_state"`
	}
	require.NoError(t, json.Unmarshal(stored, &doc))
	assert.Equal(t, full.LearningState.LearnedPreferences, doc.LearningState.LearnedPreferences, "the stored page says the same")
	again, err := svc.Recommendations(ctx, st.ID, 20, 0)
	require.NoError(t, err)
	assert.Equal(t, full, again, "a read of the stored feed answers what the build did")
}
