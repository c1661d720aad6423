#!/usr/bin/env bash
# rel_ctl_args.sh - pathfsctl given hostile arguments: bad drive ids, paths
# without a leading '/', with empty, '.' or '..' names, over-long names and
# paths, bad --max-items, unknown options, and resume tokens that are
# garbage, truncated, forged, or for another command, path or drive. Each must
# be rejected (exit 1 or 2) with a message on stderr and change nothing: the
# whole store is dumped key by key with value hashes (rel_plant dump) before
# and after. Run on the unmounted store and again through the daemon's socket.
# The genuine resume tokens still work afterwards.
source "$(dirname "$0")/rel_lib.sh"

ctl() {
	timeout 60 "$PATHFSCTL" -s "$STORE" "$@"
}

rel_mount_fg
mkdir -p "$MNT/src/a" "$MNT/src/b" "$MNT/other/x"
for i in $(seq 1 20); do
	echo "a$i" >"$MNT/src/a/f$i"
	echo "b$i" >"$MNT/src/b/f$i"
	echo "x$i" >"$MNT/other/x/f$i"
done
rel_umount_fg
check "mkdrive d2" ctl mkdrive d2

# genuine tokens of budgeted runs (these runs do change the store)
token() { sed -n 's/^resume: //p' | tail -n 1; }
rc=0
T_RM=$(ctl rm -r --max-items 5 /src | token) || rc=$?
check "budgeted rm -r stops with a token" [ -n "$T_RM" ]
T_CP=$(ctl cp -r --max-items 5 /other /copy | token) || true
check "budgeted cp -r stops with a token" [ -n "$T_CP" ]
L=$(python3 -c "print('x' * 256)")
LONGP=$(python3 -c "print('/d' * 16384)") # TREE_PATH_MAX + 1 bytes
forge() { # flips one character in the middle of $1
	python3 -c "import sys; t = sys.argv[1]; i = len(t) // 2; print(t[:i] + ('A' if t[i] != 'A' else 'B') + t[i + 1:])" "$1"
}

# rejected DESC ARGS...: pathfsctl ARGS exits 1 or 2 with a message on stderr
rejected() {
	local what=$1 rc=0
	shift
	ctl "$@" >"$T/out" 2>"$T/err" </dev/null || rc=$?
	if { [ "$rc" -eq 1 ] || [ "$rc" -eq 2 ]; } && [ -s "$T/err" ]; then
		check "$what: rejected ($rc): $(head -n 1 "$T/err" | cut -c1-100)" true
	else
		check "$what: rejected with a message (got exit $rc)" false
		cat "$T/out" "$T/err" | head -n 5 >&2
	fi
}

hostile() {
	rejected "drive id with '/'" -d 'bad/id' ls /
	rejected "empty drive id" -d '' ls /
	rejected "65-byte drive id" -d "$(printf 'd%.0s' $(seq 65))" ls /
	rejected "drive id with '|'" -d 'a|b' ls /
	rejected "drive id with a space" -d 'a b' ls /
	rejected "missing drive" -d nosuch ls /
	rejected "ls of a path without a leading /" ls src
	rejected "stat of a path without a leading /" stat other/x
	rejected "rm -r of a path without a leading /" rm -r src
	rejected "cp -r to a path without a leading /" cp -r /other other2
	rejected "mv to a path without a leading /" mv /other other2
	rejected "cp -r to a bad drive id" cp -r /other 'bad|id:/x'
	rejected "cp -r to a missing drive" cp -r /other nosuch:/x
	rejected "mv into its own subtree" mv /other /other/x/inside
	rejected "cp -r into its own subtree" cp -r /other /other/x/inside
	rejected "rm -r of /" rm -r /
	rejected "empty path" ls ''
	rejected "path with //" rm -r /other//x
	rejected "path with ." rm -r /other/./x
	rejected "path with .." rm -r /other/../src
	rejected "256-byte name" rm -r "/$L"
	rejected "path over 32767 bytes" rm -r "$LONGP"
	rejected "rm -r of a missing path" rm -r /nosuch
	rejected "rm without -r" rm /other
	rejected "garbage token" rm -r --resume 'zzz' /src
	rejected "empty token" rm -r --resume '' /src
	rejected "truncated token" rm -r --resume "${T_RM:0:$((${#T_RM} / 2))}" /src
	rejected "token missing its last character" rm -r --resume "${T_RM%?}" /src
	rejected "forged token" rm -r --resume "$(forge "$T_RM")" /src
	rejected "rm token for another path" rm -r --resume "$T_RM" /other
	rejected "rm token given to cp -r" cp -r --resume "$T_RM" /src /x
	rejected "cp token given to rm -r" rm -r --resume "$T_CP" /other
	rejected "cp token given to mv" mv --resume "$T_CP" /other /copy
	rejected "cp token for another destination" cp -r --resume "$T_CP" /other /copy2
	rejected "rm token on another drive" -d d2 rm -r --resume "$T_RM" /src
	rejected "--max-items -1" rm -r --max-items -1 /src
	rejected "--max-items abc" rm -r --max-items abc /src
	rejected "--max-items with no value" rm -r /src --max-items
	rejected "unknown option" rm -r --frobnicate /src
	rejected "unknown command" frobnicate /src
	rejected "missing argument" rm -r
	rejected "extra argument" rm -r /src /other
	rejected "mkdrive with a bad name" mkdrive 'bad name'
	rejected "mkdrive of an existing drive" mkdrive main
	rejected "rmdrive of a missing drive" rmdrive nosuch
}

"$REL_PLANT" dump "$STORE" >"$T/dump.before"
hostile
"$REL_PLANT" dump "$STORE" >"$T/dump.after"
check "unmounted: the store is unchanged, key by key" \
	cmp -s "$T/dump.before" "$T/dump.after"
diff "$T/dump.before" "$T/dump.after" | head -n 10 >&2 || true

rel_mount_fg
echo "--- the same through the daemon" >&2
hostile
rejected "rmdrive of the mounted drive" rmdrive main
check "daemon alive" rel_alive
rel_umount_fg
"$REL_PLANT" dump "$STORE" >"$T/dump.after2"
check "mounted: the store is unchanged, key by key" \
	cmp -s "$T/dump.before" "$T/dump.after2"
diff "$T/dump.before" "$T/dump.after2" | head -n 10 >&2 || true

# the genuine tokens still work
rc=0
ctl rm -r --resume "$T_RM" /src >/dev/null || rc=$?
check "the genuine rm -r token finishes the job (exit $rc)" [ "$rc" -eq 0 ]
rc=0
ctl cp -r --resume "$T_CP" /other /copy >/dev/null || rc=$?
check "the genuine cp -r token finishes the job (exit $rc)" [ "$rc" -eq 0 ]
rel_mount_fg
check "/src is gone" [ ! -e "$MNT/src" ]
check "/copy equals /other" diff -r "$MNT/other" "$MNT/copy"
rel_umount_fg
check "fsck clean" rel_fsck
rel_finish
