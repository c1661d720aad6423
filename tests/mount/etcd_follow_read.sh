#!/usr/bin/env bash
# etcd_follow_read.sh - a -o ro mount's read that races the writer's
# truncate or removal of the same file returns bytes the file had at one
# moment (the old file, or the new shorter one), never the old size with
# the dropped part read as zeros (tests/with_etcd.sh starts a 3-member
# cluster and passes its endpoints in $PATHFS_TEST_ETCD). The follower runs
# with PATHFS_READ_PAUSE_MS (store/crash_hook.c: each read sleeps between the
# file's record and its blocks), so the writer's change lands inside the
# read every time: the follower reads the file (O_DIRECT, past the kernel's
# pages) while the writer truncates it to 4 KiB, or removes it, and then
# writes it again; the file's bytes never hold a zero. Rounds alternate.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

: "${PATHFS_TEST_ETCD:?run through tests/with_etcd.sh}"
STORE="etcd://$PATHFS_TEST_ETCD/fr$$"
RO=$T/ro
PAUSE_MS=1500
SIZE=262144 # four 64 KiB blocks
mkdir -p "$RO"

# seen LIMIT_MS CMD...: polls CMD every 20 ms for at most LIMIT_MS.
seen() {
	local limit=$1 start
	shift
	start=$(date +%s%N)
	until "$@" 2>/dev/null; do
		[ $((($(date +%s%N) - start) / 1000000)) -lt "$limit" ] || return 1
		sleep 0.02
	done
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
whole() { [ "$(stat -c %s "$RO/f")" = $SIZE ]; }

head -c $SIZE <(yes "pathfs follower read, never a zero byte") >"$T/pattern"
pfs_mount -o "log=$T/w.log"
cp "$T/pattern" "$MNT/f"
check "a -o ro mount whose reads pause between record and blocks" \
	env PATHFS_READ_PAUSE_MS=$PAUSE_MS \
	"$PATHFS" -o ro -o "log=$T/ro.log" "$STORE" "$RO"

for round in 1 2 3 4; do
	if [ $((round % 2)) = 1 ]; then how=truncate; else how=remove; fi
	check "round $round: the ro mount sees the whole file" \
		seen 3000 whole
	out=$T/out.$round
	start=$(now_ms)
	(dd if="$RO/f" of="$out" iflag=direct bs=$SIZE count=1 status=none \
		2>"$out.err" || true; now_ms >"$out.end") &
	reader=$!
	sleep 0.3 # the follower has read the record and pauses
	if [ $how = truncate ]; then
		truncate -s 4096 "$MNT/f"
	else
		rm "$MNT/f"
	fi
	changed=$(now_ms)
	wait $reader
	end=$(cat "$out.end")
	cp "$T/pattern" "$MNT/f" # extended (or made) again
	n=$(stat -c %s "$out")
	echo "# round $round ($how): read $n bytes in $((end - start)) ms," \
		"the writer's $how done after $((changed - start)) ms" \
		"$(head -c 200 "$out.err")"
	check "round $round: the $how landed while the read was paused" \
		[ "$changed" -lt "$end" -a $((end - start)) -ge $PAUSE_MS ]
	check "round $round ($how): no zero byte read" \
		[ "$(tr -d '\000' <"$out" | wc -c)" = "$n" ]
	check "round $round ($how): the bytes read are the file's" \
		cmp -s -n "$n" "$out" "$T/pattern"
	check "round $round ($how): something was read" [ "$n" -gt 0 ]
done

MNT=$RO pfs_umount # the follower's: unmounted, its daemon gone
pfs_umount
check "fsck is clean" pfs_fsck
sanitizer_clean
finish
