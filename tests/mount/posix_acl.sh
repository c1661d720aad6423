#!/usr/bin/env bash
# posix_acl.sh - POSIX ACLs (FUSE_POSIX_ACL; store/acl.c), against the host
# folder ($T, ext4 here): one scenario runs in a folder of the host and in
# the mount, and what it prints must be the same line for line:
# - setfacl/getfacl of named users and groups, the mask, chmod's effect on
#   the ACL, an ACL the mode says all of (not stored), setfacl -x/-b/-k,
#   a default ACL on a file refused;
# - what user fsgqa (a real uid, through the kernel's permission checks)
#   may read and write: granted by a named entry, denied by one, cut by the
#   mask;
# - new files, folders, FIFOs, symlinks and O_TMPFILE files under a default
#   ACL (the umask ignored, the ACL masked by the create mode), and without
#   one (the umask honoured: 027, 077);
# - set-group-ID cleared when one outside the file's group sets its ACL;
# - an ACL set after ls -l was told the file had none denies at once;
# then on the mount alone: cp -a, rsync -A and tar --acls round trips keep
# the ACLs, pathfsctl cp -r and mv keep them, a remount keeps them (and
# their enforcement), fsck is clean.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

chmod 755 "$T" # let fsgqa reach both folders (allow_other below)
U=fsgqa
# a real user and its own group, made on a machine that has none (as
# xfstests makes it; root runs the mount tests)
id "$U" >/dev/null 2>&1 || useradd -M -U -s /usr/sbin/nologin "$U"
id "$U" >/dev/null

# as CMD...: runs CMD as user fsgqa (its own groups)
as() { setpriv --reuid="$U" --regid="$U" --init-groups -- "$@"; }
# show NAME...: the ACL (as getfacl prints it, without the header) and mode
show() {
	local n
	for n in "$@"; do
		echo "== $n $(stat -c '%A %U %G' "$n")"
		getfacl -cp "$n" 2>&1
	done
}
# can NAME: what fsgqa may do with file NAME: r and w, or -
can() {
	local r=- w=-
	as cat "$1" >/dev/null 2>&1 && r=r
	as sh -c ": >>'$1'" 2>/dev/null && w=w
	echo "fsgqa on $1: $r$w"
}
export U
export -f as can
# acls DIR: every ACL below DIR, by sorted relative name (getfacl -R lists in
# readdir order, which differs between filesystems)
acls() { (cd "$1" && find . -print0 | sort -z | xargs -0 getfacl -p 2>&1); }
# attr NAME XATTR: whether NAME has XATTR stored
attr() {
	if getfattr -n "$2" "$1" >/dev/null 2>&1; then
		echo "$1 has $2"
	else
		echo "$1 has no $2"
	fi
}
# tmpfile DIR NAME MODE: open(O_TMPFILE) in DIR with MODE, linked as NAME
tmpfile() {
	python3 - "$@" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_TMPFILE | os.O_WRONLY, int(sys.argv[3], 8))
# linkat(AT_FDCWD, "/proc/self/fd/N", AT_FDCWD, name, AT_SYMLINK_FOLLOW)
if libc.linkat(-100, b"/proc/self/fd/%d" % fd, -100,
               os.path.join(sys.argv[1], sys.argv[2]).encode(), 0x400):
    e = ctypes.get_errno()
    sys.exit("linkat: " + os.strerror(e))
os.close(fd)
PY
}

# scenario DIR: the steps, run in DIR (a fresh folder), printing results
# and errors alike (a step that fails goes on: the output tells)
scenario() {
	set +e
	cd "$1"
	umask 022
	# an ACL set after the file was listed (ls -l asked for its ACL, and
	# was told none) binds at once
	echo data >g
	ls -l >/dev/null
	can g
	setfacl -m "u:$U:-" g 2>&1
	can g
	echo data >f
	setfacl -m "u:$U:rw" f 2>&1
	show f
	can f
	chmod 640 f
	show f
	can f
	chmod 600 f
	can f
	setfacl -m m::rw f
	show f
	can f
	setfacl -x "u:$U" f
	show f
	attr f system.posix_acl_access
	setfacl -m "g:$U:r,m::r" f
	show f
	can f
	setfacl -b f
	show f
	attr f system.posix_acl_access
	# an ACL the mode says all of: the mode only
	setfacl -m u::rwx,g::r-x,o::r-- f
	show f
	attr f system.posix_acl_access
	# a named entry denies what other grants
	echo data >g
	chmod 666 g
	setfacl -m "u:$U:---" g
	can g
	setfacl -m "u:$U:r" g
	can g
	setfacl -d -m "u:$U:rwx" g 2>&1 | sed 's/^setfacl: //'
	# default ACLs: inherited, the umask ignored
	mkdir d
	setfacl -d -m "u:$U:rwx,g::r-x,o::---" d
	show d
	umask 077
	touch d/f
	mkdir d/s
	mkfifo d/p
	ln -s f d/l
	tmpfile d t 0640
	python3 -c 'import os,sys; os.close(os.open(sys.argv[1], os.O_CREAT|os.O_WRONLY, 0o600))' d/o
	mkdir d/s/deeper
	show d/f d/s d/p d/t d/o d/s/deeper
	stat -c '%n %A' d/l
	can d/f
	can d/o
	setfacl -k d
	show d
	attr d system.posix_acl_default
	setfacl -k d 2>&1
	touch d/after
	show d/after
	# without a default ACL the umask holds
	umask 027
	touch u
	mkdir ud
	mkfifo up
	tmpfile . ut 0666
	stat -c '%n %A' u ud up ut
	attr u system.posix_acl_access
	umask 022
	# set-group-ID: cleared when one outside the group sets the ACL
	mkdir sg
	chown "$U" sg
	touch sg/in sg/out
	chown "$U:$U" sg/in
	chown "$U:root" sg/out
	chmod 2770 sg/in sg/out
	as setfacl -m u:nobody:r sg/in
	as setfacl -m u:nobody:r sg/out
	show sg/in sg/out
	# recursive
	setfacl -R -m "u:$U:rX" d
	acls d
	cd /
	set -e
}

mkdir "$T/host"
scenario "$T/host" >"$T/host.out" 2>&1
pfs_mount -o allow_other
mkdir "$MNT/s"
scenario "$MNT/s" >"$T/mnt.out" 2>&1
same_file "the scenario on pathfs prints what it prints on the host (ext4)" \
	"$T/host.out" "$T/mnt.out"
check "the scenario ran to its end" grep -qx '# file: ./s/deeper' "$T/mnt.out"

# specific answers, readable on their own
cd "$MNT/s"
check "named user entry grants fsgqa read+write" \
	bash -c "setfacl -m u:$U:rw,m::rw f && chmod o= f && [ \"\$(can f)\" = 'fsgqa on f: rw' ]"
check "a chmod cuts the mask, and fsgqa's access with it" \
	bash -c "chmod 600 f && [ \"\$(can f)\" = 'fsgqa on f: --' ] && getfacl -cp f | grep -qx 'mask::---'"
check "a folder made under a default ACL inherits it" \
	bash -c "mkdir dd && setfacl -d -m u:$U:rx dd && mkdir dd/x && getfacl -cp dd/x | grep -qx 'default:user:$U:r-x'"
umask 027
check "umask 027 without a default ACL: touch gives -rw-r-----" \
	bash -c "touch um && [ \"\$(stat -c %A um)\" = '-rw-r-----' ]"
check "umask 027 under a default ACL is ignored: -rw-r--r-- from the ACL" \
	bash -c "touch dd/um && [ \"\$(stat -c %A dd/um)\" = '-rw-r--r--' ] && getfacl -cp dd/um | grep -q '^user:$U:r-x'"
umask 022
cd /

# round trips on the mount: cp -a, rsync -A, tar --acls, pathfsctl cp/mv
acls "$MNT/s" >"$T/acls.orig"
check "cp -a keeps the ACLs" cp -a "$MNT/s" "$MNT/cpa"
same_file "cp -a: the copy's ACLs" "$T/acls.orig" <(acls "$MNT/cpa")
check "rsync -aA keeps the ACLs" rsync -aA "$MNT/s/" "$MNT/rs/"
same_file "rsync -aA: the copy's ACLs" "$T/acls.orig" <(acls "$MNT/rs")
check "tar --acls: packed" tar -C "$MNT/s" --acls -cf "$T/s.tar" .
mkdir "$MNT/tar"
check "tar --acls: unpacked" tar -C "$MNT/tar" --acls -xf "$T/s.tar"
same_file "tar --acls: the unpacked ACLs" "$T/acls.orig" <(acls "$MNT/tar")
check "cp -a from the host keeps the ACLs" cp -a "$T/host" "$MNT/fromhost"
same_file "cp -a from the host: the ACLs" <(acls "$T/host") <(acls "$MNT/fromhost")
check "pathfsctl cp -r (mounted) keeps the ACLs" "$PATHFSCTL" -s "$STORE" cp -r /s /ctlcp
same_file "pathfsctl cp -r: the copy's ACLs" "$T/acls.orig" <(acls "$MNT/ctlcp")
check "pathfsctl mv keeps the ACLs" "$PATHFSCTL" -s "$STORE" mv /ctlcp /ctlmv
same_file "pathfsctl mv: the moved ACLs" "$T/acls.orig" <(acls "$MNT/ctlmv")
mv "$MNT/ctlmv" "$MNT/renamed"
same_file "rename: the ACLs follow" "$T/acls.orig" <(acls "$MNT/renamed")
can "$MNT/s/d/f" >"$T/can.before"

# a remount keeps them, and the kernel enforces them again
pfs_umount
check "fsck is clean with ACLs stored" "$PATHFSCTL" -s "$STORE" fsck
pfs_mount -o allow_other
same_file "remount: the ACLs are kept" "$T/acls.orig" <(acls "$MNT/s")
same_file "remount: fsgqa's access is the same" "$T/can.before" <(can "$MNT/s/d/f")
check "remount: a moved folder's default ACL still passes on" \
	bash -c "mkdir '$MNT/renamed/d/s/new' && getfacl -cp '$MNT/renamed/d/s/new' | grep -qx 'default:user:$U:rwx'"
check "remount: a named entry still denies" \
	bash -c "[ \"\$(can '$MNT/s/g')\" = 'fsgqa on $MNT/s/g: r-' ]"
pfs_umount
sanitizer_clean
finish
