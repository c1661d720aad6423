/*
 * content_i.h - what content.c lends the rest of store/: the batch builders
 * that drop or cut a file's content blocks and xattrs (the one place that
 * chooses point or range deletes), block counts, and the size limit.
 *
 * Internal to store/. fs/ and tools/ use tree.h only.
 */
#ifndef PATHFS_CONTENT_I_H
#define PATHFS_CONTENT_I_H

#include <stdbool.h>
#include <stdint.h>

#include "drive_i.h"

/* Largest file size: writes and truncates beyond are -EFBIG. */
#define TREE_FILE_MAX (1ULL << 50)

/* content.c: adds to @b the deletes of every DATA and XATTR key of @ino. */
int tree_drop_inode_content(struct tree *t, struct kv_batch *b, uint64_t ino);
/*
 * content.c: adds to @b the deletes of the DATA keys of a regular file of
 * @size bytes, without reading them: by content.c's invariant its blocks are
 * 0 .. ceil(size / block size) - 1. Point deletes, or one range delete for
 * many: the one place that chooses. A block that breaks the invariant (past
 * the end) is left behind; fsck reports and drops it. Callers pass
 * tree_content_end(), which covers blocks allocated past the end.
 */
void tree_batch_drop_blocks(struct tree *t, struct kv_batch *b, uint64_t ino,
			    uint64_t size);
/* What tree_batch_drop_blocks() is told of regular file @a: its size, or
 * UINT64_MAX (every block, one range delete) when blocks may lie past it
 * (TREE_F_PREALLOC). */
static inline uint64_t tree_content_end(const struct tree_attr *a)
{
	return (a->flags & TREE_F_PREALLOC) ? UINT64_MAX : a->size;
}

/* The same, and the deletes of the file's xattrs. Errors: -EIO. */
int tree_drop_file_content(struct tree *t, struct kv_batch *b, uint64_t ino,
			   uint64_t size);

/*
 * content.c: adds to @b the content changes of a size change of regular file
 * @a (its record, under the inode's stripe) from a->size to @new_size:
 * blocks wholly past the new end are deleted and the last kept block is cut
 * at the new end (so an extension later reads zeros); a->blocks is updated
 * (a->size is the caller's). Growing changes no content, except that any
 * size change (growing, or to the same size) of a file with blocks past its
 * end (TREE_F_PREALLOC) drops those past the new end and clears the flag,
 * as ext4 frees preallocated blocks. Errors: -EIO.
 */
int tree_batch_truncate(struct tree *t, struct kv_batch *b, struct tree_attr *a,
			uint64_t new_size);

/*
 * Big drops. On an engine where a range delete of many keys stalls (etcd:
 * kv_range_keys()), a file's blocks are dropped in slices, one commit each,
 * never more than tree_drop_slice() keys by one batch's range deletes:
 *  - the last link of a file whose blocks do not fit (tree_content_fits()
 *    false) becomes an orphan in the batch that removes its name
 *    (tree_batch_remove's @park), and is reclaimed after that commit
 *    (tree_reclaim): its blocks go from the end, a slice per commit, each
 *    leaving a shorter orphan whose size and count are right; the last
 *    slice goes with its records. A crash in between leaves an orphan that
 *    store_open() reclaims (the same way);
 *  - a truncate that drops more than a slice shrinks the file from the end,
 *    a slice per commit, before its own batch: a crash in between leaves
 *    the file at a size between the old and the new one, its bytes below
 *    that size intact, and readers meanwhile see it shrink.
 */
struct attr_ref;
struct crash_hook;

/* content.c: the most DATA keys one batch drops (half of kv_range_keys(),
 * so that a file's drop shares its batch); UINT64_MAX: no bound. */
uint64_t tree_drop_slice(const struct tree *t);
/* content.c: the most DATA keys a drop of regular file @a deletes (its
 * count when known and lower, else its content end's blocks; UINT64_MAX for
 * blocks past the end of unknown count), 0 for other kinds; and whether
 * they fit one batch's drop. */
uint64_t tree_drop_keys(const struct tree *t, const struct tree_attr *a);
bool tree_content_fits(const struct tree *t, const struct tree_attr *a);
/*
 * content.c: shrinks regular file r->n.a (loaded under its stripe, which
 * the caller holds) towards @new_size, a slice of blocks per commit from the
 * end, each storing the record with its size cut at the slice and its count
 * less the keys dropped, until what is left past @new_size fits one batch
 * (the caller's, tree_batch_truncate or the drop of the whole file). Nothing
 * on an engine without the bound. Each commit counts as a batch of @h
 * (NULL: none). r->n.a is kept as stored. Errors: -EIO, -ENOMEM and the
 * commit's (the slices committed stay).
 */
int tree_shrink_in_slices(struct tree *t, struct attr_ref *r, uint64_t new_size,
			  struct crash_hook *h);

/*
 * content.c: adds to @b the deletes of the content of orphan @ino (@a its
 * record, NULL if it has none): a regular file's blocks as
 * tree_drop_file_content, any other's DATA range, and its xattrs, of which
 * an inode may hold more than one commit takes where a range delete is an
 * action a key (DynamoDB): those past the last few go first, in commits of
 * their own (each a batch of @h, NULL: none). Caller holds @ino's stripe.
 * Errors: -EIO, -ENOMEM, a commit's (the slices committed stay).
 */
int tree_drop_orphan_content(struct tree *t, struct kv_batch *b,
			     const struct tree_attr *a, uint64_t ino,
			     struct crash_hook *h);

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
