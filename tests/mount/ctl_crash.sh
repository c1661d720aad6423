#!/usr/bin/env bash
# ctl_crash.sh - pathfsctl's branch operations crash in the middle and end
# right (issue 5): the store's fault hook PATHFS_CRASH_AFTER_BATCHES=N kills
# pathfsctl (SIGKILL, no cleanup) after its N-th committed batch of an mv, an
# rm -r and a cp -r on an unmounted store; then `recover` or a resume finishes
# the work: the branch is complete where it belongs, nothing is left at the
# source, no journal record remains, fsck is clean. Also kill -9 of the daemon
# while it runs an rm -r for pathfsctl over the control socket.
source "$(dirname "$0")/lib.sh"

C() { "$PATHFSCTL" -s "$STORE" "$@"; }
quiet() { "$@" >/dev/null; }
J='DRIVE#main|JOURNAL#'

pfs_mount
python3 "$TREE_PY" gen "$MNT/data" 500 >/dev/null
manifest "$MNT/data" "$T/data.m" --no-dir-mtime
N=$(find "$MNT/data" | wc -l)
pfs_umount
echo "# branch of $N entries; batches of 100"

# ---- mv (the journaled rename) killed after batch K, then recover --------
# Batch 0 writes the journal record, 1..k copy, k+1 is the final batch.
LAST=$(((N + 99) / 100 + 1))
C cp -r /data /w >/dev/null
for K in 0 1 $((LAST / 2)) "$LAST"; do
	RC=0
	PATHFS_CRASH_AFTER_BATCHES=$K C -b 100 mv /w /w2 >/dev/null 2>&1 || RC=$?
	check "mv killed after batch $K (exit 137)" test "$RC" = 137
	if [ "$K" -lt "$LAST" ]; then
		check "... a journal record is left" test "$(kv_count "$J")" = 1
	fi
	C recover >"$T/recover.out"
	if [ "$K" -lt "$LAST" ]; then
		check "... recover reports the unfinished rename" \
			grep -q "^unfinished: drive main #[0-9]* rename /w -> /w2" "$T/recover.out"
	fi
	check "... no journal record is left" test "$(kv_count "$J")" = 0
	check "... fsck is clean" pfs_fsck
	RC=0; C stat /w >/dev/null 2>&1 || RC=$?
	check "... nothing is left at the source" test "$RC" = 1
	check "... the branch is at the destination" \
		test "$(C du --json /w2 | python3 -c 'import json,sys; print(json.load(sys.stdin)["files"])')" = \
		"$(C du --json /data | python3 -c 'import json,sys; print(json.load(sys.stdin)["files"])')"
	C mv /w2 /w >/dev/null
done
RC=0
PATHFS_CRASH_AFTER_BATCHES=$((LAST + 5)) C -b 100 mv /w /w2 >/dev/null 2>&1 || RC=$?
check "mv with the hook past the end completes (exit 0)" test "$RC" = 0

# ---- rm -r killed after batch 3, then run again ------------------------
C cp -r /data /r >/dev/null
RC=0
PATHFS_CRASH_AFTER_BATCHES=3 C -b 100 rm -r /r >/dev/null 2>&1 || RC=$?
check "rm -r killed after batch 3 (exit 137)" test "$RC" = 137
check "... the branch is partly removed, its root still there" \
	quiet C stat /r
check "... fsck is clean after the crash (no node without its parent)" pfs_fsck
check "... running rm -r again finishes it" C rm -r /r
RC=0; C stat /r >/dev/null 2>&1 || RC=$?
check "... the branch is gone" test "$RC" = 1

# ---- cp -r: a budgeted slice killed, resumed with the older token ---------
OUT=$(C cp -r --max-items 200 /data /c) || true
TOK=$(printf '%s\n' "$OUT" | tail -n1)
check "first cp -r slice stops with a token" test "${TOK#resume: }" != "$TOK"
TOK=${TOK#resume: }
RC=0
PATHFS_CRASH_AFTER_BATCHES=2 C -b 100 cp -r --max-items 400 --resume "$TOK" /data /c >/dev/null 2>&1 || RC=$?
check "cp -r slice killed after batch 2 (exit 137)" test "$RC" = 137
RC=0; C cp -r --resume "$TOK" /data /c >/dev/null || RC=$?
check "... resuming with the token from before the crash finishes (exit 0)" test "$RC" = 0
check "... no journal record is left" test "$(kv_count "$J")" = 0
check "... fsck is clean" pfs_fsck

# ---- kill -9 of the daemon while it runs rm -r for pathfsctl ---------------
pfs_mount -o rename_batch=50
manifest "$MNT/c" "$T/c.m" --no-dir-mtime
same_file "the resumed clone equals the original" "$T/data.m" "$T/c.m"
manifest "$MNT/w2" "$T/w2.m" --no-dir-mtime
same_file "the branch moved through four crashes equals the original" "$T/data.m" "$T/w2.m"
# a branch big enough that the kill lands while the daemon is at it
C cp -r /data /k >/dev/null
C cp -r /data "/k/a b/2" >/dev/null
C cp -r /data /k/x-/3 >/dev/null
C cp -r /data /k/x.y/4 >/dev/null
RC=0
("$PATHFSCTL" -s "$STORE" rm -r /k >"$T/k.out" 2>"$T/k.err") &
CPID=$!
sleep 0.3
kill -9 "$(pfs_pid)"
wait "$CPID" || RC=$?
pfs_reap
if [ "$RC" -ne 0 ]; then
	check "pathfsctl reports the daemon gone (exit 1)" test "$RC" = 1
	check "... with a clear message" grep -q "closed the connection" "$T/k.err"
else
	echo "# rm -r finished before the kill"
fi
pfs_mount
check "after kill -9 and remount fsck is clean" pfs_fsck
if C stat /k >/dev/null 2>&1; then
	check "rm -r again finishes it" C rm -r /k
fi
check "the mount shows it gone" test ! -e "$MNT/k"
check "the other branches are intact" test -d "$MNT/c" -a -d "$MNT/w2" -a -d "$MNT/data"
pfs_umount
check "journal empty at the end" test "$(kv_count "$J")" = 0

finish
