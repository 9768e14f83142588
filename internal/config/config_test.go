package config_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

const secret = "0123456789abcdef0123456789abcdef"

func TestDefaults(t *testing.T) {
	c, err := config.Load(env(map[string]string{"AUTH_HS256_SECRET": secret}), config.RoleAPI)
	require.NoError(t, err)
	assert.Equal(t, config.DefaultDatabaseURL, c.DatabaseURL)
	assert.Equal(t, "redis://127.0.0.1:6379/0", c.RedisURL)
	assert.Equal(t, ":8080", c.HTTPAddr)
	assert.Equal(t, "127.0.0.1:9090", c.OpsAddr)
	assert.Equal(t, 5*time.Minute, c.FeedCacheTTL)
	assert.Equal(t, 5*time.Minute, c.FeedCooldown)
	assert.Equal(t, config.Rate{N: 60, Period: time.Minute}, c.RateLimits.Recommendations)
	assert.Equal(t, config.Rate{N: 300, Period: time.Minute}, c.RateLimits.Swipes)
	assert.Equal(t, config.Rate{N: 20, Period: time.Minute}, c.RateLimits.Batch)
	assert.Equal(t, config.Rate{N: 600, Period: time.Minute}, c.RateLimits.Default)
	assert.Equal(t, 64<<10, c.RateLimits.CommentBytes)
	assert.False(t, c.RateLimits.FailClosed)
	assert.Empty(t, c.CORSAllowedOrigins)

	assert.Equal(t, c.DatabaseURL, c.MigrateDatabaseURL, "migrations use DATABASE_URL unless told otherwise")

	w, err := config.Load(env(nil), config.RoleWorker)
	require.NoError(t, err, "the worker checks no tokens")
	assert.Equal(t, "127.0.0.1:9091", w.OpsAddr)
	assert.Equal(t, 20, w.WorkerConcurrency)
	assert.Equal(t, 50, w.WebhookConcurrency)
	assert.Equal(t, 720*time.Hour, w.WebhookRetention)
}

func TestWebhookRetention(t *testing.T) {
	c, err := config.Load(env(map[string]string{"WEBHOOK_RETENTION": "2160h"}), config.RoleWorker)
	require.NoError(t, err)
	assert.Equal(t, 90*24*time.Hour, c.WebhookRetention)
	assert.Contains(t, fmt.Sprint(c.LogValue()), "webhook_retention")
	for _, v := range []string{"0", "-1h", "a month", "47h"} {
		_, err := config.Load(env(map[string]string{"WEBHOOK_RETENTION": v}), config.RoleWorker)
		assert.ErrorContains(t, err, "WEBHOOK_RETENTION", v)
	}
	_, err = config.Load(env(map[string]string{"WEBHOOK_RETENTION": "48h"}), config.RoleWorker)
	assert.NoError(t, err)
}

func TestPoolerAndWorkerKnobs(t *testing.T) {
	c, err := config.Load(env(map[string]string{
		"DATABASE_URL":         "postgres://app@pgbouncer:6432/matching?default_query_exec_mode=cache_describe",
		"MIGRATE_DATABASE_URL": "postgres://owner:pw@db:5432/matching",
		"WORKER_CONCURRENCY":   "8", "WEBHOOK_CONCURRENCY": "200", "WORKER_FACTOR_CACHE_MB": "768",
		"LEARN_SHARDS": "64",
	}), config.RoleWorker)
	require.NoError(t, err)
	assert.Equal(t, 768, c.FactorCacheMB)
	assert.Equal(t, 64, c.LearnShards)
	assert.Equal(t, "postgres://owner:pw@db:5432/matching", c.MigrateDatabaseURL)
	assert.Equal(t, 8, c.WorkerConcurrency)
	assert.Equal(t, 200, c.WebhookConcurrency)
	assert.NotContains(t, fmt.Sprint(c.LogValue()), "pw", "the migration URL's password is redacted")

	for name, v := range map[string]string{"WORKER_CONCURRENCY": "0", "WEBHOOK_CONCURRENCY": "lots",
		"MIGRATE_DATABASE_URL": "mysql://x", "WORKER_FACTOR_CACHE_MB": "0.5GB", "LEARN_SHARDS": "0"} {
		_, err := config.Load(env(map[string]string{name: v}), config.RoleWorker)
		assert.ErrorContains(t, err, name, v)
	}
	_, err = config.Load(env(map[string]string{"WORKER_CONCURRENCY": "100000"}), config.RoleWorker)
	assert.ErrorContains(t, err, "from 1 to 10000")
	_, err = config.Load(env(map[string]string{"WORKER_FACTOR_CACHE_MB": "0"}), config.RoleWorker)
	assert.ErrorContains(t, err, "WORKER_FACTOR_CACHE_MB")
	c, err = config.Load(env(nil), config.RoleWorker)
	require.NoError(t, err)
	assert.Zero(t, c.FactorCacheMB, "not set: the worker sizes it")
	assert.Equal(t, config.DefaultLearnShards, c.LearnShards)
	_, err = config.Load(env(map[string]string{"LEARN_SHARDS": "1025"}), config.RoleAPI)
	assert.ErrorContains(t, err, "LEARN_SHARDS")
}

func TestOverrides(t *testing.T) {
	c, err := config.Load(env(map[string]string{
		"AUTH_JWKS_URL": "https://id.example.com/.well-known/jwks.json", "AUTH_ISSUER": "https://id.example.com/",
		"AUTH_AUDIENCE": "matching", "FEED_COOLDOWN": "3s", "RATE_LIMIT_BATCH": "5/s",
		"RATE_LIMIT_FAIL_CLOSED": "1", "CORS_ALLOWED_ORIGINS": "https://a.example.com, https://b.example.com",
		"LOG_LEVEL": "debug", "OPS_ADDR": "127.0.0.1:9999", "FEEDBACK_COMMENT_BYTES_PER_MIN": "4096",
	}), config.RoleAPI)
	require.NoError(t, err)
	assert.Equal(t, 4096, c.RateLimits.CommentBytes)
	assert.Equal(t, 3*time.Second, c.FeedCooldown)
	assert.Equal(t, config.Rate{N: 5, Period: time.Second}, c.RateLimits.Batch)
	assert.True(t, c.RateLimits.FailClosed)
	assert.Equal(t, []string{"https://a.example.com", "https://b.example.com"}, c.CORSAllowedOrigins)
	assert.Equal(t, "127.0.0.1:9999", c.OpsAddr)
}

func TestEveryProblemOnOneLine(t *testing.T) {
	_, err := config.Load(env(map[string]string{
		"AUTH_HS256_SECRET": "short", "FEED_CACHE_TTL": "-1m", "RATE_LIMIT_DEFAULT": "0/min", "REDIS_URL": "http://x",
		"HTTP_ADDR": "8080", "FEEDBACK_COMMENT_BYTES_PER_MIN": "64KiB",
	}), config.RoleAPI)
	require.Error(t, err)
	msg := err.Error()
	assert.NotContains(t, msg, "\n")
	for _, name := range []string{"AUTH_HS256_SECRET", "FEED_CACHE_TTL", "RATE_LIMIT_DEFAULT", "REDIS_URL", "HTTP_ADDR",
		"FEEDBACK_COMMENT_BYTES_PER_MIN"} {
		assert.Contains(t, msg, name)
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]config.Rate{"60/min": {60, time.Minute}, "10/s": {10, time.Second}, " 7/m ": {7, time.Minute}} {
		got, err := config.ParseRate(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for _, bad := range []string{"", "60", "x/min", "-1/min", "10/h", "0/s"} {
		_, err := config.ParseRate(bad)
		assert.Error(t, err, bad)
	}
}

func TestLogValueRedactsSecrets(t *testing.T) {
	c, err := config.Load(env(map[string]string{"AUTH_HS256_SECRET": secret,
		"DATABASE_URL": "postgres://app:hunter2@db:5432/matching", "OPS_ADMIN_TOKEN": "adm1n-t0ken"}), config.RoleAPI)
	require.NoError(t, err)
	assert.Equal(t, "adm1n-t0ken", c.OpsAdminToken)
	s := c.LogValue().String()
	assert.False(t, strings.Contains(s, "hunter2"), s)
	assert.False(t, strings.Contains(s, secret), s)
	assert.False(t, strings.Contains(s, "adm1n-t0ken"), s)
	assert.Contains(t, s, "ops_admin_token=true")
}

// Unsafe authentication settings stop the API at start-up, each naming
// its variable; AUTH_ALLOW_INSECURE=1 lets them through and lists them.
func TestAuthHazardsAreRefused(t *testing.T) {
	const jwks, iss, aud = "https://id.example.com/.well-known/jwks.json", "https://id.example.com/", "matching"
	safe := map[string]map[string]string{
		"hs256 only":               {"AUTH_HS256_SECRET": secret},
		"jwks with iss and aud":    {"AUTH_JWKS_URL": jwks, "AUTH_ISSUER": iss, "AUTH_AUDIENCE": aud},
		"http jwks on 127.0.0.1":   {"AUTH_JWKS_URL": "http://127.0.0.1:8443/jwks.json", "AUTH_ISSUER": iss, "AUTH_AUDIENCE": aud},
		"http jwks on localhost":   {"AUTH_JWKS_URL": "http://localhost/jwks.json", "AUTH_ISSUER": iss, "AUTH_AUDIENCE": aud},
		"http jwks on [::1]":       {"AUTH_JWKS_URL": "http://[::1]:9000/jwks", "AUTH_ISSUER": iss, "AUTH_AUDIENCE": aud},
		"http jwks on 127.0.0.200": {"AUTH_JWKS_URL": "http://127.0.0.200/jwks", "AUTH_ISSUER": iss, "AUTH_AUDIENCE": aud},
	}
	for name, e := range safe {
		t.Run("accepts "+name, func(t *testing.T) {
			c, err := config.Load(env(e), config.RoleAPI)
			require.NoError(t, err)
			assert.Empty(t, c.AuthInsecure)
		})
	}
	unsafe := map[string]struct {
		env  map[string]string
		want []string // variables named
	}{
		"secret beside jwks": {map[string]string{"AUTH_JWKS_URL": jwks, "AUTH_ISSUER": iss, "AUTH_AUDIENCE": aud,
			"AUTH_HS256_SECRET": secret}, []string{"AUTH_HS256_SECRET"}},
		"plain http jwks": {map[string]string{"AUTH_JWKS_URL": "http://id.example.com/jwks.json", "AUTH_ISSUER": iss,
			"AUTH_AUDIENCE": aud}, []string{"AUTH_JWKS_URL"}},
		"plain http jwks on a private address": {map[string]string{"AUTH_JWKS_URL": "http://10.0.0.5/jwks.json",
			"AUTH_ISSUER": iss, "AUTH_AUDIENCE": aud}, []string{"AUTH_JWKS_URL"}},
		"plain http jwks on a name ending in localhost": {map[string]string{"AUTH_JWKS_URL": "http://evil-localhost.example/jwks",
			"AUTH_ISSUER": iss, "AUTH_AUDIENCE": aud}, []string{"AUTH_JWKS_URL"}},
		"jwks without audience": {map[string]string{"AUTH_JWKS_URL": jwks, "AUTH_ISSUER": iss}, []string{"AUTH_AUDIENCE"}},
		"jwks without issuer":   {map[string]string{"AUTH_JWKS_URL": jwks, "AUTH_AUDIENCE": aud}, []string{"AUTH_ISSUER"}},
		"everything at once": {map[string]string{"AUTH_JWKS_URL": "http://id.example.com/jwks", "AUTH_HS256_SECRET": secret},
			[]string{"AUTH_HS256_SECRET", "AUTH_JWKS_URL", "AUTH_ISSUER", "AUTH_AUDIENCE"}},
	}
	for name, tc := range unsafe {
		t.Run("refuses "+name, func(t *testing.T) {
			_, err := config.Load(env(tc.env), config.RoleAPI)
			require.Error(t, err)
			for _, v := range tc.want {
				assert.Contains(t, err.Error(), v+": ")
			}
			assert.Contains(t, err.Error(), "AUTH_ALLOW_INSECURE=1")

			allowed := map[string]string{"AUTH_ALLOW_INSECURE": "1"}
			for k, v := range tc.env {
				allowed[k] = v
			}
			c, err := config.Load(env(allowed), config.RoleAPI)
			require.NoError(t, err, "the development override lets it through")
			require.Len(t, c.AuthInsecure, len(tc.want))
			assert.Contains(t, c.LogValue().String(), "auth_insecure")

			_, err = config.Load(env(tc.env), config.RoleWorker)
			require.NoError(t, err, "the worker checks no tokens")
		})
	}
	_, err := config.Load(env(map[string]string{"AUTH_HS256_SECRET": secret, "AUTH_ALLOW_INSECURE": "yes"}), config.RoleAPI)
	require.ErrorContains(t, err, "AUTH_ALLOW_INSECURE")
}

func TestMaxTokenLifetime(t *testing.T) {
	c, err := config.Load(env(map[string]string{"AUTH_HS256_SECRET": secret}), config.RoleAPI)
	require.NoError(t, err)
	assert.Equal(t, 24*time.Hour, c.MaxTokenLifetime)
	c, err = config.Load(env(map[string]string{"AUTH_HS256_SECRET": secret, "AUTH_MAX_TOKEN_LIFETIME": "2h"}), config.RoleAPI)
	require.NoError(t, err)
	assert.Equal(t, 2*time.Hour, c.MaxTokenLifetime)
	for _, v := range []string{"soon", "0s", "30s", "-1h", "8760h"} {
		_, err := config.Load(env(map[string]string{"AUTH_HS256_SECRET": secret, "AUTH_MAX_TOKEN_LIFETIME": v}), config.RoleAPI)
		assert.ErrorContains(t, err, "AUTH_MAX_TOKEN_LIFETIME", v)
	}
}

func TestServiceClients(t *testing.T) {
	idp := map[string]string{"AUTH_JWKS_URL": "https://id.example.com/jwks", "AUTH_ISSUER": "https://id.example.com/", "AUTH_AUDIENCE": "matching"}
	c, err := config.Load(env(idp), config.RoleAPI)
	require.NoError(t, err)
	assert.Empty(t, c.ServiceClients, "unset: no client may act for every student")
	idp["AUTH_SERVICE_CLIENTS"] = " backend, reports,,backend "
	c, err = config.Load(env(idp), config.RoleAPI)
	require.NoError(t, err)
	assert.Equal(t, []string{"backend", "reports"}, c.ServiceClients)
}

func TestGoMemLimitSet(t *testing.T) {
	c, err := config.Load(env(nil), config.RoleWorker)
	require.NoError(t, err)
	assert.False(t, c.GoMemLimitSet)
	c, err = config.Load(env(map[string]string{"GOMEMLIMIT": "400MiB"}), config.RoleWorker)
	require.NoError(t, err)
	assert.True(t, c.GoMemLimitSet)
}

// Variables is exactly what Load reads, whatever the role and values.
func TestVariables(t *testing.T) {
	for _, role := range []config.Role{config.RoleAPI, config.RoleWorker, config.RoleCLI} {
		read := map[string]bool{}
		_, _ = config.Load(func(k string) string {
			read[k] = true
			if k == "AUTH_HS256_SECRET" {
				return secret
			}
			return ""
		}, role)
		want := map[string]bool{}
		for _, v := range config.Variables {
			assert.False(t, want[v], "%s listed twice", v)
			want[v] = true
		}
		assert.Equal(t, want, read, "role %d", role)
	}
}
