#!/usr/bin/env bash
# dynamodb_faults.sh - a drive in a DynamoDB table under injected failures
# (tests/with_dynamodb.sh starts DynamoDB Local): for each mode of the
# fault hook (PATHFS_DDB_FAULT, store/kv/ddb_fault.c) - every 4th request
# throttled (ThrottlingException, ProvisionedThroughputExceeded, a
# TransactionConflict in turn), every 6th an HTTP 500, every 5th sent but
# its answer dropped (applied, the answer lost) - the daemon mounts; cp -a
# of a small tree (odd names, links, a multi-block file, a 60-file folder),
# a rename of that folder (two copy transactions and the last), rm -r of
# another folder; then, remounted without the
# hook: nothing lost, nothing applied twice (manifests and diff -r against
# the source, the entry counts, fsck clean), and `pathfsctl stats` showed
# the faults and as many retries, so the test cannot pass without the hook
# firing. And credentials DynamoDB refuses are one line at mount, within
# seconds, not a hang.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

: "${PATHFS_TEST_DYNAMODB:?run through tests/with_dynamodb.sh}"
STORE="dynamodb://ft$$?endpoint=$PATHFS_TEST_DYNAMODB&lease-ttl=20"

# kv_stat JSON NAME: member NAME of "kv" in `pathfsctl stats --json` output
kv_stat() {
	python3 -c 'import json,sys; print(json.loads(sys.argv[1])["kv"][sys.argv[2]])' "$1" "$2"
}

# A small tree with what a retry could get wrong twice over: odd names, a
# file across 64 KiB blocks, a symlink, a hard link, modes and times (cp -a)
SRC=$T/src
mkdir -p "$SRC/many" "$SRC/doomed/sub" "$SRC/odd/a b" "$SRC/odd/docs-archive" \
	"$SRC/odd/docs"
for i in $(seq 1 60); do echo "file $i" >"$SRC/many/f$i"; done
for i in $(seq 1 20); do echo "doomed $i" >"$SRC/doomed/sub/d$i"; done
head -c 300000 /dev/urandom >"$SRC/odd/big.bin"
echo x >"$SRC/odd/a b/-lead.txt"
echo y >"$SRC/odd/docs/.hidden"
ln -s "../odd/big.bin" "$SRC/odd/docs-archive/link"
ln "$SRC/odd/big.bin" "$SRC/odd/hard"
chmod 600 "$SRC/odd/hard"
touch -d 2001-02-03T04:05:06 "$SRC/odd/a b/-lead.txt"
# what the drive must hold at the end: the tree without doomed/
cp -a "$SRC" "$T/want"
rm -r "$T/want/doomed"
manifest "$T/want" "$T/m.want"

for mode in throttle:4 500:6 drop:5; do
	name=${mode%%:*}
	D=$MNT/$name
	PATHFS_DDB_FAULT=$mode pfs_mount -o "log=$T/$name.log" 2>"$T/$name.err"
	check "$mode: mounted with the hook on" mountpoint -q "$MNT"
	check "$mode: cp -a of the tree" cp -a "$SRC" "$D"
	check "$mode: a 60-entry folder renamed" mv "$D/many" "$D/moved"
	check "$mode: rm -r of a folder" rm -r "$D/doomed"
	j=$("$PATHFSCTL" -s "$STORE" stats --json)
	faults=$(kv_stat "$j" faults)
	retries=$(kv_stat "$j" retries)
	echo "# $mode: $(kv_stat "$j" requests) requests, $faults faults, $retries retries"
	check "$mode: the hook fired (stats: faults $faults)" [ "$faults" -ge 100 ]
	# (the lease keeper's renewal, or a request, may be between its
	# fault and its retry while the counts are read)
	check "$mode: every fault was retried (retries $retries)" \
		[ "$retries" -ge $((faults - 2)) ]
	pfs_umount
	check "$mode: the mount said the hook is on" \
		grep -q "PATHFS_DDB_FAULT: every" "$T/$name.err"

	pfs_mount -o "log=$T/$name.after.log"
	mv "$D/moved" "$D/many"
	manifest "$D" "$T/m.$name"
	same_file "$mode: after a remount, manifest identical to the source's" \
		"$T/m.want" "$T/m.$name"
	check "$mode: diff -r clean" diff -r --no-dereference "$T/want" "$D"
	check "$mode: 60 files, no more" [ "$(ls "$D/many" | wc -l)" = 60 ]
	check "$mode: the removed folder is gone" [ ! -e "$D/doomed" ]
	pfs_umount
	check "$mode: fsck is clean" pfs_fsck
done

# ---- credentials refused: one line at mount, quickly -------------------------
start=$SECONDS
check "a mount with refused credentials fails" bash -c \
	"! AWS_ACCESS_KEY_ID='not-a-key!' AWS_SECRET_ACCESS_KEY=s3cr3t-not-said \
	'$PATHFS' '$STORE' '$MNT' 2>'$T/creds.err'"
echo "# refused after $((SECONDS - start)) s: $(cat "$T/creds.err")"
check "... within 15 s" [ $((SECONDS - start)) -lt 15 ]
check "... saying the credentials were refused" \
	grep -q "credentials were refused" "$T/creds.err"
check "... in one line, without the secret" bash -c \
	"[ \$(wc -l <'$T/creds.err') = 1 ] && ! grep -q s3cr3t '$T/creds.err'"
check "... and nothing is mounted" bash -c "! mountpoint -q '$MNT'"

sanitizer_clean
finish
