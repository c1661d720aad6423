/*
 * tree.c - the namespace of a drive: looking up nodes and changing their
 * attributes, the batch builders every namespace change uses, and the
 * locking helpers of the files that make, remove and rename nodes
 * (tree_make.c, tree_remove.c, tree_rename.c; tree_i.h).
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
 * rewrite (drive_i.h); node values are re-read after the stripes are taken,
 * because attributes change under the stripe alone (setattr, write). Create
 * and unlink guess the parent folder's stripe from the folder the thread used
 * last and so read the parent once (lock_nodes()).
 *
 * Several writers of one drive (store_options.shared, on etcd): ns_lock and
 * the stripes serialise this process only, so a namespace change conditions
 * its commit on every key it read (tree_track, kv_track) and runs again when
 * another writer changed one first. A folder's listing is read by a scan,
 * which is not tracked; its node stands for it, since every change of a
 * folder's entries rewrites the folder's node (mtime, ctime, nlink) in the
 * same batch: rmdir's emptiness check fails its commit once a create
 * inside landed, and the create fails once the folder is gone.
 *
 * Limits: namespace changes of one drive are serialised by ns_lock (they are
 * short: a few point reads and one batch); renaming a non-empty folder goes to
 * journal.c; -ENOTDIR for a missing path is reported only where the parent is
 * read anyway (mknode, link, rename), lookups say -ENOENT.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acl_i.h"
#include "batch_i.h"
#include "content_i.h"
#include "drive_i.h"
#include "flags_i.h"
#include "hold_i.h"
#include "log.h"
#include "parent_i.h"
#include "tree_i.h"

/* ---- helpers of tree*.c (tree_i.h) -------------------------------------- */

int tree_load_key(struct tree *t, const struct sbuf *key, struct node *n,
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
	rc = tree_load_key(t, &k, n, true);
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

uint64_t tree_dir_hint_get(const struct tree *t, const char *dir)
{
	if (dir_hint.t == t && dir_hint.hash == path_hash(dir))
		return dir_hint.ino;
	return 0;
}

void tree_dir_hint_set(const struct tree *t, const char *dir, uint64_t ino)
{
	dir_hint.t = t;
	dir_hint.hash = path_hash(dir);
	dir_hint.ino = ino;
}

int tree_lock_nodes(struct tree *t, const char *p1, struct node *n1,
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

/* ---- shared helpers (batch_i.h) ------------------------------------------ */

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
		return tree_load_key(t, &r->key, &r->n, true);
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
	rc = tree_load_key(t, &r->key, &r->n, true);
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

int tree_attr_commit(struct tree *t, struct kv_batch *b,
		     const struct attr_ref *r)
{
	int rc;

	tree_attr_store(t, b, r);
	rc = tree_commit(t, b);
	if (rc == 0)
		rc = flags_sync(t, r->n.a.flags);
	return rc;
}

/*
 * Tries of a read whose pin failed (kv_unpin: etcd compacted the revision,
 * or a commit changed a record among the reads); from the third on, each
 * waits first, 1, 2, 4 ... ms up to READ_BACKOFF_MS, half of it random, so
 * that a writer committing the file in a loop leaves a gap: 8 tries failed
 * a read in about 400 of a writer rewriting the file nonstop on DynamoDB
 * Local (dynamodb_follow_read); about half the tries fail there, so 16
 * make it one read in 10^5 (0.6 s of pauses at most).
 */
#define READ_TRIES	16
#define READ_BACKOFF_MS 64

bool tree_read_again(int rc, int *tries)
{
	unsigned us;

	if (rc != -ESTALE || ++*tries >= READ_TRIES)
		return false;
	if (*tries >= 2) {
		us = 1000u << (*tries - 2);
		if (us > READ_BACKOFF_MS * 1000u)
			us = READ_BACKOFF_MS * 1000u;
		usleep(us / 2 + (unsigned)random() % (us / 2));
	}
	return true;
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

int tree_dir_touch_node(struct tree *t, struct kv_batch *b, const char *dir,
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
		rc = tree_dir_touch_node(t, b, dir, &n, nlink_delta, now_ns);
	node_release(&n);
	return rc;
}

void tree_batch_put_orphan(struct tree *t, struct kv_batch *b, uint64_t ino,
			   bool held)
{
	uint64_t id = kv_writer_id(t->store->kv);
	struct sbuf k = {0};
	char v[17] = "";

	if (held)
		snprintf(v, sizeof(v), "%s", HOLD_ORPHAN_MARK);
	else if (id)
		snprintf(v, sizeof(v), "%016llx", (unsigned long long)id);
	key_orphan(&k, t->name, ino);
	kv_batch_put(b, k.buf, k.len, v, strlen(v));
	sbuf_release(&k);
}

int tree_batch_remove(struct tree *t, struct kv_batch *b, const char *path,
		      const struct node *n, unsigned flags, uint64_t *orphan,
		      int64_t now_ns)
{
	struct sbuf k = {0}, v = {0};
	struct node in = {0};
	struct tree_attr a;
	const char *target = n->target;
	bool held = false, mine = false;
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
	/* open on another writer: kept for it (not ours to reclaim) unless
	 * this one uses it too (hold.c) */
	if (!S_ISDIR(a.mode))
		rc = hold_by_others(t, a.ino, &held, &mine);
	if (rc)
		goto out;
	held = held && !(flags & TREE_KEEP_ORPHAN);
	if ((flags & TREE_KEEP_ORPHAN) || held ||
	    ((flags & TREE_PARK_BIG) && !tree_content_fits(t, &a))) {
		a.flags |= TREE_F_LINKED;
		a.nlink = 0;
		a.ctime_ns = now_ns;
		node_encode(&v, &a, target);
		kv_batch_put(b, k.buf, k.len, v.buf, v.len);
		tree_batch_put_orphan(t, b, a.ino, held);
		if (orphan && !held)
			*orphan = a.ino;
		goto out;
	}
	if (n->a.flags & TREE_F_LINKED)
		kv_batch_delete(b, k.buf, k.len);
	if (mine) /* this writer's, closed, its drop still to come */
		hold_batch_drop(t, b, a.ino);
	if (S_ISREG(a.mode))
		rc = tree_drop_file_content(t, b, a.ino, tree_content_end(&a));
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
	struct node_iter ni;
	int rc;

	rc = node_iter_open(&ni, t, NODES_CHILDREN, dir, NULL);
	if (rc == 0)
		rc = node_iter_next(&ni);
	node_iter_close(&ni);
	if (rc < 0)
		return rc == -ENOMEM ? rc : -EIO;
	return rc == 0;
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

/* tree_setattr(), once. */
static int setattr_once(struct tree *t, const char *path, uint64_t ino,
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
	rc = flags_may_setattr(a, mask);
	if (rc)
		goto out;
	if ((mask & TREE_SET_ACCESS) && (a->flags & TREE_F_NOATIME))
		goto done; /* chattr +A: an access leaves atime be */
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
		/* a big drop: slices first (content_i.h) */
		rc = tree_shrink_in_slices(t, &r, in->size, NULL);
		if (rc == 0)
			rc = tree_batch_truncate(t, b, a, in->size);
		if (rc)
			goto out;
		a->size = in->size;
		a->mtime_ns = now;
	}
	if (mask & TREE_SET_MODE) {
		a->mode = (a->mode & S_IFMT) | (in->mode & 07777);
		rc = acl_batch_chmod(t, b, a); /* in step */
		if (rc)
			goto out;
	}
	if (mask & TREE_SET_UID)
		a->uid = in->uid;
	if (mask & TREE_SET_GID)
		a->gid = in->gid;
	if (mask & TREE_SET_ATIME)
		a->atime_ns = in->atime_ns;
	if (mask & TREE_SET_MTIME)
		a->mtime_ns = in->mtime_ns;
	a->ctime_ns = (mask & TREE_SET_CTIME) ? in->ctime_ns : now;
	rc = tree_attr_commit(t, b, &r);
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

int tree_setattr(struct tree *t, const char *path, uint64_t ino,
		 const struct tree_attr *in, unsigned mask,
		 struct tree_attr *out)
{
	return TREE_TRACKED(t, setattr_once(t, path, ino, in, mask, out));
}
