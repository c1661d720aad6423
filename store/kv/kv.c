/*
 * kv.c - the kv seam's dispatch (see kv_i.h): opens the backend a location
 * names and forwards every call to it, keeping what is common to all engines
 * here: a batch's counts (operations, bytes, largest value) and the engine's
 * limits, so that a batch that would not fit is refused with -E2BIG before
 * the backend sees it, the same way on every engine; a batch's conditions
 * (kv_batch_expect), which the backend checks at commit; and a thread's
 * tracked reads (kv_track), which become the conditions of its next commit.
 *
 * Backends (kv_backend_i.h): kv_rocksdb*.c, the embedded RocksDB store (a
 * directory), kv_etcd.c, a store on an etcd cluster (etcd://... or
 * etcd+https://...), and kv_ddb.c, a store in a DynamoDB table
 * (dynamodb://...). Each call costs one indirect call on top of the
 * engine's.
 *
 * Limits: the counts are of operations as added: a key put twice counts
 * twice, though an engine may collapse them. A batch's actions are counted
 * exactly as it is built (kv_batch_room): on an engine whose range deletes
 * cost one action per key (kv_limits.range_per_key), the keys a range
 * covers when it is added, read here keys-only (a key the batch also puts
 * or deletes counts twice: an upper bound); a commit past batch_actions is
 * refused here, never sent.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kv_backend_i.h"
#include "log.h"

bool kv_is_etcd(const char *where)
{
	return strncmp(where, "etcd://", 7) == 0 ||
	       strncmp(where, KV_ETCD_TLS_SCHEME, strlen(KV_ETCD_TLS_SCHEME)) ==
		   0;
}

bool kv_is_dynamodb(const char *where)
{
	return strncmp(where, KV_DDB_SCHEME, strlen(KV_DDB_SCHEME)) == 0;
}

bool kv_is_remote(const char *where)
{
	return kv_is_etcd(where) || kv_is_dynamodb(where);
}

static bool kv_env_strict(void)
{
	const char *s = getenv("PATHFS_KV_STRICT");

	return s && *s && strcmp(s, "0") != 0;
}

int kv_identity(const char *where, char **out)
{
	if (kv_is_etcd(where))
		return kv_etcd_identity(where, out);
	if (kv_is_dynamodb(where))
		return kv_ddb_identity(where, out);
	*out = strdup(where);
	return *out ? 0 : -ENOMEM;
}

int kv_room(const char *where, uint64_t *avail, uint64_t *need)
{
	*avail = UINT64_MAX;
	*need = 0;
	return kv_is_remote(where) ? 0 : kv_rocksdb_room(where, avail, need);
}

int kv_missing(const char *where, char *what, size_t size)
{
	return kv_is_remote(where) ? 0 : kv_rocksdb_missing(where, what, size);
}

int kv_holder(const char *where, char *buf, size_t size)
{
	if (kv_is_dynamodb(where))
		return kv_ddb_holder(where, buf, size);
	return kv_is_etcd(where) ? kv_etcd_holder(where, buf, size) : -ENOENT;
}

int kv_damage(const char *where, char *buf, size_t size)
{
	return kv_is_remote(where) ? -ENOENT
				   : kv_rocksdb_damage(where, buf, size);
}

int kv_verify(struct kv *kv, void (*report)(void *ctx, const char *msg),
	      void *ctx, size_t *found)
{
	*found = 0;
	return kv->ops->verify ? kv->ops->verify(kv, report, ctx, found) : 0;
}

/*
 * Quiet commits (kv_quiet), which @kv's watches do not hand out. A watch
 * meets a change before the commit that made it has its answer (the two
 * come by different connections), so it cannot know a revision for
 * another's until the quiet commits in flight when it met it have ended:
 * it waits for them. Commits join an epoch as they start; the watch turns
 * the epoch and waits for the old one to empty, which takes a commit's
 * round trip at most (later commits join the new epoch).
 */
#define KV_QUIET_REVS 256

struct kv_quiet_revs {
	pthread_mutex_t lock;
	pthread_cond_t ended;	       /* with lock: a quiet commit ended */
	unsigned busy[2];	       /* quiet commits in flight, by epoch */
	unsigned epoch;		       /* the one commits join now */
	long long revs[KV_QUIET_REVS]; /* their revisions: a ring */
	unsigned long n;	       /* revisions ever added */
};

/* The store this thread's commits are quiet on (kv_quiet), or NULL. */
static __thread const struct kv *quiet_kv;

void kv_quiet(struct kv *kv)
{
	quiet_kv = kv;
}

static int quiet_new(struct kv *kv)
{
	struct kv_quiet_revs *q = calloc(1, sizeof(*q));

	if (!q)
		return -ENOMEM;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->ended, NULL);
	kv->quiet = q;
	return 0;
}

static void quiet_free(struct kv_quiet_revs *q)
{
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->ended);
	free(q);
}

/* A quiet commit starts: the epoch it joined. */
static unsigned quiet_begin(struct kv_quiet_revs *q)
{
	unsigned e;

	pthread_mutex_lock(&q->lock);
	e = q->epoch;
	q->busy[e]++;
	pthread_mutex_unlock(&q->lock);
	return e;
}

/* The quiet commit of epoch @e ended, making revision @rev (<= 0: none). */
static void quiet_end(struct kv_quiet_revs *q, unsigned e, long long rev)
{
	pthread_mutex_lock(&q->lock);
	if (rev > 0)
		q->revs[q->n++ % KV_QUIET_REVS] = rev;
	q->busy[e]--;
	pthread_cond_broadcast(&q->ended);
	pthread_mutex_unlock(&q->lock);
}

/* Caller holds q->lock. */
static bool quiet_known(const struct kv_quiet_revs *q, long long rev)
{
	unsigned long n = q->n < KV_QUIET_REVS ? q->n : KV_QUIET_REVS;

	for (unsigned long i = 0; i < n; i++)
		if (q->revs[i] == rev)
			return true;
	return false;
}

/* Whether revision @rev, which a watch met, was made by a quiet commit
 * (one of the last KV_QUIET_REVS). */
static bool quiet_made(struct kv_quiet_revs *q, long long rev)
{
	bool known;

	pthread_mutex_lock(&q->lock);
	if (!quiet_known(q, rev) && (q->busy[0] || q->busy[1])) {
		unsigned old;

		/* an earlier turn's leftovers first: they may be it too */
		while (q->busy[q->epoch ^ 1] && !quiet_known(q, rev))
			pthread_cond_wait(&q->ended, &q->lock);
		old = q->epoch;
		q->epoch ^= 1;
		while (q->busy[old] && !quiet_known(q, rev))
			pthread_cond_wait(&q->ended, &q->lock);
	}
	known = quiet_known(q, rev);
	pthread_mutex_unlock(&q->lock);
	return known;
}

int kv_open(struct kv **out, const char *where, const struct kv_options *opt)
{
	struct kv_options o = *opt;
	struct kv *kv = NULL;
	int rc;

	if (kv_env_strict())
		o.strict = true;
	if (kv_is_etcd(where))
		rc = kv_etcd_open(&kv, where, &o);
	else if (kv_is_dynamodb(where))
		rc = kv_ddb_open(&kv, where, &o);
	else
		rc = kv_rocksdb_open(&kv, where, &o);
	if (!rc) {
		rc = quiet_new(kv);
		if (rc)
			kv->ops->close(kv);
	}
	if (rc)
		return rc;
	kv->family = o.family;
	kv->strict = o.strict;
	if (!kv->limits.batch_actions)
		kv->limits.batch_actions = kv->limits.batch_ops;
	if (o.strict) {
		struct kv_limits *l = &kv->limits;
		if (l->batch_ops > KV_ETCD_TXN_OPS)
			l->batch_ops = KV_ETCD_TXN_OPS;
		if (l->batch_actions > KV_ETCD_TXN_OPS)
			l->batch_actions = KV_ETCD_TXN_OPS;
		if (l->batch_bytes > KV_ETCD_BATCH_BYTES)
			l->batch_bytes = KV_ETCD_BATCH_BYTES;
		if (l->value_bytes > KV_ETCD_BATCH_BYTES)
			l->value_bytes = KV_ETCD_BATCH_BYTES;
	}
	*out = kv;
	return 0;
}

void kv_close(struct kv *kv)
{
	struct kv_quiet_revs *q;

	if (!kv)
		return;
	q = kv->quiet;
	kv->ops->close(kv); /* its watches were stopped: none waits on q */
	quiet_free(q);
}

bool kv_read_only(const struct kv *kv)
{
	return kv->read_only;
}

bool kv_watch_revs(const struct kv *kv)
{
	return kv->ops->watch_revs;
}

bool kv_iters_one_moment(const struct kv *kv)
{
	return !kv->ops->paged_iters;
}

struct kv_watch {
	const struct kv_ops *ops;
	void *w; /* the backend's */
	struct kv *kv;
	kv_change_fn change;
	void (*reset)(void *ctx);
	void *ctx;
	long long rev; /* of the last change met, and whether it was quiet */
	bool quiet;
};

/* The backend's change: handed out unless this process made it quietly. */
static void watch_change(void *arg, long long rev, const char *key, size_t klen,
			 const char *value, size_t vlen)
{
	struct kv_watch *w = arg;

	if (rev > 0 && rev != w->rev) { /* a commit's first change */
		w->rev = rev;
		w->quiet = quiet_made(w->kv->quiet, rev);
	}
	if (rev > 0 && w->quiet)
		return;
	w->change(w->ctx, rev, key, klen, value, vlen);
}

static void watch_reset(void *arg)
{
	struct kv_watch *w = arg;

	w->reset(w->ctx);
}

int kv_watch(struct kv_watch **out, struct kv *kv, const char *lo, size_t lolen,
	     const char *hi, size_t hilen, long long rev, kv_change_fn change,
	     void (*reset)(void *ctx), void *ctx)
{
	struct kv_watch *w;
	int rc;

	*out = NULL;
	if (!kv->ops->watch)
		return -EOPNOTSUPP;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->ops = kv->ops;
	w->kv = kv;
	w->change = change;
	w->reset = reset;
	w->ctx = ctx;
	rc = kv->ops->watch(&w->w, kv, lo, lolen, hi, hilen, rev, watch_change,
			    watch_reset, w);
	if (rc) {
		free(w);
		return rc;
	}
	*out = w;
	return 0;
}

void kv_watch_stop(struct kv_watch *w)
{
	if (!w)
		return;
	w->ops->watch_stop(w->w);
	free(w);
}

const struct kv_limits *kv_limits(const struct kv *kv)
{
	return &kv->limits;
}

#define KV_COUNT(x) __atomic_add_fetch(&(x), 1, __ATOMIC_RELAXED)

void kv_counts(const struct kv *kv, struct kv_counts *out)
{
	const struct kv_counts *c = &kv->counts;

	out->gets = __atomic_load_n(&c->gets, __ATOMIC_RELAXED);
	out->content_gets = __atomic_load_n(&c->content_gets, __ATOMIC_RELAXED);
	out->iters = __atomic_load_n(&c->iters, __ATOMIC_RELAXED);
	out->seeks = __atomic_load_n(&c->seeks, __ATOMIC_RELAXED);
	out->nexts = __atomic_load_n(&c->nexts, __ATOMIC_RELAXED);
	out->commits = __atomic_load_n(&c->commits, __ATOMIC_RELAXED);
	out->conflicts = __atomic_load_n(&c->conflicts, __ATOMIC_RELAXED);
	out->stale_pins = __atomic_load_n(&c->stale_pins, __ATOMIC_RELAXED);
	out->requests = out->retries = out->faults = 0;
	out->pages = out->txns = out->read_milli = out->write_milli = 0;
	out->txn_write_milli = out->txn_rule_milli = 0;
	if (kv->ops->engine_counts)
		kv->ops->engine_counts(kv, out);
}

size_t kv_range_keys(const struct kv *kv)
{
	return kv_limits_range_keys(&kv->limits);
}

/*
 * Pins (kv_pin). An engine that reads at one revision (ops->pins: etcd) is
 * handed the pin's revision with every read. Any other is checked here, at
 * kv_unpin(): the pin keeps the key and version of each point read it made
 * of a key outside KV_CONTENT (a node, an inode record), and reads them
 * again at the end; a version changed means a commit landed among the
 * pin's reads: -ESTALE, the caller starts again. That covers the pin's
 * other reads (blocks, an iterator's entries) because the store rewrites
 * such a record in every commit that changes them (store/content.c: a
 * file's record with its blocks; store/tree.c: a folder's node with its
 * entries), and DynamoDB orders each single-item read with its
 * transactions. A sole writer (ops->sole_writer: nobody else can commit)
 * skips the reads when none of this open's own commits was in flight
 * during the pin (commits_begun and commits_ended): nothing changed.
 */
#define PIN_ATOMIC(x) __atomic_load_n(&(x), __ATOMIC_SEQ_CST)

static __thread struct {
	const struct kv *kv;
	long long rev;	       /* ops->pins: the revision (0: none read yet) */
	bool sole;	       /* a sole writer whose commits were all ended */
	uint64_t begun;	       /* ... and how many had begun, at kv_pin() */
	bool unread;	       /* kv_pin_needs_record() said false */
	bool wary;	       /* such a pin was stale: read records */
	struct kv_cond *reads; /* !ops->pins: the reads to check */
	size_t n, cap;
} pin;

/* Frees the array *@a of *@n conditions (their keys too): empty. */
static void conds_free(struct kv_cond **a, size_t *n, size_t *cap)
{
	for (size_t i = 0; i < *n; i++)
		free((*a)[i].key);
	free(*a);
	*a = NULL;
	*n = *cap = 0;
}

/* Frees the pin's reads, the array too: a thread may end unpinned and
 * its thread-local array with it (the daemon's idle workers do). */
static void pin_drop_reads(void)
{
	conds_free(&pin.reads, &pin.n, &pin.cap);
}

void kv_pin(struct kv *kv)
{
	uint64_t ended;

	pin_drop_reads();
	pin.kv = kv;
	pin.rev = 0;
	pin.sole = pin.unread = false;
	if (kv->ops->pins || !kv->ops->sole_writer)
		return;
	/* ended first: if as many had begun after, none was in flight */
	ended = PIN_ATOMIC(kv->commits_ended);
	pin.begun = PIN_ATOMIC(kv->commits_begun);
	pin.sole = pin.begun == ended && kv->ops->sole_writer(kv);
}

/* Whether the pin's reads of @kv changed since they were made: read
 * again. Errors: -ESTALE (one did), those of kv_get (not -ENOENT). */
static int pin_check(struct kv *kv)
{
	int rc = 0;

	if (pin.sole && PIN_ATOMIC(kv->commits_begun) == pin.begun &&
	    kv->ops->sole_writer(kv))
		return 0; /* no commit ran: nothing changed */
	if (pin.unread) {
		pin.wary = true; /* one ran, and no record tells what it did */
		return -ESTALE;
	}
	for (size_t i = 0; !rc && i < pin.n; i++) {
		const struct kv_cond *r = &pin.reads[i];
		char *val = NULL;
		size_t vlen;
		uint64_t ver;

		KV_COUNT(kv->counts.gets);
		rc = kv->ops->get(kv, r->key, r->klen, NULL, &val, &vlen, &ver);
		free(val);
		if (rc == 0 || rc == -ENOENT)
			rc = ver == r->ver ? 0 : -ESTALE;
	}
	return rc;
}

int kv_unpin(struct kv *kv)
{
	int rc = 0;

	if (pin.kv != kv)
		return 0;
	if (!kv->ops->pins)
		rc = pin_check(kv);
	if (rc == -ESTALE)
		KV_COUNT(kv->counts.stale_pins);
	pin.kv = NULL;
	pin_drop_reads();
	return rc;
}

bool kv_pin_needs_record(const struct kv *kv)
{
	bool wary = pin.wary;

	if (pin.kv != kv || kv->ops->pins)
		return false;
	pin.wary = false;
	pin.unread = pin.sole && !wary;
	return !pin.unread;
}

/* The revision a read of @kv by this thread is to use: NULL if unpinned,
 * or if the engine reads no revisions (kv.c checks the pin instead). */
static long long *pin_rev(const struct kv *kv)
{
	return pin.kv == kv && kv->ops->pins ? &pin.rev : NULL;
}

/* Whether this thread's pin of @kv keeps @key's version to check it. */
static bool pin_keeps(const struct kv *kv, const char *key, size_t klen)
{
	return pin.kv == kv && !kv->ops->pins &&
	       !(kv->family && kv->family(key, klen) == KV_CONTENT);
}

/* This thread's tracked reads (kv_track): the store tracked, its reads'
 * keys and versions, and whether a tracked commit failed on them. */
static __thread struct {
	const struct kv *kv;
	struct kv_cond *reads;
	size_t n, cap;
	bool conflict;
} track;

static void track_end(void)
{
	conds_free(&track.reads, &track.n, &track.cap);
	track.kv = NULL;
}

void kv_track(struct kv *kv)
{
	track_end();
	track.kv = kv;
	track.conflict = false;
}

bool kv_tracking(const struct kv *kv)
{
	return track.kv == kv;
}

void kv_track_spoil(struct kv *kv)
{
	if (track.kv == kv)
		track.conflict = true;
}

bool kv_untrack(struct kv *kv)
{
	bool conflict = track.conflict;

	if (track.kv == kv)
		track_end();
	track.conflict = false;
	return conflict;
}

/* Appends a copy of @key with @ver to the array *@a of *@n (room for
 * *@cap). Out of memory aborts, as adding to a batch does. */
static void cond_add(struct kv_cond **a, size_t *n, size_t *cap,
		     const char *key, size_t klen, uint64_t ver)
{
	struct kv_cond *c;

	if (*n == *cap) {
		size_t more = *cap ? 2 * *cap : 8;

		c = realloc(*a, more * sizeof(*c));
		if (!c)
			abort();
		*a = c;
		*cap = more;
	}
	c = &(*a)[*n];
	c->key = malloc(klen ? klen : 1);
	if (!c->key)
		abort();
	memcpy(c->key, key, klen);
	c->klen = klen;
	c->ver = ver;
	(*n)++;
}

int kv_get_ver(struct kv *kv, const char *key, size_t klen, char **val,
	       size_t *vlen, uint64_t *ver)
{
	uint64_t v;
	int rc;

	KV_COUNT(kv->counts.gets);
	if (kv->family && kv->family(key, klen) == KV_CONTENT)
		KV_COUNT(kv->counts.content_gets);
	if (!pin_keeps(kv, key, klen))
		return kv->ops->get(kv, key, klen, pin_rev(kv), val, vlen, ver);
	rc = kv->ops->get(kv, key, klen, NULL, val, vlen, &v);
	if (rc == 0 || rc == -ENOENT)
		cond_add(&pin.reads, &pin.n, &pin.cap, key, klen, v);
	if (ver)
		*ver = v;
	return rc;
}

void kv_track_known(struct kv *kv, const char *key, size_t klen, uint64_t ver)
{
	if (track.kv == kv)
		cond_add(&track.reads, &track.n, &track.cap, key, klen, ver);
}

int kv_get(struct kv *kv, const char *key, size_t klen, char **val,
	   size_t *vlen)
{
	uint64_t ver;
	int rc;

	if (track.kv != kv)
		return kv_get_ver(kv, key, klen, val, vlen, NULL);
	rc = kv_get_ver(kv, key, klen, val, vlen, &ver);
	if (rc == 0 || rc == -ENOENT)
		kv_track_known(kv, key, klen, ver);
	return rc;
}

static int iter_open(struct kv_iter **out, struct kv *kv, const char *lo,
		     size_t lolen, const char *hi, size_t hilen, unsigned flags)
{
	int rc = kv->ops->iter_open(out, kv, lo, lolen, hi, hilen, flags,
				    pin_rev(kv));

	KV_COUNT(kv->counts.iters);
	if (rc == 0) {
		(*out)->kv = kv;
		(*out)->keys_only = flags & KV_ITER_KEYS_ONLY;
	}
	return rc;
}

int kv_iter_open(struct kv_iter **out, struct kv *kv, const char *lo,
		 size_t lolen, const char *hi, size_t hilen)
{
	return iter_open(out, kv, lo, lolen, hi, hilen, 0);
}

int kv_iter_open_keys(struct kv_iter **out, struct kv *kv, const char *lo,
		      size_t lolen, const char *hi, size_t hilen)
{
	return iter_open(out, kv, lo, lolen, hi, hilen, KV_ITER_KEYS_ONLY);
}

void kv_iter_seek(struct kv_iter *it, const char *key, size_t klen)
{
	KV_COUNT(it->kv->counts.seeks);
	it->ops->iter_seek(it, key, klen);
}

bool kv_iter_valid(struct kv_iter *it)
{
	return it->ops->iter_valid(it);
}

const char *kv_iter_key(struct kv_iter *it, size_t *len)
{
	return it->ops->iter_key(it, len);
}

const char *kv_iter_value(struct kv_iter *it, size_t *len)
{
	if (it->keys_only) { /* the same on every engine */
		*len = 0;
		return "";
	}
	return it->ops->iter_value(it, len);
}

void kv_iter_next(struct kv_iter *it)
{
	KV_COUNT(it->kv->counts.nexts);
	it->ops->iter_next(it);
}

int kv_iter_status(struct kv_iter *it)
{
	return it->ops->iter_status(it);
}

void kv_iter_free(struct kv_iter *it)
{
	if (it)
		it->ops->iter_free(it);
}

struct kv_batch *kv_batch_new(struct kv *kv)
{
	struct kv_batch *b = kv->ops->batch_new(kv);

	if (!b)
		abort(); /* as RocksDB does on allocation failure */
	b->kv = kv;
	return b;
}

void kv_batch_put(struct kv_batch *b, const char *key, size_t klen,
		  const char *val, size_t vlen)
{
	b->ops++;
	b->actions++;
	b->bytes += klen + vlen;
	b->put_bytes += klen + vlen;
	if (vlen > b->value_max)
		b->value_max = vlen;
	b->kv->ops->batch_put(b, key, klen, val, vlen);
}

bool kv_can_patch(const struct kv *kv)
{
	return kv->ops->batch_patch != NULL;
}

void kv_batch_patch(struct kv_batch *b, const char *key, size_t klen,
		    uint32_t off, const char *data, size_t len)
{
	/* counted as a put of the bytes it carries (the engine's operand adds
	 * a few bytes of header) */
	b->ops++;
	b->actions++;
	b->bytes += klen + len;
	b->put_bytes += klen + len;
	if (len > b->value_max)
		b->value_max = len;
	b->kv->ops->batch_patch(b, key, klen, off, data, len);
}

void kv_batch_delete(struct kv_batch *b, const char *key, size_t klen)
{
	b->ops++;
	b->actions++;
	b->bytes += klen;
	b->deletes++;
	b->kv->ops->batch_delete(b, key, klen);
}

void kv_batch_expect(struct kv_batch *b, const char *key, size_t klen,
		     uint64_t ver)
{
	cond_add(&b->conds, &b->nconds, &b->capconds, key, klen, ver);
	b->ops++;
	b->actions++;
	b->bytes += klen;
}

static void batch_drop_conds(struct kv_batch *b)
{
	for (size_t i = 0; i < b->nconds; i++)
		free(b->conds[i].key);
	b->nconds = 0;
}

/*
 * The keys [lo, hi) holds now, counted up to @max + 1, through the backend
 * so that kv_counts stays the store's: strict mode's range deletes (up to
 * one past a slice, kv_range_keys) and, on an engine whose range deletes
 * cost an action per key, every range delete (up to one past a commit). A
 * bound naming no family counts its lower bound's family only. A read that
 * fails counts what it read: the engine's own check at commit stands.
 */
static size_t range_keys_now(struct kv *kv, const char *lo, size_t lolen,
			     const char *hi, size_t hilen, size_t max)
{
	struct kv_iter *it = NULL;
	size_t n = 0;

	if (kv->ops->iter_open(&it, kv, lo, lolen, hi, hilen, KV_ITER_KEYS_ONLY,
			       NULL))
		return 0;
	it->kv = kv;
	for (; n <= max && kv->ops->iter_valid(it); kv->ops->iter_next(it))
		n++;
	kv->ops->iter_free(it);
	return n;
}

void kv_batch_delete_range(struct kv_batch *b, const char *lo, size_t lolen,
			   const char *hi, size_t hilen)
{
	struct kv *kv = b->kv;
	const struct kv_limits *l = &kv->limits;

	if (l->range_per_key || kv->strict) {
		size_t max = kv->strict ? kv_range_keys(kv) : 0, n;

		if (l->range_per_key && l->batch_actions > max)
			max = l->batch_actions;
		n = range_keys_now(kv, lo, lolen, hi, hilen, max);
		b->range_keys += n;
		b->actions += l->range_per_key ? n : 1;
	} else {
		b->actions++;
	}
	b->ops++;
	b->bytes += lolen + hilen;
	b->deletes++;
	b->kv->ops->batch_delete_range(b, lo, lolen, hi, hilen);
}

size_t kv_batch_count(const struct kv_batch *b)
{
	return b->ops;
}

size_t kv_batch_bytes(const struct kv_batch *b)
{
	return b->bytes;
}

bool kv_batch_fits(const struct kv_batch *b, size_t klen, size_t vlen)
{
	const struct kv_limits *l = &b->kv->limits;

	return b->ops < l->batch_ops && vlen <= l->value_bytes &&
	       klen + vlen <= l->batch_bytes - b->bytes;
}

/* The actions @b's commit takes: its own, and the conditions the commit
 * adds (this thread's tracked reads) when it has none of its own. */
static size_t batch_actions_used(const struct kv_batch *b)
{
	if (track.kv == b->kv && b->nconds == 0)
		return b->actions + track.n;
	return b->actions;
}

size_t kv_batch_room(const struct kv_batch *b)
{
	size_t max = b->kv->limits.batch_actions, used = batch_actions_used(b);

	if (max == SIZE_MAX)
		return SIZE_MAX;
	return used < max ? max - used : 0;
}

bool kv_batch_over(const struct kv_batch *b)
{
	const struct kv_limits *l = &b->kv->limits;

	return batch_actions_used(b) > l->batch_actions ||
	       b->bytes > l->batch_bytes || b->value_max > l->value_bytes;
}

size_t kv_batch_range_room(const struct kv_batch *b)
{
	size_t room = kv_batch_room(b);

	if (b->kv->limits.range_per_key || !room)
		return room;
	return kv_range_keys(b->kv);
}

void kv_batch_clear(struct kv_batch *b)
{
	b->ops = b->bytes = b->put_bytes = b->deletes = b->value_max = 0;
	b->actions = 0;
	b->range_keys = 0;
	batch_drop_conds(b);
	b->kv->ops->batch_clear(b);
}

static int batch_commit(struct kv *kv, struct kv_batch *b, bool sync)
{
	const struct kv_limits *l = &kv->limits;
	bool quiet = quiet_kv == kv && kv->ops->watch;
	long long rev = -1;
	unsigned epoch = 0;
	int rc;

	if (kv_batch_over(b)) { /* its conditions are in it by now */
		plog(LOG_ERR,
		     "%s: a batch of %zu actions (%zu operations), %zu bytes "
		     "(largest value %zu) exceeds the engine's limits (%zu, "
		     "%zu, %zu)",
		     kv->ops->name, b->actions, b->ops, b->bytes, b->value_max,
		     l->batch_actions, l->batch_bytes, l->value_bytes);
		return -E2BIG;
	}
	if (kv->strict && !l->range_per_key &&
	    b->range_keys > kv_range_keys(kv)) {
		/* etcd would apply it, stalling the cluster meanwhile (an
		 * engine that counts the keys as actions checked them above) */
		plog(LOG_ERR,
		     "%s: a batch's range deletes cover %zu keys, more than a "
		     "slice of %zu (strict)",
		     kv->ops->name, b->range_keys, kv_range_keys(kv));
		return -E2BIG;
	}
	KV_COUNT(kv->counts.commits);
	if (quiet)
		epoch = quiet_begin(kv->quiet);
	__atomic_add_fetch(&kv->commits_begun, 1, __ATOMIC_SEQ_CST);
	rc = kv->ops->batch_commit(kv, b, sync, &rev);
	__atomic_add_fetch(&kv->commits_ended, 1, __ATOMIC_SEQ_CST);
	if (quiet)
		quiet_end(kv->quiet, epoch, rc ? -1 : rev);
	if (rc == -EAGAIN)
		KV_COUNT(kv->counts.conflicts);
	return rc;
}

int kv_batch_commit(struct kv *kv, struct kv_batch *b, bool sync)
{
	size_t ops = b->ops, actions = b->actions, bytes = b->bytes;
	bool tracked = track.kv == kv && b->nconds == 0;
	int rc;

	if (b->kv != kv)
		return -EINVAL;
	if (!tracked)
		return batch_commit(kv, b, sync);
	if (track.conflict) { /* spoiled: kv_track_spoil */
		track_end();
		return -EAGAIN;
	}
	/* the tracked reads' conditions, for this commit only */
	for (size_t i = 0; i < track.n; i++)
		kv_batch_expect(b, track.reads[i].key, track.reads[i].klen,
				track.reads[i].ver);
	rc = batch_commit(kv, b, sync);
	batch_drop_conds(b);
	b->ops = ops;
	b->actions = actions;
	b->bytes = bytes;
	if (rc == -EAGAIN)
		track.conflict = true;
	if (rc == 0 || rc == -EAGAIN)
		track_end();
	return rc;
}

void kv_batch_free(struct kv_batch *b)
{
	if (!b)
		return;
	batch_drop_conds(b);
	free(b->conds);
	b->kv->ops->batch_free(b);
}

int kv_upgrade(struct kv *kv, size_t max_keys,
	       void (*hook)(void *ctx, uint64_t moved), void *ctx,
	       uint64_t *moved)
{
	return kv->ops->upgrade(kv, max_keys, hook, ctx, moved);
}

int kv_sync(struct kv *kv)
{
	return kv->ops->sync(kv);
}

int kv_space(struct kv *kv, struct statvfs *st)
{
	return kv->ops->space(kv, st);
}

uint64_t kv_writer_id(const struct kv *kv)
{
	return kv->ops->writer_id ? kv->ops->writer_id(kv) : 0;
}

int kv_writers(struct kv *kv, uint64_t **ids, size_t *n)
{
	*ids = NULL;
	*n = 0;
	return kv->ops->writers ? kv->ops->writers(kv, ids, n) : 0;
}

uint64_t kv_estimate_keys(struct kv *kv)
{
	return kv->ops->estimate_keys(kv);
}

int kv_compact_range(struct kv *kv, const char *lo, size_t lolen,
		     const char *hi, size_t hilen)
{
	return kv->ops->compact_range(kv, lo, lolen, hi, hilen);
}

uint64_t kv_reserve_bytes(struct kv *kv)
{
	return kv->ops->reserve_bytes(kv);
}
