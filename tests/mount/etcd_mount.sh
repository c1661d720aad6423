#!/usr/bin/env bash
# etcd_mount.sh - a drive on a real 3-member etcd cluster (tests/with_etcd.sh
# starts it and passes its endpoints in $PATHFS_TEST_ETCD): mount by URL, cp,
# ls, mv and diff of a folder of 1,200 entries with content, remount, df, the
# same drive through pathfsctl -s URL; then a rename of a 10,000-entry folder
# during which the cluster's leader is killed with kill -9: the rename
# completes, nothing is lost, fsck is clean, and no commit deleted more keys
# than a slice (kv_range_keys); then pathfsctl rm -r of 21,501 entries, in
# slices too; and the truncate and rm of 70 MiB files, in slices too.
source "$(dirname "$0")/lib.sh"

: "${PATHFS_TEST_ETCD:?run through tests/with_etcd.sh}"
CLUSTER=$PATHFS_TEST_ETCD_DIR
CLUSTER_SH=$TESTS_DIR/etcd_cluster.sh
PLANT=${BUILD_DIR:-$(dirname "$PATHFS")/../tests}/rel_plant
STORE="etcd://$PATHFS_TEST_ETCD/mt$$"

# ---- mount by URL, a folder of 1,200 entries -------------------------------
pfs_mount -o "log=$T/pathfs.log"
check "mount of a new store on etcd" mountpoint -q "$MNT"
check "df shows etcd's quota (2.0G)" \
	bash -c "df -h '$MNT' | tail -1 | grep -q ' 2.0G '"
mkdir -p "$T/src/sub"
for i in $(seq 1 1150); do echo "file $i" >"$T/src/f$i"; done
for i in $(seq 1 49); do
	head -c $((i * 4099)) /dev/urandom >"$T/src/sub/r$i"
done
check "cp -a of 1,200 entries" cp -a "$T/src" "$MNT/src"
check "ls lists 1,151 names" [ "$(ls "$MNT/src" | wc -l)" = 1151 ]
check "diff -r after cp" diff -r "$T/src" "$MNT/src"
check "mv of the folder" mv "$MNT/src" "$MNT/moved"
check "the old name is gone" [ ! -e "$MNT/src" ]
check "diff -r after mv" diff -r "$T/src" "$MNT/moved"
start=$(date +%s%N)
ls -l "$MNT/moved" >/dev/null
echo "# ls -l of 1,151 entries: $((($(date +%s%N) - start) / 1000000)) ms"
pfs_umount
pfs_mount -o "log=$T/pathfs.log"
check "diff -r after a remount" diff -r "$T/src" "$MNT/moved"
check "rm -r" rm -r "$MNT/moved/sub"
check "rm -r took the branch" [ ! -e "$MNT/moved/sub" ]
pfs_umount
check "pathfsctl -s URL ls" \
	bash -c "'$PATHFSCTL' -s '$STORE' ls / | grep -q moved"
check "pathfsctl -s URL fsck is clean" "$PATHFSCTL" -s "$STORE" fsck

# ---- big files: their blocks dropped in slices ------------------------------
# 70 MiB is 1,120 blocks, past a slice (1,016 keys): the truncate and the rm
# drop them a slice per commit (fallocate stores the blocks empty: cheap)
head -c 100000 /dev/urandom >"$T/head"
pfs_mount -o "log=$T/big.log"
check "fallocate of two 70 MiB files" \
	bash -c "fallocate -l 70M '$MNT/b1' && fallocate -l 70M '$MNT/b2'"
check "write the first 100,000 bytes" \
	dd if="$T/head" of="$MNT/b1" conv=notrunc status=none
check "truncate of 70 MiB to 100,000 bytes" truncate -s 100000 "$MNT/b1"
check "the kept bytes are there" cmp "$T/head" "$MNT/b1"
check "rm of a 70 MiB file" rm "$MNT/b2"
pfs_umount
check "no commit of the truncate or the rm deleted more keys than a slice" \
	bash -c "! grep 'more than a slice' '$T/big.log'"
check "fsck is clean after the big drops" "$PATHFSCTL" -s "$STORE" fsck
check "b1 keeps its 100,000 bytes" \
	bash -c "'$PATHFSCTL' -s '$STORE' stat /b1 | grep -q 100000"

# ---- rename of 10,000 entries, the leader killed mid-rename ----------------
check "plant a 10,000-entry folder" "$PLANT" many "$STORE" main /big 10000
pfs_mount -o "log=$T/pathfs.log"
mv "$MNT/big" "$MNT/big2" &
mvpid=$!
sleep 0.3
running=0
kill -0 "$mvpid" 2>/dev/null && running=1
leader=$("$CLUSTER_SH" leader "$CLUSTER")
"$CLUSTER_SH" kill "$CLUSTER" "$leader"
echo "# killed member $leader (the leader), rename running: $running"
check "the kill landed while the rename ran" [ "$running" = 1 ]
mvrc=0
wait "$mvpid" || mvrc=$?
check "the rename completed" [ "$mvrc" = 0 ]
check "10,000 entries under the new name" \
	[ "$(ls "$MNT/big2" | wc -l)" = 10000 ]
check "the old name is gone" [ ! -e "$MNT/big" ]
pfs_umount
check "fsck is clean after the rename" "$PATHFSCTL" -s "$STORE" fsck
# the source's 10,000 keys were dropped in slices, none past the limit
check "no commit of the rename deleted more keys than a slice" \
	bash -c "! grep 'more than a slice' '$T/pathfs.log'"
"$CLUSTER_SH" restart "$CLUSTER" "$leader"
check "the killed member serves again" \
	bash -c "'$PATHFSCTL' -s '$STORE' ls /big2 | wc -l | grep -qx 10000"

# ---- rm -r of 20,000 entries: range deletes in slices ----------------------
"$PLANT" many "$STORE" main /wide 20000
"$PLANT" many "$STORE" main /wide/sub 1500
start=$(date +%s%N)
check "pathfsctl rm -r of 21,501 entries" \
	bash -c "'$PATHFSCTL' -v -s '$STORE' rm -r /wide >'$T/rm.out' 2>&1"
echo "# rm -r of 21,501 entries: $((($(date +%s%N) - start) / 1000000)) ms"
check "no commit of the rm -r deleted more keys than a slice" \
	bash -c "! grep 'more than a slice' '$T/rm.out'"
check "the branch is gone" bash -c "! '$PATHFSCTL' -s '$STORE' stat /wide 2>/dev/null"
check "fsck is clean after the rm -r" "$PATHFSCTL" -s "$STORE" fsck
finish
