/*
 * rm.c - rm -r: tree_rm_r() and the delete half of a cross-drive tree_mv().
 *
 * A folder whose branch fits the budget and holds between 64 and 1M nodes
 * goes in one atomic batch (rm_batch.c). Otherwise rm -r walks the branch in
 * post-order (walk.c: children before their folder). Non-folders are removed
 * in batches (rm_plain(): content, xattrs; the one-by-one tree_unlink() for
 * hard links and orphans with TREE_KEEP_ORPHAN); a folder is removed by
 * tree_rmdir() after the batch holding its children is committed, so it
 * goes only once its children range is empty. A crash at any point leaves
 * no node without its parent. The walk needs nothing but the last path
 * handled: that is what the token holds, and resuming from it (even from an
 * older token after a crash that went further) just finds the removed nodes
 * gone.
 *
 * The open check (tree_set_open_check()) is kept in the drive's struct tree
 * under its check_lock.
 *
 * Among shared writers (tree_shared) every node goes by its own
 * conditioned change (tree_unlink, tree_rmdir: tree_track), never in
 * unconditioned batches: another writer may create, remove or hold open
 * (hold.c) files in the branch meanwhile. A folder another writer filled
 * meanwhile stays and is reported (ENOTEMPTY), as rm -rf racing a create
 * on one machine. That costs a commit per node.
 *
 * Limits: in-branch folders keep their mtime while their files are removed
 * (they are removed next). An undecodable node is left in place and
 * reported, and so are its ancestors (not empty).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "branch_i.h"
#include "content_i.h"
#include "crash_hook_i.h"
#include "drive_i.h"
#include "flags_i.h"
#include "parent_i.h"

/* ---- the open check ----------------------------------------------------- */

void tree_set_open_check(struct tree *t, bool (*is_open)(void *, uint64_t),
			 void *ctx)
{
	pthread_mutex_lock(&t->check_lock);
	t->is_open = is_open;
	t->is_open_ctx = ctx;
	pthread_mutex_unlock(&t->check_lock);
}

struct open_check open_check_of(struct tree *t)
{
	struct open_check c;

	pthread_mutex_lock(&t->check_lock);
	c.is_open = t->is_open;
	c.ctx = t->is_open_ctx;
	pthread_mutex_unlock(&t->check_lock);
	return c;
}

bool keep_orphan(const struct open_check *oc, unsigned flags, uint64_t ino)
{
	if (!(flags & TREE_KEEP_ORPHAN))
		return false;
	return !oc->is_open || oc->is_open(oc->ctx, ino);
}

/* ---- rm -r by the walk ---------------------------------------------------- */

/* Commits the pending removals of rm -r under ns_lock. */
static int rm_flush(struct tree *t, struct kv_batch *b, size_t *n,
		    struct crash_hook *h)
{
	int rc;

	if (!*n)
		return 0;
	rc = tree_commit(t, b);
	pthread_mutex_unlock(&t->ns_lock);
	kv_batch_clear(b);
	*n = 0;
	if (rc == 0)
		crash_hook_batch(h);
	return rc;
}

int rm_counted(int rc, struct tree_op_result *r, uint64_t *used,
	       struct crash_hook *h)
{
	if (rc == 0) {
		r->processed++;
		(*used)++;
		crash_hook_batch(h);
	} else if (rc == -ENOENT) {
		r->skipped++;
		rc = 0;
	}
	return rc;
}

/* A node's xattrs that rm -r's batches take along (more: the node goes by
 * tree_unlink, which parks an inode whose drop does not fit one commit) */
#define RM_XATTRS_MAX 16

/* Reads into @xk the xattr keys of @ino with @xit, a snapshot iterator over
 * the drive's XATTR# keys, up to one past RM_XATTRS_MAX. Errors: -EIO. */
static int xattr_keys_of(struct tree *t, struct kv_iter *xit, uint64_t ino,
			 struct key_list *xk)
{
	struct sbuf k = {0};

	key_list_reset(xk);
	key_xattr(&k, t->name, ino, "");
	for (kv_iter_seek(xit, k.buf, k.len);
	     kv_iter_valid(xit) && xk->n <= RM_XATTRS_MAX; kv_iter_next(xit)) {
		size_t klen;
		const char *key = kv_iter_key(xit, &klen);

		if (klen < k.len || memcmp(key, k.buf, k.len))
			break;
		key_list_add(xk, key, klen);
	}
	sbuf_release(&k);
	return kv_iter_status(xit);
}

/*
 * Adds to @b the removal of plain file or symlink/FIFO node @np at @path
 * whose inode has no other link: the node, its blocks
 * (tree_batch_drop_blocks()) and its xattrs @xk (at most RM_XATTRS_MAX).
 * This is tree_batch_remove()'s last-link case without its two iterators
 * per file, which dominate an rm -r of many small files; only for a branch
 * no one writes to meanwhile (the offline tool, or the daemon's files that
 * are not open: open ones become orphans through tree_unlink()).
 */
static void rm_plain(struct tree *t, struct kv_batch *b, const char *path,
		     const struct node *np, const struct key_list *xk)
{
	struct sbuf k = {0};
	uint64_t ino = np->a.ino;

	key_node(&k, t->name, path);
	kv_batch_delete(b, k.buf, k.len);
	parent_batch_delete(t, b, ino);
	if (S_ISREG(np->a.mode))
		tree_batch_drop_blocks(t, b, ino, tree_content_end(&np->a));
	for (size_t i = 0; i < xk->n; i++) {
		size_t klen;
		const char *key = key_list_key(xk, i, &klen);

		kv_batch_delete(b, key, klen);
	}
	sbuf_release(&k);
}

/*
 * Removes the branch at @path in post-order, starting after @cursor (a path
 * relative to @path; NULL: from the start), at most @budget nodes (0: no
 * limit; *used counts them). On return *done tells whether the branch is
 * finished; if not, @cursor holds where to go on.
 */
static int rm_run(struct tree *t, const char *path, struct sbuf *cursor,
		  bool *started, uint64_t budget, uint64_t *used,
		  unsigned flags, struct tree_op_result *r,
		  struct crash_hook *h, bool *done)
{
	struct open_check oc = open_check_of(t);
	struct flags_dir_cache fc = {0};
	struct walk w;
	struct sbuf p = {0}, xlo = {0}, xhi = {0};
	struct key_list xk = {0};
	struct kv_iter *xit = NULL;
	struct kv_batch *b = kv_batch_new(t->store->kv);
	size_t n = 0, max_n = branch_batch_limit(t);
	uint64_t blocks = 0;
	int rc;

	*done = false;
	rc = walk_open(&w, t, path);
	if (rc)
		goto out;
	key_kind_range(&xlo, &xhi, t->name, KEY_XATTR);
	rc = kv_iter_open(&xit, t->store->kv, xlo.buf, xlo.len, xhi.buf,
			  xhi.len);
	if (rc)
		goto out;
	if (*started) {
		branch_join(&p, path, cursor->buf ? cursor->buf : "");
		rc = walk_post_next(&w, &p);
		if (rc == 0) {
			*done = true;
			goto out;
		}
	} else {
		sbuf_adds(&p, path);
		rc = walk_post_descend(&w, &p);
	}
	if (rc < 0)
		goto out;
	for (;;) {
		struct node nd = {0};
		const struct node *np = &nd;
		bool last = strcmp(p.buf, path) == 0, keep = false, kept;

		if (budget && *used >= budget) {
			rc = rm_flush(t, b, &n, h);
			goto out; /* the cursor names the last node handled */
		}
		if (w.have) { /* read by the walk */
			np = &w.n;
			rc = w.bad ? -EIO : 0;
		} else {
			rc = tree_get_node(t, p.buf, &nd, false);
		}
		if (rc == -ENOENT) {
			r->skipped++; /* removed by an earlier call */
			rc = 0;
		} else if (rc == -EIO) {
			op_fail(r, p.buf,
				"value does not decode; left in place");
			rc = 0;
		} else if (rc) {
			goto out_node;
		} else if ((rc = flags_dir_keeps(t, p.buf, &fc, &kept)) != 0) {
			goto out_node;
		} else if (!S_ISDIR(np->a.mode) && !tree_shared(t) &&
			   (rc = xattr_keys_of(t, xit, np->a.ino, &xk)) != 0) {
			goto out_node;
		} else if (S_ISDIR(np->a.mode) || kept || tree_shared(t) ||
			   (np->a.flags & (TREE_F_LINKED | TREE_F_PROTECT)) ||
			   !tree_content_fits(t, &np->a) ||
			   xk.n > RM_XATTRS_MAX ||
			   (keep = keep_orphan(&oc, flags, np->a.ino))) {
			/* alone, after the batch holding its children, or of
			 * the other links of its inode, is committed; every
			 * node of a shared writer (its change conditioned on
			 * what it read, tree_track: others work beside it); and
			 * an inode that may be open (KEEP_ORPHAN: the daemon;
			 * it may be written) under its stripe, by tree.c; and
			 * a file too big for one batch's drop (tree.c parks
			 * it and drops it in slices) */
			rc = rm_flush(t, b, &n, h);
			if (rc)
				goto out_node;
			if (!S_ISDIR(np->a.mode) && !keep)
				keep = keep_orphan(&oc, flags, np->a.ino);
			rc = S_ISDIR(np->a.mode)
				 ? tree_rmdir(t, p.buf)
				 : tree_unlink(t, p.buf,
					       keep ? TREE_KEEP_ORPHAN : 0,
					       NULL);
			rc = rm_counted(rc, r, used, h);
			if (rc == -ENOTEMPTY || rc == -EIO || rc == -EPERM)
				op_fail(r, p.buf, "%s", strerror(-rc));
			else if (rc)
				goto out_node;
			rc = 0;
		} else if (last) {
			rc = rm_flush(t, b, &n, h);
			if (rc == 0)
				rc = tree_unlink(
				    t, p.buf,
				    keep_orphan(&oc, flags, np->a.ino)
					? TREE_KEEP_ORPHAN
					: 0,
				    NULL);
			if (rc)
				goto out_node;
			r->processed++;
			(*used)++;
			crash_hook_batch(h);
		} else {
			if (!n) {
				pthread_mutex_lock(&t->ns_lock);
				blocks = 0; /* the batch's blocks */
			}
			n++;
			rm_plain(t, b, p.buf, np, &xk);
			blocks += tree_drop_keys(t, &np->a);
			r->processed++;
			(*used)++;
			/* the batch's own size: keys of nodes, blocks and
			 * xattrs alike, and its operations (half the
			 * engine's limit, so that one more node fits) */
			if (n >= max_n ||
			    kv_batch_bytes(b) >= branch_bytes_limit(t) ||
			    kv_batch_count(b) > tree_batch_max_ops(t) / 2 ||
			    blocks > tree_drop_slice(t))
				rc = rm_flush(t, b, &n, h);
		}
	out_node:
		node_release(&nd);
		if (rc)
			goto out;
		sbuf_reset(cursor);
		sbuf_adds(cursor, branch_rel(path, p.buf));
		*started = true;
		if (last) {
			*done = true;
			break;
		}
		rc = walk_post_next(&w, &p);
		if (rc < 0)
			goto out;
	}
	rc = rm_flush(t, b, &n, h);
out:
	if (n) { /* an error with removals pending: drop them */
		pthread_mutex_unlock(&t->ns_lock);
		n = 0;
	}
	walk_close(&w);
	flags_dir_cache_release(&fc);
	kv_iter_free(xit);
	kv_batch_free(b);
	key_list_release(&xk);
	sbuf_release(&p);
	sbuf_release(&xlo);
	sbuf_release(&xhi);
	return rc < 0 ? rc : 0;
}

int rm_branch(struct tree *t, const char *path, const struct node *nd,
	      struct sbuf *cursor, bool *started, uint64_t budget,
	      uint64_t *used, unsigned flags, struct tree_op_result *r,
	      struct crash_hook *h, bool *done)
{
	struct flags_dir_cache fc = {0};
	bool kept = false;
	int rc = 0;

	*done = false;
	/* a folder that stays (chattr +i, +a; or its folder's): the walk */
	if (S_ISDIR(nd->a.mode) && !(nd->a.flags & TREE_F_PROTECT) &&
	    strcmp(path, "/") != 0)
		rc = flags_dir_keeps(t, path, &fc, &kept);
	flags_dir_cache_release(&fc);
	if (rc)
		return rc;
	/* among shared writers each node goes by its own conditioned change
	 * (the walk): another writer may work in the branch meanwhile, and
	 * may have its files open (hold.c) */
	if (S_ISDIR(nd->a.mode) && !kept && !(nd->a.flags & TREE_F_PROTECT) &&
	    !tree_shared(t))
		rc = rm_batch(t, path, budget, used, flags, r, h, done);
	if (rc || *done)
		return rc;
	return rm_run(t, path, cursor, started, budget, used, flags, r, h,
		      done);
}

int tree_rm_r(struct tree *t, const char *path, uint64_t max_items,
	      const char *resume, unsigned flags, struct tree_op_result *r)
{
	struct token k = {0};
	struct crash_hook h;
	struct node nd = {0};
	uint64_t used = 0;
	bool done = false, started;
	int rc;

	memset(r, 0, sizeof(*r));
	crash_hook_init(&h);
	rc = path_check(path);
	if (rc)
		goto out;
	if (strcmp(path, "/") == 0) {
		rc = -EINVAL;
		goto out;
	}
	if (resume) {
		rc = token_check(t, resume, OP_RM, path, NULL, NULL, &k);
		if (rc)
			goto out;
	}
	rc = tree_get_node(t, path, &nd, false);
	if (rc == -ENOENT && resume) {
		rc = 0; /* finished by the call that crashed */
		goto out;
	}
	if (rc && rc != -EIO)
		goto out;
	if (rc == -EIO) {
		op_fail(r, path, "value does not decode");
		rc = 0;
		goto out;
	}
	k.op = OP_RM;
	started = k.flags & TOKEN_RM_STARTED;
	rc = rm_branch(t, path, &nd, &k.cursor, &started, max_items, &used,
		       flags & TREE_KEEP_ORPHAN, r, &h, &done);
	if (rc || done)
		goto out;
	sbuf_reset(&k.sdrive);
	sbuf_adds(&k.sdrive, t->name);
	sbuf_reset(&k.src);
	sbuf_adds(&k.src, path);
	sbuf_nul(&k.ddrive);
	sbuf_nul(&k.dst);
	k.phase = 1;
	k.flags = started ? TOKEN_RM_STARTED : 0;
	rc = token_issue(t, &k, r);
out:
	node_release(&nd);
	token_release(&k);
	return rc;
}
