#!/usr/bin/env bash
# posix_fallocate.sh - fallocate(FALLOC_FL_KEEP_SIZE) past the end of file
# (issue 15 points 2 and 6), as ext4 preallocates: the blocks are allocated
# (st_blocks shows them, the size stays), writes into them do not count
# them twice and read back right (also after a remount: xfstests
# generic/071's steps), a truncate frees those past the new end, removing
# the file frees them (also an orphan's, at its last close), pathfsctl cp -r
# copies them, fsck finds nothing wrong, and allocating more than the free
# space fails with ENOSPC up front. Blocks are 64 KiB (128 sectors).
source "$(dirname "$0")/lib.sh"
sanitizer_logs

blocks() { stat -c %b "$1"; }
sb() { stat -c '%s %b' "$1"; }
C() { "$PATHFSCTL" -s "$STORE" "$@"; }
# model FILE SIZE [OFFSET LENGTH BYTE]...: writes the expected content
model() {
	python3 - "$@" <<'PY'
import sys
a = sys.argv[1:]
m = bytearray(int(a[1]))
for i in range(2, len(a), 3):
    o, n, b = int(a[i]), int(a[i + 1]), int(a[i + 2])
    m[o:o + n] = bytes([b]) * n
open(a[0], "wb").write(m)
PY
}
# pw FILE OFFSET LENGTH BYTE: writes LENGTH bytes BYTE at OFFSET (no truncate)
pw() {
	python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.pwrite(fd, bytes([int(sys.argv[4])]) * int(sys.argv[3]), int(sys.argv[2]))
os.close(fd)' "$@"
}

pfs_mount
mkdir "$MNT/k"

# ---- allocated past the end: counted, size kept ----------------------------
touch "$MNT/k/a"
check "fallocate -n -l 1M of an empty file succeeds" fallocate -n -l 1M "$MNT/k/a"
check "  size 0, 16 blocks of 64 KiB allocated ($(sb "$MNT/k/a"))" \
	test "$(sb "$MNT/k/a")" = "0 2048"
check "  reads nothing" test "$(head -c 10 "$MNT/k/a" | wc -c)" = 0
# generic/071: falloc -k 0 1M; pwrite 0 256K; falloc 0 512K; remount
pw "$MNT/k/a" 0 262144 170
check "  a write into the allocation: size 256 KiB, no block counted twice ($(sb "$MNT/k/a"))" \
	test "$(sb "$MNT/k/a")" = "262144 2048"
check "  fallocate -l 512K (size grows into the allocation)" \
	fallocate -l 512K "$MNT/k/a"
check "  size 512 KiB, still 16 blocks ($(sb "$MNT/k/a"))" \
	test "$(sb "$MNT/k/a")" = "524288 2048"
model "$T/a.model" 524288 0 262144 170
check "  reads as written, zeros after" cmp "$MNT/k/a" "$T/a.model"
# a partial write past the end, inside the allocation
pw "$MNT/k/a" 700000 100 187
model "$T/a.model" 700100 0 262144 170 700000 100 187
check "  a partial write past the end, inside it ($(sb "$MNT/k/a"))" \
	test "$(sb "$MNT/k/a")" = "700100 2048"
check "  reads as written" cmp "$MNT/k/a" "$T/a.model"
# past the allocation: one more block
pw "$MNT/k/a" $((2 << 20)) 65536 204
model "$T/a.model" $(((2 << 20) + 65536)) 0 262144 170 700000 100 187 $((2 << 20)) 65536 204
check "  a whole block past the allocation adds one ($(sb "$MNT/k/a"))" \
	test "$(sb "$MNT/k/a")" = "$(((2 << 20) + 65536)) 2176"
check "  fsck: blocks past the end are allowed with the flag" pfs_fsck

# keep-size allocation straddling the end of a file with data
head -c 100000 /dev/urandom >"$MNT/k/b"
cp "$MNT/k/b" "$T/b.model"
check "fallocate -n -o 50000 -l 300000 across the end" \
	fallocate -n -o 50000 -l 300000 "$MNT/k/b"
check "  size kept, blocks 0..5 allocated ($(sb "$MNT/k/b"))" \
	test "$(sb "$MNT/k/b")" = "100000 768"
check "  content unchanged" cmp "$MNT/k/b" "$T/b.model"
check "  SEEK_HOLE at the end of file" python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
assert os.lseek(fd, 0, os.SEEK_HOLE) == 100000, os.lseek(fd, 0, os.SEEK_HOLE)' "$MNT/k/b"
check "  a punch past the end leaves the allocation" \
	fallocate -p -o 200000 -l 100000 "$MNT/k/b"
check "  ... blocks unchanged ($(sb "$MNT/k/b"))" test "$(sb "$MNT/k/b")" = "100000 768"

# ---- after a remount (generic/071) -----------------------------------------
pfs_umount
pfs_mount
check "after a remount: size and blocks ($(sb "$MNT/k/a"))" \
	test "$(sb "$MNT/k/a")" = "$(((2 << 20) + 65536)) 2176"
check "  reads as written" cmp "$MNT/k/a" "$T/a.model"
check "  the other file ($(sb "$MNT/k/b"))" test "$(sb "$MNT/k/b")" = "100000 768"

# ---- truncate frees the blocks past the new end ----------------------------
check "truncate to the same size frees the allocation past the end" \
	truncate -s 100000 "$MNT/k/b"
check "  two blocks left, counted as far as the size reaches ($(sb "$MNT/k/b"))" \
	test "$(sb "$MNT/k/b")" = "100000 196"
check "  content unchanged" cmp "$MNT/k/b" "$T/b.model"
touch "$MNT/k/c"
fallocate -n -l 1M "$MNT/k/c"
check "truncate up of a file with an allocation past the end" truncate -s 200000 "$MNT/k/c"
check "  keeps the blocks below the new end only ($(sb "$MNT/k/c"))" \
	test "$(sb "$MNT/k/c")" = "200000 391"
check "  and they read as zeros" cmp "$MNT/k/c" <(head -c 200000 /dev/zero)
touch "$MNT/k/d"
fallocate -n -l 1M "$MNT/k/d"
check "truncate to 0 frees everything ($(truncate -s 0 "$MNT/k/d"; sb "$MNT/k/d"))" \
	test "$(sb "$MNT/k/d")" = "0 0"
check "  a write then starts from nothing" bash -c \
	"printf x >'$MNT/k/d' && [ \"\$(stat -c '%s %b' '$MNT/k/d')\" = '1 1' ]"
check "fsck after the truncates" pfs_fsck

# ---- pathfsctl cp -r copies the allocation ---------------------------------
touch "$MNT/k/e"
fallocate -n -l 512K "$MNT/k/e"
pw "$MNT/k/e" 0 1000 17
check "pathfsctl cp -r of a folder with an allocated file" C cp -r /k /k2
check "  the copy has the blocks ($(sb "$MNT/k2/e"))" \
	test "$(sb "$MNT/k2/e")" = "1000 1024"
check "  and the content" cmp "$MNT/k2/e" "$MNT/k/e"
check "  a truncate of the copy frees its blocks ($(truncate -s 1000 "$MNT/k2/e"; sb "$MNT/k2/e"))" \
	test "$(sb "$MNT/k2/e")" = "1000 2"
check "  the source keeps its own ($(sb "$MNT/k/e"))" test "$(sb "$MNT/k/e")" = "1000 1024"
check "fsck after the copy" pfs_fsck

# ---- removing frees every block --------------------------------------------
pfs_umount
data0=$(kv_count 'DRIVE#main|DATA#')
pfs_mount
touch "$MNT/k/f" "$MNT/k/g"
fallocate -n -l 2M "$MNT/k/f"
fallocate -n -o 1M -l 1M "$MNT/k/g"
exec 3<"$MNT/k/g"
rm "$MNT/k/f" "$MNT/k/g"
check "an unlinked allocated file open through a descriptor ($(stat -L -c '%s %b' /proc/$$/fd/3))" \
	test "$(stat -L -c '%s %b' /proc/$$/fd/3)" = "0 2048"
exec 3<&-
# two folders created in turns: no run of consecutive inode numbers, so
# pathfsctl rm -r's one batch drops each file's blocks by itself
mkdir "$MNT/k/h" "$MNT/k/i"
for i in $(seq 70); do
	for d in h i; do
		touch "$MNT/k/$d/$i"
		fallocate -n -l 192K "$MNT/k/$d/$i"
	done
done
check "pathfsctl rm -r of 70 allocated files" C rm -r /k/h
rm -r "$MNT/k/i"
pfs_umount
check "rm, an orphan's last close and rm -r drop the blocks past the end" \
	test "$(kv_count 'DRIVE#main|DATA#')" = "$data0"
pfs_mount

# ---- no room: ENOSPC up front ----------------------------------------------
touch "$MNT/k/big"
free=$(df -B1 --output=avail "$MNT" | tail -n 1)
expect_errno ENOSPC "fallocate -n of twice the free space" \
	fallocate -n -l $((2 * free)) "$MNT/k/big"
check "  allocated nothing ($(sb "$MNT/k/big"))" test "$(sb "$MNT/k/big")" = "0 0"
check "fsck at the end" pfs_fsck

pfs_umount
sanitizer_clean
finish
