/*
 * rm_batch.c - rm -r of a whole branch in one batch, when it fits the
 * budget: one forward scan of the subtree range learns every node, then one
 * atomic batch
 * deletes the range [PATH#P/, PATH#P0) with one range delete, the node P
 * itself (its parent's nlink and times in the same batch, as tree_rmdir
 * does), and the content, xattrs and PARENT records (parent.c) of every
 * inode freed. Content keys are
 * keyed by inode, and inodes created together have consecutive numbers: a
 * run of at least RM_RUN_MIN consecutive numbers all freed by this batch
 * gets one range delete for its DATA# keys and one for its XATTR# keys (no
 * number inside the run belongs to anything that stays); the others get
 * deletes of their blocks (tree_batch_drop_blocks(), from their size) and
 * of the xattrs found by one forward pass over the XATTR# keys.
 *
 * Nodes that need more than a delete are removed one by one first, each in
 * its own batch by tree_unlink() (they have no children, so any order is
 * safe): hard-link stubs (the INODE record's count decides) and, with
 * TREE_KEEP_ORPHAN, files that may be open (all of them, or those the open
 * check registered with tree_set_open_check() says are).
 *
 * A crash leaves the branch as it was or gone: the batch is atomic. The walk
 * (rm.c) does the work instead when the branch is small (fewer than
 * RM_BATCH_MIN descendants: not worth a range tombstone), huge (more than
 * RM_BATCH_MAX: memory), larger than the budget, or holds a node that does
 * not decode or could not be removed (the walk reports it and keeps its
 * ancestors).
 *
 * Limits: holds 24 bytes per node of the branch in memory and a batch of a
 * point delete per content block of files whose inode numbers are not in
 * long runs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "batch_i.h"
#include "branch_i.h"
#include "content_i.h"
#include "drive_i.h"
#include "journal_i.h"
#include "parent_i.h"

#define RM_BATCH_MIN 64
#define RM_BATCH_MAX (1u << 20)
#define RM_RUN_MIN   64

struct rm_ent {
	uint64_t ino, size;
	mode_t mode;
};

struct rm_scan {
	struct rm_ent *ents; /* nodes freed by the batch */
	size_t n, cap;
	struct sbuf special; /* NUL-separated paths removed one by one */
	size_t nspecial;
	bool irregular; /* a node the walk must handle */
};

static void rm_scan_release(struct rm_scan *s)
{
	free(s->ents);
	sbuf_release(&s->special);
}

static int ent_cmp(const void *a, const void *b)
{
	const struct rm_ent *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/*
 * Scans the branch below @path: plain nodes into s->ents, the others'
 * paths into s->special. Stops early (s->irregular, or more than @limit
 * nodes: s->n + s->nspecial > limit). Errors: -EIO.
 */
static int rm_batch_scan(struct tree *t, const char *path, unsigned flags,
			 const struct open_check *oc, size_t limit,
			 struct rm_scan *s)
{
	struct node_iter ni;
	struct sbuf p = {0};
	int rc;

	rc = node_iter_open(&ni, t, NODES_BRANCH, path, NULL);
	while (rc == 0 && (rc = node_iter_next(&ni)) == 1) {
		struct node n = {0};
		bool keep;

		rc = 0;
		if (s->n + s->nspecial >= limit ||
		    node_iter_node(&ni, &n, false)) {
			s->irregular = true;
			goto out;
		}
		keep = !S_ISDIR(n.a.mode) && keep_orphan(oc, flags, n.a.ino);
		if (keep ||
		    (!S_ISDIR(n.a.mode) && (n.a.flags & TREE_F_LINKED))) {
			sbuf_reset(&p);
			if (node_iter_path(&ni, &p)) {
				s->irregular = true;
				goto out;
			}
			sbuf_addc(&s->special, keep ? 'k' : '-');
			sbuf_add(&s->special, p.buf, p.len + 1);
			s->nspecial++;
			continue;
		}
		if (s->n == s->cap) {
			s->cap = s->cap ? 2 * s->cap : 1024;
			s->ents = realloc(s->ents, s->cap * sizeof(*s->ents));
			if (!s->ents)
				abort();
		}
		s->ents[s->n].ino = n.a.ino;
		s->ents[s->n].size = S_ISREG(n.a.mode) ? n.a.size : 0;
		s->ents[s->n].mode = n.a.mode;
		s->n++;
	}
out:
	node_iter_close(&ni);
	sbuf_release(&p);
	return rc;
}

/* Adds to @b the deletes of the content, xattrs and PARENT records of the
 * inodes s->ents (sorted; all freed by @b): range deletes for long runs of consecutive
 * numbers, point deletes for the rest. Errors: -EIO. */
static int rm_batch_content(struct tree *t, struct kv_batch *b,
			    const struct rm_scan *s)
{
	struct sbuf k = {0}, hi = {0}, tmp = {0};
	struct kv_iter *xit = NULL;
	size_t i = 0, j;
	int rc;

	key_kind_range(&k, &hi, t->name, KEY_XATTR);
	rc = kv_iter_open(&xit, t->store->kv, k.buf, k.len, hi.buf, hi.len);
	if (rc)
		goto out;
	while (i < s->n) {
		for (j = i + 1;
		     j < s->n && s->ents[j].ino == s->ents[j - 1].ino + 1; j++)
			;
		if (j - i >= RM_RUN_MIN) {
			uint64_t first = s->ents[i].ino,
				 last = s->ents[j - 1].ino;

			/* no number in first..last belongs to a node that
			 * stays: [DATA#first#0, DATA#last$) and the same for
			 * XATTR# hold only keys of inodes freed here */
			sbuf_reset(&k);
			sbuf_reset(&tmp);
			key_data_range(&k, &tmp, t->name, first, 0);
			sbuf_reset(&tmp);
			sbuf_reset(&hi);
			key_data_range(&tmp, &hi, t->name, last, 0);
			kv_batch_delete_range(b, k.buf, k.len, hi.buf, hi.len);
			sbuf_reset(&k);
			sbuf_reset(&tmp);
			key_xattr_range(&k, &tmp, t->name, first);
			sbuf_reset(&tmp);
			sbuf_reset(&hi);
			key_xattr_range(&tmp, &hi, t->name, last);
			kv_batch_delete_range(b, k.buf, k.len, hi.buf, hi.len);
			sbuf_reset(&k);
			sbuf_reset(&hi);
			key_parent(&k, t->name, first);
			key_parent(&hi, t->name, last + 1);
			kv_batch_delete_range(b, k.buf, k.len, hi.buf, hi.len);
			i = j;
			continue;
		}
		for (; i < j; i++) {
			const struct rm_ent *e = &s->ents[i];

			/* size 0 for all but regular files: no blocks */
			tree_batch_drop_blocks(t, b, e->ino, e->size);
			parent_batch_delete(t, b, e->ino);
			/* xattrs: inodes come in ascending order, so the
			 * iterator only moves forward, and seeks only when it
			 * is still before this inode's keys */
			sbuf_reset(&k);
			key_xattr(&k, t->name, e->ino, "");
			if (kv_iter_valid(xit)) {
				size_t klen;
				const char *key = kv_iter_key(xit, &klen);
				int d = memcmp(key, k.buf,
					       klen < k.len ? klen : k.len);

				if (d < 0 || (d == 0 && klen < k.len))
					kv_iter_seek(xit, k.buf, k.len);
			}
			for (; kv_iter_valid(xit); kv_iter_next(xit)) {
				size_t klen;
				const char *key = kv_iter_key(xit, &klen);

				if (klen < k.len || memcmp(key, k.buf, k.len))
					break;
				kv_batch_delete(b, key, klen);
			}
		}
	}
	rc = kv_iter_status(xit);
out:
	kv_iter_free(xit);
	sbuf_release(&k);
	sbuf_release(&hi);
	sbuf_release(&tmp);
	return rc;
}

int rm_batch(struct tree *t, const char *path, uint64_t budget, uint64_t *used,
	     unsigned flags, struct tree_op_result *r, struct journal_hook *h,
	     bool *done)
{
	struct open_check oc = open_check_of(t);
	struct rm_scan s = {0};
	struct node n = {0}, pn = {0};
	struct sbuf lo = {0}, hi = {0}, parent = {0};
	struct kv_batch *b = NULL;
	size_t limit = RM_BATCH_MAX, pl;
	uint64_t ino = 0, pino = 0;
	bool ns = false;
	int64_t now;
	int rc = 0;

	*done = false;
	if (budget) {
		if (budget <= *used + RM_BATCH_MIN)
			goto out;
		if (budget - *used - 1 < limit)
			limit = (size_t)(budget - *used - 1);
	}
	rc = rm_batch_scan(t, path, flags, &oc, limit, &s);
	if (rc || s.irregular || s.n + s.nspecial < RM_BATCH_MIN)
		goto out;
	/* first the nodes that need more than a delete (no children) */
	for (const char *p = s.special.buf; s.nspecial; s.nspecial--) {
		bool keep = *p++ == 'k';

		rc = rm_counted(
		    tree_unlink(t, p, keep ? TREE_KEEP_ORPHAN : 0, NULL), r,
		    used, h);
		if (rc == -EIO || rc == -EISDIR || rc == -ENOTDIR) {
			rc = 0; /* the walk reports it */
			goto out;
		} else if (rc) {
			goto out;
		}
		p += strlen(p) + 1;
	}
	qsort(s.ents, s.n, sizeof(*s.ents), ent_cmp);
	/* then everything else, under the locks tree_rmdir takes */
	pl = path_parent_len(path);
	sbuf_add(&parent, pl ? path : "/", pl ? pl : 1);
	pthread_mutex_lock(&t->ns_lock);
	ns = true;
	rc = tree_get_node(t, path, &n, false);
	if (rc == 0)
		rc = tree_get_node(t, parent.buf, &pn, false);
	if (rc == -ENOENT || rc == -EIO || (rc == 0 && !S_ISDIR(n.a.mode))) {
		rc = 0; /* the walk finds out */
		goto out;
	}
	if (rc)
		goto out;
	ino = n.a.ino;
	pino = pn.a.ino;
	tree_lock_inodes(t, ino, pino, 0, 0);
	node_release(&n);
	rc = tree_get_node(t, path, &n, true); /* fresh, under the stripe */
	if (rc)
		goto out;
	now = tree_now_ns();
	b = kv_batch_new(t->store->kv);
	key_subtree_range(&lo, &hi, t->name, path);
	kv_batch_delete_range(b, lo.buf, lo.len, hi.buf, hi.len);
	rc = tree_batch_remove(t, b, path, &n, 0, NULL, now);
	if (rc == 0)
		rc = tree_batch_dir_touch(t, b, parent.buf, -1, now);
	if (rc == 0)
		rc = rm_batch_content(t, b, &s);
	if (rc == 0)
		rc = tree_commit(t, b);
	if (rc)
		goto out;
	journal_hook_batch(h);
	r->processed += s.n + 1;
	*used += s.n + 1;
	*done = true;
out:
	if (ino)
		tree_unlock_inodes(t, ino, pino, 0, 0);
	if (ns)
		pthread_mutex_unlock(&t->ns_lock);
	kv_batch_free(b);
	node_release(&n);
	node_release(&pn);
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&parent);
	rm_scan_release(&s);
	return rc;
}
