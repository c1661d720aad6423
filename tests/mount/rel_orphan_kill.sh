#!/usr/bin/env bash
# rel_orphan_kill.sh - crashes between any two commits of the operations that
# make, keep and reclaim orphans (issue 10.6): an inode's last name and its
# INODE record or orphan mark must go in one batch, or a crash between two
# leaks an INODE record ("no link points to it and it is not an orphan").
# Each round mounts with the store's fault hook PATHFS_CRASH_AFTER_COMMITS=N
# (N random: the daemon kills itself with SIGKILL right after its Nth commit,
# whatever operation it belongs to) under three orphan_load.py loads (saves
# over open and hard-linked files, RENAME_EXCHANGE, open+unlink+write+close,
# links, rmdir and rename over open folders, setattr and xattrs by node id),
# rel_kill9's load (rel_stress --shared-only, a 100-entry folder holding a
# hard link renamed back and forth in batches of 8), and a loop of cp -a and
# pathfsctl rm -r (with a file of the branch open) on the mounted drive; if
# N was not reached in time it is kill -9. Then:
# remount (which reclaims the orphans), fsck clean mounted and unmounted, and
# no ORPHAN# key left after a clean unmount.
#
# REL_ORPHAN_KILL_ROUNDS (default 10) rounds; REL_ORPHAN_KILL_SECONDS (3)
# of load per round; REL_ORPHAN_KILL_MAXC (4000): N is drawn from 20..MAXC.
source "$(dirname "$0")/rel_lib.sh"

ROUNDS=${REL_ORPHAN_KILL_ROUNDS:-10}
SECS=${REL_ORPHAN_KILL_SECONDS:-3}
MAXC=${REL_ORPHAN_KILL_MAXC:-4000}
LOAD=$TESTS_DIR/helpers/orphan_load.py
C() { "$PATHFSCTL" -s "$STORE" "$@"; }

OPTS=(-o rename_batch=8)
rel_mount_fg "${OPTS[@]}"
mkdir "$MNT/w1" "$MNT/w2" "$MNT/w3" "$MNT/src" "$MNT/mixed" "$MNT/big"
for i in $(seq 1 20); do echo "$i" >"$MNT/src/f$i"; done
ln "$MNT/src/f1" "$MNT/src/h1"
for i in $(seq 1 10); do
	mkdir "$MNT/big/d$i"
	for j in $(seq 1 9); do echo "$i.$j" >"$MNT/big/d$i/f$j"; done
done
ln "$MNT/big/d1/f1" "$MNT/src/h2" # a hard link into the renamed branch
rel_umount_fg

# abort_conn: aborts the FUSE connection of $MNT through fusectl, which ends
# every request still waiting on it. Needed when the daemon was killed while
# one of its threads sat in a kernel notify (fs_ctl_end's invalidation waits
# for a folder's lock that a request to the dead daemon holds): that thread
# cannot die, so /dev/fuse stays open and the mount hangs instead of failing.
abort_conn() {
	local dev c=/sys/fs/fuse/connections
	dev=$(mountpoint -d "$MNT" 2>/dev/null) || return 0
	mountpoint -q "$c" || mount -t fusectl none "$c" 2>/dev/null || return 0
	echo 1 >"$c/${dev#*:}/abort" 2>/dev/null || true
	echo "aborted" >>"$T/aborted"
}

hooked=0
for r in $(seq 1 "$ROUNDS"); do
	N=$((20 + (RANDOM * 32768 + RANDOM) % (MAXC - 19)))
	PATHFS_CRASH_AFTER_COMMITS=$N rel_mount_fg "${OPTS[@]}"
	pids=()
	for w in 1 2 3; do
		python3 "$LOAD" "$MNT/w$w" "$SECS" "$r$w" >/dev/null 2>>"$T/load.err" &
		pids+=($!)
	done
	# rel_kill9's racing namespace calls, and a folder renamed back and
	# forth in small batches (by-number requests go on meanwhile)
	# (its model checks are rel_kill9's business: only its hangs count here)
	("$REL_STRESS" --shared-only --disconnect-ok -n 2 -t "$SECS" -S "$r" \
		"$MNT/mixed" >/dev/null 2>>"$T/stress.err" || true) &
	pids+=($!)
	(
		cd "$MNT" || exit 0
		end=$((SECONDS + SECS))
		while [ $SECONDS -lt $end ]; do
			if [ -d big ]; then mv big big2 || exit 0; else mv big2 big || exit 0; fi
		done
	) 2>/dev/null &
	pids+=($!)
	(
		end=$((SECONDS + SECS))
		while [ $SECONDS -lt $end ]; do
			# (not pathfsctl cp -r: a clone the crash stops waits for
			# its token, which died with pathfsctl, and fsck lists it)
			cp -a "$MNT/src" "$MNT/c" 2>/dev/null || true
			# a file of the branch open while it goes
			(sleep 0.2 <"$MNT/c/f2") 2>/dev/null &
			C rm -r /c >/dev/null 2>&1 || true
			wait $! 2>/dev/null || true
		done
	) &
	pids+=($!)
	(
		sleep $((SECS + 60))
		abort_conn
	) &
	wd=$!
	ok=1
	for p in "${pids[@]}"; do
		wait "$p" || ok=0
	done
	kill "$wd" 2>/dev/null || true
	wait "$wd" 2>/dev/null || true
	check "round $r: the orphan loads ran (N=$N)" [ $ok -eq 1 ]
	grep -q "PATHFS_CRASH_AFTER_COMMITS=$N: crashing" "$DLOG" && hooked=$((hooked + 1))
	rel_kill9 # harmless if the hook was first

	rel_mount_fg "${OPTS[@]}"
	check "round $r: fsck clean after the crash (N=$N)" rel_fsck
	check "round $r: daemon alive" rel_alive
	rel_umount_fg
	check "round $r: no ORPHAN# key left after a clean unmount" \
		[ "$(kv_count 'DRIVE#main|ORPHAN#')" = 0 ]
	check "round $r: fsck clean unmounted" rel_fsck
	: >"$DLOG"
done
grep -v "^$" "$T/load.err" | head -n 5 >&2 || true
echo "rounds stopped by the commit hook: $hooked of $ROUNDS (the rest by kill -9)"
echo "rounds whose dead mount hung and was aborted: $(cat "$T/aborted" 2>/dev/null | wc -l)"
rel_finish
