// Package config is the only package that knows the service's environment
// variables. Load parses them into one typed, validated Config.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults of the "Running" table.
const (
	DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/matching?sslmode=disable"
	DefaultRedisURL    = "redis://127.0.0.1:6379/0"
	DefaultHTTPAddr    = ":8080"
	DefaultOpsAddr     = "127.0.0.1:9090"
	DefaultWorkerOps   = "127.0.0.1:9091"
	// DefaultWorkerConcurrency is the task slots of a worker replica for
	// learning and the relay. Most task time is spent waiting (PostgreSQL,
	// Redis), so it is well above the core count.
	DefaultWorkerConcurrency = 20
	// DefaultWebhookConcurrency is the webhook deliveries one worker replica
	// makes at once, in task slots of their own: an attempt mostly waits on
	// the subscriber (up to 10 s), so one slow endpoint must not take the
	// slots that learning needs.
	DefaultWebhookConcurrency = 50
	// maxConcurrency bounds both: far more than one process can use.
	maxConcurrency = 10000
	// DefaultCommentBytesPerMin is FEEDBACK_COMMENT_BYTES_PER_MIN's default:
	// 64 KiB of feedback comments per student per minute.
	DefaultCommentBytesPerMin = 64 << 10
	// maxCommentBytesPerMin bounds FEEDBACK_COMMENT_BYTES_PER_MIN (1 GiB).
	maxCommentBytesPerMin = 1 << 30
	// maxFactorCacheMB bounds WORKER_FACTOR_CACHE_MB (1 TiB).
	maxFactorCacheMB = 1 << 20
	// DefaultLearnShards and maxLearnShards are LEARN_SHARDS' default and
	// bound (the worker drains any shard below the bound).
	DefaultLearnShards = 4
	maxLearnShards     = 1024
)

// Variables names every environment variable Load reads (TestVariables
// checks the list against Load). Deploy files may set only these and the Go
// runtime's own (deploy/deploy_test.go).
var Variables = []string{
	"DATABASE_URL", "MIGRATE_DATABASE_URL", "REDIS_URL", "HTTP_ADDR", "OPS_ADDR", "OPS_ADMIN_TOKEN",
	"AUTH_JWKS_URL", "AUTH_HS256_SECRET", "AUTH_ISSUER", "AUTH_AUDIENCE", "AUTH_ALLOW_INSECURE", "AUTH_MAX_TOKEN_LIFETIME",
	"AUTH_SERVICE_CLIENTS",
	"GOMEMLIMIT", "FEED_CACHE_TTL", "FEED_COOLDOWN", "WEBHOOK_ENDPOINTS_FILE",
	"RATE_LIMIT_RECOMMENDATIONS", "RATE_LIMIT_SWIPES", "RATE_LIMIT_BATCH", "RATE_LIMIT_DEFAULT", "RATE_LIMIT_FAIL_CLOSED",
	"FEEDBACK_COMMENT_BYTES_PER_MIN", "CORS_ALLOWED_ORIGINS", "IMAGE_BASE_URL", "LOG_LEVEL", "PPROF",
	"WORKER_CONCURRENCY", "WEBHOOK_CONCURRENCY", "WEBHOOK_RETENTION", "WORKER_FACTOR_CACHE_MB",
	"LEARN_SHARDS",
}

// Rate is an allowance of N requests per Period.
type Rate struct {
	N      int
	Period time.Duration
}

func (r Rate) String() string {
	if r.Period == time.Second {
		return strconv.Itoa(r.N) + "/s"
	}
	return strconv.Itoa(r.N) + "/min"
}

// ParseRate reads "N/min" or "N/s".
func ParseRate(s string) (Rate, error) {
	n, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Rate{}, fmt.Errorf("%q is not of the form N/min or N/s", s)
	}
	v, err := strconv.Atoi(n)
	if err != nil || v <= 0 {
		return Rate{}, fmt.Errorf("%q: N must be a positive integer", s)
	}
	switch unit {
	case "min", "m":
		return Rate{N: v, Period: time.Minute}, nil
	case "s", "sec":
		return Rate{N: v, Period: time.Second}, nil
	}
	return Rate{}, fmt.Errorf("%q: unit must be min or s", s)
}

// RateLimits are the per-student allowances of each group.
type RateLimits struct {
	Recommendations Rate
	Swipes          Rate
	Batch           Rate
	Default         Rate
	// CommentBytes is how many bytes of feedback comments a student may
	// store per minute (FEEDBACK_COMMENT_BYTES_PER_MIN), whether sent by
	// POST /feedback or carried by a sync push.
	CommentBytes int
	FailClosed   bool
}

// Config is the whole configuration of the api, worker and matchctl binaries.
type Config struct {
	DatabaseURL string
	// MigrateDatabaseURL is what `matchctl migrate` connects to
	// (MIGRATE_DATABASE_URL, default DatabaseURL): migrations take a
	// session lock, which needs a direct connection, not a transaction
	// pooler.
	MigrateDatabaseURL string
	RedisURL           string
	HTTPAddr           string
	OpsAddr            string

	JWKSURL     string
	HS256Secret []byte
	Issuer      string
	Audience    string
	// MaxTokenLifetime is the longest token lifetime the API accepts
	// (exp - iat, and exp - now); AUTH_MAX_TOKEN_LIFETIME.
	MaxTokenLifetime time.Duration
	// ServiceClients are the azp or client_id values whose tokens may
	// carry matching:service (AUTH_SERVICE_CLIENTS, comma-separated).
	// Empty: no token from the identity provider may act for every
	// student; tokens signed with AUTH_HS256_SECRET (development) may.
	ServiceClients []string
	// AuthInsecure lists the unsafe authentication settings that
	// AUTH_ALLOW_INSECURE=1 let through (the API logs them at start-up);
	// without that variable Load refuses each of them.
	AuthInsecure []string

	// GoMemLimitSet reports whether GOMEMLIMIT is set: the Go runtime has
	// applied it, and the binaries leave the memory limit alone. Without
	// it they derive one from the container's memory limit (memlimit).
	GoMemLimitSet bool

	FeedCacheTTL time.Duration
	FeedCooldown time.Duration

	WebhookEndpointsFile string
	RateLimits           RateLimits
	CORSAllowedOrigins   []string
	// ImageBaseURL is the base of school image URLs (IMAGE_BASE_URL); empty
	// means the built-in default (match.DefaultImageBaseURL).
	ImageBaseURL string
	LogLevel     slog.Level
	PProf        bool
	// OpsAdminToken (OPS_ADMIN_TOKEN) lets a request carrying it as a
	// bearer token run again or delete an archived task from the worker's
	// queue console; empty: the console is read-only.
	OpsAdminToken string

	// WorkerConcurrency and WebhookConcurrency are the task slots of a
	// worker replica (WORKER_CONCURRENCY, WEBHOOK_CONCURRENCY).
	WorkerConcurrency  int
	WebhookConcurrency int
	// FactorCacheMB is the memory, in MiB, a worker replica gives the
	// students' score factors it keeps between rebuilds
	// (WORKER_FACTOR_CACHE_MB); 0 when not set: the worker sizes it from
	// its memory limit.
	FactorCacheMB int
	// LearnShards is how many learn shards students are spread over (the
	// API marks a student in theirs; at most this many drains fold at
	// once, fleet-wide). The API and the worker must read the same value.
	LearnShards int
	// WebhookRetention is how long the worker keeps an ended webhook
	// delivery (succeeded, parked, disabled) and its attempts
	// (WEBHOOK_RETENTION, at least MinWebhookRetention).
	WebhookRetention time.Duration
}

// MinWebhookRetention is the shortest WEBHOOK_RETENTION: a delivery's
// retries span about 25.5 h, and a task of it still queued must find its
// row.
const MinWebhookRetention = 48 * time.Hour

// Role selects the defaults that differ between binaries.
type Role int

const (
	RoleAPI Role = iota
	RoleWorker
	RoleCLI
)

// Load reads the environment through getenv and reports every problem at
// once, each naming its variable.
func Load(getenv func(string) string, role Role) (Config, error) {
	var errs []error
	bad := func(name string, err error) { errs = append(errs, fmt.Errorf("%s: %w", name, err)) }

	c := Config{
		DatabaseURL:          cmp.Or(getenv("DATABASE_URL"), DefaultDatabaseURL),
		MigrateDatabaseURL:   getenv("MIGRATE_DATABASE_URL"),
		RedisURL:             cmp.Or(getenv("REDIS_URL"), DefaultRedisURL),
		HTTPAddr:             cmp.Or(getenv("HTTP_ADDR"), DefaultHTTPAddr),
		OpsAddr:              getenv("OPS_ADDR"),
		JWKSURL:              getenv("AUTH_JWKS_URL"),
		HS256Secret:          []byte(getenv("AUTH_HS256_SECRET")),
		Issuer:               getenv("AUTH_ISSUER"),
		Audience:             getenv("AUTH_AUDIENCE"),
		WebhookEndpointsFile: getenv("WEBHOOK_ENDPOINTS_FILE"),
		PProf:                getenv("PPROF") == "1",
		OpsAdminToken:        getenv("OPS_ADMIN_TOKEN"),
		GoMemLimitSet:        getenv("GOMEMLIMIT") != "",
	}
	if c.OpsAddr == "" {
		c.OpsAddr = DefaultOpsAddr
		if role == RoleWorker {
			c.OpsAddr = DefaultWorkerOps
		}
	}
	for name, addr := range map[string]string{"HTTP_ADDR": c.HTTPAddr, "OPS_ADDR": c.OpsAddr} {
		if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
			bad(name, fmt.Errorf("%q is not a listen address such as :8080 or 127.0.0.1:9090", addr))
		}
	}
	if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		bad("DATABASE_URL", errors.New("must be a postgres:// URL"))
	}
	if c.MigrateDatabaseURL == "" {
		c.MigrateDatabaseURL = c.DatabaseURL
	} else if u, err := url.Parse(c.MigrateDatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		bad("MIGRATE_DATABASE_URL", errors.New("must be a postgres:// URL"))
	}
	if u, err := url.Parse(c.RedisURL); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
		bad("REDIS_URL", errors.New("must be a redis:// or rediss:// URL"))
	}
	if role == RoleAPI {
		if c.JWKSURL == "" && len(c.HS256Secret) == 0 {
			bad("AUTH_JWKS_URL", errors.New("AUTH_JWKS_URL or AUTH_HS256_SECRET must be set; the API does not start without a way to check tokens"))
		}
	}
	if c.JWKSURL != "" {
		if u, err := url.Parse(c.JWKSURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("AUTH_JWKS_URL", errors.New("must be an http(s) URL"))
		}
	}
	if n := len(c.HS256Secret); n > 0 && n < 32 {
		bad("AUTH_HS256_SECRET", fmt.Errorf("must be at least 32 bytes, got %d", n))
	}
	c.MaxTokenLifetime = DefaultMaxTokenLifetime
	if v := getenv("AUTH_MAX_TOKEN_LIFETIME"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute || d > 30*24*time.Hour {
			bad("AUTH_MAX_TOKEN_LIFETIME", fmt.Errorf("%q is not a duration from 1m to 720h", v))
		} else {
			c.MaxTokenLifetime = d
		}
	}
	allowInsecure := false
	switch v := getenv("AUTH_ALLOW_INSECURE"); v {
	case "", "0", "false":
	case "1", "true":
		allowInsecure = true
	default:
		bad("AUTH_ALLOW_INSECURE", fmt.Errorf("%q must be 0 or 1", v))
	}
	if role == RoleAPI {
		for _, p := range authHazards(c) {
			if allowInsecure {
				c.AuthInsecure = append(c.AuthInsecure, p.variable+": "+p.problem)
				continue
			}
			bad(p.variable, errors.New(p.problem+" (AUTH_ALLOW_INSECURE=1 allows it, for development only)"))
		}
	}

	dur := func(name, def string) time.Duration {
		d, err := time.ParseDuration(cmp.Or(getenv(name), def))
		if err != nil || d <= 0 {
			bad(name, fmt.Errorf("%q is not a positive duration such as 5m or 30s", getenv(name)))
			return 0
		}
		return d
	}
	c.FeedCacheTTL = dur("FEED_CACHE_TTL", "5m")
	c.FeedCooldown = dur("FEED_COOLDOWN", "5m")
	if c.WebhookRetention = dur("WEBHOOK_RETENTION", "720h"); c.WebhookRetention > 0 && c.WebhookRetention < MinWebhookRetention {
		bad("WEBHOOK_RETENTION", fmt.Errorf("%q is shorter than %s: a delivery's retries span about 25.5 h", getenv("WEBHOOK_RETENTION"),
			MinWebhookRetention))
	}

	rate := func(name, def string) Rate {
		r, err := ParseRate(cmp.Or(getenv(name), def))
		if err != nil {
			bad(name, err)
		}
		return r
	}
	c.RateLimits = RateLimits{
		Recommendations: rate("RATE_LIMIT_RECOMMENDATIONS", "60/min"),
		Swipes:          rate("RATE_LIMIT_SWIPES", "300/min"),
		Batch:           rate("RATE_LIMIT_BATCH", "20/min"),
		Default:         rate("RATE_LIMIT_DEFAULT", "600/min"),
	}
	c.RateLimits.CommentBytes = DefaultCommentBytesPerMin
	if v := getenv("FEEDBACK_COMMENT_BYTES_PER_MIN"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxCommentBytesPerMin {
			bad("FEEDBACK_COMMENT_BYTES_PER_MIN", fmt.Errorf("%q is not a whole number of bytes from 1 to %d", v, maxCommentBytesPerMin))
		} else {
			c.RateLimits.CommentBytes = n
		}
	}
	switch v := getenv("RATE_LIMIT_FAIL_CLOSED"); v {
	case "", "0", "false":
	case "1", "true":
		c.RateLimits.FailClosed = true
	default:
		bad("RATE_LIMIT_FAIL_CLOSED", fmt.Errorf("%q must be 0 or 1", v))
	}

	for _, id := range strings.Split(getenv("AUTH_SERVICE_CLIENTS"), ",") {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(c.ServiceClients, id) {
			c.ServiceClients = append(c.ServiceClients, id)
		}
	}

	for _, o := range strings.Split(getenv("CORS_ALLOWED_ORIGINS"), ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		if u, err := url.Parse(o); o != "*" && (err != nil || u.Scheme == "" || u.Host == "") {
			bad("CORS_ALLOWED_ORIGINS", fmt.Errorf("%q is not an origin such as https://app.example.com", o))
			continue
		}
		c.CORSAllowedOrigins = append(c.CORSAllowedOrigins, o)
	}

	if v := getenv("IMAGE_BASE_URL"); v != "" {
		if u, err := url.Parse(v); err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			bad("IMAGE_BASE_URL", fmt.Errorf("%q is not an https URL such as https://images.example.com", v))
		} else {
			c.ImageBaseURL = strings.TrimRight(v, "/")
		}
	}

	// count reads a whole number from 1 to most, def when not set.
	count := func(name string, def, most int) int {
		v := getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > most {
			bad(name, fmt.Errorf("%q is not a whole number from 1 to %d", v, most))
			return def
		}
		return n
	}
	c.WorkerConcurrency = count("WORKER_CONCURRENCY", DefaultWorkerConcurrency, maxConcurrency)
	c.LearnShards = count("LEARN_SHARDS", DefaultLearnShards, maxLearnShards)
	c.WebhookConcurrency = count("WEBHOOK_CONCURRENCY", DefaultWebhookConcurrency, maxConcurrency)
	if v := getenv("WORKER_FACTOR_CACHE_MB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxFactorCacheMB {
			bad("WORKER_FACTOR_CACHE_MB", fmt.Errorf("%q is not a whole number of MiB from 1 to %d", v, maxFactorCacheMB))
		} else {
			c.FactorCacheMB = n
		}
	}

	if err := c.LogLevel.UnmarshalText([]byte(cmp.Or(getenv("LOG_LEVEL"), "info"))); err != nil {
		bad("LOG_LEVEL", fmt.Errorf("%q must be debug, info, warn or error", getenv("LOG_LEVEL")))
	}
	return c, joinLine(errs)
}

// DefaultMaxTokenLifetime is the longest token lifetime the API accepts
// unless AUTH_MAX_TOKEN_LIFETIME says otherwise.
const DefaultMaxTokenLifetime = 24 * time.Hour

// hazard is an unsafe authentication setting: the variable to change and why.
type hazard struct{ variable, problem string }

// authHazards lists the settings under which the API would accept tokens
// it should not:
//   - the development secret beside a key set: anyone holding the secret
//     (every developer, matchctl) could mint a token for any student of a
//     production deployment;
//   - a key set fetched over plain http from another machine: whoever sits
//     on the path can substitute keys;
//   - a key set without AUTH_ISSUER and AUTH_AUDIENCE: a token the identity
//     provider issued to any other application would be accepted.
func authHazards(c Config) []hazard {
	var out []hazard
	if c.JWKSURL != "" && len(c.HS256Secret) > 0 {
		out = append(out, hazard{"AUTH_HS256_SECRET", "the development secret must not be set together with AUTH_JWKS_URL: anyone holding it could sign tokens for any student"})
	}
	if u, err := url.Parse(c.JWKSURL); c.JWKSURL != "" && err == nil && u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		out = append(out, hazard{"AUTH_JWKS_URL", "must be https (plain http is accepted only on a loopback host such as 127.0.0.1 or localhost)"})
	}
	if c.JWKSURL != "" && c.Issuer == "" {
		out = append(out, hazard{"AUTH_ISSUER", "must be set with AUTH_JWKS_URL, or tokens of any issuer signed with those keys would be accepted"})
	}
	if c.JWKSURL != "" && c.Audience == "" {
		out = append(out, hazard{"AUTH_AUDIENCE", "must be set with AUTH_JWKS_URL, or tokens the identity provider issued to other applications would be accepted"})
	}
	return out
}

// loopbackHost reports whether host names this machine only: localhost or
// a loopback address.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// joinLine reports every problem on one line, so a refused start says all
// that is wrong at once without scrolling.
func joinLine(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New("configuration: " + strings.Join(msgs, "; "))
}

// LogValue keeps secrets out of logs.
func (c Config) LogValue() slog.Value {
	redact := func(s string) string {
		u, err := url.Parse(s)
		if err != nil {
			return "(unparsable)"
		}
		return u.Redacted()
	}
	return slog.GroupValue(
		slog.String("database_url", redact(c.DatabaseURL)),
		slog.String("migrate_database_url", redact(c.MigrateDatabaseURL)),
		slog.String("redis_url", redact(c.RedisURL)),
		slog.String("http_addr", c.HTTPAddr),
		slog.String("ops_addr", c.OpsAddr),
		slog.Bool("ops_admin_token", c.OpsAdminToken != ""),
		slog.String("auth_jwks_url", c.JWKSURL),
		slog.Bool("auth_hs256", len(c.HS256Secret) > 0),
		slog.String("auth_issuer", c.Issuer),
		slog.String("auth_audience", c.Audience),
		slog.Duration("auth_max_token_lifetime", c.MaxTokenLifetime),
		slog.Any("auth_service_clients", c.ServiceClients),
		slog.Any("auth_insecure", c.AuthInsecure),
		slog.Duration("feed_cache_ttl", c.FeedCacheTTL),
		slog.Duration("feed_cooldown", c.FeedCooldown),
		slog.String("rate_limits", fmt.Sprintf("recommendations=%s swipes=%s batch=%s default=%s comment_bytes=%d/min fail_closed=%t",
			c.RateLimits.Recommendations, c.RateLimits.Swipes, c.RateLimits.Batch, c.RateLimits.Default,
			c.RateLimits.CommentBytes, c.RateLimits.FailClosed)),
		slog.Any("cors_allowed_origins", c.CORSAllowedOrigins),
		slog.String("image_base_url", c.ImageBaseURL),
		slog.String("log_level", c.LogLevel.String()),
		slog.Int("worker_concurrency", c.WorkerConcurrency),
		slog.Int("webhook_concurrency", c.WebhookConcurrency),
		slog.Int("worker_factor_cache_mb", c.FactorCacheMB),
		slog.Duration("webhook_retention", c.WebhookRetention),
	)
}
