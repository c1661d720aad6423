/*
 * tree.c - the namespace of a drive: looking up, creating, linking, removing
 * and renaming nodes, and changing their attributes.
 *
 * A node's value holds its attributes, so a lookup is one point read. A
 * hard-linked inode keeps its attributes in INODE#ino and its path nodes are
 * stubs (flags, ino, mode); once linked it stays linked, which keeps the
 * record where it is for open handles. A node whose last name was removed
 * while still in use (TREE_KEEP_ORPHAN: open, or known to the kernel; a file
 * or a folder) is an orphan: the same INODE record with nlink 0 plus an
 * ORPHAN#ino marker, written in the batch that removes the name, until
 * tree_reclaim() or the next store_open().
 *
 * Every change is one atomic batch: the node(s), the parent folders' mtime,
 * ctime and nlink, the INODE record and content drops together. Namespace
 * changes hold t->ns_lock, then the stripes of every inode whose record they
 * rewrite (store_i.h); node values are re-read after the stripes are taken,
 * because attributes change under the stripe alone (setattr, write). Create
 * and unlink guess the parent folder's stripe from the folder the thread used
 * last and so read the parent once (lock_nodes()).
 *
 * Limits: namespace changes of one drive are serialised by ns_lock (they are
 * short: a few point reads and one batch); renaming a non-empty folder goes to
 * journal.c; -ENOTDIR for a missing path is reported only where the parent is
 * read anyway (mknode, link, rename), lookups say -ENOENT.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store_i.h"

/* The parent of checked non-root @path, malloc'd (caller frees): paths may
 * be TREE_PATH_MAX long, too much for a stack buffer. */
static char *parent_of(const char *path)
{
	size_t n = path_parent_len(path);
	struct sbuf b = {0};

	sbuf_add(&b, path, n ? n : 1);
	return b.buf;
}

static bool is_root(const char *path)
{
	return path[0] == '/' && path[1] == '\0';
}

/* Reads and decodes the record at @key. Errors: -ENOENT, -EIO (logged). */
static int load_key(struct tree *t, const struct sbuf *key, struct node *n,
		    bool want_target)
{
	char *val = NULL;
	size_t vlen;
	int rc;

	memset(n, 0, sizeof(*n));
	rc = kv_get(t->store->kv, key->buf, key->len, &val, &vlen);
	if (rc)
		goto out;
	rc = node_decode(val, vlen, n, want_target);
	if (rc == -EIO)
		plog(LOG_ERR, "corrupt record %.*s", (int)key->len, key->buf);
out:
	free(val);
	return rc;
}

/* Reads the INODE record of @ino (target included). Errors: -ENOENT, -EIO. */
static int load_inode(struct tree *t, uint64_t ino, struct node *n)
{
	struct sbuf k = {0};
	int rc;

	key_inode(&k, t->name, ino);
	rc = load_key(t, &k, n, true);
	sbuf_release(&k);
	return rc;
}

/* Reads the node at @path and, for a stub, its INODE record instead. */
static int resolve(struct tree *t, const char *path, struct node *n,
		   bool want_target)
{
	int rc = tree_get_node(t, path, n, want_target);

	if (rc == 0 && (n->a.flags & TREE_F_LINKED)) {
		uint64_t ino = n->a.ino;

		node_release(n);
		rc = load_inode(t, ino, n);
		if (rc == -ENOENT) {
			plog(LOG_ERR,
			     "drive %s: %s: hard link to missing inode %llu",
			     t->name, path, (unsigned long long)ino);
			rc = -EIO;
		}
	}
	return rc;
}

/* 1 if a key exists at @path, 0 if not, or -EIO. */
static int node_exists(struct tree *t, const char *path)
{
	struct sbuf k = {0};
	char *val = NULL;
	size_t vlen;
	int rc;

	key_node(&k, t->name, path);
	rc = kv_get(t->store->kv, k.buf, k.len, &val, &vlen);
	free(val);
	sbuf_release(&k);
	if (rc == -ENOENT)
		return 0;
	return rc ? rc : 1;
}

/*
 * The inode of the folder this thread last created or removed an entry in,
 * as a hint. A node's value may change under its inode's stripe alone
 * (setattr, write), so a read-modify-write must read it under that stripe;
 * without a hint that is one read to learn the inode number and a second one
 * under its stripe. With the hint the stripe is taken first and the node read
 * once. It is only a guess: the node read under the stripe must carry the
 * guessed number, else the right stripe is taken and the node read again
 * (inode numbers are never reused, so a match is the same folder). Files are
 * mostly created and removed many to a folder, so one entry per thread
 * catches most; no lock, nothing to invalidate.
 */
static __thread struct {
	const struct tree *t;
	uint64_t hash; /* of the folder's path */
	uint64_t ino;
} dir_hint;

static uint64_t path_hash(const char *p)
{
	uint64_t h = 14695981039346656037ull; /* FNV-1a */

	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return h;
}

static uint64_t dir_hint_get(const struct tree *t, const char *dir)
{
	if (dir_hint.t == t && dir_hint.hash == path_hash(dir))
		return dir_hint.ino;
	return 0;
}

static void dir_hint_set(const struct tree *t, const char *dir, uint64_t ino)
{
	dir_hint.t = t;
	dir_hint.hash = path_hash(dir);
	dir_hint.ino = ino;
}

/*
 * Reads the nodes at @p1 and @p2 (@p2 may be NULL; they differ) into @n1/@n2
 * under the stripes of their inodes: locks the stripes of the guesses @g1/@g2
 * (0: read the node first to learn it), reads both nodes and, if a node's
 * inode is not the guess, unlocks and tries again with the inodes read. With
 * t->ns_lock held the inodes at both paths stay put, so a second round always
 * matches. On success the caller holds the stripes of n1->a.ino and
 * n2->a.ino (0 if no @p2) and unlocks them with tree_unlock_inodes(); on an
 * error nothing is held. Errors: -ENOENT, -EIO.
 */
static int lock_nodes(struct tree *t, const char *p1, struct node *n1,
		      bool want_target1, uint64_t g1, const char *p2,
		      struct node *n2, uint64_t g2)
{
	int rc;

	/* a guess to learn: read that node unlocked */
	if (!g1) {
		rc = tree_get_node(t, p1, n1, false);
		if (rc)
			return rc;
		g1 = n1->a.ino;
		node_release(n1);
	}
	if (p2 && !g2) {
		rc = tree_get_node(t, p2, n2, false);
		if (rc)
			return rc;
		g2 = n2->a.ino;
		node_release(n2);
	}
	for (;;) {
		tree_lock_inodes(t, g1, g2, 0, 0);
		rc = tree_get_node(t, p1, n1, want_target1);
		if (rc == 0 && p2) {
			rc = tree_get_node(t, p2, n2, false);
			if (rc)
				node_release(n1);
		}
		if (rc) {
			tree_unlock_inodes(t, g1, g2, 0, 0);
			return rc;
		}
		if (n1->a.ino == g1 && (!p2 || n2->a.ino == g2))
			return 0;
		/* a guess was wrong: lock what was read, read again */
		tree_unlock_inodes(t, g1, g2, 0, 0);
		g1 = n1->a.ino;
		node_release(n1);
		if (p2) {
			g2 = n2->a.ino;
			node_release(n2);
		}
	}
}

/* ---- shared helpers (store_i.h) ----------------------------------------- */

void attr_ref_release(struct attr_ref *r)
{
	sbuf_release(&r->key);
	node_release(&r->n);
}

int tree_attr_load(struct tree *t, const char *path, uint64_t ino,
		   struct attr_ref *r)
{
	int rc;

	sbuf_reset(&r->key);
	node_release(&r->n);
	if (!path) {
		key_inode(&r->key, t->name, ino);
		return load_key(t, &r->key, &r->n, true);
	}
	rc = tree_get_node(t, path, &r->n, true);
	if (rc)
		return rc;
	if (ino && r->n.a.ino != ino) {
		node_release(&r->n);
		return -ENOENT;
	}
	if (!(r->n.a.flags & TREE_F_LINKED)) {
		key_node(&r->key, t->name, path);
		return 0;
	}
	ino = r->n.a.ino;
	node_release(&r->n);
	key_inode(&r->key, t->name, ino);
	rc = load_key(t, &r->key, &r->n, true);
	return rc == -ENOENT ? -EIO : rc;
}

void tree_attr_store(struct tree *t, struct kv_batch *b,
		     const struct attr_ref *r)
{
	struct sbuf v = {0};

	node_encode(&v, &r->n.a, r->n.target);
	kv_batch_put(b, r->key.buf, r->key.len, v.buf, v.len);
	sbuf_release(&v);
}

void tree_batch_put_node(struct tree *t, struct kv_batch *b, const char *path,
			 const struct tree_attr *a, const char *target)
{
	struct sbuf k = {0}, v = {0};

	key_node(&k, t->name, path);
	if (a->flags & TREE_F_LINKED)
		node_encode_stub(&v, a->ino, a->mode);
	else
		node_encode(&v, a, target);
	kv_batch_put(b, k.buf, k.len, v.buf, v.len);
	sbuf_release(&k);
	sbuf_release(&v);
}

/* tree_batch_dir_touch() on folder node @n of @dir, already read under its
 * stripe (n->a is updated). Errors: -ENOTDIR. */
static int dir_touch_node(struct tree *t, struct kv_batch *b, const char *dir,
			  struct node *n, int nlink_delta, int64_t now_ns)
{
	if (!S_ISDIR(n->a.mode))
		return -ENOTDIR;
	n->a.mtime_ns = now_ns;
	n->a.ctime_ns = now_ns;
	if (nlink_delta < 0 && n->a.nlink < (uint32_t)-nlink_delta + 2) {
		plog(LOG_WARNING, "drive %s: %s: folder nlink %u too low",
		     t->name, dir, n->a.nlink);
		n->a.nlink = 2;
	} else {
		n->a.nlink = (uint32_t)((int64_t)n->a.nlink + nlink_delta);
	}
	tree_batch_put_node(t, b, dir, &n->a, NULL);
	return 0;
}

int tree_batch_dir_touch(struct tree *t, struct kv_batch *b, const char *dir,
			 int nlink_delta, int64_t now_ns)
{
	struct node n = {0};
	int rc;

	rc = tree_get_node(t, dir, &n, false);
	if (rc == 0)
		rc = dir_touch_node(t, b, dir, &n, nlink_delta, now_ns);
	node_release(&n);
	return rc;
}

int tree_batch_remove(struct tree *t, struct kv_batch *b, const char *path,
		      const struct node *n, unsigned flags, uint64_t *orphan,
		      int64_t now_ns)
{
	struct sbuf k = {0}, v = {0};
	struct node in = {0};
	struct tree_attr a;
	const char *target = n->target;
	int rc = 0;

	if (orphan)
		*orphan = 0;
	key_node(&k, t->name, path);
	kv_batch_delete(b, k.buf, k.len);
	if (!(n->a.flags & TREE_F_LINKED))
		parent_batch_delete(t, b, n->a.ino); /* its one name goes */
	a = n->a;
	/* (a folder is never hard-linked: its one name is its last) */
	if (n->a.flags & TREE_F_LINKED) {
		rc = load_inode(t, n->a.ino, &in);
		if (rc == -ENOENT) {
			/* already gone: drop the stub only */
			plog(LOG_WARNING, "drive %s: %s: stub of missing inode",
			     t->name, path);
			rc = 0;
			goto out;
		}
		if (rc)
			goto out;
		a = in.a;
		target = in.target;
		if (a.nlink > 1) {
			a.nlink--;
			a.ctime_ns = now_ns;
			sbuf_reset(&k);
			key_inode(&k, t->name, a.ino);
			node_encode(&v, &a, target);
			kv_batch_put(b, k.buf, k.len, v.buf, v.len);
			goto out;
		}
	}
	/* the last link: an orphan keeps its attributes (folders too: a
	 * removed folder still answers fstat) and content, in the same batch
	 * as the name goes, so no crash can leave one without the other */
	sbuf_reset(&k);
	key_inode(&k, t->name, a.ino);
	if (flags & TREE_KEEP_ORPHAN) {
		a.flags |= TREE_F_LINKED;
		a.nlink = 0;
		a.ctime_ns = now_ns;
		node_encode(&v, &a, target);
		kv_batch_put(b, k.buf, k.len, v.buf, v.len);
		sbuf_reset(&k);
		key_orphan(&k, t->name, a.ino);
		kv_batch_put(b, k.buf, k.len, "", 0);
		if (orphan)
			*orphan = a.ino;
		goto out;
	}
	if (n->a.flags & TREE_F_LINKED)
		kv_batch_delete(b, k.buf, k.len);
	if (S_ISREG(a.mode))
		rc = tree_drop_file_content(t, b, a.ino, a.size);
	else
		rc = tree_drop_inode_content(t, b, a.ino);
out:
	node_release(&in);
	sbuf_release(&k);
	sbuf_release(&v);
	return rc;
}

int tree_dir_is_empty(struct tree *t, const char *dir)
{
	struct sbuf lo = {0}, hi = {0};
	struct kv_iter *it = NULL;
	int rc;

	key_children_range(&lo, &hi, t->name, dir);
	rc = kv_iter_open(&it, t->store->kv, lo.buf, lo.len, hi.buf, hi.len);
	if (rc)
		goto out;
	if (kv_iter_valid(it))
		rc = 0;
	else
		rc = kv_iter_status(it) ? -EIO : 1;
out:
	kv_iter_free(it);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

int tree_batch_moved(struct tree *t, struct kv_batch *b, const char *path,
		     uint64_t parent_ino, struct node *n, int64_t now_ns)
{
	struct attr_ref r = {0};
	int rc = 0;

	if (n->a.flags & TREE_F_LINKED) {
		rc = tree_attr_load(t, NULL, n->a.ino, &r);
		if (rc == -ENOENT)
			rc = -EIO;
		if (rc)
			goto out;
		r.n.a.ctime_ns = now_ns;
		tree_attr_store(t, b, &r);
	} else {
		n->a.ctime_ns = now_ns;
		parent_batch_put(t, b, n->a.ino, parent_ino, path);
	}
	tree_batch_put_node(t, b, path, &n->a, n->target);
out:
	attr_ref_release(&r);
	return rc;
}

/* ---- public API --------------------------------------------------------- */

int tree_lookup(struct tree *t, const char *path, struct tree_attr *out)
{
	struct node n = {0};
	int rc;

	rc = path_check(path);
	if (rc)
		return rc;
	rc = resolve(t, path, &n, false);
	if (rc == 0)
		*out = n.a;
	node_release(&n);
	return rc;
}

/* tree_readlink() and tree_readlink_ino(): @path, or inode @ino if NULL. */
static int readlink_common(struct tree *t, const char *path, uint64_t ino,
			   char **target)
{
	struct node n = {0};
	int rc;

	*target = NULL;
	if (path) {
		rc = path_check(path);
		if (rc)
			goto out;
		rc = resolve(t, path, &n, true);
	} else {
		rc = load_inode(t, ino, &n);
	}
	if (rc)
		goto out;
	if (!S_ISLNK(n.a.mode) || !n.target) {
		rc = -EINVAL;
		goto out;
	}
	*target = n.target;
	n.target = NULL;
out:
	node_release(&n);
	return rc;
}

int tree_readlink(struct tree *t, const char *path, char **target)
{
	return readlink_common(t, path, 0, target);
}

int tree_readlink_ino(struct tree *t, uint64_t ino, char **target)
{
	return readlink_common(t, NULL, ino, target);
}

int tree_getattr(struct tree *t, const char *path, uint64_t ino,
		 struct tree_attr *out)
{
	struct node n = {0};
	int rc;

	if (!path) {
		rc = load_inode(t, ino, &n);
		goto out;
	}
	rc = path_check(path);
	if (rc)
		goto out;
	rc = tree_get_node(t, path, &n, false);
	if (rc)
		goto out;
	if (ino && n.a.ino != ino) {
		rc = -ENOENT;
		goto out;
	}
	if (n.a.flags & TREE_F_LINKED) {
		node_release(&n);
		rc = load_inode(t, ino ? ino : n.a.ino, &n);
		if (rc == -ENOENT)
			rc = -EIO;
	}
out:
	if (rc == 0)
		*out = n.a;
	node_release(&n);
	return rc;
}

/* Checks @mode/@target of a new node; sets *type. */
static int check_new_node(mode_t mode, const char *target, mode_t *type)
{
	mode_t ty = mode & S_IFMT;

	if (target) {
		if (ty && ty != S_IFLNK)
			return -EINVAL;
		if (!target[0])
			return -ENOENT;
		if (strlen(target) > TREE_SYMLINK_MAX)
			return -ENAMETOOLONG;
		*type = S_IFLNK;
		return 0;
	}
	if (ty == 0)
		ty = S_IFREG;
	switch (ty) {
	case S_IFDIR:
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
	case S_IFCHR:
	case S_IFBLK:
		*type = ty;
		return 0;
	default:
		return -EINVAL; /* including a symlink without a target */
	}
}

int tree_mknode(struct tree *t, const char *path, mode_t mode, uid_t uid,
		gid_t gid, uint64_t rdev, const char *target,
		struct tree_attr *out)
{
	char *parent = NULL;
	struct node pn = {0};
	struct kv_batch *b = NULL;
	struct tree_attr a = {0};
	bool ns = false, st = false;
	mode_t type;
	int64_t now;
	int rc;

	rc = path_check(path);
	if (rc)
		goto out;
	if (is_root(path)) {
		rc = -EEXIST;
		goto out;
	}
	rc = check_new_node(mode, target, &type);
	if (rc)
		goto out;
	parent = parent_of(path);
	pthread_mutex_lock(&t->ns_lock);
	ns = true;
	/* the parent is read once, under its stripe (it is rewritten) */
	rc = lock_nodes(t, parent, &pn, false, dir_hint_get(t, parent), NULL,
			NULL, 0);
	if (rc)
		goto out;
	st = true;
	if (!S_ISDIR(pn.a.mode)) {
		rc = -ENOTDIR;
		goto out;
	}
	dir_hint_set(t, parent, pn.a.ino);
	rc = node_exists(t, path);
	if (rc) {
		rc = rc > 0 ? -EEXIST : rc;
		goto out;
	}
	rc = tree_alloc_ino(t, &a.ino);
	if (rc)
		goto out;
	now = tree_now_ns();
	a.mode = type == S_IFLNK ? (S_IFLNK | 0777) : (type | (mode & 07777));
	a.uid = uid;
	a.gid = gid;
	if (pn.a.mode & S_ISGID) {
		/* a set-group-ID folder gives its group to what is made in
		 * it, and its bit to a new folder (as ext4 does) */
		a.gid = pn.a.gid;
		if (S_ISDIR(type))
			a.mode |= S_ISGID;
	}
	a.size = target ? strlen(target) : 0;
	a.nlink = S_ISDIR(type) ? 2 : 1;
	a.rdev = (S_ISCHR(type) || S_ISBLK(type)) ? rdev : 0;
	a.atime_ns = a.mtime_ns = a.ctime_ns = now;
	b = kv_batch_new(t->store->kv);
	rc = dir_touch_node(t, b, parent, &pn, S_ISDIR(type) ? 1 : 0, now);
	if (rc)
		goto out;
	tree_batch_put_node(t, b, path, &a, target);
	parent_batch_put(t, b, a.ino, pn.a.ino, path);
	rc = tree_commit(t, b);
	if (rc == 0 && out)
		*out = a;
out:
	if (st)
		tree_unlock_inodes(t, pn.a.ino, 0, 0, 0);
	if (ns)
		pthread_mutex_unlock(&t->ns_lock);
	kv_batch_free(b);
	node_release(&pn);
	free(parent);
	return rc;
}

int tree_mktmp(struct tree *t, const char *dir, mode_t mode, uid_t uid,
	       gid_t gid, struct tree_attr *out)
{
	struct node pn = {0};
	struct kv_batch *b = NULL;
	struct tree_attr a = {0};
	struct sbuf k = {0}, v = {0};
	int rc;

	rc = path_check(dir);
	if (rc)
		return rc;
	rc = tree_get_node(t, dir, &pn, false);
	if (rc == 0 && !S_ISDIR(pn.a.mode))
		rc = -ENOTDIR;
	node_release(&pn);
	if (rc == 0)
		rc = tree_alloc_ino(t, &a.ino);
	if (rc)
		return rc;
	/* an orphan from the start: INODE record (nlink 0) and ORPHAN key in
	 * one batch, as tree_batch_remove() leaves a file unlinked while open */
	a.flags = TREE_F_LINKED;
	a.mode = S_IFREG | (mode & 07777);
	a.uid = uid;
	a.gid = gid;
	a.atime_ns = a.mtime_ns = a.ctime_ns = tree_now_ns();
	b = kv_batch_new(t->store->kv);
	key_inode(&k, t->name, a.ino);
	node_encode(&v, &a, NULL);
	kv_batch_put(b, k.buf, k.len, v.buf, v.len);
	sbuf_reset(&k);
	key_orphan(&k, t->name, a.ino);
	kv_batch_put(b, k.buf, k.len, "", 0);
	rc = tree_commit(t, b);
	if (rc == 0 && out)
		*out = a;
	kv_batch_free(b);
	sbuf_release(&k);
	sbuf_release(&v);
	return rc;
}

/* tree_link() (@oldpath), tree_link_ino() (@oldpath NULL, inode @ino) and
 * tree_link_tmp() (@tmp: an orphan of tree_mktmp() may get a name). */
static int link_common(struct tree *t, const char *oldpath, uint64_t ino,
		       bool tmp, const char *newpath, struct tree_attr *out)
{
	char *parent = NULL;
	struct node on = {0}, pn = {0};
	struct attr_ref r = {0};
	struct kv_batch *b = NULL;
	struct tree_attr stub = {0};
	bool ns = false, st = false;
	int64_t now;
	int rc;

	rc = oldpath ? path_check(oldpath) : 0;
	if (rc == 0)
		rc = path_check(newpath);
	if (rc)
		goto out;
	if (oldpath && is_root(oldpath)) {
		rc = -EPERM;
		goto out;
	}
	if (is_root(newpath)) {
		rc = -EEXIST;
		goto out;
	}
	parent = parent_of(newpath);
	pthread_mutex_lock(&t->ns_lock);
	ns = true;
	if (oldpath) {
		rc = tree_get_node(t, oldpath, &on, false);
		if (rc)
			goto out;
		if (S_ISDIR(on.a.mode)) {
			rc = -EPERM;
			goto out;
		}
		ino = on.a.ino;
	}
	rc = tree_get_node(t, parent, &pn, false);
	if (rc)
		goto out;
	if (!S_ISDIR(pn.a.mode)) {
		rc = -ENOTDIR;
		goto out;
	}
	rc = node_exists(t, newpath);
	if (rc) {
		rc = rc > 0 ? -EEXIST : rc;
		goto out;
	}
	tree_lock_inodes(t, ino, pn.a.ino, 0, 0);
	st = true;
	rc = tree_attr_load(t, oldpath, ino, &r);
	if (rc)
		goto out;
	if (!oldpath && r.n.a.nlink == 0 && !tmp) {
		rc = -ENOENT; /* an orphan cannot get a name back */
		goto out;
	}
	now = tree_now_ns();
	b = kv_batch_new(t->store->kv);
	if (r.n.a.nlink == 0) {
		/* an O_TMPFILE file's first name: no longer an orphan */
		struct sbuf ok = {0};
		char *val = NULL;
		size_t vlen;

		key_orphan(&ok, t->name, ino);
		rc = kv_get(t->store->kv, ok.buf, ok.len, &val, &vlen);
		free(val);
		if (rc == 0)
			kv_batch_delete(b, ok.buf, ok.len);
		sbuf_release(&ok);
		if (rc)
			goto out; /* -ENOENT: reclaimed meanwhile */
	}
	if (!(r.n.a.flags & TREE_F_LINKED)) {
		/* first link: the attributes move to INODE#ino, which finds
		 * the inode by number from now on */
		parent_batch_delete(t, b, r.n.a.ino);
		r.n.a.flags |= TREE_F_LINKED;
		r.n.a.nlink = 2;
		sbuf_reset(&r.key);
		key_inode(&r.key, t->name, r.n.a.ino);
	} else {
		if (r.n.a.nlink >= TREE_LINK_MAX) {
			rc = -EMLINK;
			goto out;
		}
		r.n.a.nlink++;
	}
	r.n.a.ctime_ns = now;
	tree_attr_store(t, b, &r);
	stub.flags = TREE_F_LINKED;
	stub.ino = r.n.a.ino;
	stub.mode = r.n.a.mode;
	if (oldpath)
		tree_batch_put_node(t, b, oldpath, &stub, NULL);
	tree_batch_put_node(t, b, newpath, &stub, NULL);
	rc = tree_batch_dir_touch(t, b, parent, 0, now);
	if (rc)
		goto out;
	rc = tree_commit(t, b);
	if (rc == 0 && out)
		*out = r.n.a;
out:
	if (st)
		tree_unlock_inodes(t, ino, pn.a.ino, 0, 0);
	if (ns)
		pthread_mutex_unlock(&t->ns_lock);
	kv_batch_free(b);
	attr_ref_release(&r);
	node_release(&on);
	node_release(&pn);
	free(parent);
	return rc;
}

int tree_link(struct tree *t, const char *oldpath, const char *newpath,
	      struct tree_attr *out)
{
	return link_common(t, oldpath, 0, false, newpath, out);
}

int tree_link_ino(struct tree *t, uint64_t ino, const char *newpath,
		  struct tree_attr *out)
{
	return link_common(t, NULL, ino, false, newpath, out);
}

int tree_link_tmp(struct tree *t, uint64_t ino, const char *newpath,
		  struct tree_attr *out)
{
	return link_common(t, NULL, ino, true, newpath, out);
}

/* unlink and rmdir: removes @path (a folder iff @dir). */
static int remove_node(struct tree *t, const char *path, bool dir,
		       unsigned flags, uint64_t *orphan)
{
	char *parent = NULL;
	struct node n = {0}, pn = {0};
	struct kv_batch *b = NULL;
	bool ns = false, st = false;
	uint64_t nino = 0;
	int64_t now;
	int rc;

	if (orphan)
		*orphan = 0;
	rc = path_check(path);
	if (rc)
		goto out;
	if (is_root(path)) {
		rc = dir ? -EBUSY : -EISDIR;
		goto out;
	}
	parent = parent_of(path);
	pthread_mutex_lock(&t->ns_lock);
	ns = true;
	/* both nodes are rewritten: read them under their stripes */
	rc = lock_nodes(t, path, &n, true, 0, parent, &pn,
			dir_hint_get(t, parent));
	if (rc)
		goto out;
	st = true;
	nino = n.a.ino;
	dir_hint_set(t, parent, pn.a.ino);
	if (!dir && S_ISDIR(n.a.mode)) {
		rc = -EISDIR;
		goto out;
	}
	if (dir && !S_ISDIR(n.a.mode)) {
		rc = -ENOTDIR;
		goto out;
	}
	if (dir) {
		rc = tree_dir_is_empty(t, path);
		if (rc <= 0) {
			rc = rc ? rc : -ENOTEMPTY;
			goto out;
		}
	}
	now = tree_now_ns();
	b = kv_batch_new(t->store->kv);
	rc = tree_batch_remove(t, b, path, &n, flags, orphan, now);
	if (rc == 0)
		rc = dir_touch_node(t, b, parent, &pn, dir ? -1 : 0, now);
	if (rc == 0)
		rc = tree_commit(t, b);
	if (rc && orphan)
		*orphan = 0;
out:
	if (st)
		tree_unlock_inodes(t, nino, pn.a.ino, 0, 0);
	if (ns)
		pthread_mutex_unlock(&t->ns_lock);
	kv_batch_free(b);
	node_release(&n);
	node_release(&pn);
	free(parent);
	return rc;
}

int tree_unlink(struct tree *t, const char *path, unsigned flags,
		uint64_t *orphan)
{
	return remove_node(t, path, false, flags, orphan);
}

int tree_rmdir(struct tree *t, const char *path)
{
	return remove_node(t, path, true, 0, NULL);
}

int tree_rmdir_flags(struct tree *t, const char *path, unsigned flags,
		     uint64_t *orphan)
{
	return remove_node(t, path, true, flags, orphan);
}

int tree_reclaim(struct tree *t, uint64_t ino)
{
	struct sbuf k = {0};
	struct kv_batch *b = NULL;
	struct node n = {0};
	char *val = NULL;
	size_t vlen;
	int rc;

	tree_lock_inodes(t, ino, 0, 0, 0);
	key_orphan(&k, t->name, ino);
	rc = kv_get(t->store->kv, k.buf, k.len, &val, &vlen);
	if (rc)
		goto out;
	b = kv_batch_new(t->store->kv);
	kv_batch_delete(b, k.buf, k.len);
	sbuf_reset(&k);
	key_inode(&k, t->name, ino);
	kv_batch_delete(b, k.buf, k.len);
	/* a file's blocks are known from its size (as when an unlink frees
	 * it at once): point deletes, no scan; anything else is scanned */
	rc = load_key(t, &k, &n, false);
	if (rc == 0 && S_ISREG(n.a.mode))
		rc = tree_drop_file_content(t, b, ino, n.a.size);
	else if (rc == 0 || rc == -ENOENT || rc == -EIO)
		rc = tree_drop_inode_content(t, b, ino);
	if (rc == 0)
		rc = tree_commit(t, b);
out:
	tree_unlock_inodes(t, ino, 0, 0, 0);
	kv_batch_free(b);
	node_release(&n);
	free(val);
	sbuf_release(&k);
	return rc;
}

int tree_reclaim_orphans(struct tree *t, size_t *count)
{
	struct sbuf lo = {0}, hi = {0}, pre = {0};
	struct kv_iter *it = NULL;
	size_t n = 0;
	int rc;

	key_drive_prefix(&pre, t->name);
	key_kind_range(&lo, &hi, t->name, "ORPHAN#");
	/* the iterator reads a snapshot: reclaiming meanwhile is safe */
	rc = kv_iter_open(&it, t->store->kv, lo.buf, lo.len, hi.buf, hi.len);
	if (rc)
		goto out;
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		size_t klen;
		const char *key = kv_iter_key(it, &klen);
		uint64_t ino;

		if (key_ino_decode(key, klen, pre.len, "ORPHAN#", &ino)) {
			plog(LOG_ERR, "drive %s: malformed orphan key %.*s",
			     t->name, (int)klen, key);
			continue;
		}
		rc = tree_reclaim(t, ino);
		if (rc == -ENOENT)
			rc = 0;
		if (rc)
			goto out;
		n++;
	}
	rc = kv_iter_status(it);
out:
	if (count)
		*count = n;
	kv_iter_free(it);
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&pre);
	return rc;
}

/* The one-batch rename of nodes that are not non-empty folders; ns_lock held,
 * every check done. @sn/@dn are the nodes at @src/@dst (@dn NULL if none). */
static int rename_simple(struct tree *t, const char *src, const char *dst,
			 unsigned flags, const struct node *sn0,
			 const struct node *dn0, uint64_t *orphan)
{
	char *sp = NULL, *dp = NULL;
	struct node spn = {0}, dpn = {0}, sn = {0}, dn = {0};
	struct kv_batch *b = NULL;
	uint64_t dino = dn0 ? dn0->a.ino : 0;
	int sdelta = 0, ddelta = 0, sd, dd;
	bool st = false;
	struct sbuf k = {0};
	int64_t now;
	int rc;

	sp = parent_of(src);
	dp = parent_of(dst);
	rc = tree_get_node(t, sp, &spn, false);
	if (rc == 0)
		rc = tree_get_node(t, dp, &dpn, false);
	if (rc)
		goto out;
	tree_lock_inodes(t, spn.a.ino, dpn.a.ino, sn0->a.ino, dino);
	st = true;
	/* fresh values under the stripes */
	rc = tree_get_node(t, src, &sn, true);
	if (rc == 0 && dn0)
		rc = tree_get_node(t, dst, &dn, true);
	if (rc)
		goto out;
	sd = S_ISDIR(sn.a.mode);
	dd = dn0 ? S_ISDIR(dn.a.mode) : 0;
	now = tree_now_ns();
	b = kv_batch_new(t->store->kv);
	if (flags & TREE_RENAME_EXCHANGE) {
		rc = tree_batch_moved(t, b, src, spn.a.ino, &dn, now);
		if (rc == 0)
			rc = tree_batch_moved(t, b, dst, dpn.a.ino, &sn, now);
		sdelta = dd - sd;
		ddelta = sd - dd;
	} else {
		if (dn0) {
			rc = tree_batch_remove(t, b, dst, &dn,
					       flags & TREE_KEEP_ORPHAN, orphan,
					       now);
			if (rc)
				goto out;
		}
		key_node(&k, t->name, src);
		kv_batch_delete(b, k.buf, k.len);
		rc = tree_batch_moved(t, b, dst, dpn.a.ino, &sn, now);
		sdelta = -sd;
		ddelta = sd - dd;
	}
	if (rc)
		goto out;
	if (strcmp(sp, dp) == 0) {
		rc = tree_batch_dir_touch(t, b, sp, sdelta + ddelta, now);
	} else {
		rc = tree_batch_dir_touch(t, b, sp, sdelta, now);
		if (rc == 0)
			rc = tree_batch_dir_touch(t, b, dp, ddelta, now);
	}
	if (rc == 0)
		rc = tree_commit(t, b);
out:
	if (rc && orphan)
		*orphan = 0;
	if (st)
		tree_unlock_inodes(t, spn.a.ino, dpn.a.ino, sn0->a.ino, dino);
	kv_batch_free(b);
	sbuf_release(&k);
	node_release(&spn);
	node_release(&dpn);
	node_release(&sn);
	node_release(&dn);
	free(sp);
	free(dp);
	return rc;
}

/*
 * -ENAMETOOLONG if moving the branch below folder @from to a folder whose
 * path is @newlen bytes long would make a descendant's path longer than
 * TREE_PATH_MAX. Scans the branch only when the new path is longer.
 */
static int branch_fits(struct tree *t, const char *from, size_t newlen)
{
	size_t oldlen = strlen(from), longest = 0;
	struct tree_scan *sc = NULL;
	struct tree_attr a;
	const char *p;
	int rc;

	if (newlen <= oldlen)
		return 0;
	rc = tree_scan_open(&sc, t, from);
	while (rc == 0 && (rc = tree_scan_next(sc, &p, &a)) == 1) {
		size_t n = strlen(p);
		rc = 0;
		if (n > longest)
			longest = n;
	}
	tree_scan_free(sc);
	if (rc < 0)
		return rc;
	return longest - oldlen + newlen > TREE_PATH_MAX ? -ENAMETOOLONG : 0;
}

int tree_rename(struct tree *t, const char *src, const char *dst,
		unsigned flags, uint64_t *orphan)
{
	char *dp = NULL;
	struct node sn = {0}, dn = {0}, dpn = {0};
	bool ns = false, dexists = false, big = false;
	int rc;

	if (orphan)
		*orphan = 0;
	rc = path_check(src);
	if (rc == 0)
		rc = path_check(dst);
	if (rc)
		goto out;
	if (flags & ~(unsigned)(TREE_KEEP_ORPHAN | TREE_RENAME_NOREPLACE |
				TREE_RENAME_EXCHANGE) ||
	    ((flags & TREE_RENAME_NOREPLACE) &&
	     (flags & TREE_RENAME_EXCHANGE))) {
		rc = -EINVAL;
		goto out;
	}
	if (is_root(src) || is_root(dst)) {
		rc = -EBUSY;
		goto out;
	}
	dp = parent_of(dst);
	pthread_mutex_lock(&t->ns_lock);
	ns = true;
	rc = tree_get_node(t, src, &sn, false);
	if (rc)
		goto out;
	rc = tree_get_node(t, dp, &dpn, false);
	if (rc)
		goto out;
	if (!S_ISDIR(dpn.a.mode)) {
		rc = -ENOTDIR;
		goto out;
	}
	rc = tree_get_node(t, dst, &dn, false);
	if (rc && rc != -ENOENT)
		goto out;
	dexists = rc == 0;
	rc = 0;
	if (strcmp(src, dst) == 0) {
		rc = (flags & TREE_RENAME_NOREPLACE) ? -EEXIST : 0;
		goto out;
	}
	if (path_is_within(dst, src)) {
		rc = -EINVAL;
		goto out;
	}
	if (flags & TREE_RENAME_EXCHANGE) {
		if (!dexists) {
			rc = -ENOENT;
			goto out;
		}
		if (path_is_within(src, dst)) {
			rc = -EINVAL;
			goto out;
		}
		if (sn.a.ino == dn.a.ino)
			goto out; /* two links of one inode */
		if (S_ISDIR(dn.a.mode)) {
			rc = tree_dir_is_empty(t, dst);
			if (rc < 0)
				goto out;
			big = rc == 0;
		}
	} else if (dexists) {
		if (flags & TREE_RENAME_NOREPLACE) {
			rc = -EEXIST;
			goto out;
		}
		if (sn.a.ino == dn.a.ino)
			goto out; /* POSIX: links of one file, nothing to do */
		if (S_ISDIR(sn.a.mode) && !S_ISDIR(dn.a.mode)) {
			rc = -ENOTDIR;
			goto out;
		}
		if (!S_ISDIR(sn.a.mode) && S_ISDIR(dn.a.mode)) {
			rc = -EISDIR;
			goto out;
		}
		if (S_ISDIR(dn.a.mode)) {
			rc = tree_dir_is_empty(t, dst);
			if (rc <= 0) {
				rc = rc ? rc : -ENOTEMPTY;
				goto out;
			}
		}
	}
	if (S_ISDIR(sn.a.mode)) {
		rc = tree_dir_is_empty(t, src);
		if (rc < 0)
			goto out;
		big = big || rc == 0;
	}
	if (big) {
		rc = S_ISDIR(sn.a.mode) ? branch_fits(t, src, strlen(dst)) : 0;
		if (rc == 0 && (flags & TREE_RENAME_EXCHANGE) &&
		    S_ISDIR(dn.a.mode))
			rc = branch_fits(t, dst, strlen(src));
		if (rc)
			goto out;
		rc = journal_rename_dir(t, src, dst, flags, orphan);
	} else
		rc = rename_simple(t, src, dst, flags, &sn,
				   dexists ? &dn : NULL, orphan);
out:
	if (ns)
		pthread_mutex_unlock(&t->ns_lock);
	node_release(&sn);
	node_release(&dn);
	node_release(&dpn);
	free(dp);
	return rc;
}

int tree_attr_lock(struct tree *t, const char *path, uint64_t *ino,
		   struct attr_ref *r)
{
	int rc;

	if (path) {
		rc = path_check(path);
		if (rc)
			return rc;
	}
	if (!path && !*ino)
		return -EINVAL;
	if (!*ino) {
		/* find the inode, to lock its stripe */
		rc = tree_attr_load(t, path, 0, r);
		if (rc)
			return rc;
		*ino = r->n.a.ino;
	}
	tree_lock_inodes(t, *ino, 0, 0, 0);
	rc = tree_attr_load(t, path, *ino, r);
	if (rc)
		tree_unlock_inodes(t, *ino, 0, 0, 0);
	return rc;
}

int tree_setattr(struct tree *t, const char *path, uint64_t ino,
		 const struct tree_attr *in, unsigned mask,
		 struct tree_attr *out)
{
	struct attr_ref r = {0};
	struct kv_batch *b = NULL;
	struct tree_attr *a = &r.n.a;
	bool st = false;
	int64_t now;
	int rc;

	rc = tree_attr_lock(t, path, &ino, &r);
	if (rc)
		goto out;
	st = true;
	if (mask == 0)
		goto done;
	now = tree_now_ns();
	b = kv_batch_new(t->store->kv);
	if (mask & TREE_SET_SIZE) {
		if (S_ISDIR(a->mode)) {
			rc = -EISDIR;
			goto out;
		}
		if (!S_ISREG(a->mode)) {
			rc = -EINVAL;
			goto out;
		}
		if (in->size > TREE_FILE_MAX) {
			rc = -EFBIG;
			goto out;
		}
		rc = tree_batch_truncate(t, b, a, in->size);
		if (rc)
			goto out;
		a->size = in->size;
		a->mtime_ns = now;
	}
	if (mask & TREE_SET_MODE)
		a->mode = (a->mode & S_IFMT) | (in->mode & 07777);
	if (mask & TREE_SET_UID)
		a->uid = in->uid;
	if (mask & TREE_SET_GID)
		a->gid = in->gid;
	if (mask & TREE_SET_ATIME)
		a->atime_ns = in->atime_ns;
	if (mask & TREE_SET_MTIME)
		a->mtime_ns = in->mtime_ns;
	a->ctime_ns = (mask & TREE_SET_CTIME) ? in->ctime_ns : now;
	tree_attr_store(t, b, &r);
	rc = tree_commit(t, b);
	if (rc)
		goto out;
done:
	if (out)
		*out = *a;
out:
	if (st)
		tree_unlock_inodes(t, ino, 0, 0, 0);
	kv_batch_free(b);
	attr_ref_release(&r);
	return rc;
}
