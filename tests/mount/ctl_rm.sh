#!/usr/bin/env bash
# ctl_rm.sh - pathfsctl rm -r of a branch large enough to go in one scan and
# one batch (store/rm_batch.c, issue 6), mounted and unmounted: files held open
# in the removed branch stay readable and writable until closed, then are
# freed; files outside whose inode numbers lie between the branch's keep their
# content and xattrs; a move across drives keeps open source files readable
# too; a crash leaves the branch whole (but for its hard links, removed one by
# one first) or gone, with fsck clean, and a second run finishes it.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

C() { "$PATHFSCTL" -s "$STORE" "$@"; }
quiet() { "$@" >/dev/null; }
O='DRIVE#main|ORPHAN#'

# hold_open FILE... -- CMD...: opens each FILE (read and write), runs CMD,
# then checks each open file still reads back what it held, writes to it and
# reads that back, and closes them. Exit 0 when all of it worked.
hold_open() {
	python3 - "$@" <<'PY'
import os, subprocess, sys
args = sys.argv[1:]
cut = args.index("--")
files, cmd = args[:cut], args[cut + 1:]
fds = [os.open(f, os.O_RDWR) for f in files]
held = [os.pread(fd, 1 << 24, 0) for fd in fds]
r = subprocess.run(cmd, stdout=subprocess.DEVNULL)
if r.returncode != 0:
    sys.exit("command failed: %d" % r.returncode)
for f, fd, data in zip(files, fds, held):
    if os.path.exists(f):
        sys.exit("%s still there" % f)
    got = os.pread(fd, 1 << 24, 0)
    if got != data:
        sys.exit("%s: read %d bytes back, held %d" % (f, len(got), len(data)))
    os.pwrite(fd, b"written after the delete", len(data))
    if os.pread(fd, 64, len(data)) != b"written after the delete":
        sys.exit("%s: write after the delete not read back" % f)
    os.close(fd)
PY
}

# ---- mounted: the daemon runs rm -r ------------------------------------
pfs_mount
python3 "$TREE_PY" gen "$MNT/data" 400 >/dev/null
mkdir "$MNT/data/plain" "$MNT/out"
for i in $(seq 0 99); do
	printf 'plain %d\n' "$i" >"$MNT/data/plain/p$i"
	if [ $((i % 5)) = 0 ]; then # an inode between the branch's
		printf 'outside %d\n' "$i" >"$MNT/out/o$i"
		setfattr -n user.k -v "v$i" "$MNT/out/o$i"
	fi
done
ln "$MNT/data/plain/p1" "$MNT/out/link-in"
head -c 300000 /dev/urandom >"$MNT/data/plain/big"
manifest "$MNT/out" "$T/out.before"
check "mounted: rm -r /data with two files held open" \
	hold_open "$MNT/data/plain/p7" "$MNT/data/plain/big" -- \
	"$PATHFSCTL" -s "$STORE" rm -r /data
check "mounted: the branch is gone from the mount" test ! -e "$MNT/data"
manifest "$MNT/out" "$T/out.after"
# the link from inside is now the inode's only one: compared on its own
grep -v '^link-in	' "$T/out.before" >"$T/out.before2"
grep -v '^link-in	' "$T/out.after" >"$T/out.after2"
same_file "mounted: files outside the branch are unchanged" \
	"$T/out.before2" "$T/out.after2"
check "mounted: the hard link from outside still reads" \
	test "$(cat "$MNT/out/link-in")" = "plain 1"
check "mounted: ... and its inode has one link left" \
	bash -c "'$PATHFSCTL' -s '$STORE' stat /out/link-in | grep -q 'links: 1$'"
check "mounted: ... which the mount shows too" \
	test "$(stat -c %h "$MNT/out/link-in")" = 1
check "mounted: fsck is clean" pfs_fsck

# a move across drives keeps the source's open files as well
C mkdrive second
python3 "$TREE_PY" gen "$MNT/mv" 200 >/dev/null
for i in $(seq 0 80); do printf 'm %d\n' "$i" >"$MNT/mv/m$i"; done
check "mounted: mv /mv second:/m with a file held open" \
	hold_open "$MNT/mv/m3" -- "$PATHFSCTL" -s "$STORE" mv /mv second:/m
check "mounted: ... the source is gone" test ! -e "$MNT/mv"
check "mounted: ... fsck is clean" pfs_fsck
pfs_umount
check "the orphans of the closed files were freed" test "$(kv_count "$O")" = 0
check "fsck is clean after unmount" pfs_fsck
check "... and on the second drive" pfs_fsck second
pfs_mount -o drive=second
check "the moved file reads on the second drive" test "$(cat "$MNT/m/m3")" = "m 3"
pfs_umount

# ---- unmounted: crash in the middle, then run again --------------------
pfs_mount
python3 "$TREE_PY" gen "$MNT/r" 400 >/dev/null
N=$(find "$MNT/r" | wc -l)
pfs_umount
for K in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
	C cp -r /r /c >/dev/null
	RC=0
	PATHFS_CRASH_AFTER_BATCHES=$K C rm -r /c >/dev/null 2>&1 || RC=$?
	if [ "$RC" = 0 ]; then
		echo "# rm -r finished within $K batches"
		check "rm -r that finished: the branch is gone" \
			bash -c "! '$PATHFSCTL' -s '$STORE' stat /c >/dev/null 2>&1"
		break
	fi
	check "rm -r killed after batch $K (exit 137)" test "$RC" = 137
	check "... fsck is clean" pfs_fsck
	if C stat /c >/dev/null 2>&1; then
		# "D directories, F files": every node below /c
		LEFT=$(C tree /c | tail -n1 | awk '{print $1 + $3 + 1}')
		# only nodes removed one by one (hard links, a batch each;
		# the hook kills after batch K + 1) are gone
		check "... the rest of the branch is all there ($LEFT of $N)" \
			test "$LEFT" -ge $((N - K - 1))
		check "... running rm -r again finishes it" quiet C rm -r /c
	fi
	check "... the branch is gone" \
		bash -c "! '$PATHFSCTL' -s '$STORE' stat /c >/dev/null 2>&1"
	check "... fsck is clean at the end" pfs_fsck
done
check "the source branch is intact" quiet C stat /r
check "no orphans are left" test "$(kv_count "$O")" = 0

sanitizer_clean
finish
