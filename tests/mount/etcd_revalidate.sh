#!/usr/bin/env bash
# etcd_revalidate.sh - an open file on a -o ro follower never fails while
# the writer moves it (tests/with_etcd.sh starts a 3-member cluster and
# passes its endpoints in $PATHFS_TEST_ETCD). The writer's mount moves a/f
# to b/f and back (tests/helpers/saver.py's move workload) while readers on
# the follower, mounted with the shortest cache timeout so the kernel
# revalidates every name, open a/f and b/f (a miss is allowed at open: it
# is at one of them), read and fstat a descriptor of it held open all
# along, and open g, which nobody touches. The follower learns of each move
# from the watch, later than the store has it: a request on the held file
# between the two must find the file where the store has it (fs_retry asks
# the store's reverse index), never ENOENT or ESTALE. Then: the file is
# back at a/f on both mounts, fsck is clean.
#
# REL_REVALIDATE_SAVES (default 10000) moves there and back, at most
# REL_REVALIDATE_SECONDS (default 10); REL_REVALIDATE_READERS (default 2).
source "$(dirname "$0")/lib.sh"
sanitizer_logs

: "${PATHFS_TEST_ETCD:?run through tests/with_etcd.sh}"
STORE="etcd://$PATHFS_TEST_ETCD/rv$$"
RO=$T/ro
SAVER=$(dirname "$0")/../helpers/saver.py
SAVES=${REL_REVALIDATE_SAVES:-10000}
SECS=${REL_REVALIDATE_SECONDS:-10}
READERS=${REL_REVALIDATE_READERS:-2}
mkdir -p "$RO"

pfs_mount -o "log=$T/w.log"
check "a -o ro follower with the shortest cache timeout" \
	"$PATHFS" -o ro -o timeout=0.000000001 -o "log=$T/ro.log" "$STORE" "$RO"
mkdir "$MNT/move"

start=$SECONDS
out=$(SAVER_READ_DIR="$RO/move" python3 "$SAVER" move "$MNT/move" "$SAVES" \
	"$READERS" "$SECS" 2>"$T/saver.err") ||
	out="writer failed: $(tail -n 2 "$T/saver.err")"
read -r reads missing partial fdfail saves <<<"$out" || true
echo "# move: ${saves:-?} moves there and back, $READERS readers on the" \
	"follower, $((SECONDS - start)) s: $out"
check "the readers read (${reads:-?} reads)" [ "${reads:-0}" -gt 0 ]
check "g, which nobody touches, never missed (${missing:-?})" \
	[ "${missing:-x}" = 0 ]
check "every read gave a whole version (${partial:-?} partial)" \
	[ "${partial:-x}" = 0 ]
check "read/fstat of the open file never failed (${fdfail:-?})" \
	[ "${fdfail:-x}" = 0 ]
if [ -s "$T/saver.err" ]; then
	echo "--- first failures the readers saw:" >&2
	head -n 12 "$T/saver.err" >&2
fi
check "the file is back at a/f on the writer's mount" \
	[ "$(cat "$MNT/move/a/f")" = "0:x:0" ]
check "and on the follower's" \
	[ "$(cat "$RO/move/a/f")" = "0:x:0" ]

MNT=$RO pfs_umount
pfs_umount
check "fsck is clean" pfs_fsck
sanitizer_clean
finish
