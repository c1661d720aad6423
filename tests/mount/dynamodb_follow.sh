#!/usr/bin/env bash
# dynamodb_follow.sh - a -o ro mount of a drive in a DynamoDB table follows
# the writer through the table's stream (tests/with_dynamodb.sh starts
# DynamoDB Local and passes its endpoint in $PATHFS_TEST_DYNAMODB): the
# writer mounted on $MNT, a -o ro mount of the same table on $T/ro, on this
# machine. As etcd_watch.sh does on etcd: before each change the ro mount
# reads what the change will make stale (so the kernel caches it: entries
# and attributes for an hour, listings and pages until told), then the
# writer changes it, and the ro mount must show the change within 1 s,
# polled with a deadline: a new file, new content (longer, and the same
# size), a new size, a folder and its listing, the folder renamed (its
# listing under the new name, the old name gone, a file open in it still
# answering fstat), files removed, an open file whose name the writer
# removes (ESTALE) or that keeps a hard link (reads on); a folder of 300
# entries renamed (seen within 1 s of the writer's mv returning); the whole
# drive's manifest (names, types, modes, sizes, content, times, xattrs)
# the same on both mounts, and `ls -l`, `cat`, `stat` agreeing; across the
# writer's unmount and remount; fsck clean at the end.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

: "${PATHFS_TEST_DYNAMODB:?run through tests/with_dynamodb.sh}"
# a lease of 20 s: room for a JVM that answers slowly on a loaded machine
STORE="dynamodb://fo$$?endpoint=$PATHFS_TEST_DYNAMODB&lease-ttl=20"
RO=$T/ro
mkdir -p "$RO"

pfs_mount -o "log=$T/w.log"
echo one >"$MNT/one"
check "a -o ro mount beside the writer" \
	"$PATHFS" -o ro -o "log=$T/ro.log" "$STORE" "$RO"
check "... a daemon of its own (a follower, not the writer's)" \
	[ "$(pgrep -fc "pathfs .*fo$$")" = 2 ]
check "... which reads the table's stream" \
	seen 5000 "watch started" bash -c "! grep -q 'cannot watch' '$T/ro.log'"

# ---- a new file ---------------------------------------------------------------
check "the writer's first file is there" seen 1000 "one" is "cat '$RO/one'" one
ls "$RO" >/dev/null
stat "$RO/new" >/dev/null 2>&1 || true # a negative entry
echo hello >"$MNT/new"
check "a new file is seen" seen 1000 "new file" is "cat '$RO/new'" hello
check "... in the listing" seen 1000 "listing" is "ls '$RO' | paste -sd ' '" "new one"

# ---- new content ----------------------------------------------------------------
cat "$RO/new" >/dev/null
echo "hello again, longer" >"$MNT/new"
check "new content is seen" \
	seen 1000 "longer content" is "cat '$RO/new'" "hello again, longer"
cat "$RO/new" >/dev/null
printf HELLO | dd of="$MNT/new" conv=notrunc status=none
check "content of the same size is seen" \
	seen 1000 "same-size content" is "cat '$RO/new'" "HELLO again, longer"
stat -c %s "$RO/one" >/dev/null
echo "one more" >>"$MNT/one"
check "a file's new size is seen" seen 1000 "size" is "stat -c %s '$RO/one'" 13
stat -c %a "$RO/one" >/dev/null
chmod 600 "$MNT/one"
check "a new mode is seen" seen 1000 "chmod" is "stat -c %a '$RO/one'" 600

# ---- a folder, renamed ---------------------------------------------------------
stat "$RO/dir" >/dev/null 2>&1 || true
mkdir "$MNT/dir"
echo a >"$MNT/dir/a"
echo b >"$MNT/dir/b"
check "a new folder's listing is seen" \
	seen 1000 "folder" is "ls '$RO/dir' | paste -sd ' '" "a b"
exec 7<"$RO/dir/a"
ls "$RO/dir2" >/dev/null 2>&1 || true
mv "$MNT/dir" "$MNT/dir2"
check "the renamed folder's listing is seen" \
	seen 1000 "rename" is "ls '$RO/dir2' | paste -sd ' '" "a b"
check "... and the old name is gone" [ ! -e "$RO/dir" ]
check "... a file open in it still answers fstat" \
	is "stat -L -c %s /proc/$$/fd/7" 2
check "... and reads" is "cat <&7" a
exec 7<&-
check "... its files read" is "cat '$RO/dir2/b'" b

# ---- files removed -------------------------------------------------------------
ls -l "$RO/dir2" >/dev/null
rm "$MNT/dir2/a" "$MNT/one"
check "removed files are gone" \
	seen 1000 "remove" is "ls '$RO/dir2' | paste -sd ' '" b
check "... both" seen 1000 "remove 2" bash -c "[ ! -e '$RO/one' ]"
check "... from the listing too" is "ls '$RO' | paste -sd ' '" "dir2 new"

# ---- files open here whose names the writer removes ----------------------
echo gone >"$MNT/gone"
echo kept >"$MNT/linked"
check "files to remove are seen" seen 1000 "gone" bash -c \
	"[ -e '$RO/gone' ] && [ -e '$RO/linked' ]"
exec 7<"$RO/gone" 8<"$RO/linked"
rm "$MNT/gone"
ln "$MNT/linked" "$MNT/linked2"
rm "$MNT/linked"
check "the removed names are gone" seen 1000 "gone" bash -c \
	"[ ! -e '$RO/gone' ] && [ ! -e '$RO/linked' ] && [ -e '$RO/linked2' ]"
check "... an open file whose name went answers ESTALE" \
	is "cat <&7 2>&1" "cat: -: Stale file handle"
check "... one with a hard link left reads on" is "cat <&8" kept
exec 7<&- 8<&-

# ---- a folder of 300 entries renamed -------------------------------------------
mkdir "$MNT/big"
for i in $(seq 1 300); do echo "$i" >"$MNT/big/f$i"; done
check "a 300-entry folder is seen" \
	seen 3000 "300 entries" is "ls '$RO/big' | wc -l" 300
ls -l "$RO/big" >/dev/null
cat "$RO/big/f7" >/dev/null
ls "$RO/big2" >/dev/null 2>&1 || true
start=$(date +%s%N)
mv "$MNT/big" "$MNT/big2"
echo "# the writer's mv of 300 entries took" \
	"$((($(date +%s%N) - start) / 1000000)) ms"
check "the renamed 300-entry folder is seen" \
	seen 1000 "rename of 300" is "ls '$RO/big2' | wc -l" 300
check "... the old name is gone" seen 1000 "old name" \
	bash -c "[ ! -e '$RO/big' ]"
check "... its files read" is "cat '$RO/big2/f7' '$RO/big2/f300' | paste -sd ' '" "7 300"

# ---- both mounts agree -------------------------------------------------------
mkdir -p "$MNT/tree"
check "a generated branch on the writer" \
	python3 "$TREE_PY" gen "$MNT/tree/gen" 200
manifest "$MNT" "$T/m.w"
agree() {
	manifest "$RO" "$T/m.ro"
	cmp -s "$T/m.w" "$T/m.ro"
}
check "the follower's manifest is the writer's (names, modes, content)" \
	seen 3000 "manifest" agree
same_file "... line by line" "$T/m.w" "$T/m.ro"
check "ls -lR agrees" \
	is "cd '$RO' && ls -lR --time-style=full-iso . | md5sum" \
	"$(cd "$MNT" && ls -lR --time-style=full-iso . | md5sum)"
check "stat agrees" \
	is "cd '$RO' && stat -c '%n %s %a %h %Y' new dir2/b big2/f1 | md5sum" \
	"$(cd "$MNT" && stat -c '%n %s %a %h %Y' new dir2/b big2/f1 | md5sum)"
check "cat agrees" is "cat '$RO/new' '$RO/big2/f9'" "$(cat "$MNT/new" "$MNT/big2/f9")"

# ---- the writer unmounts and comes back --------------------------------------
pfs_umount
check "the ro mount outlives the writer" is "cat '$RO/new'" "HELLO again, longer"
pfs_mount -o "log=$T/w.log"
stat "$RO/after" >/dev/null 2>&1 || true
echo after >"$MNT/after"
check "a remounted writer's file is seen" \
	seen 1000 "after remount" is "cat '$RO/after'" after
check "the follower logged no error" bash -c "! grep -i 'error' '$T/ro.log'"

MNT=$RO pfs_umount # the follower's: unmounted, its daemon gone
pfs_umount
check "fsck is clean" pfs_fsck
sanitizer_clean
finish
