/*
 * etcd_i.h - the transport to an etcd cluster: JSON requests to its v3 gRPC
 * gateway (/v3/kv/range, /v3/kv/txn, /v3/lease/...) over HTTP (libcurl,
 * json-c). Only etcd.c talks HTTP; only kv_etcd.c uses it.
 *
 * A call goes to one member; when the member cannot be reached or answers
 * that the cluster has no leader / timed out, the call is sent again, to the
 * next member, with a growing pause, until ETCD_RETRY_S seconds have passed.
 * So a request may be applied more than once: only send requests that are
 * safe to repeat (reads, and txns made idempotent by a compare; kv_etcd.c).
 *
 * Internal to store/.
 */
#ifndef PATHFS_ETCD_I_H
#define PATHFS_ETCD_I_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#define ETCD_RETRY_S 30 /* how long a call keeps trying other members */

struct etcd;

/*
 * Opens a client of the cluster whose members are @endpoints, "host:port"
 * separated by commas (copied). No request is made. Errors: -EINVAL (no
 * endpoint, or one too long), -ENOMEM. *out is freed with etcd_close().
 */
int etcd_open(struct etcd **out, const char *endpoints);
void etcd_close(struct etcd *e);

/*
 * POSTs @req (borrowed) to @path of a member. On success *resp is the parsed
 * answer (caller frees with json_object_put). Safe from any thread.
 * Errors: -ENOSPC (etcd's quota is full: "database space exceeded"),
 * -E2BIG (too many operations, request too large, duplicate key),
 * -ESTALE (the revision asked for was compacted), -ENOENT (a lease that
 * expired or was revoked), -EACCES, -ETIMEDOUT (no
 * member answered within ETCD_RETRY_S), -ENOMEM, -EIO (anything else; the
 * message is logged).
 */
int etcd_call(struct etcd *e, const char *path, struct json_object *req,
	      struct json_object **resp);

/*
 * Tests only (NULL otherwise): called with the path of each answer etcd gave
 * with success; when it returns true the call treats that answer as lost on
 * the way back (the request was applied) and sends the request again to the
 * next member, as after a connection cut. Process-wide; the hook may make
 * calls of its own.
 */
extern bool (*etcd_test_lose_answer)(const char *path);

/* Base64 (RFC 4648, padded) as the gateway wants bytes: a malloc'd,
 * NUL-terminated string; NULL only when out of memory. */
char *etcd_b64(const char *src, size_t len);
/* Decodes @src into a malloc'd buffer (NUL-terminated one past *len).
 * Returns NULL on bad input or no memory. */
char *etcd_unb64(const char *src, size_t *len);

/* The int64 field @name of @o (the gateway writes int64 as strings), or 0. */
long long etcd_int(struct json_object *o, const char *name);

#endif
