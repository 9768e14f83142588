package httpapi

import (
	"github.com/collegematch/matching/internal/offline"
	"github.com/collegematch/matching/internal/query"
)

// The shape of every request body the API takes (checkShape): its fields
// and the most entries of each array, checked before the body is decoded.
var (
	recommendationsBody = object("student_id", "limit", "offset")
	swipeBody           = object("student_id", "school_id", "direction", "interaction_type", "time_spent", "swipe_id")
	feedbackBody        = object("student_id", "school_id", "reason", "comment")
	categorySwipeBody   = object("student_id", "category_id", "direction")
	continuousBody      = object("student_id", "limit",
		field{"swipes", arrayOf(query.MaxContinuousSwipes, object(continuousSwipeFields))})
	batchSchoolsBody = object(field{"school_ids", arrayOf(maxBatchSchools, nil)})
	// A change's own fields are judged change by change (parseChange): a
	// bad change is rejected alone, not the push.
	syncPushBody   = object("student_id", field{"changes", arrayOf(offline.MaxChanges, nil)})
	syncPullBody   = object("student_id", "cursor")
	onboardingBody = object(onboardingScalarFields,
		field{"test_scores", object("sat", "act")},
		field{"home", object("lat", "lon")},
		field{"intended_majors", arrayOf(maxIntendedMajors, nil)})
)
