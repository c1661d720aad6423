#!/usr/bin/env bash
# etcd_watch.sh - a -o ro mount follows the writer (tests/with_etcd.sh starts
# a 3-member cluster and passes its endpoints in $PATHFS_TEST_ETCD): the
# writer mounted on $MNT, a -o ro mount of the same store on $T/ro. Before
# each change the ro mount reads what the change will make stale (so the
# kernel caches it: entries and attributes for an hour, listings and pages
# until told), then the writer changes it, and the ro mount must show the
# change within 1 s: a new file, new content (longer, and the same size),
# a folder and its listing, the folder renamed (its listing under the new
# name, the old name gone, a file open in it still answering fstat), files
# removed, files open here whose names the writer removes (ESTALE, or read
# on by number when a hard link is left); across the writer's unmount and
# remount; and after the member
# its watch streams from is killed (the watch starts again elsewhere and
# forgets everything: 5 s, a leader election may come first); names looked
# up and not found here (in the root and in a folder, and one in the root
# past the 4,096 misses the mount remembers) that the writer creates while
# the watch's member is stopped, then killed.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

: "${PATHFS_TEST_ETCD:?run through tests/with_etcd.sh}"
CLUSTER=$PATHFS_TEST_ETCD_DIR
CLUSTER_SH=$TESTS_DIR/etcd_cluster.sh
STORE="etcd://$PATHFS_TEST_ETCD/wa$$"
RO=$T/ro
mkdir -p "$RO"

pfs_mount -o "log=$T/w.log"
echo one >"$MNT/one"
check "a -o ro mount beside the writer" \
	"$PATHFS" -o ro -o "log=$T/ro.log" "$STORE" "$RO"

# ---- a new file ---------------------------------------------------------------
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
# The writer cannot see this mount's opens: a file whose last name it
# removes is freed (or reclaimed soon after, if its own kernel has it open),
# so here it answers ESTALE, as on NFS, never ENOENT or other bytes; a file
# that keeps another name (a hard link) keeps reading.
echo gone >"$MNT/gone"
echo kept >"$MNT/linked"
echo twice >"$MNT/twice"
echo old >"$MNT/replaced"
echo new >"$MNT/other"
# looked up, not read: reads of the open files ask the daemon
check "files to remove are seen" seen 1000 "gone" bash -c \
	"[ -e '$RO/gone' ] && [ -e '$RO/linked' ] && [ -e '$RO/replaced' ] &&
	 [ -e '$RO/twice' ]"
exec 6<"$RO/twice" 7<"$RO/gone" 8<"$RO/linked" 9<"$RO/replaced"
rm "$MNT/gone"
ln "$MNT/linked" "$MNT/linked2"
rm "$MNT/linked"
mv "$MNT/other" "$MNT/replaced"
# this mount follows the inode to its new name (a name it did not look up:
# a look-up would tell it the inode is hard-linked); changes come in order
ln "$MNT/twice" "$MNT/twice2"
touch "$MNT/mark"
check "a new link is seen" seen 1000 "link" bash -c "[ -e '$RO/mark' ]"
rm "$MNT/twice2"
check "the removed names are gone" \
	seen 1000 "gone" bash -c \
	"[ ! -e '$RO/gone' ] && [ ! -e '$RO/linked' ] && [ ! -e '$RO/twice2' ]"
check "... an open file whose name went answers ESTALE" \
	is "cat <&7 2>&1" "cat: -: Stale file handle"
check "... again" is "cat <&7 2>&1" "cat: -: Stale file handle"
check "... one replaced by another file too" \
	is "cat <&9 2>&1" "cat: -: Stale file handle"
check "... one with a hard link left reads on" is "cat <&8" kept
check "... also when the link it was followed to went" is "cat <&6" twice
check "... and the replacing file reads" is "cat '$RO/replaced'" new
exec 6<&- 7<&- 8<&- 9<&-
check "the daemon lives on" is "cat '$RO/linked2'" kept

# ---- the writer unmounts and comes back --------------------------------------
pfs_umount
check "the ro mount outlives the writer" is "cat '$RO/new'" "HELLO again, longer"
pfs_mount -o "log=$T/w.log"
stat "$RO/after" >/dev/null 2>&1 || true
echo after >"$MNT/after"
check "a remounted writer's file is seen" \
	seen 1000 "after remount" is "cat '$RO/after'" after

# ---- the watch's member killed ----------------------------------------------
cat "$RO/new" "$RO/after" >/dev/null
"$CLUSTER_SH" kill "$CLUSTER" 1 # the first member: the watch's
echo changed >"$MNT/new"
echo also >"$MNT/after"
check "after the watch's member died, changes are seen" \
	seen 5000 "member killed" is "cat '$RO/new' '$RO/after' | paste -sd ' '" "changed also"
check "... it said so in its log" grep -q "etcd watch on .* ended" "$T/ro.log"
check "... and later changes too" bash -c "echo later >'$MNT/later'"
check "... within 1 s" seen 1000 "later" is "cat '$RO/later'" later
"$CLUSTER_SH" restart "$CLUSTER" 1

# ---- names created while the watch was down ---------------------------------
# The ro mount's watch streams from member W (the first of its URL; not the
# leader), the writer talks to the other two. Names this mount looked up and
# did not find (negative entries: an hour in the kernel), in the root and in
# a folder, are created while W is stopped (so the watch gets no event),
# then W is killed: the watch starts again from now elsewhere, cannot know
# what it missed, and must make the kernel forget those too.
IFS=, read -r -a eps <<<"$PATHFS_TEST_ETCD"
leader=$("$CLUSTER_SH" leader "$CLUSTER")
W=1
[ "$leader" = 1 ] && W=2
others=()
for i in 1 2 3; do [ "$i" = "$W" ] || others+=("${eps[i - 1]}"); done
MNT=$RO pfs_umount # the follower's: unmounted, its daemon gone
pfs_umount
WSTORE=$STORE
STORE="etcd://${others[0]},${others[1]}/wa$$"
pfs_mount -o "log=$T/w.log"
STORE=$WSTORE
check "the ro mount watching member $W" "$PATHFS" -o ro -o "log=$T/ro.log" \
	"etcd://${eps[W - 1]},${others[0]},${others[1]}/wa$$" "$RO"
ls "$RO" "$RO/dir2" >/dev/null
check "names not there yet" bash -c "! stat '$RO/neg' '$RO/dir2/neg' 2>/dev/null"
# The mount remembers 4,096 misses in the root (fs/watch.c NEG_MAX); a miss
# past them is cached 1 s only, since a restarted watch cannot name it.
start=$(date +%s%N)
check "4,096 more names missed in the root" python3 -c "
import os, sys
from concurrent.futures import ThreadPoolExecutor
def miss(i):
    try:
        os.stat(sys.argv[1] + '/miss%d' % i)
        return False
    except FileNotFoundError:
        return True
with ThreadPoolExecutor(8) as ex: # the daemon answers look-ups in parallel
    sys.exit(0 if all(ex.map(miss, range(4096))) else 1)" "$RO"
check "... and one past them" bash -c "! stat '$RO/late' 2>/dev/null"
echo "# 4,097 misses in the root took $((($(date +%s%N) - start) / 1000000)) ms"
kill -STOP "$(cat "$CLUSTER/$W.pid")"
echo root >"$MNT/neg"
echo sub >"$MNT/dir2/neg"
echo late >"$MNT/late"
"$CLUSTER_SH" kill "$CLUSTER" "$W"
check "a name created in the root while the watch was down is seen" \
	seen 1500 "missed in /" is "cat '$RO/neg'" root
check "... and one in a folder" \
	seen 1500 "missed in a folder" is "cat '$RO/dir2/neg'" sub
check "... and one missed past the 4,096 remembered (cached 1 s)" \
	seen 2500 "missed past the limit" is "cat '$RO/late'" late
"$CLUSTER_SH" restart "$CLUSTER" "$W"

MNT=$RO pfs_umount # the follower's: unmounted, its daemon gone
pfs_umount
check "fsck is clean" pfs_fsck
sanitizer_clean
finish
