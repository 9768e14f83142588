package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
	"github.com/collegematch/matching/internal/query"
)

// Categories is the read side of onboarding categories (query.Service).
type Categories interface {
	// Categories is the six categories with their example schools, from
	// the catalogue held in memory.
	Categories() query.CategoryList
}

// CategorySwipes records onboarding category swipes (command.Categories):
// the latest direction per student and category; it returns the student's
// prior weights after the swipe. An unknown or erased student is
// INVALID_STUDENT_ID.
type CategorySwipes interface {
	SwipeCategory(ctx context.Context, studentID, categoryID, direction string) (map[string]float64, error)
}

// handleCategorySchools answers GET /v2/onboarding/category-schools.
func handleCategorySchools(c Categories) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		encode(w, http.StatusOK, c.Categories())
	})
}

// categoryIDs are the valid category_id values, in display order.
var categoryIDs = func() []string {
	as := match.Archetypes()
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = string(a.ID)
	}
	return out
}()

// categorySwipeRequest is the body of POST /v2/onboarding/category-swipe.
// Values are kept raw so that each problem is reported against its field.
type categorySwipeRequest struct {
	StudentID  json.RawMessage `json:"student_id"`
	CategoryID json.RawMessage `json:"category_id"`
	Direction  json.RawMessage `json:"direction"`
}

// stringField reads a required string field; the problem is empty when it
// is one.
func stringField(raw json.RawMessage) (string, string) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", "is required"
	}
	s, ok := jsonString(raw)
	if !ok {
		return "", "must be a string"
	}
	return s, ""
}

// check validates the request: every problem at once in details.fields,
// and the valid ids in details.category_ids when category_id is wrong.
func (q categorySwipeRequest) check() (categoryID, direction string, err error) {
	problems := map[string]string{}
	if id, p := stringField(q.StudentID); p != "" {
		problems["student_id"] = p
	} else if !isUUID(id) {
		problems["student_id"] = "must be a UUID"
	}
	categoryID, p := stringField(q.CategoryID)
	if p == "" {
		if _, ok := match.LookupArchetype(categoryID); !ok {
			p = "must be one of " + strings.Join(categoryIDs, ", ")
		}
	}
	if p != "" {
		problems["category_id"] = p
	}
	direction, p = stringField(q.Direction)
	if p == "" && direction != "left" && direction != "right" {
		p = "must be left or right"
	}
	if p != "" {
		problems["direction"] = p
	}
	if len(problems) == 0 {
		return categoryID, direction, nil
	}
	e := domain.Invalid(summarize(problems), problems)
	if _, bad := problems["category_id"]; bad {
		e.Details["category_ids"] = categoryIDs
	}
	return "", "", e
}

// categorySwipeResponse is the answer of POST /v2/onboarding/category-swipe.
type categorySwipeResponse struct {
	Success    bool   `json:"success"`
	CategoryID string `json:"category_id"`
	Direction  string `json:"direction"`
	// PreferenceWeights are the student's prior weights after the swipe.
	PreferenceWeights map[string]float64 `json:"preference_weights"`
}

// readCategorySwipe decodes and validates POST /v2/onboarding/category-swipe.
func readCategorySwipe(r *http.Request) (categoryID, direction string, err error) {
	req, err := decode[categorySwipeRequest](r, categorySwipeBody)
	if err != nil {
		return "", "", err
	}
	return req.check()
}

// handleCategorySwipe answers POST /v2/onboarding/category-swipe: it stores
// the swipe, drops the student's stored feed (the next recommendations are
// ranked with the new prior) and returns the prior weights now.
func handleCategorySwipe(log *slog.Logger, s CategorySwipes) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		categoryID, direction, err := readCategorySwipe(r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		weights, err := s.SwipeCategory(r.Context(), studentFrom(r.Context()), categoryID, direction)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		encode(w, http.StatusOK, categorySwipeResponse{Success: true, CategoryID: categoryID, Direction: direction,
			PreferenceWeights: weights})
	})
}
