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
#include "drive_i.h"

int walk_open(struct walk *w, struct tree *t, const char *root)
{
	memset(w, 0, sizeof(*w));
	w->t = t;
	w->root = root;
	return node_iter_open(&w->ni, t, NODES_BRANCH, root, NULL);
}

void walk_close(struct walk *w)
{
	node_release(&w->n);
	node_iter_close(&w->ni);
}

/*
 * Sets @out to the first child of @dir whose name is after @after (NULL:
 * the first child). Returns 1 if there is one, 0 if not, or -EIO.
 */
static int walk_child(struct walk *w, const char *dir, const char *after,
		      struct sbuf *out)
{
	int rc;

	node_iter_children(&w->ni, dir, after);
	rc = node_iter_next(&w->ni);
	if (rc <= 0)
		return rc;
	sbuf_reset(out);
	if (node_iter_path(&w->ni, out))
		return -EIO;
	node_release(&w->n);
	w->bad = node_iter_node(&w->ni, &w->n, true) != 0;
	w->have = true;
	return 1;
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
