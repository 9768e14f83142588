package httpapi_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/auth"
)

// doAuth is do with a raw Authorization header (none when empty).
func (a *testAPI) doAuth(t *testing.T, method, path, authorization string, body any) result {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.URL+path, rd)
	require.NoError(t, err)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := result{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &out.Body), "body is JSON: %s", raw)
	}
	return out
}

// requireErrorBody asserts the status and the exact error body shape:
// {"error":{"code":code,"message":"...","details":{...}}}.
func requireErrorBody(t *testing.T, res result, status int, code string) map[string]any {
	t.Helper()
	require.Equal(t, status, res.Status, "%s", res.Raw)
	require.Equal(t, "application/json", res.Header.Get("Content-Type"))
	require.Len(t, res.Body, 1, "only the error key: %s", res.Raw)
	e, ok := res.Body["error"].(map[string]any)
	require.True(t, ok, "error is an object: %s", res.Raw)
	require.Len(t, e, 3, "code, message and details only: %s", res.Raw)
	require.Equal(t, code, e["code"])
	msg, ok := e["message"].(string)
	require.True(t, ok, "message is a string")
	require.NotEmpty(t, msg)
	details, ok := e["details"].(map[string]any)
	require.True(t, ok, "details is an object, never null: %s", res.Raw)
	return details
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// forged assembles a token from header and claims with the given signature.
func forged(t *testing.T, header, claims map[string]any, sig []byte) string {
	t.Helper()
	h, err := json.Marshal(header)
	require.NoError(t, err)
	c, err := json.Marshal(claims)
	require.NoError(t, err)
	return b64url(h) + "." + b64url(c) + "." + b64url(sig)
}

// hs256 signs claims with the test secret as they are (no exp added).
func hs256(t *testing.T, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(testSecret)
	require.NoError(t, err)
	return s
}

func TestUnauthenticatedRequests(t *testing.T) {
	api := newTestAPI(t)
	student := uuid.NewString()
	now := time.Now()
	valid := jwt.MapClaims{"sub": student, "exp": now.Add(time.Hour).Unix()}

	expired, err := auth.MintHS256(testSecret, auth.MintOptions{Subject: student, TTL: time.Hour, Now: now.Add(-2 * time.Hour)})
	require.NoError(t, err)
	wrongSecret, err := auth.MintHS256([]byte("another-secret-another-secret-another-secret"), auth.MintOptions{Subject: student})
	require.NoError(t, err)
	good := token(t, student, false)

	cases := map[string]string{
		"no Authorization header":    "",
		"Basic scheme":               "Basic x",
		"Basic with credentials":     "Basic " + base64.StdEncoding.EncodeToString([]byte("user:pass")),
		"Bearer without a token":     "Bearer",
		"Bearer and a space":         "Bearer ",
		"Bearer garbage":             "Bearer garbage",
		"Bearer three garbage parts": "Bearer aaa.bbb.ccc",
		"alg none":                   "Bearer " + forged(t, map[string]any{"alg": "none", "typ": "JWT"}, valid, nil),
		"alg none with signature":    "Bearer " + forged(t, map[string]any{"alg": "none"}, valid, []byte("sig")),
		"expired":                    "Bearer " + expired,
		"missing exp":                "Bearer " + hs256(t, jwt.MapClaims{"sub": student}),
		"missing sub":                "Bearer " + hs256(t, jwt.MapClaims{"exp": now.Add(time.Hour).Unix()}),
		"nbf in the future":          "Bearer " + hs256(t, jwt.MapClaims{"sub": student, "exp": now.Add(time.Hour).Unix(), "nbf": now.Add(10 * time.Minute).Unix()}),
		"wrong secret":               "Bearer " + wrongSecret,
		"tampered claims":            "Bearer " + tamper(t, good),
		"valid token, wrong scheme":  "Token " + good,
		"valid token, no scheme":     good,
	}
	endpoints := []struct {
		method, path string
		body         any
	}{
		{"GET", "/health", nil},
		{"POST", "/v2/onboarding/minimal", map[string]any{"name": "Ada", "email": "ada@example.com", "graduation_year": "2027"}},
		{"GET", "/m/recommendations/" + student, nil},
	}
	failures := 0
	for _, ep := range endpoints {
		for name, header := range cases {
			t.Run(ep.method+" "+strings.SplitN(ep.path, "/", 3)[1]+"/"+name, func(t *testing.T) {
				res := api.doAuth(t, ep.method, ep.path, header, ep.body)
				details := requireErrorBody(t, res, http.StatusUnauthorized, "UNAUTHORIZED")
				assert.Empty(t, details)
				assert.Equal(t, `Bearer error="invalid_token"`, res.Header.Get("WWW-Authenticate"))
				assert.NotEmpty(t, res.Header.Get("X-Request-ID"))
				assert.Empty(t, res.Header.Get("X-RateLimit-Limit"), "refused before rate limiting")
				msg := res.Body["error"].(map[string]any)["message"].(string)
				if len(header) > 20 {
					assert.NotContains(t, msg, strings.TrimPrefix(header, "Bearer "), "the message never echoes the token")
				}
				failures++
			})
		}
	}
	assert.EqualValues(t, failures, counterValue(t, api.Registry, "matching_auth_failures_total", map[string]string{"status": "401"}))

	// The valid token passes, and the scheme is case-insensitive (RFC 7235).
	for _, h := range []string{"Bearer " + good, "bearer " + good, "BEARER " + good, "Bearer  " + good + " "} {
		res := api.doAuth(t, "GET", "/health", h, nil)
		require.Equal(t, http.StatusOK, res.Status, "%q: %s", h[:8], res.Raw)
		assert.Equal(t, "ok", res.Body["status"])
		assert.Empty(t, res.Header.Get("WWW-Authenticate"))
	}
	// Onboarding rejects the token for its own body id in no case.
	res := api.do(t, "POST", "/v2/onboarding/minimal", good, map[string]any{"student_id": student, "name": "Ada", "email": "ada@example.com", "graduation_year": "2027"})
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
}

// tamper swaps the claims of tok for a service token's, keeping the signature.
func tamper(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	require.Len(t, parts, 3)
	c, err := json.Marshal(map[string]any{"sub": uuid.NewString(), "exp": time.Now().Add(time.Hour).Unix(), "scope": auth.ServiceScope})
	require.NoError(t, err)
	return parts[0] + "." + b64url(c) + "." + parts[2]
}

func TestStudentTokenActingForAnotherStudent(t *testing.T) {
	api := newTestAPI(t)
	me, other := uuid.NewString(), uuid.NewString()
	mine := token(t, me, false)
	profile := func(id string) map[string]any {
		return map[string]any{"student_id": id, "name": "Ada", "email": "ada@example.com", "graduation_year": "2027"}
	}

	forbidden := func(t *testing.T, res result) {
		t.Helper()
		details := requireErrorBody(t, res, http.StatusForbidden, "FORBIDDEN")
		assert.Empty(t, res.Header.Get("WWW-Authenticate"), "403 is not an authentication challenge")
		assert.Empty(t, res.Header.Get("X-RateLimit-Limit"), "refused before rate limiting")
		_ = details
	}
	forbidden(t, api.do(t, "POST", "/v2/onboarding/minimal", mine, profile(other)))
	forbidden(t, api.do(t, "POST", "/v2/onboarding/minimal", mine, profile(strings.ToUpper(other))))
	forbidden(t, api.do(t, "GET", "/m/recommendations/"+other, mine, nil))
	forbidden(t, api.do(t, "GET", "/m/recommendations/"+strings.ToUpper(other), mine, nil))
	forbidden(t, api.do(t, "GET", "/match/"+other+"/"+uuid.NewString(), mine, nil))
	forbidden(t, api.do(t, "POST", "/swipe", mine, map[string]any{"student_id": other, "school_id": uuid.NewString(), "direction": "right"}))
	forbidden(t, api.do(t, "POST", "/recommendations", mine, map[string]any{"student_id": other}))
	assert.EqualValues(t, 7, counterValue(t, api.Registry, "matching_auth_failures_total", map[string]string{"status": "403"}))

	// The same student_id spelled twice (differing in case, or repeated) must
	// not let one spelling pass the check while a decoder reads the other.
	for _, body := range []string{
		`{"student_id":"` + other + `","Student_ID":"` + me + `"`,
		`{"Student_ID":"` + other + `","student_id":"` + me + `"`,
		`{"student_id":"` + other + `","student_id":"` + me + `"`,
		`{"student_id":"` + me + `","student_id":"` + other + `"`,
		`{"student_id":"` + me + `","student_id":"` + me + `"`,
		`{"student_id":"` + me + `","\u017ftudent_id":"` + other + `"`, // U+017F folds to s
	} {
		body += `,"name":"Ada","email":"ada@example.com","graduation_year":"2027"}`
		res := api.do(t, "POST", "/v2/onboarding/minimal", mine, body)
		details := requireErrorBody(t, res, http.StatusBadRequest, "INVALID_REQUEST")
		assert.Equal(t, map[string]any{"student_id": "is given more than once"}, details["fields"], "%s", body)
	}

	// Nothing was written for the other student: the service creates it now.
	svc := token(t, "", true)
	res := api.do(t, "POST", "/v2/onboarding/minimal", svc, profile(other))
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
	assert.Equal(t, other, res.Body["student_id"])

	// A student token may act for itself, in any letter case.
	res = api.do(t, "POST", "/v2/onboarding/minimal", mine, profile(me))
	require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
	res = api.do(t, "POST", "/v2/onboarding/minimal", mine, profile(strings.ToUpper(me)))
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
	for _, id := range []string{me, strings.ToUpper(me)} {
		// Authorized: the answer is about the (incomplete) profile.
		res = api.do(t, "GET", "/m/recommendations/"+id, mine, nil)
		requireErrorBody(t, res, http.StatusUnprocessableEntity, "MISSING_PROFILE")
	}
}

func TestServiceTokenActsForAnyStudent(t *testing.T) {
	api := newTestAPI(t)
	svc := token(t, "", true)
	for range 3 {
		id := uuid.NewString()
		res := api.do(t, "POST", "/v2/onboarding/minimal", svc, map[string]any{"student_id": id, "name": "Ada", "email": "ada@example.com", "graduation_year": "2027"})
		require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
		assert.Equal(t, id, res.Body["student_id"])
		res = api.do(t, "GET", "/m/recommendations/"+id, svc, nil)
		requireErrorBody(t, res, http.StatusUnprocessableEntity, "MISSING_PROFILE")
		res = api.do(t, "GET", "/match/"+id+"/"+uuid.NewString(), svc, nil)
		requireErrorBody(t, res, http.StatusNotFound, "INVALID_SCHOOL_ID")
	}
	assert.Zero(t, counterValue(t, api.Registry, "matching_auth_failures_total", map[string]string{"status": "403"}))
}

func TestUnknownRouteAndWrongMethod(t *testing.T) {
	api := newTestAPI(t)
	tok := token(t, "", false)
	for _, tk := range []string{tok, ""} {
		for _, p := range []string{"/nope", "/partner/schools", "/admin", "/v2/onboarding", "/m/recommendations", "/health/x"} {
			details := requireErrorBody(t, api.do(t, "GET", p, tk, nil), http.StatusNotFound, "NOT_FOUND")
			assert.Empty(t, details)
		}
		for _, c := range []struct{ method, path, allow string }{
			{"DELETE", "/health", "GET"},
			{"POST", "/health", "GET"},
			{"GET", "/v2/onboarding/minimal", "POST"},
			{"PUT", "/swipe", "POST"},
			{"POST", "/m/recommendations/" + uuid.NewString(), "GET"},
		} {
			res := api.do(t, c.method, c.path, tk, nil)
			details := requireErrorBody(t, res, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
			assert.Empty(t, details)
			assert.Equal(t, c.allow, res.Header.Get("Allow"), c.path)
		}
	}
}

// The API verifies identity-provider tokens from a JWKS, and refuses an
// HS256 token keyed with the provider's public key.
func TestJWKSTokensOverHTTP(t *testing.T) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pubDER, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	require.NoError(t, err)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	student := uuid.NewString()
	claims := jwt.MapClaims{"sub": student, "exp": time.Now().Add(time.Hour).Unix()}

	rs := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	rs.Header["kid"] = "idp-1"
	rsTok, err := rs.SignedString(priv)
	require.NoError(t, err)
	confused := func(secret []byte) string {
		h, _ := json.Marshal(map[string]any{"alg": "HS256", "typ": "JWT", "kid": "idp-1"})
		c, _ := json.Marshal(claims)
		unsigned := b64url(h) + "." + b64url(c)
		mac := hmac.New(sha256.New, secret)
		mac.Write([]byte(unsigned))
		return unsigned + "." + b64url(mac.Sum(nil))
	}

	for _, hs := range []bool{false, true} {
		api := newTestAPI(t, withVerifier(jwksVerifier(t, priv, "idp-1", hs)))
		res := api.do(t, "GET", "/health", rsTok, nil)
		require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		res = api.do(t, "GET", "/m/recommendations/"+student, rsTok, nil)
		requireErrorBody(t, res, http.StatusNotFound, "INVALID_STUDENT_ID")
		res = api.do(t, "GET", "/m/recommendations/"+uuid.NewString(), rsTok, nil)
		requireErrorBody(t, res, http.StatusForbidden, "FORBIDDEN")

		for _, secret := range [][]byte{pubPEM, pubDER} {
			res = api.do(t, "GET", "/health", confused(secret), nil)
			requireErrorBody(t, res, http.StatusUnauthorized, "UNAUTHORIZED")
			assert.Equal(t, `Bearer error="invalid_token"`, res.Header.Get("WWW-Authenticate"))
		}
		res = api.do(t, "GET", "/health", token(t, student, false), nil)
		if hs {
			require.Equal(t, http.StatusOK, res.Status, "%s", res.Raw)
		} else {
			requireErrorBody(t, res, http.StatusUnauthorized, "UNAUTHORIZED")
		}
	}
}

// A token from the identity provider carrying matching:service acts for
// every student only when its client (azp or client_id) is one
// AUTH_SERVICE_CLIENTS names; from any other client the scope is ignored,
// so acting for another student is 403 FORBIDDEN saying why, while the
// token still acts for its own subject.
func TestServiceScopeOnlyFromListedClients(t *testing.T) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	api := newTestAPI(t, withVerifier(jwksVerifierWith(t, priv, "idp-1", auth.VerifierOptions{ServiceClients: []string{"enrolment-backend"}})))
	sign := func(claims jwt.MapClaims) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
		tok.Header["kid"] = "idp-1"
		s, err := tok.SignedString(priv)
		require.NoError(t, err)
		return s
	}
	student := uuid.NewString()
	service := func(client map[string]any) string {
		c := jwt.MapClaims{"sub": "svc-1", "exp": time.Now().Add(time.Hour).Unix(), "scope": auth.ServiceScope}
		for k, v := range client {
			c[k] = v
		}
		return sign(c)
	}
	for _, tok := range []string{service(map[string]any{"azp": "enrolment-backend"}), service(map[string]any{"client_id": "enrolment-backend"})} {
		res := api.do(t, "GET", "/m/recommendations/"+student, tok, nil)
		requireErrorBody(t, res, http.StatusNotFound, "INVALID_STUDENT_ID") // allowed through; the student does not exist
	}
	for _, tok := range []string{service(map[string]any{"azp": "mobile-app"}), service(map[string]any{"client_id": "mobile-app"}), service(nil)} {
		res := api.do(t, "GET", "/m/recommendations/"+student, tok, nil)
		requireErrorBody(t, res, http.StatusForbidden, "FORBIDDEN")
		assert.Contains(t, string(res.Raw), "scope is not accepted from this client")
	}
	// The refused token still acts for its own subject.
	own := sign(jwt.MapClaims{"sub": student, "exp": time.Now().Add(time.Hour).Unix(), "scope": auth.ServiceScope, "azp": "mobile-app"})
	res := api.do(t, "GET", "/m/recommendations/"+student, own, nil)
	requireErrorBody(t, res, http.StatusNotFound, "INVALID_STUDENT_ID")
}
