#!/usr/bin/env bash
# posix_data.sh - data integrity through the mount (issue 3): 100 MiB written
# with dd reads back with the same sha256 (also with odd block sizes, after
# overwrites in the middle, and after a remount); 8 processes writing their own
# files at once all read back intact; concurrent appends to one file lose no
# size update; shared writable mmap and exec of a program on the mount; two
# drives of one store, mounted one after the other, never see
# each other's files.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

sha() { sha256sum <"$1" | cut -d' ' -f1; }

head -c $((100 * 1048576)) /dev/urandom >"$T/big"
BIG_SHA=$(sha "$T/big")

pfs_mount
check "dd 100 MiB in (bs=1M)" dd if="$T/big" of="$MNT/big" bs=1M conv=fsync status=none
check "  size is 100 MiB" test "$(stat -c %s "$MNT/big")" = $((100 * 1048576))
check "  sha256 matches" test "$(sha "$MNT/big")" = "$BIG_SHA"
check "  dd out (bs=4k) matches too" test \
	"$(dd if="$MNT/big" bs=4k status=none | sha256sum | cut -d' ' -f1)" = "$BIG_SHA"
# 16 MiB in writes that never line up with the store's blocks.
head -c $((16 * 1048576)) "$T/big" >"$T/big.mod"
check "dd in with an odd block size (bs=12345)" dd if="$T/big.mod" \
	of="$MNT/big.odd" bs=12345 status=none
check "  sha256 matches" test "$(sha "$MNT/big.odd")" = "$(sha "$T/big.mod")"

# Overwrite ranges that straddle block boundaries, in both copies.
for off in 0 65535 1048575 $((8 * 1048576 + 3)) $((16 * 1048576 - 10)); do
	head -c 70000 /dev/urandom >"$T/patch"
	for f in "$T/big.mod" "$MNT/big.odd"; do
		dd if="$T/patch" of="$f" bs=1M seek="$off" oflag=seek_bytes \
			conv=notrunc status=none
	done
done
check "overwrites in the middle and past the end land right" test \
	"$(sha "$MNT/big.odd")" = "$(sha "$T/big.mod")"
check "  size grew by the write past the end" test \
	"$(stat -c %s "$MNT/big.odd")" = "$(stat -c %s "$T/big.mod")"
truncate -s 3333333 "$MNT/big.odd" "$T/big.mod"
check "truncate down keeps the head" test "$(sha "$MNT/big.odd")" = "$(sha "$T/big.mod")"
truncate -s 4000000 "$MNT/big.odd" "$T/big.mod"
check "truncate up reads zeros (no stale bytes)" test \
	"$(sha "$MNT/big.odd")" = "$(sha "$T/big.mod")"

# ---- 8 writers at once -----------------------------------------------------
for i in $(seq 1 8); do
	head -c $((6 * 1048576 + i * 4099)) /dev/urandom >"$T/w$i"
done
mkdir "$MNT/par"
pids=()
for i in $(seq 1 8); do
	case $((i % 3)) in
	0) dd if="$T/w$i" of="$MNT/par/w$i" bs=1M status=none & ;;
	1) dd if="$T/w$i" of="$MNT/par/w$i" bs=4096 status=none & ;;
	2) cat "$T/w$i" >"$MNT/par/w$i" & ;;
	esac
	pids+=($!)
done
ok=1
for p in "${pids[@]}"; do wait "$p" || ok=0; done
check "8 writers all succeeded" test "$ok" = 1
for i in $(seq 1 8); do
	check "  writer $i reads back intact" cmp "$T/w$i" "$MNT/par/w$i"
done

# 8 appenders to one file: no size update may be lost (O_APPEND).
pids=()
for i in $(seq 1 8); do
	python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
rec = ("%s" % sys.argv[2]) * 99 + "\n"
for _ in range(200):
    os.write(fd, rec.encode())
os.close(fd)
' "$MNT/par/appended" "$i" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
check "8 appenders: size is the sum of all records" test \
	"$(stat -c %s "$MNT/par/appended")" = $((8 * 200 * 100))
check "  every record whole, 200 of each writer" test \
	"$(sort "$MNT/par/appended" | uniq -c | awk '{print $1}' | sort -u)" = 200

# ---- shared writable mmap and running a program from the mount ------------
check "MAP_SHARED writes, msync, read back through read(2)" python3 -c '
import mmap, os, sys
p = sys.argv[1]
with open(p, "wb") as f:
    f.write(bytes(300000))
fd = os.open(p, os.O_RDWR)
m = mmap.mmap(fd, 300000)
m[70000:70005] = b"hello"
m[299990:] = b"0123456789"
m.flush()
m.close()
os.close(fd)
with open(p, "rb") as f:
    d = f.read()
assert len(d) == 300000 and d[70000:70005] == b"hello", d[70000:70005]
assert d[299990:] == b"0123456789" and d.count(0) == 300000 - 15
' "$MNT/par/mapped"
cp /bin/true "$MNT/par/true"
check "a program on the mount runs (exec maps it)" "$MNT/par/true"

# ---- remount: byte for byte -------------------------------------------------
pfs_umount
pfs_mount
check "after remount: the mmap writes are there" python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
assert d[70000:70005] == b"hello" and d[299990:] == b"0123456789"
' "$MNT/par/mapped"
check "after remount: 100 MiB sha256 matches" test "$(sha "$MNT/big")" = "$BIG_SHA"
check "after remount: modified copy matches" test \
	"$(sha "$MNT/big.odd")" = "$(sha "$T/big.mod")"
for i in $(seq 1 8); do
	check "after remount: writer $i intact" cmp "$T/w$i" "$MNT/par/w$i"
done
pfs_umount

# ---- two drives of one store -----------------------------------------------
pfs_mount -o drive=d1
mkdir "$MNT/only-d1"
echo d1 >"$MNT/only-d1/file"
echo d1 >"$MNT/common"
pfs_umount
pfs_mount -o drive=d2
check "d2 starts empty" test -z "$(ls -A "$MNT")"
mkdir "$MNT/only-d2"
echo d2 >"$MNT/only-d2/file"
echo d2 >"$MNT/common"
pfs_umount
pfs_mount -o drive=d1
check "d1 sees only its own files" test "$(ls -A "$MNT" | tr '\n' ' ')" = "common only-d1 "
check "  with its own content" test "$(cat "$MNT/common" "$MNT/only-d1/file" | tr '\n' ' ')" = "d1 d1 "
pfs_umount
pfs_mount -o drive=d2
check "d2 sees only its own files" test "$(ls -A "$MNT" | tr '\n' ' ')" = "common only-d2 "
check "  with its own content" test "$(cat "$MNT/common" "$MNT/only-d2/file" | tr '\n' ' ')" = "d2 d2 "
pfs_umount
pfs_mount
check "the default drive (main) still has the big files" test \
	"$(ls -A "$MNT" | tr '\n' ' ')" = "big big.odd par "
pfs_umount
check "fsck clean: main" pfs_fsck main
check "fsck clean: d1" pfs_fsck d1
check "fsck clean: d2" pfs_fsck d2

sanitizer_clean
finish
