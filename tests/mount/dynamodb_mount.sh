#!/usr/bin/env bash
# dynamodb_mount.sh - a drive in a DynamoDB table (tests/with_dynamodb.sh
# starts DynamoDB Local and passes its endpoint in $PATHFS_TEST_DYNAMODB):
# - mount by URL (the table created by the first mount), the POSIX fixture
#   (tests/helpers/tree.py: odd names, sizes across 64 KiB blocks, links,
#   xattrs, modes, times) in with cp -a and out again: manifests identical,
#   diff -r clean, and again after a remount; pathfsctl -s URL reads it;
# - a second mount of the table on this machine is another mount of the
#   writer's (a writer elsewhere is refused: test_kv's one_writer_per_store);
# - files of 150 xattrs (more keys than a transaction takes): one removed
#   through the mount, its orphan freed; the other by pathfsctl rm -r;
#   nothing left, the store opens again, fsck clean;
# - a rename of a 1,000-entry folder in about 2N/98 transactions (pathfsctl
#   stats: at most ceil(2N/98) + 4);
# - the writer killed (kill -9) in the middle of a 2,000-entry folder
#   rename: a second daemon mounts once the lease expires, finishes the
#   rename from the journal, nothing is lost, fsck is clean.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

: "${PATHFS_TEST_DYNAMODB:?run through tests/with_dynamodb.sh}"
PLANT=${BUILD_DIR:-$(dirname "$PATHFS")/../tests}/rel_plant
# a lease of 20 s: the keeper renews it every 6.7 s, with room for a JVM
# that answers slowly on a loaded machine
TTL=20
STORE="dynamodb://mt$$?endpoint=$PATHFS_TEST_DYNAMODB&lease-ttl=$TTL"
MNT2=$T/b
mkdir -p "$MNT2"

# mount_until DIR LOG SECONDS: mounts the store on DIR, trying again while
# it is refused (the writer's lease has not expired yet), for at most
# SECONDS. What the mount said goes to $T/mount.err.
mount_until() {
	local dir=$1 log=$2 limit=$3 start=$SECONDS
	while ! "$PATHFS" -o "log=$log" "$STORE" "$dir" 2>"$T/mount.err"; do
		if [ $((SECONDS - start)) -ge "$limit" ]; then
			cat "$T/mount.err" >&2
			return 1
		fi
		sleep 0.5
	done
	echo "# mounted $dir after $((SECONDS - start)) s"
}

# ---- the POSIX fixture in and out -------------------------------------------
SRC=$T/src
python3 "$TREE_PY" fixture "$SRC"
manifest "$SRC" "$T/m.src"
pfs_mount -o "log=$T/a.log"
check "mount of a new store in DynamoDB" mountpoint -q "$MNT"
check "cp -a into the mount" cp -a "$SRC" "$MNT/cp"
manifest "$MNT/cp" "$T/m.cp"
same_file "cp -a in: manifest identical" "$T/m.src" "$T/m.cp"
check "cp -a in: diff -r clean" diff -r --no-dereference -x fifo "$SRC" "$MNT/cp"
check "cp -a out of the mount" cp -a "$MNT/cp" "$T/out.cp"
manifest "$T/out.cp" "$T/m.out.cp"
same_file "cp -a out: manifest identical" "$T/m.src" "$T/m.out.cp"

# ---- a second mount here is the writer's ------------------------------------
# (a second writer elsewhere is refused: the kv suite's one_writer_per_store)
check "a second mount of the table here" "$PATHFS" "$STORE" "$MNT2"
check "... is served by the writer: one daemon" \
	[ "$(pgrep -fc "pathfs .*mt$$")" = 1 ]
check "... and shows the fixture" diff -r --no-dereference -x fifo \
	"$SRC" "$MNT2/cp"
fusermount3 -u "$MNT2"
pfs_umount
pfs_mount -o "log=$T/a.log"
manifest "$MNT/cp" "$T/m.again"
same_file "after a remount: manifest identical" "$T/m.src" "$T/m.again"
pfs_umount
check "pathfsctl -s URL ls" \
	bash -c "'$PATHFSCTL' -s '$STORE' ls / | grep -q ' cp\$'"
check "fsck is clean after the fixture" pfs_fsck

# ---- files of more xattrs than one transaction takes ---------------------------
# (a range delete is an action a key here): an unlinked one's orphan is freed
# in slices, and pathfsctl rm -r takes such a file alone, parked the same way.
# Before, the orphan's reclaim failed (E2BIG), and so did every open after
many_xattrs() {
	local i
	echo x >"$1" || return 1
	for i in $(seq 150); do
		setfattr -n "user.k$i" -v "v$i" "$1" || return 1
	done
}
ORPHANS='DRIVE#main|ORPHAN#'
x0=$(kv_count 'DRIVE#main|XATTR#')
pfs_mount -o "log=$T/a.log"
mkdir "$MNT/xa"
check "a file of 150 xattrs" many_xattrs "$MNT/xa/one"
check "... and another" many_xattrs "$MNT/xa/two"
echo y >"$MNT/xa/three"
check "rm of the one through the mount" rm "$MNT/xa/one"
check "... its orphan freed while mounted" \
	seen 10000 "the orphan freed" is 'kv_count "$ORPHANS"' 0
pfs_umount
check "the store opens again (pathfsctl rm -r of the folder)" \
	"$PATHFSCTL" -s "$STORE" rm -r /xa
check "... none of their xattrs left" is "kv_count 'DRIVE#main|XATTR#'" "$x0"
check "... nor an orphan" is 'kv_count "$ORPHANS"' 0
check "fsck is clean after them" pfs_fsck

# ---- a folder rename's transactions: about 2N/98 ------------------------------
# copies of 98 entries with the journal record, then slices of 99 deletes,
# each one transaction with the lease's check (kv_batch_room): at most
# ceil(2N/98) and the first, the last and a slice cut short
N=1000
kv_txns() {
	"$PATHFSCTL" -s "$STORE" stats --json | python3 -c \
		'import json,sys; print(json.load(sys.stdin)["kv"]["txns"])'
}
check "plant a 1,000-entry folder" "$PLANT" many "$STORE" main /count $N
pfs_mount -o "log=$T/a.log"
t0=$(kv_txns)
check "mv of the 1,000-entry folder" mv "$MNT/count" "$MNT/counted"
t1=$(kv_txns)
echo "# mv of $N entries: $((t1 - t0)) transactions (2N/98: $(((2 * N + 97) / 98)))"
check "... in at most ceil(2N/98) + 4 transactions" \
	[ $((t1 - t0)) -le $(((2 * N + 97) / 98 + 4)) ]
check "... $N entries under the new name" \
	[ "$(ls "$MNT/counted" | wc -l)" = $N ]
check "... the old name is gone" [ ! -e "$MNT/count" ]
pfs_umount

# ---- the writer killed mid-rename, another daemon takes over -----------------
check "plant a 2,000-entry folder" "$PLANT" many "$STORE" main /big 2000
pfs_mount -o "log=$T/a.log"
check "no journal record before the rename" \
	[ "$(kv_count 'DRIVE#main|JOURNAL#')" = 0 ]
mv "$MNT/big" "$MNT/big2" 2>/dev/null &
mvpid=$!
for i in $(seq 1 1000); do
	[ "$(kv_count 'DRIVE#main|JOURNAL#')" = 0 ] || break
	sleep 0.02
done
kill -9 "$(pfs_pid)"
wait "$mvpid" || true
records=$(kv_count 'DRIVE#main|JOURNAL#')
echo "# killed the writer with $records journal record(s) left"
check "the kill landed while the rename ran" [ "$records" = 1 ]
pfs_reap
check "a second daemon mounts once the lease expires" \
	mount_until "$MNT2" "$T/b.log" $((TTL * 6))
check "2,000 entries under the new name" \
	[ "$(ls "$MNT2/big2" | wc -l)" = 2000 ]
check "the old name is gone" [ ! -e "$MNT2/big" ]
check "the fixture is still there" diff -r --no-dereference -x fifo \
	"$SRC" "$MNT2/cp"
check "the journal was replayed" grep -q "replaying rename" "$T/mount.err"
check "... and its record is gone" \
	[ "$(kv_count 'DRIVE#main|JOURNAL#')" = 0 ]
fusermount3 -u "$MNT2"
for i in $(seq 1 200); do
	pgrep -f "pathfs .*$MNT2\$" >/dev/null || break
	sleep 0.05
done
check "fsck is clean after the takeover" pfs_fsck
finish
