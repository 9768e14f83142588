package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/command"
	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/httpapi"
	"github.com/collegematch/matching/internal/metrics"
	"github.com/collegematch/matching/internal/query"
	"github.com/collegematch/matching/internal/ratelimit"
	"github.com/collegematch/matching/internal/testutil"
)

// openAPIPath is the API document, relative to this package.
const openAPIPath = "../../api/openapi.yaml"

// oaNotImplementedMarker is the line an operation's description carries
// exactly while the endpoint answers 501.
const oaNotImplementedMarker = "Not implemented yet: answers 501 NOT_IMPLEMENTED"

var oaDefineFormats sync.Once

// loadOpenAPI loads the document and validates it as OpenAPI 3.1, with
// formats and examples checked.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	oaDefineFormats.Do(func() {
		openapi3.DefineStringFormatValidator("uuid", openapi3.NewRegexpFormatValidator(
			`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`))
		openapi3.DefineStringFormatValidator("email", openapi3.NewRegexpFormatValidator(openapi3.FormatOfStringForEmail))
		openapi3.DefineStringFormatValidator("uri", openapi3.NewCallbackValidator(func(s string) error {
			u, err := url.Parse(s)
			if err != nil || u.Scheme == "" || u.Host == "" {
				return fmt.Errorf("not an absolute URI: %q", s)
			}
			return nil
		}))
	})
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(openAPIPath)
	require.NoError(t, err, "load %s", openAPIPath)
	require.True(t, doc.IsOpenAPI31OrLater(), "the document is OpenAPI 3.1, got %q", doc.OpenAPI)
	require.NoError(t, doc.Validate(loader.Context,
		openapi3.IsOpenAPI31OrLater(),
		openapi3.EnableSchemaFormatValidation(),
		openapi3.EnableSchemaDefaultsValidation(),
		openapi3.EnableExamplesValidation(),
	), "the document is valid OpenAPI 3.1")
	return doc
}

// oaOperations lists every operation of the document as "METHOD /path".
func oaOperations(doc *openapi3.T) map[string]*openapi3.Operation {
	out := map[string]*openapi3.Operation{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			out[method+" "+path] = op
		}
	}
	return out
}

func oaSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// oaRateGroup is the operation's x-ratelimit-group.
func oaRateGroup(op *openapi3.Operation) string {
	switch v := op.Extensions["x-ratelimit-group"].(type) {
	case string:
		return v
	case json.RawMessage:
		var s string
		_ = json.Unmarshal(v, &s)
		return s
	}
	return ""
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc := loadOpenAPI(t)

	require.Contains(t, doc.Components.SecuritySchemes, "bearerAuth")
	bearer := doc.Components.SecuritySchemes["bearerAuth"].Value
	require.Equal(t, "http", bearer.Type)
	require.Equal(t, "bearer", bearer.Scheme)
	require.Equal(t, "JWT", bearer.BearerFormat)

	codes := doc.Components.Schemas["Error"].Value.Properties["error"].Value.Properties["code"].Value.Enum
	for _, c := range []string{domain.CodeInvalidRequest, domain.CodeUnauthorized, domain.CodeForbidden,
		domain.CodeNotFound, domain.CodeMethodNotAllowed, domain.CodeInvalidStudentID, domain.CodeInvalidSchoolID,
		domain.CodeMissingProfile, domain.CodeRateLimited, domain.CodeServiceUnavailable,
		domain.CodeNotImplemented, domain.CodeInternal} {
		require.Contains(t, codes, c, "Error.code lists %s", c)
	}

	ops := oaOperations(doc)
	require.Len(t, ops, 14, "the document describes the 14 endpoints of the specification")
	for _, key := range oaSortedKeys(ops) {
		op := ops[key]
		t.Run(key, func(t *testing.T) {
			require.NotEmpty(t, op.OperationID)
			require.NotNil(t, op.Security, "operation states its security")
			require.Equal(t, openapi3.SecurityRequirements{{"bearerAuth": []string{}}}, *op.Security)
			require.Contains(t, []string{"recommendations", "swipes", "batch", "default"}, oaRateGroup(op),
				"x-ratelimit-group names the operation's rate-limit group")

			var hasRequestID bool
			for _, p := range op.Parameters {
				hasRequestID = hasRequestID || (p.Value.In == "header" && p.Value.Name == "X-Request-ID")
			}
			require.True(t, hasRequestID, "X-Request-ID request header is documented")

			require.True(t, op.Responses.Status(200) != nil || op.Responses.Status(201) != nil, "a success response is documented")
			for _, code := range []int{401, 429, 500, 503} {
				require.NotNil(t, op.Responses.Status(code), "response %d is documented", code)
			}
			for code, ref := range op.Responses.Map() {
				res := ref.Value
				require.Contains(t, res.Headers, "X-Request-ID", "response %s documents X-Request-ID", code)
				if code == "401" || code == "403" {
					continue
				}
				for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
					require.Contains(t, res.Headers, h, "response %s documents %s", code, h)
				}
				if code == "429" {
					require.Contains(t, res.Headers, "Retry-After")
				}
			}
			if op.RequestBody != nil {
				require.NotNil(t, op.Responses.Status(400), "an operation with a body documents 400")
				schema := op.RequestBody.Value.Content.Get("application/json").Schema.Value
				require.NotNil(t, schema.AdditionalProperties.Has, "request body %s sets additionalProperties", key)
				require.False(t, *schema.AdditionalProperties.Has, "request body %s rejects unknown fields, as the server does", key)
			}
			unimplemented := strings.Contains(op.Description, oaNotImplementedMarker)
			require.Equal(t, unimplemented, op.Responses.Status(501) != nil,
				"an operation documents 501 exactly when its description says it is not implemented")
		})
	}
}

// oaAllowAll and oaNoOnboarding let NewServer build its router without
// PostgreSQL or Redis; no request is served through them.
type oaAllowAll struct{}

func (oaAllowAll) Allow(context.Context, ratelimit.Group, string) (ratelimit.Decision, error) {
	return ratelimit.Decision{Allowed: true}, nil
}

func (oaAllowAll) AllowN(_ context.Context, _ ratelimit.Group, _ string, n int) (ratelimit.Decision, error) {
	return ratelimit.Decision{Allowed: true, Granted: n}, nil
}

func (oaAllowAll) AllowAtMost(_ context.Context, _ ratelimit.Group, _ string, n int) (ratelimit.Decision, error) {
	return ratelimit.Decision{Allowed: true, Granted: n}, nil
}

type oaNoOnboarding struct{}

func (oaNoOnboarding) SaveProfile(context.Context, string, domain.ProfilePatch) (domain.Student, bool, error) {
	return domain.Student{}, false, errors.New("not used")
}

type oaNoQueries struct{}

func (oaNoQueries) Recommendations(context.Context, string, int, int) (query.RecommendationsPage, error) {
	return query.RecommendationsPage{}, errors.New("not used")
}

func (oaNoQueries) RecommendationsV2(context.Context, string, int, int) (query.RecommendationsPage, error) {
	return query.RecommendationsPage{}, errors.New("not used")
}

func (oaNoQueries) StoredRecommendations(context.Context, string, int, int, bool, query.Prefetched, []byte) ([]byte, bool) {
	return nil, false
}

func (oaNoQueries) PageRead(string, int, int) *query.PageRead { return nil }

func (oaNoQueries) MatchDetail(context.Context, string, string) (query.MatchDetailView, error) {
	return query.MatchDetailView{}, errors.New("not used")
}

func (oaNoQueries) CompactRead(string) *query.CompactRead { return nil }

func (oaNoQueries) CompactFeed(context.Context, string, query.Prefetched) (query.CompactPage, error) {
	return query.CompactPage{}, errors.New("not used")
}

func (oaNoQueries) Schools(context.Context, []string) query.BatchSchools { return query.BatchSchools{} }

type oaNoCategories struct{}

func (oaNoCategories) Categories() query.CategoryList { return query.CategoryList{} }

func (oaNoCategories) SwipeCategory(context.Context, string, string, string) (map[string]float64, error) {
	return nil, errors.New("not used")
}

type oaNoSwipes struct{}

func (oaNoSwipes) Record(context.Context, command.SwipeInput) (command.SwipeResult, error) {
	return command.SwipeResult{}, errors.New("not used")
}

type oaNoFeedback struct{}

func (oaNoFeedback) Record(context.Context, command.FeedbackInput) (command.FeedbackResult, error) {
	return command.FeedbackResult{}, errors.New("not used")
}

func TestOpenAPIRoutesMatchRouter(t *testing.T) {
	doc := loadOpenAPI(t)
	verifier, err := auth.NewVerifier(context.Background(), auth.VerifierOptions{HS256Secret: testSecret})
	require.NoError(t, err)
	h := httpapi.NewServer(httpapi.Deps{
		Log:            testutil.Logger(t),
		Metrics:        metrics.NewHTTP(prometheus.NewRegistry()),
		Verifier:       verifier,
		Limiter:        oaAllowAll{},
		Onboarding:     oaNoOnboarding{},
		Queries:        oaNoQueries{},
		Categories:     oaNoCategories{},
		CategorySwipes: oaNoCategories{},
		Swipes:         oaNoSwipes{},
		Feedback:       oaNoFeedback{},
		Version:        "test",
	})
	routes, ok := h.(chi.Routes)
	require.True(t, ok, "NewServer returns a chi router (%T)", h)

	registered := map[string]bool{}
	require.NoError(t, chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		registered[method+" "+route] = true
		return nil
	}))
	documented := map[string]bool{}
	for key := range oaOperations(doc) {
		documented[key] = true
	}
	require.Equal(t, oaSortedKeys(documented), oaSortedKeys(registered),
		"every registered route is documented and every documented operation is registered")
}

// oaContract sends real requests to the router and checks each request and
// response against the document.
type oaContract struct {
	doc    *openapi3.T
	router routers.Router
	api    *testAPI
	limits config.RateLimits
}

func newOAContract(t *testing.T) *oaContract {
	t.Helper()
	doc := loadOpenAPI(t)
	// The test server listens on its own address; match operations on any host.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	require.NoError(t, err)
	cfg, err := config.Load(func(string) string { return "" }, config.RoleCLI)
	require.NoError(t, err)
	return &oaContract{doc: doc, router: router, api: newTestAPI(t), limits: cfg.RateLimits}
}

func oaFilterOptions() *openapi3filter.Options {
	return &openapi3filter.Options{
		IncludeResponseStatus: true, // a status the document does not list fails
		SkipSettingDefaults:   true,
		MultiError:            true,
		AuthenticationFunc: func(_ context.Context, in *openapi3filter.AuthenticationInput) error {
			if in.SecuritySchemeName != "bearerAuth" {
				return fmt.Errorf("unknown security scheme %q", in.SecuritySchemeName)
			}
			scheme, tok, ok := strings.Cut(in.RequestValidationInput.Request.Header.Get("Authorization"), " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
				return errors.New("no bearer token")
			}
			return nil
		},
	}
}

// oaCall is one checked exchange.
type oaCall struct {
	result
	route  *routers.Route // nil when the document has no such operation
	reqErr error          // the request against the document
	resErr error          // the response against the document
}

type oaRequest struct {
	method, path, tok string
	body              any // a string is sent as is, anything else as JSON
	header            map[string]string
}

func (c *oaContract) send(t *testing.T, rq oaRequest) oaCall {
	t.Helper()
	var raw []byte
	switch b := rq.body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	default:
		var err error
		raw, err = json.Marshal(b)
		require.NoError(t, err)
	}
	newReq := func() *http.Request {
		var rd io.Reader = http.NoBody
		if raw != nil {
			rd = bytes.NewReader(raw)
		}
		req, err := http.NewRequest(rq.method, c.api.URL+rq.path, rd)
		require.NoError(t, err)
		if raw != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if rq.tok != "" {
			req.Header.Set("Authorization", "Bearer "+rq.tok)
		}
		for k, v := range rq.header {
			req.Header.Set(k, v)
		}
		return req
	}

	var out oaCall
	ctx := context.Background()
	opts := oaFilterOptions()
	check := newReq()
	route, params, findErr := c.router.FindRoute(check)
	var in *openapi3filter.RequestValidationInput
	if findErr == nil {
		out.route = route
		in = &openapi3filter.RequestValidationInput{Request: check, PathParams: params, Route: route, Options: opts}
		out.reqErr = openapi3filter.ValidateRequest(ctx, in)
	} else {
		out.reqErr = findErr
	}

	res, err := http.DefaultClient.Do(newReq())
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out.result = result{Status: res.StatusCode, Header: res.Header, Raw: body}
	if len(body) > 0 {
		require.NoError(t, json.Unmarshal(body, &out.Body), "the response body is JSON: %s", body)
	}
	require.NotEmpty(t, res.Header.Get("X-Request-ID"), "every response carries X-Request-ID")

	if in != nil {
		out.resErr = openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{
			RequestValidationInput: in,
			Status:                 res.StatusCode,
			Header:                 res.Header,
			Body:                   io.NopCloser(bytes.NewReader(body)),
			Options:                opts,
		})
		// Answers from the handler (and 429) come after counting; errors found
		// before it (401, 403, some 400) carry no rate-limit headers.
		counted := res.StatusCode < 300 || res.StatusCode == http.StatusNotImplemented ||
			res.StatusCode == http.StatusTooManyRequests
		if out.resErr == nil && counted {
			out.resErr = c.checkRateHeaders(route.Operation, res.Header)
		}
	}
	return out
}

// checkRateHeaders checks that a counted response carries the X-RateLimit-*
// headers with the allowance of the operation's documented group.
func (c *oaContract) checkRateHeaders(op *openapi3.Operation, h http.Header) error {
	want := map[string]config.Rate{
		"recommendations": c.limits.Recommendations, "swipes": c.limits.Swipes,
		"batch": c.limits.Batch, "default": c.limits.Default,
	}[oaRateGroup(op)]
	for _, name := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if _, err := strconv.ParseInt(h.Get(name), 10, 64); err != nil {
			return fmt.Errorf("%s is %q, want an integer", name, h.Get(name))
		}
	}
	if got := h.Get("X-RateLimit-Limit"); got != strconv.Itoa(want.N) {
		return fmt.Errorf("X-RateLimit-Limit is %s, want %d (group %s)", got, want.N, oaRateGroup(op))
	}
	return nil
}

// valid sends a request that must match the document and checks that the
// response does too.
func (c *oaContract) valid(t *testing.T, rq oaRequest) oaCall {
	t.Helper()
	res := c.send(t, rq)
	require.NotNil(t, res.route, "%s %s is a documented operation", rq.method, rq.path)
	require.NoError(t, res.reqErr, "the request matches the document")
	require.NoError(t, res.resErr, "the %d response matches the document: %s", res.Status, res.Raw)
	return res
}

// errorSchemaCheck validates v against the document's Error schema.
func (c *oaContract) errorSchemaCheck(v any) error {
	return c.doc.Components.Schemas["Error"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse())
}

// oaSamples holds one request per documented operation that is valid
// against the document, for a fresh student.
func oaSamples(student string) map[string]oaRequest {
	school := uuid.NewString()
	return map[string]oaRequest{
		"POST /recommendations": {method: http.MethodPost, path: "/recommendations",
			body: map[string]any{"student_id": student, "limit": 5, "offset": 0}},
		"POST /v2/recommendations": {method: http.MethodPost, path: "/v2/recommendations",
			body: map[string]any{"student_id": student, "limit": 10}},
		"POST /continuous-feed": {method: http.MethodPost, path: "/continuous-feed",
			body: map[string]any{"student_id": student, "limit": 10,
				"swipes": []any{map[string]any{"school_id": school, "direction": "right", "time_spent": 4.5}}}},
		"GET /match/{student_id}/{school_id}": {method: http.MethodGet, path: "/match/" + student + "/" + school},
		"GET /m/recommendations/{student_id}": {method: http.MethodGet, path: "/m/recommendations/" + student,
			header: map[string]string{"If-None-Match": `"feed-v1"`}},
		"POST /swipe": {method: http.MethodPost, path: "/swipe",
			header: map[string]string{"Idempotency-Key": uuid.NewString()},
			body: map[string]any{"student_id": student, "school_id": school, "direction": "left",
				"interaction_type": "swipe", "time_spent": 2.5, "swipe_id": uuid.NewString()}},
		"POST /feedback": {method: http.MethodPost, path: "/feedback",
			body: map[string]any{"student_id": student, "school_id": school, "reason": "too_expensive", "comment": "over budget"}},
		"POST /v2/onboarding/category-swipe": {method: http.MethodPost, path: "/v2/onboarding/category-swipe",
			body: map[string]any{"student_id": student, "category_id": "liberal-arts", "direction": "right"}},
		"POST /m/batch/schools": {method: http.MethodPost, path: "/m/batch/schools",
			body: map[string]any{"school_ids": []string{school, uuid.NewString()}}},
		"POST /m/sync/pull": {method: http.MethodPost, path: "/m/sync/pull",
			body: map[string]any{"student_id": student}},
		"POST /m/sync/push": {method: http.MethodPost, path: "/m/sync/push",
			body: map[string]any{"student_id": student, "changes": []any{
				map[string]any{"id": uuid.NewString(), "type": "swipe", "school_id": school, "direction": "right",
					"time_spent": 3, "occurred_at": "2026-01-15T10:00:00Z"},
				map[string]any{"id": uuid.NewString(), "type": "feedback", "school_id": school, "reason": "wrong_location",
					"occurred_at": "2026-01-15T10:00:05.123Z"},
			}}},
		"POST /v2/onboarding/minimal": {method: http.MethodPost, path: "/v2/onboarding/minimal",
			body: map[string]any{"name": "Sample Student", "email": "sample@example.com", "graduation_year": "2027"}},
		"GET /v2/onboarding/category-schools": {method: http.MethodGet, path: "/v2/onboarding/category-schools"},
		"GET /health":                         {method: http.MethodGet, path: "/health"},
	}
}

// TestOpenAPIEveryOperation sends a valid request to every documented
// operation and checks the answer against the document. An operation whose
// description says it is not implemented must answer 501, and only those.
func TestOpenAPIEveryOperation(t *testing.T) {
	c := newOAContract(t)
	ops := oaOperations(c.doc)
	require.Equal(t, oaSortedKeys(ops), oaSortedKeys(oaSamples(uuid.NewString())), "every documented operation has a sample request")
	for _, key := range oaSortedKeys(ops) {
		t.Run(key, func(t *testing.T) {
			student := uuid.NewString()
			rq := oaSamples(student)[key]
			rq.tok = token(t, student, false)
			res := c.valid(t, rq)
			if strings.Contains(ops[key].Description, oaNotImplementedMarker) {
				require.Equal(t, http.StatusNotImplemented, res.Status, "the document says %s answers 501", key)
				require.Equal(t, domain.CodeNotImplemented, res.errorCode())
			} else {
				require.NotEqual(t, http.StatusNotImplemented, res.Status,
					"%s is implemented: remove %q from its description", key, oaNotImplementedMarker)
			}
		})
	}
}

func TestOpenAPIOnboarding(t *testing.T) {
	c := newOAContract(t)
	student := uuid.NewString()
	tok := token(t, student, false)
	post := func(body any) oaRequest {
		return oaRequest{method: http.MethodPost, path: "/v2/onboarding/minimal", tok: tok, body: body}
	}

	t.Run("201 on create", func(t *testing.T) {
		res := c.valid(t, post(map[string]any{
			"name": "Ada Lovelace", "email": "Ada@Example.com", "graduation_year": "2027",
			"gpa": 3.8, "test_scores": map[string]any{"sat": 1450, "act": nil},
			"home": map[string]any{"lat": 37.77, "lon": -122.42}, "state": "ca",
			"max_distance_miles": 300, "budget": 30000, "family_income": 90000,
			"intended_majors": []string{"computer", "Mathematics"}, "preferred_size": "medium", "preferred_setting": "city",
		}))
		require.Equal(t, http.StatusCreated, res.Status)
		require.Equal(t, student, res.Body["student_id"])
		require.Equal(t, true, res.Body["profile_complete"])
	})

	t.Run("200 on update, clearing fields with null", func(t *testing.T) {
		res := c.valid(t, post(map[string]any{
			"student_id": student, "gpa": nil, "test_scores": nil, "home": nil, "state": nil,
			"intended_majors": nil, "preferred_size": nil,
		}))
		require.Equal(t, http.StatusOK, res.Status)
		require.Equal(t, false, res.Body["profile_complete"])
		require.ElementsMatch(t, []any{domain.MissingAcademic, domain.MissingLocation}, res.Body["missing"])
	})

	t.Run("400 for a body the document rejects too", func(t *testing.T) {
		res := c.send(t, post(map[string]any{"gpa": 7, "email": "not-an-address", "nickname": "x"}))
		require.Equal(t, http.StatusBadRequest, res.Status)
		require.Error(t, res.reqErr, "the document rejects the body the server rejects")
		require.NoError(t, res.resErr, "the 400 response matches the document: %s", res.Raw)
		require.Equal(t, domain.CodeInvalidRequest, res.errorCode())
		require.Contains(t, res.errorFields(), "gpa")
		require.Contains(t, res.errorFields(), "nickname")
	})

	t.Run("400 for a schema-valid body missing what a new student needs", func(t *testing.T) {
		other := uuid.NewString()
		res := c.valid(t, oaRequest{method: http.MethodPost, path: "/v2/onboarding/minimal",
			tok: token(t, other, false), body: map[string]any{"gpa": 3.1}})
		require.Equal(t, http.StatusBadRequest, res.Status)
		require.Contains(t, res.errorFields(), "name")
	})

	t.Run("400 for malformed JSON", func(t *testing.T) {
		res := c.send(t, post(`{"name": "Ada",`))
		require.Equal(t, http.StatusBadRequest, res.Status)
		require.NoError(t, res.resErr, "the 400 response matches the document: %s", res.Raw)
	})

	t.Run("401 without a token", func(t *testing.T) {
		rq := post(map[string]any{"name": "Ada"})
		rq.tok = ""
		res := c.send(t, rq)
		require.Equal(t, http.StatusUnauthorized, res.Status)
		var secErr *openapi3filter.SecurityRequirementsError
		require.ErrorAs(t, res.reqErr, &secErr, "the document requires the bearer token")
		require.NoError(t, res.resErr, "the 401 response matches the document: %s", res.Raw)
		require.Equal(t, `Bearer error="invalid_token"`, res.Header.Get("WWW-Authenticate"))
	})

	t.Run("401 with a bad token", func(t *testing.T) {
		rq := post(map[string]any{"name": "Ada"})
		rq.tok = "not.a.jwt"
		res := c.valid(t, rq)
		require.Equal(t, http.StatusUnauthorized, res.Status)
		require.Equal(t, domain.CodeUnauthorized, res.errorCode())
	})

	t.Run("403 for another student's id", func(t *testing.T) {
		res := c.valid(t, post(map[string]any{"student_id": uuid.NewString(), "name": "Mallory"}))
		require.Equal(t, http.StatusForbidden, res.Status)
		require.Equal(t, domain.CodeForbidden, res.errorCode())
	})
}

func TestOpenAPIHealth(t *testing.T) {
	c := newOAContract(t)
	res := c.valid(t, oaRequest{method: http.MethodGet, path: "/health", tok: token(t, "", false)})
	require.Equal(t, http.StatusOK, res.Status)
	require.Equal(t, "ok", res.Body["status"])

	res = c.send(t, oaRequest{method: http.MethodGet, path: "/health"})
	require.Equal(t, http.StatusUnauthorized, res.Status)
	require.NoError(t, res.resErr, "the 401 response matches the document: %s", res.Raw)
}

func TestOpenAPIUnknownRouteAndMethod(t *testing.T) {
	c := newOAContract(t)
	tok := token(t, "", false)

	res := c.send(t, oaRequest{method: http.MethodGet, path: "/admin/students", tok: tok})
	require.Nil(t, res.route)
	require.ErrorIs(t, res.reqErr, routers.ErrPathNotFound, "the document has no such path")
	require.Equal(t, http.StatusNotFound, res.Status)
	require.Equal(t, domain.CodeNotFound, res.errorCode())
	require.NoError(t, c.errorSchemaCheck(res.Body), "the 404 body matches the Error schema: %s", res.Raw)

	res = c.send(t, oaRequest{method: http.MethodGet, path: "/swipe", tok: tok})
	require.Nil(t, res.route)
	require.ErrorIs(t, res.reqErr, routers.ErrMethodNotAllowed, "the document has no GET /swipe")
	require.Equal(t, http.StatusMethodNotAllowed, res.Status)
	require.Equal(t, domain.CodeMethodNotAllowed, res.errorCode())
	require.NoError(t, c.errorSchemaCheck(res.Body), "the 405 body matches the Error schema: %s", res.Raw)
}

// TestOpenAPIValidationCatchesMismatches proves the checks above can fail:
// real responses, altered, must be rejected.
func TestOpenAPIValidationCatchesMismatches(t *testing.T) {
	c := newOAContract(t)
	student := uuid.NewString()
	tok := token(t, student, false)

	rq := oaRequest{method: http.MethodPost, path: "/v2/onboarding/minimal", tok: tok,
		body: map[string]any{"name": "Ada", "email": "ada@example.com", "graduation_year": "2027", "gpa": 3.5}}
	created := c.valid(t, rq)
	require.Equal(t, http.StatusCreated, created.Status)

	// revalidate checks body (re-encoded) as the answer to route with status.
	revalidate := func(t *testing.T, route *routers.Route, status int, header http.Header, body any) error {
		t.Helper()
		raw, err := json.Marshal(body)
		require.NoError(t, err)
		req, err := http.NewRequest(route.Method, c.api.URL+route.Path, nil)
		require.NoError(t, err)
		return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, Route: route, Options: oaFilterOptions()},
			Status:                 status,
			Header:                 header,
			Body:                   io.NopCloser(bytes.NewReader(raw)),
			Options:                oaFilterOptions(),
		})
	}
	clone := func(v map[string]any) map[string]any {
		raw, _ := json.Marshal(v)
		var out map[string]any
		_ = json.Unmarshal(raw, &out)
		return out
	}
	require.NoError(t, revalidate(t, created.route, created.Status, created.Header, created.Body), "unaltered, it passes")

	cases := map[string]func(b map[string]any){
		"missing profile_complete": func(b map[string]any) { delete(b, "profile_complete") },
		"missing profile.email":    func(b map[string]any) { delete(b["profile"].(map[string]any), "email") },
		"gpa as a string":          func(b map[string]any) { b["profile"].(map[string]any)["gpa"] = "3.5" },
		"gpa out of range":         func(b map[string]any) { b["profile"].(map[string]any)["gpa"] = 9 },
		"student_id not a UUID":    func(b map[string]any) { b["student_id"] = "student-1" },
		"missing not an array":     func(b map[string]any) { b["missing"] = "home_or_state" },
		"unknown missing entry":    func(b map[string]any) { b["missing"] = []any{"everything"} },
		"null intended_majors":     func(b map[string]any) { b["profile"].(map[string]any)["intended_majors"] = nil },
		"test_scores.sat a string": func(b map[string]any) {
			b["profile"].(map[string]any)["test_scores"] = map[string]any{"sat": "1400", "act": nil}
		},
	}
	for _, name := range oaSortedKeys(cases) {
		t.Run(name, func(t *testing.T) {
			b := clone(created.Body)
			cases[name](b)
			require.Error(t, revalidate(t, created.route, created.Status, created.Header, b))
		})
	}

	t.Run("undocumented status", func(t *testing.T) {
		require.Error(t, revalidate(t, created.route, http.StatusTeapot, created.Header, created.Body))
	})
	t.Run("missing X-Request-ID", func(t *testing.T) {
		h := created.Header.Clone()
		h.Del("X-Request-ID")
		require.Error(t, revalidate(t, created.route, created.Status, h, created.Body))
	})
	t.Run("rate-limit header of another group", func(t *testing.T) {
		h := created.Header.Clone()
		h.Set("X-RateLimit-Limit", "60")
		require.Error(t, c.checkRateHeaders(created.route.Operation, h))
	})

	notImpl := c.valid(t, oaRequest{method: http.MethodPost, path: "/m/sync/pull", tok: tok,
		body: map[string]any{"student_id": student}})
	if notImpl.Status == http.StatusNotImplemented {
		t.Run("501 with another code", func(t *testing.T) {
			b := clone(notImpl.Body)
			b["error"].(map[string]any)["code"] = domain.CodeInternal
			require.Error(t, revalidate(t, notImpl.route, notImpl.Status, notImpl.Header, b))
		})
		t.Run("error without details", func(t *testing.T) {
			b := clone(notImpl.Body)
			delete(b["error"].(map[string]any), "details")
			require.Error(t, revalidate(t, notImpl.route, notImpl.Status, notImpl.Header, b))
		})
	}

	health := c.valid(t, oaRequest{method: http.MethodGet, path: "/health", tok: tok})
	t.Run("health status outside the enum", func(t *testing.T) {
		b := clone(health.Body)
		b["status"] = "fine"
		require.Error(t, revalidate(t, health.route, health.Status, health.Header, b))
	})
	t.Run("health without a redis check", func(t *testing.T) {
		b := clone(health.Body)
		delete(b["checks"].(map[string]any), "redis")
		require.Error(t, revalidate(t, health.route, health.Status, health.Header, b))
	})
}
