#!/usr/bin/env bash
# rel_kill9.sh - kill -9 of the daemon during a mixed workload, 20 rounds
# (REL_KILL9_ROUNDS). The workload: two writers that fsync files and log each
# checksum only after fsync returned (tests/helpers/rel_sync.c), three
# processes of racing namespace calls (rel_stress --shared-only), and a loop
# renaming a 300-entry folder back and forth with small rename batches, so
# kills land inside journaled subtree rewrites. After each kill: remount,
# fsck clean, every fsynced file has exactly its synced content, the folder is
# whole at exactly one of its two names, and (unmounted) no journal record is
# left. A round whose workload failed shows what the workload said (its
# stderr) and which process exited how.
source "$(dirname "$0")/rel_lib.sh"

ROUNDS=${REL_KILL9_ROUNDS:-20}
OPTS=(-o rename_batch=8)
rel_mount_fg "${OPTS[@]}"
mkdir "$MNT/synced" "$MNT/mixed" "$MNT/big"
for i in $(seq 1 30); do
	mkdir "$MNT/big/d$i"
	for j in $(seq 1 9); do echo "$i.$j" >"$MNT/big/d$i/f$j"; done
done
rel_umount_fg

# one_of A B N: exactly one of A and B is N, the other 0
one_of() {
	{ [ "$1" -eq "$3" ] && [ "$2" -eq 0 ]; } ||
		{ [ "$2" -eq "$3" ] && [ "$1" -eq 0 ]; }
}

# count DIR: entries below DIR, 0 if it does not exist
count() {
	if [ -d "$1" ]; then find "$1" -mindepth 1 | wc -l; else echo 0; fi
}

replayed=0
for r in $(seq 1 "$ROUNDS"); do
	rel_mount_fg "${OPTS[@]}"
	"$REL_SYNC" write "$MNT/synced" "$T/sync.$r.log" "r$r-a" 2>>"$T/work.$r.err" &
	W1=$!
	"$REL_SYNC" write "$MNT/synced" "$T/sync.$r.log" "r$r-b" 2>>"$T/work.$r.err" &
	W2=$!
	"$REL_STRESS" --shared-only --disconnect-ok -n 3 -t 60 -S "$r" \
		"$MNT/mixed" >/dev/null 2>>"$T/work.$r.err" &
	W3=$!
	(
		cd "$MNT" || exit 0
		while :; do
			if [ -d big ]; then mv big big2 || exit 0; else mv big2 big || exit 0; fi
		done
	) 2>/dev/null &
	W4=$!
	sleep "$(printf '0.%02d' $((20 + RANDOM % 80)))" # 0.2 to 1 s
	rel_kill9
	ok=1
	for w in $W1 $W2 $W3; do
		rc=0
		for i in $(seq 1 600); do
			kill -0 "$w" 2>/dev/null || break
			sleep 0.05
		done
		if kill -0 "$w" 2>/dev/null; then
			# its workers too, or they go on in the next mount
			echo "FAIL: workload hung" >&2
			pkill -9 -P "$w" 2>/dev/null || true
			kill -9 "$w" 2>/dev/null || true
		fi
		wait "$w" || rc=$?
		if [ "$rc" -ne 0 ]; then
			ok=0
			echo "pid $w exited with status $rc" >>"$T/work.$r.err"
		fi
	done
	kill -9 "$W4" 2>/dev/null || true
	wait "$W4" 2>/dev/null || true
	check "round $r: the workload saw only expected errors" [ $ok -eq 1 ]
	[ $ok -eq 1 ] || cat "$T/work.$r.err" >&2

	rel_mount_fg "${OPTS[@]}"
	check "round $r: fsck clean after the kill" rel_fsck
	check "round $r: every fsynced file has its synced content" \
		timeout 60 "$REL_SYNC" check "$MNT/synced" "$T/sync.$r.log"
	n1=$(count "$MNT/big")
	n2=$(count "$MNT/big2")
	check "round $r: renamed folder whole at one name ($n1 + $n2 entries)" \
		one_of "$n1" "$n2" 300
	rel_umount_fg
	check "round $r: no journal record left" \
		[ "$("$REL_PLANT" journal "$STORE" main)" = 0 ]
	grep -qi "replay" "$DLOG" && replayed=$((replayed + 1))
	: >"$DLOG"
done
echo "rounds whose remount replayed a journal record: $replayed of $ROUNDS"

rel_mount_fg
all=0
for r in $(seq 1 "$ROUNDS"); do
	"$REL_SYNC" check "$MNT/synced" "$T/sync.$r.log" >/dev/null || all=$((all + 1))
done
check "after all rounds, every fsynced file of every round intact" [ $all -eq 0 ]
check "daemon alive" rel_alive
rel_umount_fg
check "fsck clean on the unmounted store" rel_fsck

# A workload that starts late, after its round's kill (a slow start on a
# loaded machine), finds the mount gone before its first call: that is a
# lost mount too, not a failure.
late() {
	"$REL_STRESS" --shared-only --disconnect-ok -n 1 -t 5 "$MNT/mixed" \
		2>"$T/late.err" || { cat "$T/late.err" >&2 && false; }
}
rel_mount_fg
kill -9 "$DPID"
wait "$DPID" 2>/dev/null || true
DPID=
check "a workload started on a killed daemon's mount ends quietly" late
fusermount3 -u -z "$MNT"
check "a workload started after its lazy unmount ends quietly" late
rel_finish
