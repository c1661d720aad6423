#!/usr/bin/env bash
# dynamodb_shared.sh - two writers of one drive in a DynamoDB table (issue
# 30's -o shared; tests/with_dynamodb.sh starts DynamoDB Local and passes
# its endpoint in $PATHFS_TEST_DYNAMODB): two daemons mount the drive with
# -o shared, on $MNT (A) and $T/b (B), and (etcd_shared.sh's checks, fewer):
#  - a sole writer's mount beside them is refused;
#  - a file created, written and closed on A reads whole on B
#    (close-to-open), and new content A writes reads on B soon after;
#  - both create one name at once, 50 rounds: exactly one wins each round
#    (the other EEXIST);
#  - a file open on A, removed on B, reads whole on A and is freed (no
#    orphan, no hold left) once A closes it;
#  - A killed (kill -9) with a file open that B removed: B finds A stopped
#    once A's writer item expired (a 6 s lease), fences it, and frees the
#    file; B goes on writing;
#  - pathfsctl fsck clean through a daemon, also while B changes the drive
#    nonstop (lib.sh's shared_fsck), and unmounted at the end.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

: "${PATHFS_TEST_DYNAMODB:?run through tests/with_dynamodb.sh}"
# a lease of 6 s: a renewal every 2 s through a JVM on a loaded machine
# (test_kv's lease_kept_alive), and A found stopped soon after its kill
STORE="dynamodb://sh$$?endpoint=$PATHFS_TEST_DYNAMODB&lease-ttl=6"
A=$MNT
B=$T/b
mkdir -p "$B" "$T/c"

# held_counts INO: the ORPHAN mark and HOLD# list of inode INO (0 or 1
# each; ino_of FILE: the number, 16 hex digits, taken while it has a name)
ino_of() { printf '%016x' "$(stat -c %i "$1")"; }
held_counts() { echo "$(kv_count "DRIVE#main|ORPHAN#$1") $(kv_count "DRIVE#main|HOLD#$1")"; }

pfs_mount -o shared -o "log=$T/a.log"
rc=0
"$PATHFS" -o shared -o "log=$T/b.log" "$STORE" "$B" 2>"$T/b.err" || rc=$?
check "B: a second -o shared mount ($(cat "$T/b.err"))" [ "$rc" -eq 0 ]
check "B is mounted" seen 5000 "B mounted" mountpoint -q "$B"
pa=$(pgrep -f "pathfs .*$A" | head -n1 || true)
pb=$(pgrep -f "pathfs .*$B" | head -n1 || true)
check "two daemons ($pa, $pb)" bash -c "[ -n '$pa' ] && [ -n '$pb' ] && [ '$pa' != '$pb' ]"
rc=0
# another spelling of the table (a region): not the daemons' socket
out=$("$PATHFS" -o "log=$T/c.log" \
	"dynamodb://sh$$?region=us-east-1&endpoint=$PATHFS_TEST_DYNAMODB" \
	"$T/c" 2>&1) || rc=$?
check "a sole writer's mount beside them is refused ($out)" \
	bash -c "[ $rc -ne 0 ] && [[ '$out' == *'-o shared'* ]]"
rc=0
out=$("$PATHFSCTL" -s \
	"dynamodb://sh$$?region=us-east-1&endpoint=$PATHFS_TEST_DYNAMODB" \
	mkdrive c 2>&1) || rc=$?
check "pathfsctl that reaches no daemon is refused, naming both writers ($out)" \
	bash -c "[ $rc -ne 0 ] && [[ '$out' == *'by shared writers: '*'pid '*'; '* ]] && [[ '$out' == *'pid $pa '* ]] && [[ '$out' == *'pid $pb '* ]]"

# ---- close-to-open -----------------------------------------------------------
head -c 300000 /dev/urandom >"$T/data"
cp "$T/data" "$A/new"
check "a file written and closed on A reads whole on B" cmp "$T/data" "$B/new"
head -c 200000 /dev/urandom >"$T/data2"
cp "$T/data2" "$A/new"
check "A's new content reads whole on B" seen 2000 "content on A" \
	cmp -s "$T/data2" "$B/new"
echo from-b >"$B/fromb"
check "B's file reads on A" is "cat '$A/fromb'" from-b

# ---- one name created on both ------------------------------------------------
python3 "$TESTS_DIR/helpers/race.py" create 50 "$A" "$B" >"$T/create.out" || true
check "create race: 50 rounds ran" [ "$(wc -l <"$T/create.out")" = 50 ]
check "create race: exactly one wins each round ($(awk '{print $2, $3}' "$T/create.out" | sort | uniq -c | paste -sd ' '))" \
	bash -c "awk '!((\$2 == \"ok\" && \$3 == \"EEXIST\") || (\$2 == \"EEXIST\" && \$3 == \"ok\")) {bad++} END {exit bad > 0}' '$T/create.out'"
check "... 50 files on both mounts" \
	seen 2000 "created" bash -c "[ \$(ls '$A' | grep -c '^c') = 50 ] && [ \$(ls '$B' | grep -c '^c') = 50 ]"
rm -f "$A"/c*

# ---- a file open on A, removed on B ------------------------------------------
head -c 100000 /dev/urandom >"$T/held"
cp "$T/held" "$A/held"
exec 7<"$A/held"
ino=$(ino_of "$A/held")
rm "$B/held"
check "a file open on A, removed on B: gone from A's folder" \
	seen 2000 "rm on A" bash -c "[ ! -e '$A/held' ]"
check "... still reads whole on A" bash -c "cmp - '$T/held' <&7"
check "... kept in the store for A (orphan, hold)" is "held_counts $ino" "1 1"
exec 7<&-
check "... freed once A closed it" seen 5000 "freed" is "held_counts $ino" "0 0"

check "fsck through a daemon is clean" pfs_fsck
shared_fsck "$A" "$B"

# ---- A killed ----------------------------------------------------------------
head -c 100000 /dev/urandom >"$T/dead"
cp "$T/dead" "$A/dead"
exec 7<"$A/dead"
ino=$(ino_of "$A/dead")
rm "$B/dead"
check "a file open on A, removed on B, kept for A" is "held_counts $ino" "1 1"
kill -9 "$pa"
exec 7<&-
# A's item expires in 6 s; B's reclaim looks every few seconds
check "B frees the file of A, which was killed" \
	seen 20000 "takeover" is "held_counts $ino" "0 0"
check "... B's log says A stopped and was fenced" \
	grep -q "writer .* stopped (its item expired): fenced" "$T/b.log"
echo after >"$B/after"
check "B writes on" is "cat '$B/after'" after
pfs_reap
MNT=$B pfs_umount
check "fsck of the unmounted drive is clean" pfs_fsck
sanitizer_clean
finish
