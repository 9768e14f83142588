package httpapi_test

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/MicahParks/jwkset"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/auth"
	"github.com/collegematch/matching/internal/config"
	"github.com/collegematch/matching/internal/httpapi"
	"github.com/collegematch/matching/internal/ratelimit"
)

// withVerifier replaces the HS256 test verifier.
func withVerifier(v httpapi.TokenVerifier) apiOption {
	return func(d *httpapi.Deps) { d.Verifier = v }
}

// withFailClosed makes the API refuse requests it cannot count.
func withFailClosed() apiOption {
	return func(d *httpapi.Deps) { d.RateLimits.FailClosed = true }
}

// withUnreachableRedis gives the API a limiter whose Redis never answers,
// as during an outage (nothing listens on port 1).
func withUnreachableRedis(t *testing.T) apiOption {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	return func(d *httpapi.Deps) { d.Limiter = ratelimit.NewPipelined(rdb, d.RateLimits) }
}

// withUnreachableRedisRates is withUnreachableRedis with the given
// allowances.
func withUnreachableRedisRates(t *testing.T, rl config.RateLimits) apiOption {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	return withRates(rdb, rl)
}

// withRates gives the API a limiter on rdb with the given allowances.
func withRates(rdb redis.UniversalClient, rl config.RateLimits) apiOption {
	return func(d *httpapi.Deps) {
		d.RateLimits = rl
		d.Limiter = ratelimit.NewPipelined(rdb, rl)
	}
}

// jwksVerifier serves priv's public key as kid (alg RS256) from a JWKS
// endpoint and returns a verifier that reads it, accepting the HS256 test
// secret as well when hs256 is set.
func jwksVerifier(t *testing.T, priv *rsa.PrivateKey, kid string, hs256 bool) *auth.Verifier {
	t.Helper()
	o := auth.VerifierOptions{}
	if hs256 {
		o.HS256Secret = testSecret
	}
	return jwksVerifierWith(t, priv, kid, o)
}

// jwksVerifierWith is jwksVerifier with more options (the JWKS URL is
// filled in).
func jwksVerifierWith(t *testing.T, priv *rsa.PrivateKey, kid string, o auth.VerifierOptions) *auth.Verifier {
	t.Helper()
	jwk, err := jwkset.NewJWKFromKey(&priv.PublicKey, jwkset.JWKOptions{
		Metadata: jwkset.JWKMetadataOptions{KID: kid, ALG: jwkset.AlgRS256, USE: jwkset.UseSig},
	})
	require.NoError(t, err)
	body, err := json.Marshal(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{jwk.Marshal()}})
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	o.JWKSURL = srv.URL
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := auth.NewVerifier(ctx, o)
	require.NoError(t, err)
	return v
}

// counterValue reads one counter of reg with exactly the given labels (0
// when it has not been touched).
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelsMatch(m.GetLabel(), labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func labelsMatch(have []*dto.LabelPair, want map[string]string) bool {
	if len(have) != len(want) {
		return false
	}
	for _, l := range have {
		if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
			return false
		}
	}
	return true
}
