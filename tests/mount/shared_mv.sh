#!/usr/bin/env bash
# shared_mv.sh - a folder rename among writers of one drive (issue 24), on
# etcd (etcd_shared_mv: tests/with_etcd.sh) or in a DynamoDB table
# (dynamodb_shared_mv: tests/with_dynamodb.sh): two daemons mount one drive
# with -o shared ($MNT: A, $T/b: B), and
#  - mv of a non-empty folder on A is a rename: the folder keeps its inode
#    number (a copy would not) and its tree, and B sees it moved;
#  - B creates files inside a folder of 1,000 entries while A moves it:
#    each create lands before the move (and moves with it) or, held off by
#    the rename's branch lock, fails with ENOENT once the folder is gone;
#    none is lost, none is left under the old name; a file B holds open
#    there takes every write (before, during and after the move: the
#    writes follow the file to its new place), both mounts list the same
#    tree and fsck is clean;
#  - A's daemon is killed (SIGKILL, its crash hook PATHFS_CRASH_AFTER_BATCHES)
#    halfway through the move of a folder of over 10,010 entries (ten folders of
#    1,000 files; 100 of its 200 batches of 50 entries; on DynamoDB, whose
#    creates and clones are slower, 3,003 entries, 30 of its ~60 copy batches) while
#    B keeps creating inside the folder: B's creates wait; once A's lease
#    (4 s; 6 s on DynamoDB, renewed through a JVM) has
#    expired, B takes the rename over (its reclaim thread, every 5 s) and
#    finishes it: the folder is whole at the new name, B's waiting create
#    failed cleanly or landed in the moved folder, and fsck is clean (an
#    unfinished journal record would be a finding).
# Both daemons run on this machine; etcd_netns runs daemons on machines of
# their own.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

if [ -n "${PATHFS_TEST_DYNAMODB:-}" ]; then
	STORE="dynamodb://sm$$?endpoint=$PATHFS_TEST_DYNAMODB&lease-ttl=6"
	COPIES=3 CRASH_AT=30
else
	: "${PATHFS_TEST_ETCD:?run through tests/with_etcd.sh or tests/with_dynamodb.sh}"
	STORE="etcd://$PATHFS_TEST_ETCD/sm$$?lease-ttl=4"
	COPIES=10 CRASH_AT=100
fi
A=$MNT
B=$T/b
mkdir -p "$B"

tree_of() { (cd "$1" && find . -printf '%p %s\n' | LC_ALL=C sort); }
same_trees() { [ "$(tree_of "$A")" = "$(tree_of "$B")" ]; }

# fill DIR N: N files of 10 bytes in DIR
fill() {
	python3 - "$1" "$2" <<'EOF'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
os.mkdir(d)
for i in range(n):
    with open(f"{d}/f{i:04d}", "w") as f:
        f.write("0123456789")
EOF
}

# creator DIR OUT STOPFILE PREFIX: creates DIR/PREFIX0, PREFIX1, ... until
# STOPFILE exists (then 3 more), one line per create in OUT:
# "name ok|ERRNO seconds"
cat >"$T/creator.py" <<'EOF'
import errno, os, sys, time
d, out, stop, pre = sys.argv[1:5]
after = None
with open(out, "w") as o:
    i = 0
    while after is None or after > 0:
        if after is None and os.path.exists(stop):
            after = 3
        elif after is not None:
            after -= 1
        t0 = time.monotonic()
        try:
            os.close(os.open(f"{d}/{pre}{i}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            r = "ok"
        except OSError as e:
            r = errno.errorcode[e.errno]
        print(f"{pre}{i} {r} {time.monotonic() - t0:.3f}", file=o, flush=True)
        i += 1
EOF

# writer FILE OUT STOPFILE: opens FILE (new) and writes a numbered line to
# it every 20 ms until STOPFILE exists (then 3 more), then closes it; OUT
# gets the number of lines written, or the error that stopped it
cat >"$T/writer.py" <<'EOF'
import os, sys, time
f, out, stop = sys.argv[1:4]
n, after = 0, None
try:
    with open(f, "w") as w:
        while after is None or after > 0:
            if after is None and os.path.exists(stop):
                after = 3
            elif after is not None:
                after -= 1
            w.write(f"line {n}\n")
            w.flush()
            n += 1
            time.sleep(0.02)
    r = str(n)
except OSError as e:
    r = f"{e.strerror} after {n}"
open(out, "w").write(r + "\n")
EOF

# landed OUT DIR OLD: the names OUT says were created that are not in DIR,
# or are still under OLD, and the failures other than ENOENT
landed() {
	awk '{print $1, $2}' "$1" | while read -r n r; do
		if [ "$r" = ok ]; then
			[ -e "$2/$n" ] || echo "lost:$n"
			[ ! -e "$3/$n" ] || echo "old:$n"
		elif [ "$r" != ENOENT ]; then
			echo "$n:$r"
		fi
	done | head -n 10 | paste -sd ' '
}

# ---- mv of a non-empty folder is a rename ------------------------------------
pfs_mount -o shared -o "log=$T/a.log"
MNT=$B pfs_mount -o shared -o "log=$T/b.log"
mkdir -p "$A/src/sub/deeper"
for i in $(seq 1 20); do head -c $((i * 1000)) /dev/urandom >"$A/src/sub/f$i"; done
echo deep >"$A/src/sub/deeper/d"
manifest "$A/src" "$T/before"
ino=$(stat -c %i "$A/src")
rc=0
mv "$A/src" "$A/dst" 2>"$T/mv.err" || rc=$?
check "mv of a non-empty folder on a shared mount ($(cat "$T/mv.err"))" [ "$rc" -eq 0 ]
check "... a rename: the folder keeps its inode number" \
	is "stat -c %i '$A/dst'" "$ino"
manifest "$A/dst" "$T/after"
same_file "... its tree intact" "$T/before" "$T/after"
check "... moved on B" seen 1000 "mv on B" \
	bash -c "[ -e '$B/dst/sub/deeper/d' ] && [ ! -e '$B/src' ]"
rm -r "$A/dst"

# ---- B creates inside a folder that A moves -------------------------------------
fill "$A/big" 1000
check "B sees the folder of 1,000" seen 10000 "big on B" \
	bash -c "[ -e '$B/big/f0999' ]"
rm -f "$T/mv.done"
python3 "$T/creator.py" "$B/big" "$T/race.out" "$T/mv.done" n &
cpid=$!
python3 "$T/writer.py" "$B/big/held" "$T/held.out" "$T/mv.done" &
wpid=$!
# the writer's file open before the move (python's start took more than
# 0.5 s at load 13: its create then came after the move, ENOENT)
check "B holds a file open in the folder" seen 10000 "held open" \
	bash -c "[ -s '$B/big/held' ]"
sleep 0.5
rc=0
mv "$A/big" "$A/moved" 2>"$T/mv.err" || rc=$?
touch "$T/mv.done"
wait "$cpid" "$wpid"
check "mv of the folder of 1,000 while B creates in it ($(cat "$T/mv.err"))" [ "$rc" -eq 0 ]
echo "# creates on B during the move: $(awk '{print $2}' "$T/race.out" | sort | uniq -c | paste -sd ' ');" \
	"slowest $(sort -k3 -n "$T/race.out" | tail -n1 | awk '{print $3}') s"
check "... B's creates landed in the moved folder or failed ENOENT" \
	seen 10000 "creates on B" is "landed '$T/race.out' '$A/moved' '$A/big'" ""
check "... as B lists it" seen 10000 "B lists" \
	is "landed '$T/race.out' '$B/moved' '$B/big'" ""
check "... the folder's 1,000 files moved" \
	is "ls '$A/moved' | grep -c '^f'" 1000
held=$(cat "$T/held.out")
check "... a file B held open there took every write, in the moved folder ($held lines)" \
	seen 10000 "held file" bash -c "[ '$held' -gt 0 ] 2>/dev/null && [ \$(wc -l <'$A/moved/held') = '$held' ]"
check "... the same tree on both" seen 10000 "trees" same_trees
check "fsck through a daemon is clean" pfs_fsck
pfs_umount

# ---- A dies in the middle of a move; B takes it over -------------------------
# A daemon killed in a rename can leave a thread stuck in the kernel (its
# watch's notification waits for the folder lock the rename holds), and
# then its FUSE connection stays until aborted, as an admin would
# (fusectl), lest the mv hang.
abort_conn() {
	local dev
	dev=$(awk -v m="$1" '$5 == m {print $3}' /proc/self/mountinfo | head -n1)
	[ -n "$dev" ] || return 0
	mountpoint -q /sys/fs/fuse/connections ||
		mount -t fusectl none /sys/fs/fuse/connections
	echo 1 >"/sys/fs/fuse/connections/${dev#*:}/abort"
}
gone() { ! kill -0 "$1" 2>/dev/null || grep -q '^State:.*Z' "/proc/$1/status"; }
files_in() { find "$1" -name 'f*' | wc -l; }
# /ten: /moved's 1,000 files and COPIES - 1 copies of them, cloned by
# pathfsctl on the unmounted drive
mkdir "$B/ten"
mv "$B/moved" "$B/ten/c0"
MNT=$B pfs_umount
for i in $(seq 1 $((COPIES - 1))); do
	"$PATHFSCTL" -s "$STORE" cp -r /ten/c0 "/ten/c$i" >/dev/null 2>"$T/cp.err" ||
		{ cat "$T/cp.err" >&2; break; }
done
MNT=$B pfs_mount -o shared -o "log=$T/b.log"
N=$((COPIES * 1000))
check "a folder of over $N entries" is "files_in '$B/ten'" $N
PATHFS_CRASH_AFTER_BATCHES=$CRASH_AT pfs_mount -o shared -o "log=$T/a2.log" -o rename_batch=50
pa=$(pgrep -f "pathfs .*$A" | head -n1 || true)
rm -f "$T/mv.done"
python3 "$T/creator.py" "$B/ten" "$T/kill.out" "$T/mv.done" k &
cpid=$!
sleep 0.5
mv "$A/ten" "$A/again" 2>/dev/null &
mpid=$!
check "the mv on A: the daemon died" seen 30000 "A died" gone "$pa"
t0=$(date +%s)
abort_conn "$A"
wait "$mpid" || true
pfs_reap
check "B took the rename over" seen 60000 "takeover" \
	grep -q "taking over /ten -> /again" "$T/b.log"
check "... and finished it" seen 60000 "finished" \
	bash -c "[ -e '$B/again/c$((COPIES - 1))/f0999' ] && [ ! -e '$B/ten' ]"
touch "$T/mv.done"
wait "$cpid"
echo "# B's creates meanwhile: $(awk '{print $2}' "$T/kill.out" | sort | uniq -c | paste -sd ' ');" \
	"the slowest waited $(sort -k3 -n "$T/kill.out" | tail -n1 | awk '{print $3}') s;" \
	"done $(($(date +%s) - t0)) s after A died"
check "... the folder's $N files there" is "files_in '$B/again'" $N
check "... B's creates landed there or failed ENOENT" \
	is "landed '$T/kill.out' '$B/again' '$B/ten'" ""
check "... a create of B waited for the takeover" \
	awk '$3 > 2 {found = 1} END {exit !found}' "$T/kill.out"
check "fsck is clean (no journal record left either)" pfs_fsck
MNT=$B pfs_umount
check "fsck of the unmounted drive is clean" pfs_fsck
sanitizer_clean
finish
