#!/bin/bash
# posix_tmpfile.sh - open(O_TMPFILE) and linkat(2) of it into the tree (the
# kernel's atomic-create pattern): the unnamed file is written and synced,
# has no name and nlink 0 meanwhile, gets one by linkat through
# /proc/self/fd, keeps every byte across a remount; one never named leaves
# nothing behind at its close; one open when the daemon is killed is an
# orphan in the store, reclaimed at the next mount; O_EXCL forbids the link;
# in a set-group-ID folder it takes the folder's group.
. "$(dirname "$0")/lib.sh"
sanitizer_logs

pfs_mount
mkdir "$MNT/dir"
out=$(python3 - "$MNT/dir" <<'PY' 2>&1
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def link_fd(fd, path):
    # linkat(AT_FDCWD, "/proc/self/fd/N", AT_FDCWD, path, AT_SYMLINK_FOLLOW):
    # the unprivileged way (os.link calls link(2), which does not follow)
    if libc.linkat(-100, b"/proc/self/fd/%d" % fd, -100, path.encode(), 0x400):
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
d = sys.argv[1]
fd = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o640)
os.write(fd, b"tmp data " * 20000)
os.fsync(fd)
st = os.fstat(fd)
print("nlink-before", st.st_nlink, "names", sorted(os.listdir(d)))
link_fd(fd, d + "/named")
os.write(fd, b"more")
os.fsync(fd)
st = os.fstat(fd)
print("nlink-after", st.st_nlink, "mode", oct(st.st_mode & 0o7777))
os.close(fd)
# O_EXCL: the file may never get a name
fd = os.open(d, os.O_TMPFILE | os.O_RDWR | os.O_EXCL, 0o600)
try:
    link_fd(fd, d + "/excl")
    print("excl-linked")
except OSError as e:
    print("excl", e.errno == 2)
os.close(fd)
# never named: gone at close
fd = os.open(d, os.O_TMPFILE | os.O_WRONLY, 0o600)
os.write(fd, b"x" * 200000)
os.close(fd)
print("names", sorted(os.listdir(d)))
PY
) || true
echo "$out"
umask_mode=$(printf '0o%o' $((0640 & ~$(umask))))
check "O_TMPFILE: no name and nlink 0 while unnamed" \
	grep -qx "nlink-before 0 names \[\]" <<<"$out"
check "linkat names it (nlink 1)" grep -qx "nlink-after 1 mode $umask_mode" <<<"$out"
check "O_EXCL tmpfile cannot be linked (ENOENT)" grep -qx "excl True" <<<"$out"
check "only the named file is listed" grep -qx "names \['named'\]" <<<"$out"
python3 -c 'import sys; sys.stdout.buffer.write(b"tmp data " * 20000 + b"more")' >"$T/expect"
check "content through the name" cmp -s "$T/expect" "$MNT/dir/named"

# in a set-group-ID folder, the file takes the folder's group (as a file
# created there by name does) and keeps it when named
mkdir "$MNT/sg"
chgrp 4321 "$MNT/sg"
chmod 2775 "$MNT/sg"
python3 - "$MNT/sg" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_TMPFILE | os.O_RDWR, 0o600)
print("tmp-gid", os.fstat(fd).st_gid)
if libc.linkat(-100, b"/proc/self/fd/%d" % fd, -100,
               (sys.argv[1] + "/t").encode(), 0x400):
    print("linkat failed", ctypes.get_errno())
os.close(fd)
PY
check "O_TMPFILE in a set-group-ID folder takes its group" \
	test "$(stat -c %g "$MNT/sg/t")" = 4321
pfs_umount
check "no orphan left after the closes" test "$(kv_count 'DRIVE#main|ORPHAN#')" = 0
pfs_mount
check "content after remount" cmp -s "$T/expect" "$MNT/dir/named"
check "nlink 1 after remount" test "$(stat -c %h "$MNT/dir/named")" = 1
check "the set-group-ID folder's group after remount" \
	test "$(stat -c %g "$MNT/sg/t")" = 4321

# a tmpfile open when the daemon dies: an orphan, reclaimed at the next mount
python3 - "$MNT/dir" >"$T/holder.out" 2>&1 <<'PY' &
import os, sys, time
fd = os.open(sys.argv[1], os.O_TMPFILE | os.O_RDWR, 0o600)
os.write(fd, b"y" * 300000)
os.fsync(fd)
print("ready", flush=True)
time.sleep(60)
PY
holder=$!
for i in $(seq 1 100); do
	grep -q ready "$T/holder.out" 2>/dev/null && break
	sleep 0.1
done
check "holder has its tmpfile open" grep -q ready "$T/holder.out"
kill -9 "$(pfs_pid)"
kill -9 "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
pfs_reap
check "the open tmpfile is an orphan in the store after the crash" \
	test "$(kv_count 'DRIVE#main|ORPHAN#')" = 1
pfs_mount
check "named file intact after the crash" cmp -s "$T/expect" "$MNT/dir/named"
pfs_umount
check "reclaimed at the next mount" test "$(kv_count 'DRIVE#main|ORPHAN#')" = 0
check "fsck clean" pfs_fsck
sanitizer_clean
finish
