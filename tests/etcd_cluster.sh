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
#   etcd_cluster.sh ctl DIR ARGS...  etcdctl ARGS on the members (with the
#                               client certificate on a TLS cluster)
#   etcd_cluster.sh pki DIR     makes certificates in DIR with openssl: a CA
#                               (ca.crt), the members' (server.crt/key: SANs
#                               127.0.0.1 and localhost), a client's
#                               (client.crt/key: no CommonName, as etcd's
#                               gateway wants with auth on) and another CA
#                               (other-ca.crt), for the TLS tests
#
# Ports: six free ones from a random base in 20000-59999, checked with ss, so
# several clusters (parallel tests) can run at once; a member that dies at
# start (its port taken meanwhile) starts the cluster again on others (up to
# 5 times). Environment: ETCD_QUOTA (--quota-backend-bytes, default etcd's
# 2 GiB), ETCD_EXTRA (more flags), ETCD_TLS (at start: a pki folder; the
# members then serve clients over TLS only, wanting a client certificate
# signed by its CA; peers stay on plain http, on loopback; DIR/tls keeps it
# for the other commands), ETCD_NETNS (at start: a tests/netns.sh DIR whose
# cluster namespace exists; the members then run there, on 10.77.0.1, and
# so do the commands above: DIR/netns keeps it).
# Members log to DIR/N.log. Stops only the processes it started.
set -euo pipefail

cmd=${1:?usage: etcd_cluster.sh start|stop|leader|kill|restart|ctl|pki DIR [N|ARGS]}
dir=${2:?DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# host: the members' address; in_ns CMD...: CMD where the members run
host() { if [ -f "$dir/netns" ]; then echo 10.77.0.1; else echo 127.0.0.1; fi; }
in_ns() {
	if [ -f "$dir/netns" ]; then
		"$(dirname "$0")/netns.sh" exec "$(cat "$dir/netns")" cluster "$@"
	else
		"$@"
	fi
}

member_args() { # N: the flags member N was started with
	local n=$1 base h
	base=$(cat "$dir/base")
	h=$(host)
	local cport=$((base + 2 * (n - 1))) pport=$((base + 2 * (n - 1) + 1))
	local cluster="" i
	for i in 1 2 3; do
		cluster+="m$i=http://$h:$((base + 2 * (i - 1) + 1)),"
	done
	local scheme=http tls=()
	if [ -f "$dir/tls" ]; then
		local pki
		pki=$(cat "$dir/tls")
		scheme=https
		tls=(--cert-file "$pki/server.crt" --key-file "$pki/server.key"
			--trusted-ca-file "$pki/ca.crt" --client-cert-auth)
	fi
	echo --name "m$n" --data-dir "$dir/m$n" \
		--listen-client-urls "$scheme://$h:$cport" \
		--advertise-client-urls "$scheme://$h:$cport" \
		"${tls[@]}" \
		--listen-peer-urls "http://$h:$pport" \
		--initial-advertise-peer-urls "http://$h:$pport" \
		--initial-cluster "${cluster%,}" \
		--initial-cluster-token "pathfs-$base" \
		--initial-cluster-state new \
		${ETCD_QUOTA:+--quota-backend-bytes "$ETCD_QUOTA"} \
		${ETCD_EXTRA:-}
}

endpoints() {
	local base h
	base=$(cat "$dir/base")
	h=$(host)
	echo "$h:$base,$h:$((base + 2)),$h:$((base + 4))"
}

# ctl ARGS...: etcdctl on endpoints @ARGS' first ("all" or one h:p), with
# the client certificate on a TLS cluster
ctl() {
	local eps=$1 pki
	shift
	[ "$eps" = all ] && eps=$(endpoints)
	if [ -f "$dir/tls" ]; then
		pki=$(cat "$dir/tls")
		ETCDCTL_API=3 in_ns etcdctl --endpoints "$(sed 's|[^,]*|https://&|g' <<<"$eps")" \
			--cacert "$pki/ca.crt" --cert "$pki/client.crt" \
			--key "$pki/client.key" "$@"
	else
		ETCDCTL_API=3 in_ns etcdctl --endpoints "$eps" "$@"
	fi
}

# make_pki DIR: the certificates of the TLS tests (see the header)
make_pki() {
	local d=$1 ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
	mkdir -p "$d"
	openssl req -x509 "${ec[@]}" -keyout "$d/ca.key" -out "$d/ca.crt" \
		-days 2 -subj /CN=pathfs-test-ca 2>/dev/null
	openssl req -x509 "${ec[@]}" -keyout "$d/other-ca.key" \
		-out "$d/other-ca.crt" -days 2 -subj /CN=pathfs-other-ca 2>/dev/null
	openssl req "${ec[@]}" -keyout "$d/server.key" -out "$d/server.csr" \
		-subj /CN=127.0.0.1 2>/dev/null
	# the gateway dials its own member with this one: clientAuth too
	printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" \
		"extendedKeyUsage=serverAuth,clientAuth" >"$d/server.ext"
	openssl x509 -req -in "$d/server.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
		-CAcreateserial -out "$d/server.crt" -days 2 \
		-extfile "$d/server.ext" 2>/dev/null
	openssl req "${ec[@]}" -keyout "$d/client.key" -out "$d/client.csr" \
		-subj /O=pathfs-test 2>/dev/null
	echo "extendedKeyUsage=clientAuth" >"$d/client.ext"
	openssl x509 -req -in "$d/client.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
		-CAcreateserial -out "$d/client.crt" -days 2 \
		-extfile "$d/client.ext" 2>/dev/null
	chmod 600 "$d"/*.key
	openssl verify -CAfile "$d/ca.crt" "$d/server.crt" "$d/client.crt" >/dev/null
}

# netns_exec: the command words that run a member in the cluster namespace
netns_exec() {
	[ -f "$dir/netns" ] &&
		echo "$(dirname "$0")/netns.sh exec $(cat "$dir/netns") cluster"
	return 0
}

start_member() { # N
	local n=$1
	# shellcheck disable=SC2046
	setsid $(netns_exec) etcd $(member_args "$n") >>"$dir/$n.log" 2>&1 </dev/null &
	echo $! >"$dir/$n.pid"
}

# wait_healthy [N...]: waits until the cluster serves; with member numbers,
# fails at once (status 2) when one of them died (its port was taken).
wait_healthy() {
	local i n
	for i in $(seq 1 200); do
		if ctl all --command-timeout=2s endpoint health >/dev/null 2>&1; then
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
ctl)
	shift 2
	ctl all "$@"
	;;
pki)
	make_pki "$dir"
	;;
start)
	if [ -n "${ETCD_TLS:-}" ]; then
		(cd "$ETCD_TLS" && pwd) >"$dir/tls"
	fi
	if [ -n "${ETCD_NETNS:-}" ]; then
		(cd "$ETCD_NETNS" && pwd) >"$dir/netns"
	fi
	# a port free when checked may be taken before its member binds it
	# (another cluster starting, a client's ephemeral port): a member that
	# dies is found out at once, and the cluster starts again elsewhere
	for attempt in 1 2 3 4 5; do
		for try in $(seq 1 20); do
			base=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
			base=$((base - base % 2))
			busy=0
			for p in $(seq "$base" $((base + 5))); do
				if in_ns ss -Htan "sport = :$p" | grep -q .; then
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
		ep=$(host):$((base + 2 * (n - 1)))
		if ctl "$ep" --command-timeout=2s \
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
	echo "usage: etcd_cluster.sh start|stop|leader|kill|restart|ctl|pki DIR [N|ARGS]" >&2
	exit 2
	;;
esac
