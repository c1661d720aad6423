/*
 * kv_etcd_owner.c - one writer per etcd store: the owner key, its lease
 * and the keeper thread that renews it (see kv_etcd.c).
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
 * Several writers (kv_options.shared, issue 24's first step): each takes a
 * key of its own, NAME/m/writer/<its id>, the same way (a lease, the
 * keeper, every commit fenced by its create revision), on condition that
 * no owner key exists; an owner takes its key on condition that no writer
 * key exists. Both are compares of one txn, so an owner and shared writers
 * never hold one store together. What the shared writers write, they
 * coordinate through conditioned commits (kv_batch_expect).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#include "kv_etcd_i.h"

/*
 * Marks this open fenced: from now on its commits fail with -EROFS. Says so
 * once, naming the owner key's value @by now (NULL: the key is gone, the
 * lease expired).
 */
void kve_fence(struct kve *kv, const char *by)
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

bool kve_is_fenced(struct kve *kv)
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

	rc = etcd_add_int(req, "ID", kv->lease);
	if (!rc)
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
void kve_revoke(struct kve *kv)
{
	struct json_object *req = json_object_new_object(), *resp = NULL;

	/* out of memory: the lease expires by itself */
	if (etcd_add_int(req, "ID", kv->lease) == 0 &&
	    etcd_call(kv->e, "/v3/lease/revoke", req, &resp) == 0)
		json_object_put(resp);
	json_object_put(req);
	kv->lease = 0;
}

/*
 * Adds to @cmps the compare that keeps the other kind of writer out: for a
 * shared writer, no owner key; for an owner, no writer key.
 */
static int kve_add_other_writers(struct kve *kv, struct json_object *cmps)
{
	char lo[KVE_NAME_MAX + 16], hi[KVE_NAME_MAX + 16];
	int n;

	if (kv->shared) {
		n = snprintf(lo, sizeof(lo), "%sowner", kv->meta);
		return kve_add_cmp(cmps, "CREATE", lo, (size_t)n, 0);
	}
	n = snprintf(lo, sizeof(lo), "%swriter/", kv->meta);
	memcpy(hi, lo, (size_t)n);
	hi[n - 1]++; /* "writer0": past every key under "writer/" */
	return kve_add_cmp_none(cmps, lo, (size_t)n, hi, (size_t)n);
}

/*
 * Takes the owner key (shared: this writer's key) for this read-write open:
 * grants a lease, puts the key under it if missing (and no writer of the
 * other kind holds the store), starts the keeper. Errors: -EBUSY (another
 * open holds it), -ENOMEM, as etcd_call.
 */
int kve_own(struct kve *kv)
{
	struct json_object *req = json_object_new_object(), *resp = NULL;
	struct json_object *cmps, *succ, *fail, *r;
	char host[256] = "?";
	int rc;

	rc = etcd_add_int(req, "TTL", kv->ttl);
	if (!rc)
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
	cmps = json_object_new_array();
	succ = json_object_new_array();
	fail = json_object_new_array();
	r = json_object_new_object();
	rc = kve_add_cmp(cmps, "CREATE", kv->owner, kv->olen, 0);
	if (!rc)
		rc = kve_add_other_writers(kv, cmps);
	if (!rc)
		rc = kve_add_b64(r, "key", kv->owner, kv->olen);
	if (!rc)
		rc = kve_add_b64(r, "value", kv->holder, strlen(kv->holder));
	if (!rc)
		rc = etcd_add_int(r, "lease", kv->lease);
	if (!rc) {
		rc = kve_add_op(succ, "request_put", r);
		r = NULL; /* taken */
	}
	if (!rc)
		rc = kve_add_range(fail, kv->owner, kv->olen);
	rc = kve_send_txn(kv, rc, cmps, succ, fail, &resp);
	json_object_put(r);
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

uint64_t kve_writer_id(const struct kv *kv_)
{
	const struct kve *kv = (const struct kve *)kv_;

	return kv->shared && !kv->base.read_only ? kv->client : 0;
}

int kve_writers(struct kv *kv_, uint64_t **ids, size_t *n)
{
	struct kve *kv = (struct kve *)kv_;
	struct json_object *req = json_object_new_object(), *resp = NULL, *kvs;
	char lo[KVE_NAME_MAX + 16], hi[KVE_NAME_MAX + 16];
	size_t len, cnt;
	int m, rc;

	m = snprintf(lo, sizeof(lo), "%swriter/", kv->meta);
	memcpy(hi, lo, (size_t)m);
	hi[m - 1]++; /* "writer0": past every key under "writer/" */
	rc = kve_add_b64(req, "key", lo, (size_t)m);
	if (!rc)
		rc = kve_add_b64(req, "range_end", hi, (size_t)m);
	if (!rc)
		rc =
		    etcd_add_json(req, "keys_only", json_object_new_boolean(1));
	if (!rc)
		rc = etcd_call(kv->e, "/v3/kv/range", req, &resp);
	cnt = !rc && json_object_object_get_ex(resp, "kvs", &kvs)
		  ? json_object_array_length(kvs)
		  : 0;
	if (cnt && !(*ids = calloc(cnt, sizeof(**ids))))
		rc = -ENOMEM;
	for (size_t i = 0; i < cnt && !rc; i++) {
		char *k =
		    kve_get_b64(json_object_array_get_idx(kvs, i), "key", &len);

		/* NAME/m/writer/<16 hex digits> */
		if (k && len == (size_t)m + 16)
			(*ids)[(*n)++] = strtoull(k + m, NULL, 16);
		free(k);
	}
	json_object_put(req);
	json_object_put(resp);
	return rc;
}
