#!/usr/bin/env bash
# loadtest.sh is `make loadtest`: the service under load on this machine,
# against baselines measured in the same run.
#
#   scripts/loadtest.sh [REF]
#
# For the tree as it is (and first, when REF is given, for the build of that
# git revision, in a temporary worktree of its own, so both are measured in
# one run on the same machine), it:
#   1. builds the binaries and migrates and seeds a database of its own
#      (LOADTEST_DATABASE, default matching_load; REF gets <name>_ref);
#   2. starts the worker and the API on 127.0.0.1 with one webhook endpoint,
#      the load generator's own receiver;
#   3. runs `matchctl loadtest` (the load, the baselines, the cost tables);
#   4. stops both.
# Everything listens on 127.0.0.1 and stops by itself. Tunables:
#   LOADTEST_ARGS   arguments for matchctl loadtest (default: the swipe and
#                   mixed scenarios, 2 rounds of 10 s, 64 clients, 10,000 students)
#   LOADTEST_PORT   first of the five ports used (default 18080)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ref=${1:-}
port=${LOADTEST_PORT:-18080}
db=${LOADTEST_DATABASE:-matching_load}
args=${LOADTEST_ARGS:---scenarios swipe,mixed}
pg=${LOADTEST_POSTGRES:-postgres://postgres@127.0.0.1:5432}
export REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}

log() { printf 'loadtest: %s\n' "$*" >&2; }

DATABASE_URL="$pg/postgres?sslmode=disable" scripts/services.sh
work=$(mktemp -d)
pids=()
cleanup() {
	if ((${#pids[@]})); then
		kill -TERM "${pids[@]}" 2>/dev/null || true
		wait "${pids[@]}" 2>/dev/null || true
	fi
	pids=()
	if [[ -d $work/ref ]]; then
		git worktree remove --force "$work/ref" >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

secret=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
hook_secret="whsec_$(head -c 32 /dev/urandom | base64 | tr -d '\n')"
cat >"$work/webhooks.yaml" <<EOF
- url: http://127.0.0.1:$((port + 1))/hook
  secret: $hook_secret
  events: [swipe.recorded]
  allow_private: true
EOF

# measure NAME SRC_DIR DATABASE: build SRC_DIR's binaries, run the service
# from them and measure it.
measure() {
	local name=$1 src=$2 database=$3 bin="$work/bin-$1"
	log "building $name"
	(cd "$src" && go build -trimpath -o "$bin/" ./cmd/api ./cmd/worker ./cmd/matchctl)
	export DATABASE_URL="$pg/$database?sslmode=disable"
	export AUTH_HS256_SECRET=$secret WEBHOOK_ENDPOINTS_FILE="$work/webhooks.yaml" LOG_LEVEL=${LOG_LEVEL:-warn}
	"$bin/matchctl" migrate >&2
	# The generated catalogue of 6,500 schools (the real one, where a build
	# ships it, is smaller).
	if "$bin/matchctl" seed --synthetic --count 6500 >&2 2>/dev/null; then :; else "$bin/matchctl" seed >&2; fi
	OPS_ADDR=127.0.0.1:$((port + 3)) "$bin/worker" 2>"$work/$name-worker.log" &
	pids+=($!)
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
		--receiver "127.0.0.1:$((port + 1))" $args
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
