/*
 * ddb_i.h - the client of DynamoDB's JSON API (POST of an operation's
 * request, X-Amz-Target: DynamoDB_20120810.<Operation>, and DynamoDB
 * Streams' DynamoDBStreams_20120810.<Operation>) over HTTPS, signed
 * with AWS Signature Version 4 by libcurl (CURLOPT_AWS_SIGV4), JSON by
 * json-c. Only ddb.c talks HTTP to DynamoDB; only the DynamoDB backend
 * (kv_ddb*.c) uses it, and the kv suite (tests/test_kv.c).
 *
 * Credentials are found the AWS way only, never in a URL or on a command
 * line: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN),
 * else the profile AWS_PROFILE (default "default") of the shared
 * credentials file (AWS_SHARED_CREDENTIALS_FILE, default
 * ~/.aws/credentials). They stay in this file's memory, wiped at close,
 * and are never logged. The region: the location's, else AWS_REGION, else
 * AWS_DEFAULT_REGION.
 *
 * Retries: throttling (ThrottlingException, ProvisionedThroughputExceeded,
 * RequestLimitExceeded), a transaction cancelled for a conflict or
 * throttling only, TransactionInProgress, a 5xx answer and a dropped or
 * refused connection are sent again after a pause with full jitter, growing
 * from 25 ms to 2 s, for at most DDB_RETRY_S seconds (until the open's first
 * answer, DDB_FIRST_S: an open says why within seconds). So a request may be
 * applied more than once: only send requests that are safe to repeat
 * (reads, conditioned writes, transactions with a ClientRequestToken).
 * Everything else fails at once, with one line of why (ddb_why()).
 * PATHFS_DDB_FAULT=KIND:N fails every Nth request on purpose (tests only:
 * ddb_fault.c).
 *
 * Internal to store/kv/.
 */
#ifndef PATHFS_DDB_I_H
#define PATHFS_DDB_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#define DDB_RETRY_S 60 /* how long a call keeps trying */
#define DDB_FIRST_S 15 /* ... until the first answer */

struct ddb;

/*
 * A client of DynamoDB in @region (NULL: the environment's) at @endpoint
 * (NULL: https://dynamodb.REGION.amazonaws.com), both copied, with the
 * credentials of the environment. No request is made. Errors: -EACCES (no
 * credentials), -EINVAL (no region), -ENOMEM; @why says why. *out is freed
 * with ddb_close().
 */
int ddb_open(struct ddb **out, const char *region, const char *endpoint,
	     char *why, size_t wlen);
void ddb_close(struct ddb *d);
/* After the open's first calls: retries last DDB_RETRY_S from now on. */
void ddb_opened(struct ddb *d);
/* Why the last call that failed did, in words, copied into @buf ("" if
 * none). */
void ddb_why(struct ddb *d, char *buf, size_t size);

/*
 * What client @d did since ddb_open() (relaxed atomics: exact once the
 * calls counted have returned): attempts sent (or failed by the fault
 * hook), retries, faults injected (PATHFS_DDB_FAULT, ddb_fault.c), Query
 * pages and transactions answered, and the capacity units DynamoDB says
 * the answered requests consumed (ReturnConsumedCapacity TOTAL), in
 * thousandths; of the write units, the transactions' as reported and as
 * DynamoDB's published rules make them from the request (2 per KB of each
 * item written or checked; DynamoDB Local reports 4 for any transaction).
 * A request that failed (a condition, a cancelled transaction) counts no
 * units, though DynamoDB bills some.
 */
struct ddb_counts {
	uint64_t requests, retries, faults;
	uint64_t query_pages, txns;
	uint64_t read_milli, write_milli;
	uint64_t txn_write_milli, txn_rule_milli;
};
void ddb_counts(struct ddb *d, struct ddb_counts *out);

/*
 * Sends operation @op (as "GetItem") with request @req (borrowed; an
 * operation that takes it gets ReturnConsumedCapacity TOTAL added). On
 * success *resp is the answer (json_object_put it). Safe from any thread.
 * Errors: -ECANCELED (a condition failed: ConditionalCheckFailedException,
 * or TransactionCanceledException for a reason other than a conflict;
 * *resp is then the error's body, with its CancellationReasons), -ENOENT
 * (ResourceNotFoundException: no such table), -EACCES (credentials refused
 * or not allowed), -EBUSY (ResourceInUseException), -E2BIG (an item or a
 * request too large), -EINVAL (any other ValidationException), -ETIMEDOUT
 * (retried for DDB_RETRY_S), -EHOSTUNREACH (the first call reached
 * nothing), -ENOMEM, -EIO. The cause is logged and kept for ddb_why().
 */
int ddb_call(struct ddb *d, const char *op, struct json_object *req,
	     struct json_object **resp);
/* ddb_call() of a TransactWriteItems of @items (taken) whose
 * ClientRequestToken is @client and @seq in hex (one open's client id and
 * its count: a retry of it is applied once). Errors: -ENOMEM, as ddb_call
 * (-ECANCELED: *@resp says why). */
int ddb_transact(struct ddb *d, struct json_object *items, uint64_t client,
		 uint64_t seq, struct json_object **resp);
/*
 * ddb_call() of DynamoDB Streams' operation @op (as "GetRecords",
 * X-Amz-Target: DynamoDBStreams_20120810.<op>), at the streams endpoint
 * (the location's endpoint if it names one). Errors: as ddb_call, and
 * -ETIME (ExpiredIteratorException: a shard iterator unused for 15
 * minutes), -ESTALE (TrimmedDataAccessException: records past the
 * stream's 24 h), both logged at debug level only (the caller starts over).
 */
int ddb_streams_call(struct ddb *d, const char *op, struct json_object *req,
		     struct json_object **resp);

/* Attribute values: {"S": s}, {"B": base64}, {"N": "n"}; NULL when out of
 * memory. */
struct json_object *ddb_s(const char *s);
struct json_object *ddb_b(const char *p, size_t len);
struct json_object *ddb_n(uint64_t n);
/* Adds @v (taken, also on an error) to @o as @name. Errors: -ENOMEM (@o
 * or @v NULL, or out of memory). */
int ddb_add(struct json_object *o, const char *name, struct json_object *v);
/* Attribute @name of item @item: a B's bytes, malloc'd (NUL-terminated one
 * past *len; NULL if absent or bad), an S borrowed from @item (NULL if
 * absent), an N (0 if absent). */
char *ddb_get_b(struct json_object *item, const char *name, size_t *len);
const char *ddb_get_s(struct json_object *item, const char *name);
uint64_t ddb_get_n(struct json_object *item, const char *name);

#endif
