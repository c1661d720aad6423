/*
 * kv_rocksdb.c - the kv backend on an embedded RocksDB database (see kv_i.h,
 * kv_backend_i.h): the only file in the project that includes rocksdb/c.h.
 * It sets no batch limits of its own (kv.c enforces etcd's in strict mode).
 *
 * Two families (column families, see kv_i.h), because a drive's keys have two
 * access patterns: the tree (nodes, META, xattrs, inodes, orphans, journal:
 * values of ~40-100 bytes read in long prefix scans and point lookups that
 * often miss) and content (64 KiB blocks read and written by inode and block
 * number). In one family every SST mixed both, so every node lookup went
 * through tables whose index had one entry per 64 KiB block (~60 bytes each:
 * ~1 MB of index per GiB of content; issue 11 measured a 2.5 MB index block
 * after a 2.5 GiB file, re-read and LZ4-decompressed on every kvr_get, 86-88%
 * of the daemon's CPU, metadata 10-20x slower). Apart, the tree's tables hold
 * nodes only, whatever the content. The rest of the tree's kinds (xattrs,
 * inodes, orphans, journal) are few and small next to the nodes and are read
 * with them, so they earn no family of their own. A batch spans families
 * and commits atomically (one WAL record), so journal, cascade and orphan
 * invariants hold as with one family.
 *
 * Options common to both, chosen for a path-keyed filesystem:
 *  - block-based tables (format 5) with a full bloom filter, 10 bits/key
 *    (~1% false positives): a lookup of a missing path (negative dentry,
 *    O_CREAT, `git status`) answers from the filter without a disk read. No
 *    prefix extractor: our prefixes have no fixed length, and
 *    iterate_upper_bound bounds every scan instead;
 *  - 32 MiB memtables per family (up to 3; smaller on small disks, see
 *    below), two background jobs (the machines have two cores), dynamic
 *    level sizes, 1 MiB bytes_per_sync so flushes don't stall;
 *  - a whole-key bloom filter on the memtable (lookups that miss it skip the
 *    skiplist), RocksDB's per-thread perf counters off (kvr_thread_init);
 *  - the WAL is always on; commits sync it only when asked (fsync, -o sync),
 *    and kvr_sync() skips the sync when no unsynced commit came since the
 *    last one.
 *
 * The write path keeps RocksDB's defaults (no enable_pipelined_write, no
 * unordered_write, no manual WAL flush), by measurement: creating the 100k
 * tree through the mount, commits are 15% of the daemon's CPU (WAL append 7%,
 * memtable insert 5%) and point gets 6%, against ~65% in the kernel's FUSE
 * transport (BENCHMARKS.md, issue 14). The daemon serves such a workload
 * with one thread (fs/loop.c), so there is never a second writer to group a
 * WAL write with or to pipeline behind; unordered_write would give up the
 * order of two batches' visibility; a manual WAL flush would leave a
 * commit answered to the kernel in process memory, lost with the daemon.
 *
 * The tree family (RocksDB's default column family):
 *  - 4 KiB data blocks (KV_TREE_BLOCK; were 16 KiB): ~40-60 nodes a block, so
 *    a point lookup reads and decompresses a quarter of what it did, while a
 *    readdir of 1,000 names still reads only ~20 contiguous blocks;
 *  - a partitioned (two-level) index and partitioned filters, 4 KiB
 *    partitions, the top level pinned in the cache: at 4 KiB blocks an index
 *    has ~4x the entries, and a flat index of a large table is one block
 *    that must be read whole on a miss; partitions are read one at a time,
 *    and the pinned top level (one entry per partition, ~0.1% of the data)
 *    never leaves memory;
 *  - index and filter blocks cached with high priority (and L0's pinned):
 *    they are what every lookup touches first, so a scan of cold data does
 *    not push them out;
 *  - 3/4 of the block cache budget (48 of 64 MiB by default), its own LRU;
 *  - LZ4 on all levels but the last, ZSTD on the last: paths share long
 *    prefixes and compress well; LZ4 is cheap enough for the write path.
 *
 * The content family:
 *  - 64 KiB blocks, i.e. one value per block (a data block holds at least one
 *    value): its index has one entry per file block either way;
 *  - 1/4 of the block cache budget (16 of 64 MiB), its own LRU: a 1 GiB
 *    sequential read cycles through it without evicting a single node (in one
 *    shared cache it evicted all 64 MiB); the kernel's page cache keeps the
 *    table files too;
 *  - no compression above the last level, LZ4 on the last: content is often
 *    incompressible (media, archives, random data), where every flush and
 *    compaction tried LZ4 for nothing (LZ4 was 15% of the daemon's CPU in
 *    issue 11's sqlite run, where it compressed 64 KiB blocks just written);
 *    data that settles on the last level (~90% of it) is still compressed
 *    once, and RocksDB keeps a block uncompressed when that saves < 1/8;
 *  - optimize_filters_for_hits: reads of content almost always find their
 *    block (a miss is a hole), so the last level has no filter (1.25 bytes
 *    a block saved).
 *
 * Patches (kv_batch_patch, a RocksDB merge operator, "pathfs.patch.1"): a
 * partial write of a content block is a merge operand holding only the
 * written bytes and their offset, folded into the block by reads and by
 * compaction, so a 4 KiB write into a 64 KiB block writes ~4 KiB to the WAL
 * and the memtable and reads nothing (a 4 KiB pwrite into a 256 MiB file
 * through the mount, median: 460 us with the read-modify-write, 76 us with
 * patches; BENCHMARKS.md). Chosen over smaller content blocks, measured side by side
 * (4 KiB pwrites into a 256 MiB file, BENCHMARKS.md): 4 KiB blocks write
 * as fast, but multiply the content keys (and their index) by 16 and the
 * per-key cost of every sequential write and read, and still read-modify-
 * write any write smaller than a block. The operator also does the partial
 * merge (a flush or compaction of patches with no block under them folds
 * them into one list of disjoint byte runs, never longer than the bytes
 * they cover). max_successive_merges stays 0 (a key's patches pile up in
 * the memtable until its flush folds them): measured in-process, gets of a
 * block after 2,000 patches in the memtable cost 12 us of CPU unbounded
 * against 7 us with a bound of 16, and after 6,000 (flushed meanwhile) 5.3
 * against 4.8 us, while the bound's check on every patch
 * (CountSuccessiveMergeEntries) was 5% of the daemon's CPU in the pwrite
 * loop.
 *
 * Content blocks stay in the LSM tree, not in BlobDB blob files: measured
 * through the mount (1 GiB write + fsync, cold read), blob files cut the
 * daemon's CPU by ~20% on compressible content only with LZ4 on the blobs,
 * and then cost ~10% more CPU and ~25% slower cold reads on incompressible
 * content; without compression they write compressible content out in full.
 * Their space comes back only when a whole blob file is garbage (or GC moves
 * what lives), which the space reserve below would have to account for.
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
 * Upgrade: a format-1 store kept every key in the default column family;
 * kvr_upgrade() moves the content keys to their family in atomic batches
 * (see kv_i.h), and kvr_open's single_family mode reads such a store as it is.
 *
 * Limits: a family is chosen per key by the classifier, so an iterator sees
 * one family (a range spanning two must be read as two); no transactions
 * beyond atomic batches.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include <rocksdb/c.h>

#include "kv_backend_i.h"
#include "log.h"

#define KV_RANGES_MAX	       8	  /* delete-ranges a batch remembers */
#define KV_SPACE_TTL_NS	       50000000ll /* re-read free space every 50 ms */
#define KV_TREE_BLOCK	       4096 /* data block size of the tree family */
#define KV_CONTENT_COMPRESSION rocksdb_no_compression /* above the last level */

/* One family: a RocksDB column family and the options it was opened with. */
struct kv_fam {
	rocksdb_options_t *opts;
	rocksdb_block_based_table_options_t *topts;
	rocksdb_cache_t *cache;
	rocksdb_column_family_handle_t *h; /* single_family: all share one */
};

/* RocksDB's name for each family; the tree keeps the default column family,
 * where a format-1 store holds every key. */
static const char *const kvr_fam_names[KV_FAMILIES] = {"default", "content"};

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
};

struct kvr_iter {
	struct kv_iter base;
	rocksdb_iterator_t *it;
	rocksdb_readoptions_t *ropts;
	char *lo, *hi;
	size_t lolen, hilen;
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

static const struct kv_ops kvr_ops;
static void kvr_close(struct kv *kv_);
static int kvr_compact_range(struct kv *kv_, const char *lo, size_t lolen,
			     const char *hi, size_t hilen);

/* ---- patches: the merge operator ------------------------------------------
 *
 * An operand is a list of records [u32 LE offset][u32 LE length][bytes]. A
 * value folds the records in order: each writes its bytes at its offset,
 * the value growing to the record's end with zeros before the offset if it
 * was shorter (as a write past a file's end). The partial merge (of
 * operands with no value under them yet) folds a run of operands into one
 * list of disjoint records, so a chain of patches never holds more than the
 * patched span. A record that does not decode (or reaches past
 * KV_PATCH_SPAN) is skipped, not failed: a failed merge would stop
 * compaction and turn the whole store read-only over one bad operand.
 */
#define KV_PATCH_SPAN (16u << 20) /* no patched value is longer */

struct kv_patch_rec {
	uint32_t off, len;
	const char *p;
};

static uint32_t kv_get32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;

	return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 |
	       (uint32_t)u[3] << 24;
}

static void kv_put32(char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (char)(v >> (8 * i));
}

/* The record at *pos of operand @op (@n bytes); false at its end. */
static bool kv_patch_next(const char *op, size_t n, size_t *pos,
			  struct kv_patch_rec *r)
{
	while (n - *pos >= 8) {
		r->off = kv_get32(op + *pos);
		r->len = kv_get32(op + *pos + 4);
		r->p = op + *pos + 8;
		if (r->len > n - *pos - 8)
			break; /* cut short: nothing more decodes */
		*pos += 8 + r->len;
		if (r->off <= KV_PATCH_SPAN && r->len <= KV_PATCH_SPAN - r->off)
			return true;
	}
	*pos = n;
	return false;
}

/* Length of @base (@blen) after the records of @ops. */
static size_t kv_patch_len(size_t blen, const char *const *ops,
			   const size_t *lens, int nops)
{
	size_t end = blen;

	for (int i = 0; i < nops; i++) {
		struct kv_patch_rec r;
		size_t pos = 0;

		while (kv_patch_next(ops[i], lens[i], &pos, &r))
			if ((size_t)r.off + r.len > end)
				end = (size_t)r.off + r.len;
	}
	return end;
}

/* Folds the records of @ops into @out (@end bytes, *have of them valid,
 * the rest to be zeroed when reached); marks written bytes in @mask if not
 * NULL. */
static void kv_patch_fold(char *out, size_t *have, unsigned char *mask,
			  const char *const *ops, const size_t *lens, int nops)
{
	for (int i = 0; i < nops; i++) {
		struct kv_patch_rec r;
		size_t pos = 0;

		while (kv_patch_next(ops[i], lens[i], &pos, &r)) {
			if (r.off > *have)
				memset(out + *have, 0, r.off - *have);
			memcpy(out + r.off, r.p, r.len);
			if (mask)
				memset(mask + r.off, 1, r.len);
			if ((size_t)r.off + r.len > *have)
				*have = (size_t)r.off + r.len;
		}
	}
}

static char *kv_patch_full(void *state, const char *key, size_t klen,
			   const char *base, size_t blen,
			   const char *const *ops, const size_t *lens, int nops,
			   unsigned char *success, size_t *outlen)
{
	size_t end = kv_patch_len(base ? blen : 0, ops, lens, nops), have;
	char *out = malloc(end ? end : 1);

	(void)state;
	(void)key;
	(void)klen;
	*success = out != NULL;
	*outlen = 0;
	if (!out)
		return NULL;
	have = base ? blen : 0;
	if (have)
		memcpy(out, base, have);
	kv_patch_fold(out, &have, NULL, ops, lens, nops);
	if (have < end) /* cannot be: every record was counted */
		memset(out + have, 0, end - have);
	*outlen = end;
	return out;
}

static char *kv_patch_partial(void *state, const char *key, size_t klen,
			      const char *const *ops, const size_t *lens,
			      int nops, unsigned char *success, size_t *outlen)
{
	size_t end = kv_patch_len(0, ops, lens, nops), have = 0, n = 0;
	char *buf = malloc(end ? end : 1), *out = NULL;
	unsigned char *mask = calloc(end ? end : 1, 1);
	size_t cap = 0;

	(void)state;
	(void)key;
	(void)klen;
	*success = 0;
	*outlen = 0;
	if (!buf || !mask)
		goto out;
	kv_patch_fold(buf, &have, mask, ops, lens, nops);
	/* the written runs, in order, and a record of length 0 at the end
	 * if no run reaches it (a record that grew the value without data) */
	for (size_t i = 0; i < end; i++)
		if (mask[i] && (i == 0 || !mask[i - 1]))
			cap += 8;
	cap += end + 8;
	out = malloc(cap);
	if (!out)
		goto out;
	for (size_t i = 0; i < end;) {
		size_t j = i;

		if (!mask[i]) {
			i++;
			continue;
		}
		while (j < end && mask[j])
			j++;
		kv_put32(out + n, (uint32_t)i);
		kv_put32(out + n + 4, (uint32_t)(j - i));
		memcpy(out + n + 8, buf + i, j - i);
		n += 8 + (j - i);
		i = j;
	}
	if (end && !mask[end - 1]) {
		kv_put32(out + n, (uint32_t)end);
		kv_put32(out + n + 4, 0);
		n += 8;
	}
	*success = 1;
	*outlen = n;
out:
	free(buf);
	free(mask);
	return out;
}

static void kv_patch_free(void *state, const char *value, size_t len)
{
	(void)state;
	(void)len;
	free((char *)value);
}

static const char *kv_patch_name(void *state)
{
	(void)state;
	return "pathfs.patch.1";
}

static void kv_patch_destroy(void *state)
{
	(void)state;
}

/* Maps a RocksDB error string to an errno, logs it with @what, frees it. */
static int kvr_error(char *err, const char *what)
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

static void kvr_thread_init(void)
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
static int kvr_key_fam(const struct kvr *kv, const char *key, size_t klen)
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

/*
 * Table options of family @f: see the overview for the numbers behind them.
 * @cache_bytes is the whole budget of block caches.
 */
static void kvr_fam_tune(struct kv_fam *fam, int f, size_t cache_bytes)
{
	rocksdb_block_based_table_options_t *t;
	int levels[7];

	fam->topts = t = rocksdb_block_based_options_create();
	rocksdb_block_based_options_set_format_version(t, 5);
	if (f == KV_TREE) {
		fam->cache = rocksdb_cache_create_lru(cache_bytes / 4 * 3);
		rocksdb_block_based_options_set_block_size(t, KV_TREE_BLOCK);
		rocksdb_block_based_options_set_filter_policy(
		    t, rocksdb_filterpolicy_create_bloom_full(10));
		rocksdb_block_based_options_set_index_type(
		    t,
		    rocksdb_block_based_table_index_type_two_level_index_search);
		rocksdb_block_based_options_set_partition_filters(t, 1);
		rocksdb_block_based_options_set_metadata_block_size(t, 4096);
		rocksdb_block_based_options_set_cache_index_and_filter_blocks(
		    t, 1);
		rocksdb_block_based_options_set_cache_index_and_filter_blocks_with_high_priority(
		    t, 1);
		rocksdb_block_based_options_set_pin_top_level_index_and_filter(
		    t, 1);
		rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(
		    t, 1);
	} else {
		fam->cache = rocksdb_cache_create_lru(cache_bytes / 4);
		rocksdb_block_based_options_set_block_size(t, 64 << 10);
		/* a filter only pays for reads of holes; a full bloom is
		 * 1.25 bytes a 64 KiB block, and skipped on the last level */
		rocksdb_block_based_options_set_filter_policy(
		    t, rocksdb_filterpolicy_create_bloom_full(10));
		rocksdb_block_based_options_set_cache_index_and_filter_blocks(
		    t, 1);
		rocksdb_block_based_options_set_cache_index_and_filter_blocks_with_high_priority(
		    t, 1);
		rocksdb_block_based_options_set_pin_l0_filter_and_index_blocks_in_cache(
		    t, 1);
		rocksdb_options_set_optimize_filters_for_hits(fam->opts, 1);
	}
	rocksdb_block_based_options_set_block_cache(t, fam->cache);
	rocksdb_options_set_block_based_table_factory(fam->opts, t);
	for (int i = 0; i < 7; i++)
		levels[i] = f == KV_TREE ? rocksdb_lz4_compression
					 : KV_CONTENT_COMPRESSION;
	levels[6] =
	    f == KV_TREE ? rocksdb_zstd_compression : rocksdb_lz4_compression;
	rocksdb_options_set_compression_per_level(fam->opts, levels, 7);
}

/* 1 if the database in @dir has a column family we do not open in
 * single-family mode, 0 if not (or no database yet), -errno. */
static int kvr_has_families(const rocksdb_options_t *o, const char *dir)
{
	char *err = NULL;
	size_t n = 0;
	char **names = rocksdb_list_column_families(o, dir, &n, &err);
	int rc = n > 1;

	if (names) /* also on an error: an empty array */
		rocksdb_list_column_families_destroy(names, n);
	if (err) {
		free(err); /* no database yet: rocksdb_open decides */
		return 0;
	}
	return rc;
}

int kv_rocksdb_open(struct kv **out, const char *dir,
		    const struct kv_options *opt)
{
	const char *names[KV_FAMILIES];
	const rocksdb_options_t *fopts[KV_FAMILIES];
	rocksdb_column_family_handle_t *hs[KV_FAMILIES];
	struct kvr *kv;
	char *err = NULL;
	int rc = 0;
	size_t cache_bytes = (opt->cache_mb ? opt->cache_mb : 64) << 20;

	struct statvfs vfs;
	uint64_t total = UINT64_MAX, wbs = 32 << 20;

	kv = calloc(1, sizeof(*kv));
	if (!kv)
		return -ENOMEM;
	kv->base.ops = &kvr_ops;
	kv->base.limits = (struct kv_limits){SIZE_MAX, SIZE_MAX, SIZE_MAX};
	/*
	 * Size memtables to the disk: flushing one needs its size again on
	 * disk, so a 32 MiB memtable on a 64 MiB file system would wedge it.
	 * The reserve covers every memtable's flush plus an L0 compaction.
	 */
	if (statvfs(dir, &vfs) == 0)
		total = (uint64_t)vfs.f_blocks * vfs.f_frsize;
	if (total / 64 < wbs)
		wbs = total / 64 < (2 << 20) ? (2 << 20) : total / 64;
	kv->reserve = wbs * 8 + (4 << 20);
	/* on a small disk, compacting all the data at once must fit too */
	if (total != UINT64_MAX && kv->reserve < total / 2)
		kv->reserve =
		    total / 2 > (256ull << 20) ? kv->reserve : total / 2;
	kv->dir = strdup(dir);
	kv->base.read_only = opt->read_only;
	kv->sync = opt->sync;
	kv->family = opt->single_family ? NULL : opt->family;
	kv->nfam = opt->single_family ? 1 : KV_FAMILIES;
	pthread_mutex_init(&kv->space_lock, NULL);
	pthread_mutex_init(&kv->compact_lock, NULL);

	kv->opts = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(kv->opts, opt->create);
	rocksdb_options_set_create_missing_column_families(kv->opts, 1);
	rocksdb_options_set_write_buffer_size(kv->opts, wbs);
	rocksdb_options_set_max_write_buffer_number(kv->opts, 3);
	/* a bloom filter over the memtable's whole keys: the lookups that miss
	 * it (a name about to be created, a node already flushed) skip the
	 * skiplist search of long shared-prefix keys; ~2% of its size */
	rocksdb_options_set_memtable_whole_key_filtering(kv->opts, 1);
	rocksdb_options_set_memtable_prefix_bloom_size_ratio(kv->opts, 0.02);
	/* WAL preallocation is min(1.1 x memtable, max_total_wal_size) and
	 * really takes space on tmpfs: keep both modest */
	rocksdb_options_set_manifest_preallocation_size(kv->opts, 64 << 10);
	rocksdb_options_set_max_background_jobs(kv->opts, 2);
	rocksdb_options_set_level_compaction_dynamic_level_bytes(kv->opts, 1);
	rocksdb_options_set_bytes_per_sync(kv->opts, 1 << 20);
	rocksdb_options_set_max_total_wal_size(kv->opts, 4 * wbs);
	rocksdb_options_set_keep_log_file_num(kv->opts, 3);
	rocksdb_options_set_max_log_file_size(kv->opts, 4 << 20);
	rocksdb_options_set_info_log_level(kv->opts, 2 /* WARN */);
	/* every family folds patches (only content is patched); the options
	 * own the operator, their copies share it */
	rocksdb_options_set_merge_operator(
	    kv->opts, rocksdb_mergeoperator_create(
			  NULL, kv_patch_destroy, kv_patch_full,
			  kv_patch_partial, kv_patch_free, kv_patch_name));

	for (int f = 0; f < KV_FAMILIES; f++) {
		kv->fam[f].opts = rocksdb_options_create_copy(kv->opts);
		kvr_fam_tune(&kv->fam[f], f, cache_bytes);
		names[f] = kvr_fam_names[f];
		fopts[f] = kv->fam[f].opts;
	}
	if (opt->single_family) {
		rc = kvr_has_families(kv->opts, dir);
		if (rc) {
			if (rc > 0) {
				plog(LOG_ERR,
				     "%s: the database has column families "
				     "(an upgrade was interrupted)",
				     dir);
				rc = -EUCLEAN;
			}
			goto out;
		}
	}
	if (opt->read_only)
		kv->db = rocksdb_open_for_read_only_column_families(
		    kv->opts, dir, kv->nfam, names, fopts, hs, 0, &err);
	else
		kv->db = rocksdb_open_column_families(kv->opts, dir, kv->nfam,
						      names, fopts, hs, &err);
	if (err) {
		rc = kvr_error(err, dir);
		goto out;
	}
	for (int f = 0; f < KV_FAMILIES; f++)
		kv->fam[f].h = hs[f < kv->nfam ? f : KV_TREE];

	kv->ropts = rocksdb_readoptions_create();
	kv->wopts = rocksdb_writeoptions_create();
	kv->wopts_sync = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(kv->wopts_sync, 1);
out:
	if (rc) {
		kvr_close(&kv->base);
		return rc;
	}
	*out = &kv->base;
	return 0;
}

static void kvr_close(struct kv *kv_)
{
	struct kvr *kv = (struct kvr *)kv_;
	if (!kv)
		return;
	if (kv->db && !kv->base.read_only) {
		char *err = NULL;
		rocksdb_flush_wal(kv->db, 1, &err);
		if (err)
			kvr_error(err, "flush wal at close");
	}
	for (int f = 0; f < kv->nfam; f++)
		if (kv->fam[f].h)
			rocksdb_column_family_handle_destroy(kv->fam[f].h);
	if (kv->db)
		rocksdb_close(kv->db);
	if (kv->ropts)
		rocksdb_readoptions_destroy(kv->ropts);
	if (kv->wopts)
		rocksdb_writeoptions_destroy(kv->wopts);
	if (kv->wopts_sync)
		rocksdb_writeoptions_destroy(kv->wopts_sync);
	for (int f = 0; f < KV_FAMILIES; f++) {
		if (kv->fam[f].opts)
			rocksdb_options_destroy(kv->fam[f].opts);
		if (kv->fam[f].topts)
			rocksdb_block_based_options_destroy(kv->fam[f].topts);
		if (kv->fam[f].cache)
			rocksdb_cache_destroy(kv->fam[f].cache);
	}
	if (kv->opts)
		rocksdb_options_destroy(kv->opts);
	pthread_mutex_destroy(&kv->space_lock);
	pthread_mutex_destroy(&kv->compact_lock);
	free(kv->dir);
	free(kv);
}

static int kvr_get(struct kv *kv_, const char *key, size_t klen, char **val,
		   size_t *vlen)
{
	struct kvr *kv = (struct kvr *)kv_;
	rocksdb_pinnableslice_t *ps;
	char *err = NULL;
	const char *v;
	char *copy;
	size_t n = 0;
	int rc = 0;

	kvr_thread_init();
	/* pinned: a value in the block cache is copied once, here, not first
	 * into RocksDB's own malloc'd buffer */
	ps = rocksdb_get_pinned_cf(kv->db, kv->ropts,
				   kv->fam[kvr_key_fam(kv, key, klen)].h, key,
				   klen, &err);
	if (err)
		return kvr_error(err, "get");
	if (!ps)
		return -ENOENT;
	v = rocksdb_pinnableslice_value(ps, &n);
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

static int kvr_iter_open(struct kv_iter **out, struct kv *kv_, const char *lo,
			 size_t lolen, const char *hi, size_t hilen)
{
	struct kvr *kv = (struct kvr *)kv_;
	struct kvr_iter *it = calloc(1, sizeof(*it));
	int f = kvr_range_fam(kv, lo, lolen, hi, hilen);

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

static void kvr_batch_patch(struct kv_batch *b_, const char *key, size_t klen,
			    uint32_t off, const char *data, size_t len)
{
	struct kvr_batch *b = (struct kvr_batch *)b_;
	struct kvr *kv = (struct kvr *)b->base.kv;
	char stack[8 + 4096], *op = len <= 4096 ? stack : malloc(8 + len);

	if (!op)
		abort();
	kv_put32(op, off);
	kv_put32(op + 4, (uint32_t)len);
	memcpy(op + 8, data, len);
	rocksdb_writebatch_merge_cf(b->wb,
				    kv->fam[kvr_key_fam(kv, key, klen)].h, key,
				    klen, op, 8 + len);
	if (op != stack)
		free(op);
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

static int kvr_batch_commit(struct kv *kv_, struct kv_batch *b_, bool sync)
{
	struct kvr *kv = (struct kvr *)kv_;
	struct kvr_batch *b = (struct kvr_batch *)b_;
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
	b = (struct kvr_batch *)kv_batch_new(&kv->base);
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
		rc = kvr_batch_commit(&kv->base, &b->base, false);
		if (rc)
			goto out;
		n += pending;
		pending = 0;
		kv_batch_clear(&b->base);
		if (hook)
			hook(ctx, n);
	}
	rocksdb_iter_get_error(it, &err);
	if (err) {
		rc = kvr_error(err, "upgrade: iterate");
		goto out;
	}
	if (pending) {
		rc = kvr_batch_commit(&kv->base, &b->base, false);
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
	kv_batch_free(&b->base);
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

static const struct kv_ops kvr_ops = {
    .name = "rocksdb",
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
};
