package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
)

// TestOpenAPIReadSide checks the read side's answers against the document:
// successes, 304, 400s, 404s and 422.
func TestOpenAPIReadSide(t *testing.T) {
	c := newOAContract(t)
	schools := c.api.seedSchools(t, 120)
	student, tok := c.api.newStudent(t, completeProfile())
	partial, ptok := c.api.newStudent(t, map[string]any{"name": "P", "email": "p@example.com", "graduation_year": "2027", "gpa": 3})
	unknown := uuid.NewString()
	utok := token(t, unknown, false)
	recs := func(tok string, body any) oaRequest {
		return oaRequest{method: http.MethodPost, path: "/recommendations", tok: tok, body: body}
	}
	get := func(tok, path string, header map[string]string) oaRequest {
		return oaRequest{method: http.MethodGet, path: path, tok: tok, header: header}
	}
	batch := func(body any) oaRequest {
		return oaRequest{method: http.MethodPost, path: "/m/batch/schools", tok: tok, body: body}
	}

	t.Run("POST /recommendations 200", func(t *testing.T) {
		res := c.valid(t, recs(tok, map[string]any{"student_id": student, "limit": 7, "offset": 3}))
		require.Equal(t, http.StatusOK, res.Status)
		require.Len(t, res.Body["recommendations"], 7)
		res = c.valid(t, recs(tok, map[string]any{"student_id": student, "offset": 500}))
		require.Equal(t, http.StatusOK, res.Status)
	})
	t.Run("POST /recommendations 400", func(t *testing.T) {
		for _, body := range []any{
			map[string]any{"student_id": student, "limit": 0},
			map[string]any{"student_id": student, "offset": "1"},
			map[string]any{"student_id": student, "extra": true},
			`{"student_id": `,
		} {
			res := c.send(t, recs(tok, body))
			require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Raw)
			require.Error(t, res.reqErr, "the document rejects what the server rejects: %v", body)
			require.NoError(t, res.resErr, "the 400 matches the document: %s", res.Raw)
		}
	})
	t.Run("POST /recommendations 404 and 422", func(t *testing.T) {
		res := c.valid(t, recs(utok, map[string]any{"student_id": unknown}))
		require.Equal(t, http.StatusNotFound, res.Status)
		require.Equal(t, domain.CodeInvalidStudentID, res.errorCode())
		res = c.valid(t, recs(ptok, map[string]any{"student_id": partial}))
		require.Equal(t, http.StatusUnprocessableEntity, res.Status)
		require.Equal(t, domain.CodeMissingProfile, res.errorCode())
	})

	t.Run("GET /match 200, 400, 404", func(t *testing.T) {
		res := c.valid(t, get(tok, "/match/"+student+"/"+schools[4].ID, nil))
		require.Equal(t, http.StatusOK, res.Status)
		res = c.valid(t, get(ptok, "/match/"+partial+"/"+schools[4].ID, nil))
		require.Equal(t, http.StatusOK, res.Status, "an incomplete profile gets a detail")
		res = c.valid(t, get(tok, "/match/"+student+"/"+uuid.NewString(), nil))
		require.Equal(t, domain.CodeInvalidSchoolID, res.errorCode())
		res = c.valid(t, get(utok, "/match/"+unknown+"/"+schools[4].ID, nil))
		require.Equal(t, domain.CodeInvalidStudentID, res.errorCode())
		res = c.send(t, get(tok, "/match/"+student+"/school-4", nil))
		require.Equal(t, http.StatusBadRequest, res.Status)
		require.Error(t, res.reqErr)
		require.NoError(t, res.resErr, "the 400 matches the document: %s", res.Raw)
	})

	t.Run("GET /m/recommendations 200, 304, 404, 422", func(t *testing.T) {
		path := "/m/recommendations/" + student
		res := c.valid(t, get(tok, path, nil))
		require.Equal(t, http.StatusOK, res.Status)
		etag := res.Header.Get("ETag")
		res = c.valid(t, get(tok, path, map[string]string{"If-None-Match": etag}))
		require.Equal(t, http.StatusNotModified, res.Status)
		res = c.valid(t, get(tok, path, map[string]string{"If-None-Match": `"stale"`}))
		require.Equal(t, http.StatusOK, res.Status)
		res = c.valid(t, get(utok, "/m/recommendations/"+unknown, nil))
		require.Equal(t, http.StatusNotFound, res.Status)
		res = c.valid(t, get(ptok, "/m/recommendations/"+partial, nil))
		require.Equal(t, http.StatusUnprocessableEntity, res.Status)
	})

	t.Run("POST /m/batch/schools 200 and 400", func(t *testing.T) {
		res := c.valid(t, batch(map[string]any{"school_ids": []string{schools[0].ID, uuid.NewString(), schools[1].ID}}))
		require.Equal(t, http.StatusOK, res.Status)
		require.Len(t, res.Body["r"], 2)
		ids := make([]string, 101)
		for i := range ids {
			ids[i] = uuid.NewString()
		}
		for _, body := range []any{
			map[string]any{"school_ids": ids},
			map[string]any{"school_ids": []string{strings.Repeat("x", 36)}},
			map[string]any{},
		} {
			res := c.send(t, batch(body))
			require.Equal(t, http.StatusBadRequest, res.Status, "%s", res.Raw)
			require.Error(t, res.reqErr)
			require.NoError(t, res.resErr, "the 400 matches the document: %s", res.Raw)
		}
	})

	t.Run("altered answers are rejected", func(t *testing.T) {
		rec := c.valid(t, recs(tok, map[string]any{"student_id": student, "limit": 2}))
		detail := c.valid(t, get(tok, "/match/"+student+"/"+schools[4].ID, nil))
		compact := c.valid(t, get(tok, "/m/recommendations/"+student, nil))
		bat := c.valid(t, batch(map[string]any{"school_ids": []string{schools[0].ID}}))
		item := func(b map[string]any, key string) map[string]any {
			return b[key].([]any)[0].(map[string]any)
		}
		cases := map[string]struct {
			call  oaCall
			alter func(b map[string]any)
		}{
			"item without is_probe":    {rec, func(b map[string]any) { delete(item(b, "recommendations"), "is_probe") }},
			"match_score over 1":       {rec, func(b map[string]any) { item(b, "recommendations")["match_score"] = 1.5 }},
			"grade outside the table":  {rec, func(b map[string]any) { item(b, "recommendations")["match_grade"] = "E" }},
			"negative distance":        {rec, func(b map[string]any) { item(b, "recommendations")["distance"] = -3 }},
			"school control unknown":   {rec, func(b map[string]any) { item(b, "recommendations")["school"].(map[string]any)["control"] = "state" }},
			"metadata without version": {rec, func(b map[string]any) { delete(b["metadata"].(map[string]any), "algorithm_version") }},
			"weights missing a key": {rec, func(b map[string]any) {
				delete(b["learning_state"].(map[string]any)["preference_weights"].(map[string]any), "cost_weight")
			}},
			"detail without a factor": {detail, func(b map[string]any) {
				delete(b["components"].(map[string]any)["campus"].(map[string]any)["factors"].(map[string]any), "size_fit")
			}},
			"detail band unknown":        {detail, func(b map[string]any) { b["admission_band"] = "likely" }},
			"detail net price no source": {detail, func(b map[string]any) { b["net_price"] = map[string]any{"amount": 100} }},
			"compact score 0-1":          {compact, func(b map[string]any) { item(b, "r")["s"] = 0.87 }},
			"compact without grade":      {compact, func(b map[string]any) { delete(item(b, "r"), "g") }},
			"compact probe false":        {compact, func(b map[string]any) { item(b, "r")["p"] = false }},
			"batch without missing":      {bat, func(b map[string]any) { delete(b, "missing") }},
			"batch admission as share":   {bat, func(b map[string]any) { item(b, "r")["ar"] = 0.4 }},
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
		t.Run("a bad ETag header", func(t *testing.T) {
			h := compact.Header.Clone()
			h.Set("ETag", "unquoted")
			req, err := http.NewRequest(compact.route.Method, c.api.URL+compact.route.Path, nil)
			require.NoError(t, err)
			err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
				RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, Route: compact.route, Options: oaFilterOptions()},
				Status:                 compact.Status, Header: h, Body: io.NopCloser(bytes.NewReader(compact.Raw)), Options: oaFilterOptions(),
			})
			require.Error(t, err)
		})
	})
}
