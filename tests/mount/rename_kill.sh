#!/usr/bin/env bash
# rename_kill.sh - kill -9 of the daemon at random moments during a large
# folder mv (issue 4), at least 20 rounds.
#
# A folder of >= 5,000 entries (tests/helpers/tree.py gen) is mv'd back and
# forth between two names with -o rename_batch=32 (~160 batches), and the
# daemon is SIGKILLed after a random delay drawn from 0..S x the time a whole
# mv takes (measured first), S adapting to where the last kill landed (before
# the rename began: larger; after it completed: smaller). After each kill: the dead mount is cleaned up,
# the store is remounted (which replays the journal), and exactly one of the
# two names exists, holding the full manifest (names, modes, sizes, sha256,
# xattrs, link targets, mtimes); no journal record is left and fsck is clean.
# The test also checks that its kills really hit the middle of rewrites (a
# journal record was in the store right after the kill) often enough to mean
# something, and says how often.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

ROUNDS=${RENAME_KILL_ROUNDS:-20}
BATCH=32
J='DRIVE#main|JOURNAL#'

pfs_mount
n=$(python3 "$TREE_PY" gen "$MNT/A" 5000)
check "built a folder of >= 5,000 entries ($n)" test "$n" -ge 5000
manifest "$MNT/A" "$T/m.ref"
pfs_umount

# How long one whole mv takes here, to draw kill moments from.
pfs_mount -o rename_batch=$BATCH
t0=$EPOCHREALTIME
check "a whole mv (calibration)" mv "$MNT/A" "$MNT/B"
t1=$EPOCHREALTIME
pfs_umount
dur=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
echo "# one mv of $n entries in batches of $BATCH: $dur s"

cur=B
other=A
scale=1.0
mid=0
before=0
after=0
# Kill moments are random: about 40% land mid-rewrite on a quiet machine,
# fewer on a loaded one, so the test asks for a tenth (at least one) and, if
# its rounds fell short, goes on for up to twice as many more rounds before
# it calls the kills meaningless.
need=$((ROUNDS / 10 > 0 ? ROUNDS / 10 : 1))
r=0
while r=$((r + 1)); [ "$r" -le "$ROUNDS" ] ||
	{ [ "$mid" -lt "$need" ] && [ "$r" -le $((ROUNDS * 3)) ]; }; do
	pfs_mount -o rename_batch=$BATCH
	pid=$(pfs_pid)
	delay=$(awk -v r="$RANDOM" -v d="$dur" -v s="$scale" 'BEGIN {printf "%.3f", r / 32767 * d * s}')
	timeout 60 mv "$MNT/$cur" "$MNT/$other" 2>/dev/null &
	mvpid=$!
	sleep "$delay"
	kill -9 "$pid" 2>/dev/null || true
	wait "$mvpid" 2>/dev/null || true
	pfs_reap
	j=$(kv_count "$J")
	pfs_mount
	if [ -e "$MNT/$cur" ] && [ -e "$MNT/$other" ]; then
		check "round $r (kill after ${delay}s): exactly one name exists" false
		manifest "$MNT/$other" "$T/m.now"
	elif [ -e "$MNT/$other" ]; then
		check "round $r (kill after ${delay}s): exactly one name exists" true
		manifest "$MNT/$other" "$T/m.now"
		if [ "$j" = 1 ]; then
			mid=$((mid + 1))
		else
			after=$((after + 1))
			scale=$(awk -v s="$scale" 'BEGIN {print s * 0.8}')
		fi
		t=$cur
		cur=$other
		other=$t
	elif [ -e "$MNT/$cur" ]; then
		check "round $r (kill after ${delay}s): exactly one name exists" true
		manifest "$MNT/$cur" "$T/m.now"
		before=$((before + 1))
		scale=$(awk -v s="$scale" 'BEGIN {print s * 1.25}')
	else
		check "round $r (kill after ${delay}s): exactly one name exists" false
		echo "missing" >"$T/m.now"
	fi
	same_file "round $r: the full branch" "$T/m.ref" "$T/m.now"
	pfs_umount
	check "round $r: no journal record left" test "$(kv_count "$J")" = 0
	check "round $r: fsck clean" pfs_fsck
done
echo "# kills in $((r - 1)) rounds: $mid mid-rewrite (journal replayed)," \
	"$before before the rename began, $after after it completed"
check "at least $need of the kills hit a rewrite in flight" \
	test "$mid" -ge "$need"

sanitizer_clean
finish
