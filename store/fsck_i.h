/*
 * fsck_i.h - what the files of fsck share:
 *
 *   fsck.c         the driver (tree_fsck()), the findings, journal records
 *                  and the inode counter
 *   fsck_nodes.c   the nodes: keys, values, parents, folder nlink, the
 *                  reverse index
 *   fsck_content.c inodes, orphans, content blocks, xattrs, temporary keys
 *                  and what nothing points to
 *
 * What is checked and repaired, and the limits: fsck.c's overview.
 *
 * Internal to store/.
 */
#ifndef PATHFS_FSCK_I_H
#define PATHFS_FSCK_I_H

#include "drive_i.h"
#include "parent_i.h"

/* A growable array of inode numbers; sorted before it is searched. */
struct u64vec {
	uint64_t *v;
	size_t n, cap;
};
void fsck_vec_push(struct u64vec *a, uint64_t x);
void fsck_vec_sort(struct u64vec *a);
/* Number of times @x occurs in sorted @a. */
size_t fsck_vec_count(const struct u64vec *a, uint64_t x);

/* A regular file's size and block count, for the content checks. */
struct isize {
	uint64_t ino, size;
	uint64_t blocks; /* recorded (TREE_BLOCKS_UNKNOWN: not kept) */
	uint64_t stored; /* DATA keys found */
	bool prealloc;	 /* TREE_F_PREALLOC: empty blocks past the end */
};

struct sizevec {
	struct isize *v;
	size_t n, cap;
};
/* Adds regular file @attr (its ino, size, count and TREE_F_PREALLOC). */
void fsck_size_push(struct sizevec *a, const struct tree_attr *attr);
/* Orders by inode number (qsort, bsearch). */
int fsck_cmp_isize(const void *a, const void *b);
/* The size of regular file @ino, or NULL if no decodable record gives one. */
struct isize *fsck_size_find(const struct sizevec *a, uint64_t ino);

/* A damaged content block, reported once the files' paths are known; or
 * (BLK_COUNT) a file whose block count is wrong. */
enum block_damage { BLK_LONG, BLK_PAST_END, BLK_TAIL, BLK_COUNT };

struct bad_block {
	uint64_t ino, blk;
	size_t vlen;
	uint64_t recorded, stored; /* BLK_COUNT: the count and the keys */
	uint64_t size;		   /* the file's size, when known */
	bool size_known;
	enum block_damage kind;
	char *path; /* a path of the inode (malloc'd) or NULL */
};

/* One run of fsck over one drive. */
struct fsck {
	struct tree *t;
	bool repair;
	void (*report)(void *ctx, const char *msg);
	void *ctx;
	size_t findings;
	size_t plen; /* length of the drive prefix of every key */
	struct u64vec nodes, stubs, inodes, orphans, seqs;
	uint64_t max_ino;
	char **busy; /* src and dst of unfinished journal records */
	size_t nbusy;
	char **copies; /* dst of unfinished renames: copies of src's nodes */
	size_t ncopies;
	bool skip_refs;	  /* an exchange is unfinished: inodes are in flux */
	size_t bad_nodes; /* node values that do not decode */
	struct sizevec sizes; /* regular files, sorted by inode before DATA# */
	struct bad_block *bad;
	size_t nbad, capbad;
};

/* Reports one finding (one line) and counts it. */
void fsck_finding(struct fsck *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Commits a one-off repair batch (the caller holds ns_lock). */
int fsck_repair_commit(struct fsck *f, struct kv_batch *b);

static inline bool is_busy(const struct fsck *f, const char *path)
{
	for (size_t i = 0; i < f->nbusy; i++)
		if (path_is_within(path, f->busy[i]))
			return true;
	return false;
}

static inline bool is_copy(const struct fsck *f, const char *path)
{
	for (size_t i = 0; i < f->ncopies; i++)
		if (path_is_within(path, f->copies[i]))
			return true;
	return false;
}

static inline void see_ino(struct fsck *f, uint64_t ino)
{
	if (ino > f->max_ino)
		f->max_ino = ino;
}

/* Whether the drive has the reverse index (PARENT#, parent.c) to check. */
static inline bool has_index(const struct fsck *f)
{
	return f->t->store->format >= PARENT_FORMAT;
}

/* fsck_nodes.c: sets the nlink of the node at @path (NULL: INODE#@ino) to
 * @nlink, if it still is inode @ino, under its stripe and ns_lock. */
void fsck_fix_nlink(struct fsck *f, const char *path, uint64_t ino,
		    uint32_t nlink);
/* fsck_nodes.c: checks every node (then f->nodes and f->stubs are sorted).
 * Errors: those of the kv iterator. */
int fsck_check_nodes(struct fsck *f);
/* fsck_content.c: collects the orphans (sorted), before the nodes. */
int fsck_check_orphans(struct fsck *f);
/* fsck_content.c: everything keyed by inode, once the nodes are known:
 * INODE records, hard links, DATA blocks and counts, XATTR, XTMP and PARENT
 * keys. */
int fsck_check_content(struct fsck *f);

#endif
