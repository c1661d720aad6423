/*
 * batch_i.h - the namespace's batch builders (tree.c), shared with the
 * files of the namespace, the journal, content.c, xattr.c and the branch
 * operations: loading and storing an inode's attributes, putting, moving
 * and removing a node, touching its folder.
 *
 * Internal to store/. fs/ and tools/ use tree.h only.
 */
#ifndef PATHFS_BATCH_I_H
#define PATHFS_BATCH_I_H

#include <stdint.h>

#include "drive_i.h"

/*
 * Batch builders: each adds operations to a caller's batch and commits
 * nothing. Unless a comment says otherwise the caller holds t->ns_lock (for
 * namespace changes) and the stripe of every inode whose record is read and
 * rewritten, from the read until the batch is committed or dropped. A builder
 * reads the store as committed so far: two builders that rewrite the same
 * record (e.g. two links of one hard-linked inode, or one folder touched
 * twice) in one batch would lose an update, so combine such changes or
 * commit in between. */

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
/*
 * The end of an attribute read-modify-write (tree_attr_lock()): adds r->n
 * to @b, commits @b and, if the inode asks for it (chattr +S), syncs the
 * store (flags_sync). Errors: as tree_commit, flags_sync.
 */
int tree_attr_commit(struct tree *t, struct kv_batch *b,
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
 *    so does one another shared writer holds open (hold.c), but for them
 *    (*orphan = 0, marked HOLD_ORPHAN_MARK);
 *    so does a regular file whose blocks do not fit one batch's drop
 *    (tree_content_fits) with TREE_PARK_BIG, which the caller reclaims
 *    (tree_reclaim: in slices) once @b is committed and its locks dropped;
 *    otherwise its content, xattrs and INODE record are deleted, *orphan = 0;
 *  - a node not hard-linked: its PARENT record is deleted.
 * The parent folder is NOT touched (tree_batch_dir_touch). Caller holds
 * ns_lock and the stripe of n->a.ino. Errors: -EIO.
 */
/* Adds to @b the ORPHAN mark of @ino. Its value names the shared writer that
 * made it, 16 hex digits (kv_writer_id; "" for a sole writer): once that
 * writer is gone, another frees the orphan (tree_reclaim_dead). @held: an
 * orphan kept only for the other writers that hold it open, marked
 * HOLD_ORPHAN_MARK (hold.c). */
void tree_batch_put_orphan(struct tree *t, struct kv_batch *b, uint64_t ino,
			   bool held);

#define TREE_PARK_BIG 0x100 /* tree_batch_remove(): see there */
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

/* A whiteout tree_rename_whiteout() leaves at the old path. */
struct whiteout {
	uint64_t ino; /* allocated before the rename */
	uid_t uid;
	gid_t gid;
};

/* tree_make.c: adds to @b the whiteout @w at @path (a put of its node,
 * where the batch would delete the renamed node's key) and its PARENT
 * record; the parent folder's times and nlink are the caller's. Reads the
 * parent for its number and set-group-ID bit. Errors: -ENOENT, -ENOTDIR,
 * -EIO. */
int tree_batch_whiteout(struct tree *t, struct kv_batch *b, const char *path,
			const struct whiteout *w, int64_t now);

/* 1 if folder @dir has no children, 0 if it has, or -EIO. */
int tree_dir_is_empty(struct tree *t, const char *dir);

#endif
