#!/usr/bin/env python3
"""fuse_trace.py - what one process asked a FUSE daemon and what came back.

    fuse_trace.py TRACE OPCODE PID [N]

TRACE is a tracefs "trace" file recorded with the fuse:fuse_request_send
and fuse:fuse_request_end events (tests/mount/rel_readdir.sh: trace_start).
Prints the last N (8) requests of OPCODE (a number: 44 is READDIRPLUS) that
process PID sent, each with the reply the daemon wrote for it: its length in
bytes (16 is a header alone: an empty listing, or an error) and error, or
"no reply traced". Used when a test fails, to tell an answer of the daemon
from one the kernel made up from its caches (no request sent).
"""
import re
import sys

SEND = re.compile(r"-(\d+)\s+\[\d+\].*?\s([\d.]+): fuse_request_send: "
                  r"connection \d+ req (\d+) opcode (\d+)")
END = re.compile(r"\s([\d.]+): fuse_request_end: connection \d+ req (\d+) "
                 r"len (\d+) error (-?\d+)")


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    path, opcode, pid = sys.argv[1], sys.argv[2], sys.argv[3]
    keep = int(sys.argv[4]) if len(sys.argv) == 5 else 8
    sent, ends = [], {}
    with open(path, errors="replace") as f:
        for line in f:
            m = SEND.search(line)
            if m:
                if m.group(1) == pid and m.group(4) == opcode:
                    sent.append((m.group(2), m.group(3)))
                continue
            m = END.search(line)
            if m:
                ends[m.group(2)] = (m.group(1), m.group(3), m.group(4))
    print(f"process {pid}: {len(sent)} requests of opcode {opcode} traced")
    for t, unique in sent[-keep:]:
        end = ends.get(unique)
        if end:
            print(f"  at {t} req {unique}: reply at {end[0]}, "
                  f"{end[1]} bytes, error {end[2]}")
        else:
            print(f"  at {t} req {unique}: no reply traced")


if __name__ == "__main__":
    main()
