#!/usr/bin/env bash
# redis-sentinel.sh starts and stops a Redis Sentinel set-up on 127.0.0.1:
# one master, one replica and three sentinels, for tests and local runs of
# the service with automatic failover. Needs redis-server and redis-cli.
#
#   scripts/redis-sentinel.sh start [PORT]     master on PORT (default 7100), replica on PORT+1,
#                                              sentinels on PORT+2..PORT+4; prints the REDIS_URL
#   scripts/redis-sentinel.sh url [PORT]       prints the REDIS_URL
#   scripts/redis-sentinel.sh master [PORT]    prints the current master's host:port
#   scripts/redis-sentinel.sh failover [PORT]  asks the sentinels to fail over, waits until the
#                                              replica is master, demotes the old master to its
#                                              replica (as the sentinels do within about 10 s),
#                                              prints the new master's host:port
#   scripts/redis-sentinel.sh wait [PORT]      waits until the master has a replica in sync and
#                                              every sentinel knows them (before another failover)
#   scripts/redis-sentinel.sh stop [PORT]      stops every process and removes their files
#
# The master's name is ${REDIS_SENTINEL_MASTER:-matching}; a master that does
# not answer for ${REDIS_SENTINEL_DOWN_AFTER_MS:-2000} ms is failed over. Files
# live in ${REDIS_SENTINEL_DIR:-${TMPDIR:-/tmp}/matching-redis-sentinel-PORT}. Nothing
# is persisted. start is a no-op, printing the URL, when the set-up is running.
set -euo pipefail

cmd=${1:-}
port=${2:-7100}
name=${REDIS_SENTINEL_MASTER:-matching}
down_after=${REDIS_SENTINEL_DOWN_AFTER_MS:-2000}
dir=${REDIS_SENTINEL_DIR:-${TMPDIR:-/tmp}/matching-redis-sentinel-$port}
data=("$port" "$((port + 1))")
sentinels=("$((port + 2))" "$((port + 3))" "$((port + 4))")
wait_s=${REDIS_SENTINEL_WAIT:-30}

log() { printf 'redis-sentinel: %s\n' "$*" >&2; }

url() {
	printf 'redis://127.0.0.1:%s?addr=127.0.0.1:%s&addr=127.0.0.1:%s&master_name=%s\n' "${sentinels[@]}" "$name"
}

cli() { redis-cli -h 127.0.0.1 -p "$1" "${@:2}" 2>/dev/null | tr -d '\r'; }

# master prints the master's host:port as the first sentinel that answers sees it.
master() {
	local s out
	for s in "${sentinels[@]}"; do
		out=$(cli "$s" sentinel get-master-addr-by-name "$name") || continue
		if [[ -n $out ]]; then
			printf '%s:%s\n' $out
			return 0
		fi
	done
	return 1
}

# healthy: the master has a replica in sync, and every sentinel knows the
# master, the replica and the two other sentinels.
healthy() {
	local m s
	m=$(master) || return 1
	cli "${m##*:}" info replication | grep -q '^connected_slaves:1$' || return 1
	for s in "${sentinels[@]}"; do
		[[ $(cli "$s" sentinel master "$name" | sed -n '/^num-other-sentinels$/{n;p}') == 2 ]] || return 1
		[[ $(cli "$s" sentinel master "$name" | sed -n '/^num-slaves$/{n;p}') == 1 ]] || return 1
	done
	local r
	for r in "${data[@]}"; do
		[[ $r == "${m##*:}" ]] && continue
		cli "$r" info replication | grep -q '^master_link_status:up$' || return 1
	done
}

# alive PID: the process runs (a zombie waiting for its parent to reap it
# has exited).
alive() {
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $st != Z* ]]
}

stop() {
	local p pids=()
	for p in "${sentinels[@]}" "${data[@]}"; do
		[[ -f $dir/$p.pid ]] || continue
		pids+=("$(<"$dir/$p.pid")")
	done
	if ((${#pids[@]})); then
		kill "${pids[@]}" 2>/dev/null || true
		for _ in $(seq 100); do
			local left=0 pid
			for pid in "${pids[@]}"; do alive "$pid" && left=1; done
			((left)) || break
			sleep 0.1
		done
	fi
	rm -rf "$dir"
}

wait_until() { # wait_until WHAT CMD...
	local what=$1 deadline=$((SECONDS + wait_s))
	shift
	until "$@"; do
		if ((SECONDS >= deadline)); then
			log "$what within ${wait_s}s; see $dir/*.log"
			exit 1
		fi
		sleep 0.1
	done
}

start() {
	for tool in redis-server redis-cli; do
		if ! command -v "$tool" >/dev/null; then
			log "$tool is not installed (apt-get install redis-server)"
			exit 1
		fi
	done
	if healthy 2>/dev/null; then
		url
		return
	fi
	stop
	mkdir -p "$dir"
	local common=(--daemonize yes --bind 127.0.0.1 --save "" --appendonly no --repl-diskless-sync-delay 0 --shutdown-on-sigterm now --dir "$dir")
	redis-server "${common[@]}" --port "${data[0]}" --logfile "$dir/${data[0]}.log" --pidfile "$dir/${data[0]}.pid" >/dev/null
	redis-server "${common[@]}" --port "${data[1]}" --logfile "$dir/${data[1]}.log" --pidfile "$dir/${data[1]}.pid" \
		--replicaof 127.0.0.1 "${data[0]}" >/dev/null
	local s
	for s in "${sentinels[@]}"; do
		# A sentinel rewrites its configuration file, so each has its own.
		cat >"$dir/sentinel-$s.conf" <<-EOF
			port $s
			bind 127.0.0.1
			daemonize yes
			dir $dir
			pidfile $dir/$s.pid
			logfile $dir/$s.log
			sentinel monitor $name 127.0.0.1 ${data[0]} 2
			sentinel down-after-milliseconds $name $down_after
			sentinel failover-timeout $name 4000
			sentinel parallel-syncs $name 1
		EOF
		redis-server "$dir/sentinel-$s.conf" --sentinel >/dev/null
	done
	wait_until "the master, its replica and three sentinels did not agree" healthy
	log "master 127.0.0.1:${data[0]}, replica 127.0.0.1:${data[1]}, sentinels 127.0.0.1:${sentinels[0]}-${sentinels[2]} (files in $dir)"
	url
}

failover() {
	local before
	before=$(master) || {
		log "no sentinel answers on 127.0.0.1:${sentinels[0]}-${sentinels[2]}"
		exit 1
	}
	moved() {
		local m
		m=$(master) && [[ $m != "$before" ]] && cli "${m##*:}" info replication | grep -q '^role:master$'
	}
	# A sentinel refuses to fail the same master over again within twice
	# the failover timeout (8 s here): ask each in turn until one does.
	local deadline=$((SECONDS + wait_s)) i=0
	until moved; do
		if ((SECONDS >= deadline)); then
			log "the master did not move from $before within ${wait_s}s; see $dir/*.log"
			exit 1
		fi
		cli "${sentinels[i % 3]}" sentinel failover "$name" >/dev/null
		i=$((i + 1))
		for _ in $(seq 10); do moved && break; sleep 0.2; done
	done
	# The sentinels demote the old master within about 10 s (their polling
	# period); until then it still takes writes from clients that have not
	# moved yet. Demote it now, as they will, so the set-up is settled.
	local now
	now=$(master)
	cli "${before##*:}" replicaof "${now%:*}" "${now##*:}" >/dev/null || true
	echo "$now"
}

case $cmd in
start) start ;;
stop) stop ;;
url) url ;;
master) master ;;
failover) failover ;;
wait) wait_until "the master, its replica and three sentinels did not agree" healthy ;;
*)
	echo "usage: $0 start|stop|url|master|failover|wait [PORT]" >&2
	exit 2
	;;
esac
