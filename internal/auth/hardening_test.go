package auth_test

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/auth"
)

// A cached token whose key the identity provider removes from its key set
// fails as soon as a refresh has seen the removal, whether an unknown kid
// or the background refresh fetched the set; before this, it stayed valid
// until its own exp.
func TestVerifierDropsCachedTokensWhoseKeyIsGone(t *testing.T) {
	t.Run("refresh on an unknown kid", func(t *testing.T) {
		keyA, keyB := newRSAKey(t, "key-a"), newECKey(t, "key-b")
		srv := newJWKSServer(t, keyA, keyB)
		v := newVerifier(t, auth.VerifierOptions{JWKSURL: srv.URL, JWKSRefresh: time.Hour, JWKSUnknownKIDEvery: time.Millisecond})
		tokA, tokB := keyA.sign(t, claimsAt(time.Now())), keyB.sign(t, claimsAt(time.Now()))
		for _, tok := range []string{tokA, tokB} {
			_, err := v.Verify(t.Context(), tok)
			require.NoError(t, err)
			require.True(t, v.Cached(tok))
		}

		srv.publish(keyB) // key-a is revoked
		unknown := newEdKey(t, "key-c").sign(t, claimsAt(time.Now()))
		time.Sleep(5 * time.Millisecond) // the unknown-kid refresh budget is back
		_, err := v.Verify(t.Context(), unknown)
		requireUnauthenticated(t, err, unknown)

		_, err = v.Verify(t.Context(), tokA)
		requireUnauthenticated(t, err, tokA)
		require.False(t, v.Cached(tokA), "the entry is dropped")
		_, err = v.Verify(t.Context(), tokB)
		require.NoError(t, err, "tokens of keys still published keep working")
		require.True(t, v.Cached(tokB))
	})
	t.Run("background refresh", func(t *testing.T) {
		keyA, keyB := newRSAKey(t, "key-a"), newECKey(t, "key-b")
		srv := newJWKSServer(t, keyA, keyB)
		v := newVerifier(t, auth.VerifierOptions{JWKSURL: srv.URL, JWKSRefresh: 20 * time.Millisecond, JWKSUnknownKIDEvery: time.Hour})
		tokA, tokB := keyA.sign(t, claimsAt(time.Now())), keyB.sign(t, claimsAt(time.Now()))
		for _, tok := range []string{tokA, tokB} {
			_, err := v.Verify(t.Context(), tok)
			require.NoError(t, err)
		}
		fetched := srv.fetches.Load()
		srv.publish(keyB)
		// The third fetch from now started after the change and has
		// stored the new set once the fourth starts.
		require.Eventually(t, func() bool { return srv.fetches.Load() >= fetched+4 }, 5*time.Second, 5*time.Millisecond)
		_, err := v.Verify(t.Context(), tokA)
		requireUnauthenticated(t, err, tokA)
		_, err = v.Verify(t.Context(), tokB)
		require.NoError(t, err)
	})
	t.Run("kid kept, key replaced", func(t *testing.T) {
		keyA := newRSAKey(t, "key-a")
		srv := newJWKSServer(t, keyA)
		v := newVerifier(t, auth.VerifierOptions{JWKSURL: srv.URL, JWKSRefresh: 20 * time.Millisecond, JWKSUnknownKIDEvery: time.Hour})
		tokA := keyA.sign(t, claimsAt(time.Now()))
		_, err := v.Verify(t.Context(), tokA)
		require.NoError(t, err)
		replacement := newRSAKey(t, "key-a")
		fetched := srv.fetches.Load()
		srv.publish(replacement)
		require.Eventually(t, func() bool { return srv.fetches.Load() >= fetched+4 }, 5*time.Second, 5*time.Millisecond)
		_, err = v.Verify(t.Context(), tokA)
		requireUnauthenticated(t, err, tokA)
		_, err = v.Verify(t.Context(), replacement.sign(t, claimsAt(time.Now())))
		require.NoError(t, err)
	})
}

// Token lifetime is bounded: exp may be at most MaxLifetime after iat and
// after now (a one-year token is refused however it is signed).
func TestVerifierBoundsTokenLifetime(t *testing.T) {
	clk := newClock()
	now := clk.Now()
	rsaK := newRSAKey(t, "rsa-1")
	srv := newJWKSServer(t, rsaK)
	jwksV := newVerifier(t, auth.VerifierOptions{JWKSURL: srv.URL, Now: clk.Now})
	hsV := newVerifier(t, auth.VerifierOptions{HS256Secret: hsSecret, Now: clk.Now})
	short := newVerifier(t, auth.VerifierOptions{HS256Secret: hsSecret, Now: clk.Now, MaxLifetime: 2 * time.Hour})
	base := jwt.MapClaims{"sub": uuid.NewString()}
	cases := []struct {
		name string
		c    jwt.MapClaims
		ok   bool
	}{
		{"1h", with(base, "iat", now.Unix(), "exp", now.Add(time.Hour).Unix()), true},
		{"exactly 24h", with(base, "iat", now.Unix(), "exp", now.Add(24*time.Hour).Unix()), true},
		{"24h, issued 23h ago", with(base, "iat", now.Add(-23*time.Hour).Unix(), "exp", now.Add(time.Hour).Unix()), true},
		{"24h without iat", with(base, "exp", now.Add(24*time.Hour).Unix()), true},
		{"25h", with(base, "iat", now.Unix(), "exp", now.Add(25*time.Hour).Unix()), false},
		{"one year", with(base, "iat", now.Unix(), "exp", now.Add(365*24*time.Hour).Unix()), false},
		{"one year, issued long ago, 1h left", with(base, "iat", now.Add(-365*24*time.Hour).Unix(), "exp", now.Add(time.Hour).Unix()), false},
		{"25h ahead without iat", with(base, "exp", now.Add(25*time.Hour).Unix()), false},
		{"25h ahead with a backdated iat", with(base, "iat", now.Add(2*time.Hour).Unix(), "exp", now.Add(26*time.Hour).Unix()), false},
		{"iat in the future", with(base, "iat", now.Add(time.Hour).Unix(), "exp", now.Add(2*time.Hour).Unix()), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for name, tok := range map[string]string{"jwks": rsaK.sign(t, tc.c), "hs256": hsSign(t, tc.c)} {
				v := jwksV
				if name == "hs256" {
					v = hsV
				}
				_, err := v.Verify(t.Context(), tok)
				if tc.ok {
					require.NoError(t, err, name)
				} else {
					requireUnauthenticated(t, err, tok)
				}
			}
		})
	}
	tok := hsSign(t, with(base, "iat", now.Unix(), "exp", now.Add(3*time.Hour).Unix()))
	_, err := short.Verify(t.Context(), tok)
	requireUnauthenticated(t, err, tok)
	_, err = hsV.Verify(t.Context(), tok)
	require.NoError(t, err)
}

func hsSign(t *testing.T, c jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(hsSecret)
	require.NoError(t, err)
	return s
}

// A full cache makes room for a new token by dropping old ones, a few at
// a time: it never empties (before, one insert into a full cache of
// unexpired tokens cleared all of them, after walking them under the
// write lock), and the newest tokens stay cached.
func TestVerifierCacheEvictsOldestOnly(t *testing.T) {
	const size = 64
	clk := newClock()
	v := newVerifier(t, auth.VerifierOptions{HS256Secret: hsSecret, Now: clk.Now, CacheSize: size})
	var toks []string
	for range 20 * size {
		tok, err := auth.MintHS256(hsSecret, auth.MintOptions{Subject: uuid.NewString(), Now: clk.Now()})
		require.NoError(t, err)
		_, err = v.Verify(t.Context(), tok)
		require.NoError(t, err)
		toks = append(toks, tok)
		require.LessOrEqual(t, v.CacheLen(), size)
	}
	require.Equal(t, size, v.CacheLen(), "a cache that has seen many tokens is full")
	for range 50 {
		tok, err := auth.MintHS256(hsSecret, auth.MintOptions{Subject: uuid.NewString(), Now: clk.Now()})
		require.NoError(t, err)
		_, err = v.Verify(t.Context(), tok)
		require.NoError(t, err)
		require.Equal(t, size, v.CacheLen(), "an insert into a full cache evicts one entry")
		require.True(t, v.Cached(tok))
		toks = append(toks, tok)
	}
	require.False(t, v.Cached(toks[0]), "the oldest tokens went first")
}
