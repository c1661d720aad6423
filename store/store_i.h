/*
 * store_i.h - what the files of store/ share: the store and drive structs,
 * the node and META value codecs, inode allocation and the inode lock stripes.
 *
 * Internal to store/. fs/ and tools/ use tree.h only.
 */
#ifndef PATHFS_STORE_I_H
#define PATHFS_STORE_I_H

#include <pthread.h>

#include "keys_i.h"
#include "kv_i.h"
#include "log.h"
#include "node_i.h"
#include "tree.h"

#define TREE_STRIPES	   64
#define INO_RANGE	   1024 /* inode numbers reserved per META write */
#define DEFAULT_BLOCK_SIZE 65536

/* One open drive. Owned by its store; lives until store_close(). */
struct tree {
	struct store *store;
	char name[TREE_DRIVE_MAX + 1];
	size_t block_size;
	int64_t created_ns;

	pthread_mutex_t alloc_lock;
	uint64_t ino_next; /* protected by alloc_lock */
	uint64_t
	    ino_limit; /* protected by alloc_lock: META's high-water mark */

	/*
	 * Locking rules. Every read-modify-write of a node's or inode's value
	 * (attributes, partial content blocks) holds stripe[ino % TREE_STRIPES]
	 * of that inode. Every namespace change (mknode, link, unlink, rmdir,
	 * rename, the first and last batch of a subtree rewrite) also holds
	 * ns_lock, taken before any stripe. A subtree rewrite drops ns_lock
	 * while it copies; callers keep other requests off the two branches
	 * meanwhile (the daemon's subtree lock).
	 */
	pthread_mutex_t ns_lock;
	pthread_mutex_t stripe[TREE_STRIPES];

	/* rm.c: the open check of tree_set_open_check() */
	pthread_mutex_t check_lock;
	bool (*is_open)(void *ctx, uint64_t ino); /* protected by check_lock */
	void *is_open_ctx;			  /* protected by check_lock */

	/* token.c: serialises the creation of the drive's token secret */
	pthread_mutex_t secret_lock;

	/* journal.c: the records a thread of this process is running */
	pthread_mutex_t run_lock;
	uint64_t *running;	     /* protected by run_lock: their seqs */
	size_t nrunning, caprunning; /* protected by run_lock */

	struct tree *next; /* protected by store->lock */
};

struct store {
	struct kv *kv;
	char *dir;
	int format; /* of the marker, once open (upgraded or not) */
	struct store_options opt;
	pthread_mutex_t lock;
	struct tree *drives; /* protected by lock */
	/* protected by lock: deleted drives, freed at close */
	struct tree *dead;
	/* partial block writes patch blocks in place (kv_batch_patch): the
	 * store is of format 3 or newer and the kv backend can patch */
	bool patch;
};

/* ---- META value ----------------------------------------------------------
 * Version byte, then varints: format version, created ns (zigzag), block size,
 * inode high-water mark. */
struct meta {
	uint32_t format;
	int64_t created_ns;
	uint32_t block_size;
	uint64_t ino_hwm; /* every inode number in use is below this */
};
void meta_encode(struct sbuf *out, const struct meta *m);
/* Errors: -EIO (does not decode), -EPROTONOSUPPORT (format too new). */
int meta_decode(const char *buf, size_t len, struct meta *m);

/* varint helpers shared by the codecs (journal records, tokens) */
void put_varint(struct sbuf *b, uint64_t v);
/* Reads a varint at *p (< end), advancing *p. Errors: -EIO. */
int get_varint(const char **p, const char *end, uint64_t *v);
void put_bytes(struct sbuf *b, const void *p,
	       size_t n); /* varint length + bytes */
/* Borrowed pointer into the buffer. Errors: -EIO. */
int get_bytes(const char **p, const char *end, const char **s, size_t *n);

/* ---- drive internals (drive.c) -------------------------------------------- */

/* Frees drive @t's struct (store_close(): nothing may use it any more). */
void tree_free(struct tree *t);

/* Allocates a fresh inode number (also used for journal sequence numbers,
 * so they are unique too), persisting a new high-water mark to META first
 * when the reserved range is used up. Errors: -ENOSPC, -EIO. */
int tree_alloc_ino(struct tree *t, uint64_t *ino);

/* Locks the stripes of up to 4 inodes (0 = none) in a deadlock-free order,
 * each stripe once; unlock with the same arguments. */
void tree_lock_inodes(struct tree *t, uint64_t a, uint64_t b, uint64_t c,
		      uint64_t d);
void tree_unlock_inodes(struct tree *t, uint64_t a, uint64_t b, uint64_t c,
			uint64_t d);

/* Reads and decodes the node at @path (no stub resolution).
 * Errors: -ENOENT, -EIO. */
int tree_get_node(struct tree *t, const char *path, struct node *n,
		  bool want_target);
/* Reads and decodes INODE#ino. Errors: -ENOENT, -EIO. */
int tree_get_inode(struct tree *t, uint64_t ino, struct node *n);

/* Commits @b with the store's sync setting. */
int tree_commit(struct tree *t, struct kv_batch *b);

/* The most operations one batch of @t's store may hold (kv_limits): batches
 * of many small operations are sized by it. */
size_t tree_batch_max_ops(const struct tree *t);

/* Adds to @b the deletes of every DATA and XATTR key of @ino. */
int tree_drop_inode_content(struct tree *t, struct kv_batch *b, uint64_t ino);
/*
 * content.c: adds to @b the deletes of the DATA keys of a regular file of
 * @size bytes, without reading them: by content.c's invariant its blocks are
 * 0 .. ceil(size / block size) - 1. Point deletes, or one range delete for
 * many: the one place that chooses. A block that breaks the invariant (past
 * the end) is left behind; fsck reports and drops it.
 */
void tree_batch_drop_blocks(struct tree *t, struct kv_batch *b, uint64_t ino,
			    uint64_t size);
/* The same, and the deletes of the file's xattrs. Errors: -EIO. */
int tree_drop_file_content(struct tree *t, struct kv_batch *b, uint64_t ino,
			   uint64_t size);

/* Reclaims every orphan of drive @t (at store_open). */
int tree_reclaim_orphans(struct tree *t, size_t *count);

/* journal.c: rewrites a non-empty folder; called by tree_rename() with the
 * namespace checks done. tree_rename() calls it with t->ns_lock held and no
 * stripe held, and unlocks ns_lock after it returns (it may drop and retake
 * ns_lock meanwhile). @flags are tree_rename()'s (TREE_RENAME_EXCHANGE: both
 * exist, at least one is a non-empty folder; otherwise @dst is absent or an
 * empty folder, which it replaces). */
int journal_rename_dir(struct tree *t, const char *src, const char *dst,
		       unsigned flags, uint64_t *orphan);

/* ---- the reverse index (parent.c) -------------------------------------
 * PARENT#<ino> = parent inode + name of every singly-named node but the
 * root; kept in the batches of every namespace change (see parent.c). */
#define PARENT_FORMAT 4 /* the store format that has the index */
/* Adds the put of @ino's record: child of folder inode @parent, named as
 * the last name of @path. */
void parent_batch_put(struct tree *t, struct kv_batch *b, uint64_t ino,
		      uint64_t parent, const char *path);
void parent_batch_delete(struct tree *t, struct kv_batch *b, uint64_t ino);
/* Decodes a record's value (*name NUL-terminated). Errors: -EIO. */
int parent_decode(const char *val, size_t vlen, uint64_t *parent,
		  struct sbuf *name);
/* Reads @ino's record. Errors: -ENOENT, -EIO. */
int parent_get(struct tree *t, uint64_t ino, uint64_t *parent,
	       struct sbuf *name);
/* Builds drive @t's index from scratch (format 3 -> 4: store.c), in atomic
 * batches, the last synced; *count gets the records written. Caller holds
 * the store alone. Errors: -EIO, -ENOSPC. */
int parent_index_build(struct tree *t, uint64_t *count);

/* ---- journal records (journal.c), shared with clone.c and fsck.c --------
 * JOURNAL#<seq> values: version byte 1, then varints op, flags, phase, then
 * put_bytes src, dst, cursor, sdrive, then varints ino, blk, aux.
 * Temporary keys of record seq: key_xtmp_range() (keys_i.h). */
#define JOURNAL_REC_VERSION 1
#define JOP_RENAME	    1 /* folder rename; phase 1 copies src/ -> dst/ */
#define JOP_EXCHANGE	    2 /* phases 1 A/->tmp, 2 B/->A/, 3 tmp->B/ */
#define JOP_CLONE                                                              \
	3 /* cascade clone (cp -r / cross-drive mv), budgeted:
			  never replayed at open, resumed by its token */
struct journal_rec {
	uint64_t seq;
	uint32_t op, flags, phase;
	struct sbuf src, dst; /* paths */
	struct sbuf cursor;   /* last item done (key suffix or relative path) */
	struct sbuf sdrive;   /* JOP_CLONE: the source drive */
	uint64_t ino, blk, aux; /* JOP_CLONE: file in progress */
};
void journal_rec_release(struct journal_rec *r);
/* Errors: -EIO (does not decode). */
int journal_rec_decode(const char *buf, size_t len, struct journal_rec *r);
/* Adds to @b the put of @r at JOURNAL#<r->seq> of drive @t. */
void journal_rec_put(struct tree *t, struct kv_batch *b,
		     const struct journal_rec *r);
/* Reads JOURNAL#<seq>. Errors: -ENOENT, -EIO. */
int journal_rec_get(struct tree *t, uint64_t seq, struct journal_rec *r);
/* The crash hook (PATHFS_CRASH_AFTER_BATCHES, see journal.c): init reads the
 * environment; call batch() right after each committed batch. */
struct journal_hook {
	long limit; /* -1: off */
	long done;  /* batches committed so far */
};
void journal_hook_init(struct journal_hook *h);
void journal_hook_batch(struct journal_hook *h);
/* The process-wide crash hook (PATHFS_CRASH_AFTER_COMMITS, see journal.c):
 * tree_commit() calls it right after each successful commit. */
void journal_hook_commit(void);

/* ---- tree.c / content.c helpers shared with journal.c and branch ops -
 * Batch builders: each adds operations to a caller's batch and commits
 * nothing. Unless a comment says otherwise the caller holds t->ns_lock (for
 * namespace changes) and the stripe of every inode whose record is read and
 * rewritten, from the read until the batch is committed or dropped. A builder
 * reads the store as committed so far: two builders that rewrite the same
 * record (e.g. two links of one hard-linked inode, or one folder touched
 * twice) in one batch would lose an update, so combine such changes or
 * commit in between. */

/* Largest file size: writes and truncates beyond are -EFBIG. */
#define TREE_FILE_MAX (1ULL << 50)
/* Largest link count of a hard-linked inode: tree_link beyond is -EMLINK. */
#define TREE_LINK_MAX 65000

/* Where an inode's attributes live (its path node, or INODE#ino for a
 * hard-linked inode or orphan) and what they are. Zero-initialise; release
 * with attr_ref_release(). */
struct attr_ref {
	struct sbuf key; /* key of the record holding the attributes */
	struct node n;	 /* the decoded record (n.a), symlink target included */
};
void attr_ref_release(struct attr_ref *r);

/*
 * Loads the attributes of inode @ino at @path, resolving a hard-link stub to
 * its INODE record, or INODE#ino when @path is NULL. @ino 0 with a @path means
 * "whatever inode is there". For a read-modify-write hold the inode's stripe.
 * Errors: -ENOENT (no node, or the node's inode is not @ino), -EIO.
 */
int tree_attr_load(struct tree *t, const char *path, uint64_t ino,
		   struct attr_ref *r);
/*
 * Checks @path, finds the inode (*ino 0 = whatever is at @path, and *ino gets
 * its number), locks its stripe and loads its attributes into @r: the start of
 * every attribute read-modify-write. On success the caller holds the stripe
 * and unlocks it with tree_unlock_inodes(t, *ino, 0, 0, 0); on failure nothing
 * is held. Errors: those of path_check() and tree_attr_load(), -EINVAL (no
 * path and no inode).
 */
int tree_attr_lock(struct tree *t, const char *path, uint64_t *ino,
		   struct attr_ref *r);
/* Adds to @b the put of r->n (encoded) at r->key. */
void tree_attr_store(struct tree *t, struct kv_batch *b,
		     const struct attr_ref *r);

/* Adds to @b the put of node @a (with symlink @target or NULL) at @path. */
void tree_batch_put_node(struct tree *t, struct kv_batch *b, const char *path,
			 const struct tree_attr *a, const char *target);

/*
 * Adds to @b the update of folder @dir after an entry change: mtime = ctime =
 * @now_ns, nlink += @nlink_delta (sub-folders added/removed). Reads the
 * folder's node fresh; caller holds ns_lock and the folder inode's stripe.
 * Errors: -ENOENT, -ENOTDIR, -EIO.
 */
int tree_batch_dir_touch(struct tree *t, struct kv_batch *b, const char *dir,
			 int nlink_delta, int64_t now_ns);

/*
 * Adds to @b the removal of node @n found at @path (its key is deleted):
 *  - a folder: its xattrs go too (emptiness is the caller's to check);
 *  - a link of a hard-linked inode: INODE nlink - 1 and ctime = @now_ns;
 *  - a last link: with TREE_KEEP_ORPHAN in @flags the inode becomes an orphan
 *    (INODE#ino with nlink 0 + ORPHAN#ino) and *orphan (may be NULL) = ino;
 *    otherwise its content, xattrs and INODE record are deleted, *orphan = 0;
 *  - a node not hard-linked: its PARENT record is deleted.
 * The parent folder is NOT touched (tree_batch_dir_touch). Caller holds
 * ns_lock and the stripe of n->a.ino. Errors: -EIO.
 */
int tree_batch_remove(struct tree *t, struct kv_batch *b, const char *path,
		      const struct node *n, unsigned flags, uint64_t *orphan,
		      int64_t now_ns);

/*
 * Adds to @b the put of node @n, moved to @path (in folder inode
 * @parent_ino) by a rename or exchange, with ctime @now_ns: a plain node is
 * rewritten there (n->a.ctime_ns is set) and its PARENT record names the new
 * place; a hard-link stub is copied as is and its INODE record gets the new
 * ctime.
 * The caller deletes the old key. Caller holds ns_lock and the stripe of
 * n->a.ino. Errors: -EIO (also a stub without its INODE record).
 */
int tree_batch_moved(struct tree *t, struct kv_batch *b, const char *path,
		     uint64_t parent_ino, struct node *n, int64_t now_ns);

/* 1 if folder @dir has no children, 0 if it has, or -EIO. */
int tree_dir_is_empty(struct tree *t, const char *dir);

/*
 * content.c: adds to @b the content changes of a size change of regular file
 * @a (its record, under the inode's stripe) from a->size to @new_size:
 * blocks wholly past the new end are deleted and the last kept block is cut
 * at the new end (so an extension later reads zeros); a->blocks is updated
 * (a->size is the caller's). Growing changes no content. Errors: -EIO.
 */
int tree_batch_truncate(struct tree *t, struct kv_batch *b, struct tree_attr *a,
			uint64_t new_size);

/* content.c: *n = the DATA keys of @ino in blocks [from, to) (@to
 * UINT64_MAX: all). Errors: -EIO. */
int tree_count_blocks(struct tree *t, uint64_t ino, uint64_t from, uint64_t to,
		      uint64_t *n);

/*
 * content.c: adds to @b the deletion of every key in [lo, hi): point deletes
 * for the first keys, one range delete for the rest when there are many
 * (many range tombstones slow RocksDB iterators, so small ranges never get
 * one). Errors: -EIO.
 */
int tree_batch_drop_range(struct tree *t, struct kv_batch *b, const char *lo,
			  size_t lolen, const char *hi, size_t hilen);

#endif
