/*
 * kv_etcd.c - the kv backend on an etcd cluster (see kv_i.h,
 * kv_backend_i.h), through the JSON gateway transport of etcd.c.
 *
 * Location: etcd://HOST:PORT[,HOST:PORT...]/NAME[?max-txn-ops=N&
 * max-request-bytes=N&quota-bytes=N&lease-ttl=N]. NAME ([A-Za-z0-9._-], at
 * most 64) is the store's key prefix, so several stores share one cluster:
 * the store's keys live under "NAME/k/", this backend's own under "NAME/m/".
 * The first three numbers are the cluster's --max-txn-ops,
 * --max-request-bytes and --quota-backend-bytes when not etcd's defaults
 * (128, 1.5 MiB, 2 GiB): the limits reported (kv_limits) follow from the
 * first two, statfs's size from the quota. lease-ttl is the writer's lease
 * (below; default KVE_TTL, 2 to 3600 s).
 *
 * One writer per store: a read-write open takes the owner key NAME/m/owner
 * (its value names the holder: program, pid, host) with a Txn that puts it
 * only if missing, under a lease of lease-ttl seconds that a keeper thread
 * renews every third of it; a second read-write open finds the key and fails
 * with -EBUSY (kv_etcd_holder() says who holds it). Every commit also
 * compares the key's create revision with the one this open made: once the
 * lease expired (the writer stopped, hung or lost the cluster for lease-ttl
 * seconds) the key is gone or another writer's, the compare fails, and this
 * open is fenced: its commits fail with -EROFS from then on, logged once;
 * nothing it sends lands. A writer that died (kill -9) frees the store when
 * its lease expires; the next writer replays the journal as after a crash.
 * kv_close revokes the lease, which deletes the key at once. Read-only opens
 * take nothing and are allowed anywhere.
 *
 * Families are one prefix space here: a range is a range of keys, whatever
 * the classifier says.
 *
 * Reads: kv_get is a linearizable Range. An iterator reads pages of keys at
 * one revision, pinned by its first page, so it sees a consistent snapshot
 * as RocksDB's do; pages grow from KVE_PAGE_MIN to KVE_PAGE_MAX keys (a Range
 * with a limit costs time in proportion to the keys left after it, etcd
 * #11057, so no page reads further than needed) and shrink when a page's
 * values pass 4 MiB. If etcd compacted that revision meanwhile, the iterator
 * stops with -ESTALE: the caller opens a new one at the last key it saw.
 *
 * Batches become one Txn, normalised first, since etcd refuses two
 * operations on one key in a Txn and a put inside a delete-range of the same
 * Txn: of the operations on one key only the last stays, a point delete
 * inside a delete-range goes, a put that follows a delete-range covering it
 * splits the range around the key, a put or delete that a later delete-range
 * covers goes. A batch that still exceeds the limits is refused with -E2BIG
 * (never split: that would lose its atomicity).
 *
 * Commits are exactly once though the transport retries (etcd_i.h): each
 * open holds a few commit slots, keys under NAME/m/txn/; a Txn that puts
 * anything compares its slot's mod revision with the one its last commit
 * left and puts its own id there. If an answer is lost and the Txn is sent
 * again after it was applied, the compare fails, the failure branch reads the
 * slot, and finding its own id there the commit knows it was applied. Such
 * slots cost one operation of a Txn (kv_limits says one less). Batches that
 * only delete use their slot too (a delete sent twice would take a key
 * recreated in between). Only when etcd's quota is full (NOSPACE: it refuses
 * any Txn that puts, the slot's too) is a delete-only batch sent again
 * without its slot, so that deletes pass and free space; no key can be
 * recreated while the alarm stands, every put being refused.
 *
 * Durability: etcd answers a commit once a quorum has fsync'd it, so
 * kv_sync has nothing to do; there is no space reserve (etcd's quota answers
 * NOSPACE: -ENOSPC) and no compaction to ask for.
 *
 * Limits: no watch: a read-only open is not told of the writer's changes
 * (its reads are current; caches above it are not invalidated). A fenced
 * open still reads (what etcd has, the new writer's changes included) until
 * it is closed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "etcd_i.h"
#include "kv_backend_i.h"
#include "log.h"

#define KVE_SLOTS      8
#define KVE_PAGE_MIN   256
#define KVE_PAGE_MAX   4096
#define KVE_PAGE_BYTES (4u << 20)
#define KVE_NAME_MAX   64
#define KVE_TTL	       5 /* the owner's lease, seconds (?lease-ttl=N) */

struct kve_slot {
	bool busy;
	long long rev; /* mod revision its last commit left; -1: unknown */
};

struct kve {
	struct kv base;
	struct etcd *e;
	char *pfx; /* NAME/k/ */
	size_t plen;
	char *meta; /* NAME/m/ */
	size_t mlen;
	uint64_t client; /* this open's id, in its slot keys and txn ids */
	size_t txn_ops;	 /* the cluster's --max-txn-ops */
	uint64_t quota;	 /* its --quota-backend-bytes */
	pthread_mutex_t lock;
	pthread_cond_t slot_free;
	struct kve_slot slots[KVE_SLOTS]; /* protected by lock */
	uint64_t seq;			  /* protected by lock */
	/* ownership (read-write opens): see the overview */
	char *owner; /* NAME/m/owner */
	size_t olen;
	char *holder;	     /* the value this open put there */
	long long lease;     /* its lease; 0: none */
	long long owner_rev; /* the owner key's create revision; 0: none */
	int ttl;	     /* the lease's TTL, seconds */
	bool fenced;	     /* protected by lock: lost the owner key */
	bool stop;	     /* protected by lock: the keeper must end */
	pthread_cond_t wake; /* the keeper waits on it */
	pthread_t keeper;
	bool keeper_running;
};

enum { KVE_PUT, KVE_DEL, KVE_RANGE };

struct kve_op {
	int type;
	char *k, *v; /* v: value (put) or range end (delete-range) */
	size_t klen, vlen;
	bool dead;   /* normalised away */
	char **cuts; /* delete-range: keys of later puts inside it */
	size_t *cutlens;
	size_t ncuts;
};

struct kve_batch {
	struct kv_batch base;
	struct kve_op *ops;
	size_t n, cap;
};

struct kve_ent {
	const char *k, *v; /* k past the prefix */
	size_t klen, vlen;
};

struct kve_iter {
	struct kv_iter base;
	struct kve *kv;
	char *lo, *hi; /* full etcd keys */
	size_t lolen, hilen;
	long long rev; /* pinned by the first page; 0 before it */
	struct json_object *page;
	struct kve_ent *ents;
	size_t n, pos;
	bool more;
	size_t limit;
	int status;
};

static const struct kv_ops kve_ops;

/* ---- keys ---------------------------------------------------------------- */

/* The etcd key of store key @key: a malloc'd prefix + key. */
static char *kve_key(const struct kve *kv, const char *key, size_t klen,
		     size_t *len)
{
	char *k = malloc(kv->plen + klen + 1);

	if (!k)
		abort();
	memcpy(k, kv->pfx, kv->plen);
	memcpy(k + kv->plen, key, klen);
	k[kv->plen + klen] = '\0';
	*len = kv->plen + klen;
	return k;
}

static int kve_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

/* Adds the base64 of @s to @o as @name. */
static void kve_add_b64(struct json_object *o, const char *name, const char *s,
			size_t len)
{
	char *b = etcd_b64(s, len);

	if (!b)
		abort();
	json_object_object_add(o, name, json_object_new_string(b));
	free(b);
}

static void kve_add_int(struct json_object *o, const char *name, long long v)
{
	json_object_object_add(o, name, json_object_new_int64(v));
}

/* The bytes of base64 field @name of @o, malloc'd; empty if absent. */
static char *kve_get_b64(struct json_object *o, const char *name, size_t *len)
{
	struct json_object *f;
	char *s;

	if (!json_object_object_get_ex(o, name, &f)) {
		s = calloc(1, 1);
		*len = 0;
		return s;
	}
	return etcd_unb64(json_object_get_string(f), len);
}

/* Appends to @arr a request_range of key @k (for a failure branch). */
static void kve_add_range(struct json_object *arr, const char *k, size_t klen)
{
	struct json_object *o = json_object_new_object();
	struct json_object *r = json_object_new_object();

	kve_add_b64(r, "key", k, klen);
	json_object_object_add(o, "request_range", r);
	json_object_array_add(arr, o);
}

/* Appends to @arr a compare of @target ("MOD", ...) of key @k with @rev. */
static void kve_add_cmp(struct json_object *arr, const char *target,
			const char *k, size_t klen, long long rev)
{
	struct json_object *c = json_object_new_object();

	json_object_object_add(c, "target", json_object_new_string(target));
	kve_add_b64(c, "key", k, klen);
	kve_add_int(c, target[0] == 'M' ? "mod_revision" : "create_revision",
		    rev);
	json_object_array_add(arr, c);
}

/*
 * The kv of the response to request_range number @i of a failed txn's
 * failure branch, or NULL if that key is missing. Borrowed from @resp.
 */
static struct json_object *kve_failure_kv(struct json_object *resp, size_t i)
{
	struct json_object *rs, *rr, *kvs;

	if (json_object_object_get_ex(resp, "responses", &rs) &&
	    json_object_array_length(rs) > i &&
	    json_object_object_get_ex(json_object_array_get_idx(rs, i),
				      "response_range", &rr) &&
	    json_object_object_get_ex(rr, "kvs", &kvs) &&
	    json_object_array_length(kvs) > 0)
		return json_object_array_get_idx(kvs, 0);
	return NULL;
}

/*
 * Whether a txn's compare held (its success branch ran); if so, @rev gets
 * the revision it made (left as it is when the answer carries none).
 */
static bool kve_succeeded(struct json_object *resp, long long *rev)
{
	struct json_object *ok, *h;

	if (!json_object_object_get_ex(resp, "succeeded", &ok) ||
	    !json_object_get_boolean(ok))
		return false;
	if (json_object_object_get_ex(resp, "header", &h))
		*rev = etcd_int(h, "revision");
	return true;
}

/* ---- ownership ----------------------------------------------------------- */

/* The store's NAME, for log lines: kv->meta without its "/m/". */
#define KVE_NAME(kv) (int)((kv)->mlen - 3), (kv)->meta

/*
 * Marks this open fenced: from now on its commits fail with -EROFS. Says so
 * once, naming the owner key's value @by now (NULL: the key is gone, the
 * lease expired).
 */
static void kve_fence(struct kve *kv, const char *by)
{
	bool first;

	pthread_mutex_lock(&kv->lock);
	first = !kv->fenced;
	kv->fenced = true;
	pthread_cond_signal(&kv->wake);
	pthread_mutex_unlock(&kv->lock);
	if (first)
		plog(LOG_ERR,
		     "etcd: store %.*s: this process is no longer its writer "
		     "(%s%s); its writes fail with EROFS from now on: unmount, "
		     "and mount again to write",
		     KVE_NAME(kv),
		     by ? "another writer took over: " : "its lease expired",
		     by ? by : "");
}

static bool kve_is_fenced(struct kve *kv)
{
	bool f;

	pthread_mutex_lock(&kv->lock);
	f = kv->fenced;
	pthread_mutex_unlock(&kv->lock);
	return f;
}

/* Renews the lease once: its TTL left (> 0), 0 if it is gone, or -errno. */
static long long kve_keepalive(struct kve *kv)
{
	struct json_object *req = json_object_new_object(), *resp = NULL, *r;
	long long ttl = 0;
	int rc;

	kve_add_int(req, "ID", kv->lease);
	rc = etcd_call(kv->e, "/v3/lease/keepalive", req, &resp);
	json_object_put(req);
	if (rc)
		return rc == -ENOENT ? 0 : rc;
	if (json_object_object_get_ex(resp, "result", &r))
		ttl = etcd_int(r, "TTL"); /* absent once expired */
	json_object_put(resp);
	return ttl;
}

/* The keeper thread: renews the lease every third of its TTL. */
static void *kve_keeper(void *arg)
{
	struct kve *kv = arg;

	pthread_mutex_lock(&kv->lock);
	while (!kv->stop && !kv->fenced) {
		struct timespec ts;
		long long ttl;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)kv->ttl * 1000000000L / 3;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&kv->wake, &kv->lock, &ts);
		if (kv->stop || kv->fenced)
			break;
		pthread_mutex_unlock(&kv->lock);
		ttl = kve_keepalive(kv);
		if (ttl == 0)
			kve_fence(kv, NULL);
		else if (ttl < 0)
			plog(LOG_WARNING,
			     "etcd: store %.*s: cannot renew its lease: %s "
			     "(trying again)",
			     KVE_NAME(kv), strerror((int)-ttl));
		pthread_mutex_lock(&kv->lock);
	}
	pthread_mutex_unlock(&kv->lock);
	return NULL;
}

/* Revokes the lease (and so deletes the owner key, if still ours). */
static void kve_revoke(struct kve *kv)
{
	struct json_object *req = json_object_new_object(), *resp = NULL;

	kve_add_int(req, "ID", kv->lease);
	if (etcd_call(kv->e, "/v3/lease/revoke", req, &resp) == 0)
		json_object_put(resp);
	json_object_put(req);
	kv->lease = 0;
}

/*
 * Takes the owner key for this read-write open: grants a lease, puts the key
 * under it if missing, starts the keeper. Errors: -EBUSY (another open holds
 * it), as etcd_call.
 */
static int kve_own(struct kve *kv)
{
	struct json_object *req = json_object_new_object(), *resp = NULL;
	struct json_object *cmps, *succ, *fail, *o, *r;
	char host[256] = "?";
	int rc;

	kve_add_int(req, "TTL", kv->ttl);
	rc = etcd_call(kv->e, "/v3/lease/grant", req, &resp);
	json_object_put(req);
	if (rc)
		return rc;
	kv->lease = etcd_int(resp, "ID");
	json_object_put(resp);
	resp = NULL;
	if (kv->lease <= 0)
		return -EIO;
	gethostname(host, sizeof(host) - 1);
	if (asprintf(&kv->holder, "%s (pid %d on %s, open %016llx)",
		     program_invocation_short_name, (int)getpid(), host,
		     (unsigned long long)kv->client) < 0) {
		kv->holder = NULL;
		return -ENOMEM;
	}
	req = json_object_new_object();
	cmps = json_object_new_array();
	kve_add_cmp(cmps, "CREATE", kv->owner, kv->olen, 0);
	json_object_object_add(req, "compare", cmps);
	succ = json_object_new_array();
	o = json_object_new_object();
	r = json_object_new_object();
	kve_add_b64(r, "key", kv->owner, kv->olen);
	kve_add_b64(r, "value", kv->holder, strlen(kv->holder));
	kve_add_int(r, "lease", kv->lease);
	json_object_object_add(o, "request_put", r);
	json_object_array_add(succ, o);
	json_object_object_add(req, "success", succ);
	fail = json_object_new_array();
	kve_add_range(fail, kv->owner, kv->olen);
	json_object_object_add(req, "failure", fail);
	rc = etcd_call(kv->e, "/v3/kv/txn", req, &resp);
	json_object_put(req);
	if (rc)
		return rc;
	if (!kve_succeeded(resp, &kv->owner_rev)) {
		/* ours from an earlier send whose answer was lost? */
		struct json_object *e = kve_failure_kv(resp, 0);
		size_t vlen = 0;
		char *v = e ? kve_get_b64(e, "value", &vlen) : NULL;

		if (v && !strcmp(v, kv->holder))
			kv->owner_rev = etcd_int(e, "create_revision");
		else
			plog(LOG_DEBUG,
			     "etcd: store %.*s is open read-write by %s",
			     KVE_NAME(kv), v ? v : "?");
		free(v);
	}
	json_object_put(resp);
	if (kv->owner_rev <= 0)
		return -EBUSY;
	if (pthread_create(&kv->keeper, NULL, kve_keeper, kv))
		return -ENOMEM;
	kv->keeper_running = true;
	return 0;
}

/* ---- open ---------------------------------------------------------------- */

static void kve_close(struct kv *kv_)
{
	struct kve *kv = (struct kve *)kv_;

	if (kv->keeper_running) {
		pthread_mutex_lock(&kv->lock);
		kv->stop = true;
		pthread_cond_signal(&kv->wake);
		pthread_mutex_unlock(&kv->lock);
		pthread_join(kv->keeper, NULL);
	}
	if (kv->e && !kv->base.read_only && kv->meta && kv->owner_rev > 0) {
		/* this open's slots go; a crashed open leaves 8 small keys */
		struct json_object *req = json_object_new_object(),
				   *resp = NULL;
		char k[KVE_NAME_MAX + 64];
		int n = snprintf(k, sizeof(k), "%stxn/%016llx/", kv->meta,
				 (unsigned long long)kv->client);
		kve_add_b64(req, "key", k, (size_t)n);
		k[n - 1]++;
		kve_add_b64(req, "range_end", k, (size_t)n);
		if (etcd_call(kv->e, "/v3/kv/deleterange", req, &resp) == 0)
			json_object_put(resp);
		json_object_put(req);
	}
	if (kv->lease)
		kve_revoke(kv); /* the owner key goes with it */
	etcd_close(kv->e);
	pthread_mutex_destroy(&kv->lock);
	pthread_cond_destroy(&kv->slot_free);
	pthread_cond_destroy(&kv->wake);
	free(kv->pfx);
	free(kv->meta);
	free(kv->owner);
	free(kv->holder);
	free(kv);
}

/* Parses etcd://EPS/NAME[?opts] into its parts (malloc'd). */
static int kve_parse(const char *url, char **eps, char **name, size_t *txn_ops,
		     size_t *req_bytes, uint64_t *quota, int *ttl)
{
	const char *s = url + strlen("etcd://");
	const char *slash = strchr(s, '/'), *q;
	size_t nlen;

	if (!slash || slash == s)
		return -EINVAL;
	q = strchr(slash + 1, '?');
	nlen = q ? (size_t)(q - slash - 1) : strlen(slash + 1);
	if (!nlen || nlen > KVE_NAME_MAX)
		return -EINVAL;
	for (size_t i = 0; i < nlen; i++) {
		char c = slash[1 + i];
		if (!(c == '.' || c == '_' || c == '-' ||
		      (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		      (c >= 'A' && c <= 'Z')))
			return -EINVAL;
	}
	while (q && *q) {
		unsigned long long v;
		char key[32];
		int used = 0;
		q++;
		if (sscanf(q, "%31[a-z-]=%llu%n", key, &v, &used) != 2)
			return -EINVAL;
		if (!strcmp(key, "max-txn-ops") && v >= 8)
			*txn_ops = (size_t)v;
		else if (!strcmp(key, "max-request-bytes") && v >= (256u << 10))
			*req_bytes = (size_t)v;
		else if (!strcmp(key, "quota-bytes") && v >= (1u << 20))
			*quota = v;
		else if (!strcmp(key, "lease-ttl") && v >= 2 && v <= 3600)
			*ttl = (int)v;
		else
			return -EINVAL;
		q += used;
		if (*q && *q != '&')
			return -EINVAL;
	}
	*eps = strndup(s, (size_t)(slash - s));
	*name = strndup(slash + 1, nlen);
	return *eps && *name ? 0 : -ENOMEM;
}

int kv_etcd_open(struct kv **out, const char *url, const struct kv_options *opt)
{
	struct kve *kv = calloc(1, sizeof(*kv));
	size_t txn_ops = KV_ETCD_TXN_OPS, req_bytes = KV_ETCD_REQUEST_BYTES;
	char *eps = NULL, *name = NULL;
	struct json_object *req = NULL, *resp = NULL;
	int rc;

	if (!kv)
		return -ENOMEM;
	kv->base.ops = &kve_ops;
	kv->base.read_only = opt->read_only;
	pthread_mutex_init(&kv->lock, NULL);
	pthread_cond_init(&kv->slot_free, NULL);
	pthread_cond_init(&kv->wake, NULL);
	kv->quota = 2ull << 30; /* etcd's default */
	kv->ttl = KVE_TTL;
	rc = kve_parse(url, &eps, &name, &txn_ops, &req_bytes, &kv->quota,
		       &kv->ttl);
	if (rc) {
		plog(LOG_ERR,
		     "%s: not etcd://HOST:PORT[,...]/NAME "
		     "(NAME: letters, digits, . _ -)",
		     url);
		goto out;
	}
	kv->txn_ops = txn_ops;
	kv->base.limits.batch_ops = txn_ops - 1; /* the commit slot */
	kv->base.limits.batch_bytes = req_bytes - (64u << 10);
	kv->base.limits.value_bytes = kv->base.limits.batch_bytes;
	if (asprintf(&kv->pfx, "%s/k/", name) < 0 ||
	    asprintf(&kv->meta, "%s/m/", name) < 0 ||
	    asprintf(&kv->owner, "%s/m/owner", name) < 0) {
		kv->pfx = kv->meta = kv->owner = NULL;
		rc = -ENOMEM;
		goto out;
	}
	kv->plen = strlen(kv->pfx);
	kv->mlen = strlen(kv->meta);
	kv->olen = strlen(kv->owner);
	{
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		kv->client = ((uint64_t)ts.tv_sec << 32) ^
			     (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 20);
	}
	rc = etcd_open(&kv->e, eps);
	if (rc)
		goto out;
	/* reachable? (and a clear error now rather than at the first read) */
	req = json_object_new_object();
	kve_add_b64(req, "key", kv->meta, kv->mlen);
	json_object_object_add(req, "count_only", json_object_new_boolean(1));
	rc = etcd_call(kv->e, "/v3/kv/range", req, &resp);
	if (rc == -ETIMEDOUT)
		rc = -EHOSTUNREACH;
	if (!rc && !opt->read_only)
		rc = kve_own(kv);
out:
	json_object_put(req);
	json_object_put(resp);
	free(eps);
	free(name);
	if (rc) {
		kve_close(&kv->base);
		return rc;
	}
	*out = &kv->base;
	return 0;
}

int kv_etcd_holder(const char *url, char *buf, size_t size)
{
	size_t txn_ops, req_bytes, vlen = 0;
	uint64_t quota;
	int ttl, rc;
	char *eps = NULL, *name = NULL, *key = NULL, *v = NULL;
	struct etcd *e = NULL;
	struct json_object *req = NULL, *resp = NULL, *kvs;

	rc = kve_parse(url, &eps, &name, &txn_ops, &req_bytes, &quota, &ttl);
	if (!rc && asprintf(&key, "%s/m/owner", name) < 0) {
		key = NULL;
		rc = -ENOMEM;
	}
	if (!rc)
		rc = etcd_open(&e, eps);
	if (!rc) {
		req = json_object_new_object();
		kve_add_b64(req, "key", key, strlen(key));
		rc = etcd_call(e, "/v3/kv/range", req, &resp);
	}
	if (!rc && !(json_object_object_get_ex(resp, "kvs", &kvs) &&
		     json_object_array_length(kvs) > 0))
		rc = -ENOENT;
	if (!rc) {
		v = kve_get_b64(json_object_array_get_idx(kvs, 0), "value",
				&vlen);
		if (v)
			snprintf(buf, size, "%s", v);
		else
			rc = -EIO;
	}
	free(v);
	json_object_put(req);
	json_object_put(resp);
	etcd_close(e);
	free(key);
	free(eps);
	free(name);
	return rc;
}

/* ---- reads --------------------------------------------------------------- */

static int kve_get(struct kv *kv_, const char *key, size_t klen, char **val,
		   size_t *vlen)
{
	struct kve *kv = (struct kve *)kv_;
	struct json_object *req = json_object_new_object(), *resp = NULL, *kvs;
	size_t len;
	char *k = kve_key(kv, key, klen, &len);
	int rc;

	kve_add_b64(req, "key", k, len);
	free(k);
	rc = etcd_call(kv->e, "/v3/kv/range", req, &resp);
	json_object_put(req);
	if (rc)
		return rc;
	if (!json_object_object_get_ex(resp, "kvs", &kvs) ||
	    json_object_array_length(kvs) == 0) {
		rc = -ENOENT;
	} else {
		*val = kve_get_b64(json_object_array_get_idx(kvs, 0), "value",
				   vlen);
		rc = *val ? 0 : -EIO;
	}
	json_object_put(resp);
	return rc;
}

static void kve_iter_drop_page(struct kve_iter *it)
{
	for (size_t i = 0; i < it->n; i++) {
		free((char *)it->ents[i].k - it->kv->plen);
		free((char *)it->ents[i].v);
	}
	free(it->ents);
	it->ents = NULL;
	it->n = it->pos = 0;
}

/* Reads the page of keys from @from (a full key, inclusive) to it->hi. */
static void kve_iter_fetch(struct kve_iter *it, const char *from, size_t len)
{
	struct json_object *req = json_object_new_object(), *resp = NULL, *kvs;
	size_t bytes = 0, n;
	int rc;

	kve_add_b64(req, "key", from, len);
	kve_add_b64(req, "range_end", it->hi, it->hilen);
	kve_add_int(req, "limit", (long long)it->limit);
	if (it->rev)
		kve_add_int(req, "revision", it->rev);
	rc = etcd_call(it->kv->e, "/v3/kv/range", req, &resp);
	json_object_put(req);
	kve_iter_drop_page(it);
	it->more = false;
	if (rc) {
		it->status = rc;
		return;
	}
	if (!it->rev) {
		struct json_object *h;
		if (json_object_object_get_ex(resp, "header", &h))
			it->rev = etcd_int(h, "revision");
	}
	n = json_object_object_get_ex(resp, "kvs", &kvs)
		? json_object_array_length(kvs)
		: 0;
	it->ents = calloc(n ? n : 1, sizeof(*it->ents));
	if (!it->ents)
		abort();
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(kvs, i);
		size_t kl, vl;
		char *k = kve_get_b64(e, "key", &kl);
		char *v = kve_get_b64(e, "value", &vl);
		if (!k || !v || kl < it->kv->plen) {
			free(k);
			free(v);
			it->status = -EIO;
			break;
		}
		it->ents[it->n++] = (struct kve_ent){k + it->kv->plen, v,
						     kl - it->kv->plen, vl};
		bytes += kl + vl;
	}
	{
		struct json_object *m;
		it->more = json_object_object_get_ex(resp, "more", &m) &&
			   json_object_get_boolean(m);
	}
	json_object_put(resp);
	/* grow the pages, unless this one was already big in bytes */
	if (bytes > KVE_PAGE_BYTES && it->limit > 16)
		it->limit /= 2;
	else if (bytes < KVE_PAGE_BYTES / 2 && it->limit < KVE_PAGE_MAX)
		it->limit *= 2;
}

static int kve_iter_open(struct kv_iter **out, struct kv *kv_, const char *lo,
			 size_t lolen, const char *hi, size_t hilen)
{
	struct kve *kv = (struct kve *)kv_;
	struct kve_iter *it = calloc(1, sizeof(*it));

	if (!it)
		return -ENOMEM;
	it->base.ops = &kve_ops;
	it->kv = kv;
	it->limit = KVE_PAGE_MIN;
	it->lo = kve_key(kv, lo, lolen, &it->lolen);
	if (hi) {
		it->hi = kve_key(kv, hi, hilen, &it->hilen);
	} else { /* the end of the prefix: NAME/k0 */
		it->hi = kve_key(kv, "", 0, &it->hilen);
		it->hi[it->hilen - 1]++;
	}
	kve_iter_fetch(it, it->lo, it->lolen);
	*out = &it->base;
	return 0;
}

static void kve_iter_seek(struct kv_iter *it_, const char *key, size_t klen)
{
	struct kve_iter *it = (struct kve_iter *)it_;
	size_t len;
	char *k;

	if (it->status)
		return;
	if (kve_cmp(key, klen, it->lo + it->kv->plen,
		    it->lolen - it->kv->plen) < 0) {
		key = it->lo + it->kv->plen;
		klen = it->lolen - it->kv->plen;
	}
	/* within the page in hand: no round trip */
	if (it->n && kve_cmp(key, klen, it->ents[0].k, it->ents[0].klen) >= 0 &&
	    kve_cmp(key, klen, it->ents[it->n - 1].k,
		    it->ents[it->n - 1].klen) <= 0) {
		size_t a = 0, b = it->n - 1;
		while (a < b) {
			size_t m = (a + b) / 2;
			if (kve_cmp(it->ents[m].k, it->ents[m].klen, key,
				    klen) < 0)
				a = m + 1;
			else
				b = m;
		}
		it->pos = a;
		return;
	}
	k = kve_key(it->kv, key, klen, &len);
	kve_iter_fetch(it, k, len);
	free(k);
}

static bool kve_iter_valid(struct kv_iter *it_)
{
	struct kve_iter *it = (struct kve_iter *)it_;

	return !it->status && it->pos < it->n;
}

static const char *kve_iter_key(struct kv_iter *it_, size_t *len)
{
	struct kve_iter *it = (struct kve_iter *)it_;

	*len = it->ents[it->pos].klen;
	return it->ents[it->pos].k;
}

static const char *kve_iter_value(struct kv_iter *it_, size_t *len)
{
	struct kve_iter *it = (struct kve_iter *)it_;

	*len = it->ents[it->pos].vlen;
	return it->ents[it->pos].v;
}

static void kve_iter_next(struct kv_iter *it_)
{
	struct kve_iter *it = (struct kve_iter *)it_;

	if (it->status || it->pos >= it->n)
		return;
	if (++it->pos < it->n || !it->more)
		return;
	{
		/* the next page starts just past the last key: key + "\0" */
		const struct kve_ent *l = &it->ents[it->n - 1];
		size_t len = it->kv->plen + l->klen + 1;
		char *k = malloc(len);
		if (!k)
			abort();
		memcpy(k, l->k - it->kv->plen, len - 1);
		k[len - 1] = '\0';
		kve_iter_fetch(it, k, len);
		free(k);
	}
}

static int kve_iter_status(struct kv_iter *it_)
{
	return ((struct kve_iter *)it_)->status;
}

static void kve_iter_free(struct kv_iter *it_)
{
	struct kve_iter *it = (struct kve_iter *)it_;

	kve_iter_drop_page(it);
	free(it->lo);
	free(it->hi);
	free(it);
}

/* ---- batches ------------------------------------------------------------- */

static struct kv_batch *kve_batch_new(struct kv *kv)
{
	struct kve_batch *b = calloc(1, sizeof(*b));

	return b ? &b->base : NULL;
}

static void kve_batch_add(struct kv_batch *b_, int type, const char *k,
			  size_t klen, const char *v, size_t vlen)
{
	struct kve_batch *b = (struct kve_batch *)b_;
	struct kve_op *op;

	if (b->n == b->cap) {
		b->cap = b->cap ? 2 * b->cap : 16;
		b->ops = realloc(b->ops, b->cap * sizeof(*b->ops));
		if (!b->ops)
			abort();
	}
	op = &b->ops[b->n++];
	memset(op, 0, sizeof(*op));
	op->type = type;
	op->k = malloc(klen + 1);
	op->v = malloc(vlen + 1);
	if (!op->k || !op->v)
		abort();
	memcpy(op->k, k, klen);
	if (vlen)
		memcpy(op->v, v, vlen);
	op->klen = klen;
	op->vlen = vlen;
}

static void kve_batch_put(struct kv_batch *b, const char *key, size_t klen,
			  const char *val, size_t vlen)
{
	kve_batch_add(b, KVE_PUT, key, klen, val, vlen);
}

static void kve_batch_delete(struct kv_batch *b, const char *key, size_t klen)
{
	kve_batch_add(b, KVE_DEL, key, klen, NULL, 0);
}

static void kve_batch_delete_range(struct kv_batch *b, const char *lo,
				   size_t lolen, const char *hi, size_t hilen)
{
	kve_batch_add(b, KVE_RANGE, lo, lolen, hi, hilen);
}

static void kve_batch_clear(struct kv_batch *b_)
{
	struct kve_batch *b = (struct kve_batch *)b_;

	for (size_t i = 0; i < b->n; i++) {
		free(b->ops[i].k);
		free(b->ops[i].v);
		free(b->ops[i].cuts);
		free(b->ops[i].cutlens);
	}
	b->n = 0;
}

static void kve_batch_free(struct kv_batch *b_)
{
	struct kve_batch *b = (struct kve_batch *)b_;

	kve_batch_clear(b_);
	free(b->ops);
	free(b);
}

static bool kve_in_range(const struct kve_op *r, const char *k, size_t klen)
{
	return kve_cmp(k, klen, r->k, r->klen) >= 0 &&
	       kve_cmp(k, klen, r->v, r->vlen) < 0;
}

static void kve_cut(struct kve_op *r, const char *k, size_t klen)
{
	r->cuts = realloc(r->cuts, (r->ncuts + 1) * sizeof(*r->cuts));
	r->cutlens = realloc(r->cutlens, (r->ncuts + 1) * sizeof(size_t));
	if (!r->cuts || !r->cutlens)
		abort();
	r->cuts[r->ncuts] = (char *)k;
	r->cutlens[r->ncuts++] = klen;
}

/*
 * Normalises @b in place (see the overview): marks operations dead, records
 * the cuts of delete-ranges. Returns the number of etcd operations left.
 * O(n^2) in the operations, which a batch's limit keeps small.
 */
static size_t kve_normalise(struct kve_batch *b)
{
	size_t n = 0;

	for (size_t i = 0; i < b->n; i++) {
		struct kve_op *op = &b->ops[i];
		op->dead = false;
		op->ncuts = 0;
	}
	for (size_t i = 0; i < b->n; i++) {
		struct kve_op *op = &b->ops[i];
		if (op->type == KVE_RANGE) {
			if (kve_cmp(op->k, op->klen, op->v, op->vlen) >= 0)
				op->dead = true; /* empty range */
			continue;
		}
		for (size_t j = i + 1; j < b->n && !op->dead; j++) {
			const struct kve_op *l = &b->ops[j];
			if (l->type == KVE_RANGE
				? kve_in_range(l, op->k, op->klen)
				: !kve_cmp(l->k, l->klen, op->k, op->klen))
				op->dead = true; /* overwritten later */
		}
		for (size_t j = 0; j < i && !op->dead; j++) {
			struct kve_op *r = &b->ops[j];
			if (r->type != KVE_RANGE ||
			    !kve_in_range(r, op->k, op->klen))
				continue;
			if (op->type == KVE_DEL)
				op->dead = true; /* already deleted */
			else
				kve_cut(r, op->k, op->klen);
		}
	}
	for (size_t i = 0; i < b->n; i++) {
		const struct kve_op *op = &b->ops[i];
		if (!op->dead)
			n += op->type == KVE_RANGE ? op->ncuts + 1 : 1;
	}
	return n;
}

/* Appends the etcd ops of @b (normalised) to @arr. */
static void kve_txn_ops(struct kve *kv, struct kve_batch *b,
			struct json_object *arr)
{
	for (size_t i = 0; i < b->n; i++) {
		struct kve_op *op = &b->ops[i];
		struct json_object *o, *r;
		size_t len;
		char *k;

		if (op->dead)
			continue;
		if (op->type == KVE_PUT) {
			o = json_object_new_object();
			r = json_object_new_object();
			k = kve_key(kv, op->k, op->klen, &len);
			kve_add_b64(r, "key", k, len);
			free(k);
			kve_add_b64(r, "value", op->v, op->vlen);
			json_object_object_add(o, "request_put", r);
			json_object_array_add(arr, o);
			continue;
		}
		if (op->type == KVE_DEL) {
			o = json_object_new_object();
			r = json_object_new_object();
			k = kve_key(kv, op->k, op->klen, &len);
			kve_add_b64(r, "key", k, len);
			free(k);
			json_object_object_add(o, "request_delete_range", r);
			json_object_array_add(arr, o);
			continue;
		}
		/* a delete-range, in pieces around the keys put inside it */
		{
			const char *from = op->k;
			size_t fromlen = op->klen;
			char *owned = NULL;
			size_t c;

			/* the cuts in key order (few: insertion sort) */
			for (size_t x = 1; x < op->ncuts; x++)
				for (size_t y = x;
				     y > 0 &&
				     kve_cmp(op->cuts[y - 1],
					     op->cutlens[y - 1], op->cuts[y],
					     op->cutlens[y]) > 0;
				     y--) {
					char *t = op->cuts[y];
					size_t tl = op->cutlens[y];
					op->cuts[y] = op->cuts[y - 1];
					op->cutlens[y] = op->cutlens[y - 1];
					op->cuts[y - 1] = t;
					op->cutlens[y - 1] = tl;
				}
			for (c = 0; c <= op->ncuts; c++) {
				const char *to =
				    c < op->ncuts ? op->cuts[c] : op->v;
				size_t tolen =
				    c < op->ncuts ? op->cutlens[c] : op->vlen;
				char *kf, *kt;
				size_t lf, lt;

				if (kve_cmp(from, fromlen, to, tolen) < 0) {
					o = json_object_new_object();
					r = json_object_new_object();
					kf = kve_key(kv, from, fromlen, &lf);
					kt = kve_key(kv, to, tolen, &lt);
					kve_add_b64(r, "key", kf, lf);
					kve_add_b64(r, "range_end", kt, lt);
					free(kf);
					free(kt);
					json_object_object_add(
					    o, "request_delete_range", r);
					json_object_array_add(arr, o);
				}
				if (c == op->ncuts)
					break;
				/* the next piece starts just past the cut */
				free(owned);
				owned = malloc(tolen + 1);
				if (!owned)
					abort();
				memcpy(owned, to, tolen);
				owned[tolen] = '\0';
				from = owned;
				fromlen = tolen + 1;
			}
			free(owned);
		}
	}
}

static int kve_take_slot(struct kve *kv)
{
	int s = -1;

	pthread_mutex_lock(&kv->lock);
	for (;;) {
		for (int i = 0; i < KVE_SLOTS; i++)
			if (!kv->slots[i].busy) {
				s = i;
				break;
			}
		if (s >= 0)
			break;
		pthread_cond_wait(&kv->slot_free, &kv->lock);
	}
	kv->slots[s].busy = true;
	pthread_mutex_unlock(&kv->lock);
	return s;
}

static void kve_give_slot(struct kve *kv, int s, long long rev)
{
	pthread_mutex_lock(&kv->lock);
	kv->slots[s].busy = false;
	kv->slots[s].rev = rev;
	pthread_cond_signal(&kv->slot_free);
	pthread_mutex_unlock(&kv->lock);
}

/* The mod revision of key @k now (0 if missing), or -errno. */
static long long kve_mod_rev(struct kve *kv, const char *k, size_t klen)
{
	struct json_object *req = json_object_new_object(), *resp = NULL, *kvs;
	long long rev = 0;
	int rc;

	kve_add_b64(req, "key", k, klen);
	rc = etcd_call(kv->e, "/v3/kv/range", req, &resp);
	json_object_put(req);
	if (rc)
		return rc;
	if (json_object_object_get_ex(resp, "kvs", &kvs) &&
	    json_object_array_length(kvs) > 0)
		rev =
		    etcd_int(json_object_array_get_idx(kvs, 0), "mod_revision");
	json_object_put(resp);
	return rev;
}

/* True if @b (normalised) puts anything. */
static bool kve_has_puts(const struct kve_batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (!b->ops[i].dead && b->ops[i].type == KVE_PUT)
			return true;
	return false;
}

/*
 * Sends @b (normalised) as one txn. With @slot_key, the txn compares the
 * slot's mod revision with @slot_rev and puts @id there; a failed compare
 * whose slot holds @id means an earlier send was applied. A read-write open
 * also compares the owner key's create revision with its own: a failed
 * compare there fences this open. *rev: the revision the commit made (-1 if
 * unknown). Errors: as etcd_call, -EROFS (fenced: the owner key is not
 * ours), -EIO (the slot changed under this process).
 */
static int kve_txn(struct kve *kv, struct kve_batch *b, const char *slot_key,
		   size_t slot_klen, long long slot_rev, const char *id,
		   long long *rev)
{
	struct json_object *req = json_object_new_object(), *resp = NULL;
	struct json_object *succ = json_object_new_array();
	struct json_object *cmps = json_object_new_array();
	struct json_object *fail = json_object_new_array();
	struct json_object *e;
	size_t vlen = 0;
	char *v;
	int rc;

	*rev = -1;
	kve_txn_ops(kv, b, succ);
	if (slot_key) {
		struct json_object *o = json_object_new_object();
		struct json_object *r = json_object_new_object();

		kve_add_cmp(cmps, "MOD", slot_key, slot_klen, slot_rev);
		kve_add_b64(r, "key", slot_key, slot_klen);
		kve_add_b64(r, "value", id, strlen(id));
		json_object_object_add(o, "request_put", r);
		json_object_array_add(succ, o);
		kve_add_range(fail, slot_key, slot_klen);
	}
	if (kv->owner_rev > 0) {
		kve_add_cmp(cmps, "CREATE", kv->owner, kv->olen, kv->owner_rev);
		kve_add_range(fail, kv->owner, kv->olen);
	}
	json_object_object_add(req, "compare", cmps);
	json_object_object_add(req, "success", succ);
	json_object_object_add(req, "failure", fail);
	rc = etcd_call(kv->e, "/v3/kv/txn", req, &resp);
	json_object_put(req);
	if (rc)
		return rc;
	if (kve_succeeded(resp, rev)) {
		json_object_put(resp);
		return 0;
	}
	/* applied by an earlier send whose answer was lost? */
	e = slot_key ? kve_failure_kv(resp, 0) : NULL;
	v = e ? kve_get_b64(e, "value", &vlen) : NULL;
	if (v && vlen == strlen(id) && !memcmp(v, id, vlen)) {
		*rev = etcd_int(e, "mod_revision");
		goto out;
	}
	free(v);
	v = NULL;
	/* still the writer? */
	e = kv->owner_rev > 0 ? kve_failure_kv(resp, slot_key ? 1 : 0) : NULL;
	if (kv->owner_rev > 0 &&
	    (!e || etcd_int(e, "create_revision") != kv->owner_rev)) {
		v = e ? kve_get_b64(e, "value", &vlen) : NULL;
		kve_fence(kv, v);
		rc = -EROFS;
		goto out;
	}
	plog(LOG_ERR, "etcd: commit slot %s changed under this process",
	     slot_key ? slot_key : "?");
	rc = -EIO;
out:
	free(v);
	json_object_put(resp);
	return rc;
}

static int kve_batch_commit(struct kv *kv_, struct kv_batch *b_, bool sync)
{
	struct kve *kv = (struct kve *)kv_;
	struct kve_batch *b = (struct kve_batch *)b_;
	char slot_key[KVE_NAME_MAX + 64], id[64];
	long long rev = -1;
	size_t nops;
	int s, rc, klen;

	(void)sync; /* every commit is durable on a quorum when answered */
	if (kv->base.read_only || kve_is_fenced(kv))
		return -EROFS;
	nops = kve_normalise(b);
	if (nops == 0)
		return 0;
	if (nops + 1 > kv->txn_ops) {
		plog(
		    LOG_ERR,
		    "etcd: a batch of %zu operations (%zu normalised) does not "
		    "fit one txn (--max-txn-ops %zu)",
		    b->n, nops, kv->txn_ops);
		return -E2BIG;
	}
	s = kve_take_slot(kv);
	klen = snprintf(slot_key, sizeof(slot_key), "%stxn/%016llx/%d",
			kv->meta, (unsigned long long)kv->client, s);
	if (kv->slots[s].rev < 0) {
		/* its last commit's fate was unknown: ask */
		long long r = kve_mod_rev(kv, slot_key, (size_t)klen);
		if (r < 0) {
			rc = (int)r;
			goto out;
		}
		kv->slots[s].rev = r;
	}
	pthread_mutex_lock(&kv->lock);
	snprintf(id, sizeof(id), "%016llx.%llu", (unsigned long long)kv->client,
		 (unsigned long long)++kv->seq);
	pthread_mutex_unlock(&kv->lock);
	rc = kve_txn(kv, b, slot_key, (size_t)klen, kv->slots[s].rev, id, &rev);
	if (rc == -ENOSPC && !kve_has_puts(b)) {
		/*
		 * etcd's quota is full and refuses any txn that puts, the
		 * slot's too; deletes must pass to free space. Sent without
		 * the slot, a retried delete is not guarded, but no key can
		 * be recreated meanwhile: every put is refused until an
		 * operator disarms the alarm. The slot's fate (an earlier
		 * send may have been applied) is asked at its next use.
		 */
		rc = kve_txn(kv, b, NULL, 0, 0, NULL, &rev);
		rev = -1;
	}
out:
	kve_give_slot(kv, s, rc ? -1 : rev);
	return rc;
}

/* ---- the rest ------------------------------------------------------------ */

static int kve_upgrade(struct kv *kv, size_t max_keys,
		       void (*hook)(void *ctx, uint64_t moved), void *ctx,
		       uint64_t *moved)
{
	if (moved)
		*moved = 0; /* one prefix space: nothing to move */
	return 0;
}

static int kve_sync(struct kv *kv)
{
	return 0; /* commits are durable on a quorum when answered */
}

static int kve_space(struct kv *kv_, struct statvfs *st)
{
	struct kve *kv = (struct kve *)kv_;
	struct json_object *req = json_object_new_object(), *resp = NULL;
	uint64_t used = 0;
	int rc;

	rc = etcd_call(kv->e, "/v3/maintenance/status", req, &resp);
	json_object_put(req);
	if (rc)
		return rc;
	used = (uint64_t)etcd_int(resp, "dbSize");
	json_object_put(resp);
	memset(st, 0, sizeof(*st));
	st->f_bsize = st->f_frsize = 4096;
	st->f_blocks = kv->quota / 4096;
	st->f_bfree = st->f_bavail =
	    used < kv->quota ? (kv->quota - used) / 4096 : 0;
	st->f_namemax = 255;
	return 0;
}

static uint64_t kve_estimate_keys(struct kv *kv_)
{
	struct kve *kv = (struct kve *)kv_;
	struct json_object *req = json_object_new_object(), *resp = NULL;
	uint64_t n = 0;
	char *end = strndup(kv->pfx, kv->plen);

	if (!end)
		abort();
	end[kv->plen - 1]++;
	kve_add_b64(req, "key", kv->pfx, kv->plen);
	kve_add_b64(req, "range_end", end, kv->plen);
	json_object_object_add(req, "count_only", json_object_new_boolean(1));
	if (etcd_call(kv->e, "/v3/kv/range", req, &resp) == 0)
		n = (uint64_t)etcd_int(resp, "count");
	json_object_put(req);
	json_object_put(resp);
	free(end);
	return n;
}

static int kve_compact_range(struct kv *kv, const char *lo, size_t lolen,
			     const char *hi, size_t hilen)
{
	return 0;
}

static uint64_t kve_reserve_bytes(struct kv *kv)
{
	return 0;
}

static const struct kv_ops kve_ops = {
    .name = "etcd",
    .close = kve_close,
    .get = kve_get,
    .iter_open = kve_iter_open,
    .iter_seek = kve_iter_seek,
    .iter_valid = kve_iter_valid,
    .iter_key = kve_iter_key,
    .iter_value = kve_iter_value,
    .iter_next = kve_iter_next,
    .iter_status = kve_iter_status,
    .iter_free = kve_iter_free,
    .batch_new = kve_batch_new,
    .batch_put = kve_batch_put,
    .batch_delete = kve_batch_delete,
    .batch_delete_range = kve_batch_delete_range,
    .batch_clear = kve_batch_clear,
    .batch_commit = kve_batch_commit,
    .batch_free = kve_batch_free,
    .upgrade = kve_upgrade,
    .sync = kve_sync,
    .space = kve_space,
    .estimate_keys = kve_estimate_keys,
    .compact_range = kve_compact_range,
    .reserve_bytes = kve_reserve_bytes,
};
