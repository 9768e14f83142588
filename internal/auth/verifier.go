package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

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

	// CacheSize bounds the verified-token cache (default 100,000 tokens).
	CacheSize int
	Now       func() time.Time // for tests
}

// Verifier checks tokens and caches verified claims until they expire, so
// a client reusing its token pays for the signature check once.
type Verifier struct {
	opts    VerifierOptions
	jwks    keyfunc.Keyfunc
	parser  *jwt.Parser
	now     func() time.Time
	mu      sync.RWMutex
	cache   map[[32]byte]Claims
	maxSize int
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
	v := &Verifier{opts: o, now: o.Now, cache: map[[32]byte]Claims{}, maxSize: o.CacheSize}
	if v.now == nil {
		v.now = time.Now
	}
	if v.maxSize <= 0 {
		v.maxSize = 100_000
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
		kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{o.JWKSURL}, keyfunc.Override{
			Client:            o.HTTPClient,
			HTTPTimeout:       5 * time.Second,
			RefreshInterval:   refresh,
			RefreshUnknownKID: rate.NewLimiter(rate.Every(every), 1),
			RateLimitWaitMax:  2 * time.Second,
			RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
				return func(ctx context.Context, err error) {
					o.Log.WarnContext(ctx, "JWKS refresh failed", "url", u, "err", err)
				}
			},
		})
		if err != nil {
			return nil, fmt.Errorf("auth: JWKS %s: %w", o.JWKSURL, err)
		}
		v.jwks = kf
	}
	popts := []jwt.ParserOption{
		jwt.WithValidMethods(methods),
		jwt.WithExpirationRequired(),
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
}

// keyFor picks the key by the token's algorithm: the shared secret for
// HS256, the JWKS for the asymmetric ones. The parser has already refused
// any algorithm not configured, so an HS256 token can never be checked
// against a public key.
func (v *Verifier) keyFor(ctx context.Context) jwt.Keyfunc {
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
		if _, ok := t.Header["kid"].(string); !ok {
			return nil, errors.New("token has no kid")
		}
		return v.jwks.KeyfuncCtx(ctx)(t)
	}
}

// Verify checks raw and returns its claims. Every failure is a
// KindUnauthenticated *domain.Error with a message that names the problem
// without echoing the token.
func (v *Verifier) Verify(ctx context.Context, raw string) (Claims, error) {
	key := sha256.Sum256([]byte(raw))
	now := v.now()
	v.mu.RLock()
	c, ok := v.cache[key]
	v.mu.RUnlock()
	if ok && now.Before(c.ExpiresAt.Add(Leeway)) {
		return c, nil
	}

	var tc tokenClaims
	_, err := v.parser.ParseWithClaims(raw, &tc, v.keyFor(ctx))
	if err != nil {
		return Claims{}, &domain.Error{Kind: domain.KindUnauthenticated, Code: domain.CodeUnauthorized,
			Message: "invalid token: " + reason(err), Err: err}
	}
	if tc.Subject == "" {
		return Claims{}, domain.Errorf(domain.KindUnauthenticated, "invalid token: sub is required")
	}
	c = Claims{Subject: tc.Subject, Scopes: strings.Fields(tc.Scope), ExpiresAt: tc.ExpiresAt.Time}
	// Tokens not valid yet (nbf in the leeway) are not cached, so nbf is
	// checked again on their next use.
	if tc.NotBefore == nil || !tc.NotBefore.After(now) {
		v.mu.Lock()
		if len(v.cache) >= v.maxSize {
			v.evictExpired(now)
		}
		v.cache[key] = c
		v.mu.Unlock()
	}
	return c, nil
}

// evictExpired drops expired entries, and everything when that is not
// enough. The caller holds the write lock.
func (v *Verifier) evictExpired(now time.Time) {
	for k, c := range v.cache {
		if !now.Before(c.ExpiresAt.Add(Leeway)) {
			delete(v.cache, k)
		}
	}
	if len(v.cache) >= v.maxSize {
		clear(v.cache)
	}
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
