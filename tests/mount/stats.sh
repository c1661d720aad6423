#!/usr/bin/env bash
# stats.sh - the daemon's per-request statistics: `pathfsctl stats` counts
# what the kernel sent for a known workload (creating N files is at least N
# LOOKUPs, CREATEs, WRITEs and RELEASEs; one mkdir is exactly one MKDIR),
# --reset starts from zero, --json adds up, SIGUSR1 logs the table and the
# daemon goes on serving, and an unmounted store has no statistics.
source "$(dirname "$0")/lib.sh"

N=300
ctl() { "$PATHFSCTL" -s "$STORE" "$@"; }
# count JSON OPCODE: the count of OPCODE in `stats --json` output JSON (0 if absent)
count() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["ops"].get(sys.argv[2], {}).get("count", 0))' "$1" "$2"; }

# -f with its log in a file, so SIGUSR1's lines can be read back
"$PATHFS" -f "$STORE" "$MNT" 2>"$T/log" &
for i in $(seq 1 100); do mountpoint -q "$MNT" && break; sleep 0.05; done
check "mounted in the foreground" mountpoint -q "$MNT"

mkdir "$MNT/d"
ctl stats --reset >/dev/null
python3 - "$MNT/d" "$N" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    fd = os.open(f"{d}/f{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b"x" * 100)
    os.close(fd)
PY
# RELEASE is sent after close(2) returns: wait until all have been answered
for i in $(seq 1 100); do
	j=$(ctl stats --json)
	[ "$(count "$j" RELEASE)" -ge "$N" ] && break
	sleep 0.05
done
for op in LOOKUP CREATE WRITE RELEASE; do
	check "creating $N files: >= $N ${op}s (got $(count "$j" $op))" \
		[ "$(count "$j" $op)" -ge "$N" ]
done
check "creating $N files: no MKDIR counted" [ "$(count "$j" MKDIR)" = 0 ]
check "JSON: every opcode's buckets add up to its count, the total too" \
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
ops = d["ops"].values()
assert all(sum(o["buckets_us_log2"]) == o["count"] > 0 for o in ops)
assert all(o["ns"] >= o["max_ns"] > 0 for o in ops)
assert d["count"] == sum(o["count"] for o in ops)
assert d["ns"] == sum(o["ns"] for o in ops)' "$j"
out=$(ctl stats)
check "table has a CREATE row with the count" \
	grep -Eq "^CREATE +$(count "$j" CREATE) " <<<"$out"

ctl stats --reset >/dev/null
j=$(ctl stats --json)
check "after --reset: nothing counted" \
	python3 -c 'import json,sys; assert json.loads(sys.argv[1])["count"] == 0' "$j"
mkdir "$MNT/d2"
j=$(ctl stats --json)
check "one mkdir: exactly one MKDIR" [ "$(count "$j" MKDIR)" = 1 ]

pid=$(pfs_pid)
kill -USR1 "$pid"
for i in $(seq 1 100); do grep -q "stats: MKDIR" "$T/log" && break; sleep 0.05; done
check "SIGUSR1 logs the table" grep -Eq "stats: MKDIR +1 " "$T/log"
check "still serving after SIGUSR1" [ "$(cat "$MNT/d/f7")" = "$(printf 'x%.0s' $(seq 100))" ]
check "help names the command" sh -c "'$PATHFSCTL' help | grep -q 'stats \[--json\] \[--reset\]'"

pfs_umount
wait
out=$(ctl stats 2>&1) && rc=0 || rc=$?
check "unmounted: stats fails (exit 1)" [ "$rc" = 1 ]
check "unmounted: says why" grep -q "not mounted" <<<"$out"
finish
