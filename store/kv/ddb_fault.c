/*
 * ddb_fault.c - the test-only fault hook of the DynamoDB client (ddb.c):
 * with PATHFS_DDB_FAULT=KIND:N in the environment, read once at ddb_open(),
 * every Nth request of that open fails the way DynamoDB fails under load,
 * so that a test can check that the retries of ddb_call() lose nothing and
 * apply nothing twice. KIND:
 *
 *   throttle - not sent, answered as throttled, in turn: HTTP 400
 *              ThrottlingException, ProvisionedThroughputExceededException,
 *              and TransactionCanceledException with a TransactionConflict
 *              reason (for a TransactWriteItems; else the first again);
 *   500      - not sent, answered HTTP 500 InternalServerError;
 *   drop     - sent, and its answer lost as if the connection dropped: the
 *              request may well have been applied, the case the
 *              transactions' ClientRequestToken and the lease's own-owner
 *              check are for.
 *
 * Each fault injected is counted (ddb_counts()'s faults) and logged at
 * LOG_DEBUG, like the retry that follows it.
 *
 * Limits: a fault is the same whatever the request's size; requests are
 * counted per open, across threads, so which request fails depends on
 * their order. A malformed value turns the hook off (logged once).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddb_fault_i.h"
#include "log.h"

enum { MODE_THROTTLE, MODE_500, MODE_DROP };

static const char *const mode_name[] = {"throttle", "500", "drop"};

void ddb_fault_init(struct ddb_fault *f)
{
	const char *e = getenv("PATHFS_DDB_FAULT");
	const char *colon;
	char *end;
	unsigned long v;
	size_t len;

	memset(f, 0, sizeof(*f));
	if (!e || !*e)
		return;
	colon = strchr(e, ':');
	len = colon ? (size_t)(colon - e) : 0;
	for (f->mode = 0; f->mode < 3; f->mode++)
		if (len == strlen(mode_name[f->mode]) &&
		    !strncmp(e, mode_name[f->mode], len))
			break;
	v = colon ? strtoul(colon + 1, &end, 10) : 0;
	if (f->mode == 3 || !colon || *end || v == 0 || v > 1000000) {
		plog(LOG_WARNING,
		     "PATHFS_DDB_FAULT=%.64s: not throttle:N, 500:N or drop:N "
		     "(N >= 1); no faults",
		     e);
		f->mode = 0;
		return;
	}
	f->every = (unsigned)v;
	plog(LOG_WARNING, "PATHFS_DDB_FAULT: every %u. DynamoDB request: %s",
	     f->every, mode_name[f->mode]);
}

enum ddb_fault_kind ddb_fault_next(struct ddb_fault *f, const char *op,
				   long *status, const char **body)
{
	static const char *const throttled[] = {
	    "{\"__type\":\"com.amazonaws.dynamodb.v20120810#"
	    "ThrottlingException\",\"message\":\"Rate of requests exceeds "
	    "the allowed throughput (PATHFS_DDB_FAULT)\"}",
	    "{\"__type\":\"com.amazonaws.dynamodb.v20120810#"
	    "ProvisionedThroughputExceededException\",\"message\":\"The "
	    "level of configured provisioned throughput for the table was "
	    "exceeded (PATHFS_DDB_FAULT)\"}",
	    "{\"__type\":\"com.amazonaws.dynamodb.v20120810#"
	    "TransactionCanceledException\",\"Message\":\"Transaction "
	    "cancelled (PATHFS_DDB_FAULT)\",\"CancellationReasons\":[{"
	    "\"Code\":\"TransactionConflict\",\"Message\":\"Transaction is "
	    "ongoing for the item\"}]}",
	};
	uint64_t n, k;

	if (!f->every)
		return DDB_FAULT_NONE;
	n = __atomic_add_fetch(&f->n, 1, __ATOMIC_RELAXED);
	if (n % f->every)
		return DDB_FAULT_NONE;
	k = __atomic_add_fetch(&f->fired, 1, __ATOMIC_RELAXED);
	plog(LOG_DEBUG, "PATHFS_DDB_FAULT: request %llu (%s): %s",
	     (unsigned long long)n, op, mode_name[f->mode]);
	switch (f->mode) {
	case MODE_THROTTLE:
		k %= strcmp(op, "TransactWriteItems") ? 2 : 3;
		*status = 400;
		*body = throttled[k];
		return DDB_FAULT_ANSWER;
	case MODE_500:
		*status = 500;
		*body = "{\"__type\":\"com.amazonaws.dynamodb.v20120810#"
			"InternalServerError\",\"message\":\"Internal server "
			"error (PATHFS_DDB_FAULT)\"}";
		return DDB_FAULT_ANSWER;
	default:
		return DDB_FAULT_DROP;
	}
}
