/*
 * flags_i.h - the rules of the user flags (TREE_F_USER: chattr), checked by
 * the store's calls that change a node, its content or its folder
 * (flags.c). Each check answers 0 or -EPERM, as the VFS and ext4 do, and
 * is made under the locks the call holds for its change (the inode's
 * stripe, and ns_lock for a namespace change; tree_setflags() takes both),
 * so a flag set in between is seen before or after the whole change.
 *
 * Internal to store/.
 */
#ifndef PATHFS_FLAGS_I_H
#define PATHFS_FLAGS_I_H

#include <stdbool.h>
#include <stdint.h>

#include "drive_i.h"

/* IMMUTABLE or APPEND: the node can be neither removed nor renamed, nor get
 * a new name, nor have its xattrs changed. */
#define TREE_F_PROTECT (TREE_F_IMMUTABLE | TREE_F_APPEND)

/* tree_setattr() of @mask on an inode with attributes @a. */
int flags_may_setattr(const struct tree_attr *a, unsigned mask);
/* A write of content (tree_write): not on IMMUTABLE. */
int flags_may_write(const struct tree_attr *a);
/* tree_fallocate() of @mode (TREE_FALLOC_*): not on IMMUTABLE, and only
 * allocation (with or without KEEP_SIZE) on APPEND. */
int flags_may_fallocate(const struct tree_attr *a, unsigned mode);
/* A change of xattrs, or a new name of a file (link): not on PROTECT. */
int flags_may_alter(const struct tree_attr *a);
/* Making an entry in folder @dir (create, link, rename to): not IMMUTABLE. */
int flags_may_add(const struct tree_attr *dir);
/* flags_may_add() of the folder of @path (in drive @t), read here: 0 when
 * it is missing (the caller's operation says so). Errors: -EPERM, -EIO. */
int flags_may_add_at(struct tree *t, const char *path);
/* Removing or renaming the node with user flags @nflags from folder @dir:
 * neither may be PROTECT. */
int flags_may_remove(const struct tree_attr *dir, uint32_t nflags);

/*
 * The user flags of node @n (a path node read by tree_get_node()): its own,
 * or for a hard-link stub its INODE record's. Errors: -EIO (a stub without
 * its record), those of the read.
 */
int flags_of_node(struct tree *t, const struct node *n, uint32_t *out);

/* What a new node @a inherits from its folder @dir (as ext4: NODUMP,
 * NOATIME, SYNC; a folder DIRSYNC too; a symlink or special file NODUMP and
 * NOATIME only). */
void flags_inherit(const struct tree_attr *dir, struct tree_attr *a);

/*
 * For the walks of rm -r (rm.c), which remove plain files in batches of
 * their own: whether the folder holding @path (not "/") keeps it
 * (IMMUTABLE or APPEND), so that it goes by tree_unlink(), which refuses.
 * @c remembers the folder asked last (zero-initialise; release with
 * flags_dir_cache_release()), so that a folder's files cost one read.
 * Errors: those of the read (-ENOENT: the folder is gone, nothing to keep).
 */
struct flags_dir_cache {
	struct sbuf dir;
	uint32_t flags;
};
int flags_dir_keeps(struct tree *t, const char *path, struct flags_dir_cache *c,
		    bool *keeps);
void flags_dir_cache_release(struct flags_dir_cache *c);

/* Syncs the write-ahead log if @flags ask changes to be durable on return
 * (SYNC or DIRSYNC): after a change of a SYNC inode, or of the entries of a
 * SYNC or DIRSYNC folder. Errors: those of kv_sync(). */
int flags_sync(struct tree *t, uint32_t flags);

#endif
