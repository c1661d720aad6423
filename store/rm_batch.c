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
 * A crash leaves the branch as it was or gone: the batch is atomic.
 *
 * Slices: on an engine where a range delete of many keys stalls (etcd,
 * kv_range_keys(): 1,016 keys), a branch whose nodes and PARENT records
 * pass that goes in slices, each one batch that leaves the drive whole: a
 * key-order prefix of the branch holding no folder (files only: removing
 * them leaves no node without its folder), at most kv_range_keys() keys and
 * fewer when their content's deletes would not fit a batch; when a folder
 * comes first, its own branch goes first (rm_branch(), recursively). What
 * is left then fits the one batch above. A crash between slices leaves a
 * smaller branch, which rm -r (or its token) finishes.
 *
 * The walk (rm.c) does the work instead when the branch is small (fewer
 * than RM_BATCH_MIN descendants: not worth a range tombstone), huge (more
 * than RM_BATCH_MAX: memory), larger than the budget (with a budget, past
 * a slice too), past the engine's limits in operations, or holds a node
 * that does not decode or could not be removed (the walk reports it and
 * keeps its ancestors).
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
#include "crash_hook_i.h"
#include "drive_i.h"
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
	/* slices (max_keys < SIZE_MAX): the scan stops once the nodes seen
	 * take more than max_keys keys (s->sliced). The slice is the nodes
	 * before cut, none of them a folder: the first cut_n ents and
	 * cut_nspecial specials; dir: the first folder seen (cut is its key
	 * then), whose branch goes first when no node precedes it */
	size_t max_keys, keys;
	bool sliced;
	struct sbuf cut, dir;
	size_t cut_n, cut_nspecial;
	struct sbuf ekeys; /* slicing: the ents' node keys, */
	size_t *koff;	   /* ents[i]'s at koff[i] */
};

static void rm_scan_release(struct rm_scan *s)
{
	free(s->ents);
	sbuf_release(&s->special);
	sbuf_release(&s->cut);
	sbuf_release(&s->dir);
	sbuf_release(&s->ekeys);
	free(s->koff);
}

/* Empties @s for another scan with the same max_keys. */
static void rm_scan_reset(struct rm_scan *s)
{
	size_t max = s->max_keys;

	rm_scan_release(s);
	memset(s, 0, sizeof(*s));
	s->max_keys = max;
}

/*
 * Slicing, at each node of the scan (@p its path, @dir whether a folder):
 * a key order prefix of the branch holding no folder can go on its own
 * (removing files never leaves a node without its folder; the folders'
 * nodes sort apart from their children: keys_i.h), so the cut is set at
 * the first folder, or at the node past max_keys (a node's @cost: its
 * node, its PARENT record and the blocks the batch drops for it). Returns
 * true when the scan stops there (s->sliced).
 */
static bool rm_scan_cut(struct rm_scan *s, const struct node_iter *ni,
			const struct sbuf *p, bool dir, uint64_t cost)
{
	bool past = s->keys + cost > s->max_keys;

	if (s->max_keys == SIZE_MAX || (s->dir.len && !past))
		return false;
	if (!s->dir.len) {
		sbuf_reset(&s->cut);
		sbuf_add(&s->cut, ni->key, ni->klen);
		s->cut_n = s->n;
		s->cut_nspecial = s->nspecial;
		if (dir)
			sbuf_add(&s->dir, p->buf, p->len + 1);
	}
	return s->sliced = past;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct rm_ent *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/*
 * Scans the branch below @path: plain nodes into s->ents, the others'
 * paths into s->special. Stops early (s->irregular, or more than @limit
 * nodes: s->n + s->nspecial > limit; or s->sliced, rm_scan_cut()).
 * Errors: -EIO.
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
		bool keep, special;
		uint64_t cost;

		rc = 0;
		if (s->n + s->nspecial >= limit ||
		    node_iter_node(&ni, &n, false) ||
		    (n.a.flags & (TREE_F_IMMUTABLE | TREE_F_APPEND))) {
			/* chattr +i or +a: the walk says what stays */
			s->irregular = true;
			goto out;
		}
		keep = !S_ISDIR(n.a.mode) && keep_orphan(oc, flags, n.a.ino);
		/* tree_unlink() parks a file too big for one batch's drop
		 * and drops it in slices */
		special = keep ||
			  (!S_ISDIR(n.a.mode) && (n.a.flags & TREE_F_LINKED)) ||
			  !tree_content_fits(t, &n.a);
		cost = 2 + (special ? 0 : tree_drop_keys(t, &n.a));
		if (special || s->max_keys != SIZE_MAX) {
			sbuf_reset(&p);
			if (node_iter_path(&ni, &p)) {
				s->irregular = true;
				goto out;
			}
		}
		if (rm_scan_cut(s, &ni, &p, S_ISDIR(n.a.mode), cost))
			goto out;
		s->keys += cost;
		if (special) {
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
			if (s->max_keys != SIZE_MAX) {
				s->koff =
				    realloc(s->koff, s->cap * sizeof(*s->koff));
				if (!s->koff)
					abort();
			}
		}
		if (s->max_keys != SIZE_MAX) {
			s->koff[s->n] = s->ekeys.len;
			sbuf_add(&s->ekeys, ni.key, ni.klen);
		}
		s->ents[s->n].ino = n.a.ino;
		s->ents[s->n].size =
		    S_ISREG(n.a.mode) ? tree_content_end(&n.a) : 0;
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
	rc =
	    kv_iter_open_keys(&xit, t->store->kv, k.buf, k.len, hi.buf, hi.len);
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

/*
 * Removes the first @count nodes of s->special one by one (tree_unlink).
 * Returns 1 when the walk must take over (a node it reports), 0, or an
 * error.
 */
static int rm_specials(struct tree *t, const struct rm_scan *s, size_t count,
		       struct tree_op_result *r, uint64_t *used,
		       struct crash_hook *h)
{
	const char *p = s->special.buf;

	for (; count; count--) {
		bool keep = *p++ == 'k';
		int rc = rm_counted(
		    tree_unlink(t, p, keep ? TREE_KEEP_ORPHAN : 0, NULL), r,
		    used, h);

		if (rc == -EIO || rc == -EISDIR || rc == -ENOTDIR ||
		    rc == -EPERM)
			return 1; /* the walk reports it */
		if (rc)
			return rc;
		p += strlen(p) + 1;
	}
	return 0;
}

/* An upper bound of the operations rm_batch_content() adds for @ents
 * (@n, sorted by number): xattrs are guessed at one an inode. */
static size_t rm_content_ops(const struct tree *t, const struct rm_ent *ents,
			     size_t n)
{
	size_t ops = 0, i = 0, j;

	while (i < n) {
		for (j = i + 1; j < n && ents[j].ino == ents[j - 1].ino + 1;
		     j++)
			;
		if (j - i >= RM_RUN_MIN) {
			ops += 3;
			i = j;
			continue;
		}
		for (; i < j; i++) {
			uint64_t bs = t->block_size, sz = ents[i].size;
			uint64_t nblk = sz / bs + (sz % bs != 0);

			ops += 2 + (nblk > 256 ? 1 : (size_t)nblk);
		}
	}
	return ops;
}

/*
 * Commits the slice of @s (s->sliced) of the branch at @path: the nodes
 * before s->cut, none a folder, with their inodes' content, xattrs and
 * PARENT records, in one batch (the folders keep their times, as in the
 * walk); fewer of them when their deletes would not fit one batch (the
 * cut is then the first node left). Returns 1 when the walk must take
 * over, 0, or an error.
 */
static int rm_slice(struct tree *t, const char *path, struct rm_scan *s,
		    struct tree_op_result *r, uint64_t *used,
		    struct crash_hook *h)
{
	struct rm_scan part = *s;
	struct kv_batch *b = NULL;
	struct sbuf lo = {0}, hi = {0};
	size_t k = s->cut_n, max = tree_batch_max_ops(t) - 8;
	struct rm_ent *ents = malloc((k ? k : 1) * sizeof(*ents));
	int rc;

	if (!ents)
		abort();
	rc = rm_specials(t, s, s->cut_nspecial, r, used, h);
	if (rc)
		goto out;
	/* the slice's ents, sorted by number; halved until they fit */
	for (;;) {
		if (k) /* none: s->ents may be NULL */
			memcpy(ents, s->ents, k * sizeof(*ents));
		qsort(ents, k, sizeof(*ents), ent_cmp);
		if (k <= 1 || rm_content_ops(t, ents, k) <= max)
			break;
		k /= 2;
	}
	if (k < s->cut_n) { /* the cut moves to ents[k]'s key */
		size_t end = k + 1 < s->n ? s->koff[k + 1] : s->ekeys.len;

		sbuf_reset(&s->cut);
		sbuf_add(&s->cut, s->ekeys.buf + s->koff[k], end - s->koff[k]);
	}
	part.ents = ents;
	part.n = k;
	b = kv_batch_new(t->store->kv);
	key_subtree_range(&lo, &hi, t->name, path);
	kv_batch_delete_range(b, lo.buf, lo.len, s->cut.buf, s->cut.len);
	pthread_mutex_lock(&t->ns_lock);
	rc = rm_batch_content(t, b, &part);
	if (rc == 0 && kv_batch_count(b) > tree_batch_max_ops(t))
		rc = -E2BIG; /* not sent: the engine would refuse it */
	else if (rc == 0)
		rc = tree_commit(t, b);
	pthread_mutex_unlock(&t->ns_lock);
	if (rc == 0) {
		crash_hook_batch(h);
		r->processed += part.n;
		*used += part.n;
	}
out:
	free(ents);
	kv_batch_free(b);
	sbuf_release(&lo);
	sbuf_release(&hi);
	/* a batch past the limits (more xattrs than guessed): the walk */
	return rc == -EIO || rc == -E2BIG ? 1 : rc;
}

/*
 * Removes the branch of folder s->dir first (rm_branch(): in one batch,
 * in slices, or by the walk). Returns 1 when it is still there (the walk
 * must take over), 0, or an error.
 */
static int rm_subdir(struct tree *t, struct rm_scan *s, unsigned flags,
		     struct tree_op_result *r, uint64_t *used,
		     struct crash_hook *h)
{
	struct sbuf cursor = {0};
	struct node nd = {0};
	bool started = false, done = false;
	int rc;

	sbuf_nul(&cursor);
	rc = tree_get_node(t, s->dir.buf, &nd, false);
	if (rc == 0)
		rc = rm_branch(t, s->dir.buf, &nd, &cursor, &started, 0, used,
			       flags, r, h, &done);
	node_release(&nd);
	if (rc == 0 &&
	    (!done || tree_get_node(t, s->dir.buf, &nd, false) != -ENOENT))
		rc = 1; /* still there: the walk reports why */
	node_release(&nd);
	sbuf_release(&cursor);
	return rc == -ENOENT || rc == -EIO ? 1 : rc;
}

uint64_t tree_rm_batch_max(void)
{
	return RM_BATCH_MAX;
}

int rm_batch(struct tree *t, const char *path, uint64_t budget, uint64_t *used,
	     unsigned flags, struct tree_op_result *r, struct crash_hook *h,
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
	/* slices on an engine that wants them (kv_range_keys); within a
	 * budget (--max-items) a branch past that goes the walk instead */
	s.max_keys = budget ? SIZE_MAX : kv_range_keys(t->store->kv);
	if (budget) {
		if (kv_range_keys(t->store->kv) / 2 < limit)
			limit = kv_range_keys(t->store->kv) / 2;
		if (budget <= *used + RM_BATCH_MIN)
			goto out;
		if (budget - *used - 1 < limit)
			limit = (size_t)(budget - *used - 1);
	}
again:
	rc = rm_batch_scan(t, path, flags, &oc, limit, &s);
	if (rc || s.irregular)
		goto out;
	if (s.sliced) {
		/* past a slice: files first, else the first folder's branch */
		rc = s.cut_n + s.cut_nspecial
			 ? rm_slice(t, path, &s, r, used, h)
			 : rm_subdir(t, &s, flags, r, used, h);
		if (rc)
			goto out; /* 1: the walk takes the rest */
		rm_scan_reset(&s);
		goto again;
	}
	if (s.n + s.nspecial < RM_BATCH_MIN)
		goto out;
	/* first the nodes that need more than a delete (no children) */
	rc = rm_specials(t, &s, s.nspecial, r, used, h);
	if (rc)
		goto out; /* 1: the walk takes the rest */
	if (s.n)	  /* none: s.ents may be NULL */
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
	if (rc == 0 && kv_batch_count(b) > tree_batch_max_ops(t))
		rc = -E2BIG; /* not sent: the engine would refuse it */
	else if (rc == 0)
		rc = tree_commit(t, b);
	if (rc == -E2BIG && kv_range_keys(t->store->kv) != SIZE_MAX) {
		rc = 0; /* past the engine's limits (etcd): the walk */
		goto out;
	}
	if (rc)
		goto out;
	crash_hook_batch(h);
	r->processed += s.n + 1;
	*used += s.n + 1;
	*done = true;
out:
	if (rc == 1)
		rc = 0;
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
