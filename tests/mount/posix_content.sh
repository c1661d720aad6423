#!/usr/bin/env bash
# posix_content.sh - what programs see of a file's content (issue 10 point 3,
# issue 15 points 1, 2, 4, 5, 6): st_blocks counts the blocks stored (sparse
# writes, truncate up, du against du --apparent-size, pathfsctl du --json);
# each as ext4 shows it, through the mount, and again after a remount.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

C() { "$PATHFSCTL" -s "$STORE" "$@"; }
# jget FILE KEY: a top-level key of the JSON object in FILE
jget() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
blocks() { stat -c %b "$1"; }

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
pfs_umount
pfs_mount
check "after a remount: the same blocks" \
	test "$(blocks "$MNT/b/trunc") $(blocks "$MNT/b/sparse") $(blocks "$MNT/b/dense")" = "0 128 2048"
pfs_umount
check "fsck clean" pfs_fsck

sanitizer_clean
finish
