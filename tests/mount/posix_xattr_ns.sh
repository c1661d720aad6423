#!/usr/bin/env bash
# posix_xattr_ns.sh - extended attribute namespaces as ext4 keeps them
# (fs/xattrs.c): user., trusted. and security. names set and read by root,
# system.foo and foo.x refused (EOPNOTSUPP), a prefix with no name after it
# refused (EINVAL), and trusted.* names listed only to a caller with
# CAP_SYS_ADMIN: the same cases (tests/helpers/xattr_ns.py) run on an ext4
# loop image and in the mount, as root and as another user, and must print
# the same line for line.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

XNS=$TESTS_DIR/helpers/xattr_ns.py
chmod 755 "$T" # let nobody reach both folders (allow_other below)
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)

# cases DIR: the cases on DIR/f, by root, then looked at by root and nobody
cases() {
	echo x >"$1/f"
	chmod 644 "$1/f"
	echo "== root sets"
	python3 "$XNS" set "$1/f"
	echo "== root looks"
	python3 "$XNS" look "$1/f"
	echo "== nobody looks"
	"${NOBODY[@]}" /usr/bin/python3 "$XNS" look "$1/f"
}

truncate -s 64M "$T/ext4.img"
mkfs.ext4 -q -F "$T/ext4.img"
mkdir "$T/host"
mount -o loop "$T/ext4.img" "$T/host"
chmod 755 "$T/host"
cases "$T/host" >"$T/host.out" 2>&1
umount "$T/host"

pfs_mount -o allow_other
chmod 755 "$MNT"
cases "$MNT" >"$T/mnt.out" 2>&1
same_file "the cases on pathfs answer what ext4 answers" \
	"$T/host.out" "$T/mnt.out"
check "nobody's list has no trusted.* name" \
	bash -c "sed -n '/== nobody/,\$p' '$T/mnt.out' | grep '^list' |
		grep -qv trusted"
check "root's list has trusted.t" \
	bash -c "grep '^list' '$T/mnt.out' | head -n 1 | grep -q trusted.t"
pfs_umount
check "fsck is clean" pfs_fsck
sanitizer_clean
finish
