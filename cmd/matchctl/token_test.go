package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/auth"
)

// matchctl token mints only tokens the API accepts: a lifetime beyond
// AUTH_MAX_TOKEN_LIFETIME is a usage error.
func TestTokenLifetime(t *testing.T) {
	const secret = "matchctl-token-test-secret-0123456789"
	mint := func(env map[string]string, args ...string) (int, string, string) {
		env["AUTH_HS256_SECRET"] = secret
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"token"}, args...), func(k string) string { return env[k] }, &out, &errOut)
		return code, strings.TrimSpace(out.String()), errOut.String()
	}
	student := uuid.NewString()
	code, tok, errOut := mint(map[string]string{}, "--student", student, "--ttl", "24h")
	require.Equal(t, 0, code, errOut)
	v, err := auth.NewVerifier(t.Context(), auth.VerifierOptions{HS256Secret: []byte(secret)})
	require.NoError(t, err)
	c, err := v.Verify(t.Context(), tok)
	require.NoError(t, err)
	assert.Equal(t, student, c.Subject)

	code, _, errOut = mint(map[string]string{}, "--student", student, "--ttl", "25h")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--ttl must be at most 24h0m0s")
	code, _, errOut = mint(map[string]string{"AUTH_MAX_TOKEN_LIFETIME": "48h"}, "--student", student, "--ttl", "25h")
	assert.Equal(t, 0, code, errOut)
}
