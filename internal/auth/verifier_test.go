package auth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/domain"
)

var hsSecret = []byte("verifier-test-secret-verifier-test-secret")

// testKey is a signing key published in the test JWKS under kid with alg.
type testKey struct {
	kid    string
	alg    string // the JWK's alg; empty leaves it out
	method jwt.SigningMethod
	priv   crypto.Signer
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// jwk builds the public JWK of k by hand (RFC 7517/7518/8037).
func (k testKey) jwk() map[string]any {
	m := map[string]any{"kid": k.kid, "use": "sig"}
	if k.alg != "" {
		m["alg"] = k.alg
	}
	switch pub := k.priv.Public().(type) {
	case *rsa.PublicKey:
		m["kty"] = "RSA"
		m["n"] = b64(pub.N.Bytes())
		m["e"] = b64(big.NewInt(int64(pub.E)).Bytes())
	case *ecdsa.PublicKey:
		raw, err := pub.Bytes() // 0x04 || X || Y, each 32 bytes for P-256
		if err != nil {
			panic(err)
		}
		m["kty"], m["crv"] = "EC", "P-256"
		m["x"], m["y"] = b64(raw[1:33]), b64(raw[33:])
	case ed25519.PublicKey:
		m["kty"], m["crv"], m["x"] = "OKP", "Ed25519", b64(pub)
	default:
		panic("unsupported key")
	}
	return m
}

// sign signs claims with k, putting k.kid in the header.
func (k testKey) sign(t *testing.T, claims jwt.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(k.method, claims)
	tok.Header["kid"] = k.kid
	s, err := tok.SignedString(k.priv)
	require.NoError(t, err)
	return s
}

func newRSAKey(t *testing.T, kid string) testKey {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return testKey{kid: kid, alg: "RS256", method: jwt.SigningMethodRS256, priv: priv}
}

func newECKey(t *testing.T, kid string) testKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return testKey{kid: kid, alg: "ES256", method: jwt.SigningMethodES256, priv: priv}
}

func newEdKey(t *testing.T, kid string) testKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return testKey{kid: kid, alg: "EdDSA", method: jwt.SigningMethodEdDSA, priv: priv}
}

// jwksServer serves a JWK Set that a test can change, and counts fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []testKey
	fetches atomic.Int64
}

func newJWKSServer(t *testing.T, keys ...testKey) *jwksServer {
	t.Helper()
	s := &jwksServer{keys: keys}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		set := map[string]any{"keys": []any{}}
		for _, k := range s.keys {
			set["keys"] = append(set["keys"].([]any), k.jwk())
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) publish(keys ...testKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = keys
}

// clock is a settable time source for VerifierOptions.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Now().Truncate(time.Second)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func newVerifier(t *testing.T, o auth.VerifierOptions) *auth.Verifier {
	t.Helper()
	v, err := auth.NewVerifier(t.Context(), o)
	require.NoError(t, err)
	return v
}

// claimsAt are valid registered claims for a fresh subject at now.
func claimsAt(now time.Time) jwt.MapClaims {
	return jwt.MapClaims{
		"sub": uuid.NewString(),
		"iat": now.Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}
}

func with(c jwt.MapClaims, kv ...any) jwt.MapClaims {
	out := jwt.MapClaims{}
	for k, v := range c {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// requireUnauthenticated asserts err is a KindUnauthenticated *domain.Error
// whose message does not echo the token.
func requireUnauthenticated(t *testing.T, err error, tok string) {
	t.Helper()
	require.Error(t, err)
	var de *domain.Error
	require.True(t, errors.As(err, &de), "error is a *domain.Error: %T %v", err, err)
	require.Equal(t, domain.KindUnauthenticated, de.Kind, "kind of %v", err)
	require.Equal(t, domain.CodeUnauthorized, de.Code)
	if len(tok) > 20 {
		require.NotContains(t, de.Message, tok)
	}
}

// rawToken assembles header.payload.signature from JSON parts.
func rawToken(t *testing.T, header, payload map[string]any, sig []byte) string {
	t.Helper()
	h, err := json.Marshal(header)
	require.NoError(t, err)
	p, err := json.Marshal(payload)
	require.NoError(t, err)
	return b64(h) + "." + b64(p) + "." + b64(sig)
}

// hmacToken signs header.payload with HMAC-SHA256 under secret, as an
// attacker would with a public key's bytes.
func hmacToken(t *testing.T, header, payload map[string]any, secret []byte) string {
	t.Helper()
	unsigned := strings.TrimSuffix(rawToken(t, header, payload, nil), ".")
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(unsigned))
	return unsigned + "." + b64(mac.Sum(nil))
}

func TestVerifierAcceptsJWKSAlgorithms(t *testing.T) {
	rsaK, ecK, edK := newRSAKey(t, "rsa-1"), newECKey(t, "ec-1"), newEdKey(t, "ed-1")
	srv := newJWKSServer(t, rsaK, ecK, edK)
	v := newVerifier(t, auth.VerifierOptions{JWKSURL: srv.URL})
	for _, k := range []testKey{rsaK, ecK, edK} {
		t.Run(k.alg, func(t *testing.T) {
			c := claimsAt(time.Now())
			c["scope"] = "openid profile"
			tok := k.sign(t, c)
			got, err := v.Verify(t.Context(), tok)
			require.NoError(t, err)
			require.Equal(t, c["sub"], got.Subject)
			require.Equal(t, []string{"openid", "profile"}, got.Scopes)
			require.False(t, got.IsService())
			require.Equal(t, time.Unix(c["exp"].(int64), 0), got.ExpiresAt.Truncate(time.Second))
		})
	}
}

func TestVerifierRejects(t *testing.T) {
	rsaK, ecK, edK := newRSAKey(t, "rsa-1"), newECKey(t, "ec-1"), newEdKey(t, "ed-1")
	// The same RSA key published a second time with alg PS256: a valid RS256
	// signature under this kid must still be refused.
	rsaPS := rsaK
	rsaPS.kid, rsaPS.alg = "rsa-ps", "PS256"
	srv := newJWKSServer(t, rsaK, ecK, edK, rsaPS)

	pubDER, err := x509.MarshalPKIXPublicKey(rsaK.priv.Public())
	require.NoError(t, err)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	pkcs1PEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(rsaK.priv.Public().(*rsa.PublicKey))})

	modes := map[string]auth.VerifierOptions{
		"jwks":        {JWKSURL: srv.URL},
		"jwks+hs256":  {JWKSURL: srv.URL, HS256Secret: hsSecret},
		"hs256":       {HS256Secret: hsSecret},
		"jwks+issaud": {JWKSURL: srv.URL, HS256Secret: hsSecret, Issuer: "https://idp.example", Audience: "matching-api"},
	}
	now := time.Now()
	base := claimsAt(now)
	payload := map[string]any(base)
	otherRSA := newRSAKey(t, "rsa-1") // same kid, different key
	unknown := newRSAKey(t, "nobody-knows-me")

	cases := []struct {
		name  string
		token func(t *testing.T) string
	}{
		{"empty", func(*testing.T) string { return "" }},
		{"garbage", func(*testing.T) string { return "not-a-jwt" }},
		{"garbage three parts", func(*testing.T) string { return "aaa.bbb.ccc" }},
		{"alg none, no signature", func(t *testing.T) string {
			return rawToken(t, map[string]any{"alg": "none", "typ": "JWT"}, payload, nil)
		}},
		{"alg none with kid", func(t *testing.T) string {
			return rawToken(t, map[string]any{"alg": "none", "kid": "rsa-1"}, payload, nil)
		}},
		{"alg None (case)", func(t *testing.T) string {
			return rawToken(t, map[string]any{"alg": "None", "kid": "rsa-1"}, payload, []byte("x"))
		}},
		{"alg none via library", func(t *testing.T) string {
			s, err := jwt.NewWithClaims(jwt.SigningMethodNone, base).SignedString(jwt.UnsafeAllowNoneSignatureType)
			require.NoError(t, err)
			return s
		}},
		{"HS256 keyed with RSA public PEM", func(t *testing.T) string {
			return hmacToken(t, map[string]any{"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}, payload, pubPEM)
		}},
		{"HS256 keyed with RSA public PKCS1 PEM", func(t *testing.T) string {
			return hmacToken(t, map[string]any{"alg": "HS256", "kid": "rsa-1"}, payload, pkcs1PEM)
		}},
		{"HS256 keyed with RSA public DER", func(t *testing.T) string {
			return hmacToken(t, map[string]any{"alg": "HS256", "kid": "rsa-1"}, payload, pubDER)
		}},
		{"HS256 keyed with RSA public PEM, no kid", func(t *testing.T) string {
			return hmacToken(t, map[string]any{"alg": "HS256"}, payload, pubPEM)
		}},
		{"HS384 keyed with the HS256 secret", func(t *testing.T) string {
			s, err := jwt.NewWithClaims(jwt.SigningMethodHS384, base).SignedString(hsSecret)
			require.NoError(t, err)
			return s
		}},
		{"HS256 with the wrong secret", func(t *testing.T) string {
			s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, base).SignedString([]byte("another-secret-another-secret-another"))
			require.NoError(t, err)
			return s
		}},
		{"RS256 expired", func(t *testing.T) string {
			return rsaK.sign(t, with(base, "exp", now.Add(-2*time.Minute).Unix()))
		}},
		{"RS256 missing exp", func(t *testing.T) string { return rsaK.sign(t, with(base, "exp", nil)) }},
		{"RS256 exp not a number", func(t *testing.T) string { return rsaK.sign(t, with(base, "exp", "tomorrow")) }},
		{"RS256 nbf beyond leeway", func(t *testing.T) string {
			return rsaK.sign(t, with(base, "nbf", now.Add(2*time.Minute).Unix()))
		}},
		{"RS256 missing sub", func(t *testing.T) string { return rsaK.sign(t, with(base, "sub", nil)) }},
		{"RS256 unknown kid", func(t *testing.T) string { return unknown.sign(t, base) }},
		{"RS256 no kid", func(t *testing.T) string {
			s, err := jwt.NewWithClaims(jwt.SigningMethodRS256, base).SignedString(rsaK.priv)
			require.NoError(t, err)
			return s
		}},
		{"RS256 wrong signature (other key, same kid)", func(t *testing.T) string { return otherRSA.sign(t, base) }},
		{"RS256 tampered payload", func(t *testing.T) string {
			parts := strings.Split(rsaK.sign(t, base), ".")
			parts[1] = b64([]byte(`{"sub":"` + uuid.NewString() + `","exp":` + "9999999999" + `,"scope":"matching:service"}`))
			return strings.Join(parts, ".")
		}},
		{"ES256 signature cut", func(t *testing.T) string {
			tok := ecK.sign(t, base)
			return tok[:len(tok)-4]
		}},
		{"EdDSA signature of another token", func(t *testing.T) string {
			a := strings.Split(edK.sign(t, base), ".")
			b := strings.Split(edK.sign(t, with(base, "sub", uuid.NewString())), ".")
			return a[0] + "." + a[1] + "." + b[2]
		}},
		{"RS256 token under a kid whose JWK says PS256", func(t *testing.T) string { return rsaPS.sign(t, base) }},
		{"RS256 token under the ES256 key's kid", func(t *testing.T) string {
			k := rsaK
			k.kid = "ec-1"
			return k.sign(t, base)
		}},
		{"ES256 token under the EdDSA key's kid", func(t *testing.T) string {
			k := ecK
			k.kid = "ed-1"
			return k.sign(t, base)
		}},
		{"PS256 (not an accepted algorithm) under the RSA kid", func(t *testing.T) string {
			k := rsaK
			k.method = jwt.SigningMethodPS256
			return k.sign(t, base)
		}},
		{"ES384 (not an accepted algorithm)", func(t *testing.T) string {
			priv, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
			require.NoError(t, err)
			return testKey{kid: "ec-1", method: jwt.SigningMethodES384, priv: priv}.sign(t, base)
		}},
	}
	for mode, o := range modes {
		o.JWKSUnknownKIDEvery = time.Hour // one refresh per verifier is enough here
		v := newVerifier(t, o)
		t.Run(mode, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					tok := c.token(t)
					_, err := v.Verify(t.Context(), tok)
					requireUnauthenticated(t, err, tok)
					// A refused token stays refused (nothing negative or
					// positive is cached for it).
					_, err = v.Verify(t.Context(), tok)
					requireUnauthenticated(t, err, tok)
				})
			}
		})
	}
}

// The HS256 secret is accepted in both HS256 modes and never in JWKS-only mode.
func TestVerifierHS256Modes(t *testing.T) {
	rsaK := newRSAKey(t, "rsa-1")
	srv := newJWKSServer(t, rsaK)
	tok, err := auth.MintHS256(hsSecret, auth.MintOptions{Subject: uuid.NewString()})
	require.NoError(t, err)

	_, err = newVerifier(t, auth.VerifierOptions{HS256Secret: hsSecret}).Verify(t.Context(), tok)
	require.NoError(t, err)
	_, err = newVerifier(t, auth.VerifierOptions{JWKSURL: srv.URL, HS256Secret: hsSecret}).Verify(t.Context(), tok)
	require.NoError(t, err)

	jwksOnly := newVerifier(t, auth.VerifierOptions{JWKSURL: srv.URL})
	_, err = jwksOnly.Verify(t.Context(), tok)
	requireUnauthenticated(t, err, tok)
	// An RS256 token is refused by an HS256-only verifier.
	rsTok := rsaK.sign(t, claimsAt(time.Now()))
	_, err = newVerifier(t, auth.VerifierOptions{HS256Secret: hsSecret}).Verify(t.Context(), rsTok)
	requireUnauthenticated(t, err, rsTok)

	_, err = auth.NewVerifier(t.Context(), auth.VerifierOptions{})
	require.Error(t, err, "a verifier without keys is refused")
}

func TestVerifierIssuerAudience(t *testing.T) {
	rsaK := newRSAKey(t, "rsa-1")
	srv := newJWKSServer(t, rsaK)
	const iss, aud = "https://idp.example", "matching-api"
	v := newVerifier(t, auth.VerifierOptions{JWKSURL: srv.URL, HS256Secret: hsSecret, Issuer: iss, Audience: aud})
	base := claimsAt(time.Now())

	ok := map[string]jwt.MapClaims{
		"iss and aud":      with(base, "iss", iss, "aud", aud),
		"aud as array":     with(base, "iss", iss, "aud", []string{"other-api", aud}),
		"aud array of one": with(base, "iss", iss, "aud", []string{aud}),
	}
	for name, c := range ok {
		t.Run("accepts "+name, func(t *testing.T) {
			_, err := v.Verify(t.Context(), rsaK.sign(t, c))
			require.NoError(t, err)
		})
	}
	bad := map[string]jwt.MapClaims{
		"wrong iss":       with(base, "iss", "https://evil.example", "aud", aud),
		"iss with suffix": with(base, "iss", iss+"/", "aud", aud),
		"missing iss":     with(base, "aud", aud),
		"wrong aud":       with(base, "iss", iss, "aud", "other-api"),
		"aud array wrong": with(base, "iss", iss, "aud", []string{"a", "b"}),
		"missing aud":     with(base, "iss", iss),
	}
	for name, c := range bad {
		t.Run("rejects "+name, func(t *testing.T) {
			tok := rsaK.sign(t, c)
			_, err := v.Verify(t.Context(), tok)
			requireUnauthenticated(t, err, tok)
		})
	}

	// Minted HS256 tokens carry iss and aud the same way.
	tok, err := auth.MintHS256(hsSecret, auth.MintOptions{Subject: uuid.NewString(), Issuer: iss, Audience: aud})
	require.NoError(t, err)
	_, err = v.Verify(t.Context(), tok)
	require.NoError(t, err)
	tok, err = auth.MintHS256(hsSecret, auth.MintOptions{Subject: uuid.NewString(), Issuer: iss, Audience: "other"})
	require.NoError(t, err)
	_, err = v.Verify(t.Context(), tok)
	requireUnauthenticated(t, err, tok)

	// Without Issuer/Audience configured, any iss and aud are accepted.
	open := newVerifier(t, auth.VerifierOptions{JWKSURL: srv.URL})
	_, err = open.Verify(t.Context(), rsaK.sign(t, with(base, "iss", "https://anyone", "aud", "anything")))
	require.NoError(t, err)
}

func TestVerifierKeyRotation(t *testing.T) {
	keyA, keyB := newRSAKey(t, "key-a"), newECKey(t, "key-b")
	srv := newJWKSServer(t, keyA)
	v := newVerifier(t, auth.VerifierOptions{
		JWKSURL:             srv.URL,
		JWKSRefresh:         time.Hour, // no background refresh during the test
		JWKSUnknownKIDEvery: 50 * time.Millisecond,
	})
	require.EqualValues(t, 1, srv.fetches.Load(), "the key set is fetched at start")

	tokA := keyA.sign(t, claimsAt(time.Now()))
	_, err := v.Verify(t.Context(), tokA)
	require.NoError(t, err)
	require.EqualValues(t, 1, srv.fetches.Load(), "a known kid needs no fetch")

	tokB := keyB.sign(t, claimsAt(time.Now()))
	_, err = v.Verify(t.Context(), tokB)
	requireUnauthenticated(t, err, tokB)
	require.EqualValues(t, 2, srv.fetches.Load(), "an unknown kid triggers a refresh")

	// The identity provider rotates: B is published next to A.
	srv.publish(keyA, keyB)
	time.Sleep(60 * time.Millisecond)
	got, err := v.Verify(t.Context(), tokB)
	require.NoError(t, err, "the same verifier accepts the new key after the refresh")
	require.NotEmpty(t, got.Subject)
	_, err = v.Verify(t.Context(), keyB.sign(t, claimsAt(time.Now())))
	require.NoError(t, err)

	// A is retired: new A tokens with the old kid are refused once the set
	// no longer holds it and an unknown kid forces a refresh.
	srv.publish(keyB)
	time.Sleep(60 * time.Millisecond)
	_, err = v.Verify(t.Context(), newEdKey(t, "key-c").sign(t, claimsAt(time.Now())))
	require.Error(t, err)
	newA := keyA.sign(t, claimsAt(time.Now()))
	_, err = v.Verify(t.Context(), newA)
	requireUnauthenticated(t, err, newA)
}

func TestVerifierUnknownKIDRefreshIsRateLimited(t *testing.T) {
	keyA := newRSAKey(t, "key-a")
	srv := newJWKSServer(t, keyA)
	v := newVerifier(t, auth.VerifierOptions{JWKSURL: srv.URL, JWKSRefresh: time.Hour, JWKSUnknownKIDEvery: time.Hour})
	start := time.Now()
	for i := range 20 {
		tok := newEdKey(t, "random-"+uuid.NewString()).sign(t, claimsAt(time.Now()))
		_, err := v.Verify(t.Context(), tok)
		requireUnauthenticated(t, err, tok)
		_ = i
	}
	require.EqualValues(t, 2, srv.fetches.Load(), "the start fetch plus one refresh, however many unknown kids arrive")
	require.Less(t, time.Since(start), 2*time.Second, "refused unknown kids do not wait for the refresh budget")
	_, err := v.Verify(t.Context(), keyA.sign(t, claimsAt(time.Now())))
	require.NoError(t, err, "known keys keep working")
}

func TestVerifierJWKSUnreachableAtStart(t *testing.T) {
	keyA := newRSAKey(t, "key-a")
	var up atomic.Bool
	srv := newJWKSServer(t, keyA)
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(gate.Close)
	v := newVerifier(t, auth.VerifierOptions{JWKSURL: gate.URL, JWKSUnknownKIDEvery: 20 * time.Millisecond})
	tok := keyA.sign(t, claimsAt(time.Now()))
	_, err := v.Verify(t.Context(), tok)
	requireUnauthenticated(t, err, tok)
	up.Store(true)
	time.Sleep(30 * time.Millisecond)
	_, err = v.Verify(t.Context(), tok)
	require.NoError(t, err, "the key set is fetched on use once the provider is back")
}

func TestVerifierTimeClaimsAndLeeway(t *testing.T) {
	clk := newClock()
	rsaK := newRSAKey(t, "rsa-1")
	srv := newJWKSServer(t, rsaK)
	v := newVerifier(t, auth.VerifierOptions{JWKSURL: srv.URL, HS256Secret: hsSecret, Now: clk.Now})
	now := clk.Now()
	base := claimsAt(now)

	check := func(t *testing.T, c jwt.MapClaims, ok bool) {
		t.Helper()
		tok := rsaK.sign(t, c)
		_, err := v.Verify(t.Context(), tok)
		if ok {
			require.NoError(t, err)
		} else {
			requireUnauthenticated(t, err, tok)
		}
	}
	t.Run("exp 20s ago is inside the leeway", func(t *testing.T) { check(t, with(base, "exp", now.Add(-20*time.Second).Unix()), true) })
	t.Run("exp 29s ago is inside the leeway", func(t *testing.T) { check(t, with(base, "exp", now.Add(-29*time.Second).Unix()), true) })
	t.Run("exp 31s ago is expired", func(t *testing.T) { check(t, with(base, "exp", now.Add(-31*time.Second).Unix()), false) })
	t.Run("exp an hour ago", func(t *testing.T) { check(t, with(base, "exp", now.Add(-time.Hour).Unix()), false) })
	t.Run("nbf 20s ahead is inside the leeway", func(t *testing.T) { check(t, with(base, "nbf", now.Add(20*time.Second).Unix()), true) })
	t.Run("nbf 31s ahead is not valid yet", func(t *testing.T) { check(t, with(base, "nbf", now.Add(31*time.Second).Unix()), false) })
	t.Run("nbf in the past", func(t *testing.T) { check(t, with(base, "nbf", now.Add(-time.Minute).Unix()), true) })
	t.Run("missing exp", func(t *testing.T) { check(t, with(base, "exp", nil), false) })

	t.Run("HS256 minted token expires with leeway", func(t *testing.T) {
		tok, err := auth.MintHS256(hsSecret, auth.MintOptions{Subject: uuid.NewString(), TTL: time.Minute, Now: now.Add(-90 * time.Second)})
		require.NoError(t, err) // exp = now-30s: on the edge, refused
		_, err = v.Verify(t.Context(), tok)
		requireUnauthenticated(t, err, tok)
		tok, err = auth.MintHS256(hsSecret, auth.MintOptions{Subject: uuid.NewString(), TTL: time.Minute, Now: now.Add(-80 * time.Second)})
		require.NoError(t, err) // exp = now-20s: accepted
		_, err = v.Verify(t.Context(), tok)
		require.NoError(t, err)
	})
}

// The verified-claims cache never outlives the token: once exp plus the
// leeway has passed, a cached token is refused like any other.
func TestVerifierCacheHonoursExpiry(t *testing.T) {
	clk := newClock()
	t0 := clk.Now()
	rsaK := newRSAKey(t, "rsa-1")
	srv := newJWKSServer(t, rsaK)
	for name, o := range map[string]auth.VerifierOptions{
		"jwks":  {JWKSURL: srv.URL, Now: clk.Now},
		"hs256": {HS256Secret: hsSecret, Now: clk.Now},
	} {
		t.Run(name, func(t *testing.T) {
			clk.Set(t0)
			v := newVerifier(t, o)
			c := with(claimsAt(t0), "exp", t0.Add(time.Minute).Unix())
			var tok string
			if o.JWKSURL != "" {
				tok = rsaK.sign(t, c)
			} else {
				var err error
				tok, err = jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(hsSecret)
				require.NoError(t, err)
			}
			first, err := v.Verify(t.Context(), tok)
			require.NoError(t, err)
			require.Equal(t, 1, v.CacheLen(), "the verified claims are cached")
			again, err := v.Verify(t.Context(), tok)
			require.NoError(t, err)
			require.Equal(t, first, again)

			clk.Set(t0.Add(time.Minute + 29*time.Second))
			_, err = v.Verify(t.Context(), tok)
			require.NoError(t, err, "still inside exp + leeway")

			clk.Set(t0.Add(time.Minute + 30*time.Second))
			_, err = v.Verify(t.Context(), tok)
			requireUnauthenticated(t, err, tok)
			clk.Set(t0.Add(time.Hour))
			_, err = v.Verify(t.Context(), tok)
			requireUnauthenticated(t, err, tok)
		})
	}
}

// A token with nbf inside the leeway is accepted but not cached, so a
// cached entry can never let a not-yet-valid token skip the nbf check.
func TestVerifierCacheAndNotBefore(t *testing.T) {
	clk := newClock()
	t0 := clk.Now()
	v := newVerifier(t, auth.VerifierOptions{HS256Secret: hsSecret, Now: clk.Now})
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, with(claimsAt(t0), "nbf", t0.Add(20*time.Second).Unix())).SignedString(hsSecret)
	require.NoError(t, err)
	_, err = v.Verify(t.Context(), tok)
	require.NoError(t, err)
	require.Equal(t, 0, v.CacheLen())
	clk.Set(t0.Add(time.Minute))
	_, err = v.Verify(t.Context(), tok)
	require.NoError(t, err)
	require.Equal(t, 1, v.CacheLen())
}

func TestVerifierCacheIsBounded(t *testing.T) {
	clk := newClock()
	v := newVerifier(t, auth.VerifierOptions{HS256Secret: hsSecret, Now: clk.Now, CacheSize: 10})
	for range 35 {
		tok, err := auth.MintHS256(hsSecret, auth.MintOptions{Subject: uuid.NewString(), Now: clk.Now()})
		require.NoError(t, err)
		_, err = v.Verify(t.Context(), tok)
		require.NoError(t, err)
		require.LessOrEqual(t, v.CacheLen(), 10)
	}
}

func TestServiceScope(t *testing.T) {
	rsaK := newRSAKey(t, "rsa-1")
	srv := newJWKSServer(t, rsaK)
	v := newVerifier(t, auth.VerifierOptions{JWKSURL: srv.URL, HS256Secret: hsSecret, ServiceClients: []string{"backend"}})
	student := uuid.NewString()
	for scope, want := range map[string]bool{
		"matching:service":              true,
		"openid matching:service email": true,
		"  matching:service  ":          true,
		"":                              false,
		"matching:services":             false,
		"matching:service:read":         false,
		"Matching:Service":              false,
		"openid,matching:service":       false,
		"matching":                      false,
	} {
		c := claimsAt(time.Now())
		c["sub"] = student
		c["azp"] = "backend"
		if scope != "" {
			c["scope"] = scope
		}
		got, err := v.Verify(t.Context(), rsaK.sign(t, c))
		require.NoError(t, err)
		require.Equal(t, want, got.IsService(), "scope %q", scope)
		require.True(t, got.MayActFor(student))
		require.True(t, got.MayActFor(strings.ToUpper(student)))
		require.Equal(t, want, got.MayActFor(uuid.NewString()), "scope %q acting for another student", scope)
	}

	tok, err := auth.MintHS256(hsSecret, auth.MintOptions{Subject: "backend", Service: true})
	require.NoError(t, err)
	got, err := v.Verify(t.Context(), tok)
	require.NoError(t, err)
	require.True(t, got.IsService())
	require.Equal(t, "backend", got.Subject)

	tok, err = auth.MintHS256(hsSecret, auth.MintOptions{Subject: student})
	require.NoError(t, err)
	got, err = v.Verify(t.Context(), tok)
	require.NoError(t, err)
	require.False(t, got.IsService())
	require.False(t, got.MayActFor(""), "a student token acts for no empty id")
}

func TestVerifyConcurrent(t *testing.T) {
	rsaK, edK := newRSAKey(t, "rsa-1"), newEdKey(t, "ed-1")
	srv := newJWKSServer(t, rsaK, edK)
	v := newVerifier(t, auth.VerifierOptions{JWKSURL: srv.URL, CacheSize: 8})
	toks := make([]string, 16)
	for i := range toks {
		k := rsaK
		if i%2 == 1 {
			k = edK
		}
		toks[i] = k.sign(t, claimsAt(time.Now()))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if _, err := v.Verify(context.Background(), toks[(g+i)%len(toks)]); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// matching:service is granted only to the clients AUTH_SERVICE_CLIENTS
// names, by azp or client_id; from any other client the scope is ignored
// (the token acts for its own subject only) and ServiceRefused says so.
// With no list, no JWKS-signed token gets it; HS256 development tokens do.
func TestServiceScopeOnlyFromListedClients(t *testing.T) {
	rsaK := newRSAKey(t, "rsa-1")
	srv := newJWKSServer(t, rsaK)
	listed := newVerifier(t, auth.VerifierOptions{JWKSURL: srv.URL, ServiceClients: []string{"backend", "reports"}})
	unlisted := newVerifier(t, auth.VerifierOptions{JWKSURL: srv.URL})
	hs := newVerifier(t, auth.VerifierOptions{HS256Secret: hsSecret})
	other := uuid.NewString()

	serviceToken := func(extra map[string]any) string {
		c := claimsAt(time.Now())
		c["sub"] = "svc-" + uuid.NewString()
		c["scope"] = "openid " + auth.ServiceScope
		for k, v := range extra {
			c[k] = v
		}
		return rsaK.sign(t, c)
	}
	for name, tc := range map[string]struct {
		v       *auth.Verifier
		claims  map[string]any
		service bool
	}{
		"listed azp":                     {listed, map[string]any{"azp": "backend"}, true},
		"listed client_id":               {listed, map[string]any{"client_id": "reports"}, true},
		"listed client_id, other azp":    {listed, map[string]any{"azp": "web", "client_id": "reports"}, true},
		"unlisted azp":                   {listed, map[string]any{"azp": "mobile-app"}, false},
		"unlisted client_id":             {listed, map[string]any{"client_id": "mobile-app"}, false},
		"no client named":                {listed, nil, false},
		"a listed name in another claim": {listed, map[string]any{"aud": "backend", "sub": "backend"}, false},
		"a listed name in another case":  {listed, map[string]any{"azp": "Backend"}, false},
		"empty list, azp":                {unlisted, map[string]any{"azp": "backend"}, false},
		"empty list, client_id":          {unlisted, map[string]any{"client_id": "backend"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := tc.v.Verify(t.Context(), serviceToken(tc.claims))
			require.NoError(t, err, "the token itself is valid")
			require.Equal(t, tc.service, got.IsService())
			require.Equal(t, tc.service, got.MayActFor(other))
			require.Equal(t, !tc.service, got.ServiceRefused)
			require.True(t, got.MayActFor(got.Subject), "the token still acts for its own subject")
			require.Contains(t, got.Scopes, "openid", "other scopes stay")
		})
	}

	// HS256 (development, AUTH_HS256_SECRET): the scope is granted with an
	// empty list, whatever client the token names.
	for _, extra := range []map[string]any{nil, {"azp": "anything"}} {
		c := claimsAt(time.Now())
		c["scope"] = auth.ServiceScope
		for k, v := range extra {
			c[k] = v
		}
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(hsSecret)
		require.NoError(t, err)
		got, err := hs.Verify(t.Context(), tok)
		require.NoError(t, err)
		require.True(t, got.IsService())
		require.False(t, got.ServiceRefused)
	}
	minted, err := auth.MintHS256(hsSecret, auth.MintOptions{Subject: "backend", Service: true})
	require.NoError(t, err)
	got, err := hs.Verify(t.Context(), minted)
	require.NoError(t, err)
	require.True(t, got.MayActFor(other), "matchctl token --service works in development")

	// A refused scope stays refused when the token comes from the cache.
	tok := serviceToken(map[string]any{"azp": "mobile-app"})
	for range 2 {
		got, err := listed.Verify(t.Context(), tok)
		require.NoError(t, err)
		require.False(t, got.IsService())
	}
	require.True(t, listed.Cached(tok))
}
