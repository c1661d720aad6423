/*
 * keys_i.h - the key layout of a drive (see doc/DESIGN.md, "Keys").
 * Every key of store/ is built here (keys.c); nothing else spells one.
 *
 *   DRIVE#<d>|META                         drive record
 *   DRIVE#<d>|PATH#<parent>//<name>        node ("/" for the root)
 *   DRIVE#<d>|DATA#<ino:016x>#<blk:016x>   content block
 *   DRIVE#<d>|XATTR#<ino:016x>#<name>      extended attribute
 *   DRIVE#<d>|INODE#<ino:016x>             attributes of a hard-linked inode
 *   DRIVE#<d>|ORPHAN#<ino:016x>            unlinked while open
 *   DRIVE#<d>|PARENT#<ino:016x>            parent inode and name (parent.c)
 *   DRIVE#<d>|JOURNAL#<seq:016x>           unfinished subtree operation
 *   DRIVE#<d>|XTMP#<seq:016x>/<rest>       temporary keys of journal record
 *                                          seq: an exchange's parked branch
 *                                          (<rest> a node key's suffix), a
 *                                          clone's inode map (<rest> the
 *                                          source inode, 016x)
 *   DRIVE#<d>|XTMP#<seq:016x>              a folder rename's go-ahead
 *                                          (journal.c): its record rolls
 *                                          back once it is gone
 *   DRIVE#<d>|SECRET                       the key of the drive's resume
 *                                          tokens (token.c), 16 bytes
 *   DRIVE#<d>|LOCKS                        the branches shared writers'
 *                                          folder renames hold
 *                                          (branch_lock.c)
 *   DRIVE#<d>|HOLD#<ino:016x>              the shared writers that have
 *                                          inode ino open (hold.c)
 *   DRIVE#<d>|LONE                         the shared writer alone on the
 *                                          drive, that takes no holds
 *                                          (lone.c)
 *
 * Children of folder P are the keys starting PATH#P// (PATH#// for the root):
 * one contiguous run. The subtree below P is the keys starting PATH#P/ (the
 * trailing slash!), i.e. the range [PATH#P/, PATH#P0). The root's subtree is
 * [PATH#/, PATH#0) minus the root key itself. Names never hold '/' or NUL, so
 * nothing needs escaping. XTMP# lies outside PATH#, so no listing sees it.
 *
 * Internal to store/. Every builder appends to a struct sbuf.
 */
#ifndef PATHFS_KEYS_I_H
#define PATHFS_KEYS_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tree.h"

/* A growable byte buffer. Zero-initialised is empty; sbuf_release frees. */
struct sbuf {
	char *buf;
	size_t len, cap;
};
void sbuf_reset(struct sbuf *b); /* len = 0, keeps the memory */
void sbuf_add(struct sbuf *b, const void *p, size_t n);
void sbuf_adds(struct sbuf *b, const char *s);
void sbuf_addc(struct sbuf *b, char c);
/* Keeps buf NUL-terminated past len (not counted). */
void sbuf_nul(struct sbuf *b);
void sbuf_release(struct sbuf *b);

/* Keys one after another in one buffer (key i ends at end[i]).
 * Zero-initialised is empty; key_list_release frees. */
struct key_list {
	struct sbuf keys;
	size_t *end, n, cap;
};
void key_list_add(struct key_list *l, const char *key, size_t len);
/* Key @i (< l->n), *len its length. */
const char *key_list_key(const struct key_list *l, size_t i, size_t *len);
void key_list_reset(struct key_list *l); /* n = 0, keeps the memory */
void key_list_release(struct key_list *l);

/* store/'s short names for tree.h's path rules (tree_path_check(),
 * tree_path_is_within()), which live in keys.c. */
static inline int path_check(const char *path)
{
	return tree_path_check(path);
}
static inline bool path_is_within(const char *path, const char *dir)
{
	return tree_path_is_within(path, dir);
}
/* Length of the parent part of a checked non-root path ("/a/b" -> 2, "/a" -> 0)
 * and the name after it. */
size_t path_parent_len(const char *path);
const char *path_name(const char *path);
/* The parent of checked non-root @path, malloc'd (caller frees; out of
 * memory aborts): paths may be TREE_PATH_MAX long, too much for a stack
 * buffer. */
char *path_parent(const char *path);

/* The kinds of key of a drive: what follows "DRIVE#<d>|" (table above). */
enum key_kind {
	KEY_META,
	KEY_PATH,
	KEY_DATA,
	KEY_XATTR,
	KEY_INODE,
	KEY_ORPHAN,
	KEY_PARENT,
	KEY_JOURNAL,
	KEY_XTMP,
	KEY_SECRET,
	KEY_LOCKS,
	KEY_HOLD,
	KEY_LONE,
	KEY_KINDS /* how many */
};
/* "META", "PATH#", "DATA#", ...: the kind as spelt in its keys (static). */
const char *key_kind_name(enum key_kind kind);

/* Appends "DRIVE#<d>|" — the prefix every key of drive @d starts with. */
void key_drive_prefix(struct sbuf *b, const char *drive);
/* The whole drive: [DRIVE#d|, DRIVE#d}) */
void key_drive_range(struct sbuf *lo, struct sbuf *hi, const char *drive);

void key_meta(struct sbuf *b, const char *drive);
/* Node key of a checked @path. */
void key_node(struct sbuf *b, const char *drive, const char *path);
/* Node key of child @name (length @nlen) of folder @dir. */
void key_child(struct sbuf *b, const char *drive, const char *dir,
	       const char *name, size_t nlen);
/* [lo, hi) of the children of folder @dir. */
void key_children_range(struct sbuf *lo, struct sbuf *hi, const char *drive,
			const char *dir);
/* [lo, hi) of every descendant of folder @dir (for "/", lo is the root key
 * itself, which callers skip). */
void key_subtree_range(struct sbuf *lo, struct sbuf *hi, const char *drive,
		       const char *dir);
/*
 * Decodes a node key (the whole key, drive prefix included, of drive with
 * prefix length @plen) back to its path, appended to @path (NUL-terminated).
 * Errors: -EINVAL when the key is not a well-formed node key.
 */
int key_node_decode(const char *key, size_t len, size_t plen,
		    struct sbuf *path);

void key_data(struct sbuf *b, const char *drive, uint64_t ino, uint64_t blk);
/* [lo, hi) of all blocks of @ino from block @from on. */
void key_data_range(struct sbuf *lo, struct sbuf *hi, const char *drive,
		    uint64_t ino, uint64_t from);
/* Block number of a data key; -EINVAL if malformed. */
int key_data_decode(const char *key, size_t len, size_t plen, uint64_t *ino,
		    uint64_t *blk);

void key_xattr(struct sbuf *b, const char *drive, uint64_t ino,
	       const char *name);
void key_xattr_range(struct sbuf *lo, struct sbuf *hi, const char *drive,
		     uint64_t ino);
/* [lo, hi) of every key of @kind of the drive (all nodes, all data, all
 * orphans, ...), for fsck and housekeeping scans. */
void key_kind_range(struct sbuf *lo, struct sbuf *hi, const char *drive,
		    enum key_kind kind);
/* ino (seq) of a DATA/XATTR/INODE/ORPHAN/PARENT/JOURNAL/XTMP/HOLD key (the 16 hex
 * digits after the kind); -EINVAL if malformed or of another kind. */
int key_ino_decode(const char *key, size_t len, size_t plen, enum key_kind kind,
		   uint64_t *ino);

/*
 * The kv family (enum kv_family) of a key or range bound, for
 * kv_options.family: content blocks (DATA#, and bounds of DATA# ranges) are
 * KV_CONTENT, every other key of a drive KV_TREE, and a bound that names no
 * kind (a whole drive, every drive) KV_ANY.
 */
int key_family(const char *key, size_t len);

void key_inode(struct sbuf *b, const char *drive, uint64_t ino);
void key_orphan(struct sbuf *b, const char *drive, uint64_t ino);
void key_parent(struct sbuf *b, const char *drive, uint64_t ino);
void key_journal(struct sbuf *b, const char *drive, uint64_t seq);
/* [lo, hi) of the temporary keys of journal record @seq: the prefix
 * XTMP#<seq:016x>/ (lo) that journal.c puts node key suffixes behind. */
void key_xtmp_range(struct sbuf *lo, struct sbuf *hi, const char *drive,
		    uint64_t seq);
/* A clone's map entry of source inode @ino (clone.c), within the range. */
void key_xtmp_map(struct sbuf *b, const char *drive, uint64_t seq,
		  uint64_t ino);
/* The go-ahead key of rename record @seq (journal.c), outside the range. */
void key_xtmp_mark(struct sbuf *b, const char *drive, uint64_t seq);
void key_secret(struct sbuf *b, const char *drive);
void key_locks(struct sbuf *b, const char *drive);
/* A writer's id (kv_writer_id) as HOLD# values and LONE spell it: 16 hex
 * digits, no NUL. */
#define KEY_ID_HEX 16
void key_id_hex(char hex[KEY_ID_HEX], uint64_t id);
void key_lone(struct sbuf *b, const char *drive);
void key_hold(struct sbuf *b, const char *drive, uint64_t ino);

#endif
