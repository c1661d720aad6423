#!/usr/bin/env bash
# posix_mountopts.sh - mount options as /etc/fstab gives them: through
# mount(8) (`mount -t fuse PATHFS#STORE MNT -o ...`, which runs mount.fuse3)
# and mount.fuse3 itself, every option mount(8) passes is accepted (atime
# family, nosuid/nodev/noexec and their opposites, defaults, _netdev, nofail,
# noauto, users, x-*, comment=, lazytime, ...) and only an unknown one is
# refused, by name. nosuid, nodev and noexec take effect (shown against a
# mount with suid,dev,exec), and so do relatime, strictatime, noatime and
# nodiratime. The mount's source is the store, so findmnt -S and mount -a
# know it is mounted. mount -o remount changes the flags (ro, rw, ...) of the
# mounted drive in place: the same daemon serves it.
source "$(dirname "$0")/lib.sh"

chmod 755 "$T" # the unprivileged user below must reach the mount
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)

# fstab_mount OPTIONS: mount(8) the way an fstab line with type fuse does
fstab_mount() {
	mount -t fuse "$PATHFS#$STORE" "$MNT" -o "$1" 2>"$T/mount.err"
}
unmount() {
	pfs_unmount umount "$MNT"
	local i
	for i in $(seq 1 200); do
		pgrep -f "pathfs .*$MNT" >/dev/null || return 0
		sleep 0.05
	done
}
mount_flags() { awk -v m="$MNT" '$2 == m {print $4}' /proc/mounts; }
has_flag() { [[ ",$(mount_flags)," == *",$1,"* ]]; }
not_flags() {
	local f
	for f; do ! has_flag "$f" || return 1; done
}

# ---- everything an fstab line may carry ------------------------------------
opts="defaults,relatime,nodiratime,lazytime,async,_netdev,nofail,noauto,users"
opts+=",x-systemd.automount,x-systemd.requires=network.target,comment=pathfs"
opts+=",nosuid,nodev,exec,allow_other"
rc=0
fstab_mount "$opts" || rc=$?
check "mount(8) with fstab options ($opts)" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || { cat "$T/mount.err" >&2; finish; exit 1; }
check "nosuid is a mount flag" has_flag nosuid
check "nodev is a mount flag" has_flag nodev

# a set-user-ID copy of id(1), a device node like /dev/null, a script
cp /usr/bin/id "$MNT/id"
chmod 4755 "$MNT/id"
mknod "$MNT/null" c 1 3
chmod 666 "$MNT/null"
printf '#!/bin/sh\necho ran\n' >"$MNT/run.sh"
chmod 755 "$MNT/run.sh"
check "nosuid: a set-user-ID program runs without the owner's id" \
	[ "$("${NOBODY[@]}" "$MNT/id" -u)" = "$(id -u nobody)" ]
check "nodev: a device node cannot be opened" \
	bash -c "! echo x 2>/dev/null >'$MNT/null'"
check "exec: programs run" [ "$("$MNT/run.sh")" = ran ]

# relatime (the default) and nodiratime
mkdir "$MNT/d"
echo data >"$MNT/d/f"
sleep 1.1
a0=$(stat -c %X "$MNT/d/f")
d0=$(stat -c %X "$MNT/d")
cat "$MNT/d/f" >/dev/null
ls "$MNT/d" >/dev/null
a1=$(stat -c %X "$MNT/d/f")
check "relatime: the first read after a change sets atime" [ "$a1" -gt "$a0" ]
check "nodiratime: listing a folder keeps its atime" \
	[ "$(stat -c %X "$MNT/d")" = "$d0" ]
sleep 1.1
cat "$MNT/d/f" >/dev/null
check "relatime: a read after that does not" [ "$(stat -c %X "$MNT/d/f")" = "$a1" ]
unmount

# ---- the opposites: suid, dev, noexec; strictatime; folders get atimes -----
rc=0
fstab_mount "suid,dev,noexec,strictatime,allow_other" || rc=$?
check "mount(8) with suid,dev,noexec,strictatime" [ "$rc" -eq 0 ]
check "noexec is a mount flag" has_flag noexec
check "nosuid and nodev are not" not_flags nosuid nodev
expect_errno EACCES "noexec: a program does not run" "$MNT/run.sh"
check "dev: the device node opens" bash -c "echo x >'$MNT/null'"
a0=$(stat -c %X "$MNT/d/f")
d0=$(stat -c %X "$MNT/d")
sleep 1.1
cat "$MNT/d/f" >/dev/null
a1=$(stat -c %X "$MNT/d/f")
sleep 1.1
cat "$MNT/d/f" >/dev/null
a2=$(stat -c %X "$MNT/d/f")
check "strictatime: every read sets atime ($a0 $a1 $a2)" \
	test "$a1" -gt "$a0" -a "$a2" -gt "$a1"
ls "$MNT/d" >/dev/null
check "without nodiratime, listing a folder sets its atime" \
	[ "$(stat -c %X "$MNT/d")" -gt "$d0" ]
unmount

rc=0
fstab_mount "suid,exec,allow_other" || rc=$?
check "suid: the set-user-ID program runs with its owner's id" \
	[ "$("${NOBODY[@]}" "$MNT/id" -u)" = 0 ]
unmount

# ---- noatime ----------------------------------------------------------------
fstab_mount "noatime,nodiratime"
echo new >"$MNT/d/f"
a0=$(stat -c %X "$MNT/d/f")
sleep 1.1
cat "$MNT/d/f" >/dev/null
check "noatime: a read keeps atime" [ "$(stat -c %X "$MNT/d/f")" = "$a0" ]
check "noatime is a mount flag" has_flag noatime
unmount

# ---- mount.fuse3 run directly, as an fstab line of type fuse.pathfs does ---
mkdir -p "$T/bin"
ln -sf "$PATHFS" "$T/bin/pathfs"
rc=0
PATH="$T/bin:$PATH" /sbin/mount.fuse3 "$STORE" "$MNT" -t pathfs \
	-o "drive=main,rw,relatime,nodiratime,nosuid,nodev,noexec,defaults,_netdev,x-gvfs-hide,nofail,user,nouser,users,owner,group,lazytime,iversion,silent" \
	2>"$T/mount.err" || rc=$?
check "mount.fuse3 with fstab options" [ "$rc" -eq 0 ]
check "... serves the drive" [ "$(cat "$MNT/d/f" 2>/dev/null)" = new ]
# the mount's source is the store, as the fstab line names it: findmnt -S
# finds it, and mount -a leaves the mounted line alone (it compares sources)
src=$(realpath "$STORE")
check "the mount's source is the store ($(findmnt -rn -o SOURCE "$MNT"))" \
	[ "$(findmnt -rn -S "$src" -o TARGET)" = "$MNT" ]
printf '%s %s fuse.pathfs drive=main,nofail 0 0\n' "$src" "$MNT" >"$T/fstab"
rc=0
mount -a -T "$T/fstab" 2>"$T/mount.err" || rc=$?
check "mount -a skips the mounted line ($(cat "$T/mount.err"))" \
	[ "$rc" -eq 0 -a ! -s "$T/mount.err" ]
unmount

# ---- mount -o remount: the same daemon, new flags ---------------------------
# (mount(8) runs mount.fuse3, which runs pathfs with -o remount,...)
fstab_mount "nosuid,allow_other"
echo one >"$MNT/r"
pid=$(pgrep -f "pathfs .*$MNT")
remount() { mount -t fuse "$PATHFS#$STORE" "$MNT" -o "remount,$1" 2>"$T/mount.err"; }
exec 3>>"$MNT/r"
rc=0
remount ro || rc=$?
check "remount,ro with a file open for writing is refused, as on ext4 ($(cat "$T/mount.err"))" \
	bash -c "[ $rc -ne 0 ] && grep -q 'busy' '$T/mount.err'"
exec 3>&-
rc=0
remount ro || rc=$?
check "remount,ro ($(cat "$T/mount.err"))" [ "$rc" -eq 0 ]
check "ro is a mount flag" has_flag ro
expect_errno EROFS "a write after remount,ro" bash -c "echo two >>'$MNT/r'"
expect_errno EROFS "a create after remount,ro" touch "$MNT/new"
check "reads go on after remount,ro" [ "$(cat "$MNT/r")" = one ]
rc=0
remount rw || rc=$?
check "remount,rw ($(cat "$T/mount.err"))" [ "$rc" -eq 0 ]
check "rw again, nosuid dropped (mount.fuse3 names suid)" \
	bash -c "[[ ',$(mount_flags),' == *,rw,* ]] && ! [[ ',$(mount_flags),' == *,nosuid,* ]]"
echo two >>"$MNT/r"
check "writes after remount,rw" [ "$(cat "$MNT/r")" = "one
two" ]
check "the same daemon serves it, and only it" \
	[ "$(pgrep -f "pathfs .*$MNT")" = "$pid" ]
unmount
rc=0
out=$("$PATHFS" -o remount,ro "$STORE" "$MNT" 2>&1) || rc=$?
check "remount of what is no pathfs mount is refused ($out)" \
	bash -c "[ $rc -ne 0 ] && ! mountpoint -q '$MNT'"

# ---- an unknown option is refused, by name ---------------------------------
rc=0
out=$("$PATHFS" -o relatime,frobnicate "$STORE" "$MNT" 2>&1) || rc=$?
refused_by_name() { [ "$rc" -ne 0 ] && grep -q frobnicate <<<"$out"; }
check "an unknown option is refused, naming it ($out)" refused_by_name
check "... and nothing is mounted" bash -c "! mountpoint -q '$MNT'"
finish
