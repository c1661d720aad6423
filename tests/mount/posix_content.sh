#!/usr/bin/env bash
# posix_content.sh - what programs see of a file's content (issue 10 point 3,
# issue 15 points 1, 2, 4, 5, 6), each as ext4 shows it: st_blocks counts the
# blocks stored (sparse writes, truncate up, du against du --apparent-size,
# pathfsctl du --json); fallocate's modes (allocate, keep size, punch hole,
# zero range) with SEEK_DATA/SEEK_HOLE seeing the holes and st_blocks the
# freed blocks; lseek with a negative offset is ENXIO; set-user-ID and
# set-group-ID are cleared by an unprivileged writer's write, truncate,
# open(O_TRUNC) and fallocate; no stale pages after direct writes (also with -o writeback,
# where a reader racing an asynchronous O_DIRECT write used to leave old
# bytes cached for the next open); fallocate of more than the free space
# fails with ENOSPC and changes nothing.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

C() { "$PATHFSCTL" -s "$STORE" "$@"; }
# jget FILE KEY: a top-level key of the JSON object in FILE
jget() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
blocks() { stat -c %b "$1"; }
: "${DIO_WRITE:=$(dirname "$PATHFS")/../tests/dio_write}"
# seekpos FILE OFFSET data|hole: prints lseek's answer, or the errno name
seekpos() {
	python3 -c '
import errno, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
w = os.SEEK_DATA if sys.argv[3] == "data" else os.SEEK_HOLE
try:
    print(os.lseek(fd, int(sys.argv[2]), w))
except OSError as e:
    print(errno.errorcode[e.errno])' "$1" "$2" "$3"
}
# count_byte FILE BYTE: how many bytes of FILE (read by a fresh open) are BYTE
count_byte() {
	python3 -c 'import sys; print(open(sys.argv[1], "rb").read().count(bytes([int(sys.argv[2])])))' "$1" "$2"
}
chmod 755 "$T" # let nobody reach the mountpoint (allow_other below)
nb() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

pfs_mount

# ---- st_blocks (issue 10 point 3) ------------------------------------------
mkdir "$MNT/b"
truncate -s 1G "$MNT/b/trunc"
check "truncate -s 1G: 0 blocks ($(blocks "$MNT/b/trunc"))" \
	test "$(blocks "$MNT/b/trunc")" = 0
printf 'hello' >"$MNT/b/small"
check "a 5-byte file: 1 block of 512 ($(blocks "$MNT/b/small"))" \
	test "$(blocks "$MNT/b/small")" = 1
dd if=/dev/urandom of="$MNT/b/sparse" bs=4096 count=1 seek=$((1 << 18)) \
	status=none
check "4 KiB written at 1 GiB: one 64 KiB block ($(blocks "$MNT/b/sparse"))" \
	test "$(blocks "$MNT/b/sparse")" = 128
head -c $((3 * 1048576)) /dev/urandom >"$MNT/b/dense"
check "a dense 3 MiB file: its size ($(blocks "$MNT/b/dense"))" \
	test "$(blocks "$MNT/b/dense")" = 6144
# holes punched by overwriting: the kept blocks only, after a truncate down
truncate -s 1M "$MNT/b/dense"
check "truncated down to 1 MiB: 2048 blocks ($(blocks "$MNT/b/dense"))" \
	test "$(blocks "$MNT/b/dense")" = 2048
# du against du --apparent-size, as on ext4
DU=$(du -s -B1 "$MNT/b" | cut -f1)
DUA=$(du -s -B1 --apparent-size "$MNT/b" | cut -f1)
check "du counts what is stored ($DU bytes), far below the apparent size ($DUA)" \
	test "$DU" = $(((1 + 128 + 2048) * 512)) -a "$DUA" -gt 2000000000
C du --json /b >"$T/du.json"
check "pathfsctl du --json: bytes is the apparent size" \
	test "$(jget "$T/du.json" bytes)" = $((1073741824 + 5 + 1073745920 + 1048576))
check "pathfsctl du --json: allocated is what du counts" \
	test "$(jget "$T/du.json" allocated)" = "$DU"

# ---- fallocate modes and holes (issue 15 points 4 and 6) -------------------
mkdir "$MNT/f"
check "fallocate -l 1M: size and blocks" bash -c \
	"fallocate -l 1M '$MNT/f/a' && [ \"\$(stat -c '%s %b' '$MNT/f/a')\" = '1048576 2048' ]"
check "  allocated, never written: reads zeros" \
	test "$(count_byte "$MNT/f/a" 0)" = 1048576
check "  and is a hole to SEEK_DATA ($(seekpos "$MNT/f/a" 0 data))" \
	test "$(seekpos "$MNT/f/a" 0 data)" = ENXIO
check "fallocate --keep-size inside the file: size kept" bash -c \
	"truncate -s 4M '$MNT/f/k' && fallocate -n -o 1M -l 1M '$MNT/f/k' && [ \"\$(stat -c '%s %b' '$MNT/f/k')\" = '4194304 2048' ]"
head -c 1M /dev/urandom >"$T/p.model"
cp "$T/p.model" "$MNT/f/p"
check "punch a hole (64 KiB .. 192 KiB)" fallocate -p -o 65536 -l 131072 "$MNT/f/p"
check "  the size is kept, the two blocks are freed ($(blocks "$MNT/f/p"))" \
	test "$(stat -c '%s %b' "$MNT/f/p")" = "1048576 1792"
check "  SEEK_HOLE finds it ($(seekpos "$MNT/f/p" 0 hole))" \
	test "$(seekpos "$MNT/f/p" 0 hole)" = 65536
check "  SEEK_DATA skips it ($(seekpos "$MNT/f/p" 70000 data))" \
	test "$(seekpos "$MNT/f/p" 70000 data)" = 196608
check "punch inside a block (bytes 1000 .. 1100)" \
	fallocate -p -o 1000 -l 100 "$MNT/f/p"
python3 - "$T/p.model" <<'PY'
import sys
m = bytearray(open(sys.argv[1], "rb").read())
m[65536:196608] = bytes(131072)
m[1000:1100] = bytes(100)
open(sys.argv[1], "wb").write(m)
PY
check "  the file reads as the model" cmp "$MNT/f/p" "$T/p.model"
head -c 300000 /dev/urandom >"$T/z.model"
cp "$T/z.model" "$MNT/f/z"
check "zero range (0 .. 200000)" fallocate -z -o 0 -l 200000 "$MNT/f/z"
check "zero range past the end grows the file" \
	fallocate -z -o 250000 -l 100000 "$MNT/f/z"
python3 - "$T/z.model" <<'PY'
import sys
m = bytearray(open(sys.argv[1], "rb").read())
m[0:200000] = bytes(200000)
m[250000:] = bytes(50000)
m += bytes(50000)
open(sys.argv[1], "wb").write(m)
PY
check "  the file reads as the model" cmp "$MNT/f/z" "$T/z.model"
check "  and stays allocated ($(blocks "$MNT/f/z"))" \
	test "$(blocks "$MNT/f/z")" = $(((350000 + 511) / 512))
expect_errno EOPNOTSUPP "collapse range is not supported" \
	fallocate -c -o 0 -l 65536 "$MNT/f/z"
check "lseek(SEEK_DATA, -1): ENXIO ($(seekpos "$MNT/f/p" -1 data))" \
	test "$(seekpos "$MNT/f/p" -1 data)" = ENXIO
check "lseek(SEEK_HOLE, -1): ENXIO ($(seekpos "$MNT/f/p" -1 hole))" \
	test "$(seekpos "$MNT/f/p" -1 hole)" = ENXIO

# ---- direct writes and the page cache (issue 15 point 1) -------------------
head -c 65536 /dev/zero | tr '\0' '\125' >"$MNT/f/d"
check "a reader open across an O_DIRECT pwrite sees the new bytes" python3 -c '
import os, subprocess, sys
fd = os.open(sys.argv[2], os.O_RDONLY)
assert os.pread(fd, 4, 0) == b"\x55" * 4
subprocess.check_call([sys.argv[1], sys.argv[2], "0", "65536", "170"])
assert os.pread(fd, 65536, 0) == b"\xaa" * 65536
subprocess.check_call([sys.argv[1], sys.argv[2], "0", "65536", "187", "aio"])
assert os.pread(fd, 65536, 0) == b"\xbb" * 65536' "$DIO_WRITE" "$MNT/f/d"
pfs_umount
pfs_mount -o writeback
stale=0
for i in $(seq 10); do
	head -c 1048576 /dev/zero | tr '\0' '\125' >"$MNT/f/w"
	cat "$MNT/f/w" >/dev/null
	(while :; do cat "$MNT/f/w" >/dev/null; done) &
	rp=$!
	"$DIO_WRITE" "$MNT/f/w" 0 1048576 170 aio-read || stale=$((stale + 100))
	kill "$rp"
	wait "$rp" 2>/dev/null || true
	[ "$(count_byte "$MNT/f/w" 170)" = 1048576 ] || stale=$((stale + 1))
done
check "-o writeback: asynchronous O_DIRECT writes raced by readers, then a new open reads the new bytes (stale rounds: $stale of 10)" \
	test "$stale" = 0
pfs_umount

# ---- set-user-ID and set-group-ID (issue 15 point 5) -----------------------
pfs_mount -o allow_other
chmod 0777 "$MNT/f"
touch "$MNT/f/s"
chmod 02666 "$MNT/f/s"
check "fallocate by a non-owner outside the group clears set-group-ID" \
	bash -c "setpriv --reuid=nobody --regid=nogroup --clear-groups fallocate -l 100000 '$MNT/f/s' && [ \"\$(stat -c %a '$MNT/f/s')\" = 666 ]"
chmod 06666 "$MNT/f/s"
check "fallocate --punch-hole clears both" \
	bash -c "setpriv --reuid=nobody --regid=nogroup --clear-groups fallocate -p -o 0 -l 4096 '$MNT/f/s' && [ \"\$(stat -c %a '$MNT/f/s')\" = 666 ]"
chmod 02666 "$MNT/f/s"
check "truncate by a non-owner outside the group clears set-group-ID" \
	bash -c "setpriv --reuid=nobody --regid=nogroup --clear-groups truncate -s 10 '$MNT/f/s' && [ \"\$(stat -c %a '$MNT/f/s')\" = 666 ]"
chmod 02666 "$MNT/f/s"
check "a write by a non-owner outside the group clears set-group-ID" \
	bash -c "setpriv --reuid=nobody --regid=nogroup --clear-groups sh -c 'echo x >>\"$MNT/f/s\"' && [ \"\$(stat -c %a '$MNT/f/s')\" = 666 ]"
chmod 02666 "$MNT/f/s"
check "open(O_TRUNC) by a non-owner outside the group clears set-group-ID" \
	bash -c "setpriv --reuid=nobody --regid=nogroup --clear-groups sh -c ': >\"$MNT/f/s\"' && [ \"\$(stat -c %a '$MNT/f/s')\" = 666 ]"
chgrp nogroup "$MNT/f/s"
chmod 02666 "$MNT/f/s"
check "  but not by a member of the file's group (as ext4)" \
	bash -c "setpriv --reuid=nobody --regid=nogroup --clear-groups sh -c 'echo x >>\"$MNT/f/s\"' && [ \"\$(stat -c %a '$MNT/f/s')\" = 2666 ]"
chmod 06666 "$MNT/f/s"
check "  nor by root" bash -c \
	"fallocate -l 200000 '$MNT/f/s' && [ \"\$(stat -c %a '$MNT/f/s')\" = 6666 ]"

# ---- small writes patch blocks (issue 11, format 3) --------------------------
# random pwrites of 1 B..10 KiB into a file without holes (each patches the
# blocks it touches instead of reading them), some past the end, then a
# punched hole, a zeroed range and a cut: the same bytes as a model on /tmp
head -c $((8 << 20)) /dev/urandom >"$T/pw.model"
cp "$T/pw.model" "$MNT/pw"
pwrites() {
	python3 - "$@" <<'PY'
import os, random, sys
r = random.Random(11)
fds = [os.open(p, os.O_WRONLY) for p in sys.argv[1:]]
for i in range(600):
    off = r.randrange(8 << 20) + (r.randrange(60000) if i % 50 == 0 else 0)
    data = r.randbytes(r.choice([1, 7, 4096, 5000, 10000]))
    for fd in fds:
        os.pwrite(fd, data, off)
PY
}
check "600 random small pwrites" pwrites "$MNT/pw" "$T/pw.model"
check "  read back as written" cmp "$MNT/pw" "$T/pw.model"
size=$(stat -c %s "$T/pw.model")
check "  st_blocks is every block (no holes)" \
	test "$(blocks "$MNT/pw")" = $(( (size + 65535) / 65536 * 128 ))
check "  then a punched hole, a zeroed range and a cut" bash -c "
	fallocate -p -o 100000 -l 300000 '$MNT/pw' &&
	fallocate -p -o 100000 -l 300000 '$T/pw.model' &&
	fallocate -z -o 2000000 -l 70000 '$MNT/pw' &&
	fallocate -z -o 2000000 -l 70000 '$T/pw.model' &&
	truncate -s 5000000 '$MNT/pw' '$T/pw.model'"
check "  SEEK_HOLE finds the punched hole" \
	test "$(seekpos "$MNT/pw" 0 hole)" = 131072
check "  and more pwrites (into the holes too)" pwrites "$MNT/pw" "$T/pw.model"
check "  read back as written" cmp "$MNT/pw" "$T/pw.model"
pfs_umount

pfs_mount
check "after a remount: the patched file reads the same" cmp "$MNT/pw" "$T/pw.model"
check "after a remount: the same blocks" \
	test "$(blocks "$MNT/b/trunc") $(blocks "$MNT/b/sparse") $(blocks "$MNT/b/dense") $(blocks "$MNT/f/p")" = "0 128 2048 1792"
check "  and the same content" cmp "$MNT/f/p" "$T/p.model"
pfs_umount
check "fsck clean" pfs_fsck

# ---- fallocate on a nearly full store (issue 15 point 2) -------------------
SMALL=$T/small
mkdir "$SMALL"
mount -t tmpfs -o size=64m tmpfs "$SMALL"
STORE=$SMALL/store
pfs_mount
echo data >"$MNT/x"
avail=$(df -B1 --output=avail "$MNT" | tail -n 1)
expect_errno ENOSPC "posix_fallocate of twice the free space ($avail bytes)" \
	python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY); os.posix_fallocate(fd, 0, 2 * int(sys.argv[2]))' \
	"$MNT/x" "$avail"
check "  changed nothing" test "$(stat -c '%s %b' "$MNT/x")" = "5 1"
check "fallocate of 8 MiB fits" fallocate -l 8M "$MNT/x"
check "  st_blocks shows it ($(blocks "$MNT/x"))" test "$(blocks "$MNT/x")" = 16384
check "  and writing into it succeeds" dd if=/dev/urandom of="$MNT/x" bs=1M \
	count=8 conv=notrunc,fsync status=none
pfs_umount
check "fsck clean (small store)" pfs_fsck

sanitizer_clean
finish
