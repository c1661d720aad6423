/*
 * kv_rocksdb_open.c - the options of the RocksDB backend and opening and
 * closing its database (see kv_rocksdb_i.h for the backend's other files).
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
 *    last one;
 *  - WAL recovery mode kTolerateCorruptedTailRecords, not RocksDB's default
 *    kPointInTimeRecovery, which replays up to the first bad record and
 *    drops everything after it without a word: a log cut short at its end
 *    (the torn tail of a kill -9 or power loss) still replays up to the cut,
 *    while damage before the end fails the open (a last record that fails
 *    its checksum with nothing readable after it is a torn tail too, and
 *    replays with point-in-time recovery and a line). kv_rocksdb_wal.c says
 *    which log, where, and what would be lost, and the open is refused
 *    (-EBADMSG) until the user chooses the loss (kv_options.truncate_log:
 *    the logs are copied to lost+found/, the loss logged, and the store
 *    opened with point-in-time recovery);
 *  - a read-write close flushes every memtable (and so retires its log), so
 *    that after a clean close the log is not the only copy of the data
 *    (about 0.1-0.3 s for a full 32 MiB memtable; nothing when none was
 *    written).
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
 * Memtable inserts take no hint per key prefix
 * (memtable_insert_with_hint_prefix_extractor), though a batch that mixes
 * kinds (an unlink: the node, its PARENT record, its folder, the orphan's
 * records) searches the skiplist from the top for each key, ~25% of the
 * daemon's CPU in rm -rf, and hints cut the store's CPU per removed file by
 * ~13% in process (issue 29): in this RocksDB (7.8) the point and
 * range-delete skiplists share the hints (facebook/rocksdb#5118, fixed
 * upstream in 2024 by #12558), and with our range deletes the kv and
 * content suites hit its assertions.
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
 * Content blocks stay in the LSM tree, not in BlobDB blob files: measured
 * through the mount (1 GiB write + fsync, cold read), blob files cut the
 * daemon's CPU by ~20% on compressible content only with LZ4 on the blobs,
 * and then cost ~10% more CPU and ~25% slower cold reads on incompressible
 * content; without compression they write compressible content out in full.
 * Their space comes back only when a whole blob file is garbage (or GC moves
 * what lives), which the space reserve (kv_rocksdb.c) would have to
 * account for.
 *
 * Upgrade: a format-1 store kept every key in the default column family;
 * kvr_upgrade() (kv_rocksdb.c) moves the content keys to their family in
 * atomic batches (see kv_i.h), and kv_rocksdb_open()'s single_family mode
 * reads such a store as it is.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "kv_rocksdb_i.h"
#include "log.h"

#define KV_TREE_BLOCK 4096 /* data block size of the tree family */
/* rocksdb's WALRecoveryMode (c.h takes an int) */
#define KV_WAL_TOLERATE_TAIL   0 /* kTolerateCorruptedTailRecords */
#define KV_WAL_POINT_IN_TIME   2 /* kPointInTimeRecovery */
#define KV_CONTENT_COMPRESSION rocksdb_no_compression /* above the last level */

/* The process whose RocksDB thread pools these are: the first to open. */
static _Atomic pid_t kvr_pool_pid;

/* RocksDB's name for each family; the tree keeps the default column family,
 * where a format-1 store holds every key. */
static const char *const kvr_fam_names[KV_FAMILIES] = {"default", "content"};

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

/*
 * What a read-write open of the database in @dir writes before the store's
 * space reserve (kv_rocksdb.c) guards anything: RocksDB's info LOG (a header
 * of ~25 KiB), a new MANIFEST and OPTIONS file, a new write-ahead log, and
 * the tables recovery flushes from the logs the last run left (at most their
 * size: a table holds each key's last value, compressed, where a log holds
 * every write). KVR_OPEN_ROOM is the rest, with the few KiB of index, filter
 * and properties each flushed table adds.
 */
#define KVR_OPEN_ROOM (2u << 20)
static uint64_t kvr_open_need(const char *dir)
{
	uint64_t need = KVR_OPEN_ROOM;
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;

	while (d && (e = readdir(d))) {
		size_t n = strlen(e->d_name);

		if (n > 4 && !strcmp(e->d_name + n - 4, ".log") &&
		    fstatat(dirfd(d), e->d_name, &st, 0) == 0 &&
		    S_ISREG(st.st_mode))
			need += (uint64_t)st.st_size;
	}
	if (d)
		closedir(d);
	return need;
}

/*
 * Whether the file system of @dir has the room kvr_open_need() counts for a
 * read-write open: RocksDB 7.8 (as Debian builds it, assertions on) does not
 * fail an open that meets a full disk, it aborts the process (its info log's
 * writer asserts sync_without_flush_called_ at the write after a failed one),
 * so kv_rocksdb_open() asks first. A read-only open writes nothing (not even
 * the info log) and needs no room. Errors: -ENOSPC (*avail < *need).
 */
int kv_rocksdb_room(const char *dir, uint64_t *avail, uint64_t *need)
{
	struct statvfs vfs;

	*avail = UINT64_MAX;
	*need = 0;
	if (statvfs(dir, &vfs) < 0)
		return 0; /* no answer: RocksDB's open tells */
	*avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	*need = kvr_open_need(dir);
	return *avail < *need ? -ENOSPC : 0;
}

/*
 * Before a read-write open that drops a damaged log's rest (truncate_log):
 * keeps a copy of the logs and logs what will be dropped. *d: the damage
 * found (d->damaged false: none, nothing to do). Errors: -errno of reading
 * or copying the logs (then nothing is repaired).
 */
static int kvr_truncate_prepare(const char *dir, struct kvr_wal_damage *d)
{
	char what[512], lost[4200];
	int rc = kvr_wal_check(dir, d);

	if (rc < 0) {
		plog(LOG_ERR, "%s: cannot read the write-ahead logs: %s", dir,
		     strerror(-rc));
		return rc;
	}
	if (!rc)
		return 0;
	kvr_wal_describe(d, what, sizeof(what));
	rc = kvr_wal_keep(dir, d, lost, sizeof(lost));
	if (rc) {
		plog(LOG_ERR,
		     "%s: %s; cannot keep a copy in %s (%s): nothing repaired",
		     dir, what, lost, strerror(-rc));
		return rc;
	}
	plog(LOG_WARNING,
	     "%s: recovering as asked (truncate-log): %s; a copy of the "
	     "logs is in %s",
	     dir, what, lost);
	return 0;
}

/*
 * The open failed with @err: a damaged write-ahead log is refused with
 * -EBADMSG (kv_damage says what a repair would drop); anything else is
 * kvr_error's. Frees @err.
 */
static int kvr_open_error(char *err, const char *dir)
{
	struct kvr_wal_damage d;
	char what[512];

	if (!strstr(err, "Corruption") || kvr_wal_check(dir, &d) != 1)
		return kvr_error(err, dir);
	/* the caller says it in one line (store_damage): this is for -d */
	kvr_wal_describe(&d, what, sizeof(what));
	plog(LOG_DEBUG, "%s: %s; not opened (rocksdb: %s)", dir, what, err);
	free(err);
	return -EBADMSG;
}

/*
 * true if the open's error @err is a log whose only damage is at its end:
 * its last records fail their checksums, nothing readable follows (the
 * garbage a power loss can leave where a write was cut short, beyond the
 * torn tail RocksDB's mode tolerates by itself). Point-in-time recovery
 * then loses nothing that reads: the caller opens so, and a line says it.
 */
static bool kvr_torn_tail(const char *err, const char *dir)
{
	struct kvr_wal_damage d;

	if (!strstr(err, "Corruption") || kvr_wal_check(dir, &d) != 1 ||
	    d.records || d.later_logs)
		return false;
	plog(LOG_NOTICE,
	     "%s: replaying %06" PRIu64 ".log up to offset %" PRIu64
	     ", where its last record was cut short (%s; nothing after it "
	     "reads): a crash during a write",
	     dir, d.log, d.offset, d.why);
	return true;
}

/* rocksdb_open_*: the database of @kv, read-only or not, as kv->opts say */
static void kvr_db_open(struct kvr *kv, const char *dir, const char **names,
			const rocksdb_options_t **fopts,
			rocksdb_column_family_handle_t **hs, char **err)
{
	if (kv->base.read_only)
		kv->db = rocksdb_open_for_read_only_column_families(
		    kv->opts, dir, kv->nfam, names, fopts, hs, 0, err);
	else
		kv->db = rocksdb_open_column_families(kv->opts, dir, kv->nfam,
						      names, fopts, hs, err);
}

/* Whether @name is one of the files a RocksDB database holds once made
 * (not CURRENT, which says which MANIFEST is the live one). */
static bool kvr_db_file(const char *name)
{
	size_t n = strlen(name);

	return !strncmp(name, "MANIFEST-", 9) ||
	       !strncmp(name, "OPTIONS-", 8) || !strcmp(name, "IDENTITY") ||
	       (n > 4 && !strcmp(name + n - 4, ".sst")) ||
	       (n > 4 && !strcmp(name + n - 4, ".log") &&
		strspn(name, "0123456789") == n - 4);
}

/*
 * Whether the database in @dir lost a file RocksDB opens it by: CURRENT
 * names the MANIFEST that lists every table and log. Without either,
 * RocksDB sees no database at all ("does not exist"), and an open that may
 * create one makes a new empty database over the old tables, deleting them
 * as obsolete. A directory with none of a database's files has none yet.
 * Returns -EUCLEAN with the missing file's name in @what, or 0.
 */
int kv_rocksdb_missing(const char *dir, char *what, size_t size)
{
	char path[4200], manifest[64] = "";
	bool made = false;
	struct dirent *e;
	ssize_t n = -1;
	DIR *d;
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/CURRENT", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, manifest, sizeof(manifest) - 1);
		close(fd);
	}
	if (n > 0) {
		manifest[n] = '\0';
		manifest[strcspn(manifest, "\n")] = '\0';
		snprintf(path, sizeof(path), "%s/%s", dir, manifest);
		if (!strncmp(manifest, "MANIFEST-", 9) && access(path, F_OK) &&
		    errno == ENOENT) {
			snprintf(what, size, "%s", manifest);
			rc = -EUCLEAN;
		}
		return rc;
	}
	if (fd >= 0)
		return 0; /* an empty CURRENT: RocksDB's open tells */
	d = opendir(dir);
	while (d && !made && (e = readdir(d)))
		made = kvr_db_file(e->d_name);
	if (d)
		closedir(d);
	if (made) {
		snprintf(what, size, "CURRENT");
		rc = -EUCLEAN;
	}
	return rc;
}

int kv_rocksdb_open(struct kv **out, const char *dir,
		    const struct kv_options *opt)
{
	struct kvr_wal_damage dmg = {0};
	const char *names[KV_FAMILIES];
	const rocksdb_options_t *fopts[KV_FAMILIES];
	rocksdb_column_family_handle_t *hs[KV_FAMILIES];
	struct kvr *kv;
	char *err = NULL;
	int rc = 0;
	size_t cache_bytes = (opt->cache_mb ? opt->cache_mb : 64) << 20;

	struct statvfs vfs;
	uint64_t total = UINT64_MAX, wbs = 32 << 20;
	pid_t none = 0;

	atomic_compare_exchange_strong(&kvr_pool_pid, &none, getpid());
	kv = calloc(1, sizeof(*kv));
	if (!kv)
		return -ENOMEM;
	kv->base.ops = &kvr_ops;
	kv->base.limits = (struct kv_limits){.batch_ops = SIZE_MAX,
					     .batch_bytes = SIZE_MAX,
					     .value_bytes = SIZE_MAX,
					     .batch_actions = SIZE_MAX};
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
	pthread_rwlock_init(&kv->commit_lock, NULL);
	/* versions are of this open only: any key will do, an unguessable
	 * one keeps crafted values from colliding */
	if (getrandom(kv->ver_key, sizeof(kv->ver_key), 0) !=
	    (ssize_t)sizeof(kv->ver_key))
		clock_gettime(CLOCK_REALTIME, (struct timespec *)kv->ver_key);

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
	rocksdb_options_set_wal_recovery_mode(
	    kv->opts,
	    opt->truncate_log ? KV_WAL_POINT_IN_TIME : KV_WAL_TOLERATE_TAIL);
	/* every family folds patches (only content is patched); the options
	 * own the operator, their copies share it */
	rocksdb_options_set_merge_operator(kv->opts, kvr_patch_operator());

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
	{
		char what[64];

		/* the caller words it (store_missing) */
		rc = kv_rocksdb_missing(dir, what, sizeof(what));
		if (rc)
			goto out;
	}
	if (!opt->read_only) {
		uint64_t avail, need;

		/* the caller words it (store_room) */
		rc = kv_rocksdb_room(dir, &avail, &need);
		if (rc)
			goto out;
	}
	if (opt->truncate_log && !opt->read_only) {
		rc = kvr_truncate_prepare(dir, &dmg);
		if (rc)
			goto out;
	}
	kvr_db_open(kv, dir, names, fopts, hs, &err);
	if (err && !opt->truncate_log && kvr_torn_tail(err, dir)) {
		free(err);
		err = NULL;
		rocksdb_options_set_wal_recovery_mode(kv->opts,
						      KV_WAL_POINT_IN_TIME);
		kvr_db_open(kv, dir, names, fopts, hs, &err);
	}
	if (err) {
		rc = kvr_open_error(err, dir);
		goto out;
	}
	if (dmg.damaged)
		plog(LOG_WARNING,
		     "%s: recovered up to offset %" PRIu64 " of %06" PRIu64
		     ".log: %" PRIu64 " records (%" PRIu64 " writes) dropped",
		     dir, dmg.offset, dmg.log, dmg.records, dmg.writes);
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
/*
 * At a read-write close: every memtable to a table file, so that the log is
 * not the only copy of what was written (a damaged log then loses nothing);
 * the log is synced too, for when a flush fails (a full disk).
 */
static void kvr_flush_all(struct kvr *kv)
{
	rocksdb_flushoptions_t *fo;
	char *err = NULL;

	rocksdb_flush_wal(kv->db, 1, &err);
	if (err) {
		kvr_error(err, "flush wal at close");
		err = NULL;
	}
	/* RocksDB's background threads do not survive fork(): in a child of
	 * a process that used RocksDB a flush would wait for a thread that
	 * is not there (tests fork such children); the log keeps the data */
	if (getpid() != atomic_load(&kvr_pool_pid)) {
		plog(LOG_DEBUG,
		     "%s: forked after RocksDB started: no flush at "
		     "close",
		     kv->dir);
		return;
	}
	fo = rocksdb_flushoptions_create();
	rocksdb_flushoptions_set_wait(fo, 1);
	for (int f = 0; f < kv->nfam; f++) {
		rocksdb_flush_cf(kv->db, fo, kv->fam[f].h, &err);
		if (err) {
			kvr_error(err, "flush at close");
			err = NULL;
		}
	}
	rocksdb_flushoptions_destroy(fo);
}

void kvr_close(struct kv *kv_)
{
	struct kvr *kv = (struct kvr *)kv_;
	if (!kv)
		return;
	if (kv->db && !kv->base.read_only)
		kvr_flush_all(kv);
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
	pthread_rwlock_destroy(&kv->commit_lock);
	free(kv->dir);
	free(kv);
}
