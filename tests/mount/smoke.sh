#!/usr/bin/env bash
# smoke.sh - the daemon's quick mount test: mount, use the drive with the
# standard tools, unmount, remount, and the startup errors a user meets
# (locked store, bad mountpoints), -o ro, and a mount the way
# /etc/fstab does it (mount.fuse3 running `pathfs STORE MNT -o ...`).
source "$(dirname "$0")/lib.sh"

py() { python3 -c "$@"; }
not_mounted() { ! mountpoint -q "$1"; }

# ---- first mount: the store and the drive are created, silently (as
# mount(8) is on success) unless stderr is a terminal -----------------------
out=$("$PATHFS" "$STORE" "$MNT" 2>&1)
check "mount of a new store succeeds" mountpoint -q "$MNT"
check "prints nothing when stderr is no terminal (got: $out)" test -z "$out"
check "the drive is there" bash -c "'$PATHFSCTL' -s '$STORE' drives | grep -q '^main'"
mkdir "$T/mnt2"
script -qec "'$PATHFS' '$T/store2' '$T/mnt2'" /dev/null >"$T/tty" </dev/null
check "at a terminal, a first mount says it created the store" \
	grep -q "pathfs: created store $T/store2" "$T/tty"
check "  and the drive" grep -q "pathfs: created drive main in $T/store2" "$T/tty"
fusermount3 -u "$T/mnt2"
mkdir "$T/store3"
"$PATHFS" "$T/store3" "$T/mnt2"
check "an empty folder given as the store becomes a new store" \
	mountpoint -q "$T/mnt2"
fusermount3 -u "$T/mnt2"
mkdir "$T/notstore"
touch "$T/notstore/f"
out=$("$PATHFS" "$T/notstore" "$T/mnt2" 2>&1) || true
check "a folder with other things in it is refused (got: $out)" \
	bash -c "! mountpoint -q '$T/mnt2' && grep -q 'not a pathfs store' <<<'$out'"
check "  and left as it was" [ "$(ls "$T/notstore")" = f ]
check "listed in /proc/mounts as fuse.pathfs" \
	grep -q " $MNT fuse.pathfs " /proc/mounts

# ---- create, read, write, ls, mv, rm ----------------------------------------
echo hello >"$MNT/a.txt"
check "read back what was written" [ "$(cat "$MNT/a.txt")" = hello ]
echo more >>"$MNT/a.txt"
check "append" [ "$(cat "$MNT/a.txt")" = "$(printf 'hello\nmore')" ]
mkdir -p "$MNT/d/sub" "$MNT/d.x" "$MNT/d-y"
for i in $(seq 1 50); do echo "file $i" >"$MNT/d/sub/f$i"; done
check "ls lists every name once" \
	[ "$(ls "$MNT/d/sub" | sort | uniq | wc -l)" = 50 ]
check "ls of root" [ "$(ls "$MNT" | tr '\n' ' ')" = "a.txt d d-y d.x " ]
dd if=/dev/urandom of="$T/big" bs=1M count=5 status=none
cp "$T/big" "$MNT/d/big"
check "5 MiB file reads back identical" cmp "$T/big" "$MNT/d/big"
mv "$MNT/d" "$MNT/e"
check "mv of a folder: content at the new place" \
	[ "$(cat "$MNT/e/sub/f7")" = "file 7" ]
check "mv of a folder: old name gone" [ ! -e "$MNT/d" ]
check "mv of a folder: big file intact" cmp "$T/big" "$MNT/e/big"
mv "$MNT/e/sub/f1" "$MNT/e/f1-moved"
check "mv of a file across folders" [ "$(cat "$MNT/e/f1-moved")" = "file 1" ]
ln -s a.txt "$MNT/link"
check "symlink" [ "$(readlink "$MNT/link")" = a.txt ]
ln "$MNT/a.txt" "$MNT/hard"
check "hard link count" [ "$(stat -c %h "$MNT/a.txt")" = 2 ]
setfattr -n user.color -v blue "$MNT/a.txt"
check "xattr" [ "$(getfattr --absolute-names --only-values -n user.color "$MNT/a.txt")" = blue ]
chmod 640 "$MNT/a.txt"
check "chmod" [ "$(stat -c %a "$MNT/a.txt")" = 640 ]
touch -d "2001-02-03 04:05:06.123456789" "$MNT/a.txt"
check "utimens with nanoseconds" \
	[ "$(stat -c %y "$MNT/a.txt")" = "2001-02-03 04:05:06.123456789 +0000" ]
truncate -s 3 "$MNT/a.txt"
check "truncate" [ "$(cat "$MNT/a.txt")" = hel ]
mkfifo "$MNT/fifo"
check "fifo" [ -p "$MNT/fifo" ]
rm "$MNT/e/sub/f2"
check "rm of a file" [ ! -e "$MNT/e/sub/f2" ]
rm -rf "$MNT/d.x"
check "rmdir" [ ! -e "$MNT/d.x" ]
check "statfs (df)" sh -c "df '$MNT' >/dev/null"

# unlink while open: readable and writable until closed
check "unlinked open file stays usable" py "
import os
p = '$MNT/open-gone'
fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o644)
os.write(fd, b'abc')
os.unlink(p)
assert not os.path.exists(p)
os.write(fd, b'def')
os.lseek(fd, 0, 0)
assert os.read(fd, 100) == b'abcdef', 'content'
assert os.fstat(fd).st_size == 6
os.close(fd)
"

# a write through an fd whose folder was renamed lands at the new path
mkdir -p "$MNT/w1/w2"
check "write through fd after its folder moved" py "
import os
fd = os.open('$MNT/w1/w2/f', os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b'one ')
os.rename('$MNT/w1', '$MNT/w9')
os.write(fd, b'two')
os.close(fd)
assert open('$MNT/w9/w2/f', 'rb').read() == b'one two'
assert not os.path.exists('$MNT/w1')
"

# a big folder moves while requests run elsewhere and inside it: a writer
# holding a file open under it, readers of another folder; nothing is lost
mkdir -p "$MNT/big/sub" "$MNT/elsewhere"
(cd "$MNT/big/sub" && seq 1 3000 | xargs touch)
echo steady >"$MNT/elsewhere/file"
check "folder of 3000 moves while others work" py "
import os, subprocess, threading
stop = False
errors = []
def reader():
    while not stop:
        try:
            assert open('$MNT/elsewhere/file').read() == 'steady\n'
            os.listdir('$MNT/elsewhere')
        except Exception as e:
            errors.append(repr(e))
fd = os.open('$MNT/big/sub/1', os.O_WRONLY)
t = threading.Thread(target=reader); t.start()
mv = subprocess.Popen(['mv', '$MNT/big', '$MNT/moved'])
n = 0
while mv.poll() is None:
    os.write(fd, b'x'); n += 1
mv.wait(); stop = True; t.join()
os.write(fd, b'!'); os.close(fd)
assert mv.returncode == 0, 'mv failed'
assert not errors, errors[:3]
assert len(os.listdir('$MNT/moved/sub')) == 3000
assert open('$MNT/moved/sub/1', 'rb').read() == b'x' * n + b'!'
assert not os.path.exists('$MNT/big')
"

# pathfsctl commands on the mounted drive go through the daemon, which
# invalidates what the kernel cached about the changed names
if [ -x "${PATHFSCTL:-}" ]; then
	ctl() { "$PATHFSCTL" -s "$STORE" "$@" >/dev/null 2>"$T/ctl.err"; }
	mkdir -p "$MNT/c1/inner" && echo c >"$MNT/c1/inner/f"
	stat "$MNT/c1" "$MNT/c2" >/dev/null 2>&1 || true # cache both names
	check "ctl mv on the mounted drive" ctl mv /c1 /c2
	check "... the old name is gone through the mount" [ ! -e "$MNT/c1" ]
	check "... the new name shows the content" \
		[ "$(cat "$MNT/c2/inner/f" 2>/dev/null)" = c ]
	check "ctl cp -r on the mounted drive" ctl cp -r /c2 /c3
	check "... the copy shows through the mount" \
		[ "$(cat "$MNT/c3/inner/f" 2>/dev/null)" = c ]
	check "ctl rm -r on the mounted drive" ctl rm -r /c2
	check "... gone through the mount" [ ! -e "$MNT/c2" ]
	check "... the copy is still there" [ -f "$MNT/c3/inner/f" ]
	rm -rf "$MNT/c3"
fi

sha_before=$(cd "$MNT" && find . -type f ! -name fifo -print0 | sort -z |
	xargs -0 sha256sum | sha256sum)
list_before=$(cd "$MNT" && find . | sort)

# ---- a second daemon on the same store fails, before daemonizing ------------
# (a second mount of the same drive is another mount of the daemon's:
# mount_twice.sh)
mkdir -p "$T/mnt2"
rc=0
err=$("$PATHFS" -o drive=other "$STORE" "$T/mnt2" 2>&1) || rc=$?
check "second mount of a locked store fails" [ "$rc" -ne 0 ]
check "... with one line on stderr" [ "$(wc -l <<<"$err")" = 1 ]
check "... saying the store is in use" grep -q "in use" <<<"$err"
check "... and nothing mounted" not_mounted "$T/mnt2"

# ---- unmount and remount: everything still there ----------------------------
pfs_umount
check "unmounted" not_mounted "$MNT"
pfs_mount
check "remount: same names" [ "$(cd "$MNT" && find . | sort)" = "$list_before" ]
check "remount: same content" [ "$(cd "$MNT" && find . -type f ! -name fifo \
	-print0 | sort -z | xargs -0 sha256sum | sha256sum)" = "$sha_before" ]
check "remount: xattr kept" \
	[ "$(getfattr --absolute-names --only-values -n user.color "$MNT/hard")" = blue ]
check "remount: unlinked-while-open file gone" [ ! -e "$MNT/open-gone" ]
pfs_umount

# ---- -o ro: reads work, every write is EROFS --------------------------------
pfs_mount -o ro
check "ro: read" [ "$(cat "$MNT/e/sub/f7")" = "file 7" ]
expect_errno EROFS "ro: create" touch "$MNT/new"
expect_errno EROFS "ro: mkdir" mkdir "$MNT/newdir"
expect_errno EROFS "ro: write" sh -c "echo x >>'$MNT/a.txt'"
expect_errno EROFS "ro: rm" rm "$MNT/hard"
pfs_umount

# ---- startup errors: one line on stderr, non-zero exit ----------------------
one_line_error() { # WHAT EXPECTED-TEXT ARGS...
	local what=$1 text=$2 rc=0 err
	shift 2
	err=$("$PATHFS" "$@" 2>&1) || rc=$?
	CHECKS=$((CHECKS + 1))
	if [ "$rc" -ne 0 ] && [ "$(wc -l <<<"$err")" = 1 ] &&
		[[ "$err" == *"$text"* ]]; then
		echo "ok - $what"
	else
		echo "FAIL - $what: exit $rc, stderr: $err" >&2
		FAILS=$((FAILS + 1))
	fi
}
one_line_error "missing mountpoint" "No such file or directory" \
	"$STORE" "$T/nowhere"
mkdir -p "$T/full" && touch "$T/full/x"
one_line_error "non-empty mountpoint" "not empty" "$STORE" "$T/full"
one_line_error "missing parent of the store" "parent directory" \
	"$T/no/such/store" "$MNT"
one_line_error "bad drive name" "bad drive name" -o drive=no/slash \
	"$STORE" "$MNT"
check "no mount left behind" not_mounted "$MNT"
check "no daemon left behind" [ -z "$(pgrep -f "pathfs .*$T" || true)" ]

# ---- another drive of the same store does not see the first one -----------
pfs_mount -o drive=second
check "second drive starts empty" [ -z "$(ls -A "$MNT")" ]
echo other >"$MNT/only-here"
pfs_umount
pfs_mount
check "first drive does not see the second's file" [ ! -e "$MNT/only-here" ]
pfs_umount

# ---- fstab style: mount.fuse3 runs `pathfs STORE MNT -o OPTIONS` -----------
# mount(8) calls mount.fuse3 with no PATH (its shell then searches
# /usr/local/bin etc., where meson install puts pathfs); here a PATH entry
# points at the built binary instead.
if command -v mount.fuse3 >/dev/null || [ -x /sbin/mount.fuse3 ]; then
	mkdir -p "$T/bin"
	ln -sf "$PATHFS" "$T/bin/pathfs"
	rc=0
	PATH="$T/bin:$PATH" /sbin/mount.fuse3 "$STORE" "$MNT" -t pathfs \
		-o drive=main,rw,dev,suid,noatime || rc=$?
	check "mount.fuse3 (fstab) mount" [ "$rc" -eq 0 ]
	check "fstab mount serves the drive" \
		[ "$(cat "$MNT/e/sub/f7" 2>/dev/null)" = "file 7" ]
	umount "$MNT" 2>/dev/null || fusermount3 -u "$MNT"
	for i in $(seq 1 100); do
		pgrep -f "pathfs .*$MNT" >/dev/null || break
		sleep 0.05
	done
	check "umount stops the daemon" \
		[ -z "$(pgrep -f "pathfs .*$MNT" || true)" ]
fi

finish
