/*
 * kv_ddb_i.h - what the files of the DynamoDB kv backend share: the store
 * handle, its iterators and batches, the layout of keys in the table, and
 * the calls one file makes of another. kv_ddb.c's overview says what the
 * backend does and which file does what.
 *
 * Internal to the kv_ddb*.c files.
 */
#ifndef PATHFS_KV_DDB_I_H
#define PATHFS_KV_DDB_I_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ddb_i.h"
#include "kv_backend_i.h"
#include "kv_keeper_i.h"

#define KVD_TTL	       10   /* the writer's lease, seconds (?lease-ttl=N) */
#define KVD_TXN_ITEMS  100  /* DynamoDB's actions per TransactWriteItems */
#define KVD_SK_MAX     1024 /* bytes of a sort key */
#define KVD_ITEM_BYTES (400u * 1000) /* one item, names and values */

/* The partition of store keys that name no drive, and the backend's own */
#define KVD_OTHER_PK  "#other"
#define KVD_META_PK   "#meta"	/* the lease, the shared writers' items */
#define KVD_LEASE_SK  "lease"	/* the sole writer's lease */
#define KVD_WRITER_SK "writer#" /* and 16 hex digits: a shared writer */
#define KVD_DRIVES_PK "#drives" /* sk: a drive id that has keys */

struct kvd {
	struct kv base;
	struct ddb *d;
	char *table;
	uint64_t client; /* this open's id: lease owner, txn tokens, versions */
	pthread_mutex_t lock;
	uint64_t seq; /* protected by lock: transactions, versions */
	/* the drives known to have a partition (KVD_DRIVES_PK), ids sorted in
	 * key order (kvd_drive_cmp); protected by lock */
	char **drives;
	size_t ndrives, capdrives;
	/* the lease (read-write opens): kv_ddb_lease.c */
	int ttl;	/* seconds */
	char *holder;	/* who holds it: program, pid, host */
	char owner[40]; /* its owner attribute: this open's id */
	bool leased;	/* the lease is this open's (until close or lost) */
	bool fenced;	/* protected by lock: lost the lease */
	struct kv_keeper *keeper;
	/* a shared writer (kv_options.shared): kv_ddb_writer.c */
	bool shared;
	bool writing; /* the writer item is this open's (until close) */
};

/*
 * Where a store key lives: a key DRIVE#<id>|... (id as drive ids are: 1 to
 * 64 of [A-Za-z0-9_.-]) in partition DRIVE#<id>, its sort key the rest
 * ("|..."); any other key in partition KVD_OTHER_PK, its sort key the whole
 * key. plen: the bytes of the key before its sort key (0: other).
 */
struct kvd_where {
	char pk[80];
	size_t plen;
};
void kvd_locate(const char *key, size_t klen, struct kvd_where *w);

/* Byte order of keys (memcmp, then length). */
int kvd_cmp(const char *a, size_t alen, const char *b, size_t blen);

/* The item key {pk, sk} of store key @key; NULL when out of memory. */
struct json_object *kvd_item_key(const char *key, size_t klen);
/*
 * The store key of item key @keys ({pk, sk}, as kvd_item_key makes it):
 * *key malloc'd (NUL-terminated one past *klen; the caller frees).
 * Errors: -ENOENT (an item of the backend's own partitions, which holds no
 * store key), -EINVAL (no such key attributes), -ENOMEM.
 */
int kvd_store_key(struct json_object *keys, char **key, size_t *klen);

enum { KVD_PUT, KVD_DEL, KVD_RANGE };

struct kvd_op {
	int type;
	char *k, *v; /* v: value (put) or range end (delete-range) */
	size_t klen, vlen;
};

struct kvd_batch {
	struct kv_batch base;
	struct kvd_op *ops;
	size_t n, cap;
	bool oom; /* an operation was lost to ENOMEM: commit refuses it */
};

struct kvd_ent {
	char *k, *v; /* the whole store key; v NULL: keys only */
	size_t klen, vlen;
};

/* One paged Query of one partition between two sort keys. */
struct kvd_stream {
	struct kvd_where w;
	char *lo, *hi; /* whole store keys: [lo, hi), hi NULL: the end */
	size_t lolen, hilen;
	struct json_object *next; /* LastEvaluatedKey; NULL: no more */
	bool started;
	struct kvd_ent *ents;
	size_t n, pos;
	int limit;
};

struct kvd_iter {
	struct kv_iter base;
	struct kvd *kv;
	char *lo, *hi; /* the bounds, hi NULL: none */
	size_t lolen, hilen;
	bool keys_only;
	bool whole;		 /* more than one drive's run: other too */
	struct kvd_stream other; /* KVD_OTHER_PK's keys (whole only) */
	struct kvd_stream drv;	 /* the current drive's */
	char **drives;		 /* the drives of the range, in key order */
	size_t ndrives, cur;	 /* cur: drv's */
	struct kvd_stream *at;	 /* whose entry is current; NULL: none */
	int status;
};

extern const struct kv_ops kvd_ops;

/* kv_ddb.c: the drives' registry */
int kvd_drive_cmp(const char *a, const char *b);
int kvd_load_drives(struct kvd *kv);
int kvd_note_drives(struct kvd *kv, const char *const *ids, size_t n);

/* kv_ddb_lease.c: one writer per table */
uint64_t kvd_now_ms(void); /* CLOCK_REALTIME, Unix ms */
/* A request on the backend's own item {KVD_META_PK, @sk} of @table: its
 * key, the expression @expr (@ename: "ConditionExpression", ...; NULL:
 * none) with the names #o, #e, #h, #g its letters @which say. NULL when
 * out of memory. */
struct json_object *kvd_meta_req(const char *table, const char *sk,
				 const char *ename, const char *expr,
				 const char *which);
/* The lease item (consistent read) in *item, NULL if none. Errors: as
 * ddb_call. */
int kvd_lease_read(struct ddb *d, const char *table, struct json_object **item);
/* Sets kv->owner and kv->holder (program, pid, host). Errors: -ENOMEM. */
int kvd_holder_init(struct kvd *kv);
/* Takes the lease if nobody holds it and its g (the shared writers' joins)
 * is still @gen as kvd_writers_gone read it. Errors: -EBUSY, as ddb_call,
 * kv_keeper_start. */
int kvd_lease_take(struct kvd *kv, uint64_t gen);
void kvd_lease_drop(struct kvd *kv);
bool kvd_fenced(struct kvd *kv);
/* kv_ops.sole_writer: this open holds the lease and was not fenced (as far
 * as it knows: a lease it lost unawares is found by its next commit) */
bool kvd_sole_writer(const struct kv *kv);
void kvd_fence(struct kvd *kv, const char *why);
/* Adds to @items the ConditionCheck that this open still holds the lease.
 * Errors: -ENOMEM. */
int kvd_lease_check(struct kvd *kv, struct json_object *items);
int kvd_lease_holder(struct ddb *d, const char *table, char *buf, size_t size);

/* kv_ddb_writer.c: shared writers, each a writer item of its own */
/* Takes this shared open's writer item, unless a sole writer holds the
 * lease. Errors: -EBUSY, as ddb_call, kv_keeper_start. */
int kvd_writer_take(struct kvd *kv);
void kvd_writer_drop(struct kvd *kv);
/* For a sole writer's open: *gen the lease item's g, then -EBUSY if a
 * shared writer lives; the stopped ones' items deleted (fenced). Errors:
 * -EBUSY, -ENOMEM, as ddb_call. */
int kvd_writers_gone(struct kvd *kv, uint64_t *gen);
/* Adds to @items the ConditionCheck that this open's writer item is still
 * its own and live. Errors: -ENOMEM. */
int kvd_writer_check(struct kvd *kv, struct json_object *items);
/* The holders (program, pid, host) of the live writer items of @table,
 * "; " between them, in @buf. Errors: -ENOENT (none), as ddb_call. */
int kvd_writer_holders(struct ddb *d, const char *table, char *buf,
		       size_t size);
/* kv_ops.writer_id, kv_ops.writers */
uint64_t kvd_writer_id(const struct kv *kv);
int kvd_writers(struct kv *kv, uint64_t **ids, size_t *n);

/* kv_ddb_iter.c: reads */
int kvd_get(struct kv *kv, const char *key, size_t klen, long long *rev,
	    char **val, size_t *vlen, uint64_t *ver);
int kvd_iter_open(struct kv_iter **out, struct kv *kv, const char *lo,
		  size_t lolen, const char *hi, size_t hilen, unsigned flags,
		  long long *rev);
void kvd_iter_seek(struct kv_iter *it, const char *key, size_t klen);
bool kvd_iter_valid(struct kv_iter *it);
const char *kvd_iter_key(struct kv_iter *it, size_t *len);
const char *kvd_iter_value(struct kv_iter *it, size_t *len);
void kvd_iter_next(struct kv_iter *it);
int kvd_iter_status(struct kv_iter *it);
void kvd_iter_free(struct kv_iter *it);

/* kv_ddb_batch.c: batches, and their commit as one transaction */
struct kv_batch *kvd_batch_new(struct kv *kv);
void kvd_batch_put(struct kv_batch *b, const char *key, size_t klen,
		   const char *val, size_t vlen);
void kvd_batch_delete(struct kv_batch *b, const char *key, size_t klen);
void kvd_batch_delete_range(struct kv_batch *b, const char *lo, size_t lolen,
			    const char *hi, size_t hilen);
void kvd_batch_clear(struct kv_batch *b);
void kvd_batch_free(struct kv_batch *b);
int kvd_batch_commit(struct kv *kv, struct kv_batch *b, bool sync,
		     long long *rev);

/*
 * kv_ddb_watch.c: a reader of table @table's stream (its overview says
 * how), which calls nothing of the backend's but ddb.c: on a thread of
 * its own, @record(@ctx, rev, keys, image) for each record (keys: its
 * {pk, sk}; image: the item's new image, NULL for a removal; both
 * borrowed), which answers 0 or an error that makes the reader start over,
 * and @reset(@ctx) once it stands (again). kv_ddb.c's watch is built on it.
 * Errors: -ENOMEM, -EAGAIN.
 */
struct kvd_follow;
typedef int (*kvd_record_fn)(void *ctx, long long rev, struct json_object *keys,
			     struct json_object *image);
int kvd_follow_start(struct kvd_follow **out, struct ddb *d, const char *table,
		     kvd_record_fn record, void (*reset)(void *ctx), void *ctx);
void kvd_follow_stop(struct kvd_follow *w);

#endif
