/*
 * kv_ddb.c - the kv backend on a DynamoDB table (see kv_i.h,
 * kv_backend_i.h), through the client of ddb.c.
 *
 * Location: dynamodb://TABLE[?region=R&endpoint=URL&lease-ttl=N]. TABLE is
 * the table's name (3 to 255 of [A-Za-z0-9_.-]); region defaults to
 * AWS_REGION's, endpoint to the region's (endpoint= names another, as
 * DynamoDB Local's http://127.0.0.1:8000); lease-ttl is the writer's lease
 * (kv_ddb_lease.c; default KVD_TTL, 2 to 3600 s). Credentials come from the
 * environment only (ddb_i.h), never from the location. The open says why
 * it failed in kv_options.why.
 *
 * Layout: one item per store key, in one table whose partition key pk (S)
 * is the key's drive, DRIVE#<id>, and whose sort key sk (B) is the rest of
 * the key ("|PATH#/docs//a.txt"); keys that name no drive share partition
 * KVD_OTHER_PK, their sort key the whole key (kvd_locate). sk is binary
 * because a name may hold any byte but '/' and NUL (a string must be
 * UTF-8), and DynamoDB orders binary sort keys as unsigned bytes, as
 * RocksDB orders keys: a folder's run stays contiguous. Attributes: v (B,
 * the value; absent when empty), ver (N, the version: kv_get_ver). The
 * backend's own items: the lease and the shared writers' items
 * (KVD_META_PK) and the registry of drives
 * that have keys (KVD_DRIVES_PK: a range spanning drives asks it which
 * partitions to read).
 *
 * The first read-write open of a missing table creates it (on-demand
 * capacity, Streams on, new and old images: what the followers' watches
 * read, kv_ddb_watch.c); a table with another key schema is refused,
 * naming what differs.
 *
 * Files, one concept each (their overviews say how and why):
 *   kv_ddb.c        open (the location, the table), close, the registry
 *                   of drives, the ops
 *   kv_ddb_lease.c  one writer per table: the lease item, its keeper
 *   kv_ddb_writer.c or several shared writers, each an item of its own
 *   kv_ddb_iter.c   reads: kv_get, iterators (paged Queries, merged)
 *   kv_ddb_batch.c  batches, committed as one TransactWriteItems
 *   kv_ddb_watch.c  watches: the table's stream, for -o ro followers
 *   ddb.c           the HTTP client: signing, retries, errors
 *
 * Limits (kv_limits): a transaction holds 100 actions and 4 MB, an item
 * 400 KB, a sort key 1024 bytes (a longer key is refused: -ENAMETOOLONG).
 * A range delete is expanded into the keys it covers at commit, each one
 * action: the seam counts them (range_per_key), and a commit holds 99
 * actions counted so (batch_actions; the 100th is the lease's check), so
 * that a batch filled exactly (kv_batch_room: a rename's copies, 98 puts
 * and its record; its slices, 99 deletes) fits. The limits a batch sized
 * without counting goes by are half of that each (batch_ops, range_keys):
 * a batch of both, its conditions among its operations, fits. Iterators are no snapshots (DynamoDB has
 * none): a page read after a commit sees it. Watches read the table's
 * stream (kv_ddb_watch.c: revisions are its pages, not commits). Shared
 * writers (kv_options.shared): kv_ddb_writer.c; a shared writer's watch
 * hands its own commits back too (no quiet commits here).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kv_ddb_i.h"
#include "log.h"

#define KVD_SCHEME "dynamodb://"

/* ---- keys ---------------------------------------------------------------- */

int kvd_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

static bool kvd_id_char(char c)
{
	return c == '.' || c == '_' || c == '-' || (c >= '0' && c <= '9') ||
	       (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

void kvd_locate(const char *key, size_t klen, struct kvd_where *w)
{
	size_t i = 6;

	if (klen > 6 && !memcmp(key, "DRIVE#", 6)) {
		while (i < klen && i < 6 + 64 && kvd_id_char(key[i]))
			i++;
		if (i > 6 && i < klen && key[i] == '|') {
			memcpy(w->pk, key, i);
			w->pk[i] = '\0';
			w->plen = i;
			return;
		}
	}
	snprintf(w->pk, sizeof(w->pk), "%s", KVD_OTHER_PK);
	w->plen = 0;
}

struct json_object *kvd_item_key(const char *key, size_t klen)
{
	struct json_object *o = json_object_new_object();
	struct kvd_where w;

	kvd_locate(key, klen, &w);
	if (ddb_add(o, "pk", ddb_s(w.pk)) ||
	    ddb_add(o, "sk", ddb_b(key + w.plen, klen - w.plen))) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

int kvd_store_key(struct json_object *keys, char **key, size_t *klen)
{
	const char *pk = ddb_get_s(keys, "pk");
	size_t plen, sklen;
	char *sk;

	*key = NULL;
	if (!pk)
		return -EINVAL;
	if (!strcmp(pk, KVD_OTHER_PK))
		plen = 0;
	else if (!strncmp(pk, "DRIVE#", 6))
		plen = strlen(pk);
	else
		return -ENOENT; /* the backend's own (KVD_META_PK, ...) */
	sk = ddb_get_b(keys, "sk", &sklen);
	if (!sk)
		return -EINVAL;
	*key = malloc(plen + sklen + 1);
	if (!*key) {
		free(sk);
		return -ENOMEM;
	}
	memcpy(*key, pk, plen);
	memcpy(*key + plen, sk, sklen + 1);
	*klen = plen + sklen;
	free(sk);
	return 0;
}

/* ---- watches: the stream reader's records as changes of store keys ---- */

struct kvd_watch {
	struct kvd_follow *f;
	char *lo, *hi; /* the range, whole store keys */
	size_t lolen, hilen;
	kv_change_fn change;
	void (*reset)(void *ctx);
	void *ctx;
};

static void kvd_watch_reset(void *arg)
{
	struct kvd_watch *w = arg;

	w->reset(w->ctx);
}

/* A record of the stream (kv_ddb_watch.c) as the change of its store key,
 * if in the range; the backend's own items are skipped. */
static int kvd_watch_record(void *arg, long long rev, struct json_object *keys,
			    struct json_object *image)
{
	struct kvd_watch *w = arg;
	char *key = NULL, *val = NULL;
	size_t klen = 0, vlen = 0;
	int rc = kvd_store_key(keys, &key, &klen);

	if (rc == -ENOENT)
		return 0;
	if (rc)
		return rc == -EINVAL ? -EIO : rc;
	if (kvd_cmp(key, klen, w->lo, w->lolen) < 0 ||
	    kvd_cmp(key, klen, w->hi, w->hilen) >= 0)
		goto out;
	if (image) {
		val = ddb_get_b(image, "v", &vlen);
		if (!val && !(val = calloc(1, 1))) { /* empty: no v */
			rc = -ENOMEM;
			goto out;
		}
	}
	w->change(w->ctx, rev, key, klen, val, vlen);
out:
	free(key);
	free(val);
	return rc;
}

/* @rev: not kept (kv_ddb_watch.c, Revisions): from now on, and reset() */
static int kvd_watch(void **out, struct kv *kv_, const char *lo, size_t lolen,
		     const char *hi, size_t hilen, long long rev,
		     kv_change_fn change, void (*reset)(void *ctx), void *ctx)
{
	struct kvd *kv = (struct kvd *)kv_;
	struct kvd_watch *w = calloc(1, sizeof(*w));
	int rc = -ENOMEM;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->lo = malloc(lolen + 1);
	w->hi = malloc(hilen + 1);
	w->lolen = lolen;
	w->hilen = hilen;
	w->change = change;
	w->reset = reset;
	w->ctx = ctx;
	if (w->lo && w->hi) {
		memcpy(w->lo, lo, lolen);
		memcpy(w->hi, hi, hilen);
		rc = kvd_follow_start(&w->f, kv->d, kv->table, kvd_watch_record,
				      kvd_watch_reset, w);
	}
	if (rc) {
		free(w->lo);
		free(w->hi);
		free(w);
		return rc;
	}
	*out = w;
	return 0;
}

static void kvd_watch_stop(void *arg)
{
	struct kvd_watch *w = arg;

	if (!w)
		return;
	kvd_follow_stop(w->f);
	free(w->lo);
	free(w->hi);
	free(w);
}

/* ---- the registry of drives ---------------------------------------------- */

/* Drive ids in the order of their keys: "a|" against "b|". */
int kvd_drive_cmp(const char *a, const char *b)
{
	size_t al = strlen(a), bl = strlen(b), i;

	for (i = 0; i <= al && i <= bl; i++) {
		unsigned char x = i < al ? (unsigned char)a[i] : '|';
		unsigned char y = i < bl ? (unsigned char)b[i] : '|';

		if (x != y)
			return x < y ? -1 : 1;
	}
	return (al > bl) - (al < bl);
}

/* Inserts @id in kv->drives, in order, if missing (kv->lock held).
 * Errors: -ENOMEM. */
static int kvd_drive_add(struct kvd *kv, const char *id)
{
	size_t i;

	for (i = 0; i < kv->ndrives; i++) {
		int c = kvd_drive_cmp(kv->drives[i], id);

		if (c == 0)
			return 0;
		if (c > 0)
			break;
	}
	if (kv->ndrives == kv->capdrives) {
		size_t cap = kv->capdrives ? 2 * kv->capdrives : 8;
		char **v = realloc(kv->drives, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		kv->drives = v;
		kv->capdrives = cap;
	}
	memmove(kv->drives + i + 1, kv->drives + i,
		(kv->ndrives - i) * sizeof(*kv->drives));
	kv->drives[i] = strdup(id);
	if (!kv->drives[i]) {
		memmove(kv->drives + i, kv->drives + i + 1,
			(kv->ndrives - i) * sizeof(*kv->drives));
		return -ENOMEM;
	}
	kv->ndrives++;
	return 0;
}

/* Reads the registry (a Query of KVD_DRIVES_PK, paged) into kv->drives.
 * Errors: as ddb_call, -ENOMEM. */
int kvd_load_drives(struct kvd *kv)
{
	struct json_object *next = NULL;
	int rc = 0;

	do {
		struct json_object *req = json_object_new_object(), *vals,
				   *resp = NULL, *items, *lek;

		vals = json_object_new_object();
		rc = ddb_add(req, "TableName",
			     json_object_new_string(kv->table));
		if (!rc)
			rc = ddb_add(req, "KeyConditionExpression",
				     json_object_new_string("pk = :p"));
		if (!rc)
			rc = ddb_add(vals, ":p", ddb_s(KVD_DRIVES_PK));
		if (!rc) {
			rc = ddb_add(req, "ExpressionAttributeValues", vals);
			vals = NULL;
		}
		if (!rc)
			rc = ddb_add(req, "ConsistentRead",
				     json_object_new_boolean(1));
		if (!rc && next)
			rc = ddb_add(req, "ExclusiveStartKey", next);
		next = NULL;
		json_object_put(vals);
		if (!rc)
			rc = ddb_call(kv->d, "Query", req, &resp);
		json_object_put(req);
		if (rc)
			break;
		if (json_object_object_get_ex(resp, "Items", &items))
			for (size_t i = 0;
			     !rc && i < json_object_array_length(items); i++) {
				size_t len;
				char *id = ddb_get_b(
				    json_object_array_get_idx(items, i), "sk",
				    &len);

				if (!id) {
					rc = -EIO;
					break;
				}
				pthread_mutex_lock(&kv->lock);
				rc = kvd_drive_add(kv, id);
				pthread_mutex_unlock(&kv->lock);
				free(id);
			}
		if (!rc &&
		    json_object_object_get_ex(resp, "LastEvaluatedKey", &lek))
			next = json_object_get(lek);
		json_object_put(resp);
	} while (!rc && next);
	json_object_put(next);
	return rc;
}

/*
 * Registers the drives @ids (of keys a commit is about to put) that the
 * registry may not hold yet: a PutItem each, idempotent (a drive registered
 * for a commit that then failed is a partition with no keys: harmless).
 * Errors: as ddb_call, -ENOMEM.
 */
int kvd_note_drives(struct kvd *kv, const char *const *ids, size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		struct json_object *req, *item, *resp = NULL;
		bool known = false;

		pthread_mutex_lock(&kv->lock);
		for (size_t j = 0; j < kv->ndrives && !known; j++)
			known = !strcmp(kv->drives[j], ids[i]);
		pthread_mutex_unlock(&kv->lock);
		if (known)
			continue;
		req = json_object_new_object();
		item = json_object_new_object();
		rc = ddb_add(item, "pk", ddb_s(KVD_DRIVES_PK));
		if (!rc)
			rc = ddb_add(item, "sk", ddb_b(ids[i], strlen(ids[i])));
		if (!rc)
			rc = ddb_add(req, "TableName",
				     json_object_new_string(kv->table));
		if (!rc) {
			rc = ddb_add(req, "Item", item);
			item = NULL;
		}
		json_object_put(item);
		if (!rc)
			rc = ddb_call(kv->d, "PutItem", req, &resp);
		json_object_put(req);
		json_object_put(resp);
		if (!rc) {
			pthread_mutex_lock(&kv->lock);
			rc = kvd_drive_add(kv, ids[i]);
			pthread_mutex_unlock(&kv->lock);
		}
	}
	return rc;
}

/* ---- open ---------------------------------------------------------------- */

/* A location, parsed (kvd_parse). */
struct kvd_url {
	char *table, *region, *endpoint;
	int ttl;
};

static void kvd_url_free(struct kvd_url *u)
{
	free(u->table);
	free(u->region);
	free(u->endpoint);
}

/* Parses dynamodb://TABLE[?opts] into @u (kvd_url_free() it, on an error
 * too). Errors: -EINVAL (said in @why), -ENOMEM. */
static int kvd_parse(const char *url, struct kvd_url *u, char *why, size_t wlen)
{
	const char *s = url + strlen(KVD_SCHEME), *q = strchr(s, '?');
	size_t n = q ? (size_t)(q - s) : strlen(s);

	memset(u, 0, sizeof(*u));
	u->ttl = KVD_TTL;
	if (n && s[n - 1] == '/')
		n--;
	for (size_t i = 0; i < n; i++)
		if (!kvd_id_char(s[i]))
			n = 0;
	if (n < 3 || n > 255) {
		snprintf(why, wlen,
			 "not dynamodb://TABLE[?region=R&endpoint=URL&"
			 "lease-ttl=N] (TABLE: 3 to 255 letters, digits, "
			 ". _ -)");
		return -EINVAL;
	}
	u->table = strndup(s, n);
	if (!u->table)
		return -ENOMEM;
	while (q && *q) {
		const char *k = q + 1, *eq = strchr(k, '='), *end;
		char **dest = NULL;
		char *v;

		end = k + strcspn(k, "&");
		if (!eq || eq > end) {
			snprintf(why, wlen, "bad option at \"%.32s\"", k);
			return -EINVAL;
		}
		if (!strncmp(k, "region=", 7))
			dest = &u->region;
		else if (!strncmp(k, "endpoint=", 9))
			dest = &u->endpoint;
		else if (strncmp(k, "lease-ttl=", 10)) {
			snprintf(why, wlen,
				 "bad option %.*s (credentials are never "
				 "taken from the location: AWS_ACCESS_KEY_ID "
				 "..., or AWS_PROFILE)",
				 (int)(eq - k), k);
			return -EINVAL;
		}
		v = strndup(eq + 1, (size_t)(end - eq - 1));
		if (!v)
			return -ENOMEM;
		if (dest) {
			free(*dest);
			*dest = v;
		} else {
			char *e;
			long t = strtol(v, &e, 10);
			bool bad = *e || e == v;

			free(v);
			if (bad || t < 2 || t > 3600) {
				snprintf(why, wlen,
					 "lease-ttl= wants 2 to 3600 seconds");
				return -EINVAL;
			}
			u->ttl = (int)t;
		}
		q = end;
	}
	why[0] = '\0';
	return 0;
}

/* A request naming the table only. */
static struct json_object *kvd_table_req(const char *table)
{
	struct json_object *req = json_object_new_object();

	if (ddb_add(req, "TableName", json_object_new_string(table))) {
		json_object_put(req);
		return NULL;
	}
	return req;
}

/* The type of attribute @name in @defs (AttributeDefinitions), or "?". */
static const char *kvd_attr_type(struct json_object *defs, const char *name)
{
	for (size_t i = 0; i < json_object_array_length(defs); i++) {
		struct json_object *d = json_object_array_get_idx(defs, i), *n,
				   *t;

		if (json_object_object_get_ex(d, "AttributeName", &n) &&
		    !strcmp(json_object_get_string(n), name) &&
		    json_object_object_get_ex(d, "AttributeType", &t))
			return json_object_get_string(t);
	}
	return "?";
}

/*
 * Whether table description @t has pathfs's key schema: pk (S, HASH) and
 * sk (B, RANGE). If not, says in @why what it has. Errors: -EMEDIUMTYPE.
 */
static int kvd_check_schema(const char *table, struct json_object *t, char *why,
			    size_t wlen)
{
	struct json_object *ks = NULL, *defs = NULL;
	char have[256] = "";
	size_t o = 0;
	bool ok;

	json_object_object_get_ex(t, "KeySchema", &ks);
	json_object_object_get_ex(t, "AttributeDefinitions", &defs);
	ok = ks && json_object_array_length(ks) == 2;
	for (size_t i = 0; ks && i < json_object_array_length(ks); i++) {
		struct json_object *k = json_object_array_get_idx(ks, i), *n,
				   *kt;
		const char *name =
		    json_object_object_get_ex(k, "AttributeName", &n)
			? json_object_get_string(n)
			: "?";
		const char *kind = json_object_object_get_ex(k, "KeyType", &kt)
				       ? json_object_get_string(kt)
				       : "?";
		const char *type = kvd_attr_type(defs, name);
		bool hash = !strcmp(kind, "HASH");

		o += (size_t)snprintf(
		    have + o, o < sizeof(have) ? sizeof(have) - o : 0,
		    "%s%s (%s, %s)", i ? " + " : "", name, type,
		    hash ? "partition key" : "sort key");
		if (o >= sizeof(have))
			o = sizeof(have) - 1;
		if (strcmp(name, hash ? "pk" : "sk") ||
		    strcmp(type, hash ? "S" : "B"))
			ok = false;
	}
	if (ok)
		return 0;
	snprintf(why, wlen,
		 "table %s has another key schema: %s; pathfs wants pk (S, "
		 "partition key) + sk (B, sort key): another table name, or "
		 "delete that table",
		 table, have[0] ? have : "none");
	return -EMEDIUMTYPE;
}

/* Creates the table (see the overview) and waits until it is ACTIVE.
 * Errors: as ddb_call. */
static int kvd_create_table(struct kvd *kv)
{
	static const char spec[] =
	    "{\"AttributeDefinitions\":["
	    "{\"AttributeName\":\"pk\",\"AttributeType\":\"S\"},"
	    "{\"AttributeName\":\"sk\",\"AttributeType\":\"B\"}],"
	    "\"KeySchema\":[{\"AttributeName\":\"pk\",\"KeyType\":\"HASH\"},"
	    "{\"AttributeName\":\"sk\",\"KeyType\":\"RANGE\"}],"
	    "\"BillingMode\":\"PAY_PER_REQUEST\","
	    "\"StreamSpecification\":{\"StreamEnabled\":true,"
	    "\"StreamViewType\":\"NEW_AND_OLD_IMAGES\"}}";
	struct json_object *req = json_tokener_parse(spec), *resp = NULL;
	int rc =
	    req ? ddb_add(req, "TableName", json_object_new_string(kv->table))
		: -ENOMEM;

	if (!rc)
		rc = ddb_call(kv->d, "CreateTable", req, &resp);
	json_object_put(req);
	json_object_put(resp);
	if (rc == -EBUSY) /* another open is creating it */
		rc = 0;
	if (!rc)
		plog(LOG_NOTICE, "dynamodb: created table %s", kv->table);
	return rc;
}

/*
 * The table's description (its "Table"), waiting up to a minute while it is
 * being created, and creating it first when missing and @create. Errors:
 * -ENOENT (missing), as ddb_call.
 */
static int kvd_describe(struct kvd *kv, bool create, struct json_object **out)
{
	for (int i = 0; i < 600; i++) {
		struct json_object *req = kvd_table_req(kv->table),
				   *resp = NULL;
		struct json_object *t, *st;
		int rc = req ? ddb_call(kv->d, "DescribeTable", req, &resp)
			     : -ENOMEM;

		json_object_put(req);
		if (rc == -ENOENT && create) {
			create = false;
			rc = kvd_create_table(kv);
			if (rc)
				return rc;
			continue;
		}
		if (rc)
			return rc;
		if (json_object_object_get_ex(resp, "Table", &t) &&
		    json_object_object_get_ex(t, "TableStatus", &st) &&
		    strcmp(json_object_get_string(st), "CREATING")) {
			*out = json_object_get(t);
			json_object_put(resp);
			return 0;
		}
		json_object_put(resp);
		usleep(100 * 1000);
	}
	return -ETIMEDOUT;
}

static void kvd_close(struct kv *kv_)
{
	struct kvd *kv = (struct kvd *)kv_;

	kvd_lease_drop(kv);
	kvd_writer_drop(kv);
	ddb_close(kv->d);
	for (size_t i = 0; i < kv->ndrives; i++)
		free(kv->drives[i]);
	free(kv->drives);
	free(kv->table);
	free(kv->holder);
	pthread_mutex_destroy(&kv->lock);
	free(kv);
}

/* A read-write open's hold on the table: a shared writer's item, or the
 * sole writer's lease once no shared writer lives (kv_ddb_writer.c). */
static int kvd_take(struct kvd *kv)
{
	uint64_t gen = 0;
	int rc;

	if (kv->shared)
		return kvd_writer_take(kv);
	rc = kvd_writers_gone(kv, &gen);
	return rc ? rc : kvd_lease_take(kv, gen);
}

int kv_ddb_open(struct kv **out, const char *url, const struct kv_options *opt)
{
	struct kvd *kv = calloc(1, sizeof(*kv));
	struct json_object *t = NULL;
	struct kvd_url u = {0};
	char why[512] = "";
	struct timespec ts;
	int rc;

	if (!kv)
		return -ENOMEM;
	kv->base.ops = &kvd_ops;
	kv->base.read_only = opt->read_only;
	pthread_mutex_init(&kv->lock, NULL);
	rc = kvd_parse(url, &u, why, sizeof(why));
	if (rc)
		goto out;
	kv->shared = opt->shared && !opt->read_only;
	kv->table = u.table;
	u.table = NULL;
	kv->ttl = u.ttl;
	clock_gettime(CLOCK_REALTIME, &ts);
	kv->client = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^
		     ((uint64_t)getpid() << 20);
	/* a transaction's actions: the batch's operations, the keys its
	 * range deletes cover, and the lease's check */
	kv->base.limits.batch_actions = KVD_TXN_ITEMS - 1;
	kv->base.limits.range_per_key = true;
	kv->base.limits.batch_ops = (KVD_TXN_ITEMS - 2) / 2;
	kv->base.limits.range_keys = (KVD_TXN_ITEMS - 2) / 2;
	kv->base.limits.batch_bytes = (4u << 20) - (256u << 10);
	kv->base.limits.value_bytes = KVD_ITEM_BYTES - 2 * KVD_SK_MAX - 256;
	rc = ddb_open(&kv->d, u.region, u.endpoint, why, sizeof(why));
	if (rc)
		goto out;
	rc = kvd_describe(kv, opt->create && !opt->read_only, &t);
	if (rc == -ENOENT)
		snprintf(why, sizeof(why), "no table %s%s", kv->table,
			 opt->read_only ? " (a read-only open creates none)"
					: "");
	if (!rc)
		rc = kvd_check_schema(kv->table, t, why, sizeof(why));
	if (!rc)
		rc = kvd_load_drives(kv);
	if (!rc && !opt->read_only)
		rc = kvd_take(kv);
	if (rc == -EBUSY && !why[0])
		snprintf(why, sizeof(why), "table %s is open read-write by %s",
			 kv->table,
			 kv->shared ? "a writer without -o shared"
				    : "another process");
out:
	if (rc && !why[0] && kv->d)
		ddb_why(kv->d, why, sizeof(why));
	if (rc) {
		plog(LOG_DEBUG, "%s: %s", url, why);
		if (opt->why)
			snprintf(opt->why, opt->why_size, "%s", why);
	} else {
		ddb_opened(kv->d);
	}
	json_object_put(t);
	kvd_url_free(&u);
	if (rc) {
		kvd_close(&kv->base);
		return rc;
	}
	*out = &kv->base;
	return 0;
}

int kv_ddb_identity(const char *url, char **out)
{
	struct kvd_url u;
	char why[256];
	int rc = kvd_parse(url, &u, why, sizeof(why));

	*out = NULL;
	/* the table, where: the lease's TTL is no part of it */
	if (!rc &&
	    asprintf(out, KVD_SCHEME "%s%s%s%s", u.table,
		     u.region || u.endpoint ? "?" : "",
		     u.region ? "region=" : "", u.region ? u.region : "") < 0)
		rc = -ENOMEM;
	if (!rc && u.endpoint) {
		char *id = NULL;

		if (asprintf(&id, "%s%sendpoint=%s", *out, u.region ? "&" : "",
			     u.endpoint) < 0)
			rc = -ENOMEM;
		free(*out);
		*out = id;
	}
	kvd_url_free(&u);
	if (rc) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

int kv_ddb_holder(const char *url, char *buf, size_t size)
{
	struct kvd_url u;
	struct ddb *d = NULL;
	char why[256];
	int rc = kvd_parse(url, &u, why, sizeof(why));

	if (!rc)
		rc = ddb_open(&d, u.region, u.endpoint, why, sizeof(why));
	if (!rc)
		rc = kvd_lease_holder(d, u.table, buf, size);
	if (rc == -ENOENT) {
		rc = kvd_writer_holders(d, u.table, buf, size);
		rc = rc ? rc : 1;
	}
	ddb_close(d);
	kvd_url_free(&u);
	return rc;
}

/* ---- the rest ------------------------------------------------------------ */

static int kvd_upgrade(struct kv *kv, size_t max_keys,
		       void (*hook)(void *ctx, uint64_t moved), void *ctx,
		       uint64_t *moved)
{
	if (moved)
		*moved = 0; /* one table: nothing to move */
	return 0;
}

static int kvd_sync(struct kv *kv)
{
	return 0; /* a transaction is durable when answered */
}

/* The table's description now (kvd_describe without creating), or NULL. */
static struct json_object *kvd_table(struct kvd *kv)
{
	struct json_object *t = NULL;

	return kvd_describe(kv, false, &t) ? NULL : t;
}

/* statfs: on-demand capacity has no size; a notional 1 PiB, less what the
 * table holds (DynamoDB updates TableSizeBytes every six hours or so). */
static int kvd_space(struct kv *kv_, struct statvfs *st)
{
	struct json_object *t = kvd_table((struct kvd *)kv_);
	uint64_t total = 1ull << 50, used = 0;
	struct json_object *sz;

	if (t && json_object_object_get_ex(t, "TableSizeBytes", &sz))
		used = (uint64_t)json_object_get_int64(sz);
	json_object_put(t);
	memset(st, 0, sizeof(*st));
	st->f_bsize = st->f_frsize = 4096;
	st->f_blocks = total / 4096;
	st->f_bfree = st->f_bavail = used < total ? (total - used) / 4096 : 0;
	st->f_namemax = 255;
	return 0;
}

static uint64_t kvd_estimate_keys(struct kv *kv_)
{
	struct json_object *t = kvd_table((struct kvd *)kv_), *n;
	uint64_t keys = 0;

	if (t && json_object_object_get_ex(t, "ItemCount", &n))
		keys = (uint64_t)json_object_get_int64(n);
	json_object_put(t);
	return keys;
}

static int kvd_compact_range(struct kv *kv, const char *lo, size_t lolen,
			     const char *hi, size_t hilen)
{
	return 0; /* DynamoDB frees the space of deleted items itself */
}

static uint64_t kvd_reserve_bytes(struct kv *kv)
{
	return 0;
}

/* The client's requests and the capacity they consumed (ddb_counts). */
static void kvd_engine_counts(const struct kv *kv_, struct kv_counts *out)
{
	const struct kvd *kv = (const struct kvd *)kv_;
	struct ddb_counts c;

	ddb_counts(kv->d, &c);
	out->requests = c.requests;
	out->retries = c.retries;
	out->faults = c.faults;
	out->pages = c.query_pages;
	out->txns = c.txns;
	out->read_milli = c.read_milli;
	out->write_milli = c.write_milli;
	out->txn_write_milli = c.txn_write_milli;
	out->txn_rule_milli = c.txn_rule_milli;
}

const struct kv_ops kvd_ops = {
    .name = "dynamodb",
    .paged_iters = true,
    .sole_writer = kvd_sole_writer,
    .close = kvd_close,
    .get = kvd_get,
    .iter_open = kvd_iter_open,
    .iter_seek = kvd_iter_seek,
    .iter_valid = kvd_iter_valid,
    .iter_key = kvd_iter_key,
    .iter_value = kvd_iter_value,
    .iter_next = kvd_iter_next,
    .iter_status = kvd_iter_status,
    .iter_free = kvd_iter_free,
    .batch_new = kvd_batch_new,
    .batch_put = kvd_batch_put,
    .batch_delete = kvd_batch_delete,
    .batch_delete_range = kvd_batch_delete_range,
    .batch_clear = kvd_batch_clear,
    .batch_commit = kvd_batch_commit,
    .batch_free = kvd_batch_free,
    .upgrade = kvd_upgrade,
    .sync = kvd_sync,
    .space = kvd_space,
    .estimate_keys = kvd_estimate_keys,
    .compact_range = kvd_compact_range,
    .reserve_bytes = kvd_reserve_bytes,
    .watch = kvd_watch,
    .watch_stop = kvd_watch_stop,
    .engine_counts = kvd_engine_counts,
    .writer_id = kvd_writer_id,
    .writers = kvd_writers,
};
