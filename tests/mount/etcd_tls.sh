#!/usr/bin/env bash
# etcd_tls.sh - a drive on a 3-member etcd cluster that speaks TLS only,
# wants a client certificate and has authentication on (tests/with_etcd.sh
# --tls starts it with certificates made by openssl; meson passes
# ETCD_EXTRA=--auth-token-ttl=2, so etcd forgets a token idle for 2 s). The
# test enables auth itself: a root user, and user pfs whose one role grants
# readwrite on the store's key prefix NAME/ only, so every step below also
# shows that the daemon and pathfsctl touch no key outside it.
#
# Mounted by etcd+https://...?cacert=&cert=&key=&user=&password-file=: cp,
# a folder rename, then a -o ro mount (a second daemon) that sees it; both
# left idle past the token's TTL, the writer writes and renames again and
# the -o ro mount follows (both authenticated again); pathfsctl through the
# daemon and on its own (fsck); the password taken from
# $PATHFS_ETCD_PASSWORD; the password never in a log, the process list or
# the mount table. Then each refusal is one line naming its cause within
# 5 s: wrong password (pathfs and pathfsctl), no user, a role without the
# store's prefix, the wrong CA, no client certificate, http to the TLS
# cluster, a member not listening, one that never answers, a password in
# the URL.
source "$(dirname "$0")/lib.sh"
sanitizer_logs

: "${PATHFS_TEST_ETCD:?run through tests/with_etcd.sh --tls}"
: "${PATHFS_TEST_ETCD_PKI:?run through tests/with_etcd.sh --tls}"
PKI=$PATHFS_TEST_ETCD_PKI
CLUSTER=$PATHFS_TEST_ETCD_DIR
CLUSTER_SH=$TESTS_DIR/etcd_cluster.sh
NAME=tls$$
RO=$T/ro
mkdir -p "$RO"
ctl() { "$CLUSTER_SH" ctl "$CLUSTER" "$@"; }

# ---- RBAC: root, and user pfs limited to the store's prefix ----------------
PW=pw-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
ROOTPW=root-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
{
	printf '%s\n' "$ROOTPW" | ctl user add root --interactive=false
	ctl user grant-role root root
	printf '%s\n' "$PW" | ctl user add pfs --interactive=false
	ctl role add "rw-$NAME"
	ctl role grant-permission "rw-$NAME" --prefix=true readwrite "$NAME/"
	ctl user grant-role pfs "rw-$NAME"
	ctl auth enable
	ctl --user "root:$ROOTPW" put other/key outside
} >"$T/rbac.log" 2>&1 || {
	cat "$T/rbac.log" >&2
	echo "FAIL: cannot enable auth on the cluster" >&2
	exit 1
}
printf '%s\n' "$PW" >"$T/pw"
chmod 600 "$T/pw"
TLS="cacert=$PKI/ca.crt&cert=$PKI/client.crt&key=$PKI/client.key"
# lease-ttl=30: the writer's keeper renews every 10 s, so no request keeps
# a token alive across the idle pauses below
BASE="etcd+https://$PATHFS_TEST_ETCD/$NAME?$TLS&lease-ttl=30"
STORE="$BASE&user=pfs&password-file=$T/pw"

# poll SECONDS CMD...: CMD until it succeeds, for at most SECONDS
poll() {
	local end=$(($(date +%s) + $1))
	shift
	until "$@" 2>/dev/null; do
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 0.1
	done
}

# ---- writer, then a -o ro mount that follows it ----------------------------
mkdir -p "$T/src/sub"
for i in $(seq 1 40); do echo "file $i" >"$T/src/f$i"; done
for i in $(seq 1 5); do head -c $((i * 70000)) /dev/urandom >"$T/src/sub/r$i"; done
pfs_mount -o "log=$T/writer.log"
check "mount over TLS with a user" mountpoint -q "$MNT"
check "cp -a of a folder" cp -a "$T/src" "$MNT/docs"
check "mv of the folder" mv "$MNT/docs" "$MNT/papers"
check "diff -r after mv" diff -r "$T/src" "$MNT/papers"
"$PATHFS" -o "ro,log=$T/ro.log" "$STORE" "$RO"
check "a -o ro mount (a second daemon)" poll 5 mountpoint -q "$RO"
check "the -o ro mount sees the renamed folder" diff -r "$T/src" "$RO/papers"
check "the -o ro mount does not see the old name" [ ! -e "$RO/docs" ]

# ---- idle past the tokens' TTL: both authenticate again --------------------
sleep 3
check "a write after the token expired" \
	bash -c "echo late >'$MNT/papers/late'"
check "a folder rename after the token expired" \
	mv "$MNT/papers/sub" "$MNT/papers/sub2"
check "the -o ro mount follows: the new file" \
	poll 5 grep -qx late "$RO/papers/late"
check "the -o ro mount follows: the renamed folder" \
	poll 5 test -d "$RO/papers/sub2" -a ! -e "$RO/papers/sub"
sleep 3
check "the -o ro mount reads after its token expired" \
	diff -r "$T/src/sub" "$RO/papers/sub2"
check "pathfsctl -s URL ls (through the daemon)" \
	bash -c "'$PATHFSCTL' -s '$STORE' ls /papers | grep -q late"

# ---- the password is nowhere to be read ------------------------------------
# (grep -f: the checks' own arguments must not hold it either)
check "the password is in no process's arguments" \
	bash -c "! ps -eo args | grep -qFf '$T/pw'"
check "the password is not in the mount table" \
	bash -c "! grep -qFf '$T/pw' /proc/mounts"
MNT=$RO pfs_umount
pfs_umount
check "the password is in no log" \
	bash -c "! grep -qFf '$T/pw' '$T/writer.log' '$T/ro.log'"
check "the daemons logged no error" \
	bash -c "! grep -E ' (ERR|WARNING): ' '$T/writer.log' '$T/ro.log'"

# ---- pathfsctl on its own; the password from the environment ---------------
check "pathfsctl -s URL fsck is clean" "$PATHFSCTL" -s "$STORE" fsck
PATHFS_ETCD_PASSWORD=$PW "$PATHFS" -o "log=$T/env.log" "$BASE&user=pfs" "$MNT"
check "a mount with the password from \$PATHFS_ETCD_PASSWORD" \
	poll 5 mountpoint -q "$MNT"
check "it reads the drive" diff -r "$T/src/sub" "$MNT/papers/sub2"
pfs_umount
outside=$(ctl --user "root:$ROOTPW" get --prefix '' --keys-only 2>/dev/null |
	grep -v '^$' | grep -v "^$NAME/" || true)
check "the cluster holds no key of the store outside its prefix" \
	[ "$outside" = other/key ]

# ---- refusals: one line naming the cause, within 5 s -----------------------
# refused WHAT PATTERN CMD...: CMD must fail within 5 s, printing one line
# that matches PATTERN (grep -E), and mount nothing
refused() {
	local what=$1 pat=$2 out rc=0 start ms
	shift 2
	start=$(date +%s%N)
	out=$("$@" 2>&1) || rc=$?
	ms=$((($(date +%s%N) - start) / 1000000))
	echo "# $what: $ms ms: $out"
	check "$what: refused" [ "$rc" -ne 0 ]
	check "$what: one line" [ "$(printf '%s\n' "$out" | wc -l)" = 1 ]
	check "$what: says why" grep -qE -- "$pat" <<<"$out"
	check "$what: within 5 s" [ "$ms" -lt 5000 ]
	check "$what: nothing mounted" bash -c "! mountpoint -q '$RO'"
}
echo "not-the-password" >"$T/bad"
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
refused "wrong password" "authentication failed: wrong user name or password" \
	"$PATHFS" -o ro "$BASE&user=pfs&password-file=$T/bad" "$RO"
refused "pathfsctl, wrong password" "authentication failed" \
	"$PATHFSCTL" -s "$BASE&user=pfs&password-file=$T/bad" ls /
refused "a read-write mount, wrong password" "authentication failed" \
	"$PATHFS" "$BASE&user=pfs&password-file=$T/bad" "$RO"
refused "no user" "wants authentication: give user=" \
	"$PATHFS" -o ro "$BASE" "$RO"
refused "a role without the store's prefix" \
	"permission denied .*readwrite on key prefix other$$/" \
	"$PATHFS" -o ro "${STORE/\/$NAME\?//other$$?}" "$RO"
refused "the wrong CA" "SSL certificate problem" \
	"$PATHFS" -o ro "${STORE/ca.crt/other-ca.crt}" "$RO"
refused "no client certificate" "client certificate" \
	"$PATHFS" -o ro \
	"etcd+https://$PATHFS_TEST_ETCD/$NAME?cacert=$PKI/ca.crt&user=pfs&password-file=$T/pw" \
	"$RO"
refused "http to the TLS cluster" "speak TLS\? use etcd\+https://" \
	"$PATHFS" -o ro "etcd://$PATHFS_TEST_ETCD/$NAME?user=pfs&password-file=$T/pw" "$RO"
refused "http to the TLS cluster, no options" "speak TLS\? use etcd\+https://" \
	"$PATHFS" -o ro "etcd://$PATHFS_TEST_ETCD/$NAME" "$RO"
port=$(free_port)
refused "a member not listening" "127.0.0.1:$port: Connection refused" \
	"$PATHFS" -o ro "etcd+https://127.0.0.1:$port/$NAME?$TLS&user=pfs&password-file=$T/pw" "$RO"
refused "a member not listening, plain http" "127.0.0.1:$port: Connection refused" \
	"$PATHFS" -o ro "etcd://127.0.0.1:$port/$NAME" "$RO"
# a listener that never accepts: the TLS handshake waits, and times out
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True); time.sleep(60)' >"$T/silent" &
silent=$!
poll 5 test -s "$T/silent"
port=$(cat "$T/silent")
refused "a member that never answers" "127.0.0.1:$port: .*(timeout|Timeout|timed out)" \
	"$PATHFS" -o ro "etcd+https://127.0.0.1:$port/$NAME?$TLS&user=pfs&password-file=$T/pw" "$RO"
kill "$silent"
wait "$silent" 2>/dev/null || true
refused "a password in the URL" "never taken from the URL" \
	"$PATHFS" -o ro "$BASE&user=pfs&password=$PW" "$RO"
refused "user=NAME:PASSWORD" "takes no password" \
	"$PATHFS" -o ro "$BASE&user=pfs:$PW" "$RO"
refused "a missing password file" "password-file $T/none: No such file" \
	"$PATHFS" -o ro "$BASE&user=pfs&password-file=$T/none" "$RO"
sanitizer_clean
finish
