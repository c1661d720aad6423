#!/usr/bin/env bash
# rename_crash.sh - crash safety of the journaled folder rename (issue 4),
# proven with the daemon's fault hook PATHFS_CRASH_AFTER_BATCHES=N (the
# process SIGKILLs itself right after committing batch N of a subtree rewrite:
# 0 = the journal record, 1..k the copy batches, k+1 the final batch).
#
# A drive holds a folder of >= 5,000 entries (tests/helpers/tree.py gen:
# nested folders, files with content, symlinks, hard links, xattrs, odd modes
# and names) next to siblings whose names extend its name. With
# -o rename_batch=256 (~20 copy batches) the folder is mv'd with the hook at
# N = 0, 1, the middle, the last copy batch, the final batch and past the end;
# each time the daemon dies where expected (a journal record is left in the
# store for N <= k), and after a remount without the hook the whole branch is
# at the destination with the identical manifest (names, modes, sizes, sha256,
# xattrs, link targets, mtimes), nothing is at the source, the siblings and a
# hard link from outside are untouched, no journal record remains and fsck is
# clean. Last, folders of one chunk + 1 and two chunks + 1 entries rename
# completely. (RENAME_EXCHANGE: rename_exchange.sh; kill -9: rename_kill.sh.)
source "$(dirname "$0")/lib.sh"
sanitizer_logs

BATCH=256
J='DRIVE#main|JOURNAL#'

pfs_mount
n=$(python3 "$TREE_PY" gen "$MNT/A" 5000)
check "built a folder of >= 5,000 entries ($n)" test "$n" -ge 5000
for s in A-sibling A.x "A b" A0; do
	mkdir -p "$MNT/$s/sub"
	echo "$s" >"$MNT/$s/sub/file"
done
echo file >"$MNT/A.txt"
ln "$MNT/A/x/f001" "$MNT/outside-link"
manifest "$MNT/A" "$T/m.ref"
check "manifest has every entry" test "$(wc -l <"$T/m.ref")" = "$n"
(cd "$MNT" && cat A-sibling/sub/file A.x/sub/file "A b/sub/file" \
	A0/sub/file A.txt outside-link | sha256sum) >"$T/siblings.ref"
pfs_umount
# batches: subtree keys / batch, rounded up (every entry is one key)
k=$(((n + BATCH - 1) / BATCH))
echo "# $n entries, $k copy batches of $BATCH"

# verify CUR OTHER WHAT: after a remount, the branch is at OTHER, not at CUR.
verify() {
	local cur=$1 other=$2 what=$3
	pfs_mount -o rename_batch=$BATCH
	check "$what: nothing left at the source" test ! -e "$MNT/$cur"
	manifest "$MNT/$other" "$T/m.now"
	same_file "$what: identical branch at the destination" "$T/m.ref" "$T/m.now"
	check "$what: siblings and outside hard link untouched" test \
		"$(cd "$MNT" && cat A-sibling/sub/file A.x/sub/file "A b/sub/file" \
			A0/sub/file A.txt outside-link | sha256sum)" = \
		"$(cat "$T/siblings.ref")"
	check "$what: outside link shares the inode inside" test \
		"$(stat -c '%i %h' "$MNT/outside-link")" = \
		"$(stat -c '%i %h' "$MNT/$other/x/f001")"
	check "$what: root lists the expected names" test \
		"$(ls -A "$MNT" | tr '\n' '|')" = \
		"$(printf '%s\n' "$other" A-sibling A.x "A b" A0 A.txt outside-link |
			LC_ALL=C sort | tr '\n' '|')"
	pfs_umount
	check "$what: no journal record left" test "$(kv_count "$J")" = 0
	check "$what: fsck clean" pfs_fsck
}

cur=A
other=B
for N in 0 1 $((k / 2)) "$k" $((k + 1)) $((k + 10)); do
	what="crash after batch $N"
	[ "$N" -gt $((k + 1)) ] && what="hook past the end ($N)"
	PATHFS_CRASH_AFTER_BATCHES=$N pfs_mount -o rename_batch=$BATCH
	pid=$(pfs_pid)
	rc=0
	timeout 120 mv "$MNT/$cur" "$MNT/$other" 2>/dev/null || rc=$?
	if [ "$N" -le $((k + 1)) ]; then
		pfs_wait_dead "$pid" "$what"
		check "$what: the mv did not report success" test "$rc" -ne 0
		pfs_reap
		if [ "$N" -le "$k" ]; then
			check "$what: the store holds a journal record" test "$(kv_count "$J")" = 1
		else
			check "$what: the final batch removed the record" test "$(kv_count "$J")" = 0
		fi
	else
		check "$what: the mv succeeded" test "$rc" = 0
		check "$what: the daemon is alive" kill -0 "$pid"
		pfs_umount
	fi
	verify "$cur" "$other" "$what"
	t=$cur
	cur=$other
	other=$t
done

# ---- one chunk + 1, two chunks + 1 -----------------------------------------
pfs_mount -o rename_batch=1024
python3 "$TREE_PY" flat "$MNT/c1" 1025 >/dev/null
python3 "$TREE_PY" flat "$MNT/c2" 2049 >/dev/null
manifest "$MNT/c1" "$T/m.c1"
manifest "$MNT/c2" "$T/m.c2"
check "mv of 1,025 entries with rename_batch=1024" mv "$MNT/c1" "$MNT/c1m"
check "mv of 2,049 entries with rename_batch=1024" mv "$MNT/c2" "$MNT/c2m"
check "  1,025 listed" test "$(ls "$MNT/c1m" | wc -l)" = 1025
check "  2,049 listed" test "$(ls "$MNT/c2m" | wc -l)" = 2049
pfs_umount
pfs_mount
manifest "$MNT/c1m" "$T/m.c1m"
manifest "$MNT/c2m" "$T/m.c2m"
same_file "after remount: all 1,025 there, content intact" "$T/m.c1" "$T/m.c1m"
same_file "after remount: all 2,049 there, content intact" "$T/m.c2" "$T/m.c2m"
check "  the last entry of the second chunk is there" test \
	"$(cat "$MNT/c1m/e001024")" = "entry 1024"
check "  nothing left at the sources" test ! -e "$MNT/c1" -a ! -e "$MNT/c2"
pfs_umount
check "no journal record left" test "$(kv_count "$J")" = 0
check "fsck clean" pfs_fsck

sanitizer_clean
finish
