#!/usr/bin/env bash
# Runs the whole test suite: unit tests on real RocksDB stores and mount tests
# through /dev/fuse, in a plain build and again under AddressSanitizer and
# UndefinedBehaviorSanitizer, both built with -Dwerror=true (a warning fails the
# run). Needs root for the mount tests.
#   ./test.sh            both builds
#   ./test.sh --quick    plain build only
# Each build directory is set up, or reconfigured if it exists (demo.sh's
# build/ has no -Dwerror), with the options above, checked in its meson-info.
# Prints one line per suite and the totals; the build's and the tests' whole
# output goes to build/test.sh.log (it says so), and a failing suite's log is
# printed too.
set -euo pipefail
cd "$(dirname "$0")"
scripts/deps.sh

builds=(build)
[ "${1:-}" = "--quick" ] || builds+=(build-asan)
mkdir -p build
out=build/test.sh.log
: >"$out"
echo "test.sh: the whole log (builds, tests) is in $PWD/$out"

# The options build $1 must have, as meson -D arguments.
opts_of() {
	echo -Dwerror=true
	if [ "$1" = build-asan ]; then
		echo -Db_sanitize=address,undefined -Db_lundef=false
	else
		echo -Db_sanitize=none
	fi
}

# Fails unless build $1's meson-info shows every option of opts_of.
opts_check() {
	local b=$1 o name want got
	for o in $(opts_of "$b"); do
		name=${o#-D}
		want=${name#*=}
		name=${name%%=*}
		got=$(python3 - "$b/meson-info/intro-buildoptions.json" \
			"$name" <<'PY'
import json, sys
for o in json.load(open(sys.argv[1])):
	if o["name"] == sys.argv[2]:
		v = o["value"]
		print(",".join(v) if isinstance(v, list) else
		      str(v).lower() if isinstance(v, bool) else v)
PY
)
		if [ "$got" != "$want" ]; then
			echo "test.sh: $b has $name=$got, wants $want" >&2
			return 1
		fi
	done
}

# Sets build $1 up with its options, or reconfigures it, and builds it.
build() {
	local b=$1
	echo "== $b: setup and build" >>"$out"
	if [ -f "$b/meson-private/coredata.dat" ]; then
		# shellcheck disable=SC2046
		meson setup --reconfigure "$b" $(opts_of "$b") >>"$out" 2>&1
	else
		# shellcheck disable=SC2046
		meson setup "$b" $(opts_of "$b") >>"$out" 2>&1
	fi
	opts_check "$b"
	ninja -C "$b" >>"$out" 2>&1
}

pass=0
fail=0
for b in "${builds[@]}"; do
	echo "$b: building ($(opts_of "$b" | tr '\n' ' ' | sed 's/ $//'))"
	if ! build "$b"; then
		tail -n 40 "$out" >&2
		echo "test.sh: $b failed to build; the whole log is $PWD/$out" >&2
		exit 1
	fi
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
	# meson test prints one line per suite, a failing suite's log after
	# it (--print-errorlogs) and its counts; the counts are summed below.
	echo "== $b: meson test" >>"$out"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		meson test -C "$b" --no-rebuild --print-errorlogs \
		--num-processes 2 2>&1 | tee -a "$out" |
		grep --line-buffered -Ev '^(Ok|Expected Fail|Fail|Unexpected Pass|Skipped|Timeout): |^Full log written to |^$'
	set -e
	ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$log" | tail -n1)
	bad=$(sed -n 's/^\(Fail\|Timeout\|Unexpected Pass\): *\([0-9]*\).*/\2/p' "$log" |
		awk '{s+=$1} END {print s+0}')
	pass=$((pass + ${ok:-0}))
	fail=$((fail + ${bad:-0}))
	echo "$b: ${ok:-0} passed, ${bad:-0} failed (log: $PWD/$log)"
done
echo "tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
