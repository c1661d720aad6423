#!/usr/bin/env bash
# Runs the whole test suite: unit tests on real RocksDB stores and mount tests
# through /dev/fuse, in a plain build and again under AddressSanitizer and
# UndefinedBehaviorSanitizer, both built with -Dwerror=true (a warning fails the
# run). Needs root for the mount tests.
#   ./test.sh            both builds
#   ./test.sh --quick    plain build only
set -euo pipefail
cd "$(dirname "$0")"
scripts/deps.sh

builds=(build)
[ "${1:-}" = "--quick" ] || builds+=(build-asan)
pass=0
fail=0
for b in "${builds[@]}"; do
	if [ ! -d "$b" ]; then
		opts=(-Dwerror=true)
		[ "$b" = build-asan ] && opts+=(-Db_sanitize=address,undefined -Db_lundef=false)
		meson setup "$b" "${opts[@]}" >/dev/null
	fi
	ninja -C "$b"
	log="$b/meson-logs/testlog.txt"
	set +e
	if [ "$b" = build-asan ]; then
		# The sanitized pass runs every test, with fewer rounds of the
		# long crash and stress loops, to stay within CI's time budget;
		# the plain pass runs the full counts.
		export RENAME_KILL_ROUNDS=10 REL_KILL9_ROUNDS=8 \
			REL_STRESS_SECONDS=10 REL_READDIR_SECONDS=8 \
			REL_REMOUNT_ROUNDS=15
	fi
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		meson test -C "$b" --print-errorlogs --num-processes 2
	set -e
	ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$log" | tail -n1)
	bad=$(sed -n 's/^\(Fail\|Timeout\|Unexpected Pass\): *\([0-9]*\).*/\2/p' "$log" |
		awk '{s+=$1} END {print s+0}')
	pass=$((pass + ${ok:-0}))
	fail=$((fail + ${bad:-0}))
	echo "$b: ${ok:-0} passed, ${bad:-0} failed"
done
echo "tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
