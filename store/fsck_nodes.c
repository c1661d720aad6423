/*
 * fsck_nodes.c - fsck's pass over the nodes (fsck_i.h): every node key well
 * formed and every value decoding, the root, each node's parent a folder, a
 * folder's nlink 2 + its sub-folders, each node's PARENT record; it collects
 * the inode numbers of nodes and stubs and the sizes of files for
 * fsck_content.c.
 *
 * Limits: one pass over the nodes plus one children scan per folder (on a
 * second iterator); nodes under an unfinished rename or clone are not
 * checked for parents and nlink.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch_i.h"
#include "drive_i.h"
#include "fsck_i.h"
#include "parent_i.h"

/* ---- nodes -------------------------------------------------------------- */

/* Number of sub-folders of @dir, through node iterator @cit. */
static int count_subdirs(struct fsck *f, struct node_iter *cit, const char *dir,
			 uint32_t *count)
{
	uint32_t n = 0;
	int rc;

	node_iter_children(cit, dir, NULL);
	while ((rc = node_iter_next(cit)) == 1) {
		struct node c = {0};

		if (node_iter_node(cit, &c, false) == 0 && S_ISDIR(c.a.mode))
			n++;
		node_release(&c);
	}
	*count = n;
	return rc;
}

void fsck_fix_nlink(struct fsck *f, const char *path, uint64_t ino,
		    uint32_t nlink)
{
	struct tree *t = f->t;
	struct attr_ref ref = {0};
	struct kv_batch *b = kv_batch_new(f->t->store->kv);
	int rc;

	pthread_mutex_lock(&t->ns_lock);
	tree_lock_inodes(t, ino, 0, 0, 0);
	rc = tree_attr_load(t, path, ino, &ref);
	if (rc == 0) {
		ref.n.a.nlink = nlink;
		tree_attr_store(t, b, &ref);
		rc = fsck_repair_commit(f, b);
	}
	tree_unlock_inodes(t, ino, 0, 0, 0);
	pthread_mutex_unlock(&t->ns_lock);
	if (rc)
		fsck_finding(f, "repair of inode %llu failed: %s",
			     (unsigned long long)ino, strerror(-rc));
	attr_ref_release(&ref);
	kv_batch_free(b);
}

/* Checks that the parent of @path exists and is a folder; the last answer
 * (and the parent's inode, *last_ino) is cached since siblings come together
 * in key order. */
static void check_parent(struct fsck *f, const char *path, struct sbuf *last,
			 int *last_rc, uint64_t *last_ino)
{
	char *parent = path_parent(path);
	char *ep, *epar;

	if (!(last->len == strlen(parent) && last->buf &&
	      strcmp(last->buf, parent) == 0)) {
		struct node pn = {0};
		int rc = tree_get_node(f->t, parent, &pn, false);

		if (rc == 0 && !S_ISDIR(pn.a.mode))
			rc = -ENOTDIR;
		*last_ino = rc ? 0 : pn.a.ino;
		node_release(&pn);
		sbuf_reset(last);
		sbuf_adds(last, parent);
		*last_rc = rc;
	}
	if (*last_rc) {
		ep = tree_escape(path, strlen(path), 0);
		epar = tree_escape(parent, strlen(parent), 0);
		fsck_finding(f, "%s: parent %s %s", ep, epar,
			     *last_rc == -ENOTDIR  ? "is not a folder"
			     : *last_rc == -ENOENT ? "is missing"
						   : "does not decode");
		free(ep);
		free(epar);
	}
	free(parent);
}

/* Checks the PARENT record of node @ino at @path, a child of folder inode
 * @pino, and with repair writes it right. */
static void check_parent_record(struct fsck *f, const char *path, uint64_t ino,
				uint64_t pino)
{
	struct tree *t = f->t;
	struct sbuf name = {0};
	uint64_t rp = 0;
	int rc = parent_get(t, ino, &rp, &name);
	char *ep;

	if (rc == 0 && rp == pino && !strcmp(name.buf, path_name(path)))
		goto out;
	ep = tree_escape(path, strlen(path), 0);
	if (rc == 0) {
		char *en = tree_escape(name.buf, name.len, 0);

		fsck_finding(f, "%s: PARENT#%016llx names %llu/%s%s", ep,
			     (unsigned long long)ino, (unsigned long long)rp,
			     en, f->repair ? " (repaired)" : "");
		free(en);
	} else {
		fsck_finding(f,
			     "%s: PARENT#%016llx %s (the inode cannot be found "
			     "by number)%s",
			     ep, (unsigned long long)ino,
			     rc == -ENOENT ? "is missing" : "does not decode",
			     f->repair ? " (repaired)" : "");
	}
	free(ep);
	if (f->repair) {
		struct kv_batch *b = kv_batch_new(t->store->kv);

		pthread_mutex_lock(&t->ns_lock);
		parent_batch_put(t, b, ino, pino, path);
		rc = fsck_repair_commit(f, b);
		pthread_mutex_unlock(&t->ns_lock);
		kv_batch_free(b);
		if (rc)
			fsck_finding(f, "repair of inode %llu failed: %s",
				     (unsigned long long)ino, strerror(-rc));
	}
out:
	sbuf_release(&name);
}

int fsck_check_nodes(struct fsck *f)
{
	struct tree *t = f->t;
	struct sbuf path = {0}, last = {0};
	struct node_iter it = {0}, cit = {0};
	bool root = false;
	int last_rc = 0, rc;
	uint64_t last_ino = 0;

	rc = node_iter_open(&it, t, NODES_ALL, NULL, NULL);
	if (rc == 0)
		rc = node_iter_open(&cit, t, NODES_ALL, NULL, NULL);
	while (rc == 0 && (rc = node_iter_next(&it)) == 1) {
		struct node n = {0};
		bool busy;
		char *ep;

		rc = 0;
		sbuf_reset(&path);
		if (node_iter_path(&it, &path) || path_check(path.buf)) {
			ep = tree_escape(it.key, it.klen, 0);
			fsck_finding(f, "%s: malformed node key", ep);
			free(ep);
			continue;
		}
		busy = is_busy(f, path.buf);
		if (strcmp(path.buf, "/") == 0)
			root = true;
		else if (!busy)
			check_parent(f, path.buf, &last, &last_rc, &last_ino);
		ep = tree_escape(path.buf, path.len, 0);
		if (node_iter_node(&it, &n, false)) {
			fsck_finding(f, "%s: value does not decode (%zu bytes)",
				     ep, it.vlen);
			f->bad_nodes++;
			free(ep);
			continue;
		}
		see_ino(f, n.a.ino);
		if (busy && is_copy(f, path.buf)) {
			/* the same inodes as the source's nodes */
		} else if (n.a.flags & TREE_F_LINKED) {
			fsck_vec_push(&f->stubs, n.a.ino);
		} else {
			fsck_vec_push(&f->nodes, n.a.ino);
			if (!busy && last_ino && has_index(f) &&
			    strcmp(path.buf, "/") && !last_rc)
				check_parent_record(f, path.buf, n.a.ino,
						    last_ino);
			if (S_ISREG(n.a.mode))
				fsck_size_push(&f->sizes, &n.a);
		}
		if (S_ISDIR(n.a.mode) && !busy) {
			uint32_t sub;

			rc = count_subdirs(f, &cit, path.buf, &sub);
			if (rc)
				goto next;
			if (n.a.nlink != 2 + sub) {
				fsck_finding(f,
					     "%s: folder nlink %u, expected %u "
					     "(2 + %u sub-folders)%s",
					     ep, n.a.nlink, 2 + sub, sub,
					     f->repair ? " (repaired)" : "");
				if (f->repair)
					fsck_fix_nlink(f, path.buf, n.a.ino,
						       2 + sub);
			}
		}
	next:
		free(ep);
		node_release(&n);
		if (rc)
			goto out;
	}
	if (rc == 0 && !root)
		fsck_finding(f, "/: the root folder is missing");
out:
	node_iter_close(&it);
	node_iter_close(&cit);
	sbuf_release(&path);
	sbuf_release(&last);
	fsck_vec_sort(&f->nodes);
	fsck_vec_sort(&f->stubs);
	return rc;
}
