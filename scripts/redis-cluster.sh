#!/usr/bin/env bash
# redis-cluster.sh starts and stops a Redis Cluster of three masters (no
# replicas) on 127.0.0.1, for tests and local runs of the service on a
# cluster. Needs redis-server and redis-cli 7 or later.
#
#   scripts/redis-cluster.sh start [PORT]  nodes on PORT, PORT+1, PORT+2 (default 7000), their
#                                          cluster bus on PORT+3..PORT+5; prints the REDIS_URL
#   scripts/redis-cluster.sh url [PORT]    prints the REDIS_URL
#   scripts/redis-cluster.sh restart [PORT]  kills every node (SIGKILL) and starts it again with
#                                          its cluster configuration but no data, as nodes
#                                          without persistence come back; waits for cluster_state:ok
#   scripts/redis-cluster.sh stop [PORT]   stops the nodes and removes their files
#
# Files (configuration, logs, pid files) live in
# ${REDIS_CLUSTER_DIR:-${TMPDIR:-/tmp}/matching-redis-cluster-PORT}. Nothing is persisted.
# start is a no-op, printing the URL, when the cluster is already running.
set -euo pipefail

cmd=${1:-}
port=${2:-7000}
dir=${REDIS_CLUSTER_DIR:-${TMPDIR:-/tmp}/matching-redis-cluster-$port}
ports=("$port" "$((port + 1))" "$((port + 2))")
wait_s=${REDIS_CLUSTER_WAIT:-30}

log() { printf 'redis-cluster: %s\n' "$*" >&2; }

url() {
	printf 'redis://127.0.0.1:%s?addr=127.0.0.1:%s&addr=127.0.0.1:%s\n' "${ports[@]}"
}

cli() { redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }

healthy() {
	local p
	for p in "${ports[@]}"; do
		cli "$p" cluster info 2>/dev/null | tr -d '\r' | grep -q '^cluster_state:ok$' || return 1
		[[ $(cli "$p" cluster info 2>/dev/null | tr -d '\r' | sed -n 's/^cluster_known_nodes://p') == 3 ]] || return 1
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
	for p in "${ports[@]}"; do
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

# start_nodes starts the three nodes (with the cluster configuration in
# their nodes-PORT.conf, if any) and waits until each answers.
start_nodes() {
	local i p
	for i in 0 1 2; do
		p=${ports[$i]}
		redis-server --daemonize yes --bind 127.0.0.1 --port "$p" \
			--cluster-enabled yes --cluster-port "$((port + 3 + i))" --cluster-config-file "$dir/nodes-$p.conf" \
			--cluster-node-timeout 2000 --save "" --appendonly no \
			--dir "$dir" --logfile "$dir/$p.log" --pidfile "$dir/$p.pid" >/dev/null
	done
	local deadline=$((SECONDS + wait_s))
	for p in "${ports[@]}"; do
		until cli "$p" ping >/dev/null 2>&1; do
			if ((SECONDS >= deadline)); then
				log "node 127.0.0.1:$p did not start; see $dir/$p.log"
				exit 1
			fi
			sleep 0.1
		done
	done
}

restart() {
	local p pids=()
	for p in "${ports[@]}"; do
		[[ -f $dir/$p.pid ]] || {
			log "node 127.0.0.1:$p is not running"
			exit 1
		}
		pids+=("$(<"$dir/$p.pid")")
	done
	kill -KILL "${pids[@]}" 2>/dev/null || true
	local pid
	for pid in "${pids[@]}"; do
		for _ in $(seq 100); do
			alive "$pid" || break
			sleep 0.05
		done
	done
	start_nodes
	local deadline=$((SECONDS + wait_s))
	until healthy; do
		if ((SECONDS >= deadline)); then
			log "the restarted cluster did not reach cluster_state:ok within ${wait_s}s; see $dir/*.log"
			exit 1
		fi
		sleep 0.1
	done
	log "3 masters restarted empty on 127.0.0.1:${ports[0]}-${ports[2]}"
}

start() {
	for tool in redis-server redis-cli; do
		if ! command -v "$tool" >/dev/null; then
			log "$tool is not installed (apt-get install redis-server)"
			exit 1
		fi
	done
	local major
	major=$(redis-server --version | sed -n 's/.*v=\([0-9]*\)\..*/\1/p')
	if ((major < 7)); then
		log "redis-server $major is too old: the cluster bus port (cluster-port) needs Redis 7"
		exit 1
	fi
	if healthy; then
		url
		return
	fi
	stop
	mkdir -p "$dir"
	start_nodes
	local deadline=$((SECONDS + wait_s)) p
	redis-cli --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 || {
		log "cluster create failed; see $dir/create.log"
		exit 1
	}
	until healthy; do
		if ((SECONDS >= deadline)); then
			log "the cluster did not reach cluster_state:ok within ${wait_s}s; see $dir/*.log"
			exit 1
		fi
		sleep 0.1
	done
	log "3 masters on 127.0.0.1:${ports[0]}-${ports[2]} (files in $dir)"
	url
}

case $cmd in
start) start ;;
stop) stop ;;
restart) restart ;;
url) url ;;
*)
	echo "usage: $0 start|stop|restart|url [PORT]" >&2
	exit 2
	;;
esac
