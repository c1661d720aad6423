/*
 * kv_i.h - the ordered key-value seam: the only interface the store has to
 * its engine.
 *
 * The seam is deliberately narrow (point get, bounded iterators, atomic
 * batches with delete-range, sync) so that more than one ordered KV engine
 * sits behind it: kv.c dispatches to the backend chosen at open by the
 * location (kv_backend_i.h). kv_rocksdb*.c are the only files that include
 * rocksdb/c.h; RocksDB's errptr strings never leave them: they become a
 * negative errno and a log line.
 *
 * Limits: an engine may bound what one batch holds (kv_limits(): operations,
 * bytes, the largest value). The store sizes its batches by them, or fills
 * a batch to the exact room the seam counts (kv_batch_room); a batch that
 * exceeds them is refused at commit with -E2BIG before the engine sees it,
 * never split (splitting would give up its atomicity). The embedded RocksDB store has no limits
 * unless opened strict (kv_options.strict), which enforces etcd's defaults so
 * that the unit suites catch a batch that would not fit on etcd.
 *
 * Families: keys of different kinds live apart (RocksDB column families), each
 * tuned for its access pattern. Callers never name a family: kv asks the
 * classifier given at open (kv_options.family) for the family of each key, so
 * a point operation goes to its key's family, and a range to its bounds'
 * family, or to every family when the bounds name none (a whole drive). An
 * iterator reads one family, its lower bound's (the tree family when the
 * bound names none). A batch spans families and still commits atomically.
 *
 * The one header the kv library (store/kv/) exports, and to store/ only:
 * fs/ and tools/ cannot include it, and nothing above the seam can include
 * an engine's headers (store/kv/meson.build).
 */
#ifndef PATHFS_KV_I_H
#define PATHFS_KV_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/statvfs.h>

struct kv;
struct kv_iter;
struct kv_batch;

enum kv_family {
	KV_ANY = -1,	/* a range bound that names no kind: every family */
	KV_TREE = 0,	/* nodes, META, xattrs, inodes, orphans, journal */
	KV_CONTENT = 1, /* file blocks */
	KV_FAMILIES
};

/*
 * What one batch may hold; SIZE_MAX where the engine sets no bound.
 *
 * Two ways to size a batch. By the limits: a batch of at most batch_ops
 * operations whose range deletes cover at most range_keys keys fits,
 * whatever they are (most of the store's batches, which mix puts, deletes
 * and ranges, are sized so). Or exactly, by what the seam counts
 * (kv_batch_room): one commit holds batch_actions actions, an operation
 * being one and, on an engine that applies a range delete as one action per
 * key it covers (range_per_key: DynamoDB, which has no range delete), the
 * keys it covers instead; batches of one kind (a rename's copies, its
 * slices of deletes) fill themselves so. kv_batch_commit() refuses a batch
 * by the exact count. On etcd and RocksDB the two agree (a range delete is
 * one operation): batch_actions is batch_ops.
 */
struct kv_limits {
	size_t batch_ops;   /* operations (put, delete, delete-range) */
	size_t batch_bytes; /* kv_batch_bytes() */
	size_t value_bytes; /* one value */
	/* keys one batch's range deletes may cover (kv_range_keys); 0:
	 * batch_ops * KV_RANGE_SLICE_OPS. */
	size_t range_keys;
	/* actions one commit holds, counted exactly (kv_batch_room); 0 at
	 * open: batch_ops */
	size_t batch_actions;
	/* each key a range delete covers is an action (counted when it is
	 * added, by a keys-only read of the range), the range itself none */
	bool range_per_key;
};

/* etcd's defaults (--max-txn-ops 128, --max-request-bytes 1.5 MiB), less
 * room for the request's own framing: what strict mode enforces */
#define KV_ETCD_TXN_OPS	      128
#define KV_ETCD_REQUEST_BYTES (1536u << 10)
#define KV_ETCD_BATCH_BYTES   (KV_ETCD_REQUEST_BYTES - (64u << 10))

struct kv_options {
	bool create; /* create the directory/database if missing */
	bool read_only;
	bool sync;	 /* every commit syncs the WAL */
	size_t cache_mb; /* block caches, all families; 0 = 64 MiB */
	/* the family of a key or range bound (a kv_family); NULL: KV_TREE */
	int (*family)(const char *key, size_t klen);
	/*
	 * One family for every key, in RocksDB's default column family: the
	 * layout of format-1 stores, for reading them before their upgrade
	 * and for building one in tests. Such a database holding any other
	 * column family (an interrupted kv_upgrade) is refused: -EUCLEAN.
	 */
	bool single_family;
	/* RocksDB: enforce etcd's default limits (kv_limits) on every batch,
	 * and refuse (-E2BIG) one whose range deletes cover more keys than a
	 * slice (kv_range_keys), counted when added: etcd applies such a
	 * batch but stalls meanwhile */
	bool strict;
	/* when the open fails, a line saying why, if the engine knows more
	 * than the errno (etcd: wrong password, certificate verification,
	 * connection refused on HOST:PORT, ...); NULL: not wanted */
	char *why;
	size_t why_size;
	/*
	 * RocksDB: a write-ahead log damaged before its end (not a torn tail)
	 * is repaired by dropping everything from the damage on (RocksDB's
	 * point-in-time recovery), after a copy of the logs is kept in
	 * lost+found/ and what is dropped is logged. Without it such a store
	 * is refused (-EBADMSG), nothing changed: the user chooses
	 * (pathfsctl recover --truncate-log).
	 */
	bool truncate_log;
	/*
	 * etcd, DynamoDB: a read-write open that is one writer of several
	 * (issue 24): instead of the owner key (the lease item) it takes a
	 * key of its own (NAME/m/writer/<id> under its lease; an item
	 * writer#<id>, kv_ddb_writer.c), and is fenced by it as the owner is
	 * by the owner key; refused (-EBUSY) while an owner holds the store,
	 * and an owner is refused while shared writers hold it. The writers
	 * coordinate through conditioned commits (kv_batch_expect). A
	 * directory store ignores it (one process opens it).
	 */
	bool shared;
};

/*
 * Shared writers (kv_options.shared): kv_writer_id() is this open's id
 * among them (0: not a shared writer); kv_writers() lists the ids of those
 * that hold the store now (a writer whose lease expired is gone from it,
 * and fenced: its commits fail; on DynamoDB, where nothing deletes an
 * expired item by itself, kv_writers deletes it before leaving it out).
 * Free *ids. Errors: -ENOMEM, as kv_get.
 */
uint64_t kv_writer_id(const struct kv *kv);
int kv_writers(struct kv *kv, uint64_t **ids, size_t *n);

/* true if @where names a store on etcd: etcd://HOST:PORT[,...]/NAME, or
 * etcd+https://... (KV_ETCD_TLS_SCHEME) */
#define KV_ETCD_TLS_SCHEME "etcd+https://"
bool kv_is_etcd(const char *where);
/* true if @where names a store in a DynamoDB table: dynamodb://TABLE[?...]
 * (kv_ddb.c says its form) */
#define KV_DDB_SCHEME "dynamodb://"
bool kv_is_dynamodb(const char *where);
/* true if @where names a store on a service (etcd, DynamoDB), not a
 * directory */
bool kv_is_remote(const char *where);

/*
 * Opens the store at @where: a directory holds an embedded RocksDB database,
 * opened creating missing families unless read-only; an etcd URL
 * (kv_etcd.c says its form) a store on an etcd cluster, whose keys all
 * share one prefix space (families are ignored there) and whose limits are
 * the cluster's. The environment
 * variable PATHFS_KV_STRICT=1 turns kv_options.strict on (tests).
 * Errors: -ENOENT (missing and !create), -EBUSY (locked by another process or
 * already open in this one), -EACCES, -EUCLEAN (see single_family), -ENOSPC
 * (a read-write open of a store on a file system without room for what the
 * open writes: kv_rocksdb_open.c), -EROFS, -EUCLEAN (also: a file the
 * database is opened by is missing, see kv_missing), -EINVAL
 * (a malformed etcd URL), -EHOSTUNREACH (no etcd member answered),
 * -EBADMSG (a write-ahead log is damaged before its end: see truncate_log
 * and kv_damage; logged), -EIO. On success *out owns it; kv_close() frees.
 */
int kv_open(struct kv **out, const char *where, const struct kv_options *opt);

/*
 * What is damaged at @where when kv_open() said -EBADMSG, in words for the
 * refusal (which log, at which offset, how many records and writes a
 * repair would drop), in @buf. -ENOENT if nothing damaged is found (or
 * @where is on etcd), -errno of reading the logs.
 */
int kv_damage(const char *where, char *buf, size_t size);

/*
 * Reads every key of every family with checksums verified, so that a
 * damaged table file is found now rather than by the read that hits it:
 * @report(@ctx, msg) is called once for each family a read error stops
 * (msg names the file and what is wrong, borrowed for the call), *found
 * counts them. Costs a read of the whole store. An engine with nothing of
 * its own to check (etcd) reports nothing. Errors: -ENOMEM.
 */
int kv_verify(struct kv *kv, void (*report)(void *ctx, const char *msg),
	      void *ctx, size_t *found);

/* Who holds the store at @where open read-write (see store_holder), in
 * @buf: 0, an etcd store's owner key's value or a DynamoDB table's lease
 * holder; 1, their shared writers' ("; " between them). -ENOENT if none,
 * or a directory. */
int kv_holder(const char *where, char *buf, size_t size);

/* Whether the file system of @where has room for a read-write open: *avail
 * bytes free, *need wanted (see store_room). Errors: -ENOSPC. */
int kv_room(const char *where, uint64_t *avail, uint64_t *need);

/* Whether the database at @where lost a file it is opened by (see
 * store_missing). Errors: -EUCLEAN (its name in @what). */
int kv_missing(const char *where, char *what, size_t size);

/* The one spelling of location @where, malloc'd in *out (see
 * store_identity). Errors: -EINVAL (a malformed etcd URL), -ENOMEM. */
int kv_identity(const char *where, char **out);
void kv_close(struct kv *kv);

/* true if opened read-only */
bool kv_read_only(const struct kv *kv);
/* true if a watch started at a revision (kv_watch's @rev) misses nothing
 * committed from it on (etcd; DynamoDB's stream starts from now) */
bool kv_watch_revs(const struct kv *kv);
/* true if an iterator reads one moment (RocksDB: a snapshot; etcd: one
 * revision); false on DynamoDB, whose pages are each read as the table is
 * then, and a Query is not isolated from a transaction: a reader that
 * needs one moment pins a record that every such commit rewrites
 * (kv_pin) */
bool kv_iters_one_moment(const struct kv *kv);

/* The engine's limits on one batch, valid until kv_close(). */
const struct kv_limits *kv_limits(const struct kv *kv);

/*
 * The calls made into the seam since kv_open(), counted by kv.c (relaxed
 * atomics: exact once the calls counted have returned), so the bench and the
 * tests can say how many round trips an operation costs without wrapping
 * the seam. Calls a backend makes itself are not counted.
 */
struct kv_counts {
	uint64_t gets;	       /* kv_get */
	uint64_t content_gets; /* kv_get of a key in KV_CONTENT (a block) */
	uint64_t iters;	       /* kv_iter_open */
	uint64_t seeks;	       /* kv_iter_seek */
	uint64_t nexts;	       /* kv_iter_next */
	uint64_t commits;      /* kv_batch_commit that reached the engine */
	uint64_t conflicts;    /* of them, refused by a condition (-EAGAIN) */
	uint64_t stale_pins;   /* kv_unpin() that said -ESTALE */
	/* the engine's own requests, where it counts them (DynamoDB; 0
	 * elsewhere): every request sent, those sent again (throttled, a
	 * conflict, 5xx, a dropped connection), the failures the fault hook
	 * injected, Query pages, transactions, and the read and write
	 * capacity units consumed, in thousandths (the transactions' write
	 * units also as reported alone, and as DynamoDB's rules make them
	 * from the request: ddb_i.h) */
	uint64_t requests, retries, faults;
	uint64_t pages, txns;
	uint64_t read_milli, write_milli;
	uint64_t txn_write_milli, txn_rule_milli;
};
void kv_counts(const struct kv *kv, struct kv_counts *out);

/*
 * The most keys one batch should delete through its range deletes, from the
 * engine's limits: KV_RANGE_SLICE_OPS times its operations per batch
 * (etcd: 1016), SIZE_MAX when it sets none (RocksDB, which keeps one range
 * delete however many keys it covers). A delete-range of many keys stalls an
 * etcd cluster while it applies (100k keys: 1.3 s, reads held up), so the
 * store drops a big range in slices of this many keys, one commit each.
 */
#define KV_RANGE_SLICE_OPS 8
size_t kv_range_keys(const struct kv *kv);

/*
 * Point read. On success *val is a malloc'd copy (caller frees; NUL-terminated
 * one byte past *vlen for convenience), *vlen its length.
 * Errors: -ENOENT, -EIO.
 */
int kv_get(struct kv *kv, const char *key, size_t klen, char **val,
	   size_t *vlen);

/*
 * Conditioned commits, for writers that other writers race (several opens
 * of one etcd store): a read that also says the key's version, and a batch
 * condition that the key still has that version when the batch commits, so
 * that a read-then-commit fails rather than overwrite what it did not see.
 *
 * A version is the engine's: 0 for a key that is absent, else a number that
 * changes whenever the key's value does (it may change without: a key
 * rewritten with the same value). etcd: the key's mod revision, exact.
 * RocksDB: a 64-bit SipHash of the value under a key drawn at open, so
 * versions are comparable within one open only (the only one: a directory
 * store has one process) and two values share one with odds of 2^-64; a key
 * rewritten to a value it held before (A, B, A) is unchanged to it, which is
 * what a condition asks (is the value still the one read?). Under a kv_pin()
 * the version is the pinned revision's.
 *
 * kv_get_ver() is kv_get() that also sets *ver (to 0 with -ENOENT).
 */
int kv_get_ver(struct kv *kv, const char *key, size_t klen, char **val,
	       size_t *vlen, uint64_t *ver);

/*
 * Tracked reads, a read-then-commit without naming its keys: between
 * kv_track() and this thread's next kv_batch_commit() on @kv that succeeds,
 * every kv_get() it makes on @kv is remembered with the version read, and
 * each commit of a batch without conditions of its own (kv_batch_expect)
 * is conditioned on all of them: it fails with -EAGAIN if any key read
 * changed since. The first such commit that succeeds ends the tracking
 * (what the thread reads after belongs to no commit yet); kv_untrack()
 * ends it too and says whether a tracked commit failed on a condition
 * (the caller then starts again: reads, checks, commit). Point reads only:
 * an iterator's keys are not tracked (the store relies on a folder's node
 * being rewritten by every change of its entries, see store/tree.c).
 * kv_get_ver() is not tracked (its caller holds the version). One tracking
 * per thread; nested kv_track() starts afresh.
 */
void kv_track(struct kv *kv);
bool kv_untrack(struct kv *kv);
/* true while this thread tracks its reads of @kv (kv_track, until its
 * first tracked commit succeeds or kv_untrack). */
bool kv_tracking(const struct kv *kv);
/* Spoils this thread's tracked change of @kv: found, from its reads, that
 * it must not go on now (a branch lock another writer holds): every tracked
 * commit fails with -EAGAIN, writing nothing, and kv_untrack() says true. */
void kv_track_spoil(struct kv *kv);
/* Tracks @key as if this thread had read it at version @ver (kv_get_ver):
 * for a reader that knows a key's version without asking the engine (a
 * value a watch keeps up to date), so the commit is conditioned on it
 * all the same. Nothing if the thread does not track @kv. */
void kv_track_known(struct kv *kv, const char *key, size_t klen, uint64_t ver);

/*
 * Reads of one moment, for a reader that other processes' writes race (a
 * -o ro mount following its writer) or its own other threads' commits:
 * between kv_pin() and kv_unpin(), this thread's kv_get()s and iterators
 * on @kv read the store as it was at one moment, or kv_unpin() says they
 * may not have: -ESTALE, unpin and start again.
 *  - etcd reads at one revision: the first read's is kept and every later
 *    read asks for it (no extra round trip); a read whose revision etcd
 *    compacted meanwhile fails with -ESTALE.
 *  - DynamoDB and RocksDB have no such reads: the pin keeps the version of
 *    each point read of a key outside KV_CONTENT (a record) and kv_unpin()
 *    reads them again, -ESTALE if one changed. It answers for the pin's
 *    other reads (blocks, an iterator's entries) only because the store
 *    rewrites such a record in every commit that changes them: a reader
 *    pins a record read first. A sole writer (RocksDB; DynamoDB's lease
 *    holder) reads nothing again when none of its own commits ran during
 *    the pin: the check costs two atomic loads then, and one point read
 *    per record read (DynamoDB: a GetItem) otherwise.
 * One pin per thread at a time; kv_unpin() of a thread holding none is
 * harmless (0). Errors of kv_unpin(): -ESTALE, -EIO (a read again failed).
 */
void kv_pin(struct kv *kv);
int kv_unpin(struct kv *kv);
/*
 * Whether this thread's pin of @kv needs a record read to answer for its
 * iterators: false for a sole writer none of whose commits was in flight
 * at kv_pin(), as kv_unpin() then says -ESTALE when one ran meanwhile
 * (with no read to look at, any), and nothing when none did. After such an
 * -ESTALE the thread's next pin says true once, so a reader racing its own
 * writer's commits pays a record read rather than a page read again.
 */
bool kv_pin_needs_record(const struct kv *kv);

/*
 * Iterator over keys in [lo, hi). @hi may be NULL (no upper bound). The bounds
 * are copied. The iterator reads a consistent snapshot taken at creation,
 * unless !kv_iters_one_moment(kv) (DynamoDB: each page as it is then).
 * Positioned at the first key >= lo on return; a read that fails there or
 * later ends the iteration (!kv_iter_valid) and kv_iter_status() says why.
 * Errors: -ENOMEM (nothing is left to free).
 */
int kv_iter_open(struct kv_iter **out, struct kv *kv, const char *lo,
		 size_t lolen, const char *hi, size_t hilen);
/*
 * As kv_iter_open(), for a caller that needs the keys only (counting them,
 * finding where a slice ends, deleting them): kv_iter_value() gives an
 * empty value. etcd leaves the values unread (Range keys_only: a page of
 * 64 KiB blocks is then a page of keys); RocksDB reads them anyway.
 */
#define KV_ITER_KEYS_ONLY 0x1 /* the backends' iter_open flag */
int kv_iter_open_keys(struct kv_iter **out, struct kv *kv, const char *lo,
		      size_t lolen, const char *hi, size_t hilen);
/* Repositions at the first key >= @key (still within the bounds). */
void kv_iter_seek(struct kv_iter *it, const char *key, size_t klen);
bool kv_iter_valid(struct kv_iter *it);
/* Key and value of the current entry, borrowed until the iterator moves. */
const char *kv_iter_key(struct kv_iter *it, size_t *len);
const char *kv_iter_value(struct kv_iter *it, size_t *len);
void kv_iter_next(struct kv_iter *it);
/* 0, or why the iteration stopped early (check once !valid): -EIO, and on
 * etcd whatever a request returns (-ESTALE: the snapshot was compacted). */
int kv_iter_status(struct kv_iter *it);
void kv_iter_free(struct kv_iter *it);

/*
 * An atomic write batch for @kv (its keys' families are resolved as they are
 * added). Operations are buffered; kv_batch_commit() applies all or none. A
 * batch can be committed once; kv_batch_free() is always safe (also after
 * commit, and on NULL). Adding to a batch cannot fail (allocation failure
 * aborts, as RocksDB itself does).
 */
struct kv_batch *kv_batch_new(struct kv *kv);
void kv_batch_put(struct kv_batch *b, const char *key, size_t klen,
		  const char *val, size_t vlen);
/*
 * Patches are an optional capability (kv_can_patch()): a backend that has
 * none makes its callers read, modify and put the value. A patch writes
 * @len bytes of @data at offset @off of @key's value without reading it:
 * the value grows to @off + @len if shorter, zero-filled up to @off; a key
 * that did not exist becomes such a value (zeros, then @data). The patch is
 * folded into the value when read (kv_get, iterators) and by compaction.
 * @off + @len is at most 16 MiB.
 */
bool kv_can_patch(const struct kv *kv);
void kv_batch_patch(struct kv_batch *b, const char *key, size_t klen,
		    uint32_t off, const char *data, size_t len);
void kv_batch_delete(struct kv_batch *b, const char *key, size_t klen);
/*
 * A condition of @b: it commits only if @key's version is still @ver (0:
 * the key is absent), as kv_get_ver() gave it; else it fails with -EAGAIN
 * and writes nothing (read again, redo, commit again). Checked atomically
 * with the writes: on etcd as the txn's compares, on RocksDB under a lock
 * that every commit of the open takes (shared by the unconditioned ones,
 * exclusive for the checked ones). A condition counts as an operation and
 * its key's bytes in the limits (kv_batch_fits). A batch of conditions only
 * writes nothing and says whether they hold.
 */
void kv_batch_expect(struct kv_batch *b, const char *key, size_t klen,
		     uint64_t ver);
/* Deletes every key in [lo, hi). */
void kv_batch_delete_range(struct kv_batch *b, const char *lo, size_t lolen,
			   const char *hi, size_t hilen);
/* Operations added (a delete-range counts one). */
size_t kv_batch_count(const struct kv_batch *b);
/* Bytes added: keys and values of puts, keys of deletes, both bounds of a
 * delete-range. */
size_t kv_batch_bytes(const struct kv_batch *b);
/* true if one more put of @klen + @vlen bytes still fits the limits */
bool kv_batch_fits(const struct kv_batch *b, size_t klen, size_t vlen);
/*
 * The actions @b may still take, counted exactly (struct kv_limits): its
 * operations, the keys its range deletes covered when added (range_per_key
 * engines), its conditions, and the conditions its commit will add (this
 * thread's tracked reads of the store, kv_track, as many as it has made so
 * far). A batch filled up to it commits, bytes allowing; one past it is
 * refused (-E2BIG).
 */
size_t kv_batch_room(const struct kv_batch *b);
/*
 * The most keys a range delete added to @b now may cover, the batch still
 * fitting: kv_batch_room() on an engine whose range deletes cost an action
 * per key; else kv_range_keys() (one operation however many keys), 0 if @b
 * has no room for one more operation.
 */
size_t kv_batch_range_room(const struct kv_batch *b);
/* true if @b, with the conditions its commit will add (as kv_batch_room),
 * is more than one commit takes: kv_batch_commit() would refuse it. */
bool kv_batch_over(const struct kv_batch *b);
void kv_batch_clear(struct kv_batch *b);
/*
 * Commits @b atomically (synced if @sync or the store's sync option).
 * Errors: -E2BIG (exceeds kv_limits(): more actions than batch_actions,
 * see kv_batch_room, more bytes than batch_bytes, or a value longer than
 * value_bytes; nothing written, nothing sent), -EAGAIN (a
 * condition, kv_batch_expect, failed: nothing written), -ENOSPC, -EROFS,
 * -EIO.
 */
int kv_batch_commit(struct kv *kv, struct kv_batch *b, bool sync);
void kv_batch_free(struct kv_batch *b);

/*
 * Moves every key kept in the tree family that the classifier puts in another
 * family over to it: the upgrade of a store whose keys all shared one family
 * (format 1). Each batch of at most @max_keys keys (and ~4 MiB) puts the keys
 * into their family and deletes them from the tree family atomically, so
 * after a crash every key is in exactly one place and running it again
 * continues; the last batch syncs the WAL. @hook, if not NULL, is called after
 * each committed batch with the number of keys moved so far (tests kill the
 * process there). *moved (may be NULL) is the number of keys moved.
 * Errors: -EROFS, -ENOSPC, -EIO.
 */
int kv_upgrade(struct kv *kv, size_t max_keys,
	       void (*hook)(void *ctx, uint64_t moved), void *ctx,
	       uint64_t *moved);

/*
 * Watches the keys [lo, hi) for other processes' changes (copied bounds;
 * @hi not NULL) from revision @rev (0: from now on): on a thread of its own,
 * @change(@ctx, rev, key, klen, value, vlen) is called for each key put
 * (@value its new value) or deleted (@value NULL) in the order they were
 * committed (rev: the commit's revision, one for all keys of a batch),
 * and @reset(@ctx) when the watch started and whenever changes may have been
 * missed (the engine lost track: a dropped connection, a compacted
 * revision): what the caller derived from the keys is to be dropped. Every
 * commit after the reset() is handed out, so what the caller reads after
 * it misses nothing. Keys and values are borrowed for the call; callbacks
 * run one at a time. kv_watch_stop() ends it (no callback runs after it
 * returns). Only an engine that other processes write has it: etcd, and
 * DynamoDB through the table's stream, where a rev numbers the pages the
 * watch read (changes read together, each committed before its page was
 * read: a batch may straddle two, a page hold several), order is per key,
 * and @rev is not kept (the watch starts from now: its reset() says to
 * read again; kv_ddb_watch.c). The embedded RocksDB store answers
 * -EOPNOTSUPP (one process opens it). Errors: -EOPNOTSUPP, -ENOMEM,
 * -EAGAIN.
 */
struct kv_watch;
typedef void (*kv_change_fn)(void *ctx, long long rev, const char *key,
			     size_t klen, const char *value, size_t vlen);
int kv_watch(struct kv_watch **out, struct kv *kv, const char *lo, size_t lolen,
	     const char *hi, size_t hilen, long long rev, kv_change_fn change,
	     void (*reset)(void *ctx), void *ctx);
/* NULL is fine. */
void kv_watch_stop(struct kv_watch *w);

/*
 * Marks this thread's commits on @kv quiet from now on: the caller applies
 * them to whatever it derives from the store as it makes them (a daemon's
 * request threads: the kernel's caches learn of a change from the reply),
 * so this process's watches of @kv do not hand them back. A watch that
 * meets a change before its commit's answer came waits for the quiet
 * commits then in flight (a commit's round trip at most); one it reaches
 * after 256 later quiet commits is handed out as any other. Costs nothing
 * on an engine without watches. DynamoDB's commits make no revision to
 * match: its watches hand quiet commits back (its writer never watches).
 * One store per thread; @kv NULL: this thread's commits are handed out
 * again.
 */
void kv_quiet(struct kv *kv);

/* Syncs the WAL. Errors: -EIO. */
int kv_sync(struct kv *kv);

/*
 * The space of the store for statfs: RocksDB's file system's, or an etcd
 * cluster's quota (etcd's default 2 GiB unless the URL says quota-bytes) and
 * what its database does not use of it. Errors: -errno.
 */
int kv_space(struct kv *kv, struct statvfs *st);

/* Approximate number of keys (RocksDB's estimate), for statfs. */
uint64_t kv_estimate_keys(struct kv *kv);

/*
 * Compacts [lo, hi) now, so that the disk space of data deleted there is given
 * back (RocksDB frees space only when it compacts). Synchronous; costs about
 * the size of the overlapping files: call it for large deletions only.
 */
int kv_compact_range(struct kv *kv, const char *lo, size_t lolen,
		     const char *hi, size_t hilen);

/*
 * Bytes of the store's file system kept free: a batch that grows the store is
 * refused with -ENOSPC below this, while batches that mostly delete pass, so
 * space can always be freed. statfs reports free space less this reserve.
 */
uint64_t kv_reserve_bytes(struct kv *kv);

#endif
