#!/usr/bin/env bash
# netns.sh - "machines" for the tests: network namespaces (ip netns) that see
# one another only through an etcd cluster's namespace.
#
#   netns.sh cluster DIR      makes the cluster's namespace (its loopback has
#                             10.77.0.1, where tests/etcd_cluster.sh with
#                             ETCD_NETNS=$(cat DIR/cluster) ETCD_HOST=10.77.0.1
#                             starts the members); prints its name
#   netns.sh machine DIR N    makes machine N (1-200): a namespace with a veth
#                             pair to the cluster's, 10.77.N.2 on its side
#                             (eth0), 10.77.N.1 on the cluster's (mN), and a
#                             route to 10.77.0.1; prints its name
#   netns.sh exec DIR N CMD...  runs CMD in machine N's network namespace (N
#                             "cluster": the cluster's), in the caller's
#                             mount namespace (nsenter --net; `ip netns exec`
#                             would make a mount namespace of its own, where
#                             a FUSE mount is seen by nobody else)
#   netns.sh cut DIR N / mend DIR N  sets machine N's link down / up (both
#                             ends: the cluster's side too, so that neither
#                             end's packets go anywhere)
#   netns.sh down DIR         deletes every namespace made in DIR (their
#                             veths go with them); a process still in one
#                             keeps it alive until it ends
#
# Names are pfs<pid>-c and pfs<pid>-N, <pid> the `cluster` caller's, kept in
# DIR (DIR/cluster, DIR/machines): several tests can run at once. The
# machines cannot reach one another (the cluster's namespace forwards
# nothing), and each has its own abstract unix sockets: a pathfs daemon
# there serves pathfsctl in that namespace only. Needs root and iproute2.
set -euo pipefail

cmd=${1:?usage: netns.sh cluster|machine|exec|cut|mend|down DIR [N] [CMD...]}
dir=${2:?DIR}
mkdir -p "$dir"

cluster() { cat "$dir/cluster"; }
name_of() { # N: machine N's namespace (or the cluster's)
	if [ "$1" = cluster ]; then cluster; else echo "${cluster_ns%-c}-$1"; fi
}
[ "$cmd" = cluster ] || [ "$cmd" = down ] || cluster_ns=$(cluster)

case $cmd in
cluster)
	ns=pfs$$-c
	ip netns add "$ns"
	echo "$ns" >"$dir/cluster"
	ip -n "$ns" link set lo up
	ip -n "$ns" addr add 10.77.0.1/32 dev lo
	echo "$ns"
	;;
machine)
	n=${3:?N}
	ns=$(name_of "$n")
	ip netns add "$ns"
	echo "$ns" >>"$dir/machines"
	ip -n "$ns" link set lo up
	# made in the cluster's namespace, its peer moved to the machine's: no
	# name in the caller's namespace, where other tests make theirs
	ip -n "$cluster_ns" link add "m$n" type veth peer name eth0 netns "$ns"
	ip -n "$cluster_ns" addr add "10.77.$n.1/24" dev "m$n"
	ip -n "$ns" addr add "10.77.$n.2/24" dev eth0
	ip -n "$cluster_ns" link set "m$n" up
	ip -n "$ns" link set eth0 up
	ip -n "$ns" route add 10.77.0.1/32 via "10.77.$n.1"
	echo "$ns"
	;;
exec)
	n=${3:?N}
	shift 3
	exec nsenter --net="/run/netns/$(name_of "$n")" "$@"
	;;
cut | mend)
	n=${3:?N}
	state=down
	[ "$cmd" = mend ] && state=up
	ip -n "$(name_of "$n")" link set eth0 "$state"
	ip -n "$cluster_ns" link set "m$n" "$state"
	if [ "$cmd" = mend ]; then # the route went with the link
		ip -n "$(name_of "$n")" route replace 10.77.0.1/32 via "10.77.$n.1"
	fi
	;;
down)
	for ns in $(cat "$dir/machines" "$dir/cluster" 2>/dev/null); do
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -f "$dir/machines" "$dir/cluster"
	;;
*)
	echo "usage: netns.sh cluster|machine|exec|cut|mend|down DIR [N] [CMD...]" >&2
	exit 2
	;;
esac
