/*
 * walk.c - a walk of one branch of a drive, node by node, in post-order
 * (children before their folder: rm -r) or pre-order (a folder before its
 * children: cp -r), with one snapshot iterator and seeks.
 *
 * Post-order: the next node after X is the deepest first descendant of X's
 * next sibling, or else X's parent. Pre-order: X's first child, or else the
 * next sibling of X or of its nearest ancestor that has one. Either needs
 * nothing but the last path handled, which need not exist any more: that is
 * what a resume token holds.
 *
 * Limits: the walk sees the branch as of walk_open() (a snapshot), except the
 * folders it goes up to, which are read as they are now.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "branch_i.h"

int walk_open(struct walk *w, struct tree *t, const char *root)
{
	struct sbuf pre = {0};
	int rc;

	memset(w, 0, sizeof(*w));
	w->t = t;
	w->root = root;
	key_drive_prefix(&pre, t->name);
	w->plen = pre.len;
	sbuf_release(&pre);
	key_subtree_range(&w->lo, &w->hi, t->name, root);
	rc = kv_iter_open(&w->it, t->store->kv, w->lo.buf, w->lo.len, w->hi.buf,
			  w->hi.len);
	return rc;
}

void walk_close(struct walk *w)
{
	node_release(&w->n);
	kv_iter_free(w->it);
	sbuf_release(&w->k);
	sbuf_release(&w->lo);
	sbuf_release(&w->hi);
}

/*
 * Sets @out to the first child of @dir whose name is after @after (NULL:
 * the first child). Returns 1 if there is one, 0 if not, or -EIO.
 */
static int walk_child(struct walk *w, const char *dir, const char *after,
		      struct sbuf *out)
{
	struct sbuf lo = {0}, hi = {0};
	const char *key;
	size_t klen;
	int rc = 0;

	key_children_range(&lo, &hi, w->t->name, dir);
	if (after) {
		sbuf_reset(&w->k);
		key_child(&w->k, w->t->name, dir, after, strlen(after));
		/* usually still there: the previous sibling, no seek */
		if (!kv_iter_valid(w->it) ||
		    (key = kv_iter_key(w->it, &klen), klen != w->k.len) ||
		    memcmp(key, w->k.buf, klen))
			kv_iter_seek(w->it, w->k.buf, w->k.len);
		if (kv_iter_valid(w->it)) {
			key = kv_iter_key(w->it, &klen);
			if (klen == w->k.len && !memcmp(key, w->k.buf, klen))
				kv_iter_next(w->it);
		}
	} else {
		kv_iter_seek(w->it, lo.buf, lo.len);
	}
	if (!kv_iter_valid(w->it)) {
		rc = kv_iter_status(w->it);
		goto out;
	}
	key = kv_iter_key(w->it, &klen);
	{
		size_t m = klen < hi.len ? klen : hi.len;
		int d = memcmp(key, hi.buf, m);

		if (d > 0 || (d == 0 && klen >= hi.len))
			goto out; /* past the children */
	}
	sbuf_reset(out);
	if (key_node_decode(key, klen, w->plen, out)) {
		rc = -EIO;
		goto out;
	}
	{
		size_t vlen;
		const char *val = kv_iter_value(w->it, &vlen);

		node_release(&w->n);
		w->bad = node_decode(val, vlen, &w->n, true) != 0;
		w->have = true;
	}
	rc = 1;
out:
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

/* Whether the current node certainly has no children (known, not a
 * folder): then the walk need not look for any. */
static bool walk_leaf(const struct walk *w)
{
	return w->have && !w->bad && !S_ISDIR(w->n.a.mode);
}

static void set_parent(struct sbuf *p)
{
	size_t n = path_parent_len(p->buf);

	p->len = n ? n : 1;
	p->buf[p->len] = '\0';
}

int walk_post_descend(struct walk *w, struct sbuf *p)
{
	struct sbuf c = {0};
	int rc = 0;

	while (!walk_leaf(w) && (rc = walk_child(w, p->buf, NULL, &c)) == 1) {
		sbuf_reset(p);
		sbuf_add(p, c.buf, c.len);
	}
	if (rc > 0)
		rc = 0;
	sbuf_release(&c);
	return rc;
}

int walk_post_next(struct walk *w, struct sbuf *p)
{
	struct sbuf c = {0}, dir = {0};
	int rc;

	if (strcmp(p->buf, w->root) == 0)
		return 0;
	sbuf_add(&dir, p->buf, p->len);
	set_parent(&dir);
	rc = walk_child(w, dir.buf, path_name(p->buf), &c);
	if (rc == 1) {
		sbuf_reset(p);
		sbuf_add(p, c.buf, c.len);
		rc = walk_post_descend(w, p);
		rc = rc < 0 ? rc : 1;
	} else if (rc == 0) {
		set_parent(p);
		w->have = false;
		rc = 1;
	}
	sbuf_release(&c);
	sbuf_release(&dir);
	return rc;
}

int walk_pre_next(struct walk *w, struct sbuf *p)
{
	struct sbuf c = {0};
	int rc;

	rc = walk_leaf(w) ? 0 : walk_child(w, p->buf, NULL, &c);
	while (rc == 0 && strcmp(p->buf, w->root) != 0) {
		struct sbuf dir = {0};

		sbuf_add(&dir, p->buf, p->len);
		set_parent(&dir);
		rc = walk_child(w, dir.buf, path_name(p->buf), &c);
		if (rc == 0) {
			sbuf_reset(p);
			sbuf_add(p, dir.buf, dir.len);
		}
		sbuf_release(&dir);
	}
	if (rc == 1) {
		sbuf_reset(p);
		sbuf_add(p, c.buf, c.len);
	}
	sbuf_release(&c);
	return rc;
}

const char *branch_rel(const char *root, const char *path)
{
	if (strcmp(root, "/") == 0)
		return strcmp(path, "/") == 0 ? "" : path;
	return path + strlen(root);
}

void branch_join(struct sbuf *out, const char *root, const char *rel)
{
	sbuf_reset(out);
	if (strcmp(root, "/") != 0 || !*rel)
		sbuf_adds(out, root);
	sbuf_adds(out, rel);
	sbuf_nul(out);
}

size_t branch_batch_limit(struct tree *t)
{
	return t->store->opt.rename_batch ? t->store->opt.rename_batch : 1024;
}

size_t branch_bytes_limit(struct tree *t)
{
	return t->store->opt.rename_bytes ? t->store->opt.rename_bytes
					  : 4 << 20;
}
