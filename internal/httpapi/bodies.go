package httpapi

import (
	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/query"
)

// The shape of every request body the API takes (checkShape): its fields
// and the most entries of each array, checked before the body is decoded.
var (
	recommendationsBody = object("student_id", "limit", "offset")
	swipeBody           = object(swipeFields)
	feedbackBody        = object("student_id", "school_id", "reason", "comment")
	categorySwipeBody   = object("student_id", "category_id", "direction")
	continuousBody      = object("student_id", "limit",
		field{"swipes", arrayOf(query.MaxContinuousSwipes, object(continuousSwipeFields))})
	batchSchoolsBody = object(field{"school_ids", arrayOf(maxBatchSchools, nil)})
	// A change's own fields are judged change by change (parseChange): a
	// bad change is rejected alone, not the push.
	syncPushBody   = object("student_id", field{"changes", arrayOf(command.MaxChanges, nil)})
	syncPullBody   = object("student_id", "cursor")
	onboardingBody = object(onboardingScalarFields,
		field{"test_scores", object("sat", "act")},
		field{"home", object("lat", "lon")},
		field{"intended_majors", arrayOf(maxIntendedMajors, nil)})
)

// swipeFields are the fields of a swipe's body, in the order of
// swipeRequest's.
var swipeFields = []string{"student_id", "school_id", "direction", "interaction_type", "time_spent", "swipe_id"}

// bodyShapes are the shapes by route pattern (every route with a body is
// a POST). actingStudent checks a body against its route's shape as soon
// as it is read: a body that breaks a limit that stops the reading (an
// array over its length, nesting too deep) is refused there, before the
// body is walked for its student_id; the handler's decoder checks the
// rest.
var bodyShapes = map[string]*shape{
	"/recommendations":              recommendationsBody,
	"/v2/recommendations":           recommendationsBody,
	"/continuous-feed":              continuousBody,
	"/swipe":                        swipeBody,
	"/feedback":                     feedbackBody,
	"/v2/onboarding/category-swipe": categorySwipeBody,
	"/m/batch/schools":              batchSchoolsBody,
	"/m/sync/pull":                  syncPullBody,
	"/m/sync/push":                  syncPushBody,
	"/v2/onboarding/minimal":        onboardingBody,
}
