#!/usr/bin/env bash
# drill.sh is `make drill`: fault drills on the real stack, on this machine.
#
#   scripts/drill.sh [DRILLS]     DRILLS: comma-separated, default all three
#                                 (worker-kill,redis-restart,postgres-blackhole)
#
# It builds the binaries, makes a database of its own (DRILL_DATABASE,
# default matching_drill, dropped and created again each run), migrates
# and seeds it with a generated catalogue, and runs `matchctl drill`, which
# starts a Redis of its own (redis-server on DRILL_REDIS_PORT, default
# 6397, no persistence), a fault proxy to PostgreSQL, the worker and the
# API (ports DRILL_PORT..DRILL_PORT+3, default 18300), breaks one
# dependency per drill during a swipe load and checks the invariants
# (docs/drills.md). Everything listens on 127.0.0.1 and is stopped when the
# run ends, by PID, however it ends. Tunables:
#   DRILL_ARGS   more arguments for matchctl drill (e.g. "--kills 5 --rate 50")
#   DRILL_KEEP=1 keep the work directory (logs of every process) and print it
# Exit status: 0 when every invariant held, 1 when one failed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
drills=${1:-worker-kill,redis-restart,postgres-blackhole}
port=${DRILL_PORT:-18300}
redis_port=${DRILL_REDIS_PORT:-6397}
db=${DRILL_DATABASE:-matching_drill}
pg=${DRILL_POSTGRES:-postgres://postgres@127.0.0.1:5432}
args=${DRILL_ARGS:-}

log() { printf 'drill: %s\n' "$*" >&2; }

if ! command -v redis-server >/dev/null 2>&1; then
	log "redis-server is not installed (apt-get install redis-server); the drills run a Redis of their own"
	exit 1
fi
DATABASE_URL="$pg/postgres?sslmode=disable" REDIS_URL=redis://127.0.0.1:6379/0 scripts/services.sh

work=$(mktemp -d)
drill_pid=
cleanup() {
	if [[ -n $drill_pid ]] && kill -0 "$drill_pid" 2>/dev/null; then
		kill -TERM "$drill_pid" 2>/dev/null || true
		wait "$drill_pid" 2>/dev/null || true
	fi
	# What the drill started and had not stopped (it lists them in pids).
	if [[ -f $work/pids ]]; then
		while read -r pid; do
			[[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null || true
		done <"$work/pids"
	fi
	if [[ ${DRILL_KEEP:-0} == 1 ]]; then
		log "logs kept in $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "building the binaries"
go build -trimpath -o "$work/bin/" ./cmd/api ./cmd/worker ./cmd/matchctl

export DATABASE_URL="$pg/$db?sslmode=disable"
export AUTH_HS256_SECRET
AUTH_HS256_SECRET=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
export LOG_LEVEL=${LOG_LEVEL:-warn}
psql "$pg/postgres?sslmode=disable" -qc "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null
"$work/bin/matchctl" migrate >&2
"$work/bin/matchctl" seed --synthetic --count 2000 >&2

# shellcheck disable=SC2086
"$work/bin/matchctl" drill --drills "$drills" --bin "$work/bin" --work "$work" \
	--port "$port" --redis-port "$redis_port" $args &
drill_pid=$!
status=0
wait "$drill_pid" || status=$?
drill_pid=
if ((status != 0)); then
	for f in api worker; do
		if [[ -f $work/$f.log ]] && grep -q '"level":"ERROR"' "$work/$f.log"; then
			log "$f logged errors (most frequent):"
			grep -h '"level":"ERROR"' "$work/$f.log" | sed -E 's/"time":"[^"]*",?//' | sort | uniq -c | sort -rn | head -5 >&2
		fi
	done
fi
exit "$status"
