/*
 * etcd_i.h - the transport to an etcd cluster: JSON requests to its v3 gRPC
 * gateway (/v3/kv/range, /v3/kv/txn, /v3/lease/...) over HTTP or HTTPS
 * (libcurl, json-c), and watches (/v3/watch). Only etcd.c and etcd_watch.c
 * talk HTTP; only the etcd backend (kv_etcd*.c) uses them, and the kv suite
 * (tests/test_kv.c), which talks to its cluster directly.
 *
 * Security (struct etcd_config): https members are verified against a CA
 * (the system's, or cacert), with a client certificate when the cluster
 * asks for one; with a user, every request and watch carries the token
 * /v3/auth/authenticate gave, and a token etcd no longer knows (its TTL
 * passed, the auth store changed) is replaced once per call. The password
 * is read at etcd_open (a file, or $PATHFS_ETCD_PASSWORD), kept in memory
 * for those renewals and never logged.
 *
 * The first contact is quick: until a member has answered, each member is
 * tried once (1.5 s to connect, 4 s an attempt), and when none answered the
 * call fails at once, saying why for each (etcd_why()).
 *
 * A call goes to one member; when the member cannot be reached or answers
 * that the cluster has no leader / timed out, the call is sent again, to the
 * next member, with a growing pause, until ETCD_RETRY_S seconds have passed.
 * So a request may be applied more than once: only send requests that are
 * safe to repeat (reads, and txns made idempotent by a compare; kv_etcd.c).
 *
 * Internal to store/kv/.
 */
#ifndef PATHFS_ETCD_I_H
#define PATHFS_ETCD_I_H

#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>
#include <json-c/json.h>

#define ETCD_RETRY_S 30 /* how long a call keeps trying other members */

#define ETCD_PASSWORD_ENV "PATHFS_ETCD_PASSWORD"

struct etcd;

/* How to reach the cluster (borrowed by etcd_open, which copies it). */
struct etcd_config {
	bool https;	    /* TLS to every member */
	const char *cacert; /* CA bundle the members' certificates must chain
				to; NULL: the system's */
	const char *cert;   /* client certificate and its key, or NULL */
	const char *key;
	const char *user;	   /* etcd user (RBAC), or NULL: none */
	const char *password_file; /* its password's file; NULL: the
				      environment's ETCD_PASSWORD_ENV */
};

/*
 * Opens a client of the cluster whose members are @endpoints, "host:port"
 * separated by commas (copied), as @cfg says (NULL: plain http, no user),
 * reading the user's password. No request is made. Errors: -EINVAL (no
 * endpoint, or one too long; a user without a password), -ENOMEM, -errno
 * of reading the password file; etcd_why() says why (@out is set on an
 * error too, for that: free it with etcd_close()). *out is freed with
 * etcd_close().
 */
int etcd_open(struct etcd **out, const char *endpoints,
	      const struct etcd_config *cfg);
void etcd_close(struct etcd *e);

/*
 * Why the last call that failed did (a line naming the member and the cause:
 * wrong password, certificate verification, connection refused, ...), or
 * "" if none, copied into @buf. Errors of the open's first calls are logged
 * at LOG_DEBUG only until etcd_opened(): the opener reports them in one line.
 */
void etcd_why(struct etcd *e, char *buf, size_t size);
void etcd_opened(struct etcd *e);

/* Member @i (modulo their number) as "host:port", borrowed from @e. */
const char *etcd_endpoint(const struct etcd *e, unsigned i);

/*
 * For etcd_watch.c: sets on @h the URL of @path on member @ep and what TLS
 * needs (@errbuf: CURL_ERROR_SIZE bytes, for curl's reason), and appends to
 * *@hdrs the JSON content type and, with a user, the token (authenticating
 * first if there is none yet); *@gen is the token's generation, for
 * etcd_login() when etcd refuses it. Errors: -ENOMEM, etcd_call's of the
 * authentication.
 */
int etcd_prepare(struct etcd *e, CURL *h, unsigned ep, const char *path,
		 struct curl_slist **hdrs, char *errbuf, unsigned *gen);
/* Authenticates again unless the token changed since generation @gen.
 * Errors: as etcd_call. */
int etcd_login(struct etcd *e, unsigned gen);
/*
 * The errno etcd's error @msg means (-EACCES for a refused identity, ...),
 * or ETCD_TRY_NEXT (another member may do), ETCD_RELOGIN (authenticate
 * again: the token is unknown there); *@why: what it means, in words for
 * an administrator (static), or NULL when @msg says it best.
 */
#define ETCD_TRY_NEXT 1
#define ETCD_RELOGIN  2
int etcd_errno(struct etcd *e, const char *msg, const char **why);

/*
 * Watches (etcd_watch.c): a thread of its own keeps a streaming POST to
 * /v3/watch open on one member for the keys [@key, @end) (copied) from
 * revision @rev (0: from now on), and calls @change(@ctx, rev, key, klen,
 * value, vlen) for each event in revision order (rev: the mod revision of
 * the commit that made it), the key without its first @strip
 * bytes (the caller's prefix): @value is the new value of a put,
 * NULL for a delete (keys and values are borrowed for the call). When the
 * watch cannot go on where it was (the stream dropped, the member went away,
 * etcd compacted the revision it had reached), it watches again from now on
 * another member, pausing as etcd_call does, and calls @reset(@ctx) once the
 * new watch stands: events in between were missed. @reset is called each
 * time etcd confirms a watch, the first too (a watch from a compacted
 * revision is confirmed, then canceled: two calls). Callbacks run on the watch thread, one at a time.
 * Errors: -ENOMEM, -EAGAIN (no thread). etcd_watch_stop() ends it.
 */
struct etcd_watch;
typedef void (*etcd_change_fn)(void *ctx, long long rev, const char *key,
			       size_t klen, const char *value, size_t vlen);
int etcd_watch_start(struct etcd_watch **out, struct etcd *e, const char *key,
		     size_t klen, const char *end, size_t elen, size_t strip,
		     long long rev, etcd_change_fn change,
		     void (*reset)(void *ctx), void *ctx);
/* Ends the watch and its thread (waits for a callback running); NULL is
 * fine. No callback runs after it returns. */
void etcd_watch_stop(struct etcd_watch *w);

/*
 * POSTs @req (borrowed) to @path of a member. On success *resp is the parsed
 * answer (caller frees with json_object_put). Safe from any thread.
 * Errors: -ENOSPC (etcd's quota is full: "database space exceeded"),
 * -E2BIG (too many operations, request too large, duplicate key),
 * -ESTALE (the revision asked for was compacted), -ENOENT (a lease that
 * expired or was revoked), -EACCES (wrong user or password, no user on a
 * cluster that wants one, a key the user's roles do not grant, a client
 * certificate the gateway refuses), -EPROTO (http to a member that speaks
 * TLS), -EHOSTUNREACH (first contact: no member answered), -ETIMEDOUT (no
 * member answered within ETCD_RETRY_S), -ENOMEM, -EIO (anything else). The
 * cause is logged and kept for etcd_why().
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
 * Returns NULL on bad input (@src NULL too) or no memory. */
char *etcd_unb64(const char *src, size_t *len);

/* The int64 field @name of @o (the gateway writes int64 as strings), or 0. */
long long etcd_int(struct json_object *o, const char *name);
/* Adds @j (taken, also on an error) to @o as @name. Errors: -ENOMEM (@o or
 * @j NULL, or out of memory). */
int etcd_add_json(struct json_object *o, const char *name,
		  struct json_object *j);
/* Adds @v to @o as @name. Errors: -ENOMEM. */
int etcd_add_int(struct json_object *o, const char *name, long long v);

#endif
