#!/usr/bin/env bash
# scaleout.sh is `make test-scaleout`: the service as a fleet on 127.0.0.1,
# checked end to end.
#
#   scripts/scaleout.sh [cluster|sentinel|all]   (default all: cluster, then sentinel)
#
# For each Redis topology it starts
#   - Redis: a Cluster of 3 masters (scripts/redis-cluster.sh, ports 7000-7005) or one master,
#     one replica and 3 sentinels (scripts/redis-sentinel.sh, ports 26379-26383);
#   - PgBouncer in transaction pooling mode on 6432 (scripts/pgbouncer.sh) in front of a fresh
#     database matching_scaleout on the PostgreSQL of DATABASE_URL (migrated directly, seeded
#     with a generated catalogue);
#   - two API replicas (127.0.0.1:18201-18202, operations 18211-18212) and two worker replicas
#     (operations 18221-18222), built by make build, behind a round-robin proxy on
#     127.0.0.1:18200 (internal/tools/scaleout/rrproxy);
#   - one webhook subscriber, 127.0.0.1:18230, which the end-to-end tests run (every replica
#     is given its WEBHOOK_ENDPOINTS_FILE);
# then runs the end-to-end tests of internal/e2e against the proxy: onboarding, category
# swipes, exact counts and phases, idempotent retries, ETag/304, sync exactly once, shared
# rate limits, webhooks; and a swipe load during which a disruption runs:
#   cluster:  a worker replica killed with SIGKILL (and started again), then every Redis node
#             killed and started again empty;
#   sentinel: a Sentinel failover (SENTINEL FAILOVER).
# On the cluster it also checks that the replicas agree on the webhook subscriber list
# (matching_webhook_config_mismatch 0) and that an API started with another list reports the
# difference (gauge and log), as the workers do at their next refresh.
# After each load every acknowledged swipe must be in PostgreSQL exactly once and delivered
# to the subscriber, and every student must be able to swipe again. The figures of each load
# are printed at the end.
#
# Everything it starts is stopped (by PID) when it ends, fails or is interrupted. Files and
# logs are in ${SCALEOUT_DIR:-${TMPDIR:-/tmp}/matching-scaleout}. SCALEOUT_LOAD_SECONDS (default 12)
# and SCALEOUT_STUDENTS (default 16) size each load; each go test run is bounded by
# SCALEOUT_TEST_TIMEOUT (default 6m).
#
#   scripts/scaleout.sh kill-worker   kills worker 1 of the running fleet with SIGKILL and starts
#                                     it again 2 s later (the load's disruption)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
dir=${SCALEOUT_DIR:-${TMPDIR:-/tmp}/matching-scaleout}
direct_base=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/matching?sslmode=disable}
cluster_port=7000
sentinel_port=26379
pgb_port=6432
proxy_addr=127.0.0.1:18200
hook_addr=127.0.0.1:18230
api_ports=(18201 18202)
api_ops=(18211 18212)
worker_ops=(18221 18222)
db_name=matching_scaleout

log() { printf 'scaleout: %s\n' "$*" >&2; }

# alive PID: the process runs (a zombie waiting for its parent to reap it
# has exited).
alive() {
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $st != Z* ]]
}

# start_proc NAME CMD...: runs CMD in the background with the fleet's
# environment ($dir/env), its output in $dir/NAME.log, its PID in
# $dir/pids/NAME.
start_proc() {
	local name=$1
	shift
	(
		set -a
		# shellcheck disable=SC1091
		source "$dir/env"
		set +a
		exec "$@"
	) >>"$dir/$name.log" 2>&1 </dev/null &
	echo $! >"$dir/pids/$name"
	disown $! 2>/dev/null || true
}

# stop_proc NAME: SIGTERM, then SIGKILL after 15 s.
stop_proc() {
	local f=$dir/pids/$1 pid
	[[ -f $f ]] || return 0
	pid=$(<"$f")
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 150); do
		alive "$pid" || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	rm -f "$f"
}

start_worker() { # start_worker I
	start_proc "worker-$1" env OPS_ADDR="127.0.0.1:${worker_ops[$1]}" "$root/bin/worker"
}

start_api() { # start_api I
	start_proc "api-$1" env HTTP_ADDR="127.0.0.1:${api_ports[$1]}" OPS_ADDR="127.0.0.1:${api_ops[$1]}" "$root/bin/api"
}

# wait_http URL SECONDS: until URL answers 200.
wait_http() {
	local deadline=$((SECONDS + $2))
	until curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; do
		if ((SECONDS >= deadline)); then
			log "$1 did not answer within $2 s; logs in $dir"
			return 1
		fi
		sleep 0.2
	done
}

start_fleet() {
	local i
	for i in 0 1; do start_worker "$i"; done
	for i in 0 1; do start_api "$i"; done
	start_proc proxy "$dir/rrproxy" -listen "$proxy_addr" \
		-backend "http://127.0.0.1:${api_ports[0]}" -backend "http://127.0.0.1:${api_ports[1]}"
	for i in 0 1; do
		wait_http "http://127.0.0.1:${api_ops[$i]}/readyz" 60
		wait_http "http://127.0.0.1:${worker_ops[$i]}/readyz" 60
	done
	wait_http "http://$proxy_addr/livez" 10 2>/dev/null || true
}

stop_fleet() {
	local name
	for name in proxy api-0 api-1 api-other worker-0 worker-1; do stop_proc "$name"; done
	if [[ -f $dir/proxy.log ]]; then
		grep -h 'rrproxy: .*requests' "$dir/proxy.log" | tail -1 >&2 || true
	fi
}

kill_worker() {
	local pid
	pid=$(<"$dir/pids/worker-1")
	kill -KILL "$pid"
	echo "worker 1 (pid $pid) killed with SIGKILL"
	sleep 2
	start_worker 1
	echo "worker 1 started again (pid $(<"$dir/pids/worker-1"))"
}

if [[ ${1:-} == kill-worker ]]; then
	kill_worker
	exit 0
fi

topologies=()
case ${1:-all} in
all) topologies=(cluster sentinel) ;;
cluster | sentinel) topologies=("$1") ;;
*)
	echo "usage: $0 [cluster|sentinel|all]" >&2
	exit 2
	;;
esac

for tool in curl psql redis-server redis-cli; do
	command -v "$tool" >/dev/null || {
		log "$tool is not installed"
		exit 1
	}
done

# The database URLs: direct (migrations, the tests' reads) and through PgBouncer.
with_db() { # with_db URL NAME: URL with its database replaced by NAME
	local url=$1 name=$2 scheme rest hostpart query=
	scheme=${url%%://*}
	rest=${url#*://}
	[[ $rest == *\?* ]] && query="?${rest#*\?}"
	rest=${rest%%\?*}
	hostpart=${rest%%/*}
	echo "$scheme://$hostpart/$name$query"
}
direct=$(with_db "$direct_base" "$db_name")
admin=$(with_db "$direct_base" postgres)

cleanup() {
	trap - INT TERM EXIT
	stop_fleet 2>/dev/null || true
	scripts/redis-cluster.sh stop "$cluster_port" >/dev/null 2>&1 || true
	scripts/redis-sentinel.sh stop "$sentinel_port" >/dev/null 2>&1 || true
	DATABASE_URL=$direct scripts/pgbouncer.sh stop "$pgb_port" >/dev/null 2>&1 || true
	psql -q "$admin" -c "DROP DATABASE IF EXISTS $db_name WITH (FORCE)" >/dev/null 2>&1 || true
}
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap cleanup EXIT

began=$SECONDS
rm -rf "$dir"
mkdir -p "$dir/pids"

log "building the binaries and the proxy"
make --no-print-directory build >&2
go build -o "$dir/rrproxy" ./internal/tools/scaleout/rrproxy
go test -c -o "$dir/e2e.test" ./internal/e2e

log "database $db_name, PgBouncer on 127.0.0.1:$pgb_port"
psql -q "$admin" -c "DROP DATABASE IF EXISTS $db_name WITH (FORCE)" >/dev/null
DATABASE_URL=$direct scripts/pgbouncer.sh install
pooled=$(DATABASE_URL=$direct PGBOUNCER_POOL_SIZE=20 scripts/pgbouncer.sh start "$pgb_port")
DATABASE_URL=$direct bin/matchctl migrate >&2
DATABASE_URL=$pooled bin/matchctl seed --synthetic --count 1500 >&2

secret=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
hook_secret="whsec_$(head -c 32 /dev/urandom | base64 | tr -d '\n')"
cat >"$dir/webhooks.yaml" <<EOF
- url: http://$hook_addr/hooks
  secret: $hook_secret
  events: [swipe.recorded]
  allow_private: true
EOF

# write_env REDIS_URL: the environment every replica starts with.
write_env() {
	cat >"$dir/env" <<-EOF
		DATABASE_URL='$pooled'
		MIGRATE_DATABASE_URL='$direct'
		REDIS_URL='$1'
		AUTH_HS256_SECRET='$secret'
		WEBHOOK_ENDPOINTS_FILE='$dir/webhooks.yaml'
		RATE_LIMIT_SWIPES='100000/min'
		LOG_LEVEL=warn
	EOF
}

summaries=()
timeout=${SCALEOUT_TEST_TIMEOUT:-6m}
# e2e LABEL RUN DISRUPT: the end-to-end tests matching RUN against the proxy.
e2e() {
	local label=$1 run=$2 disrupt=${3:-} out=$dir/e2e-${1//[^a-zA-Z]/-}.log
	log "$label: go test -run '$run' ./internal/e2e"
	local status=0 t0=$SECONDS
	(cd internal/e2e && E2E_API_URL="http://$proxy_addr" E2E_HS256_SECRET=$secret E2E_DATABASE_URL=$direct \
		E2E_WEBHOOK_ADDR=$hook_addr E2E_WEBHOOK_SECRET=$hook_secret E2E_LABEL=$label E2E_DISRUPT=$disrupt \
		E2E_LOAD_SECONDS=${SCALEOUT_LOAD_SECONDS:-12} E2E_LOAD_STUDENTS=${SCALEOUT_STUDENTS:-16} \
		"$dir/e2e.test" -test.count=1 -test.v -test.timeout "$timeout" -test.run "$run") >"$out" 2>&1 || status=$?
	grep -E '^(=== RUN|--- |    |scaleout summary|PASS|FAIL|ok)' "$out" | grep -v '^=== RUN' >&2 || true
	if ((status != 0)); then
		log "$label failed (exit $status); output in $out, service logs in $dir"
		return 1
	fi
	local line
	while IFS= read -r line; do summaries+=("$line"); done < <(grep '^scaleout summary' "$out" || true)
	if ! grep -q '^scaleout summary' "$out"; then
		summaries+=("scaleout checks [$label]: $(grep -c '^--- PASS' "$out") end-to-end tests passed through the proxy in $((SECONDS - t0)) s")
	fi
}

# metric URL NAME: the value of an unlabelled metric at URL.
metric() { curl -fsS --max-time 2 "$1" 2>/dev/null | awk -v n="$2" '$1 == n {print $2}'; }

# check_agreement: every replica reads the same webhook subscriber list
# (matching_webhook_config_mismatch 0); an API started with another list
# says so at start, in its log and gauge, and the workers see it within
# their 30 s refresh.
check_agreement() {
	local i url
	for url in "${api_ops[@]}" "${worker_ops[@]}"; do
		url="http://127.0.0.1:$url/metrics"
		[[ $(metric "$url" matching_webhook_config_mismatch) == 0 ]] || {
			log "agreement: $url does not show matching_webhook_config_mismatch 0"
			return 1
		}
	done
	sed 's|/hooks$|/other-hooks|' "$dir/webhooks.yaml" >"$dir/webhooks-other.yaml"
	start_proc api-other env HTTP_ADDR=127.0.0.1:18203 OPS_ADDR=127.0.0.1:18213 \
		WEBHOOK_ENDPOINTS_FILE="$dir/webhooks-other.yaml" "$root/bin/api"
	wait_http http://127.0.0.1:18213/readyz 60
	local deadline=$((SECONDS + 10))
	until [[ $(metric http://127.0.0.1:18213/metrics matching_webhook_config_mismatch) == 1 ]]; do
		if ((SECONDS >= deadline)); then
			log "agreement: an API with another subscriber list does not show matching_webhook_config_mismatch 1"
			stop_proc api-other
			return 1
		fi
		sleep 0.2
	done
	grep -q 'differs across the fleet' "$dir/api-other.log" || {
		log "agreement: the API with another subscriber list logged no difference"
		stop_proc api-other
		return 1
	}
	local t0=$SECONDS
	deadline=$((SECONDS + 40))
	until [[ $(metric "http://127.0.0.1:${worker_ops[0]}/metrics" matching_webhook_config_mismatch) == 1 ]]; do
		if ((SECONDS >= deadline)); then
			log "agreement: worker 0 did not see the other list within 40 s"
			stop_proc api-other
			return 1
		fi
		sleep 0.5
	done
	stop_proc api-other
	log "agreement: all replicas agree; an API with another list showed the mismatch at start, worker 0 $((SECONDS - t0)) s later"
	summaries+=("scaleout agreement [cluster]: 4 replicas matching_webhook_config_mismatch 0; an API started with another subscriber list: 1 at start and logged; worker 0: 1 within $((SECONDS - t0)) s")
}

checks='^(TestOnboardingAndCategories|TestSwipeCountsAndPhases|TestIdempotentRetry|TestRecommendationsETag|TestSyncPushPullExactlyOnce|TestRateLimitSharedAcrossReplicas|TestWebhooksDelivered)$'
failed=0
for topology in "${topologies[@]}"; do
	t0=$SECONDS
	case $topology in
	cluster)
		redis_url=$(scripts/redis-cluster.sh start "$cluster_port")
		write_env "$redis_url"
		start_fleet
		log "cluster: 2 API and 2 worker replicas on $redis_url, through PgBouncer"
		e2e "cluster" "$checks" || failed=1
		check_agreement || failed=1
		e2e "cluster, worker SIGKILL" '^TestSwipeLoad$' "$root/scripts/scaleout.sh kill-worker" || failed=1
		e2e "cluster, Redis restarted empty" '^TestSwipeLoad$' "$root/scripts/redis-cluster.sh restart $cluster_port" || failed=1
		stop_fleet
		scripts/redis-cluster.sh stop "$cluster_port"
		;;
	sentinel)
		redis_url=$(scripts/redis-sentinel.sh start "$sentinel_port")
		write_env "$redis_url"
		start_fleet
		log "sentinel: 2 API and 2 worker replicas on $redis_url, through PgBouncer"
		e2e "sentinel" "$checks" || failed=1
		e2e "sentinel, failover" '^TestSwipeLoad$' "$root/scripts/redis-sentinel.sh failover $sentinel_port" || failed=1
		stop_fleet
		scripts/redis-sentinel.sh stop "$sentinel_port"
		;;
	esac
	log "$topology: $((SECONDS - t0)) s"
done

echo
echo "scale-out run ($(IFS=,; echo "${topologies[*]}")): $((SECONDS - began)) s in all"
for line in "${summaries[@]}"; do echo "$line"; done
if ((failed)); then
	echo "FAILED: see the output above and $dir"
	exit 1
fi
echo "PASS"
