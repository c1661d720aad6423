/*
 * kv_rocksdb.c - the kv backend on an embedded RocksDB database (see kv_i.h,
 * kv_backend_i.h): reads, iterators, batches and their commits, sync, and the
 * upgrade of format-1 stores. Its options and why: kv_rocksdb_open.c;
 * patches: kv_rocksdb_patch.c (all three: kv_rocksdb_i.h).
 * It sets no batch limits of its own (kv.c enforces etcd's in strict mode).
 *
 * Space: RocksDB turns read-only when a WAL write fails for lack of space and
 * frees space only after compaction, so a full disk would wedge the store.
 * kv keeps a reserve instead, as ext4 keeps reserved blocks: a batch that
 * grows the store is refused with -ENOSPC once the store's file system has
 * less than the reserve free (enough to flush every memtable and run an L0
 * compaction: 8 memtables + 4 MiB, memtables being 1/64 of the file system,
 * 2..32 MiB); batches that mostly delete still pass, so space can always be
 * freed, and when space is short the ranges a batch deleted are compacted at
 * once, and a write refused for space first compacts the store if anything
 * was deleted since the last time, so the space really comes back.
 * What "full" guarantees: a batch that puts N bytes (counted uncompressed)
 * is refused while the free space is below reserve + N, read at most 50 ms
 * before. The store's own housekeeping can raise the free space again (a
 * flushed memtable gives its WAL back, and content that compresses well
 * takes far less in the table files), so a store that refused one write may
 * take the next; only free space held below the reserve makes every
 * growing write fail (tests/mount/rel_enospc.sh tests exactly that).
 *
 * Conditions (kv_batch_expect): one process opens the store, so they are
 * checked under a lock of this open: a conditioned commit holds it
 * exclusively while it reads its keys and writes, every other commit holds
 * it shared (an uncontended read lock: a few nanoseconds of a commit's
 * microseconds). A key's version is a SipHash of its value.
 *
 * Limits: a family is chosen per key by the classifier, so an iterator sees
 * one family (a range spanning two must be read as two); no transactions
 * beyond atomic batches and their conditions.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "kv_rocksdb_i.h"
#include "log.h"

#define KV_SPACE_TTL_NS 50000000ll /* re-read free space every 50 ms */

struct kvr_iter {
	struct kv_iter base;
	rocksdb_iterator_t *it;
	rocksdb_readoptions_t *ropts;
	char *lo, *hi;
	size_t lolen, hilen;
};
static int kvr_compact_range(struct kv *kv_, const char *lo, size_t lolen,
			     const char *hi, size_t hilen);
/* Maps a RocksDB error string to an errno, logs it with @what, frees it. */
int kvr_error(char *err, const char *what)
{
	int rc = -EIO;

	if (strstr(err, "No space left") || strstr(err, "NoSpace"))
		rc = -ENOSPC;
	else if (strstr(err, "lock file") || strstr(err, "/LOCK") ||
		 strstr(err, "Resource temporarily"))
		rc = -EBUSY;
	else if (strstr(err, "does not exist") || strstr(err, "No such file"))
		rc = -ENOENT;
	else if (strstr(err, "Permission denied"))
		rc = -EACCES;
	else if (strstr(err, "Read-only file system") ||
		 strstr(err, "read only"))
		rc = -EROFS;
	if (rc == -EIO || rc == -ENOSPC)
		plog(LOG_ERR, "rocksdb: %s: %s", what, err);
	else
		plog(LOG_DEBUG, "rocksdb: %s: %s", what, err);
	free(err);
	return rc;
}

/*
 * RocksDB counts every key comparison into a thread-local perf context unless
 * the calling thread turned that off; in a shared library each such access is
 * a __tls_get_addr call, about a tenth of a create's CPU. Nothing here reads
 * the counters, so each thread turns them off before its first call.
 */
static __thread bool kvr_thread_ready;

void kvr_thread_init(void)
{
	if (!kvr_thread_ready) {
		rocksdb_set_perf_level(rocksdb_disable);
		kvr_thread_ready = true;
	}
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The family of a key (never KV_ANY: a key that names no kind is the tree's). */
int kvr_key_fam(const struct kvr *kv, const char *key, size_t klen)
{
	int f = kv->family ? kv->family(key, klen) : KV_TREE;

	return f < 0 || f >= KV_FAMILIES ? KV_TREE : f;
}

/* The one family both bounds of [lo, hi) lie in, or KV_ANY. */
static int kvr_range_fam(const struct kvr *kv, const char *lo, size_t lolen,
			 const char *hi, size_t hilen)
{
	int f, g;

	if (!kv->family)
		return KV_TREE;
	f = kv->family(lo, lolen);
	g = hi ? kv->family(hi, hilen) : KV_ANY;
	return f == g ? f : KV_ANY;
}

/* The version of a value (kv_get_ver): never 0, which says absent. */
static uint64_t kvr_version(const struct kvr *kv, const char *v, size_t n)
{
	uint64_t h = siphash24(kv->ver_key, v, n);

	return h ? h : 1;
}

/* @rev: ignored (a pin, kv_pin, changes nothing here) */
static int kvr_get(struct kv *kv_, const char *key, size_t klen, long long *rev,
		   char **val, size_t *vlen, uint64_t *ver)
{
	struct kvr *kv = (struct kvr *)kv_;
	rocksdb_pinnableslice_t *ps;
	char *err = NULL;
	const char *v;
	char *copy;
	size_t n = 0;
	int rc = 0;

	(void)rev;
	kvr_thread_init();
	/* pinned: a value in the block cache is copied once, here, not first
	 * into RocksDB's own malloc'd buffer */
	ps = rocksdb_get_pinned_cf(kv->db, kv->ropts,
				   kv->fam[kvr_key_fam(kv, key, klen)].h, key,
				   klen, &err);
	if (err)
		return kvr_error(err, "get");
	if (ver)
		*ver = 0;
	if (!ps)
		return -ENOENT;
	v = rocksdb_pinnableslice_value(ps, &n);
	if (ver)
		*ver = kvr_version(kv, v, n);
	copy = malloc(n + 1); /* NUL-terminated for the caller */
	if (!copy) {
		rc = -ENOMEM;
		goto out;
	}
	memcpy(copy, v, n);
	copy[n] = '\0';
	*val = copy;
	*vlen = n;
out:
	rocksdb_pinnableslice_destroy(ps);
	return rc;
}

/* @flags: KV_ITER_KEYS_ONLY changes nothing here (RocksDB reads a key's
 * value with it; kv.c hides it); @rev: ignored, as by kvr_get. */
static int kvr_iter_open(struct kv_iter **out, struct kv *kv_, const char *lo,
			 size_t lolen, const char *hi, size_t hilen,
			 unsigned flags, long long *rev)
{
	struct kvr *kv = (struct kvr *)kv_;
	struct kvr_iter *it = calloc(1, sizeof(*it));
	int f = kvr_range_fam(kv, lo, lolen, hi, hilen);

	(void)flags;
	(void)rev;
	if (!it)
		return -ENOMEM;
	it->base.ops = &kvr_ops;
	kvr_thread_init();
	it->lo = malloc(lolen + 1);
	/* RocksDB keeps a pointer to the upper bound: it must outlive the
	 * iterator, so it lives in struct kvr_iter. */
	it->hi = hi ? malloc(hilen + 1) : NULL;
	if (!it->lo || (hi && !it->hi)) {
		free(it->lo);
		free(it->hi);
		free(it);
		return -ENOMEM;
	}
	it->lolen = lolen;
	memcpy(it->lo, lo, lolen);
	it->ropts = rocksdb_readoptions_create();
	if (hi) {
		memcpy(it->hi, hi, hilen);
		it->hilen = hilen;
		rocksdb_readoptions_set_iterate_upper_bound(it->ropts, it->hi,
							    hilen);
	}
	it->it = rocksdb_create_iterator_cf(kv->db, it->ropts,
					    kv->fam[f < 0 ? KV_TREE : f].h);
	rocksdb_iter_seek(it->it, lo, lolen);
	*out = &it->base;
	return 0;
}

static void kvr_iter_seek(struct kv_iter *it_, const char *key, size_t klen)
{
	struct kvr_iter *it = (struct kvr_iter *)it_;
	if (klen < it->lolen || memcmp(key, it->lo, it->lolen) < 0)
		rocksdb_iter_seek(it->it, it->lo, it->lolen);
	else
		rocksdb_iter_seek(it->it, key, klen);
}

static bool kvr_iter_valid(struct kv_iter *it_)
{
	struct kvr_iter *it = (struct kvr_iter *)it_;
	return rocksdb_iter_valid(it->it);
}

static const char *kvr_iter_key(struct kv_iter *it_, size_t *len)
{
	struct kvr_iter *it = (struct kvr_iter *)it_;
	return rocksdb_iter_key(it->it, len);
}

static const char *kvr_iter_value(struct kv_iter *it_, size_t *len)
{
	struct kvr_iter *it = (struct kvr_iter *)it_;
	return rocksdb_iter_value(it->it, len);
}

static void kvr_iter_next(struct kv_iter *it_)
{
	struct kvr_iter *it = (struct kvr_iter *)it_;
	rocksdb_iter_next(it->it);
}

static int kvr_iter_status(struct kv_iter *it_)
{
	struct kvr_iter *it = (struct kvr_iter *)it_;
	char *err = NULL;

	rocksdb_iter_get_error(it->it, &err);
	if (err)
		return kvr_error(err, "iterate");
	return 0;
}

static void kvr_iter_free(struct kv_iter *it_)
{
	struct kvr_iter *it = (struct kvr_iter *)it_;
	if (!it)
		return;
	if (it->it)
		rocksdb_iter_destroy(it->it);
	if (it->ropts)
		rocksdb_readoptions_destroy(it->ropts);
	free(it->lo);
	free(it->hi);
	free(it);
}

static struct kv_batch *kvr_batch_new(struct kv *kv_)
{
	struct kvr *kv = (struct kvr *)kv_;
	struct kvr_batch *b = calloc(1, sizeof(*b));

	if (!b)
		abort();
	b->base.kv = &kv->base;
	b->wb = rocksdb_writebatch_create();
	return &b->base;
}

static void kvr_batch_put(struct kv_batch *b_, const char *key, size_t klen,
			  const char *val, size_t vlen)
{
	struct kvr_batch *b = (struct kvr_batch *)b_;
	struct kvr *kv = (struct kvr *)b->base.kv;

	rocksdb_writebatch_put_cf(b->wb, kv->fam[kvr_key_fam(kv, key, klen)].h,
				  key, klen, val, vlen);
}
static void kvr_batch_delete(struct kv_batch *b_, const char *key, size_t klen)
{
	struct kvr_batch *b = (struct kvr_batch *)b_;
	struct kvr *kv = (struct kvr *)b->base.kv;

	rocksdb_writebatch_delete_cf(
	    b->wb, kv->fam[kvr_key_fam(kv, key, klen)].h, key, klen);
}

static void kvr_batch_delete_range(struct kv_batch *b_, const char *lo,
				   size_t lolen, const char *hi, size_t hilen)
{
	struct kvr_batch *b = (struct kvr_batch *)b_;
	struct kvr *kv = (struct kvr *)b->base.kv;
	int f = kvr_range_fam(kv, lo, lolen, hi, hilen);

	for (int i = 0; i < kv->nfam; i++)
		if (f < 0 || f == i)
			rocksdb_writebatch_delete_range_cf(
			    b->wb, kv->fam[f < 0 ? i : f].h, lo, lolen, hi,
			    hilen);
	if (b->nranges < KV_RANGES_MAX) {
		int i = b->nranges++;
		b->ranges[i].lo = malloc(lolen);
		b->ranges[i].hi = malloc(hilen);
		if (!b->ranges[i].lo || !b->ranges[i].hi)
			abort();
		memcpy(b->ranges[i].lo, lo, lolen);
		memcpy(b->ranges[i].hi, hi, hilen);
		b->ranges[i].lolen = lolen;
		b->ranges[i].hilen = hilen;
	}
}

static void kvr_batch_drop_ranges(struct kvr_batch *b)
{
	for (int i = 0; i < b->nranges; i++) {
		free(b->ranges[i].lo);
		free(b->ranges[i].hi);
	}
	b->nranges = 0;
}

static void kvr_batch_clear(struct kv_batch *b_)
{
	struct kvr_batch *b = (struct kvr_batch *)b_;
	rocksdb_writebatch_clear(b->wb);
	kvr_batch_drop_ranges(b);
}

/* Bytes free for the store, re-read at most every KV_SPACE_TTL_NS. */
static uint64_t kvr_avail(struct kvr *kv)
{
	int64_t now = mono_ns();
	uint64_t avail;

	pthread_mutex_lock(&kv->space_lock);
	if (now - kv->space_at > KV_SPACE_TTL_NS) {
		struct statvfs st;
		if (statvfs(kv->dir, &st) == 0)
			kv->avail = (uint64_t)st.f_bavail * st.f_frsize;
		else
			kv->avail = UINT64_MAX;
		kv->space_at = now;
	}
	avail = kv->avail;
	pthread_mutex_unlock(&kv->space_lock);
	return avail;
}

/* A batch that mostly deletes may use the reserve: that is how space is
 * freed on a full disk. */
static bool kvr_batch_shrinks(const struct kvr_batch *b)
{
	return b->base.deletes > 0 && b->base.put_bytes <= (64 << 10);
}

/*
 * Short of space: if anything was deleted since the last time, compact the
 * whole store so RocksDB hands the deleted bytes back. Returns true if it
 * compacted (the caller then reads the free space again).
 */
static bool kvr_reclaim(struct kvr *kv)
{
	bool done = false;

	pthread_mutex_lock(&kv->compact_lock);
	if (atomic_exchange(&kv->deletes_pending, 0) > 0) {
		for (int f = 0; f < kv->nfam; f++)
			rocksdb_compact_range_cf(kv->db, kv->fam[f].h, NULL, 0,
						 NULL, 0);
		pthread_mutex_lock(&kv->space_lock);
		kv->space_at = 0;
		pthread_mutex_unlock(&kv->space_lock);
		done = true;
	}
	pthread_mutex_unlock(&kv->compact_lock);
	return done;
}

/*
 * Writes @b, against the space reserve: the engine's half of a commit, which
 * sets no limits of its own. The store's batches come through kv.c, which
 * checked the seam's limits (kvr_batch_commit); the upgrade's do not (they
 * are this file's own, sized by kvr_upgrade).
 */
static int kvr_write(struct kvr *kv, struct kvr_batch *b, bool sync)
{
	char *err = NULL;

	if (kv->base.read_only)
		return -EROFS;
	kvr_thread_init();
	if (!kvr_batch_shrinks(b)) {
		uint64_t need = kv->reserve + b->base.put_bytes;
		if (kvr_avail(kv) < need &&
		    !(kvr_reclaim(kv) && kvr_avail(kv) >= need))
			return -ENOSPC;
	}
	rocksdb_write(kv->db, (sync || kv->sync) ? kv->wopts_sync : kv->wopts,
		      b->wb, &err);
	if (err)
		return kvr_error(err, "write batch");
	if (!sync && !kv->sync)
		atomic_fetch_add(&kv->unsynced,
				 1); /* after the write, see kvr_sync */
	if (b->base.deletes)
		atomic_fetch_add(&kv->deletes_pending, b->base.deletes);
	if (b->base.put_bytes > (1 << 20) || b->nranges) {
		/* big writes move the free space: read it again next time */
		pthread_mutex_lock(&kv->space_lock);
		kv->space_at = 0;
		pthread_mutex_unlock(&kv->space_lock);
	}
	/* RocksDB gives deleted space back only when it compacts: when space
	 * is short, compact what this batch dropped now */
	if (b->nranges && kvr_avail(kv) < 2 * kv->reserve)
		for (int i = 0; i < b->nranges; i++)
			kvr_compact_range(&kv->base, b->ranges[i].lo,
					  b->ranges[i].lolen, b->ranges[i].hi,
					  b->ranges[i].hilen);
	return 0;
}

/* Whether @b's conditions hold now: 0, -EAGAIN, or the error of a read.
 * Caller holds commit_lock exclusively. */
static int kvr_check(struct kvr *kv, const struct kv_batch *b)
{
	for (size_t i = 0; i < b->nconds; i++) {
		const struct kv_cond *c = &b->conds[i];
		uint64_t ver = 0;
		char *v = NULL;
		size_t n;
		int rc;

		rc = kvr_get(&kv->base, c->key, c->klen, NULL, &v, &n, &ver);
		free(v);
		if (rc && rc != -ENOENT)
			return rc;
		if (ver != c->ver)
			return -EAGAIN;
	}
	return 0;
}

static int kvr_batch_commit(struct kv *kv_, struct kv_batch *b_, bool sync,
			    long long *rev)
{
	struct kvr *kv = (struct kvr *)kv_;
	int rc = 0;

	*rev = -1; /* nobody else writes: no watches */

	if (!b_->nconds) {
		pthread_rwlock_rdlock(&kv->commit_lock);
		rc = kvr_write(kv, (struct kvr_batch *)b_, sync);
		pthread_rwlock_unlock(&kv->commit_lock);
		return rc;
	}
	pthread_rwlock_wrlock(&kv->commit_lock);
	rc = kvr_check(kv, b_);
	if (!rc && b_->ops > b_->nconds)
		rc = kvr_write(kv, (struct kvr_batch *)b_, sync);
	pthread_rwlock_unlock(&kv->commit_lock);
	return rc;
}

static void kvr_batch_free(struct kv_batch *b_)
{
	struct kvr_batch *b = (struct kvr_batch *)b_;
	if (!b)
		return;
	rocksdb_writebatch_destroy(b->wb);
	kvr_batch_drop_ranges(b);
	free(b);
}

static int kvr_upgrade(struct kv *kv_, size_t max_keys,
		       void (*hook)(void *ctx, uint64_t moved), void *ctx,
		       uint64_t *moved)
{
	struct kvr *kv = (struct kvr *)kv_;
	rocksdb_column_family_handle_t *tree = kv->fam[KV_TREE].h;
	rocksdb_readoptions_t *ro = NULL;
	rocksdb_iterator_t *it = NULL;
	struct kvr_batch *b = NULL;
	uint64_t n = 0, pending = 0;
	char *err = NULL;
	int rc = 0;

	if (kv->base.read_only)
		return -EROFS;
	if (!max_keys)
		max_keys = 1024;
	kvr_thread_init();
	/* one pass over a snapshot of the tree family, read ahead and kept
	 * out of the block cache: every byte of it is read once */
	ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_fill_cache(ro, 0);
	rocksdb_readoptions_set_readahead_size(ro, 2 << 20);
	it = rocksdb_create_iterator_cf(kv->db, ro, tree);
	b = (struct kvr_batch *)kvr_batch_new(&kv->base);
	for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it);
	     rocksdb_iter_next(it)) {
		size_t klen, vlen;
		const char *k = rocksdb_iter_key(it, &klen);
		const char *v;
		int f = kvr_key_fam(kv, k, klen);

		if (f == KV_TREE)
			continue;
		v = rocksdb_iter_value(it, &vlen);
		rocksdb_writebatch_put_cf(b->wb, kv->fam[f].h, k, klen, v,
					  vlen);
		rocksdb_writebatch_delete_cf(b->wb, tree, k, klen);
		b->base.bytes += 2 * klen + vlen;
		b->base.put_bytes += klen + vlen;
		b->base.deletes++;
		if (++pending < max_keys && b->base.bytes < (4 << 20))
			continue;
		rc = kvr_write(kv, b, false);
		if (rc)
			goto out;
		n += pending;
		pending = 0;
		kvr_batch_clear(&b->base);
		b->base.bytes = b->base.put_bytes = b->base.deletes = 0;
		if (hook)
			hook(ctx, n);
	}
	rocksdb_iter_get_error(it, &err);
	if (err) {
		rc = kvr_error(err, "upgrade: iterate");
		goto out;
	}
	if (pending) {
		rc = kvr_write(kv, b, false);
		if (rc)
			goto out;
		n += pending;
		if (hook)
			hook(ctx, n);
	}
	/* every move durable before the caller records the upgrade as done */
	rocksdb_flush_wal(kv->db, 1, &err);
	if (err) {
		rc = kvr_error(err, "upgrade: sync wal");
		goto out;
	}
	/* the old copies leave the tree family's tables now, not at some
	 * later compaction: that is what the split is for */
	if (n)
		rocksdb_compact_range_cf(kv->db, tree, NULL, 0, NULL, 0);
out:
	kvr_batch_free(&b->base);
	if (it)
		rocksdb_iter_destroy(it);
	rocksdb_readoptions_destroy(ro);
	if (moved)
		*moved = n;
	return rc;
}

static int kvr_sync(struct kv *kv_)
{
	struct kvr *kv = (struct kvr *)kv_;
	char *err = NULL;
	unsigned long seen, done;

	if (kv->base.read_only)
		return 0;
	/*
	 * A commit counts itself in `unsynced` after its write returned, and
	 * this reads the count before syncing: every commit counted by then
	 * is in the WAL that the sync below makes durable. Synced commits
	 * (-o sync, or @sync) are durable when they return and never count.
	 * Nothing new since the last sync: the fdatasync of every live WAL
	 * file would be wasted (an fsync loop, every fsync of an -o sync
	 * mount).
	 */
	seen = atomic_load(&kv->unsynced);
	if (atomic_load(&kv->synced) == seen)
		return 0;
	rocksdb_flush_wal(kv->db, 1, &err);
	if (err)
		return kvr_error(err, "sync wal");
	done = atomic_load(&kv->synced);
	while (done < seen &&
	       !atomic_compare_exchange_weak(&kv->synced, &done, seen))
		;
	return 0;
}

static int kvr_compact_range(struct kv *kv_, const char *lo, size_t lolen,
			     const char *hi, size_t hilen)
{
	struct kvr *kv = (struct kvr *)kv_;
	int f = kvr_range_fam(kv, lo, lolen, hi, hilen);

	if (kv->base.read_only)
		return 0;
	for (int i = 0; i < kv->nfam; i++)
		if (f < 0 || f == i)
			rocksdb_compact_range_cf(kv->db, kv->fam[i].h, lo,
						 lolen, hi, hilen);
	pthread_mutex_lock(&kv->space_lock);
	kv->space_at = 0;
	pthread_mutex_unlock(&kv->space_lock);
	return 0;
}

static int kvr_space(struct kv *kv_, struct statvfs *st)
{
	struct kvr *kv = (struct kvr *)kv_;

	return statvfs(kv->dir, st) < 0 ? -errno : 0;
}

static uint64_t kvr_estimate_keys(struct kv *kv_)
{
	struct kvr *kv = (struct kvr *)kv_;
	uint64_t n = 0;

	for (int f = 0; f < kv->nfam; f++) {
		char *v = rocksdb_property_value_cf(
		    kv->db, kv->fam[f].h, "rocksdb.estimate-num-keys");
		if (v) {
			n += strtoull(v, NULL, 10);
			free(v);
		}
	}
	return n;
}

static uint64_t kvr_reserve_bytes(struct kv *kv_)
{
	struct kvr *kv = (struct kvr *)kv_;
	return kv->reserve;
}

/*
 * kv_verify: every key of each family read in order, checksums verified and
 * the block cache left alone (a whole-store read would evict what requests
 * use); the merging iterator reads every block of every table, the entries
 * newer ones hide included. The first read error of a family ends its scan.
 */
static int kvr_verify(struct kv *kv_,
		      void (*report)(void *ctx, const char *msg), void *ctx,
		      size_t *found)
{
	static const char *const fam_names[KV_FAMILIES] = {"tree", "content"};
	struct kvr *kv = (struct kvr *)kv_;
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	char msg[1024];

	kvr_thread_init();
	rocksdb_readoptions_set_verify_checksums(ro, 1);
	rocksdb_readoptions_set_fill_cache(ro, 0);
	rocksdb_readoptions_set_readahead_size(ro, 2 << 20);
	for (int f = 0; f < kv->nfam; f++) {
		rocksdb_iterator_t *it =
		    rocksdb_create_iterator_cf(kv->db, ro, kv->fam[f].h);
		char *err = NULL;

		for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it);
		     rocksdb_iter_next(it))
			;
		rocksdb_iter_get_error(it, &err);
		rocksdb_iter_destroy(it);
		if (!err)
			continue;
		snprintf(msg, sizeof(msg), "damaged table file (%s family): %s",
			 kv->nfam > 1 ? fam_names[f] : "only", err);
		plog(LOG_NOTICE, "%s: %s", kv->dir, msg);
		free(err);
		report(ctx, msg);
		(*found)++;
	}
	rocksdb_readoptions_destroy(ro);
	return 0;
}

/* One process opens the store (its LOCK file); a read-only open reads the
 * database as it was when opened. */
static bool kvr_sole_writer(const struct kv *kv)
{
	(void)kv;
	return true;
}

const struct kv_ops kvr_ops = {
    .name = "rocksdb",
    .sole_writer = kvr_sole_writer,
    .close = kvr_close,
    .get = kvr_get,
    .iter_open = kvr_iter_open,
    .iter_seek = kvr_iter_seek,
    .iter_valid = kvr_iter_valid,
    .iter_key = kvr_iter_key,
    .iter_value = kvr_iter_value,
    .iter_next = kvr_iter_next,
    .iter_status = kvr_iter_status,
    .iter_free = kvr_iter_free,
    .batch_new = kvr_batch_new,
    .batch_put = kvr_batch_put,
    .batch_patch = kvr_batch_patch,
    .batch_delete = kvr_batch_delete,
    .batch_delete_range = kvr_batch_delete_range,
    .batch_clear = kvr_batch_clear,
    .batch_commit = kvr_batch_commit,
    .batch_free = kvr_batch_free,
    .upgrade = kvr_upgrade,
    .sync = kvr_sync,
    .space = kvr_space,
    .estimate_keys = kvr_estimate_keys,
    .compact_range = kvr_compact_range,
    .reserve_bytes = kvr_reserve_bytes,
    .verify = kvr_verify,
};
