#!/usr/bin/env bash
# rel_log.sh - the daemonized daemon's log is never lost. Run in a private
# mount namespace whose /dev is a tmpfs holding only the device nodes the
# test needs, so whether a syslog daemon listens on /dev/log is up to the
# test: with none, the log goes to STORE/pathfs.log, with one (a listener of
# our own), to syslog; -o log=FILE and -o log=stderr send it there;
# -o log=syslog with no listener is refused. In each case the error about a
# damaged record (planted with tests/helpers/rel_plant.c) must reach the log,
# and the log's mount line names where it goes. A successful mount prints
# nothing (as mount(8) and other filesystems: test suites compare what a
# mount prints), except to a terminal (script(1) gives it one), where it
# says where the log goes.
if [ -z "${PATHFS_REL_LOG_NS:-}" ]; then
	PATHFS_REL_LOG_NS=1 exec unshare -m --propagation private "$0" "$@"
fi
source "$(dirname "$0")/lib.sh"

: "${BUILD_DIR:=$(dirname "$PATHFS")/../tests}"

# /dev of our own: the nodes the test and the daemon use, and no /dev/log
mkdir "$T/dev"
mount -t tmpfs -o mode=0755 tmpfs "$T/dev"
for n in null zero full random urandom fuse tty; do
	[ -e "/dev/$n" ] || continue
	touch "$T/dev/$n"
	mount --bind "/dev/$n" "$T/dev/$n"
done
ln -s /proc/self/fd "$T/dev/fd"
# terminals for script(1): a devpts instance of the namespace's own
mkdir "$T/dev/pts"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$T/dev/pts"
ln -s pts/ptmx "$T/dev/ptmx"
mount --move "$T/dev" /dev
check "no /dev/log in the test's namespace" test ! -e /dev/log

# a first mount creates the store; a file whose node the test damages
"$PATHFS" "$STORE" "$MNT" 2>"$T/out1"
cat "$T/out1"
check "a mount prints nothing about the mount when stderr is no terminal" \
	bash -c "! grep -q 'mounted' '$T/out1'"
echo victim >"$MNT/bad-node"
pfs_umount
check "the log file has the mount (naming itself) and the unmount" \
	bash -c "grep -q 'mounted drive main of $STORE on $MNT (log: $STORE/pathfs.log)' '$STORE/pathfs.log' && grep -q 'unmounted $MNT' '$STORE/pathfs.log'"

# at a terminal, the mount says where the log goes
script -qec "'$PATHFS' '$STORE' '$MNT'" /dev/null >"$T/tty1" </dev/null
cat "$T/tty1"
check "at a terminal, the mount message says the log goes to STORE/pathfs.log" \
	grep -q "mounted drive main of $STORE on $MNT (log: $STORE/pathfs.log)" "$T/tty1"
pfs_umount
check "the log file is the owner's alone" \
	[ "$(stat -c %a "$STORE/pathfs.log")" = 600 ]
"$BUILD_DIR/rel_plant" node "$STORE" main /bad-node

# damaged_logged WHERE FILE: reading the damaged node fails with EIO and a
# line naming it reaches FILE
damaged_logged() {
	local where=$1 file=$2 i
	expect_errno EIO "reading the damaged node ($where)" cat "$MNT/bad-node"
	for i in $(seq 1 50); do
		grep -q "bad-node" "$file" 2>/dev/null && break
		sleep 0.1
	done
	check "the error about the damaged record reaches $where" \
		grep -q "bad-node" "$file"
}

# no syslog daemon: STORE/pathfs.log
pfs_mount 2>/dev/null
damaged_logged "STORE/pathfs.log" "$STORE/pathfs.log"
pfs_umount

# -o log=FILE, relative to where pathfs is started
mkdir "$T/logs"
(cd "$T/logs" && "$PATHFS" -o log=my.log "$STORE" "$MNT") 2>"$T/out2"
check "-o log=FILE: nothing printed, the file's mount line names it" \
	bash -c "[ ! -s '$T/out2' ] && grep -q '(log: $T/logs/my.log)' '$T/logs/my.log'"
damaged_logged "-o log=FILE" "$T/logs/my.log"
pfs_umount

# -o log=stderr: the daemon keeps its stderr
"$PATHFS" -o log=stderr "$STORE" "$MNT" 2>"$T/stderr.log"
damaged_logged "-o log=stderr" "$T/stderr.log"
pfs_umount

# -o log=syslog with nobody listening: refused, nothing mounted
rc=0
out=$("$PATHFS" -o log=syslog "$STORE" "$MNT" 2>&1) || rc=$?
check "-o log=syslog with no syslog daemon is refused ($out)" \
	bash -c "[ $rc -ne 0 ] && ! mountpoint -q '$MNT' && grep -q /dev/log <<<'$out'"

# a syslog daemon listening on /dev/log: syslog is the default
# (python3 may be lib.sh's function: $! must be the listener itself)
py=$(command -v /usr/bin/python3 || command -v python3)
"$py" - "$T/syslog.txt" <<'EOF' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
with open(sys.argv[1], "ab", buffering=0) as f:
    while True:
        f.write(s.recv(4096) + b"\n")
EOF
listener=$!
for i in $(seq 1 50); do [ -S /dev/log ] && break; sleep 0.1; done
"$PATHFS" "$STORE" "$MNT" 2>"$T/out3"
damaged_logged "syslog" "$T/syslog.txt"
check "with a syslog daemon, nothing printed, syslog has the mount line" \
	bash -c "[ ! -s '$T/out3' ] && grep -q '(log: syslog)' '$T/syslog.txt'"
pfs_umount
kill "$listener"
wait "$listener" 2>/dev/null || true
check "with syslog, nothing went to STORE/pathfs.log" \
	bash -c "[ \$(grep -c 'log: syslog' '$STORE/pathfs.log') = 0 ]"
finish
