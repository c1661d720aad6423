/*
 * tree_i.h - what the files of the namespace share:
 *
 *   tree.c        lookups, attributes, the batch builders (batch_i.h) and
 *                 the helpers below
 *   tree_make.c   creating nodes (mknode, O_TMPFILE) and hard links
 *   tree_remove.c unlink, rmdir and reclaiming orphans
 *   tree_rename.c rename and exchange (a non-empty folder: journal.c)
 *
 * Locking and the batches are described in tree.c's overview.
 *
 * Internal to store/.
 */
#ifndef PATHFS_TREE_I_H
#define PATHFS_TREE_I_H

#include "drive_i.h"

static inline bool is_root(const char *path)
{
	return path[0] == '/' && path[1] == '\0';
}

/* tree_make.c: a set-group-ID folder (@dir) gives its group to what is made
 * in it (*a, mode and owner set), and its bit to a new folder, as ext4
 * does. */
void tree_inherit_group(const struct tree_attr *dir, struct tree_attr *a);

/* Reads and decodes the record at @key. Errors: -ENOENT, -EIO (logged). */
int tree_load_key(struct tree *t, const struct sbuf *key, struct node *n,
		  bool want_target);

/* The per-thread guess of a folder's inode (see tree.c): 0 if none for
 * folder @dir of @t; set after the folder was read under its stripe. */
uint64_t tree_dir_hint_get(const struct tree *t, const char *dir);
void tree_dir_hint_set(const struct tree *t, const char *dir, uint64_t ino);

/*
 * Reads the nodes at @p1 and @p2 (@p2 may be NULL; they differ) into @n1/@n2
 * under the stripes of their inodes: locks the stripes of the guesses @g1/@g2
 * (0: read the node first to learn it), reads both nodes and, if a node's
 * inode is not the guess, unlocks and tries again with the inodes read. With
 * t->ns_lock held the inodes at both paths stay put, so a second round always
 * matches. On success the caller holds the stripes of n1->a.ino and
 * n2->a.ino (0 if no @p2) and unlocks them with tree_unlock_inodes(); on an
 * error nothing is held. Errors: -ENOENT, -EIO.
 */
int tree_lock_nodes(struct tree *t, const char *p1, struct node *n1,
		    bool want_target1, uint64_t g1, const char *p2,
		    struct node *n2, uint64_t g2);

/* tree_batch_dir_touch() on folder node @n of @dir, already read under its
 * stripe (n->a is updated). Errors: -ENOTDIR. */
int tree_dir_touch_node(struct tree *t, struct kv_batch *b, const char *dir,
			struct node *n, int nlink_delta, int64_t now_ns);

#endif
