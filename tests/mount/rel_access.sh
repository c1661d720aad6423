#!/usr/bin/env bash
# rel_access.sh - access control through the mount. Without allow_other,
# other users cannot enter the mount at all; default_permissions is on by
# default, so with -o allow_other the kernel enforces mode bits: an
# unprivileged user (setpriv to nobody) is refused what they refuse, cannot
# read or change root's 0600 file, cannot chown, and a write by a non-owner
# clears setuid/setgid. The control socket's access (mode 0600, the daemon's
# peer-credential check): ctl_access.sh.
source "$(dirname "$0")/rel_lib.sh"

nb() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"
}
NOBODY=$(id -u nobody)
chmod 755 "$T" # mktemp -d made it 0700: let nobody reach the mountpoint

# ---- default: no allow_other ------------------------------------------------
rel_mount_fg
echo hello >"$MNT/hello"
check "default_permissions is on by default" \
	bash -c "grep ' $MNT ' /proc/mounts | grep -q default_permissions"
expect_errno EACCES "without allow_other nobody cannot enter the mount" \
	nb stat "$MNT/hello"
rel_umount_fg

# ---- allow_other ------------------------------------------------------------
rel_mount_fg -o allow_other
check "default_permissions stays on with allow_other" \
	bash -c "grep ' $MNT ' /proc/mounts | grep -q default_permissions"
mkdir -m 0777 "$MNT/pub"
mkdir -m 0755 "$MNT/rootdir"
mkdir -m 0700 "$MNT/secretdir"
echo inside >"$MNT/secretdir/f"
echo root-file >"$MNT/rootdir/f"
echo secret >"$MNT/priv.txt"
chmod 0600 "$MNT/priv.txt"
echo public >"$MNT/ro.txt"
chmod 0644 "$MNT/ro.txt"
echo s >"$MNT/suid"
chmod 06777 "$MNT/suid"
echo s >"$MNT/suid2"
chmod 04666 "$MNT/suid2"
cp "$MNT/ro.txt" "$T/ro.before"

check "nobody can read a 0644 file" \
	bash -c "setpriv --reuid=nobody --regid=nogroup --clear-groups cat '$MNT/ro.txt' >/dev/null"
expect_errno EACCES "nobody cannot read root's 0600 file" nb cat "$MNT/priv.txt"
expect_errno EACCES "nobody cannot append to root's 0600 file" \
	nb sh -c "echo x >>'$MNT/priv.txt'"
expect_errno EACCES "nobody cannot write root's 0644 file" \
	nb sh -c "echo x >'$MNT/ro.txt'"
expect_errno EACCES "nobody cannot truncate root's 0644 file" \
	nb truncate -s 0 "$MNT/ro.txt"
expect_errno EPERM "nobody cannot chmod root's file" nb chmod 0666 "$MNT/ro.txt"
expect_errno EPERM "nobody cannot chown root's file" nb chown nobody "$MNT/ro.txt"
# as on ext4: explicit times need ownership (EPERM), "now" write access
expect_errno EPERM "nobody cannot set root's file's times" \
	nb /usr/bin/python3 -c "import os, sys; os.utime(sys.argv[1], (1, 1))" "$MNT/ro.txt"
expect_errno EACCES "nobody cannot touch root's file to now" \
	nb /usr/bin/python3 -c "import os, sys; os.utime(sys.argv[1], None)" "$MNT/ro.txt"
expect_errno EACCES "nobody cannot create in a 0755 root folder" \
	nb touch "$MNT/rootdir/new"
expect_errno EACCES "nobody cannot remove from a 0755 root folder" \
	nb rm -f "$MNT/rootdir/f"
expect_errno EACCES "nobody cannot rename out of a 0755 root folder" \
	nb mv "$MNT/rootdir/f" "$MNT/pub/stolen"
expect_errno EACCES "nobody cannot list a 0700 folder" nb ls "$MNT/secretdir"
expect_errno EACCES "nobody cannot reach into a 0700 folder" \
	nb cat "$MNT/secretdir/f"
expect_errno EACCES "nobody cannot set a user xattr on root's file" \
	nb setfattr -n user.x -v 1 "$MNT/ro.txt"
check "root's files are unchanged" \
	bash -c "cmp -s '$MNT/ro.txt' '$T/ro.before' && [ \"\$(cat '$MNT/priv.txt')\" = secret ] && [ -e '$MNT/rootdir/f' ]"

check "nobody can create in a 0777 folder" nb sh -c "echo mine >'$MNT/pub/nob'"
check "the new file belongs to nobody" \
	[ "$(stat -c %u "$MNT/pub/nob")" = "$NOBODY" ]
check "nobody can chmod their own file" nb chmod 0600 "$MNT/pub/nob"
expect_errno EPERM "chown of one's own file to root by a non-root user" \
	nb chown 0 "$MNT/pub/nob"
expect_errno EPERM "chgrp to a group one is not in" nb chgrp root "$MNT/pub/nob"
check "root can chown it" chown 0:0 "$MNT/pub/nob"

check "nobody can write the 06777 file" nb sh -c "echo more >>'$MNT/suid'"
check "a write by a non-owner cleared setuid and setgid ($(stat -c %a "$MNT/suid"))" \
	[ "$(stat -c %a "$MNT/suid")" = 777 ]
check "nobody can write the 04666 file" nb sh -c "echo more >>'$MNT/suid2'"
check "a write by a non-owner cleared setuid ($(stat -c %a "$MNT/suid2"))" \
	[ "$(stat -c %a "$MNT/suid2")" = 666 ]
chmod 06777 "$MNT/suid"
check "truncate by a non-owner clears them too" \
	bash -c "setpriv --reuid=nobody --regid=nogroup --clear-groups truncate -s 1 '$MNT/suid' && [ \"\$(stat -c %a '$MNT/suid')\" = 777 ]"

mkdir "$MNT/sg" && chgrp nogroup "$MNT/sg" && chmod 2777 "$MNT/sg"
nb sh -c "echo x >'$MNT/sg/f'; mkdir '$MNT/sg/d'; ln -s f '$MNT/sg/l'"
check "a set-group-ID folder gives its group to what is made in it" \
	[ "$(stat -c %G "$MNT/sg/f" "$MNT/sg/d")" = "$(printf 'nogroup\nnogroup')" ]
check "  and its bit to a new folder ($(stat -c %a "$MNT/sg/d"))" \
	[ "$(stat -c %a "$MNT/sg/d")" = 2755 ]
touch "$MNT/pub/plain"
check "  not outside it" [ "$(stat -c %G "$MNT/pub/plain")" = root ]

check "daemon alive" rel_alive
rel_umount_fg
check "fsck clean" rel_fsck
rel_finish
