/*
 * dir.c - the node iterator (node_i.h) and the streaming listings built on
 * it: the children of a folder (one children-range scan, PATH#<dir>//) and
 * every descendant of a folder (one subtree-range scan, [PATH#<dir>/,
 * PATH#<dir>0)).
 *
 * Both read one kv iterator snapshot with bounds, so memory stays flat
 * for any folder size, and a listing resumes after a name (tree_dir_open's
 * @after) by seeking to the first key past that child: entries added or
 * removed between two calls never make another entry appear twice or vanish.
 * The name / path buffers are reused across entries: no allocation per entry
 * once they have grown. A value that does not decode is returned with mode 0
 * and logged, so one bad record never stops a listing.
 *
 * A listing reads its first entry at open: one that has an entry needs no
 * read of the folder's own record to know it is a folder (only folders have
 * children), so a listing costs one range read on etcd, not two; an empty
 * one from the start reads the record (empty folder, -ENOENT or -ENOTDIR),
 * and a resumed one that finds nothing more simply ends.
 *
 * Limits: tree_dir_next resolves hard-link stubs with one extra point read
 * each; tree_scan_next does not (the caller decides). Entries come in byte
 * order of keys, which for a subtree is not parent-before-child order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crash_hook_i.h"
#include "drive_i.h"
#include "log.h"

struct tree_dir {
	struct tree *t;
	struct node_iter ni;
	struct sbuf name;
	struct sbuf key; /* for INODE reads */
	int first;	 /* node_iter_next()'s answer at open: 1 an entry,
			  * 0 none; -1 once tree_dir_next() has taken it */
	bool pinned;	 /* tree_dir_open_checked() pinned the store */
};

struct tree_scan {
	struct tree *t;
	struct node_iter ni;
	struct sbuf path;
};

/* ---- the node iterator (node_i.h) --------------------------------------- */

static bool key_eq(const char *a, size_t alen, const struct sbuf *b)
{
	return alen == b->len && memcmp(a, b->buf, alen) == 0;
}

int node_iter_open(struct node_iter *ni, struct tree *t, enum node_range range,
		   const char *dir, const char *after)
{
	struct sbuf lo = {0}, hi = {0};
	int rc;

	memset(ni, 0, sizeof(*ni));
	ni->drive = t->name;
	key_drive_prefix(&lo, t->name);
	ni->plen = lo.len;
	sbuf_reset(&lo);
	switch (range) {
	case NODES_CHILDREN:
		key_children_range(&lo, &hi, t->name, dir);
		ni->name_at = lo.len;
		if (after) {
			/* the first key past child @after: names hold no NUL,
			 * so <key of after> + "\0" is its immediate successor */
			sbuf_adds(&lo, after);
			sbuf_addc(&lo, '\0');
		}
		break;
	case NODES_BRANCH:
		key_subtree_range(&lo, &hi, t->name, dir);
		if (strcmp(dir, "/") == 0) /* "/" itself is in its range */
			key_node(&ni->skip, t->name, "/");
		break;
	case NODES_ALL:
		key_kind_range(&lo, &hi, t->name, KEY_PATH);
		break;
	}
	rc =
	    kv_iter_open(&ni->it, t->store->kv, lo.buf, lo.len, hi.buf, hi.len);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

int node_iter_next(struct node_iter *ni)
{
	for (;;) {
		if (ni->started)
			kv_iter_next(ni->it);
		ni->started = true;
		if (!kv_iter_valid(ni->it))
			return kv_iter_status(ni->it);
		ni->key = kv_iter_key(ni->it, &ni->klen);
		if (ni->end.len) {
			size_t m =
			    ni->klen < ni->end.len ? ni->klen : ni->end.len;
			int d = memcmp(ni->key, ni->end.buf, m);

			if (d > 0 || (d == 0 && ni->klen >= ni->end.len))
				return 0; /* past the children */
		}
		if (ni->skip.len && key_eq(ni->key, ni->klen, &ni->skip))
			continue;
		ni->val = kv_iter_value(ni->it, &ni->vlen);
		return 1;
	}
}

int node_iter_path(const struct node_iter *ni, struct sbuf *path)
{
	return key_node_decode(ni->key, ni->klen, ni->plen, path);
}

int node_iter_node(const struct node_iter *ni, struct node *n, bool want_target)
{
	return node_decode(ni->val, ni->vlen, n, want_target);
}

void node_iter_children(struct node_iter *ni, const char *dir,
			const char *after)
{
	struct sbuf lo = {0};

	sbuf_reset(&ni->end);
	key_children_range(&lo, &ni->end, ni->drive, dir);
	if (after) {
		const char *key;
		size_t klen;

		sbuf_reset(&ni->k);
		key_child(&ni->k, ni->drive, dir, after, strlen(after));
		/* usually still there: the previous sibling, no seek */
		if (!kv_iter_valid(ni->it) || (key = kv_iter_key(ni->it, &klen),
					       !key_eq(key, klen, &ni->k)))
			kv_iter_seek(ni->it, ni->k.buf, ni->k.len);
		if (kv_iter_valid(ni->it)) {
			key = kv_iter_key(ni->it, &klen);
			if (key_eq(key, klen, &ni->k))
				kv_iter_next(ni->it);
		}
	} else {
		kv_iter_seek(ni->it, lo.buf, lo.len);
	}
	ni->started = false; /* it stands on the first candidate */
	sbuf_release(&lo);
}

void node_iter_close(struct node_iter *ni)
{
	kv_iter_free(ni->it);
	ni->it = NULL;
	sbuf_release(&ni->skip);
	sbuf_release(&ni->end);
	sbuf_release(&ni->k);
}

/* ---- listings ----------------------------------------------------------- */

/* Checks that @path is a folder. Errors: -ENOENT, -ENOTDIR, -EINVAL, -EIO. */
static int check_dir(struct tree *t, const char *path)
{
	struct node n = {0};
	int rc;

	rc = path_check(path);
	if (rc)
		return rc;
	rc = tree_get_node(t, path, &n, false);
	if (rc == 0 && !S_ISDIR(n.a.mode))
		rc = -ENOTDIR;
	node_release(&n);
	return rc;
}

/* Decodes the value of the current entry into @attr (mode 0 if corrupt). */
static void decode_entry(const struct node_iter *ni, struct tree_attr *attr)
{
	struct node n;

	if (node_iter_node(ni, &n, false)) {
		plog(LOG_ERR, "corrupt node value at key %.*s", (int)ni->klen,
		     ni->key);
		memset(attr, 0, sizeof(*attr));
		return;
	}
	*attr = n.a;
}

/* tree_dir_open(), and with @checked a pin (kv_pin) begun by a read of the
 * folder's record, when the engine's iterators are not of one moment */
static int dir_open(struct tree_dir **out, struct tree *t, const char *path,
		    const char *after, bool checked)
{
	struct tree_dir *d = NULL;
	bool read = false; /* the folder's record was read */
	int rc;

	*out = NULL;
	rc = path_check(path);
	if (rc)
		goto out;
	if (after && after[0]) {
		size_t n = strlen(after);

		if (n > TREE_NAME_MAX || memchr(after, '/', n)) {
			rc = -EINVAL;
			goto out;
		}
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		rc = -ENOMEM;
		goto out;
	}
	d->t = t;
	if (checked && !kv_iters_one_moment(t->store->kv)) {
		/* every commit that changes the folder's children rewrites
		 * its record (tree_batch_dir_touch): read first, the pin
		 * reads it again at tree_dir_check(); a sole writer's pin
		 * needs no read while its own commits leave it alone */
		kv_pin(t->store->kv);
		d->pinned = true;
	}
	if (d->pinned && kv_pin_needs_record(t->store->kv)) {
		read = true;
		rc = check_dir(t, path);
		crash_hook_read_pause();
		/* a resumed listing of a folder gone meanwhile finds none */
		if (rc &&
		    !(after && after[0] && (rc == -ENOENT || rc == -ENOTDIR)))
			goto out;
	}
	rc = node_iter_open(&d->ni, t, NODES_CHILDREN, path,
			    after && after[0] ? after : NULL);
	if (rc)
		goto out;
	/* an entry says @path is a folder (only folders have children); a
	 * listing resumed after a name that finds none ends, even if the
	 * folder went away meanwhile; one from the start must tell an empty
	 * folder from no folder */
	d->first = node_iter_next(&d->ni);
	if (d->first < 0) {
		rc = -EIO;
		goto out;
	}
	if (!d->first && !(after && after[0]) && !read) {
		rc = check_dir(t, path);
		if (rc)
			goto out;
	}
	*out = d;
	d = NULL;
out:
	tree_dir_free(d);
	return rc;
}

int tree_dir_open(struct tree_dir **out, struct tree *t, const char *path,
		  const char *after)
{
	return dir_open(out, t, path, after, false);
}

int tree_dir_open_checked(struct tree_dir **out, struct tree *t,
			  const char *path, const char *after)
{
	return dir_open(out, t, path, after, true);
}

bool tree_dir_checked(const struct tree_dir *d)
{
	return d->pinned;
}

int tree_dir_check(struct tree_dir *d)
{
	if (!d->pinned)
		return 0;
	d->pinned = false;
	return kv_unpin(d->t->store->kv);
}

int tree_dir_next(struct tree_dir *d, const char **name, size_t *namelen,
		  struct tree_attr *attr)
{
	struct node_iter *ni = &d->ni;
	int rc;

	if (d->first == 0)
		return 0; /* none at open: the iterator is past its end */
	if (d->first > 0)
		rc = d->first; /* read at open, not yet returned */
	else
		rc = node_iter_next(ni);
	d->first = -1;
	if (rc <= 0) {
		if (rc == 0)
			d->first = 0;
		return rc ? -EIO : 0;
	}
	sbuf_reset(&d->name);
	sbuf_add(&d->name, ni->key + ni->name_at, ni->klen - ni->name_at);
	decode_entry(ni, attr);
	if (attr->flags & TREE_F_LINKED) {
		struct node n = {0};
		char *val = NULL;
		size_t vlen;

		sbuf_reset(&d->key);
		key_inode(&d->key, d->t->name, attr->ino);
		rc = kv_get(d->t->store->kv, d->key.buf, d->key.len, &val,
			    &vlen);
		if (rc == 0)
			rc = node_decode(val, vlen, &n, false);
		free(val);
		if (rc) {
			plog(LOG_ERR, "drive %s: bad INODE record of %.*s: %d",
			     d->t->name, (int)ni->klen, ni->key, rc);
			memset(attr, 0, sizeof(*attr));
		} else {
			*attr = n.a;
		}
	}
	*name = d->name.buf;
	*namelen = d->name.len;
	return 1;
}

void tree_dir_free(struct tree_dir *d)
{
	if (!d)
		return;
	if (d->pinned)
		kv_unpin(d->t->store->kv);
	node_iter_close(&d->ni);
	sbuf_release(&d->name);
	sbuf_release(&d->key);
	free(d);
}

int tree_scan_open(struct tree_scan **out, struct tree *t, const char *path)
{
	struct tree_scan *sc = NULL;
	int rc;

	*out = NULL;
	rc = check_dir(t, path);
	if (rc)
		goto out;
	sc = calloc(1, sizeof(*sc));
	if (!sc) {
		rc = -ENOMEM;
		goto out;
	}
	sc->t = t;
	rc = node_iter_open(&sc->ni, t, NODES_BRANCH, path, NULL);
	if (rc)
		goto out;
	*out = sc;
	sc = NULL;
out:
	tree_scan_free(sc);
	return rc;
}

int tree_scan_next(struct tree_scan *sc, const char **path,
		   struct tree_attr *attr)
{
	int rc;

	while ((rc = node_iter_next(&sc->ni)) == 1) {
		sbuf_reset(&sc->path);
		if (node_iter_path(&sc->ni, &sc->path)) {
			plog(LOG_ERR, "malformed node key %.*s skipped",
			     (int)sc->ni.klen, sc->ni.key);
			continue;
		}
		decode_entry(&sc->ni, attr);
		*path = sc->path.buf;
		return 1;
	}
	return rc ? -EIO : 0;
}

void tree_scan_free(struct tree_scan *sc)
{
	if (!sc)
		return;
	node_iter_close(&sc->ni);
	sbuf_release(&sc->path);
	free(sc);
}
