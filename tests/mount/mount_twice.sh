#!/usr/bin/env bash
# mount_twice.sh - a store mounted twice (xfstests generic/732): as on ext4,
# where a second mount of a mounted device is the same superblock, `pathfs
# STORE MNT2` while a daemon serves STORE makes MNT2 another mount of that
# daemon's FUSE connection (a bind mount; fs/second.c): no second daemon,
# silent, exit 0. generic/732's renames through both; pathfsctl still works;
# either mount can go first and the daemon serves the other until the last
# one goes, then exits with everything durable; a -o ro second mount refuses
# writes while the first writes; another drive, rw of a read-only daemon and
# a different allow_other are refused with one line; mount(8) with type
# fuse.pathfs and fuse (fstab) do the same; a non-root user keeps the
# refusal of a store in use; a signal to the daemon ends all of its mounts
# (bind mounts by hand too), a busy one lazily, and only those (not a mount
# that took its device number after its last unmount).
source "$(dirname "$0")/lib.sh"
sanitizer_logs

chmod 755 "$T" # the unprivileged user below must reach its mountpoint
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
M2=$T/mnt2
M3=$T/mnt3
mkdir -p "$M2" "$M3" "$T/bin"
ln -sf "$PATHFS" "$T/bin/pathfs" # mount.fuse3 runs pathfs from PATH

# daemons PATTERN: how many pathfs daemons' command lines match PATTERN
daemons() { pgrep -fc "pathfs .*$1" || true; }
# conn_dev DIR: the device of the mount on DIR
conn_dev() { stat -c %d "$1"; }
# flags DIR: the mount options of the topmost mount on DIR
flags() { awk -v m="$1" '$2 == m {f = $4} END {print f}' /proc/mounts; }
# has_flags DIR FLAG...: the mount on DIR has every FLAG
has_flags() {
	local f all
	all=",$(flags "$1"),"
	shift
	for f; do [[ "$all" == *",$f,"* ]] || return 1; done
}
# gone PATTERN: waits until no daemon matches PATTERN (the store closed)
gone() {
	local i
	for i in $(seq 1 200); do
		[ "$(daemons "$1")" = 0 ] && return 0
		sleep 0.05
	done
	return 1
}
# refused DESCRIPTION MOUNTPOINT PATTERN COMMAND...: COMMAND fails with one
# line on stderr matching PATTERN and mounts nothing on MOUNTPOINT
refused() {
	local what=$1 mp=$2 pat=$3 rc=0
	shift 3
	timeout 30 "$@" >"$T/out" 2>"$T/err" </dev/null || rc=$?
	check "$what: non-zero exit ($rc)" [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
	check "$what: one line: $(head -n 1 "$T/err")" \
		[ "$(grep -c . "$T/err")" -eq 1 ]
	check "$what: it says why" grep -Eqi "$pat" "$T/err"
	check "$what: nothing mounted" bash -c "! mountpoint -q '$mp'"
}

# ---- generic/732: the same store on two mountpoints ------------------------
pfs_mount
rc=0
"$PATHFS" "$STORE" "$M2" >"$T/out" 2>"$T/err" || rc=$?
check "a second mount of a mounted store succeeds (exit $rc: $(head -n 1 "$T/err"))" \
	[ "$rc" -eq 0 ]
check "... silently" [ ! -s "$T/out" -a ! -s "$T/err" ]
check "... is mounted" mountpoint -q "$M2"
check "... is the first mount's connection (same device)" \
	[ "$(conn_dev "$M2")" = "$(conn_dev "$MNT")" ]
check "... served by the one daemon" [ "$(daemons "$T/store")" = 1 ]
check "... listed as fuse.pathfs of the store" \
	grep -q " $M2 fuse.pathfs " /proc/mounts
check "... with libfuse's default flags (nosuid,nodev)" \
	has_flags "$M2" nosuid nodev
mkdir "$MNT/A" "$MNT/B"
touch "$MNT/A/f"
mv "$MNT/A/f" "$MNT/B/"
check "generic/732: cat through the second mount" cat "$M2/B/f"
check "generic/732: mv through the second mount" mv "$M2/B/f" "$M2/A/"
check "generic/732: cat through the first" cat "$MNT/A/f"
check "generic/732: mv through the first" mv "$MNT/A/f" "$MNT/B/"
check "generic/732: both agree" \
	bash -c "[ -e '$M2/B/f' ] && [ ! -e '$M2/A/f' ] && [ -e '$MNT/B/f' ]"
echo written-by-2 >"$M2/B/g"
check "a write through one is read through the other" \
	[ "$(cat "$MNT/B/g")" = written-by-2 ]
check "pathfsctl reaches the daemon" \
	bash -c "'$PATHFSCTL' -s '$STORE' ls /B | grep -q ' g$'"

# ---- a read-only second mount ----------------------------------------------
rc=0
"$PATHFS" -o ro "$STORE" "$M3" 2>"$T/err" || rc=$?
check "a -o ro second mount (exit $rc: $(head -n 1 "$T/err"))" [ "$rc" -eq 0 ]
check "... is read-only" has_flags "$M3" ro
check "... while the first stays rw" has_flags "$MNT" rw
expect_errno EROFS "-o ro second mount: create" touch "$M3/new"
expect_errno EROFS "-o ro second mount: write" bash -c "echo x >>'$M3/B/g'"
expect_errno EROFS "-o ro second mount: rename" mv "$M3/B/g" "$M3/B/h"
echo more >>"$MNT/B/g"
check "the first mount writes meanwhile, the ro mount reads it" \
	[ "$(tail -n 1 "$M3/B/g")" = more ]
check "... and the second rw mount still writes" touch "$M2/B/w2"
check "unmount the ro mount" pfs_unmount fusermount3 -u "$M3"
check "... the daemon serves on" [ "$(daemons "$T/store")" = 1 ]

# ---- refused: not what the daemon serves -------------------------------------
refused "another drive" "$M3" "in use.*drive main.*not other" \
	"$PATHFS" -o drive=other "$STORE" "$M3"
refused "another allow_other" "$M3" "in use.*allow_other" \
	"$PATHFS" -o allow_other "$STORE" "$M3"
check "the store has no drive 'other' (nothing was made)" \
	bash -c "! '$PATHFSCTL' -s '$STORE' drives | grep -qw other"
# a non-root user cannot bind mounts: the refusal of a store in use
chown nobody "$M3"
refused "a non-root second mount" "$M3" "in use|permission" \
	"${NOBODY[@]}" "$PATHFS" "$STORE" "$M3"
chown root "$M3"

# ---- unmount order: the second mount goes first -----------------------------
check "unmount the second mount" pfs_unmount fusermount3 -u "$M2"
check "... the daemon serves on" [ "$(daemons "$T/store")" = 1 ]
check "... the first mount works" bash -c "echo after >'$MNT/B/after' && [ \"\$(cat '$MNT/B/after')\" = after ]"

# ---- unmount order: the first mount goes first -------------------------------
check "mount it twice again" "$PATHFS" "$STORE" "$M2"
pfs_unmount fusermount3 -u "$MNT"
sleep 0.3
check "unmount the first mount: the daemon serves on" \
	[ "$(daemons "$T/store")" = 1 ]
check "... the second mount writes" \
	bash -c "seq 1 20000 >'$M2/B/late' && mkdir '$M2/late.d'"
check "... and renames" mv "$M2/B/late" "$M2/late.d/late"
check "a third mount while the first mountpoint is gone (binds the second)" \
	"$PATHFS" -o ro "$STORE" "$M3"
check "... same connection" [ "$(conn_dev "$M3")" = "$(conn_dev "$M2")" ]
check "... reads" cmp "$M3/late.d/late" <(seq 1 20000)
check "unmount the third" pfs_unmount fusermount3 -u "$M3"
check "unmount the last mount" pfs_unmount fusermount3 -u "$M2"
check "... the daemon exits" gone "$T/store"
pfs_mount
check "nothing lost: remounted, the late write is there" \
	cmp "$MNT/late.d/late" <(seq 1 20000)
check "... and the others" \
	bash -c "[ \"\$(cat '$MNT/B/after')\" = after ] && [ -e '$MNT/B/w2' ] && [ -e '$MNT/B/f' ]"
check "fsck is clean" pfs_fsck

# ---- mount(8), as fstab lines do ----------------------------------------------
# (mount(8) runs mount.fuse3 with a PATH of its own, which finds the
# installed pathfs: run mount.fuse3 as it does, with ours first in PATH)
rc=0
PATH="$T/bin:$PATH" /sbin/mount.fuse3 "$STORE" "$M2" -t pathfs \
	-o rw,relatime,defaults,_netdev,nofail 2>"$T/err" || rc=$?
check "mount.fuse3 STORE MNT2 -t pathfs, as for fuse.pathfs in fstab (exit $rc: $(head -n 1 "$T/err"))" \
	[ "$rc" -eq 0 ]
check "... same connection" [ "$(conn_dev "$M2")" = "$(conn_dev "$MNT")" ]
check "... reads" [ "$(cat "$M2/B/after" 2>/dev/null)" = after ]
check "umount(8) it" pfs_unmount umount "$M2"
rc=0
mount -t fuse "$PATHFS#$STORE" "$M2" -o ro,noexec,drive=main 2>"$T/err" || rc=$?
check "mount -t fuse 'pathfs#STORE' -o ro,noexec (exit $rc: $(head -n 1 "$T/err"))" \
	[ "$rc" -eq 0 ]
check "... ro and noexec" has_flags "$M2" ro noexec
expect_errno EROFS "... refuses writes" touch "$M2/x"
check "umount(8) it" pfs_unmount umount "$M2"
check "the daemon serves on" [ "$(daemons "$T/store")" = 1 ]

# a connection made read-only since (mount -o remount,ro of the first) takes
# no read-write mount, as ext4's superblock would not
check "remount the first mount read-only" \
	"$PATHFS" -o remount,ro "$STORE" "$MNT"
refused "rw asked of a connection remounted read-only" "$M2" "read-only" \
	"$PATHFS" "$STORE" "$M2"
check "-o ro asked of it: mounted" "$PATHFS" -o ro "$STORE" "$M2"
check "unmount it" pfs_unmount fusermount3 -u "$M2"
check "remount the first read-write" "$PATHFS" -o remount,rw "$STORE" "$MNT"
check "... it writes" touch "$MNT/rw-again"
pfs_umount

# ---- a daemon serving read-only ----------------------------------------------
pfs_mount -o ro
refused "rw asked of a read-only daemon" "$M2" "read-only" \
	"$PATHFS" "$STORE" "$M2"
check "-o ro asked of it: mounted" "$PATHFS" -o ro "$STORE" "$M2"
check "... same connection" [ "$(conn_dev "$M2")" = "$(conn_dev "$MNT")" ]
check "unmount it" pfs_unmount fusermount3 -u "$M2"
pfs_umount

# ---- a signal ends every mount of the daemon ---------------------------------
# SIGTERM (or SIGINT, SIGHUP) to a daemon serving a second mount and a user's
# `mount --bind` unmounts them all, not only its first mountpoint (they
# stayed, answering ENOTCONN), a busy one lazily as libfuse unmounts the
# first (umount -l: gone from the table, its user keeps a dead cwd); then the
# store reopens with everything written. (SIGKILL cannot be handled.)
M4=$T/mnt4
mkdir -p "$M4"
# conn_mounts MAJ:MIN: how many mounts of that device the mount table has
conn_mounts() { awk -v d="$1" '$3 == d' /proc/self/mountinfo | grep -c . || true; }
# dies PID: waits up to 20 s for PID to exit
dies() {
	local i
	for i in $(seq 1 400); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
	return 1
}
# signal_ends_all SIGNAL FIRST_TOO: mounts $STORE on $MNT, $M2 (a second
# mount) and $M4 (mount --bind of $M2), writes through each, makes $M2 busy,
# unmounts $MNT first unless FIRST_TOO is yes, sends SIGNAL to the daemon
signal_ends_all() {
	local sig=$1 first=$2 pid dev busy
	# a signal ignored where the daemon starts (nohup: SIGHUP; a runner
	# may start the tests so) stays ignored, as libfuse leaves it: this
	# daemon gets it at its default, as from a login shell
	env --default-signal="$sig" "$PATHFS" "$STORE" "$MNT"
	check "$sig: mounted" mountpoint -q "$MNT"
	pid=$(pfs_pid)
	check "$sig: a second mount" "$PATHFS" "$STORE" "$M2"
	check "$sig: a mount --bind of it" mount --bind "$M2" "$M4"
	dev=$(stat -c '%Hd:%Ld' "$MNT")
	check "$sig: three mounts of the connection" [ "$(conn_mounts "$dev")" = 3 ]
	seq 1 30000 >"$MNT/$sig.1"
	seq 2 30000 >"$M2/$sig.2"
	mkdir "$M4/$sig.d" && echo bound >"$M4/$sig.d/f"
	if [ "$first" != yes ]; then
		check "$sig: unmount the first mountpoint" pfs_unmount fusermount3 -u "$MNT"
	fi
	(cd "$M2" && exec sleep 60) &
	busy=$!
	sleep 0.2
	kill "-$sig" "$pid"
	check "$sig: the daemon exits" dies "$pid"
	check "$sig: no mount of its connection is left ($(conn_mounts "$dev"))" \
		[ "$(conn_mounts "$dev")" = 0 ]
	check "$sig: none on the three mountpoints" bash -c \
		"! mountpoint -q '$MNT' && ! mountpoint -q '$M2' && ! mountpoint -q '$M4'"
	kill "$busy" 2>/dev/null || true
	wait "$busy" 2>/dev/null || true
	pfs_mount
	check "$sig: remounted, everything written is there" bash -c \
		"cmp -s '$MNT/$sig.1' <(seq 1 30000) && cmp -s '$MNT/$sig.2' <(seq 2 30000) && [ \"\$(cat '$MNT/$sig.d/f')\" = bound ]"
	pfs_umount
}
signal_ends_all TERM yes
signal_ends_all INT yes
signal_ends_all HUP no

# A daemon whose last mount was unmounted leaves alone a mount that took its
# connection's device number meanwhile (the kernel frees it at the unmount
# and gives the lowest free one to the next mount): the daemon is stopped
# while its mount goes and another store is mounted, then let go. tmpfs
# mounts take the free numbers below it first (other processes here mount
# and unmount too; a try whose number went elsewhere is done again).
M5=$T/mnt5
mkdir -p "$M5"
reused=no
for i in $(seq 1 10); do
	pfs_mount
	pid=$(pfs_pid)
	dev=$(stat -c '%Hd:%Ld' "$MNT")
	kill -STOP "$pid"
	pfs_unmount fusermount3 -u "$MNT"
	for j in $(seq 1 20); do
		mkdir -p "$T/fill$j"
		mount -t tmpfs fill "$T/fill$j"
		if [ "$(stat -c '%Hd:%Ld' "$T/fill$j")" = "$dev" ]; then
			umount "$T/fill$j"
			break
		fi
	done
	"$PATHFS" "$T/store5" "$M5"
	[ "$(stat -c '%Hd:%Ld' "$M5")" = "$dev" ] && reused=yes
	for j in $(seq 1 20); do
		! mountpoint -q "$T/fill$j" || umount "$T/fill$j"
	done
	kill -CONT "$pid"
	check "a daemon unmounted while stopped exits once let go" dies "$pid"
	[ "$reused" = yes ] && break
	pfs_unmount fusermount3 -u "$M5"
	gone "$T/store5"
done
echo "# tries: $i"
check "the next mount took the device number ($dev) of the unmounted one" \
	[ "$reused" = yes ]
check "... and stays mounted when the old daemon exits" mountpoint -q "$M5"
check "... and serves" bash -c "echo x >'$M5/x' && [ \"\$(cat '$M5/x')\" = x ]"
pfs_unmount fusermount3 -u "$M5"
gone "$T/store5"
check "fsck is clean" pfs_fsck
sanitizer_clean
finish
