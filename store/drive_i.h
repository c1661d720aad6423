/*
 * drive_i.h - a store and its drives: struct store and struct tree (the
 * locks and who holds them), inode allocation, the inode lock stripes, node
 * and inode reads and commits (drive.c), and the orphan sweep store_open()
 * runs (tree_remove.c).
 *
 * Internal to store/. fs/ and tools/ use tree.h only.
 */
#ifndef PATHFS_DRIVE_I_H
#define PATHFS_DRIVE_I_H

#include <pthread.h>
#include <stdbool.h>

#include "kv_i.h"
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

	/* journal_rec.c: the records a thread of this process is running */
	pthread_mutex_t run_lock;
	uint64_t *running;	     /* protected by run_lock: their seqs */
	size_t nrunning, caprunning; /* protected by run_lock */

	/* branch_lock.c: LOCKS as this shared writer last read it, kept
	 * while a watch (tree_watch) tells it of the other writers' changes */
	pthread_mutex_t seen_lock;
	struct locks_seen {
		int watches; /* tree_watch()es running */
		bool valid;
		uint64_t gen; /* bumped by every drop */
		char *raw;
		size_t len;
		uint64_t ver;
	} seen; /* protected by seen_lock */

	/* lone.c, hold.c: this shared writer alone on the drive, taking no holds,
	 * and the inodes it has open meanwhile (held when another joins) */
	pthread_mutex_t lone_lock;
	bool lone;		 /* protected by lone_lock */
	bool lone_asked;	 /* protected by lone_lock: LONE changed */
	int lone_watches;	 /* protected by lone_lock: watches standing */
	uint64_t *lone_inos;	 /* protected by lone_lock */
	size_t lone_n, lone_cap; /* protected by lone_lock */
	/* watch.c: the watch a lone writer narrows to LOCKS and LONE (the
	 * first that stood), and the lock its switches and its stop take */
	pthread_mutex_t watch_lock;
	struct tree_watch *watch; /* protected by watch_lock */

	struct tree *next; /* protected by store->lock */
};

struct store {
	struct kv *kv;
	char *dir;
	int format; /* of the marker, once open (upgraded or not) */
	struct store_options opt;
	/* a rename's copy chunk: rename_batch as asked (store_fit_limits
	 * lowers opt.rename_batch for the batches sized by it; a copy fills
	 * its batch to the room the kv seam counts, kv_batch_room) */
	size_t rename_copy;
	pthread_mutex_t lock;
	struct tree *drives; /* protected by lock */
	/* protected by lock: deleted drives, freed at close */
	struct tree *dead;
	/* partial block writes patch blocks in place (kv_batch_patch): the
	 * store is of format 3 or newer and the kv backend can patch */
	bool patch;
};

/* ---- drive internals (drive.c) ------------------------------------------- */

/* Frees drive @t's struct (store_close(): nothing may use it any more). */
void tree_free(struct tree *t);

/* Allocates a fresh inode number (also used for journal sequence numbers,
 * so they are unique too), persisting a new high-water mark to META first
 * when the reserved range is used up (a range no other writer of the drive
 * holds). Errors: -ENOSPC, -EIO, -ENOENT (the drive was deleted). */
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

/*
 * One writer of several (store_options.shared): a namespace change runs
 * between tree_track(), from which its point reads condition its commit
 * (kv_track), and tree_retry(), true if that commit failed because a key
 * it read changed meanwhile (@rc is -EAGAIN): then it runs again, from its
 * reads, and says what it finds then (EEXIST, ENOENT, ENOTEMPTY...). A
 * sole writer tracks nothing: both cost a test of a flag.
 */
void tree_track(struct tree *t);
bool tree_retry(struct tree *t, int rc);
/* Evaluates @call (an int, 0 or -errno) between tree_track() and
 * tree_retry(), again while it fails because a key it read changed: a
 * change that must not overwrite another writer's (glibc's
 * TEMP_FAILURE_RETRY is the same shape). */
#define TREE_TRACKED(t, call)                                                  \
	({                                                                     \
		int tracked_rc_;                                               \
		do {                                                           \
			tree_track(t);                                         \
			tracked_rc_ = (call);                                  \
		} while (tree_retry((t), tracked_rc_));                        \
		tracked_rc_;                                                   \
	})

/* Commits @b with the store's sync setting. */
int tree_commit(struct tree *t, struct kv_batch *b);

/* The most operations one batch of @t's store may hold (kv_limits): batches
 * of many small operations are sized by it. */
size_t tree_batch_max_ops(const struct tree *t);

/* Reclaims every orphan of drive @t (at store_open). */
int tree_reclaim_orphans(struct tree *t, size_t *count);

#endif
