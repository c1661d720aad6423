/*
 * bench_ddb.c - the DynamoDB Local of `pathfs-bench backends`: AWS's
 * emulator (a JVM), installed by scripts/dynamodb_local.sh and started as
 * tests/with_dynamodb.sh starts it (in memory, on a free loopback port),
 * as our child (bench_server.c: stopped by pid on every way out), ready
 * when a signed ListTables answers. Each run's drive is a table of its own,
 * deleted after it.
 *
 * Limits: one instance per process. Its timings are a JVM's on this
 * machine, not DynamoDB's (a round trip to a region is 2-10 ms); the
 * capacity units it reports follow DynamoDB's rules (BENCHMARKS.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "bench.h"

static pid_t local_pid;

/* The folder of DynamoDBLocal.jar, from scripts/dynamodb_local.sh found
 * next to this source tree's build (or in PATH), into @jar. */
static int ddb_install(char *jar, size_t len)
{
	char *script = find_prog(NULL, "dynamodb_local.sh");
	char cmd[4400];
	FILE *p;
	int rc = -ENOENT;

	if (!script) {
		/* the build tree: tools/ -> ../../scripts */
		script = find_prog(NULL, "../../scripts/dynamodb_local.sh");
	}
	if (!script) {
		progress("cannot find scripts/dynamodb_local.sh");
		return -ENOENT;
	}
	snprintf(cmd, sizeof(cmd), "'%s'", script);
	free(script);
	p = popen(cmd, "r");
	if (p && fgets(jar, (int)len, p)) {
		jar[strcspn(jar, "\n")] = '\0';
		rc = 0;
	}
	if (p && pclose(p))
		rc = -ENOENT;
	if (rc)
		progress("scripts/dynamodb_local.sh could not install DynamoDB "
			 "Local");
	return rc;
}

int ddb_local_start(const char *dir, char *endpoint, size_t len)
{
	char jar[4096], log[4200], port[16], url[64];
	char *argv[] = {(char *)"java",
			(char *)"-Xmx1g",
			(char *)"-Djava.library.path=DynamoDBLocal_lib",
			(char *)"-jar",
			(char *)"DynamoDBLocal.jar",
			(char *)"-inMemory",
			(char *)"-port",
			port,
			NULL};
	char *probe[] = {(char *)"curl",
			 (char *)"-sf",
			 (char *)"-o",
			 (char *)"/dev/null",
			 (char *)"--max-time",
			 (char *)"5",
			 (char *)"--aws-sigv4",
			 (char *)"aws:amz:us-east-1:dynamodb",
			 (char *)"--user",
			 (char *)"fake:fake",
			 (char *)"-H",
			 (char *)"Content-Type: application/x-amz-json-1.0",
			 (char *)"-H",
			 (char *)"X-Amz-Target: DynamoDB_20120810.ListTables",
			 (char *)"-d",
			 (char *)"{}",
			 url,
			 NULL};
	int rc;

	rc = ddb_install(jar, sizeof(jar));
	if (rc)
		return rc;
	snprintf(port, sizeof(port), "%u", server_ports(1));
	snprintf(url, sizeof(url), "http://127.0.0.1:%s", port);
	snprintf(log, sizeof(log), "%s/dynamodb-local.log", dir);
	rc = server_spawn(&local_pid, jar, log, argv);
	if (!rc)
		rc = server_wait(&local_pid, 1, probe, 180, "DynamoDB Local");
	if (rc) {
		ddb_local_stop();
		return rc;
	}
	snprintf(endpoint, len, "%s", url);
	setenv("AWS_ACCESS_KEY_ID", "fake", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "fake", 1);
	setenv("AWS_REGION", "us-east-1", 1);
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_PROFILE");
	return 0;
}

void ddb_local_stop(void)
{
	server_stop(local_pid);
	local_pid = 0;
}

void ddb_drop_table(const char *endpoint, const char *table)
{
	if (run_sh("curl -sf -o /dev/null --max-time 30 --aws-sigv4 "
		   "aws:amz:us-east-1:dynamodb --user fake:fake -H "
		   "'Content-Type: application/x-amz-json-1.0' -H "
		   "'X-Amz-Target: DynamoDB_20120810.DeleteTable' -d "
		   "'{\"TableName\":\"%s\"}' '%s'",
		   table, endpoint))
		progress("could not delete table %s", table);
}
