/*
 * ddb.c - the client of DynamoDB's JSON API (see ddb_i.h): the only file
 * that talks HTTP to DynamoDB.
 *
 * Signing is libcurl's (CURLOPT_AWS_SIGV4, "aws:amz:REGION:dynamodb"): this
 * file computes no signature. A session token goes in X-Amz-Security-Token.
 *
 * Connections: a free list of curl easy handles, each keeping its
 * connection alive between calls; a call takes one (or makes one), so
 * threads never share a handle.
 *
 * Two APIs: DynamoDB's (ddb_call) and DynamoDB Streams' (ddb_streams_call),
 * which AWS serves at streams.dynamodb.REGION.amazonaws.com and signs as
 * "dynamodb" too; an endpoint named in the location serves both (DynamoDB
 * Local does).
 *
 * Bytes (B attributes) are base64 in the JSON, with the codec etcd's
 * gateway needs too (etcd.c: etcd_b64, etcd_unb64).
 *
 * Limits: each attempt is bounded by 30 s (3 s to connect); answers are
 * held in memory whole (a Query page is at most 1 MB).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "ddb_fault_i.h"
#include "ddb_i.h"
#include "etcd_i.h" /* the base64 codec */
#include "log.h"

struct ddb_conn {
	CURL *h;
	struct ddb_conn *next;
};

struct ddb {
	char *url;	   /* the endpoint */
	char *streams_url; /* DynamoDB Streams' (the same one when named) */
	char *sigv4;	   /* "aws:amz:REGION:dynamodb" */
	char *key_id;	   /* the credentials: wiped at close, never logged */
	char *secret;
	char *token_hdr; /* "X-Amz-Security-Token: ...", or NULL */
	pthread_mutex_t lock;
	struct ddb_conn *free;	/* protected by lock */
	bool opened;		/* protected by lock: retries the long way */
	char why[512];		/* protected by lock */
	struct ddb_fault fault; /* PATHFS_DDB_FAULT (ddb_fault.c) */
	struct ddb_counts cnt;	/* relaxed atomics */
};

static void ddb_fail(struct ddb *d, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void ddb_fail(struct ddb *d, int level, const char *fmt, ...)
{
	va_list ap;
	bool opened;

	pthread_mutex_lock(&d->lock);
	va_start(ap, fmt);
	vsnprintf(d->why, sizeof(d->why), fmt, ap);
	va_end(ap);
	opened = d->opened;
	pthread_mutex_unlock(&d->lock);
	/* an open's failure is said once, by the opener */
	plog(opened ? level : LOG_DEBUG, "dynamodb: %s", d->why);
}

void ddb_why(struct ddb *d, char *buf, size_t size)
{
	pthread_mutex_lock(&d->lock);
	snprintf(buf, size, "%s", d->why);
	pthread_mutex_unlock(&d->lock);
}

void ddb_opened(struct ddb *d)
{
	pthread_mutex_lock(&d->lock);
	d->opened = true;
	d->why[0] = '\0';
	pthread_mutex_unlock(&d->lock);
}

static void wipe_free(char *s)
{
	if (s) {
		volatile char *p = s;
		while (*p)
			*p++ = '\0';
	}
	free(s);
}

/*
 * The profile @profile of the shared credentials file @file: its
 * aws_access_key_id, aws_secret_access_key and aws_session_token, malloc'd.
 * Errors: -ENOENT (no file, no such profile or no key in it), -ENOMEM.
 */
static int ddb_profile(const char *file, const char *profile, char **id,
		       char **secret, char **token)
{
	FILE *f = fopen(file, "re");
	char line[2048], name[256];
	bool in = false;
	int rc = 0;

	if (!f)
		return -ENOENT;
	while (!rc && fgets(line, sizeof(line), f)) {
		char *k = line, *v, *e;
		char **dest = NULL;

		k += strspn(k, " \t");
		e = k + strcspn(k, "\r\n");
		*e = '\0';
		if (*k == '[') {
			in = sscanf(k, "[%255[^]]]", name) == 1 &&
			     !strcmp(name, profile);
			continue;
		}
		if (!in || !(v = strchr(k, '=')))
			continue;
		for (e = v; e > k && (e[-1] == ' ' || e[-1] == '\t'); e--)
			;
		*e = '\0';
		v++;
		v += strspn(v, " \t");
		for (e = v + strlen(v);
		     e > v && (e[-1] == ' ' || e[-1] == '\t'); e--)
			;
		*e = '\0';
		if (!strcmp(k, "aws_access_key_id"))
			dest = id;
		else if (!strcmp(k, "aws_secret_access_key"))
			dest = secret;
		else if (!strcmp(k, "aws_session_token"))
			dest = token;
		if (dest) {
			wipe_free(*dest);
			*dest = strdup(v);
			if (!*dest)
				rc = -ENOMEM;
		}
	}
	explicit_bzero(line, sizeof(line));
	fclose(f);
	if (!rc && (!*id || !*secret))
		rc = -ENOENT;
	return rc;
}

/* The credentials of the environment into @d (see ddb_i.h). Errors:
 * -EACCES (none: said in @why), -ENOMEM. */
static int ddb_credentials(struct ddb *d, char *why, size_t wlen)
{
	const char *id = getenv("AWS_ACCESS_KEY_ID");
	const char *secret = getenv("AWS_SECRET_ACCESS_KEY");
	const char *token = getenv("AWS_SESSION_TOKEN");
	const char *profile = getenv("AWS_PROFILE");
	const char *file = getenv("AWS_SHARED_CREDENTIALS_FILE");
	const char *home = getenv("HOME");
	char path[4096], *tok = NULL;
	int rc;

	if (id && *id && secret && *secret) {
		d->key_id = strdup(id);
		d->secret = strdup(secret);
		tok = token && *token ? strdup(token) : NULL;
		if (token && *token && !tok)
			return -ENOMEM;
		rc = d->key_id && d->secret ? 0 : -ENOMEM;
	} else {
		if (!profile || !*profile)
			profile = "default";
		if (file && *file)
			snprintf(path, sizeof(path), "%s", file);
		else
			snprintf(path, sizeof(path), "%s/.aws/credentials",
				 home ? home : "");
		rc = ddb_profile(path, profile, &d->key_id, &d->secret, &tok);
		if (rc == -ENOENT) {
			snprintf(why, wlen,
				 "no AWS credentials: neither "
				 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
				 "nor profile \"%s\" in %s",
				 profile, path);
			rc = -EACCES;
		}
	}
	if (!rc && tok &&
	    asprintf(&d->token_hdr, "X-Amz-Security-Token: %s", tok) < 0) {
		d->token_hdr = NULL;
		rc = -ENOMEM;
	}
	wipe_free(tok);
	return rc;
}

static void ddb_curl_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

int ddb_open(struct ddb **out, const char *region, const char *endpoint,
	     char *why, size_t wlen)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct ddb *d = calloc(1, sizeof(*d));
	char *s;
	int rc;

	*out = NULL;
	if (!d)
		return -ENOMEM;
	pthread_once(&once, ddb_curl_init);
	pthread_mutex_init(&d->lock, NULL);
	ddb_fault_init(&d->fault);
	if (!region || !*region)
		region = getenv("AWS_REGION");
	if (!region || !*region)
		region = getenv("AWS_DEFAULT_REGION");
	if (!region || !*region) {
		snprintf(why, wlen,
			 "no AWS region: region= in the location, or "
			 "AWS_REGION");
		rc = -EINVAL;
		goto out;
	}
	if (strspn(region, "abcdefghijklmnopqrstuvwxyz0123456789-") !=
	    strlen(region)) {
		snprintf(why, wlen, "bad AWS region \"%.64s\"", region);
		rc = -EINVAL;
		goto out;
	}
	/* each kept only once made: a failed asprintf leaves its pointer
	 * undefined, and ddb_close() frees those that were made */
	if ((endpoint ? asprintf(&s, "%s", endpoint)
		      : asprintf(&s, "https://dynamodb.%s.amazonaws.com/",
				 region)) < 0)
		goto oom;
	d->url = s;
	if ((endpoint
		 ? asprintf(&s, "%s", endpoint)
		 : asprintf(&s, "https://streams.dynamodb.%s.amazonaws.com/",
			    region)) < 0)
		goto oom;
	d->streams_url = s;
	if (asprintf(&s, "aws:amz:%s:dynamodb", region) < 0)
		goto oom;
	d->sigv4 = s;
	rc = ddb_credentials(d, why, wlen);
	goto out;
oom:
	rc = -ENOMEM;
out:
	if (rc) {
		ddb_close(d);
		return rc;
	}
	*out = d;
	return 0;
}

void ddb_close(struct ddb *d)
{
	if (!d)
		return;
	while (d->free) {
		struct ddb_conn *c = d->free;
		d->free = c->next;
		curl_easy_cleanup(c->h);
		free(c);
	}
	free(d->url);
	free(d->streams_url);
	free(d->sigv4);
	wipe_free(d->key_id);
	wipe_free(d->secret);
	wipe_free(d->token_hdr);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

static struct ddb_conn *ddb_get_conn(struct ddb *d)
{
	struct ddb_conn *c;

	pthread_mutex_lock(&d->lock);
	c = d->free;
	if (c)
		d->free = c->next;
	pthread_mutex_unlock(&d->lock);
	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (c && !(c->h = curl_easy_init())) {
		free(c);
		c = NULL;
	}
	return c;
}

static void ddb_put_conn(struct ddb *d, struct ddb_conn *c)
{
	pthread_mutex_lock(&d->lock);
	c->next = d->free;
	d->free = c;
	pthread_mutex_unlock(&d->lock);
}

struct ddb_buf {
	char *p;
	size_t n, cap;
	bool oom;
};

static size_t ddb_write(char *data, size_t size, size_t n, void *ctx)
{
	struct ddb_buf *b = ctx;
	size_t len = size * n;

	if (b->n + len + 1 > b->cap) {
		size_t cap = (b->n + len + 1) * 2;
		char *p = realloc(b->p, cap);

		if (!p) {
			b->oom = true;
			return 0;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, data, len);
	b->n += len;
	b->p[b->n] = '\0';
	return len;
}

static int64_t ddb_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleeps a random time up to 25 ms * 2^@attempt, at most 2 s (full
 * jitter: retrying writers spread out instead of colliding again). */
static void ddb_backoff(unsigned attempt, unsigned *seed)
{
	long max = 25L << (attempt < 7 ? attempt : 7);
	long ms;
	struct timespec ts;

	if (max > 2000)
		max = 2000;
	ms = 1 + rand_r(seed) % max;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);
}

/* What to do with an error answer of type @type (past its '#'). */
enum { DDB_RETRY = 1 };

/* Whether a TransactionCanceledException's reasons are only of the kind
 * that passes (a conflict with another transaction, throttling). */
static bool ddb_cancel_passes(struct json_object *body)
{
	struct json_object *rs;
	bool passing = false;

	if (!json_object_object_get_ex(body, "CancellationReasons", &rs))
		return false;
	for (size_t i = 0; i < json_object_array_length(rs); i++) {
		struct json_object *r = json_object_array_get_idx(rs, i), *c;
		const char *code = json_object_object_get_ex(r, "Code", &c)
				       ? json_object_get_string(c)
				       : "None";

		if (!strcmp(code, "None"))
			continue;
		if (strcmp(code, "TransactionConflict") &&
		    strcmp(code, "ThrottlingError") &&
		    strcmp(code, "ProvisionedThroughputExceeded"))
			return false;
		passing = true;
	}
	return passing;
}

/* The errno of error answer @type (with @body, @msg), or DDB_RETRY; *@what
 * gets words for an administrator (static) or NULL. */
static int ddb_errno(const char *type, const char *msg,
		     struct json_object *body, const char **what)
{
	*what = NULL;
	if (!strcmp(type, "ThrottlingException") ||
	    !strcmp(type, "ProvisionedThroughputExceededException") ||
	    !strcmp(type, "RequestLimitExceeded") ||
	    !strcmp(type, "TransactionInProgressException") ||
	    !strcmp(type, "InternalServerError") ||
	    !strcmp(type, "ServiceUnavailable") ||
	    !strcmp(type, "LimitExceededException"))
		return DDB_RETRY;
	if (!strcmp(type, "TransactionCanceledException"))
		return ddb_cancel_passes(body) ? DDB_RETRY : -ECANCELED;
	if (!strcmp(type, "ConditionalCheckFailedException"))
		return -ECANCELED;
	if (!strcmp(type, "ResourceNotFoundException"))
		return -ENOENT;
	if (!strcmp(type, "ExpiredIteratorException"))
		return -ETIME;
	if (!strcmp(type, "TrimmedDataAccessException"))
		return -ESTALE;
	if (!strcmp(type, "ResourceInUseException"))
		return -EBUSY;
	if (!strcmp(type, "UnrecognizedClientException") ||
	    !strcmp(type, "InvalidSignatureException") ||
	    !strcmp(type, "MissingAuthenticationToken") ||
	    !strcmp(type, "MissingAuthenticationTokenException") ||
	    !strcmp(type, "IncompleteSignatureException") ||
	    !strcmp(type, "ExpiredTokenException") ||
	    !strcmp(type, "InvalidClientTokenId") ||
	    !strcmp(type, "SignatureDoesNotMatch")) {
		*what = "the AWS credentials were refused (check "
			"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
			"AWS_PROFILE's in ~/.aws/credentials; a session "
			"token may have expired)";
		return -EACCES;
	}
	if (!strcmp(type, "AccessDeniedException")) {
		*what = "the AWS identity is not allowed this (an IAM policy "
			"allowing dynamodb:* on the table is needed)";
		return -EACCES;
	}
	if (!strcmp(type, "ValidationException") && msg &&
	    (strstr(msg, "size has exceeded") || strstr(msg, "too large") ||
	     strstr(msg, "Member must have length less than")))
		return -E2BIG;
	if (!strcmp(type, "ValidationException"))
		return -EINVAL;
	return -EIO;
}

/* The answer @text (HTTP @status) to operation @op: 0 with *resp,
 * -errno, or DDB_RETRY (*cause says why). @text is borrowed. */
static int ddb_answer(const char *op, long status, const char *text,
		      struct json_object **resp, char *cause, size_t clen)
{
	struct json_object *j = text ? json_tokener_parse(text) : NULL, *t, *m;
	int rc;

	if (status == 200 && j) {
		*resp = j;
		return 0;
	}
	if (status >= 500 || status == 0) {
		snprintf(cause, clen, "%s: HTTP %ld", op, status);
		rc = DDB_RETRY;
	} else if (j && json_object_object_get_ex(j, "__type", &t)) {
		const char *type = json_object_get_string(t), *what;
		const char *hash = strrchr(type, '#');
		const char *msg = NULL;

		if (json_object_object_get_ex(j, "Message", &m) ||
		    json_object_object_get_ex(j, "message", &m))
			msg = json_object_get_string(m);
		type = hash ? hash + 1 : type;
		rc = ddb_errno(type, msg, j, &what);
		if (what)
			snprintf(cause, clen, "%s: %s (%s: %s)", op, what, type,
				 msg ? msg : "");
		else
			snprintf(cause, clen, "%s: %s: %s", op, type,
				 msg ? msg : "");
		if (rc == -ECANCELED) {
			*resp = j; /* the caller reads the reasons */
			j = NULL;
		}
	} else {
		snprintf(cause, clen,
			 "%s: HTTP %ld, an answer that is not "
			 "DynamoDB's",
			 op, status);
		rc = -EIO;
	}
	json_object_put(j);
	return rc;
}

/* The two APIs this client speaks: where they answer and how their
 * operations are named (X-Amz-Target: <target>.<Operation>). */
struct ddb_api {
	const char *target;
	bool streams; /* at d->streams_url, else d->url */
};
static const struct ddb_api ddb_tables = {"DynamoDB_20120810", false};
static const struct ddb_api ddb_streams = {"DynamoDBStreams_20120810", true};

static const char *ddb_url(const struct ddb *d, const struct ddb_api *api)
{
	return api->streams ? d->streams_url : d->url;
}

/* One attempt: 0 with *resp, -errno, or DDB_RETRY (*cause says why; a
 * cause that starts with the endpoint is a connection's, not an answer's).
 * The fault hook may answer instead of DynamoDB, or lose its answer. */
static int ddb_do(struct ddb *d, struct ddb_conn *c, const struct ddb_api *api,
		  const char *op, const char *body, struct json_object **resp,
		  char *cause, size_t clen)
{
	const char *url = ddb_url(d, api);
	char errbuf[CURL_ERROR_SIZE] = "", target[96];
	struct curl_slist *hdrs = NULL, *h2;
	struct ddb_buf buf = {0};
	const char *canned = NULL;
	enum ddb_fault_kind fault;
	long status = 0;
	CURLcode cc;
	int rc;

	fault = ddb_fault_next(&d->fault, op, &status, &canned);
	if (fault == DDB_FAULT_ANSWER)
		return ddb_answer(op, status, canned, resp, cause, clen);
	snprintf(target, sizeof(target), "X-Amz-Target: %s.%s", api->target,
		 op);
	hdrs = curl_slist_append(hdrs, "Content-Type: application/"
				       "x-amz-json-1.0");
	if (hdrs && (h2 = curl_slist_append(hdrs, target)))
		hdrs = h2;
	else
		hdrs = NULL;
	if (hdrs && d->token_hdr) {
		h2 = curl_slist_append(hdrs, d->token_hdr);
		hdrs = h2 ? h2 : NULL;
	}
	if (!hdrs)
		return -ENOMEM;
	curl_easy_reset(c->h);
	curl_easy_setopt(c->h, CURLOPT_URL, url);
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c->h, CURLOPT_AWS_SIGV4, d->sigv4);
	curl_easy_setopt(c->h, CURLOPT_USERNAME, d->key_id);
	curl_easy_setopt(c->h, CURLOPT_PASSWORD, d->secret);
	curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, ddb_write);
	curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &buf);
	curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
	curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, 30000L);
	cc = curl_easy_perform(c->h);
	curl_slist_free_all(hdrs);
	if (cc != CURLE_OK) {
		snprintf(cause, clen, "%s: %s", url,
			 errbuf[0] ? errbuf : curl_easy_strerror(cc));
		free(buf.p);
		return cc == CURLE_OUT_OF_MEMORY ? -ENOMEM : DDB_RETRY;
	}
	if (buf.oom) {
		free(buf.p);
		return -ENOMEM;
	}
	if (fault == DDB_FAULT_DROP) {
		snprintf(cause, clen,
			 "%s: connection dropped before the answer "
			 "(PATHFS_DDB_FAULT)",
			 url);
		free(buf.p);
		return DDB_RETRY;
	}
	curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
	rc = ddb_answer(op, status, buf.p, resp, cause, clen);
	free(buf.p);
	return rc;
}

#define DDB_COUNT(x, n) __atomic_add_fetch(&(x), (n), __ATOMIC_RELAXED)

/* Whether operation @op reads (its capacity units are read units). */
static bool ddb_reads(const char *op)
{
	return !strcmp(op, "GetItem") || !strcmp(op, "Query") ||
	       !strcmp(op, "Scan") || !strcmp(op, "BatchGetItem") ||
	       !strcmp(op, "TransactGetItems");
}

/* Whether operation @op takes ReturnConsumedCapacity. */
static bool ddb_has_capacity(const char *op)
{
	return ddb_reads(op) || !strcmp(op, "PutItem") ||
	       !strcmp(op, "UpdateItem") || !strcmp(op, "DeleteItem") ||
	       !strcmp(op, "BatchWriteItem") ||
	       !strcmp(op, "TransactWriteItems");
}

/* The size of item (or key) @item by DynamoDB's rules: each attribute's
 * name and value (B: its bytes, S: its UTF-8 bytes, N: about half its
 * digits, plus one). */
static size_t ddb_item_bytes(struct json_object *item)
{
	size_t n = 0;

	if (!item || !json_object_is_type(item, json_type_object))
		return 0;
	json_object_object_foreach(item, name, v)
	{
		struct json_object *x;
		const char *s;
		size_t len;

		n += strlen(name);
		if (json_object_object_get_ex(v, "B", &x)) {
			s = json_object_get_string(x);
			len = strlen(s);
			n += len / 4 * 3 - (len && s[len - 1] == '=') -
			     (len > 1 && s[len - 2] == '=');
		} else if (json_object_object_get_ex(v, "S", &x)) {
			n += strlen(json_object_get_string(x));
		} else if (json_object_object_get_ex(v, "N", &x)) {
			n += strlen(json_object_get_string(x)) / 2 + 1;
		}
	}
	return n;
}

/*
 * The write units of transaction @req by DynamoDB's published rules, in
 * thousandths: 2 per KB (rounded up) of each item it writes or checks. A
 * Delete, an Update or a ConditionCheck counts its key alone, the item's
 * own size not being in the request: for those a lower bound (exact for
 * items of at most 1 KB, as path nodes and the lease are).
 */
static uint64_t ddb_txn_rule_milli(struct json_object *req)
{
	static const char *const kind[] = {"Put", "Delete", "Update",
					   "ConditionCheck"};
	struct json_object *items, *a, *x, *it;
	uint64_t units = 0;
	size_t i, k, bytes;

	if (!json_object_object_get_ex(req, "TransactItems", &items))
		return 0;
	for (i = 0; i < json_object_array_length(items); i++) {
		a = json_object_array_get_idx(items, i);
		for (k = 0; k < 4; k++)
			if (json_object_object_get_ex(a, kind[k], &x))
				break;
		if (k == 4)
			continue;
		if (!json_object_object_get_ex(x, k ? "Key" : "Item", &it))
			it = NULL;
		bytes = ddb_item_bytes(it);
		units += 2 * (bytes ? (bytes + 1023) / 1024 : 1);
	}
	return units * 1000;
}

/* Adds the capacity units that answer @resp of @op (request @req) says it
 * consumed (an object, or an array of one per table) to d->cnt. */
static void ddb_account(struct ddb *d, const char *op, struct json_object *req,
			struct json_object *resp)
{
	struct json_object *cc, *e, *v;
	bool txn = !strcmp(op, "TransactWriteItems");
	size_t i, n;

	if (!strcmp(op, "Query"))
		DDB_COUNT(d->cnt.query_pages, 1);
	if (txn) {
		DDB_COUNT(d->cnt.txns, 1);
		DDB_COUNT(d->cnt.txn_rule_milli, ddb_txn_rule_milli(req));
	}
	if (!json_object_object_get_ex(resp, "ConsumedCapacity", &cc))
		return;
	n = json_object_is_type(cc, json_type_array)
		? json_object_array_length(cc)
		: 1;
	for (i = 0; i < n; i++) {
		double r = 0, w = 0;

		e = json_object_is_type(cc, json_type_array)
			? json_object_array_get_idx(cc, i)
			: cc;
		if (json_object_object_get_ex(e, "ReadCapacityUnits", &v))
			r = json_object_get_double(v);
		if (json_object_object_get_ex(e, "WriteCapacityUnits", &v))
			w = json_object_get_double(v);
		if (!r && !w &&
		    json_object_object_get_ex(e, "CapacityUnits", &v))
			*(ddb_reads(op) ? &r : &w) = json_object_get_double(v);
		DDB_COUNT(d->cnt.read_milli, (uint64_t)(r * 1000 + 0.5));
		DDB_COUNT(d->cnt.write_milli, (uint64_t)(w * 1000 + 0.5));
		if (txn)
			DDB_COUNT(d->cnt.txn_write_milli,
				  (uint64_t)(w * 1000 + 0.5));
	}
}

void ddb_counts(struct ddb *d, struct ddb_counts *out)
{
	const struct ddb_counts *c = &d->cnt;

	out->requests = __atomic_load_n(&c->requests, __ATOMIC_RELAXED);
	out->retries = __atomic_load_n(&c->retries, __ATOMIC_RELAXED);
	out->faults = __atomic_load_n(&d->fault.fired, __ATOMIC_RELAXED);
	out->query_pages = __atomic_load_n(&c->query_pages, __ATOMIC_RELAXED);
	out->txns = __atomic_load_n(&c->txns, __ATOMIC_RELAXED);
	out->read_milli = __atomic_load_n(&c->read_milli, __ATOMIC_RELAXED);
	out->write_milli = __atomic_load_n(&c->write_milli, __ATOMIC_RELAXED);
	out->txn_write_milli =
	    __atomic_load_n(&c->txn_write_milli, __ATOMIC_RELAXED);
	out->txn_rule_milli =
	    __atomic_load_n(&c->txn_rule_milli, __ATOMIC_RELAXED);
}

/* ddb_call() of @api's operation @op. */
static int ddb_send(struct ddb *d, const struct ddb_api *api, const char *op,
		    struct json_object *req, struct json_object **resp)
{
	const char *url = ddb_url(d, api);
	const char *body;
	unsigned seed = (unsigned)ddb_now_ms() ^ (unsigned)(uintptr_t)&seed;
	struct ddb_conn *c;
	char cause[512] = "";
	int64_t end;
	unsigned attempt = 0;
	bool opened, answered = false;
	int rc;

	*resp = NULL;
	if (ddb_has_capacity(op) &&
	    !json_object_object_get_ex(req, "ReturnConsumedCapacity", NULL) &&
	    ddb_add(req, "ReturnConsumedCapacity",
		    json_object_new_string("TOTAL")))
		return -ENOMEM;
	body = json_object_to_json_string_ext(
	    req, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!body)
		return -ENOMEM;
	pthread_mutex_lock(&d->lock);
	opened = d->opened;
	pthread_mutex_unlock(&d->lock);
	end = ddb_now_ms() + 1000 * (opened ? DDB_RETRY_S : DDB_FIRST_S);
	c = ddb_get_conn(d);
	if (!c)
		return -ENOMEM;
	for (;;) {
		DDB_COUNT(d->cnt.requests, 1);
		rc = ddb_do(d, c, api, op, body, resp, cause, sizeof(cause));
		if (rc != DDB_RETRY)
			break;
		if (strncmp(cause, url, strlen(url)))
			answered = true; /* an answer, not a connection */
		if (ddb_now_ms() >= end) {
			rc = answered || opened ? -ETIMEDOUT : -EHOSTUNREACH;
			break;
		}
		plog(LOG_DEBUG, "dynamodb: %s (trying again)", cause);
		ddb_backoff(attempt++, &seed);
		DDB_COUNT(d->cnt.retries, 1);
	}
	ddb_put_conn(d, c);
	if (!rc)
		ddb_account(d, op, req, *resp);
	if (rc && rc != -ECANCELED)
		/* a stream's iterator that expired or whose records were
		 * trimmed: its reader starts over, as it says */
		ddb_fail(d, rc == -ETIME || rc == -ESTALE ? LOG_DEBUG : LOG_ERR,
			 "%s", cause);
	return rc;
}

int ddb_call(struct ddb *d, const char *op, struct json_object *req,
	     struct json_object **resp)
{
	return ddb_send(d, &ddb_tables, op, req, resp);
}

int ddb_transact(struct ddb *d, struct json_object *items, uint64_t client,
		 uint64_t seq, struct json_object **resp)
{
	struct json_object *req = json_object_new_object();
	char token[40];
	int rc = req ? 0 : -ENOMEM;

	*resp = NULL;
	snprintf(token, sizeof(token), "%016llx%016llx",
		 (unsigned long long)client, (unsigned long long)seq);
	if (!rc) {
		rc = ddb_add(req, "TransactItems", items);
		items = NULL;
	}
	if (!rc)
		rc = ddb_add(req, "ClientRequestToken",
			     json_object_new_string(token));
	if (!rc)
		rc = ddb_call(d, "TransactWriteItems", req, resp);
	json_object_put(items);
	json_object_put(req);
	return rc;
}

int ddb_streams_call(struct ddb *d, const char *op, struct json_object *req,
		     struct json_object **resp)
{
	return ddb_send(d, &ddb_streams, op, req, resp);
}

struct json_object *ddb_s(const char *s)
{
	struct json_object *o = json_object_new_object();

	if (o && ddb_add(o, "S", json_object_new_string(s))) {
		json_object_put(o);
		o = NULL;
	}
	return o;
}

struct json_object *ddb_b(const char *p, size_t len)
{
	struct json_object *o = json_object_new_object();
	char *b = etcd_b64(p, len);

	if (o && (!b || ddb_add(o, "B", json_object_new_string(b)))) {
		json_object_put(o);
		o = NULL;
	}
	free(b);
	return o;
}

struct json_object *ddb_n(uint64_t n)
{
	struct json_object *o = json_object_new_object();
	char s[24];

	snprintf(s, sizeof(s), "%llu", (unsigned long long)n);
	if (o && ddb_add(o, "N", json_object_new_string(s))) {
		json_object_put(o);
		o = NULL;
	}
	return o;
}

int ddb_add(struct json_object *o, const char *name, struct json_object *v)
{
	if (!o || !v || json_object_object_add(o, name, v)) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

/* The value of type @type ("B", "S", "N") of attribute @name of @item. */
static const char *ddb_attr(struct json_object *item, const char *name,
			    const char *type)
{
	struct json_object *a, *v;

	if (!item || !json_object_object_get_ex(item, name, &a) ||
	    !json_object_object_get_ex(a, type, &v))
		return NULL;
	return json_object_get_string(v);
}

char *ddb_get_b(struct json_object *item, const char *name, size_t *len)
{
	return etcd_unb64(ddb_attr(item, name, "B"), len);
}

const char *ddb_get_s(struct json_object *item, const char *name)
{
	return ddb_attr(item, name, "S");
}

uint64_t ddb_get_n(struct json_object *item, const char *name)
{
	const char *s = ddb_attr(item, name, "N");

	return s ? strtoull(s, NULL, 10) : 0;
}
