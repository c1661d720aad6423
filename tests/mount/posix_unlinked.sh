#!/bin/bash
# posix_unlinked.sh - files that lose their last name while still referenced
# behave as on ext4, and their space is freed once nothing refers to them
# (the daemon frees orphans in batches on a thread of its own, fs/reclaim.c):
# - an O_PATH descriptor of an unlinked file: fstat gives nlink 0 and the
#   size, and open("/proc/self/fd/N") opens the file again and reads every
#   byte; an open descriptor of an unlinked file reads, writes and fstats;
# - once closed, every orphan is freed while mounted (no ORPHAN# key, the
#   content blocks gone);
# - rm -rf of a tree and an unmount right after: nothing left in the store
#   (the queue is drained before the store closes), fsck clean;
# - kill -9 during rm -rf: the next mount frees what was left, the files
#   rm did not reach are intact.
. "$(dirname "$0")/lib.sh"
sanitizer_logs

ORPHANS='DRIVE#main|ORPHAN#'
DATA='DRIVE#main|DATA#'
# gone_while_mounted: polls up to 10 s for no ORPHAN# key and $data0 blocks
gone_while_mounted() {
	local i
	for i in $(seq 1 100); do
		[ "$(kv_count "$ORPHANS")" = 0 ] &&
			[ "$(kv_count "$DATA")" = "$data0" ] && return 0
		sleep 0.1
	done
	echo "orphans $(kv_count "$ORPHANS"), data $(kv_count "$DATA") (want $data0)" >&2
	return 1
}
# mktree DIR: 20 folders of 100 files of 100 bytes
mktree() {
	python3 - "$1" <<'PY'
import os, sys
t = sys.argv[1]
os.mkdir(t)
for d in range(20):
    os.mkdir(f"{t}/d{d}")
    for f in range(100):
        with open(f"{t}/d{d}/f{f}", "wb") as fh:
            fh.write(b"%03d" % f * 33 + b"\n")
PY
}

pfs_mount
mkdir "$MNT/u"
echo keep >"$MNT/keep"
data0=$(kv_count "$DATA")
out=$(python3 - "$MNT/u" <<'PY' 2>&1
import os, sys
d = sys.argv[1]
blob = bytes(range(256)) * 300  # 76,800 bytes: two content blocks
with open(d + "/p", "wb") as f:
    f.write(blob)
with open(d + "/o", "wb") as f:
    f.write(blob)
fp = os.open(d + "/p", os.O_PATH)
fo = os.open(d + "/o", os.O_RDWR)
os.unlink(d + "/p")
os.unlink(d + "/o")
print("names", sorted(os.listdir(d)))
st = os.fstat(fp)
print("opath-fstat", st.st_nlink, st.st_size)
# ext4 opens an unlinked file again through its /proc link
fr = os.open("/proc/self/fd/%d" % fp, os.O_RDONLY)
got = b""
while True:
    b = os.read(fr, 65536)
    if not b:
        break
    got += b
print("reopen-reads", got == blob)
os.close(fr)
st = os.fstat(fp)
print("opath-fstat-again", st.st_nlink, st.st_size)
os.pwrite(fo, b"tail", len(blob))
st = os.fstat(fo)
print("open-fstat", st.st_nlink, st.st_size)
print("open-reads", os.pread(fo, len(blob) + 10, 0) == blob + b"tail")
os.close(fo)
os.close(fp)
PY
) || true
echo "$out"
check "unlinked: no names left" grep -qx "names \[\]" <<<"$out"
check "O_PATH fstat of an unlinked file: nlink 0, its size" \
	grep -qx "opath-fstat 0 76800" <<<"$out"
check "open(/proc/self/fd/N) of it reads every byte" \
	grep -qx "reopen-reads True" <<<"$out"
check "O_PATH fstat after that open closed" \
	grep -qx "opath-fstat-again 0 76800" <<<"$out"
check "an open unlinked file: written, nlink 0, new size" \
	grep -qx "open-fstat 0 76804" <<<"$out"
check "... and reads back" grep -qx "open-reads True" <<<"$out"
check "closed: freed while mounted (no orphan, blocks gone)" gone_while_mounted

# a file closed while the daemon cannot read, then unmounted: the kernel's
# RELEASE (sent after the last close, not waited for) never reaches the
# daemon, which frees the open file's handle at exit itself (under ASan a
# leak report otherwise: sanitizer_clean)
all_stopped() {
	local t
	for t in /proc/"$1"/task/*/stat; do
		[ "$(sed 's/.*) //' "$t" | cut -d' ' -f1)" = T ] || return 1
	done
}
exec 7>"$MNT/late"
echo late >&7
pid=$(pfs_pid)
kill -STOP "$pid"
for i in $(seq 1 500); do all_stopped "$pid" && break; sleep 0.01; done
exec 7>&-
pfs_fusermount_u
kill -CONT "$pid"
for i in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
check "closed while the daemon was stopped, unmounted: the daemon exits" \
	bash -c "! kill -0 $pid 2>/dev/null"
pfs_mount
check "... and the file it had open reads back" test "$(cat "$MNT/late")" = late
rm "$MNT/late"

# rm -rf, then unmount at once: the queued orphans are freed before the
# store closes
mktree "$MNT/t"
rm -rf "$MNT/t"
pfs_umount
check "rm -rf, unmount: no ORPHAN# key left" test "$(kv_count "$ORPHANS")" = 0
check "rm -rf, unmount: every block freed" test "$(kv_count "$DATA")" = "$data0"
check "rm -rf, unmount: fsck clean" pfs_fsck

# kill -9 in the middle of an rm -rf: the next mount frees what was queued
# or still orphaned; what rm did not reach is intact
pfs_mount
mktree "$MNT/t"
rm -rf "$MNT/t" 2>/dev/null &
rmpid=$!
sleep 0.5
kill -9 "$(pfs_pid)"
wait "$rmpid" 2>/dev/null || true
pfs_reap
echo "orphans left by the kill: $(kv_count "$ORPHANS")"
pfs_mount
# (none if rm -rf finished before the kill, on a quiet machine)
left=$({ find "$MNT/t" -type f 2>/dev/null || true; } | wc -l)
echo "files rm -rf did not reach: $left"
check "after the kill: no orphan once mounted" test "$(kv_count "$ORPHANS")" = 0
check "after the kill: blocks of the files left only" \
	test "$(kv_count "$DATA")" = "$((data0 + left))"
check "after the kill: the files left read back" \
	bash -c "! find '$MNT/t' -type f -exec grep -L '^0' {} + 2>/dev/null | grep -q ."
check "after the kill: the other file is intact" test "$(cat "$MNT/keep")" = keep
rm -rf "$MNT/t"
pfs_umount
check "after the kill: fsck clean" pfs_fsck
check "rm -rf of the rest, unmount: every block freed" \
	test "$(kv_count "$DATA")" = "$data0"
sanitizer_clean
finish
