/*
 * kv_etcd.c - the kv backend on an etcd cluster (see kv_i.h,
 * kv_backend_i.h), through the JSON gateway transport of etcd.c.
 *
 * Location: etcd[+https]://HOST:PORT[,HOST:PORT...]/NAME[?max-txn-ops=N&
 * max-request-bytes=N&quota-bytes=N&lease-ttl=N&cacert=FILE&cert=FILE&
 * key=FILE&user=NAME&password-file=FILE]. NAME ([A-Za-z0-9._-], at most 64)
 * is the store's key prefix, so several stores share one cluster: the
 * store's keys live under "NAME/k/", this backend's own (owner key, shared
 * writers' keys, commit slots) under "NAME/m/", and nothing it reads, writes or watches is outside
 * "NAME/" (leases are no keys; /v3/maintenance/status needs no role): a role
 * with readwrite on that prefix is all its user needs. The first three
 * numbers are the cluster's --max-txn-ops, --max-request-bytes and
 * --quota-backend-bytes when not etcd's defaults (128, 1.5 MiB, 2 GiB): the
 * limits reported (kv_limits) follow from the first two, statfs's size from
 * the quota. lease-ttl is the writer's lease (kv_etcd_owner.c; default
 * KVE_TTL, 2 to 3600 s). etcd+https, cacert, cert, key and user are
 * etcdctl's --endpoints=https://..., --cacert, --cert, --key and --user
 * (etcd.c); the password comes from password-file or $PATHFS_ETCD_PASSWORD,
 * never from the URL (a ':' in user= or a password= is refused). A value
 * may spell a byte as %XX ('&' as %26). The open says why it failed in
 * kv_options.why.
 *
 * Files, one concept each (their overviews say how and why):
 *   kv_etcd.c         open (the location, limits), close, space, the ops
 *   kv_etcd_owner.c   one writer per store: the owner key, its lease keeper
 *                     (or several shared writers, each a key of its own)
 *   kv_etcd_iter.c    reads: kv_get, iterators (paged ranges at a pinned
 *                     revision)
 *   kv_etcd_batch.c   batches, normalised into the operations of one txn
 *   kv_etcd_commit.c  commits: one txn, exactly once, fenced
 *   kv_etcd_json.c    keys, and the pieces of requests and answers
 *   kv_etcd_i.h       what they share
 *
 * Families are one prefix space here: a range is a range of keys, whatever
 * the classifier says.
 *
 * Durability: etcd answers a commit once a quorum has fsync'd it, so
 * kv_sync has nothing to do; there is no space reserve (etcd's quota answers
 * NOSPACE: -ENOSPC) and no compaction to ask for.
 *
 * Watches (kv_watch) of the store's keys: etcd_watch.c.
 *
 * Limits: a fenced open still reads (what etcd has, the new writer's changes
 * included) until it is closed.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kv_etcd_i.h"
#include "log.h"

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
		int rc = kve_add_b64(req, "key", k, (size_t)n);

		k[n - 1]++;
		/* out of memory: the slots stay (8 small keys) */
		if (!rc)
			rc = kve_add_b64(req, "range_end", k, (size_t)n);
		if (!rc &&
		    etcd_call(kv->e, "/v3/kv/deleterange", req, &resp) == 0)
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

/* A store's location, parsed (kve_parse). */
struct kve_url {
	char *eps, *name; /* "h:p,h:p", NAME */
	size_t txn_ops, req_bytes;
	uint64_t quota;
	int ttl;
	struct etcd_config cfg;
	char *cacert, *cert, *key, *user, *password_file; /* cfg's, owned */
};

static void kve_url_free(struct kve_url *u)
{
	free(u->eps);
	free(u->name);
	free(u->cacert);
	free(u->cert);
	free(u->key);
	free(u->user);
	free(u->password_file);
}

/* The value of one option, up to the next '&', %XX decoded, malloc'd in
 * *out; *@end past it. Errors: -EINVAL (empty, or a bad %XX), -ENOMEM. */
static int kve_opt_value(const char *s, const char **end, char **out)
{
	size_t n = strcspn(s, "&"), o = 0;
	char *v = malloc(n + 1);
	unsigned x;

	*end = s + n;
	*out = v;
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			v[o++] = s[i];
		} else if (i + 2 < n && isxdigit((unsigned char)s[i + 1]) &&
			   isxdigit((unsigned char)s[i + 2]) &&
			   sscanf(s + i + 1, "%2x", &x) == 1 && x) {
			v[o++] = (char)x;
			i += 2;
		} else {
			return -EINVAL;
		}
	}
	v[o] = '\0';
	return o ? 0 : -EINVAL;
}

/* One option KEY=VALUE at @q into @u; *@end past it. Errors: -EINVAL (an
 * unknown key, a bad value: said in @why), -ENOMEM. */
static int kve_option(const char *q, const char **end, struct kve_url *u,
		      char *why, size_t wlen)
{
	static const char *const names[] = {"cacert", "cert", "key", "user",
					    "password-file"};
	char **dest[] = {&u->cacert, &u->cert, &u->key, &u->user,
			 &u->password_file};
	unsigned long long v;
	char key[32];
	int used = 0, rc;

	if (sscanf(q, "%31[a-z-]%n", key, &used) != 1 || q[used] != '=') {
		snprintf(why, wlen, "bad option at \"%.32s\"", q);
		return -EINVAL;
	}
	q += used + 1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(key, names[i])) {
			free(*dest[i]);
			rc = kve_opt_value(q, end, dest[i]);
			if (rc == -EINVAL)
				snprintf(why, wlen, "%s= wants a value", key);
			return rc;
		}
	if (!strcmp(key, "password")) {
		snprintf(why, wlen,
			 "a password is never taken from the URL (it would "
			 "show in the process list and the mount table): "
			 "password-file=FILE, or $" ETCD_PASSWORD_ENV);
		return -EINVAL;
	}
	used = 0;
	if (sscanf(q, "%llu%n", &v, &used) != 1 || (q[used] && q[used] != '&'))
		v = 0;
	*end = q + used;
	if (!strcmp(key, "max-txn-ops") && v >= 8)
		u->txn_ops = (size_t)v;
	else if (!strcmp(key, "max-request-bytes") && v >= (256u << 10))
		u->req_bytes = (size_t)v;
	else if (!strcmp(key, "quota-bytes") && v >= (1u << 20))
		u->quota = v;
	else if (!strcmp(key, "lease-ttl") && v >= 2 && v <= 3600)
		u->ttl = (int)v;
	else {
		snprintf(why, wlen, "bad option %s", key);
		return -EINVAL;
	}
	return 0;
}

/* Whether the options of @u go together; else says why in @why. */
static int kve_url_check(struct kve_url *u, char *why, size_t wlen)
{
	if (!u->cfg.https && (u->cacert || u->cert || u->key))
		snprintf(why, wlen,
			 "cacert=, cert= and key= are for TLS: "
			 "etcd+https://...");
	else if (!u->cert != !u->key)
		snprintf(why, wlen, "cert= and key= go together");
	else if (u->password_file && !u->user)
		snprintf(why, wlen, "password-file= is a user's: user=NAME");
	else if (u->user && strchr(u->user, ':'))
		snprintf(why, wlen,
			 "user=NAME takes no password (it would show in the "
			 "process list and the mount table): password-file="
			 "FILE, or $" ETCD_PASSWORD_ENV);
	else
		return 0;
	return -EINVAL;
}

/*
 * Parses etcd[+https]://EPS/NAME[/][?opts] into @u (kve_url_free() it, on
 * an error too). Errors: -EINVAL (said in @why), -ENOMEM.
 */
static int kve_parse(const char *url, struct kve_url *u, char *why, size_t wlen)
{
	bool https =
	    !strncmp(url, KV_ETCD_TLS_SCHEME, strlen(KV_ETCD_TLS_SCHEME));
	const char *s = url + strlen(https ? KV_ETCD_TLS_SCHEME : "etcd://");
	const char *slash = strchr(s, '/'), *q;
	size_t nlen;
	int rc = 0;

	memset(u, 0, sizeof(*u));
	u->txn_ops = KV_ETCD_TXN_OPS;
	u->req_bytes = KV_ETCD_REQUEST_BYTES;
	u->quota = 2ull << 30; /* etcd's default */
	u->ttl = KVE_TTL;
	u->cfg.https = https;
	snprintf(why, wlen,
		 "not etcd[+https]://HOST:PORT[,...]/NAME[?OPTIONS] (NAME: "
		 "letters, digits, . _ -)");
	if (!slash || slash == s)
		return -EINVAL;
	q = strchr(slash + 1, '?');
	nlen = q ? (size_t)(q - slash - 1) : strlen(slash + 1);
	if (nlen > 1 && slash[nlen] == '/')
		nlen--; /* NAME/ is NAME, as a directory's path may end in / */
	if (!nlen || nlen > KVE_NAME_MAX)
		return -EINVAL;
	for (size_t i = 0; i < nlen; i++) {
		char c = slash[1 + i];
		if (!(c == '.' || c == '_' || c == '-' ||
		      (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		      (c >= 'A' && c <= 'Z')))
			return -EINVAL;
	}
	while (!rc && q && *q) {
		rc = kve_option(q + 1, &q, u, why, wlen);
		if (!rc && *q && *q != '&') {
			snprintf(why, wlen, "bad option at \"%.32s\"", q);
			rc = -EINVAL;
		}
	}
	if (!rc)
		rc = kve_url_check(u, why, wlen);
	if (rc)
		return rc;
	why[0] = '\0';
	u->cfg.cacert = u->cacert;
	u->cfg.cert = u->cert;
	u->cfg.key = u->key;
	u->cfg.user = u->user;
	u->cfg.password_file = u->password_file;
	u->eps = strndup(s, (size_t)(slash - s));
	u->name = strndup(slash + 1, nlen);
	return u->eps && u->name ? 0 : -ENOMEM;
}

/* Says in @why (the open's error line, or "") why @e failed, and for a
 * permission etcd refused, what the user needs (@name: the store's). */
static void kve_why(struct etcd *e, const char *name, char *why, size_t wlen)
{
	size_t n;

	if (!why || !wlen)
		return;
	etcd_why(e, why, wlen);
	n = strlen(why);
	if (strstr(why, "permission denied"))
		snprintf(why + n, wlen - n,
			 "; the store needs a role with readwrite on key "
			 "prefix %s/",
			 name);
}

int kv_etcd_open(struct kv **out, const char *url, const struct kv_options *opt)
{
	struct kve *kv = calloc(1, sizeof(*kv));
	struct kve_url u;
	char bad[256];
	struct json_object *req = NULL, *resp = NULL;
	int rc;

	if (!kv)
		return -ENOMEM;
	kv->base.ops = &kve_ops;
	kv->base.read_only = opt->read_only;
	pthread_mutex_init(&kv->lock, NULL);
	pthread_cond_init(&kv->slot_free, NULL);
	pthread_cond_init(&kv->wake, NULL);
	rc = kve_parse(url, &u, bad, sizeof(bad));
	if (rc) {
		plog(LOG_DEBUG, "%s: %s", url, bad);
		if (opt->why)
			snprintf(opt->why, opt->why_size, "%s", bad);
		goto out;
	}
	kv->quota = u.quota;
	kv->ttl = u.ttl;
	kv->txn_ops = u.txn_ops;
	kv->base.limits.batch_ops = u.txn_ops - 1; /* the commit slot */
	kv->base.limits.batch_bytes = u.req_bytes - (64u << 10);
	kv->base.limits.value_bytes = kv->base.limits.batch_bytes;
	{
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		kv->client = ((uint64_t)ts.tv_sec << 32) ^
			     (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 20);
	}
	kv->shared = opt->shared;
	if (asprintf(&kv->pfx, "%s/k/", u.name) < 0 ||
	    asprintf(&kv->meta, "%s/m/", u.name) < 0 ||
	    (opt->shared ? asprintf(&kv->owner, "%s/m/writer/%016llx", u.name,
				    (unsigned long long)kv->client)
			 : asprintf(&kv->owner, "%s/m/owner", u.name)) < 0) {
		kv->pfx = kv->meta = kv->owner = NULL;
		rc = -ENOMEM;
		goto out;
	}
	kv->plen = strlen(kv->pfx);
	kv->mlen = strlen(kv->meta);
	kv->olen = strlen(kv->owner);
	rc = etcd_open(&kv->e, u.eps, &u.cfg);
	if (rc)
		goto out;
	/* reachable, and who we are accepted? (a clear error now rather than
	 * at the first read) */
	req = json_object_new_object();
	rc = kve_add_b64(req, "key", kv->meta, kv->mlen);
	if (!rc)
		rc = etcd_add_json(req, "count_only",
				   json_object_new_boolean(1));
	if (!rc)
		rc = etcd_call(kv->e, "/v3/kv/range", req, &resp);
	if (rc == -ETIMEDOUT)
		rc = -EHOSTUNREACH;
	if (!rc && !opt->read_only)
		rc = kve_own(kv);
out:
	if (rc && kv->e)
		kve_why(kv->e, u.name, opt->why, opt->why_size);
	else if (kv->e)
		etcd_opened(kv->e);
	json_object_put(req);
	json_object_put(resp);
	kve_url_free(&u);
	if (rc) {
		kve_close(&kv->base);
		return rc;
	}
	*out = &kv->base;
	return 0;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int kv_etcd_identity(const char *url, char **out)
{
	size_t n = 0, len, i;
	struct kve_url u;
	char bad[256], **v = NULL, *s, *tok, *id = NULL, *p;
	int rc;

	*out = NULL;
	rc = kve_parse(url, &u, bad, sizeof(bad));
	if (rc)
		goto out;
	for (s = u.eps; *s; s++) {
		*s = (char)tolower((unsigned char)*s);
		n += *s == ',';
	}
	v = calloc(n + 1, sizeof(*v));
	if (!v) {
		rc = -ENOMEM;
		goto out;
	}
	n = 0;
	len = strlen("etcd://") + strlen(u.name) + 2;
	for (tok = strtok_r(u.eps, ",", &s); tok;
	     tok = strtok_r(NULL, ",", &s)) {
		/* the one host name every resolver gives as the loopback
		 * (as long as its address: rewritten in place) */
		if (!strncmp(tok, "localhost", 9) && (!tok[9] || tok[9] == ':'))
			memcpy(tok, "127.0.0.1", 9);
		v[n++] = tok;
		len += strlen(tok) + 1;
	}
	if (!n) {
		rc = -EINVAL;
		goto out;
	}
	qsort(v, n, sizeof(*v), str_cmp);
	id = p = malloc(len);
	if (!id) {
		rc = -ENOMEM;
		goto out;
	}
	/* the same keys whatever the scheme: one spelling */
	p += sprintf(p, "etcd://");
	for (i = 0; i < n; i++)
		if (!i || strcmp(v[i], v[i - 1]))
			p += sprintf(p, "%s%s", i ? "," : "", v[i]);
	sprintf(p, "/%s", u.name);
	*out = id;
out:
	free(v);
	kve_url_free(&u);
	return rc;
}

/* The values (holders) of the keys under @prefix on @e, "; " between
 * them, in @buf. Errors: -ENOENT (none), -ENOMEM, as etcd_call. */
static int holders_under(struct etcd *e, const char *prefix, char *buf,
			 size_t size)
{
	struct json_object *req = json_object_new_object(), *resp = NULL, *kvs;
	size_t m = strlen(prefix), len = 0, n = 0, vlen;
	char *hi = strdup(prefix);
	int rc = req && hi && m ? 0 : -ENOMEM;

	if (!rc) {
		hi[m - 1]++; /* past every key under @prefix */
		rc = kve_add_b64(req, "key", prefix, m);
	}
	if (!rc)
		rc = kve_add_b64(req, "range_end", hi, m);
	if (!rc)
		rc = etcd_call(e, "/v3/kv/range", req, &resp);
	if (!rc && json_object_object_get_ex(resp, "kvs", &kvs))
		n = json_object_array_length(kvs);
	for (size_t i = 0; !rc && i < n; i++) {
		char *v = kve_get_b64(json_object_array_get_idx(kvs, i),
				      "value", &vlen);

		snprintf(buf + len, size - len, "%s%s", i ? "; " : "",
			 v ? v : "?");
		len += strlen(buf + len);
		free(v);
	}
	if (!rc && !n)
		rc = -ENOENT;
	free(hi);
	json_object_put(req);
	json_object_put(resp);
	return rc;
}

int kv_etcd_holder(const char *url, char *buf, size_t size)
{
	size_t vlen = 0;
	struct kve_url u;
	char bad[256], *key = NULL, *v = NULL;
	struct etcd *e = NULL;
	struct json_object *req = NULL, *resp = NULL, *kvs;
	int rc;

	rc = kve_parse(url, &u, bad, sizeof(bad));
	if (!rc && asprintf(&key, "%s/m/owner", u.name) < 0) {
		key = NULL;
		rc = -ENOMEM;
	}
	if (!rc)
		rc = etcd_open(&e, u.eps, &u.cfg);
	if (!rc) {
		req = json_object_new_object();
		rc = kve_add_b64(req, "key", key, strlen(key));
		if (!rc)
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
	free(key);
	key = NULL;
	if (rc == -ENOENT && e) { /* no owner: shared writers? */
		if (asprintf(&key, "%s/m/writer/", u.name) < 0)
			key = NULL;
		rc = key ? holders_under(e, key, buf, size) : -ENOMEM;
		rc = rc ? rc : 1;
	}
	json_object_put(req);
	json_object_put(resp);
	etcd_close(e);
	free(key);
	kve_url_free(&u);
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

	/* out of memory: no estimate (0) */
	if (end)
		end[kv->plen - 1]++;
	if (end && !kve_add_b64(req, "key", kv->pfx, kv->plen) &&
	    !kve_add_b64(req, "range_end", end, kv->plen) &&
	    !etcd_add_json(req, "count_only", json_object_new_boolean(1)) &&
	    etcd_call(kv->e, "/v3/kv/range", req, &resp) == 0)
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

/* kv_watch: the keys under this store's prefix (etcd_watch.c) */
static int kve_watch(void **out, struct kv *base, const char *lo, size_t lolen,
		     const char *hi, size_t hilen, long long rev,
		     kv_change_fn change, void (*reset)(void *ctx), void *ctx)
{
	struct kve *kv = (struct kve *)base;
	size_t l1, l2;
	char *k1 = kve_key(kv, lo, lolen, &l1),
	     *k2 = kve_key(kv, hi, hilen, &l2);
	int rc = k1 && k2 ? etcd_watch_start((struct etcd_watch **)out, kv->e,
					     k1, l1, k2, l2, kv->plen, rev,
					     change, reset, ctx)
			  : -ENOMEM;

	free(k1);
	free(k2);
	return rc;
}

static void kve_watch_stop(void *w)
{
	etcd_watch_stop(w);
}

const struct kv_ops kve_ops = {
    .name = "etcd",
    .pins = true,
    .watch_revs = true,
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
    .watch = kve_watch,
    .watch_stop = kve_watch_stop,
    .writer_id = kve_writer_id,
    .writers = kve_writers,
};
