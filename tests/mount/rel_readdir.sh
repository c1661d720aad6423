#!/usr/bin/env bash
# rel_readdir.sh - readers list a folder (getdents64 with small buffers, so
# every listing is many resumed readdir requests) and find(1) it while
# writers add, rename and remove entries whose names sort between the stable
# ones ("s0001", "s0001-", "s0001.x", "s0001 x": bytes below '/' included).
# No listing may show a name twice or miss a name that existed throughout
# (tests/helpers/rel_readdir.c). Before the churn: listing offsets stand for
# names (telldir/seekdir, and the kernel's listing cache shared by opens),
# and a reader's listing goes on when its last name is removed and another
# open lists the folder again.
source "$(dirname "$0")/rel_lib.sh"

NSTABLE=400
SECS=${REL_READDIR_SECONDS:-15}
rel_mount_fg
D=$MNT/churn
mkdir "$D"
check "setup: $NSTABLE stable entries" "$REL_READDIR" setup "$D" $NSTABLE
check "an offset resumes after its name, in any open, after changes" \
	"$REL_READDIR" seek "$D" $NSTABLE
mkdir "$MNT/pages"
check "a reader whose last name is removed goes on to the end when another open lists the folder again (a listing that ends at a page's end)" \
	"$REL_READDIR" pagecache "$MNT/pages"

# A listing that ends early was ended either by the daemon (an empty reply)
# or by the kernel's listing cache (no request at all): while the churn
# runs, a tracefs instance of the test's own records this connection's
# READDIRPLUS requests and every reply, and a failed reader gets its last
# requests and their replies shown (helpers/fuse_trace.py). Without tracefs
# the test runs as well, with less to show.
TRACE=
trace_start() {
	local tr=/sys/kernel/tracing dev conn
	[ -d $tr/instances ] || mount -t tracefs nodev $tr 2>/dev/null || true
	dev=$(mountpoint -d "$MNT") || return 0
	# the kernel's dev_t: major << 20 | minor
	conn=$(((${dev%%:*} << 20) | ${dev#*:}))
	mkdir "$tr/instances/pathfs-rel-readdir.$$" 2>/dev/null || return 0
	TRACE=$tr/instances/pathfs-rel-readdir.$$
	echo 32768 >"$TRACE/buffer_size_kb"
	echo mono >"$TRACE/trace_clock" # rel_readdir's clock
	echo "connection == $conn && opcode == 44" \
		>"$TRACE/events/fuse/fuse_request_send/filter"
	echo "connection == $conn" >"$TRACE/events/fuse/fuse_request_end/filter"
	echo 1 >"$TRACE/events/fuse/fuse_request_send/enable"
	echo 1 >"$TRACE/events/fuse/fuse_request_end/enable"
}
# trace_stop: shows the trace of each failed reader in $T/run.err; ends it.
trace_stop() {
	local pid
	[ -n "$TRACE" ] || return 0
	echo 0 >"$TRACE/tracing_on"
	for pid in $(sed -n 's/^reader \([0-9]*\): its last.*/\1/p' "$T/run.err"); do
		python3 "$TESTS_DIR/helpers/fuse_trace.py" "$TRACE/trace" 44 \
			"$pid" >&2
	done
	echo 0 >"$TRACE/events/fuse/fuse_request_send/enable"
	echo 0 >"$TRACE/events/fuse/fuse_request_end/enable"
	rmdir "$TRACE"
}

# find(1) readers next to the C readers, for the same time
find_loop() {
	local end=$((SECONDS + SECS)) n=0
	while [ $SECONDS -lt $end ]; do
		# find stats what it lists: an entry a writer just removed is
		# ENOENT, a race that is fine; any other error is not
		timeout 30 find "$D" -mindepth 1 -maxdepth 1 -printf '%f\n' \
			>"$T/find.$1.$n" 2>"$T/finderr.$1" || true
		if grep -v 'No such file or directory' "$T/finderr.$1" >&2; then
			return 1
		fi
		n=$((n + 1))
	done
	echo "find $1: $n listings" >&2
}
find_loop 1 &
F1=$!
find_loop 2 &
F2=$!
trace_start
check "4 writers, 3 readers, $SECS s: no duplicate, no stable entry missing" \
	timeout $((SECS + 120)) "$REL_READDIR" run "$D" $NSTABLE "$SECS" 4 3 \
	2>"$T/run.err"
cat "$T/run.err" >&2
trace_stop
check "find loop 1 ran" wait $F1
check "find loop 2 ran" wait $F2
bad=0
for f in "$T"/find.*; do
	"$REL_READDIR" checklist $NSTABLE "$f" || bad=$((bad + 1))
done
check "every find(1) listing complete and without duplicates" [ $bad -eq 0 ]
check "find -type d of the whole mount works after the churn" \
	timeout 60 find "$MNT" -type d -printf ''
check "daemon alive" rel_alive
check "fsck clean" rel_fsck
rel_umount_fg
rel_finish
