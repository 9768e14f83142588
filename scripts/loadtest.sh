#!/usr/bin/env bash
# loadtest.sh is `make loadtest`: the service under load on this machine,
# against baselines measured in the same run.
#
#   scripts/loadtest.sh [REF]
#
# For the tree as it is (and first, when REF is given, for the build of that
# git revision, in a temporary worktree of its own, so both are measured in
# one run on the same machine), it:
#   1. builds the binaries, creates a database of its own afresh (dropping
#      what an earlier run left: LOADTEST_DATABASE, default matching_load;
#      REF gets <name>_ref), migrates and seeds it, and starts an empty
#      Redis of its own (redis-server on LOADTEST_PORT+5, nothing kept on
#      disk, stopped at the end) unless LOADTEST_REDIS_URL names one to use
#      as it is: what an earlier run left queued or pending (tasks, webhook
#      deliveries) would otherwise be worked off during the measurement;
#   2. starts the worker and the API on 127.0.0.1 with one webhook endpoint,
#      the load generator's own receiver;
#   3. runs `matchctl loadtest`: first a history (10,000 swipes, worked off,
#      then ANALYZE, so nothing is measured on empty tables or with plans
#      chosen on them), then the load, the baselines (B1, a bare Redis GET
#      handler; B3, the swipe's durable write alone, in a process of its
#      own), the cost tables; it pauses the worker (SIGSTOP, then SIGCONT)
#      while the swipe scenario measures the API alone;
#   4. stops both.
# PostgreSQL must load pg_stat_statements: when it does not, a local Debian
# cluster is set to (ALTER SYSTEM SET shared_preload_libraries) and
# restarted, and the script says so; PostgreSQL is left running.
# Everything listens on 127.0.0.1 and stops by itself. Tunables:
#   LOADTEST_ARGS   arguments for matchctl loadtest (default: the swipe, cost
#                   and mixed scenarios, 2 rounds of 10 s each, 64 clients,
#                   10,000 students, cost at 300 swipes/s over 1,000 of them);
#                   with --generator wrk the swipe and reads scenarios are
#                   driven by wrk, which scripts/wrk.sh installs when missing
#   LOADTEST_PORT   first of the six ports used (default 18080)
#   LOADTEST_REDIS_URL  a Redis to use instead of the private one
#   GOMEMLIMIT      the API's and the worker's soft memory limit (default
#                   512MiB, the limit deploy/k8s gives each container, from
#                   which the worker sizes its factor cache as deployed)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ref=${1:-}
port=${LOADTEST_PORT:-18080}
db=${LOADTEST_DATABASE:-matching_load}
args=${LOADTEST_ARGS:---scenarios swipe,cost,mixed}
pg=${LOADTEST_POSTGRES:-postgres://postgres@127.0.0.1:5432}
redis_port=$((port + 5))

log() { printf 'loadtest: %s\n' "$*" >&2; }

REDIS_URL=${LOADTEST_REDIS_URL:-redis://127.0.0.1:6379/0} DATABASE_URL="$pg/postgres?sslmode=disable" scripts/services.sh
if [[ " $args " == *" --generator wrk "* || " $args " == *" --generator=wrk "* ]]; then
	scripts/wrk.sh >/dev/null
fi

# ensure_pg_stat_statements makes PostgreSQL load pg_stat_statements, which
# the statement figures read: when shared_preload_libraries lacks it, it is
# added (ALTER SYSTEM) and a local Debian cluster restarted
# (pg_ctlcluster); PostgreSQL is left running either way. The extension
# itself is created in each measured database by matchctl loadtest.
ensure_pg_stat_statements() {
	local admin="$pg/postgres?sslmode=disable" libs want cluster host
	libs=$(psql "$admin" -qAtc "SHOW shared_preload_libraries")
	if [[ ,${libs// /}, == *,pg_stat_statements,* ]]; then
		return
	fi
	want=${libs:+$libs, }pg_stat_statements
	host=$(psql "$admin" -qAtc "SELECT coalesce(inet_server_addr()::text, 'local')")
	cluster=$(psql "$admin" -qAtc "SHOW cluster_name")
	if [[ $host != 127.0.0.1* && $host != ::1* && $host != local ]] || ! command -v pg_ctlcluster >/dev/null 2>&1 ||
		[[ $cluster != */* ]]; then
		log "PostgreSQL does not load pg_stat_statements (shared_preload_libraries='$libs'), and it is not a local"
		log "Debian cluster this script can restart: set shared_preload_libraries = '$want', restart it, run again"
		exit 1
	fi
	log "PostgreSQL does not load pg_stat_statements: ALTER SYSTEM SET shared_preload_libraries = '$want'"
	psql "$admin" -qAt -v ON_ERROR_STOP=1 -c "ALTER SYSTEM SET shared_preload_libraries = '$want'" >/dev/null
	log "restarting PostgreSQL: pg_ctlcluster --skip-systemctl-redirect ${cluster%%/*} ${cluster#*/} restart"
	pg_ctlcluster --skip-systemctl-redirect "${cluster%%/*}" "${cluster#*/}" restart >&2
	local deadline=$((SECONDS + 60))
	until psql "$admin" -qAtc "SELECT 1" >/dev/null 2>&1; do
		if ((SECONDS >= deadline)); then
			log "PostgreSQL did not answer within 60 s of its restart"
			exit 1
		fi
		sleep 0.5
	done
	libs=$(psql "$admin" -qAtc "SHOW shared_preload_libraries")
	if [[ ,${libs// /}, != *,pg_stat_statements,* ]]; then
		log "PostgreSQL restarted but loads '$libs', still without pg_stat_statements"
		exit 1
	fi
	log "PostgreSQL restarted with shared_preload_libraries = '$libs'"
}
ensure_pg_stat_statements
work=$(mktemp -d)
pids=()
redis_pid=
cleanup() {
	if ((${#pids[@]})); then
		# A worker the load test paused and could not resume still ends.
		kill -CONT "${pids[@]}" 2>/dev/null || true
		kill -TERM "${pids[@]}" 2>/dev/null || true
		wait "${pids[@]}" 2>/dev/null || true
	fi
	pids=()
	stop_redis
	if [[ -d $work/ref ]]; then
		git worktree remove --force "$work/ref" >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# fresh_redis starts an empty private Redis for one build's measurement
# (unless LOADTEST_REDIS_URL names one) and exports REDIS_URL.
fresh_redis() {
	if [[ -n ${LOADTEST_REDIS_URL:-} ]]; then
		export REDIS_URL=$LOADTEST_REDIS_URL
		return
	fi
	if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
		export REDIS_URL=redis://127.0.0.1:6379/0
		log "no redis-server here to start an empty one: measuring on $REDIS_URL as it is"
		return
	fi
	stop_redis
	redis-server --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no \
		--dir "$work" --logfile "$work/redis.log" --pidfile "$work/redis.pid" --daemonize yes >/dev/null
	local deadline=$((SECONDS + 10))
	until redis-cli -p "$redis_port" ping >/dev/null 2>&1; do
		if ((SECONDS >= deadline)); then
			log "the private Redis on port $redis_port did not start"
			exit 1
		fi
		sleep 0.1
	done
	redis_pid=$(cat "$work/redis.pid")
	export REDIS_URL=redis://127.0.0.1:$redis_port/0
}

stop_redis() {
	if [[ -n $redis_pid ]]; then
		kill "$redis_pid" 2>/dev/null || true
		local i
		for ((i = 0; i < 100; i++)); do
			kill -0 "$redis_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$redis_pid" 2>/dev/null || true
		redis_pid=
	fi
}

# fresh_database NAME drops and creates the load test's database NAME.
fresh_database() {
	psql "$pg/postgres?sslmode=disable" -qAt -v ON_ERROR_STOP=1 \
		-c "DROP DATABASE IF EXISTS \"$1\" WITH (FORCE)" -c "CREATE DATABASE \"$1\"" >/dev/null
}

secret=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
hook_secret="whsec_$(head -c 32 /dev/urandom | base64 | tr -d '\n')"
cat >"$work/webhooks.yaml" <<EOF
- url: http://127.0.0.1:$((port + 1))/hook
  secret: $hook_secret
  events: [swipe.recorded]
  allow_private: true
EOF

# The worker's pool: its default (78 at 70 task slots) where PostgreSQL's
# max_connections holds it beside the API's and B3's pools (16 each) and the
# load test's own, else what is left of max_connections, so that the mixed
# load is not refused connections (a refused one answers 503).
max_connections=$(psql "$pg/postgres?sslmode=disable" -Atc 'show max_connections' 2>/dev/null || echo 100)
worker_conns=$((max_connections - 16 - 16 - 4 - 10))
worker_conns=$((worker_conns > 78 ? 78 : worker_conns < 16 ? 16 : worker_conns))

# measure NAME SRC_DIR DATABASE: build SRC_DIR's binaries, run the service
# from them and measure it.
measure() {
	local name=$1 src=$2 database=$3 bin="$work/bin-$1"
	log "building $name"
	(cd "$src" && go build -trimpath -o "$bin/" ./cmd/api ./cmd/worker ./cmd/matchctl)
	fresh_database "$database"
	fresh_redis
	export DATABASE_URL="$pg/$database?sslmode=disable"
	export AUTH_HS256_SECRET=$secret WEBHOOK_ENDPOINTS_FILE="$work/webhooks.yaml" LOG_LEVEL=${LOG_LEVEL:-warn}
	export GOMEMLIMIT=${GOMEMLIMIT:-512MiB}
	"$bin/matchctl" migrate >&2
	# The generated catalogue of 6,500 schools (the real one, where a build
	# ships it, is smaller).
	if "$bin/matchctl" seed --synthetic --count 6500 >&2 2>/dev/null; then :; else "$bin/matchctl" seed >&2; fi
	DATABASE_URL="$DATABASE_URL&pool_max_conns=$worker_conns" OPS_ADDR=127.0.0.1:$((port + 3)) "$bin/worker" 2>"$work/$name-worker.log" &
	local worker_pid=$!
	pids+=("$worker_pid")
	HTTP_ADDR=127.0.0.1:$port OPS_ADDR=127.0.0.1:$((port + 2)) "$bin/api" 2>"$work/$name-api.log" &
	pids+=($!)
	local deadline=$((SECONDS + 60))
	until curl -fsS -o /dev/null "http://127.0.0.1:$((port + 2))/readyz" 2>/dev/null; do
		if ((SECONDS >= deadline)); then
			log "$name: the API did not become ready"
			tail -20 "$work/$name-api.log" "$work/$name-worker.log" >&2
			exit 1
		fi
		sleep 0.3
	done
	echo
	echo "## $name"
	echo
	# shellcheck disable=SC2086
	"$work/tool/matchctl" loadtest --api "http://127.0.0.1:$port" \
		--ops "http://127.0.0.1:$((port + 2)),http://127.0.0.1:$((port + 3))" \
		--receiver "127.0.0.1:$((port + 1))" --worker-pid "$worker_pid" --worker-conns "$worker_conns" $args
	kill -CONT "${pids[@]}" 2>/dev/null || true
	kill -TERM "${pids[@]}" 2>/dev/null || true
	wait "${pids[@]}" 2>/dev/null || true
	pids=()
	if grep -q '"level":"ERROR"' "$work/$name-api.log" "$work/$name-worker.log"; then
		log "$name: errors were logged:"
		grep -h '"level":"ERROR"' "$work/$name-api.log" "$work/$name-worker.log" | sort | uniq -c | sort -rn | head -5 >&2
	fi
}

# The load generator is always this tree's matchctl.
log "building the load generator"
go build -trimpath -o "$work/tool/" ./cmd/matchctl

if [[ -n $ref ]]; then
	git worktree add --detach "$work/ref" "$ref" >/dev/null
	measure "build $(git rev-parse --short "$ref")" "$work/ref" "${db}_ref"
fi
measure "this tree ($(git describe --always --dirty))" . "$db"
