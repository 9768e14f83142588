// Package e2e holds end-to-end checks that run against a deployed service
// over HTTP: onboarding, swipes with exact counts and phases, idempotent
// retries, recommendations with ETag, offline sync, shared rate limits,
// webhook delivery, and a swipe load during which a disruption runs (a
// worker killed, Redis restarted empty, a Sentinel failover), after which
// every acknowledged swipe must be in PostgreSQL once and delivered.
//
// The tests skip unless E2E_API_URL names the service's base URL. The
// scale-out run (scripts/scaleout.sh, make test-scaleout) starts a fleet on
// 127.0.0.1 and runs them against it; the variables are:
//
//	E2E_API_URL         base URL of the API (a load balancer in front of the replicas)
//	E2E_HS256_SECRET    the API's AUTH_HS256_SECRET, to mint student tokens
//	E2E_DATABASE_URL    a direct connection to the service's PostgreSQL (reads only)
//	E2E_WEBHOOK_ADDR    where the tests receive the service's webhooks (its subscriber URL's host:port)
//	E2E_WEBHOOK_SECRET  that subscriber's whsec_ secret, to check signatures
//	E2E_LOAD_SECONDS    length of the swipe load (default 12)
//	E2E_LOAD_STUDENTS   students swiping at once (default 16)
//	E2E_DISRUPT         a shell command run halfway through the load
//	E2E_LABEL           a name for the run in the load test's summary line
//	E2E_WAIT            how long delivery and recovery may take (default 3m)
package e2e
