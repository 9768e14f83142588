#!/usr/bin/env bash
# pgbouncer.sh runs PgBouncer in transaction pooling mode on 127.0.0.1, in
# front of the PostgreSQL of DATABASE_URL, for tests and local runs of the
# API and worker through a pooler (docs/operations.md says how production
# differs).
#
#   scripts/pgbouncer.sh install        apt-get install pgbouncer when it is missing
#   scripts/pgbouncer.sh start [PORT]   listen on PORT (default 6432); prints a DATABASE_URL
#   scripts/pgbouncer.sh url [PORT]     prints that DATABASE_URL
#   scripts/pgbouncer.sh stop [PORT]    stops it and removes its files
#
#   DATABASE_URL         the PostgreSQL server to pool (host and port are used;
#                        default postgres://postgres@127.0.0.1:5432/matching)
#   PGBOUNCER_POOL_SIZE  server connections per database and user (default 20)
#   PGBOUNCER_SERVER_LIFETIME  seconds after which a server connection is
#                        closed once released (default 60): after a failover,
#                        how long a server connection opened on a server that
#                        refused writes may go on refusing them
#                        (docs/operations.md, "Failover")
#   PGBOUNCER_DIR        its files (default ${TMPDIR:-/tmp}/matching-pgbouncer-PORT)
#
# Every database of the server is reachable through it under its own name,
# as user postgres without a password (auth_type trust: a local test set-up,
# like the PostgreSQL it fronts). The URL it prints names no statement
# mode: the binaries notice the pooler and choose pgx's
# default_query_exec_mode=cache_describe themselves, which works with
# transaction pooling on every PgBouncer version (docs/deployment.md).
set -euo pipefail

cmd=${1:-}
port=${2:-6432}
DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/matching?sslmode=disable}
pool_size=${PGBOUNCER_POOL_SIZE:-20}
server_lifetime=${PGBOUNCER_SERVER_LIFETIME:-60}
dir=${PGBOUNCER_DIR:-${TMPDIR:-/tmp}/matching-pgbouncer-$port}

log() { printf 'pgbouncer: %s\n' "$*" >&2; }

# The upstream server: host and port of DATABASE_URL, and its database name.
rest=${DATABASE_URL#*://}
rest=${rest##*@}
dbname=${rest#*/}
dbname=${dbname%%\?*}
[[ $rest == */* ]] || dbname=postgres
hostport=${rest%%[/?]*}
pg_host=${hostport%:*}
pg_port=${hostport##*:}
[[ $hostport == *:* ]] || pg_port=5432

binary() { command -v pgbouncer || { [[ -x /usr/sbin/pgbouncer ]] && echo /usr/sbin/pgbouncer; }; }

url() {
	printf 'postgres://postgres@127.0.0.1:%s/%s?sslmode=disable\n' "$port" "${dbname:-matching}"
}

install() {
	if binary >/dev/null; then
		return
	fi
	local sudo=()
	((EUID == 0)) || sudo=(sudo -n)
	log "installing pgbouncer with apt-get"
	"${sudo[@]}" apt-get update -qq >&2
	# The package's own service stays off: this script runs its own instance.
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends pgbouncer >&2
	if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
		"${sudo[@]}" systemctl disable --now pgbouncer >/dev/null 2>&1 || true
	fi
}

running() { [[ -f $dir/pgbouncer.pid ]] && kill -0 "$(<"$dir/pgbouncer.pid")" 2>/dev/null; }

stop() {
	if running; then
		local pid
		pid=$(<"$dir/pgbouncer.pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 100); do
			# A zombie waiting for its parent to reap it has exited.
			st=$(ps -o stat= -p "$pid" 2>/dev/null) && [[ $st != Z* ]] || break
			sleep 0.1
		done
	fi
	rm -rf "$dir"
}

start() {
	local bin
	bin=$(binary) || {
		log "pgbouncer is not installed: run $0 install (apt-get install pgbouncer)"
		exit 1
	}
	if running; then
		url
		return
	fi
	rm -rf "$dir"
	mkdir -p "$dir"
	# PgBouncer refuses to run as root; it then runs as postgres (or nobody).
	local as=()
	if ((EUID == 0)); then
		local user=postgres
		id "$user" >/dev/null 2>&1 || user=nobody
		as=(-u "$user")
		chown "$user" "$dir"
	fi
	printf '"postgres" ""\n' >"$dir/userlist.txt"
	cat >"$dir/pgbouncer.ini" <<-EOF
		[databases]
		* = host=$pg_host port=$pg_port

		[pgbouncer]
		listen_addr = 127.0.0.1
		listen_port = $port
		unix_socket_dir =
		auth_type = trust
		auth_file = $dir/userlist.txt
		admin_users = postgres
		pool_mode = transaction
		default_pool_size = $pool_size
		max_client_conn = 2000
		server_lifetime = $server_lifetime
		logfile = $dir/pgbouncer.log
		pidfile = $dir/pgbouncer.pid
	EOF
	chmod a+r "$dir"/*
	"$bin" "${as[@]}" -d "$dir/pgbouncer.ini" >/dev/null
	local deadline=$((SECONDS + 10))
	until timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; do
		if ((SECONDS >= deadline)); then
			log "did not start on 127.0.0.1:$port; see $dir/pgbouncer.log"
			exit 1
		fi
		sleep 0.1
	done
	log "transaction pooling on 127.0.0.1:$port for $pg_host:$pg_port, $pool_size server connections per database (files in $dir)"
	url
}

case $cmd in
install) install ;;
start) start ;;
stop) stop ;;
url) url ;;
*)
	echo "usage: $0 install|start|stop|url [PORT]" >&2
	exit 2
	;;
esac
