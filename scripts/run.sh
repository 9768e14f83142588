#!/usr/bin/env bash
# run.sh is `make run`: the whole service on this machine, in the foreground.
#
#   1. PostgreSQL and Redis answer (scripts/services.sh starts them if needed);
#   2. the binaries are built into bin/;
#   3. without AUTH_HS256_SECRET and AUTH_JWKS_URL, a development secret is
#      made once in .run/dev-secret and used;
#   4. matchctl migrate, then matchctl seed: the bundled real schools (a no-op
#      when schools exist);
#   5. worker and API start, logging JSON to this terminal; once the API's
#      /readyz answers, export lines (STUDENT, TOKEN) and curl lines are printed,
#      ready to paste;
#   6. with RUN_DEMO=1 (`make demo`), `matchctl demo` serves the demo page and
#      the API docs on DEMO_ADDR (default 127.0.0.1:8081), as a fresh student.
# Ctrl-C stops them all.
#
# Variables already in the environment win; a .env file (see .env.example)
# fills in the ones that are not set. Defaults differ from the binaries' in
# one place: HTTP_ADDR is 127.0.0.1:8080, so a development server with a
# development secret is not reachable from other machines. The worker's
# operations port is OPS_ADDR's port + 1 (127.0.0.1:9091 by default).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf 'run: %s\n' "$*" >&2; }

# Fill unset variables from .env (KEY=VALUE lines; # comments).
if [[ -f .env ]]; then
	while IFS= read -r line || [[ -n $line ]]; do
		[[ $line =~ ^[[:space:]]*(export[[:space:]]+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || continue
		key=${BASH_REMATCH[2]} value=${BASH_REMATCH[3]}
		[[ -n ${!key+set} ]] && continue
		if [[ $value =~ ^\"(.*)\"$ || $value =~ ^\'(.*)\'$ ]]; then
			value=${BASH_REMATCH[1]}
		fi
		export "$key=$value"
	done <.env
fi

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/matching?sslmode=disable}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
export HTTP_ADDR="${HTTP_ADDR:-127.0.0.1:8080}"
export OPS_ADDR="${OPS_ADDR:-127.0.0.1:9090}"

# url_for ADDR LOOPBACK_NAME prints the http:// URL that reaches a listen
# address; a wildcard or loopback host is shown as LOOPBACK_NAME.
url_for() {
	local host=${1%:*} port=${1##*:}
	host=${host#[}
	host=${host%]}
	case $host in
	"" | 0.0.0.0 | :: | 127.0.0.1 | localhost) host=$2 ;;
	*:*) host="[$host]" ;;
	esac
	echo "http://$host:$port"
}

api_url=$(url_for "$HTTP_ADDR" localhost)
ops_url=$(url_for "$OPS_ADDR" 127.0.0.1)
worker_ops_addr="${OPS_ADDR%:*}:$((${OPS_ADDR##*:} + 1))"

scripts/services.sh
make --no-print-directory build >&2

if [[ -z ${AUTH_HS256_SECRET:-} && -z ${AUTH_JWKS_URL:-} ]]; then
	if [[ ! -s .run/dev-secret ]]; then
		mkdir -p .run
		(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >.run/dev-secret)
		log "made a development secret in .run/dev-secret"
	fi
	AUTH_HS256_SECRET=$(<.run/dev-secret)
	export AUTH_HS256_SECRET
fi

if [[ ${RUN_DEMO:-0} == 1 && -z ${AUTH_HS256_SECRET:-} ]]; then
	log "make demo logs in with a development token: set AUTH_HS256_SECRET (or unset AUTH_JWKS_URL)"
	exit 1
fi

bin/matchctl migrate >&2
if [[ $(bin/matchctl help) =~ (^|$'\n')[[:space:]]+seed[[:space:]] ]]; then
	bin/matchctl seed >&2
else
	log "matchctl has no seed command yet; the catalogue stays as it is"
fi

pids=()
stop() {
	trap - INT TERM EXIT
	if ((${#pids[@]})); then
		log "stopping"
		kill -TERM "${pids[@]}" 2>/dev/null || true
		wait "${pids[@]}" 2>/dev/null || true
	fi
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

if [[ -f cmd/worker/main.go && -x bin/worker ]]; then
	OPS_ADDR=$worker_ops_addr bin/worker &
	pids+=($!)
else
	log "there is no cmd/worker yet; running the API alone"
fi
bin/api &
pids+=($!)

# Wait until the API is ready, or give up when a process dies.
deadline=$((SECONDS + 60))
until curl -fsS -o /dev/null "$ops_url/readyz" 2>/dev/null; do
	for pid in "${pids[@]}"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			log "a process exited during start-up; see its log above"
			exit 1
		fi
	done
	if ((SECONDS >= deadline)); then
		log "the API did not become ready at $ops_url/readyz within 60 s"
		exit 1
	fi
	sleep 0.3
done

student=$(cat /proc/sys/kernel/random/uuid 2>/dev/null || uuidgen | tr 'A-Z' 'a-z')
if [[ -n ${AUTH_HS256_SECRET:-} ]]; then
	token=$(bin/matchctl token --student "$student" --ttl 24h)
	cat <<EOF

The matching service is running: API $api_url, operations $ops_url (/livez /readyz /metrics). Ctrl-C stops it.
A development token for a new student, valid 24 h (mint more with bin/matchctl token --student UUID).
Paste these lines into another terminal:

export STUDENT='$student'
export TOKEN='$token'
curl -s -H "Authorization: Bearer \$TOKEN" $api_url/health
curl -s -H "Authorization: Bearer \$TOKEN" -H 'Content-Type: application/json' -d '{"name":"Ada","email":"ada@example.com","graduation_year":"2027","gpa":3.8,"test_scores":{"sat":1380},"state":"CA"}' $api_url/v2/onboarding/minimal

EOF
else
	cat <<EOF

The matching service is running: API $api_url, operations $ops_url. Ctrl-C stops it.
Tokens come from the identity provider at AUTH_JWKS_URL; matchctl token needs AUTH_HS256_SECRET.

EOF
fi

if [[ ${RUN_DEMO:-0} == 1 ]]; then
	bin/matchctl demo --addr "${DEMO_ADDR:-127.0.0.1:8081}" --api "$(url_for "$HTTP_ADDR" 127.0.0.1)" &
	pids+=($!)
fi

# Run until Ctrl-C, or until the API, the worker or the demo exits.
set +e
wait -n "${pids[@]}"
status=$?
((status == 0)) || log "a process exited with status $status; stopping the others"
exit "$status"
