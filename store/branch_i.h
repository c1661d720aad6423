/*
 * branch_i.h - what the whole-branch operations (rm -r, cp -r, mv of a
 * branch; tree_rm_r, tree_cp_r, tree_mv) share between their files:
 *
 *   token.c    results and signed resume tokens (the drive secret)
 *   walk.c     a walk of a branch in pre- or post-order by seeks
 *   rm.c       rm -r by the walk, the open check, tree_rm_r()
 *   rm_batch.c rm -r of a whole branch in one atomic batch
 *   clone.c    cp -r (also the clone phase of a cross-drive mv)
 *   move.c     mv
 *
 * Budget: @max_items counts nodes removed or copied in one call (0 = no
 * limit). Batches are bounded by store_options.rename_batch / rename_bytes
 * (branch_batch_limit(), branch_bytes_limit()). The crash hook (crash_hook.c)
 * (PATHFS_CRASH_AFTER_BATCHES) counts the batches of each call.
 *
 * Nodes that change while an operation runs are the caller's to keep away
 * (the daemon's subtree lock).
 *
 * Internal to store/.
 */
#ifndef PATHFS_BRANCH_I_H
#define PATHFS_BRANCH_I_H

#include "crash_hook_i.h"
#include "drive_i.h"

/* ---- results and tokens (token.c) ---------------------------------------- */

#define OP_RM 1
#define OP_CP 2
#define OP_MV 3
/* token flag: the delete walk has handled a node; the cursor names it */
#define TOKEN_RM_STARTED 0x100

/* Adds "@path: reason" to r->failures and counts it in r->failed. */
void op_fail(struct tree_op_result *r, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* What a resume token says. Zero-initialise; token_release() frees. */
struct token {
	uint32_t op, phase;
	uint64_t seq;
	unsigned flags;
	struct sbuf sdrive, src, ddrive, dst, cursor;
};
void token_release(struct token *k);
/* Sets op, drives and paths of @k and an empty cursor (phase, seq and flags
 * are kept). */
void token_fill(struct token *k, uint32_t op, struct tree *t, const char *src,
		struct tree *dt, const char *dst);
/* Makes r->token for @k, keyed by the secret of @t (the source drive; made
 * on its first token). Errors: -EIO, -ENOSPC, -EROFS (no secret to make). */
int token_issue(struct tree *t, const struct token *k,
		struct tree_op_result *r);
/*
 * Checks token @s against the secret of @t and decodes it into @k, which must
 * then match @op, the source drive/path and the destination drive/path
 * (@ddrive/@dst NULL for rm). Writes nothing. Errors: -EINVAL, -EIO.
 */
int token_check(struct tree *t, const char *s, uint32_t op, const char *src,
		const char *ddrive, const char *dst, struct token *k);

/* ---- walking a branch (walk.c) ------------------------------------------- */

/*
 * A snapshot iterator over one branch, moved by seeks. The node the last
 * successful step found is kept decoded (have/n), so the walk reads each node
 * once; a folder reached by going up is read with a point get (have false).
 * Siblings that follow each other are reached with a plain next, no seek.
 */
struct walk {
	struct tree *t;
	struct node_iter ni; /* of the branch */
	const char *root;
	bool have; /* n (and bad) describe the current node */
	bool bad;  /* its value does not decode */
	struct node n;
};
/* Opens a walk of the branch at @root (borrowed until walk_close()).
 * Errors: -EIO. */
int walk_open(struct walk *w, struct tree *t, const char *root);
void walk_close(struct walk *w);
/* Post-order: @p becomes its deepest first descendant (or stays).
 * Errors: -EIO. */
int walk_post_descend(struct walk *w, struct sbuf *p);
/* Post-order successor of @p (which need not exist any more). Returns 1 and
 * updates @p, 0 when @p was the root, or -EIO. */
int walk_post_next(struct walk *w, struct sbuf *p);
/* Pre-order successor of @p. Returns 1 and updates @p, 0 at the end, or
 * -EIO. */
int walk_pre_next(struct walk *w, struct sbuf *p);

/* The part of @path below @root ("" for the root itself). */
const char *branch_rel(const char *root, const char *path);
/* @out = @root joined with @rel (a branch_rel() of it). */
void branch_join(struct sbuf *out, const char *root, const char *rel);
/* Entries and bytes per batch (store_options.rename_batch/rename_bytes). */
size_t branch_batch_limit(struct tree *t);
size_t branch_bytes_limit(struct tree *t);

/* ---- rm -r (rm.c, rm_batch.c) -------------------------------------------- */

/* The open check of a drive (tree_set_open_check()), copied out of the
 * drive under its lock. */
struct open_check {
	bool (*is_open)(void *ctx, uint64_t ino);
	void *ctx;
};
struct open_check open_check_of(struct tree *t);
/* Whether removing the last link of @ino must keep it as an orphan. */
bool keep_orphan(const struct open_check *oc, unsigned flags, uint64_t ino);

/*
 * Counts the result @rc of a tree_unlink() or tree_rmdir() of one node of
 * the branch: removed (0), or already gone (-ENOENT, by an earlier call, also
 * 0 then). Returns any other error.
 */
int rm_counted(int rc, struct tree_op_result *r, uint64_t *used,
	       struct crash_hook *h);

/*
 * Deletes the branch at folder @path in one batch when it can (rm_batch.c):
 * *done tells whether it did. When it cannot, the caller walks; nodes
 * removed one by one meanwhile are counted in @r and *used as usual.
 * Errors: -EIO, -ENOSPC (nothing of the final batch written).
 */
int rm_batch(struct tree *t, const char *path, uint64_t budget, uint64_t *used,
	     unsigned flags, struct tree_op_result *r, struct crash_hook *h,
	     bool *done);

/*
 * Deletes the branch at @path (node @nd): in one batch when it can, else by
 * the walk, starting after @cursor (a path relative to @path) when *started,
 * at most @budget nodes (0: no limit; *used counts them). On return *done
 * tells whether the branch is finished; if not, @cursor holds where to go on
 * and *started is set once a node was handled.
 */
int rm_branch(struct tree *t, const char *path, const struct node *nd,
	      struct sbuf *cursor, bool *started, uint64_t budget,
	      uint64_t *used, unsigned flags, struct tree_op_result *r,
	      struct crash_hook *h, bool *done);

/* ---- cp -r (clone.c) ----------------------------------------------------- */

/* Common argument checks of cp -r and mv. Errors: those of path_check(),
 * -EEXIST (dst is "/"), -EINVAL (dst inside src), -EXDEV (block sizes),
 * -EPERM (dst's folder is immutable: flags_may_add_at()). */
int branch_args(struct tree *t, const char *src, struct tree *dt,
		const char *dst);

/*
 * cp -r and the clone phase of a cross-drive mv. k->op is OP_CP or OP_MV
 * (OP_MV: a node not copied stops the clone); a new clone record's number
 * goes to k->seq. On return *done tells whether the clone is finished; *used
 * counts nodes.
 */
int clone_op(struct tree *t, const char *src, struct tree *dt, const char *dst,
	     uint64_t budget, uint64_t *used, struct token *k, bool resuming,
	     struct crash_hook *h, struct tree_op_result *r, bool *done);

#endif
