package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
)

// TestOpenAPICategoriesAndV2 checks the onboarding categories, category
// swipes and POST /v2/recommendations against the document: successes,
// 400s and 404s, and altered answers are rejected.
func TestOpenAPICategoriesAndV2(t *testing.T) {
	c := newOAContract(t)
	tok := token(t, "", false)
	categories := oaRequest{method: http.MethodGet, path: "/v2/onboarding/category-schools", tok: tok}

	t.Run("GET /v2/onboarding/category-schools 200, empty catalogue", func(t *testing.T) {
		res := c.valid(t, categories)
		require.Equal(t, http.StatusOK, res.Status)
		require.Nil(t, res.Body["categories"].([]any)[0].(map[string]any)["example_school"])
	})

	c.api.seedSchools(t, 2500)
	student, stok := c.api.newStudent(t, minimalProfile())
	unknown := uuid.NewString()
	utok := token(t, unknown, false)
	swipe := func(tok string, body any) oaRequest {
		return oaRequest{method: http.MethodPost, path: "/v2/onboarding/category-swipe", tok: tok, body: body}
	}
	v2 := func(tok string, body any) oaRequest {
		return oaRequest{method: http.MethodPost, path: "/v2/recommendations", tok: tok, body: body}
	}

	cats := c.valid(t, categories)
	require.Equal(t, http.StatusOK, cats.Status)
	liked := c.valid(t, swipe(stok, map[string]any{"student_id": student, "category_id": "liberal-arts", "direction": "right"}))
	require.Equal(t, http.StatusOK, liked.Status)
	recs := c.valid(t, v2(stok, map[string]any{"student_id": student, "limit": 5, "offset": 2}))
	require.Equal(t, http.StatusOK, recs.Status)
	require.Len(t, recs.Body["recommendations"], 5)

	t.Run("POST /v2/onboarding/category-swipe 400 and 404", func(t *testing.T) {
		for _, body := range []any{
			map[string]any{"student_id": student, "category_id": "ivy-league", "direction": "right"},
			map[string]any{"student_id": student, "category_id": "liberal-arts", "direction": "up"},
			map[string]any{"student_id": student, "category_id": "liberal-arts"},
			map[string]any{"student_id": student, "category_id": "liberal-arts", "direction": "left", "extra": 1},
			`{"student_id": `,
		} {
			res := c.send(t, swipe(stok, body))
			require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Raw)
			require.Error(t, res.reqErr, "the document rejects what the server rejects: %v", body)
			require.NoError(t, res.resErr, "the 400 matches the document: %s", res.Raw)
		}
		res := c.valid(t, swipe(utok, map[string]any{"student_id": unknown, "category_id": "tech-engineering", "direction": "left"}))
		require.Equal(t, http.StatusNotFound, res.Status)
		require.Equal(t, domain.CodeInvalidStudentID, res.errorCode())
	})

	t.Run("POST /v2/recommendations 400 and 404", func(t *testing.T) {
		for _, body := range []any{
			map[string]any{"student_id": student, "limit": 0},
			map[string]any{"student_id": student, "offset": "1"},
			map[string]any{"student_id": student, "extra": true},
		} {
			res := c.send(t, v2(stok, body))
			require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Raw)
			require.Error(t, res.reqErr)
			require.NoError(t, res.resErr, "the 400 matches the document: %s", res.Raw)
		}
		res := c.valid(t, v2(utok, map[string]any{"student_id": unknown}))
		require.Equal(t, http.StatusNotFound, res.Status)
	})

	t.Run("altered answers are rejected", func(t *testing.T) {
		category := func(b map[string]any) map[string]any { return b["categories"].([]any)[0].(map[string]any) }
		cases := map[string]struct {
			call  oaCall
			alter func(b map[string]any)
		}{
			"five categories":     {cats, func(b map[string]any) { b["categories"] = b["categories"].([]any)[:5] }},
			"unknown category id": {cats, func(b map[string]any) { category(b)["id"] = "ivy-league" }},
			"example without image": {cats, func(b map[string]any) {
				delete(category(b)["example_school"].(map[string]any), "image_url")
			}},
			"example image not a URL": {cats, func(b map[string]any) {
				category(b)["example_school"].(map[string]any)["image_url"] = "campus.jpg"
			}},
			"category without example key": {cats, func(b map[string]any) { delete(category(b), "example_school") }},
			"swipe without weights":        {liked, func(b map[string]any) { delete(b, "preference_weights") }},
			"swipe weight over 1": {liked, func(b map[string]any) {
				b["preference_weights"].(map[string]any)["campus_weight"] = 1.5
			}},
			"swipe direction unknown": {liked, func(b map[string]any) { b["direction"] = "up" }},
			"v2 distance negative": {recs, func(b map[string]any) {
				b["recommendations"].([]any)[0].(map[string]any)["distance"] = -1
			}},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				raw, err := json.Marshal(tc.call.Body)
				require.NoError(t, err)
				var b map[string]any
				require.NoError(t, json.Unmarshal(raw, &b))
				tc.alter(b)
				raw, err = json.Marshal(b)
				require.NoError(t, err)
				req, err := http.NewRequest(tc.call.route.Method, c.api.URL+tc.call.route.Path, nil)
				require.NoError(t, err)
				err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
					RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, Route: tc.call.route, Options: oaFilterOptions()},
					Status:                 tc.call.Status,
					Header:                 tc.call.Header,
					Body:                   io.NopCloser(bytes.NewReader(raw)),
					Options:                oaFilterOptions(),
				})
				require.Error(t, err)
			})
		}
	})
}
