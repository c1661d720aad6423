#!/usr/bin/env bash
# etcd_owner.sh - one writer per drive on etcd (tests/with_etcd.sh starts a
# 3-member cluster and passes its endpoints in $PATHFS_TEST_ETCD):
# - a second read-write mount here is another mount of the writer's (its
#   FUSE connection), one of another drive is refused; a -o ro mount beside
#   it is allowed; pathfsctl reaches the writer's daemon on this machine
#   (reads and writes), whichever way the URL spells the store (members'
#   order, a trailing slash, localhost), a second mount too;
# - beside a writer elsewhere (its owner key put with curl), pathfsctl's
#   read commands work (the store opened read-only, no owner key taken) and
#   its write commands and a read-write mount are refused in one line naming
#   that writer;
# - the writer killed (kill -9) in the middle of a 10,000-entry folder
#   rename: a second daemon mounts once the lease expires, finishes the
#   rename from the journal, nothing is lost, fsck is clean;
# - a stale writer (SIGSTOP past its lease, a new writer mounted, SIGCONT):
#   its writes fail (EROFS), none lands, it logs one line, fsck is clean.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

: "${PATHFS_TEST_ETCD:?run through tests/with_etcd.sh}"
PLANT=${BUILD_DIR:-$(dirname "$PATHFS")/../tests}/rel_plant
STORE="etcd://$PATHFS_TEST_ETCD/ow$$"
MNT2=$T/b
mkdir -p "$MNT2"
TTL=5 # kv_etcd.c's lease

# pid_at DIR: the daemon serving DIR.
pid_at() {
	pgrep -f "pathfs .*$1\$" | head -n1 || true
}

# mount_until DIR LOG SECONDS: mounts the store on DIR, trying again while
# it is refused (the writer's lease has not expired yet), for at most
# SECONDS; prints how many seconds it took. What the mount said (the store
# opens before the log file: journal replay) goes to $T/mount.err.
mount_until() {
	local dir=$1 log=$2 limit=$3 start=$SECONDS
	while ! "$PATHFS" -o "log=$log" "$STORE" "$dir" 2>"$T/mount.err"; do
		if [ $((SECONDS - start)) -ge "$limit" ]; then
			cat "$T/mount.err" >&2
			return 1
		fi
		sleep 0.5
	done
	echo "# mounted $dir after $((SECONDS - start)) s"
}

# journal_records: how many rename journal records drive main has now, read
# straight from etcd's JSON gateway (curl is quick enough to poll with).
journal_records() {
	local pfx="ow$$/k/DRIVE#main|JOURNAL#" end="ow$$/k/DRIVE#main|JOURNAL\$"
	curl -s -X POST "http://${PATHFS_TEST_ETCD%%,*}/v3/kv/range" -d "{\"key\": \"$(printf '%s' "$pfx" | base64 -w0)\", \"range_end\": \"$(printf '%s' "$end" | base64 -w0)\", \"count_only\": true}" |
		python3 -c 'import json,sys; print(json.load(sys.stdin).get("count", 0))'
}

# ---- a second writer is refused, a reader is not ----------------------------
pfs_mount -o "log=$T/a.log"
echo one >"$MNT/one"
# (a second read-write mount here is another mount of the writer's
# connection, as on a local store: mount_twice.sh; a writer elsewhere is
# refused, below)
check "a second read-write mount here binds the writer's" \
	"$PATHFS" "$STORE" "$MNT2"
check "... the same connection" [ "$(stat -c %d "$MNT2")" = "$(stat -c %d "$MNT")" ]
check "... which reads the writer's file" [ "$(cat "$MNT2/one" 2>/dev/null)" = one ]
fusermount3 -u "$MNT2"
# every spelling of the store (store_identity()) finds the writer's daemon:
# the members in another order, localhost for 127.0.0.1 in any case, a
# member named twice, a trailing slash and options
IFS=, read -r -a eps <<<"$PATHFS_TEST_ETCD"
for url in "etcd://$(tr , '\n' <<<"$PATHFS_TEST_ETCD" | tac | paste -sd,)/ow$$" \
	"etcd://${eps[2]/127.0.0.1/LocalHost},${eps[1]/127.0.0.1/localhost},${eps[0]},${eps[2]}/ow$$/?lease-ttl=7"; do
	rc=0
	"$PATHFS" "$url" "$MNT2" 2>"$T/err" || rc=$?
	check "a second mount as $url binds the writer's (exit $rc: $(head -n 1 "$T/err"))" \
		[ "$rc" = 0 ]
	check "... the same connection" [ "$(stat -c %d "$MNT2")" = "$(stat -c %d "$MNT")" ]
	check "... no second daemon" [ "$(pgrep -fc "pathfs .*ow$$" || true)" = 1 ]
	echo "via $url" >"$MNT2/via"
	check "... which writes, the first mount reads it" \
		[ "$(cat "$MNT/via" 2>/dev/null)" = "via $url" ]
	pfs_unmount fusermount3 -u "$MNT2"
done
rm -f "$MNT/via"
out=$("$PATHFS" -o drive=other "$STORE" "$MNT2" 2>&1) && rc=0 || rc=$?
echo "# second mount of another drive: $out"
check "a second read-write mount of another drive is refused" [ "$rc" != 0 ]
check "... in one line" [ "$(printf '%s\n' "$out" | wc -l)" = 1 ]
check "... and nothing is mounted there" bash -c "! mountpoint -q '$MNT2'"
mkdir "$MNT/d"
check "pathfsctl ls reaches the writer on this machine" \
	bash -c "'$PATHFSCTL' -s '$STORE' ls / | grep -q ' one\$'"
check "... and so does a write command (mv)" \
	"$PATHFSCTL" -s "$STORE" mv /d /d2
check "... which the mount sees" bash -c "[ -d '$MNT/d2' ] && [ ! -e '$MNT/d' ]"
check "... for a URL naming the members in another order" \
	"$PATHFSCTL" -s "etcd://$(tr , '\n' <<<"$PATHFS_TEST_ETCD" | tac | paste -sd,)/ow$$" \
	mv /d2 /d3
check "... (seen)" [ -d "$MNT/d3" ]
# every spelling of the store names one daemon (store_identity()): a
# trailing slash, options, localhost for 127.0.0.1 in any case, a member
# named twice
check "... for the URL with a trailing slash" \
	"$PATHFSCTL" -s "$STORE/" mv /d3 /d4
check "... (seen)" [ -d "$MNT/d4" ]
check "... for one with localhost, options, a member twice" \
	"$PATHFSCTL" -s "etcd://${eps[2]/127.0.0.1/LocalHost},${eps[1]/127.0.0.1/localhost},${eps[0]},${eps[2]}/ow$$/?lease-ttl=7" \
	mv /d4 /d5
check "... (seen)" [ -d "$MNT/d5" ]
rmdir "$MNT/d5"
out=$("$PATHFSCTL" -s "etcd://$PATHFS_TEST_ETCD/ow$$-2" ls / 2>&1) && rc=0 || rc=$?
echo "# another NAME: $out"
check "another NAME does not reach it" [ "$rc" != 0 ]
check "... it is no store" grep -q "no store at" <<<"$out"
check "a -o ro mount beside the writer" \
	"$PATHFS" -o ro -o "log=$T/ro.log" "$STORE" "$MNT2"
check "... reads the writer's file" [ "$(cat "$MNT2/one")" = one ]
check "... and cannot write" bash -c "! echo x >'$MNT2/two' 2>/dev/null"
fusermount3 -u "$MNT2"
echo two >"$MNT/two"
check "the writer still writes" [ "$(cat "$MNT/two")" = two ]
pfs_umount
check "after its unmount a new writer mounts at once" mount_until "$MNT2" "$T/b.log" 0
fusermount3 -u "$MNT2"
while [ -n "$(pid_at "$MNT2")" ]; do sleep 0.05; done

# ---- pathfsctl beside a writer on another machine ---------------------------
# etcd_v3 PATH JSON: a call to etcd's JSON gateway; key_b64 STRING: base64.
etcd_v3() {
	curl -s -X POST "http://${PATHFS_TEST_ETCD%%,*}/v3/$1" -d "$2"
}
key_b64() { printf '%s' "$1" | base64 -w0; }
# The owner key as a writer elsewhere holds it (kv_etcd.c): under a lease.
lease=$(etcd_v3 lease/grant '{"TTL": 120}' |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["ID"])')
far="pathfs (pid 4242 on elsewhere, open 00000000000000aa)"
etcd_v3 kv/put "{\"key\": \"$(key_b64 "ow$$/m/owner")\", \"value\": \"$(key_b64 "$far")\", \"lease\": \"$lease\"}" >/dev/null
owner_key() {
	etcd_v3 kv/range "{\"key\": \"$(key_b64 "ow$$/m/owner")\"}" |
		python3 -c 'import base64,json,sys; kv=json.load(sys.stdin).get("kvs",[]); print(base64.b64decode(kv[0]["value"]).decode() if kv else "")'
}
check "the far writer holds the store" [ "$(owner_key)" = "$far" ]
for cmd in "ls /" "ls --json /" "stat /one" "tree /" "du /" "du --json /" \
	"fsck" "fsck --json" "drives"; do
	out=$("$PATHFSCTL" -s "$STORE" $cmd 2>&1) && rc=0 || rc=$?
	check "pathfsctl $cmd works beside it" [ "$rc" = 0 ]
done
check "... and reads what the store holds" \
	bash -c "'$PATHFSCTL' -s '$STORE' ls / | grep -q ' two\$'"
check "... du counts it" bash -c "'$PATHFSCTL' -s '$STORE' du --json / | grep -q '\"files\": 2'"
for cmd in "mv /one /uno" "rm -r /two" "fsck --repair" "mkdrive x" "recover"; do
	out=$("$PATHFSCTL" -s "$STORE" $cmd 2>&1 >/dev/null) && rc=0 || rc=$?
	check "pathfsctl $cmd is refused" [ "$rc" != 0 ]
	check "... in one line naming the writer" bash -c \
		"[ \"\$(wc -l <<<'$out')\" = 1 ] && grep -qF 'open read-write by $far' <<<'$out'"
done
echo "# refused: $out"
out=$("$PATHFS" "$STORE" "$MNT2" 2>&1) && rc=0 || rc=$?
echo "# mount beside it: $out"
check "a read-write mount beside it is refused" [ "$rc" != 0 ]
check "... in one line naming the writer" bash -c \
	"[ \"\$(wc -l <<<'$out')\" = 1 ] && grep -qF 'open read-write by $far' <<<'$out'"
check "... and nothing is mounted there" bash -c "! mountpoint -q '$MNT2'"
check "nothing was changed" \
	bash -c "'$PATHFSCTL' -s '$STORE' ls / | grep -q ' one\$'"
check "the readers took no owner key" [ "$(owner_key)" = "$far" ]
etcd_v3 lease/revoke "{\"ID\": \"$lease\"}" >/dev/null
check "once it is gone pathfsctl writes" "$PATHFSCTL" -s "$STORE" mkdrive x
check "... and removes" "$PATHFSCTL" -s "$STORE" rmdrive x

# ---- the writer killed mid-rename, another daemon takes over -----------------
check "plant a 10,000-entry folder" "$PLANT" many "$STORE" main /big 10000
pfs_mount -o "log=$T/a.log"
check "no journal record before the rename" [ "$(journal_records)" = 0 ]
mv "$MNT/big" "$MNT/big2" 2>/dev/null &
mvpid=$!
for i in $(seq 1 400); do
	[ "$(journal_records)" = 0 ] || break
	sleep 0.02
done
kill -9 "$(pfs_pid)"
wait "$mvpid" || true
records=$(journal_records)
echo "# killed the writer with $records journal record(s) left"
check "the kill landed while the rename ran" [ "$records" = 1 ]
pfs_reap
check "a second daemon mounts once the lease expires" \
	mount_until "$MNT2" "$T/b.log" $((TTL * 8))
check "10,000 entries under the new name" \
	[ "$(ls "$MNT2/big2" | wc -l)" = 10000 ]
check "the old name is gone" [ ! -e "$MNT2/big" ]
check "the earlier files are there" [ "$(cat "$MNT2/one" "$MNT2/two")" = "one
two" ]
check "the journal was replayed" grep -q "replaying rename" "$T/mount.err"
check "... and its record is gone" [ "$(journal_records)" = 0 ]
fusermount3 -u "$MNT2"
while [ -n "$(pid_at "$MNT2")" ]; do sleep 0.05; done
check "fsck is clean after the takeover" pfs_fsck

# ---- a stale writer is fenced ------------------------------------------------
pfs_mount -o "log=$T/stale.log"
echo before >"$MNT/before"
echo keep >"$MNT/keep"
apid=$(pfs_pid)
kill -STOP "$apid"
check "a new writer mounts while the old one is stopped" \
	mount_until "$MNT2" "$T/b.log" $((TTL * 8))
echo new >"$MNT2/fromB"
kill -CONT "$apid"
check "the stale writer cannot create" bash -c "! echo a >'$MNT/fromA' 2>/dev/null"
check "... nor remove" bash -c "! rm '$MNT/keep' 2>/dev/null"
check "... nor rename" bash -c "! mv '$MNT/before' '$MNT/after' 2>/dev/null"
check "... nor write into a file" python3 -c "
try:
    f = open('$MNT/keep', 'a')
    f.write('more')
    f.close()
except OSError:
    raise SystemExit(0)
raise SystemExit(1)"
check "it said so in one log line" \
	[ "$(grep -c "no longer its writer" "$T/stale.log")" = 1 ]
check "none of its writes landed (fromA)" [ ! -e "$MNT2/fromA" ]
check "none of its writes landed (keep)" [ "$(cat "$MNT2/keep")" = keep ]
check "none of its writes landed (before)" \
	bash -c "[ -e '$MNT2/before' ] && [ ! -e '$MNT2/after' ]"
check "the new writer's file is there" [ "$(cat "$MNT2/fromB")" = new ]
check "the new writer still writes" bash -c "echo more >'$MNT2/more'"
pfs_umount
fusermount3 -u "$MNT2"
while [ -n "$(pid_at "$MNT2")" ]; do sleep 0.05; done
check "fsck is clean after the fenced writer" pfs_fsck
sanitizer_clean
finish
