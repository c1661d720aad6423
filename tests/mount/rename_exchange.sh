#!/usr/bin/env bash
# rename_exchange.sh - crash safety of RENAME_EXCHANGE of two non-empty
# folders (issue 4), which runs through a side area in three phases (see
# store/journal.c): with the fault hook PATHFS_CRASH_AFTER_BATCHES=N at the
# journal record, the first copy, each phase change, inside phase 2, the last
# copy, the final batch and past the end, the daemon dies there and after a
# remount the two branches are exactly swapped (never half), no journal record
# is left and fsck is clean. The two folders differ in size, so the batch
# numbers are recomputed every round from what each name holds.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

BATCH=256
J='DRIVE#main|JOURNAL#'

# batch 0 record; 1..a copy X to the side area; a+1 phase; a+2..a+b+1 copy Y
# to X; a+b+2 phase; a+b+3..2a+b+2 copy the area to Y; 2a+b+3 final.
pfs_mount
python3 "$TREE_PY" gen "$MNT/X" 1500 >/dev/null
python3 "$TREE_PY" flat "$MNT/Y" 700 >/dev/null
manifest "$MNT/X" "$T/m.X"
manifest "$MNT/Y" "$T/m.Y"
nx=$(wc -l <"$T/m.X")
pfs_umount
swapped=0
# Which batch each round crashes after, by position: the record, the first
# copy, the first phase change, inside phase 2, the second phase change, the
# last copy of phase 3, the final batch, past the end. a and b are the copy
# batches of what X and Y hold now (they swap every round).
for pos in 0 1 a+1 a+3 a+b+2 2*a+b+2 2*a+b+3 2*a+b+20; do
	if [ "$swapped" = 0 ]; then
		a=$(((nx + BATCH - 1) / BATCH))
		b=$(((700 + BATCH - 1) / BATCH))
	else
		a=$(((700 + BATCH - 1) / BATCH))
		b=$(((nx + BATCH - 1) / BATCH))
	fi
	N=$((pos))
	what="exchange, crash after batch $pos = $N"
	PATHFS_CRASH_AFTER_BATCHES=$N pfs_mount -o rename_batch=$BATCH
	pid=$(pfs_pid)
	rc=0
	timeout 120 "$RENAMEAT2" exchange "$MNT/X" "$MNT/Y" 2>/dev/null || rc=$?
	if [ "$N" -le $((2 * a + b + 3)) ]; then
		pfs_wait_dead "$pid" "$what"
		check "$what: the call did not report success" test "$rc" -ne 0
		pfs_reap
		if [ "$N" -le $((2 * a + b + 2)) ]; then
			check "$what: the store holds a journal record" test "$(kv_count "$J")" = 1
		else
			check "$what: the final batch removed the record" test "$(kv_count "$J")" = 0
		fi
	else
		check "$what: exchange succeeded" test "$rc" = 0
		pfs_umount
	fi
	swapped=$((1 - swapped))
	pfs_mount
	manifest "$MNT/X" "$T/m.nowX"
	manifest "$MNT/Y" "$T/m.nowY"
	if [ "$swapped" = 1 ]; then
		same_file "$what: X holds Y's branch" "$T/m.Y" "$T/m.nowX"
		same_file "$what: Y holds X's branch" "$T/m.X" "$T/m.nowY"
	else
		same_file "$what: X holds its branch" "$T/m.X" "$T/m.nowX"
		same_file "$what: Y holds its branch" "$T/m.Y" "$T/m.nowY"
	fi
	pfs_umount
	check "$what: no journal record left" test "$(kv_count "$J")" = 0
	check "$what: fsck clean" pfs_fsck
done

sanitizer_clean
finish
