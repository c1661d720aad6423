# rel_lib.sh - what the reliability mount tests (rel_*.sh) share on top of
# lib.sh: sourced, never run (it is not in tests/meson.build's mount_tests).
#
# Runs the daemon in the foreground in the background ($DPID), its stderr in
# $DLOG, so a test can kill -9 it, read its log lines and see whether it is
# still alive. Finds the helpers (tests/helpers/rel_*.c) in $BUILD_DIR.
# shellcheck shell=bash
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

: "${BUILD_DIR:=$(dirname "$PATHFS")/../tests}"
REL_STRESS=$BUILD_DIR/rel_stress
REL_READDIR=$BUILD_DIR/rel_readdir
REL_SYNC=$BUILD_DIR/rel_sync
REL_PLANT=$BUILD_DIR/rel_plant
DLOG=$T/daemon.log
DPID=
# sanitizer builds: every program's reports go to $T/sanitizer.* (lib.sh)
if declare -F sanitizer_logs >/dev/null; then
	sanitizer_logs
fi

# rel_finish: counts a failure for any sanitizer report, then lib.sh's finish.
rel_finish() {
	if declare -F sanitizer_clean >/dev/null; then
		sanitizer_clean
	fi
	finish
}

# On exit: a sanitizer report or a crash message in the daemon's log fails the
# test and is shown (the log dies with $T), then lib.sh's cleanup runs.
rel_cleanup() {
	local rc=$? pat="ERROR: (Address|Leak)Sanitizer|runtime error:|(free|malloc|realloc)\(\): |double free or corruption"
	if [ -s "$DLOG" ] && grep -Eq "$pat" "$DLOG"; then
		echo "FAIL: the daemon reported memory errors:" >&2
		grep -E -A30 "$pat" "$DLOG" | head -n 60 >&2
		rc=1
	fi
	if [ "$rc" -ne 0 ] && [ -s "$DLOG" ]; then
		echo "--- last lines of the daemon's log:" >&2
		tail -n 15 "$DLOG" >&2
	fi
	cleanup
	exit "$rc"
}
trap rel_cleanup EXIT

# rel_mount_fg [pathfs options...]: mounts $STORE on $MNT with -f in the
# background; sets DPID; fails the test if the mount does not appear.
rel_mount_fg() {
	"$PATHFS" -f "$@" "$STORE" "$MNT" 2>>"$DLOG" &
	DPID=$!
	local i
	for i in $(seq 1 200); do
		mountpoint -q "$MNT" && return 0
		if ! kill -0 "$DPID" 2>/dev/null; then
			echo "FAIL: daemon exited before mounting:" >&2
			tail -n 5 "$DLOG" >&2
			exit 1
		fi
		sleep 0.05
	done
	echo "FAIL: mount did not appear" >&2
	exit 1
}

# rel_alive: the daemon started by rel_mount_fg runs and its mount answers.
rel_alive() {
	kill -0 "$DPID" 2>/dev/null && timeout 10 stat "$MNT" >/dev/null
}

# rel_umount_fg: unmounts and waits (at most 30 s) for the daemon to exit;
# fails the test if it hangs or exits non-zero (the unmount as
# pfs_fusermount_u does it).
rel_umount_fg() {
	local i rc=0 t0
	pfs_fusermount_u
	t0=$(date +%s%N)
	for i in $(seq 1 600); do
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.05
	done
	echo "# the daemon exited $((($(date +%s%N) - t0) / 1000000)) ms" \
		"after the unmount"
	if kill -0 "$DPID" 2>/dev/null; then
		echo "FAIL: daemon did not exit after unmount; its threads:" >&2
		pfs_threads "$DPID" >&2
		kill -9 "$DPID"
		exit 1
	fi
	wait "$DPID" || rc=$?
	DPID=
	if [ "$rc" -ne 0 ]; then
		echo "FAIL: daemon exited with status $rc" >&2
		tail -n 5 "$DLOG" >&2
		exit 1
	fi
}

# rel_kill9: kill -9 of the daemon, then the kernel side of the mount goes.
rel_kill9() {
	kill -9 "$DPID" 2>/dev/null || true
	wait "$DPID" 2>/dev/null || true
	DPID=
	fusermount3 -u -z "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
}

# rel_fsck: pathfsctl fsck of the store (through the daemon when mounted);
# prints its output on failure. Status: pathfsctl's.
rel_fsck() {
	local out rc=0
	out=$(timeout 120 "$PATHFSCTL" -s "$STORE" "$@" fsck 2>&1) || rc=$?
	[ "$rc" -eq 0 ] || printf '%s\n' "$out" >&2
	return "$rc"
}

# rel_tree_sum DIR: one line per file under DIR with its size and sha256 and
# one per folder/symlink, sorted: "nothing written" compares two of these.
rel_tree_sum() {
	(cd "$1" && find . -printf '%y %p %s %m\n' | LC_ALL=C sort &&
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
}

# tests/helpers/saver.py (rel_replace, rel_revalidate): a writer saving
# versions of a file while readers open and read it; prints "reads missing
# partial fdfail saves". saver_clean: the line, read into those variables,
# says some reads and no failure.
SAVER=$TESTS_DIR/helpers/saver.py
saver_clean() {
	[ "${reads:-0}" -gt 0 ] && [ "${missing:-x}" = 0 ] &&
		[ "${partial:-x}" = 0 ] && [ "${fdfail:-x}" = 0 ]
}
