package auth

import (
	"context"
	"crypto"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/collegematch/matching/internal/domain"
)

// Leeway is the clock skew allowed on exp, nbf and iat.
const Leeway = 30 * time.Second

// Asymmetric algorithms accepted from the identity provider's JWKS.
var jwksAlgorithms = []string{"RS256", "ES256", "EdDSA"}

// VerifierOptions configure a Verifier. At least one of JWKSURL and
// HS256Secret must be set.
type VerifierOptions struct {
	JWKSURL     string
	HS256Secret []byte
	Issuer      string // checked when set
	Audience    string // checked when set

	// JWKSRefresh is how often the key set is fetched in the background
	// (default 1h); an unknown kid also triggers a fetch, at most once per
	// JWKSUnknownKIDEvery (default 1m).
	JWKSRefresh         time.Duration
	JWKSUnknownKIDEvery time.Duration
	HTTPClient          *http.Client
	Log                 *slog.Logger

	// MaxLifetime is the longest token lifetime accepted (default
	// DefaultMaxLifetime): a token whose exp is further than that after its
	// iat, or after now, is refused, so a leaked long-lived token cannot be
	// used for months.
	MaxLifetime time.Duration

	// ServiceClients are the clients whose JWKS-signed tokens may carry
	// ServiceScope: a token's azp (OpenID Connect) or client_id (RFC 9068
	// access tokens) must be one of them. From any other client the scope
	// is not granted (the token acts for its own subject only). Empty: no
	// JWKS-signed token may act for every student. Tokens signed with
	// HS256Secret (development) keep the scope whatever their client:
	// whoever holds the secret can write any azp anyway.
	ServiceClients []string

	// CacheSize bounds the verified-token cache (default 100,000 tokens).
	CacheSize int
	Now       func() time.Time // for tests
}

// DefaultMaxLifetime is the longest token lifetime accepted by default.
const DefaultMaxLifetime = 24 * time.Hour

// Verifier checks tokens and caches verified claims until they expire, so
// a client reusing its token pays for the signature check once. A cached
// token signed with a key of the JWKS stays valid only while the key set
// still publishes that key under that kid: a refresh that removes or
// replaces it makes the token fail at once.
type Verifier struct {
	opts   VerifierOptions
	jwks   keyfunc.Keyfunc
	keys   *jwkset.MemoryJWKSet // the key set as last fetched (read without fetching)
	parser *jwt.Parser
	now    func() time.Time
	cache  *tokenCache
}

// NewVerifier builds a verifier; with a JWKS URL it fetches the key set now
// (a failing first fetch is logged, not fatal, and retried on use) and keeps
// it fresh until ctx ends.
func NewVerifier(ctx context.Context, o VerifierOptions) (*Verifier, error) {
	if o.JWKSURL == "" && len(o.HS256Secret) == 0 {
		return nil, errors.New("auth: AUTH_JWKS_URL or AUTH_HS256_SECRET is required")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.MaxLifetime <= 0 {
		o.MaxLifetime = DefaultMaxLifetime
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 100_000
	}
	v := &Verifier{opts: o, now: o.Now, cache: newTokenCache(o.CacheSize)}
	if v.now == nil {
		v.now = time.Now
	}
	var methods []string
	if len(o.HS256Secret) > 0 {
		methods = append(methods, "HS256")
	}
	if o.JWKSURL != "" {
		methods = append(methods, jwksAlgorithms...)
		refresh := o.JWKSRefresh
		if refresh <= 0 {
			refresh = time.Hour
		}
		every := o.JWKSUnknownKIDEvery
		if every <= 0 {
			every = time.Minute
		}
		kf, keys, err := newJWKS(ctx, o, refresh, every)
		if err != nil {
			return nil, fmt.Errorf("auth: JWKS %s: %w", o.JWKSURL, err)
		}
		v.jwks, v.keys = kf, keys
	}
	popts := []jwt.ParserOption{
		jwt.WithValidMethods(methods),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(Leeway),
		jwt.WithTimeFunc(v.now),
	}
	if o.Issuer != "" {
		popts = append(popts, jwt.WithIssuer(o.Issuer))
	}
	if o.Audience != "" {
		popts = append(popts, jwt.WithAudience(o.Audience))
	}
	v.parser = jwt.NewParser(popts...)
	return v, nil
}

type tokenClaims struct {
	jwt.RegisteredClaims
	Scope string `json:"scope,omitempty"`
	// AuthorizedParty (OpenID Connect's azp) and ClientID (RFC 9068) name
	// the client the token was issued to.
	AuthorizedParty string `json:"azp,omitempty"`
	ClientID        string `json:"client_id,omitempty"`
}

// newJWKS builds the key set client: the keys are fetched now (a failing
// first fetch is logged and retried on use), every refresh in the
// background and on an unknown kid at most once per every. It returns the
// in-memory key set the fetches fill, which the cache reads without ever
// causing a fetch.
func newJWKS(ctx context.Context, o VerifierOptions, refresh, every time.Duration) (keyfunc.Keyfunc, *jwkset.MemoryJWKSet, error) {
	keys := jwkset.NewMemoryStorage()
	store, err := jwkset.NewStorageFromHTTP(o.JWKSURL, jwkset.HTTPClientStorageOptions{
		Client:                    o.HTTPClient,
		Ctx:                       ctx,
		HTTPTimeout:               5 * time.Second,
		NoErrorReturnFirstHTTPReq: true,
		RefreshInterval:           refresh,
		RefreshErrorHandler: func(ctx context.Context, err error) {
			o.Log.WarnContext(ctx, "JWKS refresh failed", "url", o.JWKSURL, "err", err)
		},
		Storage: keys,
	})
	if err != nil {
		return nil, nil, err
	}
	client, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs:          map[string]jwkset.Storage{o.JWKSURL: store},
		RateLimitWaitMax:  2 * time.Second,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(every), 1),
	})
	if err != nil {
		return nil, nil, err
	}
	kf, err := keyfunc.New(keyfunc.Options{Ctx: ctx, Storage: client})
	return kf, keys, err
}

// signer is the key a token was verified with: its kid and public key,
// both empty for the HS256 secret.
type signer struct {
	kid string
	key crypto.PublicKey
}

// shared reports whether the token was signed with the HS256 secret.
func (s signer) shared() bool { return s.kid == "" }

// keyFor picks the key by the token's algorithm: the shared secret for
// HS256, the JWKS for the asymmetric ones, and records the JWKS key used in
// used. The parser has already refused any algorithm not configured, so an
// HS256 token can never be checked against a public key.
func (v *Verifier) keyFor(ctx context.Context, used *signer) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		if t.Method.Alg() == "HS256" {
			if len(v.opts.HS256Secret) == 0 {
				return nil, errors.New("HS256 tokens are not accepted")
			}
			return v.opts.HS256Secret, nil
		}
		if v.jwks == nil {
			return nil, fmt.Errorf("%s tokens are not accepted", t.Method.Alg())
		}
		kid, ok := t.Header["kid"].(string)
		if !ok {
			return nil, errors.New("token has no kid")
		}
		key, err := v.jwks.KeyfuncCtx(ctx)(t)
		if err != nil {
			return nil, err
		}
		*used = signer{kid: kid, key: key}
		return key, nil
	}
}

// stillPublished reports whether the key set as last fetched still holds
// the key a cached token was verified with, under the same kid.
func (v *Verifier) stillPublished(ctx context.Context, s signer) bool {
	if s.shared() {
		return true // the HS256 secret, which cannot change while the API runs
	}
	jwk, err := v.keys.KeyRead(ctx, s.kid)
	if err != nil {
		return false
	}
	key := jwk.Key()
	if pk, ok := key.(interface{ Public() crypto.PublicKey }); ok {
		key = pk.Public()
	}
	cur, ok := key.(interface{ Equal(crypto.PublicKey) bool })
	return ok && cur.Equal(s.key)
}

// Verify checks raw and returns its claims. Every failure is a
// KindUnauthenticated *domain.Error with a message that names the problem
// without echoing the token.
func (v *Verifier) Verify(ctx context.Context, raw string) (Claims, error) {
	key := sha256Sum(raw)
	now := v.now()
	if e, ok := v.cache.get(key); ok {
		if now.Before(e.claims.ExpiresAt.Add(Leeway)) && v.stillPublished(ctx, e.signer) {
			return e.claims, nil
		}
		v.cache.remove(key)
	}

	var tc tokenClaims
	var used signer
	_, err := v.parser.ParseWithClaims(raw, &tc, v.keyFor(ctx, &used))
	if err != nil {
		return Claims{}, &domain.Error{Kind: domain.KindUnauthenticated, Code: domain.CodeUnauthorized,
			Message: "invalid token: " + reason(err), Err: err}
	}
	if tc.Subject == "" {
		return Claims{}, domain.Errorf(domain.KindUnauthenticated, "invalid token: sub is required")
	}
	if p := v.lifetimeProblem(tc, now); p != "" {
		return Claims{}, domain.Errorf(domain.KindUnauthenticated, "invalid token: %s", p)
	}
	c := Claims{Subject: tc.Subject, Scopes: strings.Fields(tc.Scope), ExpiresAt: tc.ExpiresAt.Time}
	if c.IsService() && !v.serviceClient(tc, used) {
		// The scope is not granted: the token still acts for its own
		// subject, and acting for anyone else is 403 (ServiceRefused says
		// why). Logged once per token: verified tokens are cached.
		c.Scopes = slices.DeleteFunc(c.Scopes, func(s string) bool { return s == ServiceScope })
		c.ServiceRefused = true
		v.opts.Log.WarnContext(ctx, "token carries "+ServiceScope+" from a client AUTH_SERVICE_CLIENTS does not name; scope ignored",
			"azp", tc.AuthorizedParty, "client_id", tc.ClientID, "sub", tc.Subject)
	}
	// Tokens not valid yet (nbf in the leeway) are not cached, so nbf is
	// checked again on their next use.
	if tc.NotBefore == nil || !tc.NotBefore.After(now) {
		v.cache.put(key, cacheEntry{claims: c, signer: used})
	}
	return c, nil
}

// serviceClient reports whether a token verified with used may carry
// ServiceScope: signed with the HS256 secret (development), or issued to a
// client ServiceClients names, by azp or client_id.
func (v *Verifier) serviceClient(tc tokenClaims, used signer) bool {
	if used.shared() {
		return true
	}
	for _, id := range []string{tc.AuthorizedParty, tc.ClientID} {
		if id != "" && slices.Contains(v.opts.ServiceClients, id) {
			return true
		}
	}
	return false
}

func sha256Sum(raw string) [32]byte { return sha256.Sum256([]byte(raw)) }

// lifetimeProblem says why a verified token lives too long, "" when it
// does not: exp may be at most MaxLifetime after iat (when the token has
// one) and after now (with the leeway).
func (v *Verifier) lifetimeProblem(tc tokenClaims, now time.Time) string {
	limit := v.opts.MaxLifetime
	exp := tc.ExpiresAt.Time
	if tc.IssuedAt != nil && exp.Sub(tc.IssuedAt.Time) > limit {
		return "lifetime (exp - iat) is longer than the " + limit.String() + " accepted"
	}
	if exp.Sub(now) > limit+Leeway {
		return "expires more than " + limit.String() + " from now, longer than accepted"
	}
	return ""
}

func reason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "a required claim (exp) is missing"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "expired"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "not valid yet"
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "issued in the future (iat)"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "wrong issuer"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "wrong audience"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "bad signature"
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "cannot be verified with the configured keys (algorithm or key id not accepted)"
	}
	return "rejected"
}
