/*
 * kv_backend_i.h - what a kv backend provides (see kv_i.h for the interface
 * the store uses, kv.c for the dispatch).
 *
 * A backend embeds struct kv, struct kv_iter and struct kv_batch as the first
 * member of its own handles and fills in a const struct kv_ops. kv.c keeps
 * the bookkeeping common to every engine (a batch's operation and byte
 * counts, the engine's limits, refusing a batch that exceeds them), so a
 * backend sees only batches that fit. Backends: kv_rocksdb*.c (embedded
 * RocksDB, the only files that include rocksdb/c.h), kv_etcd.c (an etcd
 * cluster over its v3 JSON gateway) and kv_ddb.c (a DynamoDB table).
 *
 * A backend calls nothing of kv.c: the dispatch calls the backends, never
 * the other way round (what both need is here, as kv_limits_range_keys()).
 *
 * Internal to store/kv/.
 */
#ifndef PATHFS_KV_BACKEND_I_H
#define PATHFS_KV_BACKEND_I_H

#include <stdint.h>

#include "kv_i.h"

struct kv_ops {
	const char *name; /* for log lines: "rocksdb", "etcd", "dynamodb" */
	/*
	 * true if the engine reads a pin (kv_pin) at one moment itself: get
	 * and iter_open honour @rev (etcd: one revision). Otherwise kv.c
	 * checks a pin's point reads at kv_unpin() (kv.c, Pins).
	 */
	bool pins;
	/* true if a watch started at a revision (kv_watch's @rev) hands out
	 * every change from it on (etcd) */
	bool watch_revs;
	/* true if an iterator reads each page as the store is then, not
	 * isolated from commits (DynamoDB's Query): kv_iters_one_moment() */
	bool paged_iters;
	/*
	 * optional (NULL: never): true while no other process can commit to
	 * the store (RocksDB: one process opens it; DynamoDB: this open
	 * holds the lease), so that a pin no commit of this open overlapped
	 * read one moment with no check.
	 */
	bool (*sole_writer)(const struct kv *kv);
	void (*close)(struct kv *kv);
	/*
	 * @rev: NULL, or the thread's pin (kv_pin): *rev 0 reads the latest
	 * and sets *rev to the revision read (a key not found too), *rev > 0
	 * reads that revision (-ESTALE if compacted). A backend whose only
	 * writer is this process ignores it. @ver: NULL, or set to the
	 * key's version (kv_get_ver; 0 with -ENOENT).
	 */
	int (*get)(struct kv *kv, const char *key, size_t klen, long long *rev,
		   char **val, size_t *vlen, uint64_t *ver);
	/* @flags: KV_ITER_KEYS_ONLY (the values may be left unread); @rev as
	 * for get, the revision of the iterator's snapshot */
	int (*iter_open)(struct kv_iter **out, struct kv *kv, const char *lo,
			 size_t lolen, const char *hi, size_t hilen,
			 unsigned flags, long long *rev);
	void (*iter_seek)(struct kv_iter *it, const char *key, size_t klen);
	bool (*iter_valid)(struct kv_iter *it);
	const char *(*iter_key)(struct kv_iter *it, size_t *len);
	const char *(*iter_value)(struct kv_iter *it, size_t *len);
	void (*iter_next)(struct kv_iter *it);
	int (*iter_status)(struct kv_iter *it);
	void (*iter_free)(struct kv_iter *it);
	/* a zeroed batch with base.kv set; kv.c counts, the backend records */
	struct kv_batch *(*batch_new)(struct kv *kv);
	void (*batch_put)(struct kv_batch *b, const char *key, size_t klen,
			  const char *val, size_t vlen);
	/* optional (NULL: no patches, see kv_can_patch) */
	void (*batch_patch)(struct kv_batch *b, const char *key, size_t klen,
			    uint32_t off, const char *data, size_t len);
	void (*batch_delete)(struct kv_batch *b, const char *key, size_t klen);
	void (*batch_delete_range)(struct kv_batch *b, const char *lo,
				   size_t lolen, const char *hi, size_t hilen);
	void (*batch_clear)(struct kv_batch *b);
	/* called only with a batch within kv->limits; checks b->conds
	 * atomically with its writes (-EAGAIN if one fails); *rev: the
	 * revision the commit made, as its watch events carry it (-1:
	 * unknown, or an engine without watches) */
	int (*batch_commit)(struct kv *kv, struct kv_batch *b, bool sync,
			    long long *rev);
	void (*batch_free)(struct kv_batch *b);
	int (*upgrade)(struct kv *kv, size_t max_keys,
		       void (*hook)(void *ctx, uint64_t moved), void *ctx,
		       uint64_t *moved);
	int (*sync)(struct kv *kv);
	int (*space)(struct kv *kv, struct statvfs *st);
	uint64_t (*estimate_keys)(struct kv *kv);
	int (*compact_range)(struct kv *kv, const char *lo, size_t lolen,
			     const char *hi, size_t hilen);
	uint64_t (*reserve_bytes)(struct kv *kv);
	/* optional (NULL: nothing to check): kv_verify() */
	int (*verify)(struct kv *kv, void (*report)(void *ctx, const char *msg),
		      void *ctx, size_t *found);
	/* optional (NULL: -EOPNOTSUPP): kv_watch(), kv_watch_stop() */
	int (*watch)(void **out, struct kv *kv, const char *lo, size_t lolen,
		     const char *hi, size_t hilen, long long rev,
		     kv_change_fn change, void (*reset)(void *ctx), void *ctx);
	void (*watch_stop)(void *w);
	/* optional (NULL: none): fills the engine's own fields of @out
	 * (requests ... write_milli, see struct kv_counts) */
	void (*engine_counts)(const struct kv *kv, struct kv_counts *out);
	/* optional (a store one process writes): shared writers */
	uint64_t (*writer_id)(const struct kv *kv);
	int (*writers)(struct kv *kv, uint64_t **ids, size_t *n);
};

/* The head of every backend's store handle. */
struct kv {
	const struct kv_ops *ops;
	struct kv_limits limits; /* set by the backend's open; kv.c may lower */
	bool read_only;
	bool strict; /* kv.c: kv_options.strict */
	/* kv.c: kv_options.family, and the calls counted (relaxed atomics) */
	int (*family)(const char *key, size_t klen);
	struct kv_counts counts;
	struct kv_quiet_revs *quiet; /* kv.c: the quiet commits (kv_quiet) */
	/* kv.c: this open's commits begun and ended (seq-cst atomics), so a
	 * pin knows whether one overlapped its reads */
	uint64_t commits_begun, commits_ended;
};

/* The head of every backend's iterator. */
struct kv_iter {
	const struct kv_ops *ops;
	struct kv *kv;	/* set by kv.c: whose counts its seeks and nexts bump */
	bool keys_only; /* set by kv.c: kv_iter_value() gives "" */
};

/* A condition of a batch (kv_batch_expect): a malloc'd copy of the key, and
 * the version it must still have. */
struct kv_cond {
	char *key;
	size_t klen;
	uint64_t ver;
};

/* The head of every backend's batch: kv.c keeps these counts. */
struct kv_batch {
	struct kv *kv;
	size_t ops;	  /* operations added */
	size_t actions;	  /* of a commit, counted exactly (kv_batch_room) */
	size_t bytes;	  /* keys and values added (see kv_batch_bytes) */
	size_t put_bytes; /* keys and values put */
	size_t deletes;	  /* point and range deletes */
	size_t value_max; /* the largest value put */
	/* strict: keys its range deletes covered when added */
	size_t range_keys;
	/* kv_batch_expect's conditions, kept by kv.c for the backend's
	 * commit */
	struct kv_cond *conds;
	size_t nconds, capconds;
};

/* kv_range_keys() from the limits @l, for a backend, which calls nothing
 * of kv.c: the dispatch calls the backends, never the other way round. */
static inline size_t kv_limits_range_keys(const struct kv_limits *l)
{
	if (l->range_keys)
		return l->range_keys;
	return l->batch_ops == SIZE_MAX ? SIZE_MAX
					: l->batch_ops * KV_RANGE_SLICE_OPS;
}

/* The backends' opens: as kv_open() for their kind of location. */
int kv_rocksdb_open(struct kv **out, const char *dir,
		    const struct kv_options *opt);
int kv_rocksdb_damage(const char *dir, char *buf, size_t size);
int kv_etcd_open(struct kv **out, const char *url,
		 const struct kv_options *opt);
int kv_rocksdb_room(const char *dir, uint64_t *avail, uint64_t *need);
int kv_rocksdb_missing(const char *dir, char *what, size_t size);
int kv_etcd_holder(const char *url, char *buf, size_t size);
int kv_etcd_identity(const char *url, char **out);
int kv_ddb_open(struct kv **out, const char *url, const struct kv_options *opt);
int kv_ddb_holder(const char *url, char *buf, size_t size);
int kv_ddb_identity(const char *url, char **out);

#endif
