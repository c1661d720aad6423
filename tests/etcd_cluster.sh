#!/usr/bin/env bash
# etcd_cluster.sh - a 3-member etcd cluster on loopback ports, for the tests.
#
#   etcd_cluster.sh start DIR   starts it with its data in DIR (made if
#                               missing), waits until it serves, and prints
#                               its client endpoints: h:p,h:p,h:p
#   etcd_cluster.sh stop DIR    kills the members by their pids (DIR/*.pid)
#   etcd_cluster.sh leader DIR  prints the number (1-3) of the leader
#   etcd_cluster.sh kill DIR N  kill -9 of member N
#   etcd_cluster.sh restart DIR N   starts member N again (after kill)
#
# Ports: six free ones from a random base in 20000-59999, checked with ss, so
# several clusters (parallel tests) can run at once; a member that dies at
# start (its port taken meanwhile) starts the cluster again on others (up to
# 5 times). Environment: ETCD_QUOTA (--quota-backend-bytes, default etcd's
# 2 GiB), ETCD_EXTRA (more flags).
# Members log to DIR/N.log. Stops only the processes it started.
set -euo pipefail

cmd=${1:?usage: etcd_cluster.sh start|stop|leader|kill|restart DIR [N]}
dir=${2:?DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

member_args() { # N: the flags member N was started with
	local n=$1 base
	base=$(cat "$dir/base")
	local cport=$((base + 2 * (n - 1))) pport=$((base + 2 * (n - 1) + 1))
	local cluster="" i
	for i in 1 2 3; do
		cluster+="m$i=http://127.0.0.1:$((base + 2 * (i - 1) + 1)),"
	done
	echo --name "m$n" --data-dir "$dir/m$n" \
		--listen-client-urls "http://127.0.0.1:$cport" \
		--advertise-client-urls "http://127.0.0.1:$cport" \
		--listen-peer-urls "http://127.0.0.1:$pport" \
		--initial-advertise-peer-urls "http://127.0.0.1:$pport" \
		--initial-cluster "${cluster%,}" \
		--initial-cluster-token "pathfs-$base" \
		--initial-cluster-state new \
		${ETCD_QUOTA:+--quota-backend-bytes "$ETCD_QUOTA"} \
		${ETCD_EXTRA:-}
}

endpoints() {
	local base
	base=$(cat "$dir/base")
	echo "127.0.0.1:$base,127.0.0.1:$((base + 2)),127.0.0.1:$((base + 4))"
}

start_member() { # N
	local n=$1
	# shellcheck disable=SC2046
	setsid etcd $(member_args "$n") >>"$dir/$n.log" 2>&1 </dev/null &
	echo $! >"$dir/$n.pid"
}

# wait_healthy [N...]: waits until the cluster serves; with member numbers,
# fails at once (status 2) when one of them died (its port was taken).
wait_healthy() {
	local i n
	for i in $(seq 1 200); do
		if ETCDCTL_API=3 etcdctl --endpoints "$(endpoints)" \
			--command-timeout=2s endpoint health >/dev/null 2>&1; then
			return 0
		fi
		for n in "$@"; do
			kill -0 "$(cat "$dir/$n.pid")" 2>/dev/null || return 2
		done
		sleep 0.1
	done
	echo "etcd_cluster: cluster in $dir did not become healthy" >&2
	tail -5 "$dir"/*.log >&2
	return 1
}

case $cmd in
start)
	# a port free when checked may be taken before its member binds it
	# (another cluster starting, a client's ephemeral port): a member that
	# dies is found out at once, and the cluster starts again elsewhere
	for attempt in 1 2 3 4 5; do
		for try in $(seq 1 20); do
			base=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
			base=$((base - base % 2))
			busy=0
			for p in $(seq "$base" $((base + 5))); do
				if ss -Htan "sport = :$p" | grep -q .; then
					busy=1
				fi
			done
			[ $busy -eq 0 ] && break
		done
		echo "$base" >"$dir/base"
		for n in 1 2 3; do
			start_member "$n"
		done
		rc=0
		wait_healthy 1 2 3 || rc=$?
		[ $rc -eq 0 ] && break
		[ $rc -eq 2 ] && [ $attempt -lt 5 ] || exit 1
		echo "etcd_cluster: a member died (port $base..$((base + 5)) taken?): again" >&2
		"$0" stop "$dir"
		rm -rf "$dir"/m1 "$dir"/m2 "$dir"/m3
	done
	endpoints
	;;
stop)
	for n in 1 2 3; do
		[ -f "$dir/$n.pid" ] || continue
		pid=$(cat "$dir/$n.pid")
		kill -9 "$pid" 2>/dev/null || true
		while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
		rm -f "$dir/$n.pid"
	done
	;;
leader)
	base=$(cat "$dir/base")
	for n in 1 2 3; do
		ep=127.0.0.1:$((base + 2 * (n - 1)))
		if ETCDCTL_API=3 etcdctl --endpoints "$ep" --command-timeout=2s \
			endpoint status -w json 2>/dev/null |
			python3 -c 'import json,sys; s=json.load(sys.stdin)[0]["Status"]; sys.exit(0 if s["leader"]==s["header"]["member_id"] else 1)'; then
			echo "$n"
			exit 0
		fi
	done
	exit 1
	;;
kill)
	n=${3:?N}
	pid=$(cat "$dir/$n.pid")
	kill -9 "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	;;
restart)
	start_member "${3:?N}"
	wait_healthy
	;;
*)
	echo "usage: etcd_cluster.sh start|stop|leader|kill|restart DIR [N]" >&2
	exit 2
	;;
esac
