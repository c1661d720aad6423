/*
 * kv_rocksdb_i.h - what the four files of the RocksDB backend share:
 *
 *   kv_rocksdb_open.c  the options of both families (why each is chosen),
 *                      opening and closing the database
 *   kv_rocksdb.c       reads, iterators, batches, commits against the space
 *                      reserve, sync, the upgrade of format-1 stores
 *   kv_rocksdb_patch.c patches: kv_batch_patch and the merge operator that
 *                      folds them
 *   kv_rocksdb_wal.c   reads the write-ahead logs on its own to say what a
 *                      damaged one would lose, keeps a copy before a repair
 *
 * They are the only files in the project that include rocksdb/c.h (the
 * WAL reader needs none).
 *
 * Internal to store/kv/ (kv_backend_i.h's kv_rocksdb_open() is the way in).
 */
#ifndef PATHFS_KV_ROCKSDB_I_H
#define PATHFS_KV_ROCKSDB_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rocksdb/c.h>

#include "kv_backend_i.h"
#include "siphash.h"

#define KV_RANGES_MAX 8 /* delete-ranges a batch remembers */

/* One family: a RocksDB column family and the options it was opened with. */
struct kv_fam {
	rocksdb_options_t *opts;
	rocksdb_block_based_table_options_t *topts;
	rocksdb_cache_t *cache;
	rocksdb_column_family_handle_t *h; /* single_family: all share one */
};

struct kvr {
	struct kv base; /* first: a struct kv * is a struct kvr * */
	rocksdb_t *db;
	rocksdb_options_t *opts; /* the database's own options */
	struct kv_fam fam[KV_FAMILIES];
	int nfam; /* distinct column families open: 1 or 2 */
	int (*family)(const char *key, size_t klen);
	rocksdb_readoptions_t *ropts;
	rocksdb_writeoptions_t *wopts;
	rocksdb_writeoptions_t *wopts_sync;
	char *dir;
	bool sync;
	uint64_t reserve; /* bytes kept free, see kvr_reserve_bytes() */

	/* deletes committed since the last full compaction, and the lock that
	 * lets one writer at a time compact to get their space back */
	atomic_ulong deletes_pending;
	pthread_mutex_t compact_lock;

	/* commits written without a WAL sync, and how many of them the last
	 * kvr_sync() covered: a sync with nothing new to sync is skipped */
	atomic_ulong unsynced;
	atomic_ulong synced;

	pthread_mutex_t space_lock;
	int64_t space_at; /* protected by space_lock: when avail was read */
	uint64_t avail;	  /* protected by space_lock */

	/* conditioned commits (kv_batch_expect): every commit holds it, shared,
	 * one with conditions exclusively while it checks and writes them */
	pthread_rwlock_t commit_lock;
	/* a key's version is its value's hash under this key */
	uint8_t ver_key[SIPHASH_KEY_LEN];
};

struct kvr_batch {
	struct kv_batch base; /* its kv and the counts (kv.c) */
	rocksdb_writebatch_t *wb;
	/* delete-ranges, compacted after commit when space runs short */
	struct {
		char *lo, *hi;
		size_t lolen, hilen;
	} ranges[KV_RANGES_MAX];
	int nranges;
};

/* kv_rocksdb.c: the backend's operations. */
extern const struct kv_ops kvr_ops;
/* Maps a RocksDB error string to an errno, logs it with @what, frees it. */
int kvr_error(char *err, const char *what);
/* Turns the calling thread's RocksDB perf counters off once (see
 * kv_rocksdb.c). */
void kvr_thread_init(void);
/* The family of a key (never KV_ANY: a key that names no kind is the tree's). */
int kvr_key_fam(const struct kvr *kv, const char *key, size_t klen);

/* kv_rocksdb_open.c: closes what kv_rocksdb_open() opened (also a half-open
 * database) and frees @kv_. */
void kvr_close(struct kv *kv_);

/* kv_rocksdb_patch.c: kv_batch_patch() on RocksDB (a merge operand). */
void kvr_batch_patch(struct kv_batch *b_, const char *key, size_t klen,
		     uint32_t off, const char *data, size_t len);
/* kv_rocksdb_patch.c: a new merge operator "pathfs.patch.1" that folds
 * patches; the options it is set on own it. */
rocksdb_mergeoperator_t *kvr_patch_operator(void);

/* kv_rocksdb_wal.c: what the first damaged write-ahead log would lose. */
struct kvr_wal_damage {
	bool damaged;
	uint64_t log;	  /* its number: NNNNNN.log */
	uint64_t offset;  /* of its first damaged record */
	uint64_t size;	  /* of that log */
	char why[48];	  /* "checksum mismatch", ... */
	uint64_t kept;	  /* write batches before the damage in that log */
	uint64_t records; /* readable write batches after it, later logs too */
	uint64_t writes;  /* the writes (puts, deletes...) in them */
	uint64_t later_logs; /* logs after the damaged one (dropped whole) */
};
/*
 * Reads every write-ahead log of @dir (see kv_rocksdb_wal.c) for damage
 * before its end. Returns 1 (damage: *d says where and what follows), 0 (none:
 * at most a torn tail), or -errno of reading a log.
 */
int kvr_wal_check(const char *dir, struct kvr_wal_damage *d);
/* The sentence for damage @d: which log, where, what would be dropped. */
void kvr_wal_describe(const struct kvr_wal_damage *d, char *buf, size_t size);
/*
 * Copies the damaged log of @d and every later one into @dir/lost+found/
 * (made 0700), named NNNNNN.log.<UTC time>, synced, before a repair drops
 * them; @where gets the folder's path. Errors: -errno (nothing to repair
 * then: the caller stops).
 */
int kvr_wal_keep(const char *dir, const struct kvr_wal_damage *d, char *where,
		 size_t size);

#endif
