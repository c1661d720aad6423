#!/usr/bin/env bash
# commits_per_op.sh BUILD_DIR [N] - what a file operation costs a sole and a
# lone -o shared etcd mount, counted by etcd itself: raft commits
# (etcd_server_proposals_committed_total), range reads and txns
# (etcd_mvcc_range_total, etcd_mvcc_txn_total) of the first endpoint's
# member, and the time, around N (100) operations of each kind: `echo x >
# f`; `cat f` of those files 2 s later (a first open on the mount); `echo x
# > g; stat g; rm g`; `pathfsctl cp -r` of the folder of those N files,
# N/10 times (its row is per copy); with the daemon's CPU time (user +
# system, /proc) per operation. The counts are the cluster's (commits) or
# the one member's (reads: the mounts talk to the first endpoint), whatever the
# machine's load; the times are not, and with_etcd.sh keeps the members'
# data in /tmp: no reference for time (pathfs-bench backends, on tmpfs,
# is). Both mounts use one cluster, the sole
# one first. Run it through tests/with_etcd.sh, as root:
#   tests/with_etcd.sh scripts/commits_per_op.sh build 200
set -euo pipefail
b=$(cd "${1:?usage: commits_per_op.sh BUILD_DIR [N]}" && pwd)
n=${2:-100}
: "${PATHFS_TEST_ETCD:?run through tests/with_etcd.sh}"
ep=${PATHFS_TEST_ETCD%%,*}

pid=
tick=$(getconf CLK_TCK)
cpu() { awk '{printf "%d", $14 + $15}' "/proc/$pid/stat"; }
metric() { curl -s "http://$ep/metrics" | awk -v m="$1" '$1 == m {printf "%d", $2}'; }
snap() { echo "$(metric etcd_server_proposals_committed_total) $(metric etcd_mvcc_range_total) $(metric etcd_mvcc_txn_total) $(cpu) $(date +%s.%N)"; }
report() { # MODE WORK OPS BEFORE AFTER
	read -r p0 r0 t0 c0 s0 <<<"$4"
	read -r p1 r1 t1 c1 s1 <<<"$5"
	awk -v m="$1" -v w="$2" -v n="$3" -v p=$((p1 - p0)) -v r=$((r1 - r0)) \
		-v t=$((t1 - t0)) -v c=$((c1 - c0)) -v hz="$tick" -v s0="$s0" \
		-v s1="$s1" 'BEGIN {
		printf "%-7s %-7s commits/op %6.2f  ranges/op %6.2f  txns/op %6.2f  %8.2f ms/op  daemon cpu %7.2f ms/op\n",
			m, w, p / n, r / n, t / n, (s1 - s0) * 1000 / n, c * 1000 / hz / n }'
}

for mode in sole shared; do
	mnt=$(mktemp -d)
	store="etcd://$PATHFS_TEST_ETCD/cpo-$mode-$$"
	opt=()
	[ "$mode" = shared ] && opt=(-o shared)
	"$b/fs/pathfs" "${opt[@]}" -o "log=$mnt.log" "$store" "$mnt"
	pid=$(pgrep -nf "pathfs.* $mnt\$")
	mkdir "$mnt/d" "$mnt/e" "$mnt/c"
	sleep 1
	for work in create reopen csu clone; do
		ops=$n
		[ $work = clone ] && ops=$(((n + 9) / 10))
		before=$(snap)
		for i in $(seq "$ops"); do
			case $work in
			create) echo x >"$mnt/d/f$i" ;;
			reopen) cat "$mnt/d/f$i" >/dev/null ;;
			csu) echo x >"$mnt/e/g$i"; stat "$mnt/e/g$i" >/dev/null; rm "$mnt/e/g$i" ;;
			clone) "$b/tools/pathfsctl" -s "$store" cp -r /d "/c/$i" >/dev/null ;;
			esac
		done
		t=$(date +%s.%N)
		sleep 2 # what the operations left to do (a hold's drop) lands
		after=$(snap)
		report "$mode" "$work" "$ops" "$before" "${after% *} $t"
	done
	fusermount3 -u "$mnt"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done # it closes the store
	rmdir "$mnt"
	rm -f "$mnt.log"
done
