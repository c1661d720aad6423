/*
 * node_i.h - a node: its value (codec.c) and the node iterator (dir.c), the
 * one way store/ reads nodes in key order: listings, branch scans and walks,
 * rm -r's scan, fsck and the reverse index's build.
 *
 * Internal to store/.
 */
#ifndef PATHFS_NODE_I_H
#define PATHFS_NODE_I_H

#include <stdbool.h>

#include "keys_i.h"
#include "kv_i.h"
#include "tree.h"

/* ---- node values -------------------------------------------------------
 * Version byte 2, then varints: flags, ino, mode, uid, gid, size, nlink,
 * rdev, zigzag atime/mtime/ctime, target length, target bytes, blocks (the
 * allocated block count, tree_attr.blocks). Version 1 is the same without
 * blocks: records written before the count was kept, which decode with
 * blocks TREE_BLOCKS_UNKNOWN (regular files) or 0, and encode back to
 * version 1 while the count is unknown. A LINKED stub (version 1) holds
 * flags, ino and mode only (the rest zero). */
#define NODE_VERSION   2
#define NODE_VERSION_1 1

struct node {
	struct tree_attr a;
	char *target; /* malloc'd symlink target or NULL; node_release frees */
};
void node_encode(struct sbuf *out, const struct tree_attr *a,
		 const char *target);
/* A hard-link stub: flags TREE_F_LINKED, ino and mode only; decodes with
 * every other attribute zero. */
void node_encode_stub(struct sbuf *out, uint64_t ino, mode_t mode);
/* Decodes @len bytes at @buf. Target copied (malloc) only if @n->target is
 * wanted (@want_target). Errors: -EIO. */
int node_decode(const char *buf, size_t len, struct node *n, bool want_target);
void node_release(struct node *n);

/* ---- the node iterator (dir.c) ------------------------------------------
 * Steps through the nodes of one range of a drive in key order (which, for
 * more than one folder's children, is not parent-before-child order), from a
 * snapshot taken at node_iter_open(). A node is returned as its key and value
 * (borrowed until the next step); decoding either is the caller's choice
 * (node_iter_path(), node_iter_node()), as is what to do with one that does
 * not decode. node_iter_children() narrows the walk to one folder's
 * children, by a seek, for walks that go by folders.
 */
enum node_range {
	NODES_CHILDREN, /* the children of folder @dir */
	NODES_BRANCH,	/* every descendant of folder @dir (not @dir) */
	NODES_ALL,	/* every node of the drive, the root included */
};

struct node_iter {
	struct kv_iter *it;
	size_t plen;	/* length of DRIVE#<d>| */
	size_t name_at; /* NODES_CHILDREN: where a key's name starts */
	const char *drive;
	struct sbuf skip; /* a key never returned (the root, in its branch) */
	struct sbuf end;  /* node_iter_children(): the children's bound */
	struct sbuf k;
	bool started; /* the kv iterator stands on the node returned last */
	/* the current node, after node_iter_next() returned 1 */
	const char *key, *val;
	size_t klen, vlen;
};

/*
 * Opens @ni (zero-initialised or closed) on @range of drive @t (@dir: a
 * checked folder path, unused for NODES_ALL), NODES_CHILDREN starting past
 * child @after (NULL: at the first). Close it with node_iter_close(), even
 * after an error. Errors: -ENOMEM.
 */
int node_iter_open(struct node_iter *ni, struct tree *t, enum node_range range,
		   const char *dir, const char *after);
/* Steps to the next node: 1 (ni->key/val set), 0 at the end, or the kv
 * iterator's error (-EIO; on etcd also -ESTALE). */
int node_iter_next(struct node_iter *ni);
/* Appends the current node's path to @path (NUL-terminated).
 * Errors: -EINVAL (the key is not a well-formed node key). */
int node_iter_path(const struct node_iter *ni, struct sbuf *path);
/* Decodes the current node's value into @n (node_decode()). Errors: -EIO. */
int node_iter_node(const struct node_iter *ni, struct node *n,
		   bool want_target);
/*
 * From now on node_iter_next() returns the children of folder @dir past
 * child @after (NULL: all) that lie in the iterator's range. Seeks, unless
 * the iterator stands on child @after (as after a walk's last step): then it
 * takes the next key, which is cheaper.
 */
void node_iter_children(struct node_iter *ni, const char *dir,
			const char *after);
void node_iter_close(struct node_iter *ni);

#endif
