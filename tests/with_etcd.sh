#!/usr/bin/env bash
# with_etcd.sh [--quota BYTES] [--tls] [--netns] CMD [ARGS...] - runs CMD with a fresh
# 3-member etcd cluster (tests/etcd_cluster.sh) whose endpoints are in
# $PATHFS_TEST_ETCD, and PATHFS_TEST_KV=etcd; stops the cluster by pid and
# removes its data after, whatever CMD does. Its exit status is CMD's.
# --quota starts the members with --quota-backend-bytes BYTES (also passed
# to CMD as $PATHFS_TEST_ETCD_QUOTA), for the tests of a full cluster.
# --tls makes certificates (etcd_cluster.sh pki) in the cluster's folder and
# starts the members serving clients over TLS with client certificates; the
# certificates' folder is $PATHFS_TEST_ETCD_PKI (ca.crt, client.crt/key,
# other-ca.crt). The test enables authentication itself.
# --netns starts the members in a network namespace of their own, made with
# tests/netns.sh in $PATHFS_TEST_NETNS (the endpoints on 10.77.0.1): the
# test makes its machines there (netns.sh machine) and reaches the cluster
# from them only; the namespaces are deleted after, with the cluster.
set -uo pipefail
tls=0
netns=0
while [ $# -gt 0 ]; do
	case $1 in
	--quota)
		export ETCD_QUOTA=${2:?--quota BYTES}
		export PATHFS_TEST_ETCD_QUOTA=$ETCD_QUOTA
		shift 2
		;;
	--tls)
		tls=1
		shift
		;;
	--netns)
		netns=1
		shift
		;;
	*) break ;;
	esac
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=$(mktemp -d /tmp/pathfs-etcd.XXXXXX)
trap '"$here/etcd_cluster.sh" stop "$dir"; "$here/netns.sh" down "$dir/ns"; rm -rf "$dir"' EXIT
if [ $netns = 1 ]; then
	"$here/netns.sh" cluster "$dir/ns" >/dev/null || exit 1
	export ETCD_NETNS=$dir/ns PATHFS_TEST_NETNS=$dir/ns
fi
if [ $tls = 1 ]; then
	"$here/etcd_cluster.sh" pki "$dir/pki" || exit 1
	export ETCD_TLS=$dir/pki PATHFS_TEST_ETCD_PKI=$dir/pki
fi
PATHFS_TEST_ETCD=$("$here/etcd_cluster.sh" start "$dir") || exit 1
export PATHFS_TEST_ETCD PATHFS_TEST_KV=etcd PATHFS_TEST_ETCD_DIR=$dir
"$@"
