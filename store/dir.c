/*
 * dir.c - streaming listings: the children of a folder (one children-range
 * scan, PATH#<dir>//) and every descendant of a folder (one subtree-range
 * scan, [PATH#<dir>/, PATH#<dir>0)).
 *
 * Both read one RocksDB iterator snapshot with bounds, so memory stays flat
 * for any folder size, and a listing resumes after a name (tree_dir_open's
 * @after) by seeking to the first key past that child: entries added or
 * removed between two calls never make another entry appear twice or vanish.
 * The name / path buffers are reused across entries: no allocation per entry
 * once they have grown. A value that does not decode is returned with mode 0
 * and logged, so one bad record never stops a listing.
 *
 * Limits: tree_dir_next resolves hard-link stubs with one extra point read
 * each; tree_scan_next does not (the caller decides). Entries come in byte
 * order of keys, which for a subtree is not parent-before-child order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_i.h"

struct tree_dir {
	struct tree *t;
	struct kv_iter *it;
	size_t prefix; /* length of the children key prefix PATH#<dir>// */
	bool started;  /* the iterator stands on the entry returned last */
	struct sbuf name;
	struct sbuf key; /* for INODE reads */
};

struct tree_scan {
	struct tree *t;
	struct kv_iter *it;
	size_t plen; /* length of DRIVE#<d>| */
	bool started;
	struct sbuf root; /* the root key, skipped when scanning "/" */
	struct sbuf path;
};

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
static void decode_entry(struct kv_iter *it, struct tree_attr *attr)
{
	struct node n;
	size_t klen, vlen;
	const char *val = kv_iter_value(it, &vlen);

	if (node_decode(val, vlen, &n, false)) {
		const char *key = kv_iter_key(it, &klen);

		plog(LOG_ERR, "corrupt node value at key %.*s", (int)klen, key);
		memset(attr, 0, sizeof(*attr));
		return;
	}
	*attr = n.a;
}

int tree_dir_open(struct tree_dir **out, struct tree *t, const char *path,
		  const char *after)
{
	struct tree_dir *d = NULL;
	struct sbuf lo = {0}, hi = {0};
	int rc;

	*out = NULL;
	rc = check_dir(t, path);
	if (rc)
		goto out;
	d = calloc(1, sizeof(*d));
	if (!d) {
		rc = -ENOMEM;
		goto out;
	}
	d->t = t;
	key_children_range(&lo, &hi, t->name, path);
	d->prefix = lo.len;
	if (after && after[0]) {
		size_t n = strlen(after);

		if (n > TREE_NAME_MAX || memchr(after, '/', n)) {
			rc = -EINVAL;
			goto out;
		}
		/* the first key past child @after: names hold no NUL, so
		 * <key of after> + "\0" is its immediate successor */
		sbuf_add(&lo, after, n);
		sbuf_addc(&lo, '\0');
	}
	rc = kv_iter_open(&d->it, t->store->kv, lo.buf, lo.len, hi.buf, hi.len);
	if (rc)
		goto out;
	*out = d;
	d = NULL;
out:
	tree_dir_free(d);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

int tree_dir_next(struct tree_dir *d, const char **name, size_t *namelen,
		  struct tree_attr *attr)
{
	size_t klen;
	const char *key;

	if (d->started)
		kv_iter_next(d->it);
	d->started = true;
	if (!kv_iter_valid(d->it))
		return kv_iter_status(d->it) ? -EIO : 0;
	key = kv_iter_key(d->it, &klen);
	sbuf_reset(&d->name);
	sbuf_add(&d->name, key + d->prefix, klen - d->prefix);
	decode_entry(d->it, attr);
	if (attr->flags & TREE_F_LINKED) {
		struct node n = {0};
		char *val = NULL;
		size_t vlen;
		int rc;

		sbuf_reset(&d->key);
		key_inode(&d->key, d->t->name, attr->ino);
		rc = kv_get(d->t->store->kv, d->key.buf, d->key.len, &val,
			    &vlen);
		if (rc == 0)
			rc = node_decode(val, vlen, &n, false);
		free(val);
		if (rc) {
			plog(LOG_ERR, "drive %s: bad INODE record of %.*s: %d",
			     d->t->name, (int)klen, key, rc);
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
	kv_iter_free(d->it);
	sbuf_release(&d->name);
	sbuf_release(&d->key);
	free(d);
}

int tree_scan_open(struct tree_scan **out, struct tree *t, const char *path)
{
	struct tree_scan *sc = NULL;
	struct sbuf lo = {0}, hi = {0};
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
	key_drive_prefix(&lo, t->name);
	sc->plen = lo.len;
	sbuf_reset(&lo);
	key_node(&sc->root, t->name, "/");
	key_subtree_range(&lo, &hi, t->name, path);
	rc =
	    kv_iter_open(&sc->it, t->store->kv, lo.buf, lo.len, hi.buf, hi.len);
	if (rc)
		goto out;
	*out = sc;
	sc = NULL;
out:
	tree_scan_free(sc);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

int tree_scan_next(struct tree_scan *sc, const char **path,
		   struct tree_attr *attr)
{
	for (;;) {
		size_t klen;
		const char *key;

		if (sc->started)
			kv_iter_next(sc->it);
		sc->started = true;
		if (!kv_iter_valid(sc->it))
			return kv_iter_status(sc->it) ? -EIO : 0;
		key = kv_iter_key(sc->it, &klen);
		if (klen == sc->root.len &&
		    memcmp(key, sc->root.buf, klen) == 0)
			continue; /* "/" itself, in the root's subtree range */
		sbuf_reset(&sc->path);
		if (key_node_decode(key, klen, sc->plen, &sc->path)) {
			plog(LOG_ERR, "malformed node key %.*s skipped",
			     (int)klen, key);
			continue;
		}
		decode_entry(sc->it, attr);
		*path = sc->path.buf;
		return 1;
	}
}

void tree_scan_free(struct tree_scan *sc)
{
	if (!sc)
		return;
	kv_iter_free(sc->it);
	sbuf_release(&sc->root);
	sbuf_release(&sc->path);
	free(sc);
}
