#!/usr/bin/env bash
# posix_rename.sh - rename and unlink semantics through the mount (issues 3
# and 4): mv of files and folders within and across folders (folders bigger
# than one rewrite chunk), siblings whose names share the moved folder's prefix
# left alone, rm -rf of a tree, rename replacing its target, the POSIX errors,
# RENAME_NOREPLACE and RENAME_EXCHANGE (tests/helpers/renameat2), unlink while
# open (the fd keeps working, the space is reclaimed at close, and after a
# kill -9 at the next mount), and open fds and a cwd inside a folder that gets
# renamed (writes land in the file at its new path). Ends with fsck clean.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

R2=$RENAMEAT2
mtime_ns() { stat -c '%.9Y' "$1" | tr -d .; }
ctime_ns() { stat -c '%.9Z' "$1" | tr -d .; }

pfs_mount

# ---- files ------------------------------------------------------------------
mkdir "$MNT/a" "$MNT/b"
echo one >"$MNT/a/f1"
echo two >"$MNT/a/f2"
ino=$(stat -c %i "$MNT/a/f1")
a_m=$(mtime_ns "$MNT/a")
f_c=$(ctime_ns "$MNT/a/f1")
sleep 0.01
check "mv file within a folder" mv "$MNT/a/f1" "$MNT/a/f1.renamed"
check "  content and inode kept" test "$(cat "$MNT/a/f1.renamed")" = one -a \
	"$(stat -c %i "$MNT/a/f1.renamed")" = "$ino"
check "  old name gone" test ! -e "$MNT/a/f1"
check "  listing shows only the new name" test \
	"$(ls "$MNT/a" | tr '\n' ' ')" = "f1.renamed f2 "
check "  parent mtime advanced" test "$(mtime_ns "$MNT/a")" -gt "$a_m"
check "  file ctime advanced" test "$(ctime_ns "$MNT/a/f1.renamed")" -gt "$f_c"
b_m=$(mtime_ns "$MNT/b")
sleep 0.01
check "mv file across folders" mv "$MNT/a/f2" "$MNT/b/f2"
check "  content there, gone here" test "$(cat "$MNT/b/f2")" = two -a \
	! -e "$MNT/a/f2"
check "  new parent mtime advanced" test "$(mtime_ns "$MNT/b")" -gt "$b_m"

# ---- folders bigger than one rewrite chunk (1,024) -------------------------
python3 "$TREE_PY" gen "$MNT/tree" 1100 >/dev/null
manifest "$MNT/tree" "$T/m.tree"
check "mv folder within a folder" mv "$MNT/tree" "$MNT/tree2"
manifest "$MNT/tree2" "$T/m.tree2"
same_file "  whole branch at the new name" "$T/m.tree" "$T/m.tree2"
check "  nothing at the old name" test ! -e "$MNT/tree"
mkdir -p "$MNT/b/deep/er"
check "mv folder across folders" mv "$MNT/tree2" "$MNT/b/deep/er/tree3"
manifest "$MNT/b/deep/er/tree3" "$T/m.tree3"
same_file "  whole branch at the new place" "$T/m.tree" "$T/m.tree3"
check "  old place gone" test ! -e "$MNT/tree2"
check "mv it back up" mv "$MNT/b/deep/er/tree3" "$MNT/tree"
manifest "$MNT/tree" "$T/m.tree4"
same_file "  whole branch back" "$T/m.tree" "$T/m.tree4"

# Siblings whose names extend the moved folder's name ('-', '.', ' ' sort
# before '/', '0' right after it) must not move with it.
for n in x x-y x.y "x y" x0 xx; do
	mkdir -p "$MNT/p/$n/sub"
	echo "$n" >"$MNT/p/$n/file"
	echo "$n" >"$MNT/p/$n/sub/file"
done
echo file >"$MNT/p/x.txt"
manifest "$MNT/p" "$T/m.p" --no-dir-mtime
check "mv x -> x-new next to x-y, x.y, 'x y', x0" mv "$MNT/p/x" "$MNT/p/x-new"
check "  siblings untouched" test "$(cat "$MNT/p/x-y/sub/file" \
	"$MNT/p/x.y/sub/file" "$MNT/p/x y/sub/file" "$MNT/p/x0/sub/file" \
	"$MNT/p/x.txt" | tr '\n' ' ')" = "x-y x.y x y x0 file "
check "  moved one complete" test "$(cat "$MNT/p/x-new/sub/file")" = x
check "mv x-new into sibling x-y (not its own subtree)" \
	"$R2" none "$MNT/p/x-new" "$MNT/p/x-y/x"
check "mv it back" mv "$MNT/p/x-y/x" "$MNT/p/x"
manifest "$MNT/p" "$T/m.p2" --no-dir-mtime
same_file "  prefix siblings: same tree as before" "$T/m.p" "$T/m.p2"

# ---- rm -rf ----------------------------------------------------------------
python3 "$TREE_PY" gen "$MNT/doomed" 1100 >/dev/null
check "rm -rf of a 1,118-entry tree" rm -rf "$MNT/doomed"
check "  gone" test ! -e "$MNT/doomed"
check "  root lists no trace" test -z "$(ls -A "$MNT" | grep doomed || true)"
check "  the name can be reused" mkdir "$MNT/doomed"

# ---- rename replacing its target -------------------------------------------
mkdir "$MNT/r"
echo old >"$MNT/r/target"
ln "$MNT/r/target" "$MNT/r/target.link"
echo new >"$MNT/r/src"
check "file over file" mv "$MNT/r/src" "$MNT/r/target"
check "  target has the new content" test "$(cat "$MNT/r/target")" = new
check "  the replaced inode's other link keeps the old, nlink 1" test \
	"$(cat "$MNT/r/target.link")" = old -a \
	"$(stat -c %h "$MNT/r/target.link")" = 1
mkdir "$MNT/r/d1" "$MNT/r/empty"
echo in-d1 >"$MNT/r/d1/x"
check "dir over empty dir" "$R2" none "$MNT/r/d1" "$MNT/r/empty"
check "  contents moved" test "$(cat "$MNT/r/empty/x")" = in-d1 -a ! -e "$MNT/r/d1"
python3 "$TREE_PY" gen "$MNT/r/bigdir" 1100 >/dev/null
manifest "$MNT/r/bigdir" "$T/m.bigdir"
mkdir "$MNT/r/empty2"
check "big dir over empty dir (journaled, replaces target)" \
	"$R2" none "$MNT/r/bigdir" "$MNT/r/empty2"
manifest "$MNT/r/empty2" "$T/m.empty2"
same_file "  whole branch there" "$T/m.bigdir" "$T/m.empty2"
mkdir "$MNT/r/full"
echo x >"$MNT/r/full/x"
mkdir "$MNT/r/d2"
expect_errno ENOTEMPTY "dir over non-empty dir" "$R2" none "$MNT/r/d2" "$MNT/r/full"
expect_errno ENOTEMPTY "big dir over non-empty dir" "$R2" none "$MNT/r/empty2" "$MNT/r/full"
expect_errno EISDIR "file over dir" "$R2" none "$MNT/r/target" "$MNT/r/d2"
expect_errno ENOTDIR "dir over file" "$R2" none "$MNT/r/d2" "$MNT/r/target"
expect_errno EINVAL "folder into its own subtree" "$R2" none "$MNT/r/empty" "$MNT/r/empty/sub"
expect_errno EINVAL "folder into its own deep subtree" "$R2" none "$MNT/r/empty2" \
	"$MNT/r/empty2/$(ls "$MNT/r/empty2" | head -n1)/sub/x"
expect_errno ENOENT "missing source" "$R2" none "$MNT/r/nope" "$MNT/r/nope2"
expect_errno ENOENT "missing target folder" "$R2" none "$MNT/r/target" "$MNT/r/nope/x"
expect_errno ENOTDIR "target under a file" "$R2" none "$MNT/r/d2" "$MNT/r/target/x"
check "  errors changed nothing" test "$(cat "$MNT/r/full/x" "$MNT/r/target")" = \
	"$(printf 'x\nnew')" -a -d "$MNT/r/d2" -a -d "$MNT/r/empty"
check "rename to itself is a no-op" "$R2" none "$MNT/r/target" "$MNT/r/target"
ln "$MNT/r/target" "$MNT/r/target.2"
check "rename over another link of the same inode is a no-op" \
	"$R2" none "$MNT/r/target" "$MNT/r/target.2"
check "  both links still there, nlink 2" test -e "$MNT/r/target" -a \
	"$(stat -c %h "$MNT/r/target.2")" = 2
# link() from a hard-linked inode after most of its names, the first one
# the daemon saw among them, are gone (it goes by the inode number)
mkdir "$MNT/h"
echo linked >"$MNT/h/a"
ln "$MNT/h/a" "$MNT/h/b"
for i in $(seq 1 12); do ln "$MNT/h/a" "$MNT/h/n$i"; done
rm "$MNT/h/a" "$MNT/h"/n{5..12}
check "link from the oldest remaining name of a 14-link inode" \
	ln "$MNT/h/b" "$MNT/h/z"
check "  same inode and content, nlink 6" test "$(cat "$MNT/h/z")" = linked -a \
	"$(stat -c '%i %h' "$MNT/h/z")" = "$(stat -c '%i' "$MNT/h/b") 6"
# ... and readlink() of a hard-linked symlink once those names are gone
# (the kernel's cached target dropped first, so the daemon is asked)
ln -s the-target "$MNT/h/s"
for i in $(seq 1 12); do ln -P "$MNT/h/s" "$MNT/h/s$i"; done
rm "$MNT/h/s" "$MNT/h"/s{5..12}
sync -f "$MNT"
echo 2 >/proc/sys/vm/drop_caches
check "readlink from the oldest remaining name of a 13-link symlink" \
	test "$(readlink "$MNT/h/s1")" = the-target

# ---- RENAME_NOREPLACE / RENAME_EXCHANGE ------------------------------------
mkdir "$MNT/x"
echo A >"$MNT/x/a"
echo B >"$MNT/x/b"
expect_errno EEXIST "NOREPLACE onto an existing file" "$R2" noreplace "$MNT/x/a" "$MNT/x/b"
check "  both unchanged" test "$(cat "$MNT/x/a" "$MNT/x/b" | tr -d '\n')" = AB
check "NOREPLACE onto a free name" "$R2" noreplace "$MNT/x/a" "$MNT/x/c"
check "  moved" test "$(cat "$MNT/x/c")" = A -a ! -e "$MNT/x/a"
mkdir "$MNT/x/dir" "$MNT/x/dir2"
expect_errno EEXIST "NOREPLACE dir onto an existing dir" "$R2" noreplace "$MNT/x/dir" "$MNT/x/dir2"
ia=$(stat -c %i "$MNT/x/b")
ib=$(stat -c %i "$MNT/x/c")
check "EXCHANGE two files" "$R2" exchange "$MNT/x/b" "$MNT/x/c"
check "  contents swapped" test "$(cat "$MNT/x/b")" = A -a "$(cat "$MNT/x/c")" = B
check "  inodes swapped" test "$(stat -c %i "$MNT/x/b")" = "$ib" -a \
	"$(stat -c %i "$MNT/x/c")" = "$ia"
echo in-dir >"$MNT/x/dir/f"
check "EXCHANGE a file and a folder" "$R2" exchange "$MNT/x/b" "$MNT/x/dir"
check "  swapped" test -d "$MNT/x/b" -a -f "$MNT/x/dir" -a \
	"$(cat "$MNT/x/b/f")" = in-dir -a "$(cat "$MNT/x/dir")" = A
expect_errno ENOENT "EXCHANGE with a missing name" "$R2" exchange "$MNT/x/c" "$MNT/x/none"
python3 "$TREE_PY" gen "$MNT/x/big1" 1100 >/dev/null
python3 "$TREE_PY" flat "$MNT/x/big2" 1100 >/dev/null
manifest "$MNT/x/big1" "$T/m.big1"
manifest "$MNT/x/big2" "$T/m.big2"
check "EXCHANGE two non-empty folders (journaled)" \
	"$R2" exchange "$MNT/x/big1" "$MNT/x/big2"
manifest "$MNT/x/big1" "$T/m.big1x"
manifest "$MNT/x/big2" "$T/m.big2x"
same_file "  big1 now holds big2's branch" "$T/m.big2" "$T/m.big1x"
same_file "  big2 now holds big1's branch" "$T/m.big1" "$T/m.big2x"
expect_errno EINVAL "EXCHANGE a folder with its own child" \
	"$R2" exchange "$MNT/x/big1" "$MNT/x/big1/e000001"

# ---- unlink while open -----------------------------------------------------
mkdir "$MNT/u"
echo keep >"$MNT/u/keep"
pfs_umount
data0=$(kv_count 'DRIVE#main|DATA#')
pfs_mount
check "unlinked file stays usable through its fd" python3 - "$MNT/u/gone" <<'EOF'
import os, sys
p = sys.argv[1]
blob = os.urandom(3 * 1048576 + 17)
fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, blob[:1048576])
os.unlink(p)
assert not os.path.exists(p), "still visible after unlink"
assert os.path.basename(p) not in os.listdir(os.path.dirname(p))
assert os.fstat(fd).st_nlink == 0, os.fstat(fd).st_nlink
os.write(fd, blob[1048576:])           # writes keep working
os.fsync(fd)
assert os.fstat(fd).st_size == len(blob)
os.lseek(fd, 0, os.SEEK_SET)
got = b""
while len(got) < len(blob):
    b = os.read(fd, 1 << 20)
    if not b:
        break
    got += b
assert got == blob, "content differs"
os.ftruncate(fd, 10)
assert os.pread(fd, 100, 0) == blob[:10]
os.close(fd)
EOF
check "  a new file can take the name" bash -c "echo new >'$MNT/u/gone'"
check "  and reads its own content" test "$(cat "$MNT/u/gone")" = new
rm "$MNT/u/gone"
pfs_umount
check "  no orphan record left after close" test "$(kv_count 'DRIVE#main|ORPHAN#')" = 0
check "  its content blocks are freed" test "$(kv_count 'DRIVE#main|DATA#')" = "$data0"

# ... and after a crash it is reclaimed at the next mount.
pfs_mount
python3 -c '
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, os.urandom(2 * 1048576))
os.fsync(fd)
os.unlink(sys.argv[1])
os.fsync(fd)
print("ready", flush=True)
time.sleep(60)
' "$MNT/u/crash" >"$T/holder.out" 2>&1 &
holder=$!
for i in $(seq 1 100); do
	grep -q ready "$T/holder.out" && break
	sleep 0.1
done
check "orphan holder is ready" grep -q ready "$T/holder.out"
kill -9 $(pfs_pid) || true
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
pfs_reap
check "  orphan recorded in the store after the crash" \
	test "$(kv_count 'DRIVE#main|ORPHAN#')" -ge 1
pfs_mount
pfs_umount
check "  reclaimed at the next mount: no orphan record" \
	test "$(kv_count 'DRIVE#main|ORPHAN#')" = 0
check "  and its content blocks are freed" \
	test "$(kv_count 'DRIVE#main|DATA#')" = "$data0"

# ---- open fds and a cwd inside a folder that is renamed --------------------
pfs_mount
python3 "$TREE_PY" gen "$MNT/w/dir" 1100 >/dev/null
mkdir "$MNT/w/dir/inner"
check "writes through an fd land at the renamed folder's new path" python3 - \
	"$MNT/w" <<'EOF'
import os, sys
w = sys.argv[1]
fd = os.open(w + "/dir/inner/f", os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"before;")
rfd = os.open(w + "/dir/a b/f000", os.O_RDONLY)   # existing file, read later
first = os.read(rfd, 10)
os.chdir(w + "/dir/inner")
os.rename(w + "/dir", w + "/moved")           # non-empty: journaled rewrite
os.write(fd, b"after;")
os.fsync(fd)
os.close(fd)
with open(w + "/moved/inner/f", "rb") as f:
    assert f.read() == b"before;after;", "write did not land at new path"
assert not os.path.exists(w + "/dir")
os.lseek(rfd, 0, os.SEEK_SET)
assert os.read(rfd, 10) == first
os.close(rfd)
# the cwd moved with the folder: relative names resolve at the new place
with open("made-in-cwd", "wb") as f:
    f.write(b"cwd")
with open(w + "/moved/inner/made-in-cwd", "rb") as f:
    assert f.read() == b"cwd"
assert os.getcwd() == w + "/moved/inner", os.getcwd()
# a file renamed across folders while open
fd = os.open(w + "/moved/inner/f", os.O_WRONLY | os.O_APPEND)
os.mkdir(w + "/other")
os.rename(w + "/moved/inner/f", w + "/other/f")
os.write(fd, b"again;")
os.close(fd)
with open(w + "/other/f", "rb") as f:
    assert f.read() == b"before;after;again;"
os.chdir("/")
EOF
check "cat at the new path" test "$(cat "$MNT/w/other/f")" = "before;after;again;"
pfs_umount

check "fsck clean" pfs_fsck
check "no journal record left" test "$(kv_count 'DRIVE#main|JOURNAL#')" = 0
pfs_mount
check "after remount: renamed trees intact" \
	bash -c "python3 '$TREE_PY' manifest '$MNT/tree' | cmp - '$T/m.tree'"
check "after remount: exchanged trees intact" \
	bash -c "python3 '$TREE_PY' manifest '$MNT/x/big2' | cmp - '$T/m.big1'"
pfs_umount

sanitizer_clean
finish
