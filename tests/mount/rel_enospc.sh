#!/usr/bin/env bash
# rel_enospc.sh - the store's disk fills up: the store lives on a 128 MiB
# tmpfs that a ballast file fills. Writes then fail with ENOSPC, the daemon
# stays up, nothing already written is damaged (sha256), deleting still
# works, and once the ballast is removed the same mount takes writes again,
# without a remount. After a remount everything written is intact.
#
# What "full" guarantees (store/kv/kv.c): a write that needs space is refused
# while the file system has less free than the store's reserve plus what the
# write puts. Space the store frees by itself (a flushed memtable of content
# that compresses to nothing gives its log file back, a compaction drops what
# was deleted) can make room again, as a deleted file would, so the test
# makes "full" exact: a second ballast leaves less free than the reserve
# minus everything the store holds, so no housekeeping can bring the free
# space up to the reserve, and yet enough for that housekeeping to run.
source "$(dirname "$0")/rel_lib.sh"

SMALL=$T/small
mkdir "$SMALL"
mount -t tmpfs -o "size=${REL_ENOSPC_SIZE:-128m}" tmpfs "$SMALL"
STORE=$SMALL/store
rel_mount_fg

for i in 1 2 3 4; do
	head -c $((1024 * 1024 + i * 4097)) /dev/urandom >"$MNT/keep$i"
done
mkdir "$MNT/dir"
head -c 70000 /dev/urandom >"$MNT/dir/small"
(cd "$MNT" && sha256sum keep1 keep2 keep3 keep4 dir/small) >"$T/sums"

avail() { df -B1 --output=avail "$1" | tail -n 1; }
# the reserve, as the mount's statfs shows it: the file system's free space
# less the reserve
reserve=$(($(avail "$SMALL") - $(avail "$MNT")))
echo "reserve: $((reserve >> 20)) MiB"
fallocate -l $(($(avail "$SMALL") - reserve - (4 << 20))) "$SMALL/ballast"
df -h "$SMALL" | tail -n 1

expect_errno ENOSPC "writing 40 MiB to a full store" \
	dd if=/dev/urandom of="$MNT/big" bs=128k count=320 conv=fsync status=none
check "daemon alive after ENOSPC" rel_alive
check "files written before are intact" \
	bash -c "cd '$MNT' && sha256sum --quiet -c '$T/sums'"
# fill up to the last byte with small writes too: they must fail cleanly
n=0
while head -c 65536 /dev/urandom >"$MNT/fill$n" 2>/dev/null; do
	n=$((n + 1))
	[ $n -lt 1000 ] || break
done 2>/dev/null
check "small writes fail too once full (after $n)" [ $n -lt 1000 ]
# now full for sure: free space below the reserve by more than the store
# holds (du of the store bounds anything it can give back)
held=$(du -sb "$STORE" | cut -f1)
free_target=$((reserve - held - (4 << 20)))
check "the store holds little enough to test with ($((held >> 20)) MiB)" \
	[ "$free_target" -gt $((8 << 20)) ]
extra=$(($(avail "$SMALL") - free_target))
[ "$extra" -le 0 ] || fallocate -l "$extra" "$SMALL/ballast2"
df -h "$SMALL" | tail -n 1
expect_errno ENOSPC "creating a file on a full store" \
	bash -c "for i in \$(seq 1 50); do head -c 65536 /dev/zero >'$MNT/more'\$i || exit 1; done"
check "listing works on a full store" \
	bash -c "ls -la '$MNT' '$MNT/dir' >/dev/null"
check "reading works on a full store" \
	bash -c "cat '$MNT/keep1' '$MNT/dir/small' >/dev/null"
check "deleting works on a full store" rm -f "$MNT/big" "$MNT"/fill* "$MNT"/more*
check "files written before are still intact" \
	bash -c "cd '$MNT' && sha256sum --quiet -c '$T/sums'"

rm -f "$SMALL/ballast" "$SMALL/ballast2"
sleep 0.2 # the store re-reads the free space at most every 50 ms
check "after space is freed: 8 MiB write works without a remount" \
	dd if=/dev/urandom of="$MNT/after" bs=128k count=64 conv=fsync status=none
check "after space is freed: mkdir, create, append work" \
	bash -c "mkdir '$MNT/newdir' && echo new >'$MNT/newdir/f' && echo more >>'$MNT/keep1'"
(cd "$MNT" && sha256sum after keep1 keep2 keep3 keep4 dir/small newdir/f) \
	>"$T/sums2" || true
check "daemon alive" rel_alive
rel_umount_fg
rel_mount_fg
check "after a remount everything written is intact" \
	bash -c "cd '$MNT' && sha256sum --quiet -c '$T/sums2'"
rel_umount_fg
check "fsck clean" rel_fsck
umount "$SMALL"
rel_finish
