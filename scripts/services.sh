#!/usr/bin/env bash
# services.sh makes sure PostgreSQL and Redis answer before the service or
# its tests need them.
#
#   DATABASE_URL  PostgreSQL to check (default postgres://postgres@127.0.0.1:5432/...)
#   REDIS_URL     Redis to check (default redis://127.0.0.1:6379/0)
#   SERVICES_WAIT seconds to wait for a server that was just started (default 30)
#
# A server that does not answer is started, in this order of preference:
#   1. the local server, when it is installed and the URL points at this machine;
#   2. `docker compose up -d postgres redis`, when a Docker engine answers;
# otherwise the script prints one line saying what to install or start and
# exits 1. It never stops or restarts a server that is already running.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/matching?sslmode=disable}"
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
WAIT="${SERVICES_WAIT:-30}"

log() { printf 'services: %s\n' "$*" >&2; }

# host_port URL DEFAULT_PORT prints "host port" of a URL such as
# scheme://user:pass@host:port/path?query (host defaults to 127.0.0.1).
host_port() {
	local rest=${1#*://} def=$2 host port
	rest=${rest%%[/?]*}
	rest=${rest##*@}
	if [[ $rest == \[* ]]; then # [IPv6]:port
		host=${rest%%]*}
		host=${host#[}
		port=${rest#*]}
		port=${port#:}
	elif [[ $rest == *:* ]]; then
		host=${rest%:*}
		port=${rest##*:}
	else
		host=$rest
		port=
	fi
	printf '%s %s\n' "${host:-127.0.0.1}" "${port:-$def}"
}

read -r PG_HOST PG_PORT < <(host_port "$DATABASE_URL" 5432)
read -r REDIS_HOST REDIS_PORT < <(host_port "$REDIS_URL" 6379)

is_local() { [[ $1 == 127.* || $1 == localhost || $1 == ::1 || $1 == 0.0.0.0 ]]; }

# tcp_open HOST PORT succeeds when something accepts a TCP connection.
tcp_open() { timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }

pg_up() {
	if command -v pg_isready >/dev/null 2>&1; then
		pg_isready -q -t 2 -d "$DATABASE_URL" >/dev/null 2>&1
	else
		tcp_open "$PG_HOST" "$PG_PORT"
	fi
}

redis_up() {
	if command -v redis-cli >/dev/null 2>&1 && [[ $REDIS_URL == redis://* ]]; then
		local out
		out=$(timeout 3 redis-cli -u "$REDIS_URL" --no-auth-warning ping 2>&1) || return 1
		[[ $out == PONG || $out == *NOAUTH* || $out == *WRONGPASS* ]]
	else
		tcp_open "$REDIS_HOST" "$REDIS_PORT"
	fi
}

# both LIST... joins one or two names with "and".
both() { if (($# > 1)); then printf '%s and %s' "$1" "$2"; else printf '%s' "$1"; fi; }

docker_up() { command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; }

start_pg() {
	if is_local "$PG_HOST" && command -v pg_ctlcluster >/dev/null 2>&1 && [[ -d /etc/postgresql ]]; then
		local version
		version=$(ls /etc/postgresql | sort -V | tail -n 1)
		if [[ -n $version ]]; then
			log "starting local PostgreSQL $version (cluster main)"
			pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || true
			return 0
		fi
	fi
	return 1
}

start_redis() {
	if is_local "$REDIS_HOST" && command -v redis-server >/dev/null 2>&1; then
		local dir=/var/lib/redis logdir=/var/log/redis
		if ! { mkdir -p "$dir" "$logdir" && [[ -w $dir && -w $logdir ]]; } 2>/dev/null; then
			dir="${TMPDIR:-/tmp}/matching-redis"
			logdir=$dir
			mkdir -p "$dir"
		fi
		log "starting local Redis on 127.0.0.1:$REDIS_PORT (log $logdir/ci.log)"
		redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" --save "" --appendonly no \
			--dir "$dir" --logfile "$logdir/ci.log" >&2 || true
		return 0
	fi
	return 1
}

need_docker=() missing=()
if ! pg_up && ! start_pg; then
	need_docker+=(postgres)
	missing+=("PostgreSQL at $PG_HOST:$PG_PORT")
fi
if ! redis_up && ! start_redis; then
	need_docker+=(redis)
	missing+=("Redis at $REDIS_HOST:$REDIS_PORT")
fi

if ((${#need_docker[@]})); then
	if is_local "$PG_HOST" && is_local "$REDIS_HOST" && docker_up; then
		log "starting ${need_docker[*]} with docker compose"
		POSTGRES_PORT=$PG_PORT REDIS_PORT=$REDIS_PORT docker compose up -d "${need_docker[@]}" >&2
	else
		log "$(both "${missing[@]}") not answering and cannot be started here: install and start them (apt-get install postgresql redis-server), start Docker for 'docker compose up -d postgres redis', or point DATABASE_URL/REDIS_URL at running servers"
		exit 1
	fi
fi

# Wait (bounded) until both answer.
deadline=$((SECONDS + WAIT))
until pg_up && redis_up; do
	if ((SECONDS >= deadline)); then
		down=()
		pg_up || down+=("PostgreSQL at $PG_HOST:$PG_PORT")
		redis_up || down+=("Redis at $REDIS_HOST:$REDIS_PORT")
		log "$(both "${down[@]}") still not answering after ${WAIT}s: check its log, or point DATABASE_URL/REDIS_URL at running servers"
		exit 1
	fi
	sleep 0.5
done
