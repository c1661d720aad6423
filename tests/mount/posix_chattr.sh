#!/usr/bin/env bash
# posix_chattr.sh - inode flags (chattr/lsattr: FS_IOC_GETFLAGS/SETFLAGS and
# FS_IOC_FSGETXATTR/FSSETXATTR, fs/ioctl.c) and the rules the store enforces
# for them (store/flags.c), against ext4: one scenario runs on an ext4 file
# system (a loop-mounted image) and in the mount, and what it prints must be
# the same line for line:
# - lsattr/chattr and xfs_io's lsattr/chattr of i, a, A, d, S, D on files
#   and folders; a flag pathfs lacks (C) refused as ext4 refuses it; D on a
#   file dropped; ctime set by a change; an ioctl nobody knows is ENOTTY;
# - an immutable file: no open for writing, truncate, write or fallocate
#   through a descriptor opened before, chmod, chown, utimes, xattrs, link,
#   unlink, rename from or over it; reading works;
# - an append-only file: only O_APPEND opens write (and append), no
#   truncate, punch, chmod or explicit times (touch is fine), no xattrs,
#   link, unlink or rename;
# - an immutable folder: nothing made (file, folder, symlink, FIFO, link,
#   O_TMPFILE, rename in), removed or renamed in it, itself neither removed
#   nor renamed, while its files stay writable; an append-only folder takes
#   new entries only;
# - noatime: a read leaves atime be (a file without it gets its atime);
# - inheritance: d, A, S to new files and folders, D to folders only, never
#   i or a;
# - who may: only the owner sets flags, only root sets i and a;
# then on the mount alone: the flags and their rules survive a remount,
# fsck is clean, pathfsctl rm -r/mv/cp honour them; flags set through a
# second mount or another name of a hard link refuse opens for writing
# through the first (the daemon's table of files without flags kept true).
source "$(dirname "$0")/lib.sh"
sanitizer_logs

FLAGOPS=$TESTS_DIR/helpers/flagops.py
chmod 755 "$T" # let fsgqa reach both folders (allow_other below)
U=fsgqa
id "$U" >/dev/null 2>&1 || useradd -M -U -s /usr/sbin/nologin "$U"
id "$U" >/dev/null
as() { setpriv --reuid="$U" --regid="$U" --init-groups -- "$@"; }

# flags NAME...: each NAME's flags as lsattr shows them, less ext4's own
# 'e' (extents), which pathfs has no use for
flags() {
	local n
	for n in "$@"; do
		lsattr -d "$n" 2>&1 | awk '{ gsub("e", "-", $1); print }'
	done
}
# ops: the calls on stdin, by flagops.py, in the current folder
ops() { python3 "$FLAGOPS"; }
# ctime_moves CMD...: whether CMD changes the ctime of the last argument
ctime_moves() {
	local before
	before=$(stat -c %z "${@: -1}")
	sleep 1.1
	"$@" 2>&1
	[ "$(stat -c %z "${@: -1}")" != "$before" ] && echo "ctime changed" ||
		echo "ctime kept"
}
# unlock DIR: takes i and a off everything below DIR (so it can go)
unlock() { chattr -R -ia "$1" 2>/dev/null || true; }

scenario() {
	set +e
	cd "$1"
	umask 022
	echo "== lsattr and chattr"
	touch f && mkdir d
	flags f d
	chattr +d f; chattr +A d; flags f d
	chattr -d f; chattr =S f; flags f
	chattr +D f; echo "chattr +D file: $?"; flags f
	chattr +D d; flags d; chattr -DA d
	chattr +C f 2>&1; echo "chattr +C: $?"; flags f
	chattr -S f
	ctime_moves chattr +d f
	xfs_io -r -c 'chattr +A' f; xfs_io -r -c lsattr f; flags f
	xfs_io -r -c 'chattr -A' -c 'chattr +s' f; flags f
	xfs_io -r -c 'chattr -s' -c 'chattr +S' f; flags f
	chattr =d f; xfs_io -r -c lsattr f; chattr = f
	ops <<-'OPS'
	ioctl f
	ioctl d
	OPS

	echo "== immutable file"
	printf 'hello' >im
	setfattr -n user.k -v v im
	exec 7>>im
	chattr +i im; flags im
	ops <<-'OPS'
	open im w x
	open im rw x
	open im rt x
	open im a x
	open im r x
	close x
	cat im
	truncate im 1
	chmod im 600
	chown im 1 1
	touch im
	utime im 1000000
	setxattr im user.k w
	setxattr im user.n w
	removexattr im user.k
	link im im2
	unlink im
	rename im im3
	open other wc o
	close o
	rename other im
	OPS
	echo more >&7 2>/dev/null
	echo "write through an earlier descriptor: $?"
	python3 -c 'import os; os.ftruncate(7, 0)' 2>&1 | tail -n1
	exec 7>&-
	cat im; echo
	chattr -i im; flags im
	echo ok >>im && cat im

	echo "== append-only file"
	printf 'start.' >ap
	setfattr -n user.k -v v ap
	chattr +a ap; flags ap
	ops <<-'OPS'
	open ap w x
	open ap rw x
	open ap at x
	open ap a x
	write x more.
	fallocate x alloc 0 100
	fallocate x keep 0 8192
	fallocate x punch 0 1
	fallocate x zero 0 1
	ftruncate x 0
	close x
	cat ap
	truncate ap 0
	chmod ap 600
	chown ap 1 1
	touch ap
	utime ap 1000000
	setxattr ap user.k w
	removexattr ap user.k
	link ap ap2
	unlink ap
	rename ap ap3
	rename other ap
	OPS
	chattr -a ap; flags ap; rm ap other

	echo "== immutable folder"
	mkdir di di/sub && printf 'in' >di/x && touch y
	chattr +i di; flags di
	ops <<-'OPS'
	open di/new wc x
	mkdir di/newdir
	symlink x di/ln
	mkfifo di/fifo
	link y di/y
	tmpfile di
	rename y di/y
	unlink di/x
	rmdir di/sub
	rename di/x di/x2
	rename di/x y2
	rename di/sub sub2
	open di/x a x
	write x +more
	close x
	cat di/x
	chmod di 700
	rmdir di
	rename di di2
	OPS
	chattr -i di; rm -r di y

	echo "== append-only folder"
	mkdir da da/sub && touch da/x y
	chattr +a da; flags da
	ops <<-'OPS'
	open da/new wc x
	close x
	mkdir da/newdir
	rename y da/y
	unlink da/x
	rmdir da/sub
	rename da/x da/x2
	rename da/x z
	rmdir da
	OPS
	flags da/new da/newdir
	ls da
	chattr -a da; rm -r da

	echo "== noatime"
	head -c 4096 /dev/zero >na && cp na plain
	touch -a -d '2001-01-01 00:00:00' na plain
	chattr +A na
	ops <<-'OPS'
	directread na
	directread plain
	atime na
	OPS
	[ "$(stat -c %X plain)" -gt 1000000000 ] && echo "plain: atime set"
	chattr +i plain && touch -a -d '2001-01-01 00:00:00' plain 2>&1
	chattr -i plain && touch -a -d '2001-01-01 00:00:00' plain &&
		chattr +i plain
	echo directread plain | ops
	[ "$(stat -c %X plain)" -gt 1000000000 ] && echo "immutable: atime set"
	chattr -i plain; rm na plain

	echo "== inheritance"
	mkdir p && chattr +dAS p && chattr +D p
	mkdir p/sub && touch p/file
	flags p p/sub p/file
	mkdir q && chattr +a q && mkdir q/sub && touch q/file
	flags q/sub q/file
	chattr -a q
	mkdir r && chattr +d r && printf 'x' >r/file && mv r/file . &&
		flags file && rm file

	echo "== who may"
	touch mine && chown "$U" mine && touch theirs
	as chattr +d theirs 2>&1 | sed 's/theirs/FILE/'
	as chattr +d mine; flags mine
	as chattr +i mine 2>&1; flags mine
	as chattr +a mine 2>&1; flags mine
	chattr +i mine && as chattr -i mine 2>&1; flags mine
	chattr -i mine
	echo "== end"
}

# branch DIR: a branch for rm -r: files, and among them an immutable file,
# an immutable folder and an append-only one, each holding a file
branch() {
	mkdir -p "$1/keep" "$1/app" "$1/plain/deep"
	for i in 1 2 3; do
		echo "$i" >"$1/f$i"
		echo "$i" >"$1/plain/deep/g$i"
	done
	echo in >"$1/keep/in"
	echo in >"$1/app/in"
	echo imm >"$1/plain/imm"
	chattr +i "$1/keep" "$1/plain/imm"
	chattr +a "$1/app"
}
# left DIR: what is below DIR, sorted
left() { (cd "$1" && find . | sort); }

# ext4: a loop-mounted image of the test's own, gone with $T
truncate -s 64M "$T/ext4.img"
mkfs.ext4 -q -F "$T/ext4.img"
mkdir "$T/host"
mount -o loop "$T/ext4.img" "$T/host"
mkdir "$T/host/s"
chown root:root "$T/host/s"
chmod 755 "$T/host"
scenario "$T/host/s" >"$T/host.out" 2>&1
cd /
branch "$T/host/rm"
rm -rf "$T/host/rm" 2>/dev/null
left "$T/host/rm" >"$T/host.left"
unlock "$T/host"
umount "$T/host"

pfs_mount -o allow_other
mkdir "$MNT/s"
scenario "$MNT/s" >"$T/mnt.out" 2>&1
cd /
same_file "the scenario on pathfs prints what it prints on ext4" \
	"$T/host.out" "$T/mnt.out"
check "the scenario ran to its end" grep -qx '== end' "$T/mnt.out"

# pathfsctl on the mounted drive: the store's rules for everyone
branch "$MNT/rm"
check "pathfsctl rm -r reports what it may not remove" \
	bash -c "! '$PATHFSCTL' -s '$STORE' rm -r /rm >'$T/rm.out' 2>&1 &&
		grep -q 'Operation not permitted' '$T/rm.out'"
same_file "pathfsctl rm -r leaves what rm -rf leaves on ext4" \
	"$T/host.left" <(left "$MNT/rm")
expect_errno EPERM "pathfsctl mv of an immutable file" \
	"$PATHFSCTL" -s "$STORE" mv /rm/plain/imm /moved
expect_errno EPERM "pathfsctl cp -r into an immutable folder" \
	"$PATHFSCTL" -s "$STORE" cp -r /rm/plain /rm/keep/copy
check "pathfsctl cp -r copies a branch with its flags" \
	"$PATHFSCTL" -s "$STORE" cp -r /rm /cp
flags "$MNT/rm/keep" "$MNT/rm/app" "$MNT/rm/plain/imm" | sed 's| .*/rm/| |' >"$T/flags.orig"
same_file "pathfsctl cp -r: the copy's flags" "$T/flags.orig" \
	<(flags "$MNT/cp/keep" "$MNT/cp/app" "$MNT/cp/plain/imm" | sed 's| .*/cp/| |')

# OPEN for writing reads the flags only of a file the daemon's inode table
# does not know to have none (INODE_NO_FLAGS, fs/fs_i.h): flags set after
# the kernel learnt of a file without them, through another way to the same
# inode, must still refuse it (an append-only file overwritten otherwise).
# rewrite FILE: an open for writing without O_APPEND or O_TRUNC, writing X
rewrite() { bash -c "printf X 1<>'$1'"; }
M2=$T/mnt2
mkdir "$M2"
check "a second mount of the drive (the same daemon, fs/second.c)" \
	"$PATHFS" -o allow_other "$STORE" "$M2"
printf 'abc' >"$MNT/sm" && printf 'abc' >"$MNT/si"
chattr +a "$M2/sm" && chattr +i "$M2/si"
expect_errno EPERM "+a through the second mount: no rewrite through the first" \
	rewrite "$MNT/sm"
expect_errno EPERM "+i through the second mount: no append through the first" \
	bash -c "printf X >>'$MNT/si'"
check "... the files are as they were" \
	bash -c "[ \"\$(cat '$MNT/sm' '$MNT/si')\" = abcabc ]"
check "... and take O_APPEND writes once allowed" \
	bash -c "printf d >>'$MNT/sm' && chattr -i '$M2/si' &&
		printf X 1<>'$MNT/si'"
check "the second mount goes" pfs_unmount timeout 30 fusermount3 -u "$M2"
printf 'abc' >"$MNT/h1" && ln "$MNT/h1" "$MNT/h2" && printf 'd' >>"$MNT/h2"
chattr +a "$MNT/h1"
expect_errno EPERM "+a through one name of a hard link: no rewrite through the other" \
	rewrite "$MNT/h2"
echo 2 >/proc/sys/vm/drop_caches # the kernel looks both names up again
expect_errno EPERM "... nor after the kernel looked the names up again" \
	rewrite "$MNT/h2"
check "... the file is as it was" [ "$(cat "$MNT/h2")" = abcd ]
chattr -a "$MNT/sm" "$MNT/h1" && rm "$MNT/sm" "$MNT/si" "$MNT/h1" "$MNT/h2"

mkdir "$MNT/p" && chattr +dA "$MNT/p" && chattr +D "$MNT/p"
echo x >"$MNT/p/f"
flags "$MNT/p" "$MNT/p/f" >"$T/p.flags"
pfs_umount
check "fsck is clean with flags stored" pfs_fsck
pfs_mount -o allow_other
same_file "remount: the flags are kept" "$T/p.flags" \
	<(flags "$MNT/p" "$MNT/p/f")
same_file "remount: the branch's flags are kept" "$T/flags.orig" \
	<(flags "$MNT/rm/keep" "$MNT/rm/app" "$MNT/rm/plain/imm" | sed 's| .*/rm/| |')
expect_errno EPERM "remount: an immutable file is still kept" \
	rm -f "$MNT/rm/plain/imm"
expect_errno EPERM "remount: an append-only folder still keeps its files" \
	rm -f "$MNT/rm/app/in"
check "remount: an append-only folder still takes new files" \
	touch "$MNT/rm/app/new"
check "cleared, a branch goes" \
	bash -c "chattr -R -ia '$MNT/rm' '$MNT/cp' && rm -r '$MNT/rm' '$MNT/cp'"
pfs_umount
sanitizer_clean
finish
