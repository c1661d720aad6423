# lib.sh - shared by the mount tests: sourced, never run.
#
# Gives each test a fresh temp dir ($T) with a store ($STORE) and mountpoint
# ($MNT), mounts and unmounts pathfs, and cleans up on exit even when the test
# fails. The programs' paths come from meson's environment ($PATHFS,
# $PATHFSCTL); run by hand, they default to ../../build.
#
# Each test runs in a mount namespace of its own (helpers/own_ns.sh; as
# root, as the mount tests run): its mounts are seen by its own processes
# only. Anyone else's look at every mount (a df with no argument, as an
# xfstests check runs it; another suite's fuser) is a statfs or stat there,
# on FUSE a round trip to the daemon that holds the mount as long (for ever
# if that daemon is stopped): an unmount of the test's in that moment was
# refused as busy. Only the test's own processes can hold its mounts now,
# and pfs_unmount waits for those.
set -euo pipefail
if [ -z "${PFS_OWN_NS:-}" ] && [ "$(id -u)" = 0 ]; then
	exec "$(dirname "${BASH_SOURCE[0]}")/../helpers/own_ns.sh" \
		"$BASH" "$0" "$@"
fi

: "${PATHFS:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/fs/pathfs}"
: "${PATHFSCTL:=$(dirname "$PATHFS")/../tools/pathfsctl}"
: "${TESTS_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"

T=$(mktemp -d /tmp/pathfs-mt.XXXXXX)
STORE=$T/store
MNT=$T/mnt
mkdir -p "$MNT"
FAILS=0
CHECKS=0

cleanup() {
	local m
	for m in $(awk -v t="$T" 'index($2, t) == 1 {print $2}' /proc/mounts); do
		fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
	pkill -9 -f "pathfs .*$T" 2>/dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT

# pfs_mount [pathfs options...]: mounts drive (default main) of $STORE on $MNT
# and waits until the mount is there.
pfs_mount() {
	"$PATHFS" "$@" "$STORE" "$MNT"
	local i
	for i in $(seq 1 100); do
		mountpoint -q "$MNT" && return 0
		sleep 0.05
	done
	echo "FAIL: mount did not appear" >&2
	exit 1
}

# pfs_holders DIR: the processes of this test (its mount namespace) whose
# cwd, root, an open file or a mapped file is DIR or below it, one
# "pid/what -> path: command" line each; nothing when none.
pfs_holders() {
	local dir=$1 ns l p
	ns=$(readlink /proc/self/ns/mnt)
	find /proc/[0-9]*/cwd /proc/[0-9]*/root /proc/[0-9]*/fd \
		/proc/[0-9]*/map_files -maxdepth 1 \
		\( -lname "$dir" -o -lname "$dir/*" \) -printf '%p %l\n' \
		2>/dev/null | while read -r l p; do
		l=${l#/proc/}
		[ "$(readlink "/proc/${l%%/*}/ns/mnt" 2>/dev/null)" = "$ns" ] ||
			continue
		echo "$l -> $p: $(tr '\0' ' ' <"/proc/${l%%/*}/cmdline" 2>/dev/null)"
	done || true
}

# pfs_busy_evidence DIR: says on stderr who holds the mount on DIR: the
# test's processes with their cwd, root or a file below it (pfs_holders),
# the requests its FUSE connection has in flight and the processes waiting
# in FUSE (a stat in flight holds the mount until its daemon answers),
# fuser's view (with a time limit: a stopped daemon hangs it) and the mounts
# at or below DIR.
pfs_busy_evidence() {
	local dir=$1 dev
	echo "--- who holds $dir ($(date +%T.%N)):" >&2
	pfs_holders "$dir" | sed 's/^/  /' >&2
	dev=$(awk -v d="$dir" '$5 == d {print $3}' /proc/self/mountinfo | tail -n1)
	echo "  requests waiting on its connection ($dev):" \
		"$(cat "/sys/fs/fuse/connections/${dev#*:}/waiting" 2>/dev/null)" >&2
	echo "  processes waiting in FUSE (on any mount):" >&2
	ps -eo pid,ppid,stat,wchan:24,args |
		awk 'NR == 1 || $4 ~ /fuse|request_wait/' >&2 || true
	timeout 5 fuser -vm "$dir" 2>&1 | grep -v '^Cannot stat' >&2 || true
	echo "  mounts at or below it:" >&2
	awk -v d="$dir" '$5 == d || index($5, d "/") == 1' /proc/self/mountinfo >&2
}

# pfs_unmount CMD... DIR: unmounts DIR with CMD (fusermount3 -u, umount)
# once the test's own processes have let go of it: while one of them has
# its cwd, root or a file below DIR (a reader the test started, a subshell
# that went there), waits for it to end, up to 30 s; then runs CMD once.
# Nobody else sees the mount (the test's mount namespace), so CMD is refused
# as busy only if a process of the test still works in DIR, or the daemon
# holds it: then who holds it is said (pfs_busy_evidence). Returns CMD's
# status; its stderr is shown when it fails.
pfs_unmount() {
	local dir=${!#} i rc=0
	for i in $(seq 1 600); do
		[ -z "$(pfs_holders "$dir")" ] && break
		[ "$i" = 1 ] && { echo "note: waiting for the test's processes in $dir:" && pfs_holders "$dir"; } >&2
		sleep 0.05
	done
	"$@" 2>"$T/umount.err" || rc=$?
	[ "$rc" -eq 0 ] && return 0
	cat "$T/umount.err" >&2
	if grep -q 'busy' "$T/umount.err"; then
		pfs_busy_evidence "$dir"
	fi
	return "$rc"
}

# pfs_fusermount_u: unmounts $MNT (pfs_unmount); fails the test if it
# cannot, saying who holds it.
pfs_fusermount_u() {
	pfs_unmount timeout 30 fusermount3 -u "$MNT" || {
		echo "FAIL: fusermount3 -u failed" >&2
		exit 1
	}
}

# pfs_threads PID: where each thread of PID waits (the evidence of a hang):
# its kernel stack, and its user stack when gdb is installed.
pfs_threads() {
	local t
	for t in /proc/"$1"/task/*; do
		echo "thread ${t##*/} ($(cat "$t/comm" 2>/dev/null)):" \
			"$(cat "$t/wchan" 2>/dev/null)"
		head -n 8 "$t/stack" 2>/dev/null | sed 's/^/    /'
	done
	if command -v gdb >/dev/null; then
		timeout 60 gdb -p "$1" -batch -ex "thread apply all bt 12" \
			2>/dev/null | grep -E '^(Thread|#)'
	fi
}

# pfs_umount: unmounts and waits for the daemon to exit (everything durable).
pfs_umount() {
	local i
	pfs_fusermount_u
	for i in $(seq 1 200); do
		pgrep -f "pathfs .*$MNT" >/dev/null || return 0
		sleep 0.05
	done
	echo "FAIL: daemon did not exit after unmount; its threads:" >&2
	pgrep -f "pathfs .*$MNT" | while read -r pid; do pfs_threads "$pid"; done >&2
	exit 1
}

# check DESCRIPTION COMMAND...: runs COMMAND, counts a failure if it fails.
check() {
	local what=$1
	shift
	CHECKS=$((CHECKS + 1))
	if "$@"; then
		echo "ok - $what"
	else
		echo "FAIL - $what" >&2
		FAILS=$((FAILS + 1))
	fi
}

# expect_errno ERRNAME DESCRIPTION COMMAND...: COMMAND must fail and print the
# strerror text of ERRNAME (e.g. ENOTEMPTY) on stderr.
expect_errno() {
	local err=$1 what=$2 msg out
	shift 2
	msg=$(python3 -c "import errno,os; print(os.strerror(errno.$err))")
	CHECKS=$((CHECKS + 1))
	if out=$("$@" 2>&1); then
		echo "FAIL - $what: succeeded, expected $err" >&2
		FAILS=$((FAILS + 1))
	elif [[ "$out" == *"$msg"* ]]; then
		echo "ok - $what ($err)"
	else
		echo "FAIL - $what: expected $err, got: $out" >&2
		FAILS=$((FAILS + 1))
	fi
}

# finish: prints the summary and exits non-zero if any check failed.
finish() {
	echo "$((CHECKS - FAILS)) passed, $FAILS failed"
	[ "$FAILS" -eq 0 ]
}

# ---- Helpers of the POSIX and crash suites (mounttests) ---------------------
# python3 is Debian's /usr/bin/python3 when there is one: a version manager's
# shim earlier in PATH (pyenv) costs a second per call on a loaded machine.
if [ -x /usr/bin/python3 ]; then
	python3() { /usr/bin/python3 "$@"; }
fi
# Paths of the helper programs (tests/helpers/); meson passes them, by hand they
# default to the build dir next to $PATHFS.
: "${RENAMEAT2:=$(dirname "$PATHFS")/../tests/renameat2}"
: "${KVKEYS:=$(dirname "$PATHFS")/../tests/kvkeys}"
TREE_PY=$TESTS_DIR/helpers/tree.py

# pfs_pid: prints the pid of the daemon serving $MNT (nothing if none).
pfs_pid() {
	pgrep -f "pathfs .*$MNT" | head -n1 || true
}

# pfs_reap: after the daemon died or was killed: kills what is left of it,
# lazily unmounts the dead mount and waits until $MNT is a plain directory.
pfs_reap() {
	local p i
	for p in $(pgrep -f "pathfs .*$MNT" || true); do
		kill -9 "$p" 2>/dev/null || true
	done
	for i in $(seq 1 200); do
		pgrep -f "pathfs .*$MNT" >/dev/null || break
		sleep 0.05
	done
	if mountpoint -q "$MNT" || grep -q " $MNT fuse" /proc/mounts; then
		fusermount3 -u -z "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
	fi
	for i in $(seq 1 100); do
		mountpoint -q "$MNT" || return 0
		sleep 0.05
	done
	echo "FAIL: $MNT still mounted after reap" >&2
	exit 1
}

# pfs_wait_dead PID WHAT: after a request that a crash point
# (PATHFS_CRASH_AFTER_BATCHES=N at mount) makes the daemon PID die right
# after its batch: waits for it to exit, up to 5 s, and counts the check
# "WHAT: the daemon died". pfs_reap then cleans up the dead mount.
pfs_wait_dead() {
	local pid=$1 what=$2 i
	for i in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	check "$what: the daemon died" bash -c "! kill -0 $pid 2>/dev/null"
}

# same_file DESCRIPTION EXPECTED ACTUAL: a check that two files (manifests,
# listings) are identical; shows the start of the difference if not.
same_file() {
	local what=$1 exp=$2 got=$3
	CHECKS=$((CHECKS + 1))
	if cmp -s "$exp" "$got"; then
		echo "ok - $what"
	else
		echo "FAIL - $what:" >&2
		diff "$exp" "$got" | head -n 20 >&2 || true
		FAILS=$((FAILS + 1))
	fi
}

# manifest DIR OUTFILE [tree.py manifest options]: names, types, modes,
# owners, sizes, link counts and groups, mtimes (ns), content sha256, symlink
# targets and xattrs of everything below DIR, one sorted line each.
# A manifest that cannot be taken (dead mount) is reported in OUTFILE, so the
# comparison that follows fails instead of the script stopping.
manifest() {
	local dir=$1 out=$2
	shift 2
	python3 "$TREE_PY" manifest "$dir" "$@" >"$out" ||
		echo "manifest of $dir failed" >>"$out"
}

# seen LIMIT_MS WHAT CMD...: polls CMD every 20 ms until it succeeds, for at
# most LIMIT_MS; says how long it took; fails after (how soon a mount shows
# another process's change: the etcd suites).
seen() {
	local limit=$1 what=$2 start now
	shift 2
	start=$(date +%s%N)
	while :; do
		if "$@" 2>/dev/null; then
			now=$(date +%s%N)
			echo "# $what: seen after $(((now - start) / 1000000)) ms"
			return 0
		fi
		now=$(date +%s%N)
		if [ $(((now - start) / 1000000)) -ge "$limit" ]; then
			echo "# $what: not seen within $limit ms" >&2
			return 1
		fi
		sleep 0.02
	done
}
is() { [ "$(eval "$1")" = "$2" ]; } # is 'COMMAND' TEXT

# tree_of MNT: every path below MNT, sorted, relative; same_trees MA MB:
# whether two mounts list the same paths
tree_of() { (cd "$1" && find . | LC_ALL=C sort); }
same_trees() { [ "$(tree_of "$1")" = "$(tree_of "$2")" ]; }

# shared_races MA MB: the races of two -o shared mounts of one drive (the
# etcd suites; tests/helpers/race.py runs each round, a thread per mount),
# each with its checks:
#  - racing creates of one name (O_EXCL), 200 rounds: exactly one wins
#    each round, and both mounts list the 200 files;
#  - the rename-cycle race, MA renames a into b/ while MB renames b into
#    a/, 100 rounds: one of the two fails each round, and find lists both
#    folders on both mounts (none cut off from the root);
#  - rmdir on MA racing a create inside on MB, 100 rounds: the folder
#    stays with the file or both are gone, as both mounts list it.
# After a race's burst each mount's watch has a backlog to work through:
# the checks after a race get 10 s.
shared_races() {
	local A=$1 B=$2 i
	python3 "$TESTS_DIR/helpers/race.py" create 200 "$A" "$B" >"$T/create.out" || true
	check "create race: 200 rounds ran" [ "$(wc -l <"$T/create.out")" = 200 ]
	check "create race: exactly one wins each round ($(awk '{print $2, $3}' "$T/create.out" | sort | uniq -c | paste -sd ' '))" \
		bash -c "awk '!((\$2 == \"ok\" && \$3 == \"EEXIST\") || (\$2 == \"EEXIST\" && \$3 == \"ok\")) {bad++} END {exit bad > 0}' '$T/create.out'"
	check "... 200 files on both mounts" \
		seen 1000 "created" bash -c "[ \$(ls '$A' | grep -c '^c') = 200 ] && [ \$(ls '$B' | grep -c '^c') = 200 ]"
	rm -f "$A"/c*

	python3 "$TESTS_DIR/helpers/race.py" cycle 100 "$A" "$B" >"$T/cycle.out" || true
	check "rename cycle: 100 rounds ran" [ "$(wc -l <"$T/cycle.out")" = 100 ]
	check "rename cycle: one of the two fails each round ($(awk '{print $2, $3}' "$T/cycle.out" | sort | uniq -c | paste -sd ' '))" \
		bash -c "awk '(\$2 == \"ok\") == (\$3 == \"ok\") {bad++} END {exit bad > 0}' '$T/cycle.out'"
	# cut_off MNT: the folders of the rounds that find does not list below MNT
	for ((i = 0; i < 100; i++)); do echo "a$i"; echo "b$i"; done | LC_ALL=C sort >"$T/cycle.names"
	cut_off() {
		(cd "$1" && find . -type d -printf '%f\n') | LC_ALL=C sort |
			comm -23 "$T/cycle.names" - | paste -sd ' '
	}
	check "... both folders reachable from the root on A" seen 10000 "cycle on A" is "cut_off '$A'" ""
	check "... and on B" seen 10000 "cycle on B" is "cut_off '$B'" ""
	check "... the same tree on both" seen 10000 "cycle trees" same_trees "$A" "$B"

	python3 "$TESTS_DIR/helpers/race.py" rmdir 100 "$A" "$B" >"$T/rmdir.out" || true
	check "rmdir race: 100 rounds ran" [ "$(wc -l <"$T/rmdir.out")" = 100 ]
	check "rmdir race: the folder stays with the file, or both are gone ($(awk '{print $2, $3}' "$T/rmdir.out" | sort | uniq -c | paste -sd ' '))" \
		bash -c "awk '!((\$2 == \"ok\" && \$3 == \"ENOENT\") || (\$2 == \"ENOTEMPTY\" && \$3 == \"ok\")) {bad++} END {exit bad > 0}' '$T/rmdir.out'"
	# lost MNT: the rounds whose outcome MNT does not show
	lost() {
		awk '{print $1, $2}' "$T/rmdir.out" | while read -r i a; do
			if [ "$a" = ok ]; then
				[ ! -e "$1/d$i" ] || echo "$i"
			else
				[ -f "$1/d$i/f" ] || echo "$i"
			fi
		done | paste -sd ' '
	}
	check "... as A lists it" seen 10000 "rmdir on A" is "lost '$A'" ""
	check "... and B" seen 10000 "rmdir on B" is "lost '$B'" ""
	check "... the same tree on both" seen 10000 "rmdir trees" same_trees "$A" "$B"
}

# shared_fsck MA MB: fsck through MA's daemon (pathfsctl reaches it) while
# MB's writer makes, links and removes files and folders nonstop: fsck's
# passes are each of their own moment, and a file made between two of them
# is not damage: clean every time (ctl/fsck.c: a finding is one that each
# of several checks found); and fsck --repair is refused meanwhile (a
# repair would drop what one check found: another writer's new file).
shared_fsck() {
	local A=$1 B=$2 i fails=0 rc=0 out
	mkdir "$B/churn"
	rm -f "$T/churn.stop"
	(
		i=0
		while [ ! -e "$T/churn.stop" ]; do
			echo "$i" >"$B/churn/f$i"
			mkdir "$B/churn/d$i"
			ln "$B/churn/f$i" "$B/churn/d$i/l"
			rm -rf "$B/churn/f$((i - 2))" "$B/churn/d$((i - 2))"
			i=$((i + 1))
		done
	) 2>"$T/churn.err" &
	local churn=$!
	for i in $(seq 1 10); do
		pfs_fsck || fails=$((fails + 1))
	done
	out=$("$PATHFSCTL" -s "$STORE" fsck --repair 2>&1) || rc=$?
	touch "$T/churn.stop"
	wait $churn
	check "fsck through A while B changes the drive: clean 10 times of 10" \
		[ "$fails" = 0 -a ! -s "$T/churn.err" ]
	check "fsck --repair is refused while others write ($out)" \
		bash -c "[ $rc -ne 0 ] && [[ '$out' == *'needs the store to itself'* ]]"
	rm -rf "$B/churn"
}

# pfs_fsck [DRIVE]: pathfsctl fsck of $STORE (mounted or not); exit 0 = clean.
# Prints the findings on stderr.
pfs_fsck() {
	local out rc=0
	out=$(timeout 120 "$PATHFSCTL" -s "$STORE" -d "${1:-main}" fsck 2>&1) || rc=$?
	[ "$rc" -eq 0 ] || printf 'fsck (exit %d): %s\n' "$rc" "$out" | head -n 20 >&2
	return "$rc"
}

# kv_count PREFIX: raw keys of $STORE starting with PREFIX (e.g.
# 'DRIVE#main|JOURNAL#'), read without replaying anything (tests/helpers/kvkeys).
# Prints "kvkeys-failed" (which no count equals) if the store cannot be read.
kv_count() {
	"$KVKEYS" "$STORE" "$1" || echo kvkeys-failed
}

# sanitizer_logs: in a sanitizer build, makes every instrumented program this
# test runs (the daemon too, whose stderr is gone once it daemonizes) write its
# AddressSanitizer/UBSan/LeakSanitizer reports to $T/sanitizer.* instead of
# stderr; sanitizer_clean then counts a failure if any report was written.
# Harmless in a plain build.
sanitizer_logs() {
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$T/sanitizer.asan"
	export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$T/sanitizer.ubsan"
}
sanitizer_clean() {
	local f found=0
	for f in "$T"/sanitizer.*; do
		[ -e "$f" ] || continue
		found=1
		echo "sanitizer report $f:" >&2
		head -n 40 "$f" >&2
	done
	check "no sanitizer reports (daemon, pathfsctl, helpers)" test "$found" = 0
}
