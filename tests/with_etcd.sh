#!/usr/bin/env bash
# with_etcd.sh CMD [ARGS...] - runs CMD with a fresh 3-member etcd cluster
# (tests/etcd_cluster.sh) whose endpoints are in $PATHFS_TEST_ETCD, and
# PATHFS_TEST_KV=etcd; stops the cluster by pid and removes its data after,
# whatever CMD does. Its exit status is CMD's.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=$(mktemp -d /tmp/pathfs-etcd.XXXXXX)
trap '"$here/etcd_cluster.sh" stop "$dir"; rm -rf "$dir"' EXIT
PATHFS_TEST_ETCD=$("$here/etcd_cluster.sh" start "$dir") || exit 1
export PATHFS_TEST_ETCD PATHFS_TEST_KV=etcd PATHFS_TEST_ETCD_DIR=$dir
"$@"
