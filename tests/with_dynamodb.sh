#!/usr/bin/env bash
# with_dynamodb.sh CMD [ARGS...] - runs CMD with a fresh DynamoDB Local
# (in memory, on a free loopback port; scripts/dynamodb_local.sh installs
# it) whose endpoint is in $PATHFS_TEST_DYNAMODB, PATHFS_TEST_KV=dynamodb,
# and fake AWS credentials (DynamoDB Local checks their form only); stops
# it by pid after, whatever CMD does. Its exit status is CMD's. The JVM may
# take minutes to answer on a loaded machine: it is given
# $PATHFS_DYNAMODB_WAIT seconds (180).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
jar=$("$here/../scripts/dynamodb_local.sh") || exit 1
dir=$(mktemp -d /tmp/pathfs-ddb.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket
s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$jar" && exec java -Xmx512m -Djava.library.path=DynamoDBLocal_lib \
	-jar DynamoDBLocal.jar -inMemory -port "$port") >"$dir/log" 2>&1 </dev/null &
pid=$!
export AWS_ACCESS_KEY_ID=fake AWS_SECRET_ACCESS_KEY=fake AWS_REGION=us-east-1
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_DEFAULT_REGION
end=$((SECONDS + ${PATHFS_DYNAMODB_WAIT:-180}))
until curl -s -o /dev/null --max-time 5 --aws-sigv4 aws:amz:us-east-1:dynamodb \
	--user fake:fake -H 'Content-Type: application/x-amz-json-1.0' \
	-H 'X-Amz-Target: DynamoDB_20120810.ListTables' -d '{}' \
	"http://127.0.0.1:$port/"; do
	if ! kill -0 "$pid" 2>/dev/null || [ $SECONDS -ge $end ]; then
		echo "with_dynamodb.sh: DynamoDB Local did not answer on port $port:" >&2
		cat "$dir/log" >&2
		exit 1
	fi
	sleep 0.5
done
export PATHFS_TEST_DYNAMODB=http://127.0.0.1:$port PATHFS_TEST_KV=dynamodb
"$@"
