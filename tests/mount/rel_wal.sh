#!/usr/bin/env bash
# rel_wal.sh - a damaged write-ahead log or table file is never a silent loss
# (issue 28, point 3).
#
# 1. Files written and the daemon killed (kill -9: no flush, so the data is
#    only in the log), then 16 bytes flipped in the middle of the log: the
#    mount, pathfsctl ls and fsck are refused with one line naming the log,
#    the offset and what would be dropped, exit non-zero, and no store file
#    changes. `pathfsctl recover --truncate-log` says what it drops, keeps a
#    byte-identical copy of the log in STORE/lost+found/, logs the repair to
#    STORE/pathfs.log, and the next mount has exactly the files written
#    before the damage (a prefix of the write order, contents intact; the
#    last one may be empty, created before the damage and written after).
# 2. The same log cut short in its last record (the torn tail of a crash),
#    or with its last 16 bytes garbled (a power loss mid-write), still
#    mounts, with everything before that record and no word of damage.
# 3. A clean unmount flushes: the logs are empty after it and the data is in
#    table files; 16 bytes flipped in the middle of a table file are an fsck
#    finding naming the file (exit 1), mounted and unmounted, and fsck
#    --repair says it did not repair it.
source "$(dirname "$0")/rel_lib.sh"

N=230

# store_sums DIR: sha256 of every file of store DIR but RocksDB's info logs
# (LOG, LOG.old.*: a refused open may rotate them), sorted
store_sums() {
	(cd "$1" && find . -type f ! -name 'LOG*' -print0 | LC_ALL=C sort -z |
		xargs -0r sha256sum)
}

# flip FILE [tail]: inverts 16 bytes in the middle of FILE (tail: its last 16)
flip() {
	python3 - "$1" "${2:-}" <<'EOF'
import os, sys
p = sys.argv[1]
size = os.path.getsize(p)
off = size - 16 if sys.argv[2] == "tail" else size // 2
with open(p, "r+b") as f:
    f.seek(off)
    b = f.read(16)
    f.seek(off)
    f.write(bytes(x ^ 0xFF for x in b))
EOF
}

# the biggest file of store DIR matching GLOB
biggest() {
	(cd "$1" && ls -S $2 2>/dev/null | head -n1)
}

# ---- 1. a log damaged in the middle ------------------------------------------
rel_mount_fg
mkdir "$MNT/d"
for i in $(seq -f %03g 1 $N); do
	printf 'file %s %s\n' "$i" "$(head -c 200 /dev/urandom | base64 -w0)" \
		>"$MNT/d/f$i"
done
(cd "$MNT/d" && sha256sum f*) >"$T/sums"
sync -f "$MNT"
rel_kill9
LOGF=$(biggest "$STORE" '*.log')
check "after kill -9 the data is only in the log ($LOGF)" \
	bash -c "[ -s '$STORE/$LOGF' ] && ! ls '$STORE'/*.sst >/dev/null 2>&1"
cp -a "$STORE" "$T/torn"
cp -a "$STORE" "$T/garbage"
flip "$STORE/$LOGF"
store_sums "$STORE" >"$T/before"
cp "$STORE/$LOGF" "$T/damaged.log"

rc=0
"$PATHFS" "$STORE" "$MNT" >"$T/mount.out" 2>&1 || rc=$?
check "the mount is refused (exit $rc)" [ "$rc" -ne 0 ]
check "... and nothing is mounted" bash -c "! mountpoint -q '$MNT'"
check "... in one line" [ "$(wc -l <"$T/mount.out")" -eq 1 ]
check "... naming the log, the offset and what would be dropped" \
	grep -Eq "$LOGF is damaged at offset [0-9]+ .*records? .* would be dropped" \
	"$T/mount.out"
check "... and how to recover" grep -q "recover --truncate-log" "$T/mount.out"

rc=0
"$PATHFSCTL" -s "$STORE" ls /d >"$T/ls.out" 2>&1 || rc=$?
check "pathfsctl ls is refused too (exit $rc), naming the log" \
	bash -c "[ $rc -ne 0 ] && grep -q '$LOGF is damaged' '$T/ls.out'"

rc=0
"$PATHFSCTL" -s "$STORE" fsck >"$T/fsck.out" 2>&1 || rc=$?
check "fsck: exit 1 (was $rc)" [ "$rc" -eq 1 ]
check "... one finding naming the log" \
	bash -c "grep -q '$LOGF is damaged' '$T/fsck.out' && grep -qx '1 finding' '$T/fsck.out'"
rc=0
"$PATHFSCTL" -s "$STORE" fsck --repair >"$T/repair.out" 2>&1 || rc=$?
check "fsck --repair: exit 1, points to recover" \
	bash -c "[ $rc -eq 1 ] && grep -q 'recover --truncate-log' '$T/repair.out'"
store_sums "$STORE" >"$T/after"
check "no file of the store changed" cmp -s "$T/before" "$T/after"

rc=0
"$PATHFSCTL" -s "$STORE" recover --truncate-log >"$T/recover.out" 2>&1 ||
	rc=$?
check "recover --truncate-log succeeds (exit $rc)" [ "$rc" -eq 0 ]
check "... saying first what it drops" \
	grep -Eq "$LOGF is damaged at offset [0-9]+ .*the [1-9][0-9]* records? .* would be dropped" \
	"$T/recover.out"
check "... that it recovered" grep -q "^recovered:" "$T/recover.out"
check "... keeping the damaged log byte for byte in lost+found/" \
	bash -c "cmp -s '$STORE/lost+found/$LOGF'.* '$T/damaged.log'"
check "... and logging the repair to STORE/pathfs.log" \
	grep -q "recovering as asked (truncate-log): write-ahead log $LOGF" \
	"$STORE/pathfs.log"

rel_mount_fg
ls "$MNT/d" >"$T/names"
kept=$(wc -l <"$T/names")
check "the mount has some but not all files ($kept of $N)" \
	bash -c "[ $kept -gt 0 ] && [ $kept -lt $N ]"
check "... exactly the first $kept written (a prefix of the write order)" \
	bash -c "seq -f 'f%03g' 1 $kept | cmp -s - '$T/names'"
check "... each intact (the last one perhaps still empty: its write came after the damage)" \
	bash -c "cd '$MNT/d' && head -n $((kept - 1)) '$T/sums' | sha256sum --quiet -c - &&
		 { [ ! -s f$(printf %03d "$kept") ] || sed -n ${kept}p '$T/sums' | sha256sum --quiet -c -; }"
check "fsck is clean after the repair" rel_fsck
rel_umount_fg

# ---- 2. a torn tail (the last record cut short) still mounts -------------------
STORE=$T/torn
size=$(stat -c %s "$STORE/$LOGF")
truncate -s $((size - 5)) "$STORE/$LOGF"
: >"$DLOG"
rel_mount_fg
check "a torn tail mounts without a word about damage" \
	bash -c "! grep -qi 'damaged' '$DLOG'"
check "... with every file but the last intact" \
	bash -c "cd '$MNT/d' && head -n $((N - 1)) '$T/sums' | sha256sum --quiet -c -"
rel_umount_fg

# ---- 2b. garbage in the last record (a power loss mid-write) mounts too -------
STORE=$T/garbage
flip "$STORE/$LOGF" tail
: >"$DLOG"
rel_mount_fg
check "a garbled last record mounts, without a word about damage" \
	bash -c "! grep -qi 'damaged' '$DLOG'"
check "... with every file but the last intact" \
	bash -c "cd '$MNT/d' && head -n $((N - 1)) '$T/sums' | sha256sum --quiet -c -"
rel_umount_fg

# ---- 3. a clean unmount flushes; a damaged table file is a finding ----------
STORE=$T/store3
rel_mount_fg
for i in $(seq 1 40); do
	echo "small $i" >"$MNT/s$i"
done
head -c 3000000 /dev/urandom >"$MNT/big"
rel_umount_fg
check "after a clean unmount no log holds data" \
	bash -c "! find '$STORE' -maxdepth 1 -name '*.log' -size +0 | grep -q ."
check "... the data is in table files" bash -c "ls '$STORE'/*.sst >/dev/null"
SST=$(biggest "$STORE" '*.sst')
flip "$STORE/$SST"

# fsck_sst HOW: fsck finds the damaged table file: exit 1, names it
fsck_sst() {
	local rc=0
	"$PATHFSCTL" -s "$STORE" fsck >"$T/sst.out" 2>/dev/null || rc=$?
	check "fsck $1: exit 1 (was $rc)" [ "$rc" -eq 1 ]
	check "... a finding naming $SST" \
		grep -q "damaged table file .*$SST" "$T/sst.out"
}
fsck_sst "of the unmounted store"
rc=0
"$PATHFSCTL" -s "$STORE" fsck --repair >"$T/sstrep.out" 2>/dev/null || rc=$?
check "fsck --repair: exit 1, says it did not repair the table" \
	bash -c "[ $rc -eq 1 ] && grep -q 'not repaired' '$T/sstrep.out'"
rel_mount_fg
fsck_sst "through the daemon"
rel_umount_fg

[ "$FAILS" -eq 0 ] || {
	for f in mount ls fsck repair recover sst sstrep; do
		echo "--- $f:"
		cat "$T/$f.out" 2>/dev/null
	done
} >&2
rel_finish
