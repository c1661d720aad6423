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
#include "tree.h"

#define TREE_STRIPES 64
#define INO_RANGE 1024 /* inode numbers reserved per META write */
#define DEFAULT_BLOCK_SIZE 65536

/* One open drive. Owned by its store; lives until store_close(). */
struct tree {
	struct store *store;
	char name[TREE_DRIVE_MAX + 1];
	size_t block_size;
	int64_t created_ns;

	pthread_mutex_t alloc_lock;
	uint64_t ino_next;  /* protected by alloc_lock */
	uint64_t ino_limit; /* protected by alloc_lock: META's high-water mark */

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

	struct tree *next; /* protected by store->lock */
};

struct store {
	struct kv *kv;
	char *dir;
	struct store_options opt;
	pthread_mutex_t lock;
	struct tree *drives; /* protected by lock */
};

/* ---- node values -------------------------------------------------------
 * Version byte 1, then varints: flags, ino, mode, uid, gid, size, nlink,
 * rdev, zigzag atime/mtime/ctime, target length, target bytes. A LINKED stub
 * holds flags, ino and mode only (the rest zero). */
#define NODE_VERSION 1

struct node {
	struct tree_attr a;
	char *target; /* malloc'd symlink target or NULL; node_release frees */
};
void node_encode(struct sbuf *out, const struct tree_attr *a,
		 const char *target);
/* Decodes @len bytes at @buf. Target copied (malloc) only if @n->target is
 * wanted (@want_target). Errors: -EIO. */
int node_decode(const char *buf, size_t len, struct node *n, bool want_target);
void node_release(struct node *n);

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
void put_bytes(struct sbuf *b, const void *p, size_t n); /* varint length + bytes */
/* Borrowed pointer into the buffer. Errors: -EIO. */
int get_bytes(const char **p, const char *end, const char **s, size_t *n);

/* ---- drive internals ---------------------------------------------------- */

/* Allocates a fresh inode number (also used for journal sequence numbers,
 * so they are unique too), persisting a new high-water mark to META first
 * when the reserved range is used up. Errors: -ENOSPC, -EIO. */
int tree_alloc_ino(struct tree *t, uint64_t *ino);

pthread_mutex_t *tree_stripe(struct tree *t, uint64_t ino);
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

/* Adds to @b the deletes of every DATA and XATTR key of @ino. */
int tree_drop_inode_content(struct tree *t, struct kv_batch *b, uint64_t ino);

/* Reclaims every orphan of drive @t (at store_open). */
int tree_reclaim_orphans(struct tree *t, size_t *count);

/* journal.c: rewrites a non-empty folder; called by tree_rename() with the
 * namespace checks done. */
int journal_rename_dir(struct tree *t, const char *src, const char *dst,
		       unsigned flags, uint64_t *orphan);

#endif
