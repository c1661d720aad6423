#!/usr/bin/env bash
# serve_loop.sh - the daemon's request loop (fs/loop.c): a program creating
# files one after the other is served by one thread (the reader serves cheap
# requests itself instead of waking an idle thread per request), and requests
# that take long run beside each other and beside cheap ones (parallel large
# writers and a file-creating loop all finish, content intact), and SIGTERM
# still ends it cleanly.
source "$(dirname "$0")/lib.sh"

N=300
pfs_mount
pid=$(pfs_pid)
mkdir "$MNT/d"

# voluntary context switches of every thread of the daemon
switches() { grep -H voluntary_ctxt_switches /proc/"$pid"/task/*/status |
	grep -v nonvoluntary | sed 's|/proc/[0-9]*/task/\([0-9]*\)/status:[^0-9]*| \1 |'; }

switches >"$T/before"
python3 - "$MNT/d" "$N" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    fd = os.open(f"{d}/f{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b"x" * 100)
    os.close(fd)
PY
sleep 0.2 # the last RELEASEs
switches >"$T/after"
# Per thread, how often it slept and woke meanwhile (a thread started since
# "before" counts from 0). libfuse's loop wakes its idle threads in turn, so
# several of them wake N/2 times or more; here one thread serves the run, or
# none reaches N/2 when a loaded machine preempts the reader before its next
# read(2) (the request is then waiting, read(2) does not sleep).
join -a 2 -e 0 -o 0,1.2,2.2 "$T/before" "$T/after" |
	awk '{print $1, $3 - $2}' >"$T/woke"
busy=$(awk -v min=$((N / 2)) '$2 >= min' "$T/woke" | wc -l)
check "$N files created one after the other: at most one thread woke for them (got $busy: $(tr '\n' ' ' <"$T/woke"))" \
	[ "$busy" -le 1 ]

# slow requests (1 MiB writes, fsync) from 4 writers beside a creating loop
python3 - "$MNT" <<'PY' &
import os, sys
m = sys.argv[1]
pids = []
for w in range(4):
    pid = os.fork()
    if pid == 0:
        fd = os.open(f"{m}/big{w}", os.O_WRONLY | os.O_CREAT, 0o644)
        for i in range(24):
            os.write(fd, bytes([65 + w]) * (1 << 20))
            if i % 8 == 7:
                os.fsync(fd)
        os.close(fd)
        os._exit(0)
    pids.append(pid)
for p in pids:
    assert os.waitpid(p, 0)[1] == 0
PY
writers=$!
for i in $(seq 1 200); do echo "$i" >"$MNT/d/g$i"; done
wait $writers
check "writers and creator all done: 4 files of 24 MiB" \
	[ "$(stat -c %s "$MNT"/big{0,1,2,3} | sort -u)" = $((24 << 20)) ]
check "each big file holds only its writer's byte" bash -c '
for w in 0 1 2 3; do
	c=$(printf "\\x$(printf %x $((65 + w)))")
	[ "$(tr -d "$c" <"'"$MNT"'/big$w" | wc -c)" = 0 ] || exit 1
done'
check "200 small files read back" bash -c \
	"for i in \$(seq 1 200); do [ \"\$(cat '$MNT/d/g'\$i)\" = \$i ] || exit 1; done"

# SIGTERM: libfuse's handler marks the session exited; the loop notices,
# stops the thread waiting in read(2), and the daemon unmounts and closes
kill -TERM "$pid"
for i in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
check "SIGTERM ends the daemon" bash -c "! kill -0 $pid 2>/dev/null"
check "SIGTERM unmounts" bash -c "! mountpoint -q '$MNT'"
pfs_mount
check "after SIGTERM: files intact at the next mount" \
	[ "$(cat "$MNT/d/g200")" = 200 ]
pfs_umount
finish
