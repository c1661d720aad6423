#!/usr/bin/env bash
# rel_remount.sh - unmount, then mount again at once, as scripts, fstab
# remounts and service restarts do: `fusermount3 -u MNT && pathfs STORE MNT`
# must succeed although the old daemon may still be closing the store, 50
# times in a row with writes in between, and nothing written may be lost.
# A daemon that takes long to close (stopped with SIGSTOP) is waited for, and
# the new mount says so. A store that is really in use (mounted, or opened by
# pathfsctl) is still refused at once.
source "$(dirname "$0")/lib.sh"

ROUNDS=${REL_REMOUNT_ROUNDS:-50}

# quick DESCRIPTION COMMAND...: COMMAND must fail within 5 s with "in use" and
# without waiting.
refused_at_once() {
	local what=$1 t0 t1 out rc=0
	shift
	t0=$(date +%s%N)
	out=$("$@" 2>&1) || rc=$?
	t1=$(date +%s%N)
	CHECKS=$((CHECKS + 1))
	if [ "$rc" -ne 0 ] && [[ "$out" == *"in use"* ]] &&
		[[ "$out" != *waiting* ]] && [ $((t1 - t0)) -lt 5000000000 ]; then
		echo "ok - $what ($(((t1 - t0) / 1000000)) ms)"
	else
		echo "FAIL - $what: exit $rc after $(((t1 - t0) / 1000000)) ms: $out" >&2
		FAILS=$((FAILS + 1))
	fi
}

pfs_mount 2>/dev/null
ok=0
for i in $(seq 1 "$ROUNDS"); do
	# enough written that closing the store takes a moment
	head -c $((1024 * 1024 + i)) /dev/urandom >"$MNT/big$i"
	mkdir "$MNT/d$i"
	for j in $(seq 1 20); do echo "$i.$j" >"$MNT/d$i/s$j"; done
	(cd "$MNT" && sha256sum "big$i") >>"$T/sums"
	if pfs_unmount fusermount3 -u "$MNT" &&
		"$PATHFS" "$STORE" "$MNT" 2>"$T/err"; then
		ok=$((ok + 1))
	else
		echo "round $i: $(cat "$T/err")" >&2
		pfs_reap
		pfs_mount
	fi
	mountpoint -q "$MNT" || { sleep 0.1; mountpoint -q "$MNT"; } ||
		{ echo "round $i: no mount" >&2; pfs_mount; }
done
check "$ok of $ROUNDS unmount+mount pairs succeeded at once" [ "$ok" -eq "$ROUNDS" ]
check "every file written between the remounts is intact" \
	bash -c "cd '$MNT' && sha256sum --quiet -c '$T/sums'"
check "every small file is there with its content" bash -c "
	for i in \$(seq 1 $ROUNDS); do for j in \$(seq 1 20); do
		[ \"\$(cat '$MNT'/d\$i/s\$j)\" = \"\$i.\$j\" ] || exit 1
	done; done"

# really in use: mounted
mkdir "$T/mnt2"
refused_at_once "a second mount of a mounted store (another drive) is refused at once" \
	"$PATHFS" -o drive=other "$STORE" "$T/mnt2"

# a daemon slow to close: stopped right before the unmount. Meanwhile a
# process that is not the test's (in the mount namespace of the one that
# started the test) takes a statfs of the mountpoint, as a df of every
# mount (an xfstests check) does of each: on a mount it sees, that waits for
# the stopped daemon. The test's own processes are done with the mount, so
# its plain unmount must not be refused as busy (the mount is the test's
# own: lib.sh)
pid=$(pfs_pid)
kill -STOP "$pid"
nsenter --mount="/proc/$PPID/ns/mnt" stat -f "$MNT" >/dev/null 2>&1 &
df_pid=$!
for i in $(seq 1 200); do # until its statfs is done or waits in FUSE
	kill -0 "$df_pid" 2>/dev/null || break
	grep -q request_wait "/proc/$df_pid/wchan" 2>/dev/null && break
	sleep 0.05
done
rc=0
pfs_unmount fusermount3 -u "$MNT" || rc=$?
check "another process's statfs of it waiting, the stopped daemon's mount unmounts at once" \
	[ "$rc" -eq 0 ]
mountpoint -q "$MNT" && fusermount3 -u -z "$MNT"
"$PATHFS" "$STORE" "$MNT" 2>"$T/slow" &
waiter=$!
# it says so after a second of waiting (a loaded machine starts it late)
for i in $(seq 1 600); do
	grep -q "waiting for the daemon" "$T/slow" && break
	kill -0 "$waiter" 2>/dev/null || break
	sleep 0.05
done
check "the new mount waits for the stopped daemon" kill -0 "$waiter"
check "and says so on stderr" grep -q "waiting for the daemon.*pid $pid" "$T/slow"
kill -CONT "$pid"
kill "$df_pid" 2>/dev/null || true
wait "$df_pid" || true
rc=0
wait "$waiter" || rc=$?
cat "$T/slow"
check "the new mount succeeds once the old daemon has closed the store" \
	[ "$rc" -eq 0 ]
check "mounted" mountpoint -q "$MNT"
check "files intact after the slow remount" \
	bash -c "cd '$MNT' && sha256sum --quiet -c '$T/sums'"
# enough names that pathfsctl's listing fills the pipe below many times
mkdir "$MNT/many"
for i in $(seq 1 200); do
	: >"$MNT/many/$(printf 'n%0200d' "$i")"
done
pfs_umount

# really in use: pathfsctl has the store open (its output blocks on a 4 KiB
# pipe that we read only after trying to mount)
python3 - "$PATHFSCTL" "$STORE" "$PATHFS" "$MNT" <<'EOF' >"$T/ctl" 2>&1 || true
import fcntl, os, subprocess, sys, time
ctl, store, pathfs, mnt = sys.argv[1:]
rd, wr = os.pipe()
fcntl.fcntl(wr, fcntl.F_SETPIPE_SZ, 4096)
p = subprocess.Popen([ctl, "-s", store, "tree", "/"], stdout=wr)
os.close(wr)
out = os.fdopen(rd, "rb")
first = out.read(1)               # pathfsctl has the store open now
t0 = time.monotonic()
r = subprocess.run([pathfs, store, mnt], capture_output=True, text=True)
dt = time.monotonic() - t0
rest = out.read()
p.wait()
print("exit", r.returncode, "seconds", round(dt, 2), "ctl", p.returncode,
      "bytes", 1 + len(rest), "err", r.stderr.strip())
EOF
cat "$T/ctl"
check "with pathfsctl holding the store, a mount is refused at once" \
	grep -Eq '^exit [1-9][0-9]* seconds [0-4]\.[0-9]+ ctl 0 bytes [0-9]{5,} err .*in use' "$T/ctl"
check "no mount appeared" bash -c "! mountpoint -q '$MNT'"
check "fsck clean" pfs_fsck
finish
