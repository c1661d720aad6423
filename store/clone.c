/*
 * clone.c - cp -r: tree_cp_r() and the clone phase of a cross-drive
 * tree_mv().
 *
 * The clone walks the source in pre-order (walk.c: a folder before its
 * children), so parents exist before children. New inode numbers come from
 * the destination drive; content blocks and xattrs are copied; a hard-linked
 * inode is cloned once and its other links inside the branch become links of
 * the clone (a map old ino -> new ino kept in the destination's temporary
 * area XTMP#<seq>/<ino>). The progress is a clone record JOURNAL#<seq> in the
 * destination drive (journal_rec.c), updated in the same batch as each chunk of
 * copies: the relative path of the last node copied, plus the block cursor of
 * a file too big for one batch. The token names the record; the record has
 * the exact position even when the token is older than a crash. Replay at
 * store_open() leaves clone records alone: a stopped clone waits for its
 * token (fsck lists it).
 *
 * The last batch drops the map with the record. A map past a slice
 * (kv_range_keys(): etcd) goes in slices before it (clone_finish()), after a
 * commit that moves the record to phase 2, "everything copied": a crash in
 * between leaves that record and part of the map, which the token (it goes
 * straight to the end) or the next read-write open (replay) finishes.
 *
 * Among shared writers a call holds the destination branch under a branch
 * lock (branch_lock.c, a number of its own: no record comes, so a stopped
 * writer's lock is dropped by the takeover), and the batch that hangs the
 * root in its folder is conditioned on that folder (tree_track), done
 * again when another writer changed it first.
 *
 * Limits: a clone between drives of different block sizes is -EXDEV.
 * Among shared writers a paused clone (--max-items, waiting for its token)
 * holds no lock between its calls: another writer's change in the partial
 * copy meanwhile may be overwritten when it goes on. An
 * undecodable node is not copied and is reported (with mv: the clone stops
 * before it).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch_i.h"
#include "branch_i.h"
#include "content_i.h"
#include "drive_i.h"
#include "flags_i.h"
#include "journal_i.h"
#include "parent_i.h"

struct clone {
	struct tree *t, *dt; /* source and destination drives */
	const char *src, *dst;
	struct journal_rec rec; /* JOURNAL#seq of dt */
	struct crash_hook *h;
	struct tree_op_result *r;
	struct kv_batch *b;
	size_t n, bytes;     /* pending in b */
	size_t splen, dplen; /* drive prefix lengths */
	bool strict;	     /* mv: a node not copied stops the clone */
	bool stop;	     /* strict and a node failed: stop before it */
	bool checked;	     /* the first node of this call was checked */
	struct walk *w;	     /* the walk over the source branch */
	struct kv_iter *dit, *xit; /* the source's DATA# and XATTR# keys */
	struct sbuf dlb, xlb;	   /* where dit and xit are (fwd_seek) */
	/* the folders copied above the node being copied (destination path
	 * and new inode), outermost first: a node's PARENT record needs its
	 * parent's new number, which may still be in the pending batch */
	struct clone_dir {
		char *path;
		uint64_t ino;
	} * dirs;
	size_t ndirs, capdirs;
};

/* The new inode of the folder above @dpath, or 0 if it is not known. */
static uint64_t clone_parent_ino(struct clone *c, const char *dpath)
{
	size_t pl = path_parent_len(dpath);
	struct node pn = {0};
	uint64_t ino = 0;
	char *parent;

	/* pre-order: the folders on the stack that are not above @dpath are
	 * done with */
	while (c->ndirs &&
	       !(path_is_within(dpath, c->dirs[c->ndirs - 1].path) &&
		 strcmp(dpath, c->dirs[c->ndirs - 1].path))) {
		free(c->dirs[c->ndirs - 1].path);
		c->ndirs--;
	}
	if (c->ndirs && strlen(c->dirs[c->ndirs - 1].path) == (pl ? pl : 1))
		return c->dirs[c->ndirs - 1].ino;
	/* copied by an earlier call, or the clone's root: committed */
	parent = path_parent(dpath);
	if (tree_get_node(c->dt, parent, &pn, false) == 0 && S_ISDIR(pn.a.mode))
		ino = pn.a.ino;
	node_release(&pn);
	free(parent);
	return ino;
}

/* Remembers folder @dpath, new inode @ino, for its children. */
static void clone_push_dir(struct clone *c, const char *dpath, uint64_t ino)
{
	if (c->ndirs == c->capdirs) {
		c->capdirs = c->capdirs ? 2 * c->capdirs : 16;
		c->dirs = realloc(c->dirs, c->capdirs * sizeof(*c->dirs));
		if (!c->dirs)
			abort();
	}
	c->dirs[c->ndirs].path = strdup(dpath);
	if (!c->dirs[c->ndirs].path)
		abort();
	c->dirs[c->ndirs++].ino = ino;
}

static int clone_commit(struct clone *c)
{
	int rc;

	journal_rec_put(c->dt, c->b, &c->rec);
	rc = tree_commit(c->dt, c->b);
	kv_batch_clear(c->b);
	c->n = c->bytes = 0;
	if (rc == 0)
		crash_hook_batch(c->h);
	return rc;
}

static void clone_add(struct clone *c, const char *k, size_t klen,
		      const char *v, size_t vlen)
{
	kv_batch_put(c->b, k, klen, v, vlen);
	c->n++;
	c->bytes += klen + vlen;
}

/* What a node adds after its content (a hard-linked inode's INODE record,
 * map value and stub, or the node and its PARENT record), with the clone's
 * record and, for the root, its folder's touch. */
#define CLONE_TAIL_OPS (3 + JOURNAL_REC_OPS + 1)

/*
 * Whether the pending batch is to be committed before @keys more keys of
 * @bytes: it holds rename_copy keys, or its bytes reach rename_bytes, or
 * the actions the kv seam counts (kv_batch_room: on etcd and DynamoDB a
 * commit's limit, conditions included) leave no room for them and the
 * node's tail. A file's blocks and xattrs are added one key at a time, so
 * a batch is filled to the engine's limit and never past it.
 */
static bool clone_full(struct clone *c, size_t keys, size_t bytes)
{
	size_t max_n =
	    c->dt->store->rename_copy ? c->dt->store->rename_copy : 1024;

	return c->n + keys > max_n ||
	       c->bytes + bytes >= branch_bytes_limit(c->dt) ||
	       kv_batch_room(c->b) < keys + CLONE_TAIL_OPS;
}

static int clone_maybe_commit(struct clone *c)
{
	return clone_full(c, 1, 0) ? clone_commit(c) : 0;
}

/* Commits the pending batch (if any) before a key of @bytes of file @x's
 * clone @y when it is full (clone_full), the record saying where the file
 * is: its blocks from @blk on, then all its xattrs. */
static int clone_room(struct clone *c, uint64_t x, uint64_t y, uint64_t blk,
		      size_t bytes)
{
	if (!c->n || !clone_full(c, 1, bytes))
		return 0;
	c->rec.ino = y;
	c->rec.aux = x;
	c->rec.blk = blk;
	return clone_commit(c);
}

static int keycmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int d = memcmp(a, b, alen < blen ? alen : blen);

	return d ? d : (alen > blen) - (alen < blen);
}

/*
 * Positions @it at the first key >= @key. @lb says where @it is: at the
 * first key >= lb (empty: unknown). When lb <= key <= the current key, it
 * already is there and needs no seek: files cloned in inode order (a branch
 * created in one go) find their keys with plain nexts.
 */
static void fwd_seek(struct kv_iter *it, struct sbuf *lb, const char *key,
		     size_t klen)
{
	if (lb->len && keycmp(lb->buf, lb->len, key, klen) <= 0) {
		size_t cl;

		if (!kv_iter_valid(it)) {
			if (kv_iter_status(it) == 0)
				return; /* no key at or after lb */
		} else if (keycmp(key, klen, kv_iter_key(it, &cl), cl) <= 0) {
			return;
		}
	}
	kv_iter_seek(it, key, klen);
	sbuf_reset(lb);
	sbuf_add(lb, key, klen);
}

/* Copies the DATA blocks of @x (from block rec.blk) and then all xattrs to
 * inode @y. Batches committed on the way carry rec.ino/blk/aux so a resume
 * continues this file with the same @y. */
static int clone_content(struct clone *c, uint64_t x, uint64_t y, bool data)
{
	struct sbuf k = {0}, xs = {0}, xp = {0};
	uint64_t next = c->rec.blk; /* the block after the last one copied */
	int rc = 0;

	if (!data)
		goto xattrs;
	key_data(&k, c->t->name, x, c->rec.blk);
	for (fwd_seek(c->dit, &c->dlb, k.buf, k.len); kv_iter_valid(c->dit);
	     kv_iter_next(c->dit)) {
		size_t klen, vlen;
		const char *key = kv_iter_key(c->dit, &klen);
		const char *val = kv_iter_value(c->dit, &vlen);
		uint64_t ino, blk;

		if (key_data_decode(key, klen, c->splen, &ino, &blk)) {
			rc = -EIO;
			goto out;
		}
		if (ino != x)
			break;
		rc = clone_room(c, x, y, blk, k.len + vlen);
		if (rc)
			goto out;
		sbuf_reset(&k);
		key_data(&k, c->dt->name, y, blk);
		clone_add(c, k.buf, k.len, val, vlen);
		next = blk + 1;
	}
	rc = kv_iter_status(c->dit);
	if (rc)
		goto out;
	/* past every key of x: at the first key >= DATA#x$ */
	sbuf_reset(&k);
	sbuf_reset(&c->dlb);
	key_data_range(&k, &c->dlb, c->t->name, x, 0);
xattrs:
	key_xattr(&xs, c->t->name, x, "");
	key_xattr(&xp, c->dt->name, y, "");
	for (fwd_seek(c->xit, &c->xlb, xs.buf, xs.len); kv_iter_valid(c->xit);
	     kv_iter_next(c->xit)) {
		size_t klen, vlen;
		const char *key = kv_iter_key(c->xit, &klen);
		const char *val = kv_iter_value(c->xit, &vlen);

		if (klen < xs.len || memcmp(key, xs.buf, xs.len))
			break;
		sbuf_reset(&k);
		sbuf_add(&k, xp.buf, xp.len);
		sbuf_add(&k, key + xs.len, klen - xs.len);
		/* a resume puts the xattrs added before again: the same */
		rc = clone_room(c, x, y, next, k.len + vlen);
		if (rc)
			goto out;
		clone_add(c, k.buf, k.len, val, vlen);
	}
	rc = kv_iter_status(c->xit);
	if (rc == 0) { /* past every xattr of x */
		sbuf_reset(&k);
		sbuf_reset(&c->xlb);
		key_xattr_range(&k, &c->xlb, c->t->name, x);
	}
out:
	if (rc) { /* the iterators' place is unknown */
		sbuf_reset(&c->dlb);
		sbuf_reset(&c->xlb);
	}
	sbuf_release(&k);
	sbuf_release(&xs);
	sbuf_release(&xp);
	return rc;
}

/* A map value: the clone's inode number, 8 bytes little-endian. */
static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The map key of source inode @x in the clone's temporary area. */
static void map_key(struct clone *c, struct sbuf *k, uint64_t x)
{
	key_xtmp_map(k, c->dt->name, c->rec.seq, x);
}

/* The clone record says node @rel is done, and no file is in progress. */
static void clone_done(struct clone *c, const char *rel)
{
	c->rec.ino = c->rec.blk = c->rec.aux = 0;
	c->rec.phase = 1;
	sbuf_reset(&c->rec.cursor);
	sbuf_adds(&c->rec.cursor, rel);
}

/* The second or later link of a cloned hard-linked inode @y: its own batch
 * (the INODE record is read fresh). */
static int clone_link(struct clone *c, const char *dpath, const char *rel,
		      uint64_t y, mode_t mode)
{
	struct attr_ref ref = {0};
	struct sbuf k = {0}, v = {0};
	int rc;

	if (c->n) {
		rc = clone_commit(c);
		if (rc)
			return rc;
	}
	tree_lock_inodes(c->dt, y, 0, 0, 0);
	rc = tree_attr_load(c->dt, NULL, y, &ref);
	if (rc == 0) {
		ref.n.a.nlink++;
		tree_attr_store(c->dt, c->b, &ref);
		key_node(&k, c->dt->name, dpath);
		node_encode_stub(&v, y, mode);
		clone_add(c, k.buf, k.len, v.buf, v.len);
		/* done with this node in the same batch: nlink + 1 once */
		clone_done(c, rel);
		rc = clone_commit(c);
	}
	tree_unlock_inodes(c->dt, y, 0, 0, 0);
	attr_ref_release(&ref);
	sbuf_release(&k);
	sbuf_release(&v);
	return rc;
}

/* The node at @spath as the walk read it, or read now. Errors: -ENOENT,
 * -EIO (does not decode), as tree_get_node. */
static int clone_source(struct clone *c, const char *spath, struct node *n)
{
	if (!c->w->have)
		return tree_get_node(c->t, spath, n, true);
	if (c->w->bad)
		return -EIO;
	n->a = c->w->n.a;
	n->target = c->w->n.target ? strdup(c->w->n.target) : NULL;
	return 0;
}

/* Node @path is not copied, reported in r as @why: true if that stops the
 * clone (mv: strict), before the node; else the clone goes on past it. */
static bool clone_refused(struct clone *c, const char *path, const char *why)
{
	op_fail(c->r, path, "%s", why);
	if (c->strict)
		c->stop = true;
	return c->strict;
}

/* The clone of hard-linked source inode @x this clone made already (its
 * map value) in *y. Errors: -ENOENT (none yet), as kv_get. */
static int map_get(struct clone *c, uint64_t x, uint64_t *y)
{
	struct sbuf k = {0};
	char *val = NULL;
	size_t vlen;
	int rc;

	map_key(c, &k, x);
	rc = kv_get(c->dt->store->kv, k.buf, k.len, &val, &vlen);
	if (rc == 0 && vlen == 8)
		*y = le64((const uint8_t *)val);
	else if (rc == 0)
		rc = -ENOENT;
	free(val);
	sbuf_release(&k);
	return rc;
}

/*
 * Adds the clone @a (its new number in a->ino, symlink @target) of source
 * inode @x at @dpath: a hard-linked inode's first link as its INODE
 * record, its map value and a stub; any other node as the node and its
 * PARENT record (and a folder is remembered for its children).
 */
static void clone_put(struct clone *c, const char *dpath, struct tree_attr *a,
		      const char *target, bool linked, uint64_t x)
{
	struct sbuf k = {0}, v = {0};
	uint64_t y = a->ino;

	if (linked) {
		uint8_t le[8];

		a->nlink = 1;
		key_inode(&k, c->dt->name, y);
		node_encode(&v, a, target);
		clone_add(c, k.buf, k.len, v.buf, v.len);
		sbuf_reset(&v);
		node_encode_stub(&v, y, a->mode);
		for (int i = 0; i < 8; i++)
			le[i] = (uint8_t)(y >> (8 * i));
		sbuf_reset(&k);
		map_key(c, &k, x);
		clone_add(c, k.buf, k.len, (const char *)le, 8);
		sbuf_reset(&k);
		key_node(&k, c->dt->name, dpath);
		clone_add(c, k.buf, k.len, v.buf, v.len);
	} else {
		uint64_t pino = clone_parent_ino(c, dpath);

		tree_batch_put_node(c->dt, c->b, dpath, a, target);
		if (pino)
			parent_batch_put(c->dt, c->b, y, pino, dpath);
		if (S_ISDIR(a->mode))
			clone_push_dir(c, dpath, y);
		c->n += pino ? 2 : 1; /* the node and its PARENT record */
		c->bytes += strlen(dpath) + 64;
	}
	sbuf_release(&k);
	sbuf_release(&v);
}

/* clone_root()'s answer when another shared writer changed the
 * destination's parent first: nothing was written, the root goes again */
#define CLONE_ROOT_AGAIN 1

/* The clone's root (of type @mode) was added: the destination's parent
 * learns of it in the same batch, under the locks a namespace change
 * takes, and the batch is committed; among shared writers conditioned on
 * the parent as read (tree_track), CLONE_ROOT_AGAIN if it changed.
 * Errors: as tree_get_node, tree_batch_dir_touch, tree_commit. */
static int clone_root(struct clone *c, mode_t mode)
{
	char *parent = path_parent(c->dst);
	struct node pn = {0};
	int rc;

	tree_track(c->dt);
	pthread_mutex_lock(&c->dt->ns_lock);
	rc = tree_get_node(c->dt, parent, &pn, false);
	if (rc == 0) {
		tree_lock_inodes(c->dt, pn.a.ino, 0, 0, 0);
		rc = tree_batch_dir_touch(c->dt, c->b, parent,
					  S_ISDIR(mode) ? 1 : 0, tree_now_ns());
		clone_done(c, "");
		if (rc == 0)
			rc = clone_commit(c);
		tree_unlock_inodes(c->dt, pn.a.ino, 0, 0, 0);
	}
	pthread_mutex_unlock(&c->dt->ns_lock);
	if (tree_retry(c->dt, rc))
		rc = CLONE_ROOT_AGAIN;
	node_release(&pn);
	free(parent);
	return rc;
}

/* Copies the node at @spath to @dpath (rel = @rel), adding to the pending
 * batch. Returns 0 (counted in r), or a negative errno that stops the op. */
static int clone_node(struct clone *c, const char *spath, const char *dpath,
		      const char *rel)
{
	struct node n = {0}, in = {0}, dn = {0};
	struct tree_attr a;
	uint64_t x, y;
	bool linked = false, root = !*rel;
	int rc;

	rc = clone_source(c, spath, &n);
	if (rc == -ENOENT) {
		c->r->skipped++;
		rc = 0;
		goto advance;
	}
	if (rc == -EIO) {
		rc = 0;
		if (clone_refused(c, spath,
				  "value does not decode; not copied"))
			goto out;
		goto advance;
	}
	if (rc)
		goto out;
	/* the first node of a call: is the destination as the record says?
	 * (later ones follow from the walk) */
	if (!root && c->rec.ino == 0 && !c->checked &&
	    tree_get_node(c->dt, dpath, &dn, false) == 0) {
		if (clone_refused(c, dpath, "destination exists; not copied"))
			goto out;
		goto advance;
	}
	x = n.a.ino;
	linked = n.a.flags & TREE_F_LINKED;
	if (linked) {
		rc = map_get(c, x, &y);
		if (rc == 0) { /* a later link of an inode cloned already */
			rc = clone_link(c, dpath, rel, y, n.a.mode);
			if (rc)
				goto out;
			c->r->processed++;
			goto advance;
		}
		if (rc != -ENOENT)
			goto out;
		/* the first link: clone the inode from its INODE record */
		rc = tree_get_inode(c->t, x, &in);
		if (rc == -ENOENT || rc == -EIO) {
			bool stop = clone_refused(
			    c, spath,
			    rc == -EIO
				? "its hard-link record is bad; not copied"
				: "its hard-link record is missing; not "
				  "copied");

			rc = 0;
			if (stop)
				goto out;
			linked = false; /* nothing to make visible */
			goto advance;
		}
		if (rc)
			goto out;
		a = in.a;
		/* commit first so the map key is visible to later links */
		if (c->n) {
			rc = clone_commit(c);
			if (rc)
				goto out;
		}
	} else {
		a = n.a;
	}
	if (c->rec.ino && c->rec.aux == x) {
		y = c->rec.ino; /* a file this clone had started */
	} else {
		c->rec.blk = 0;
		rc = tree_alloc_ino(c->dt, &y);
		if (rc)
			goto out;
	}
	/* blocks (files) and xattrs (all) */
	rc = clone_content(c, x, y,
			   S_ISREG(a.mode) &&
			       (a.size > 0 || (a.flags & TREE_F_PREALLOC)));
	if (rc)
		goto out;
	a.ino = y;
	clone_put(c, dpath, &a, linked ? in.target : n.target, linked, x);
	c->r->processed++;
	if (root) {
		rc = clone_root(c, a.mode);
		if (rc == CLONE_ROOT_AGAIN) { /* as before the root */
			c->r->processed--;
			c->rec.phase = 0;
		}
		goto out;
	}
advance:
	clone_done(c, rel);
	if (linked && c->n) /* make the map key visible to later links */
		rc = clone_commit(c);
	else
		rc = clone_maybe_commit(c);
out:
	node_release(&n);
	node_release(&in);
	node_release(&dn);
	return rc;
}

/* The keys of [lo, hi), counted up to @max + 1. Errors: as kv_iter_open. */
static int count_upto(struct kv *kv, const struct sbuf *lo,
		      const struct sbuf *hi, size_t max, size_t *n)
{
	struct kv_iter *it = NULL;
	int rc;

	*n = 0;
	rc = kv_iter_open_keys(&it, kv, lo->buf, lo->len, hi->buf, hi->len);
	for (; rc == 0 && *n <= max && kv_iter_valid(it); kv_iter_next(it))
		(*n)++;
	if (rc == 0)
		rc = kv_iter_status(it);
	kv_iter_free(it);
	return rc;
}

int clone_finish(struct tree *dt, struct journal_rec *rec, struct kv_batch *b,
		 struct crash_hook *h)
{
	size_t max = kv_range_keys(dt->store->kv), n = 0;
	struct sbuf lo = {0}, hi = {0}, k = {0};
	int rc = 0;

	key_xtmp_range(&lo, &hi, dt->name, rec->seq);
	if (max != SIZE_MAX)
		rc = count_upto(dt->store->kv, &lo, &hi, max, &n);
	if (rc == 0 && n > max && rec->phase != CLONE_PHASE_DROP) {
		/* everything copied: from here on only the map goes */
		rec->phase = CLONE_PHASE_DROP;
		rec->ino = rec->blk = rec->aux = 0;
		journal_rec_put(dt, b, rec);
		rc = tree_commit(dt, b);
		kv_batch_clear(b);
		if (rc == 0)
			crash_hook_batch(h);
	}
	if (rc == 0 && n > max)
		rc = tree_drop_slices(dt, b, lo.buf, lo.len, hi.buf, hi.len, h,
				      NULL);
	if (rc == 0)
		rc = tree_batch_drop_range(dt, b, lo.buf, lo.len, hi.buf,
					   hi.len);
	key_journal(&k, dt->name, rec->seq);
	kv_batch_delete(b, k.buf, k.len);
	if (rc == 0)
		rc = tree_commit(dt, b);
	kv_batch_clear(b);
	if (rc == 0)
		crash_hook_batch(h);
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&k);
	return rc;
}

/* Runs clone record c->rec to its end or until @budget nodes are copied.
 * *done tells whether it finished (record and map deleted). */
static int clone_run(struct clone *c, uint64_t budget, uint64_t *used,
		     bool *done)
{
	struct walk w;
	struct sbuf p = {0}, d = {0};
	int rc;

	*done = false;
	c->b = kv_batch_new(c->dt->store->kv);
	rc = walk_open(&w, c->t, c->src);
	if (rc)
		goto out;
	c->w = &w;
	{
		struct sbuf lo = {0}, hi = {0};

		key_kind_range(&lo, &hi, c->t->name, KEY_DATA);
		rc = kv_iter_open(&c->dit, c->t->store->kv, lo.buf, lo.len,
				  hi.buf, hi.len);
		sbuf_reset(&lo);
		sbuf_reset(&hi);
		key_kind_range(&lo, &hi, c->t->name, KEY_XATTR);
		if (rc == 0)
			rc = kv_iter_open(&c->xit, c->t->store->kv, lo.buf,
					  lo.len, hi.buf, hi.len);
		sbuf_release(&lo);
		sbuf_release(&hi);
		if (rc)
			goto out;
	}
	sbuf_adds(&p, c->src);
	if (c->rec.phase == CLONE_PHASE_DROP)
		goto finish; /* everything copied */
	if (c->rec.phase == 1) {
		branch_join(&p, c->src, c->rec.cursor.buf);
		rc = walk_pre_next(&w, &p);
		if (rc < 0)
			goto out;
		if (rc == 0)
			goto finish;
	}
	for (;;) {
		const char *rel = branch_rel(c->src, p.buf);

		if (budget && *used >= budget) {
			/* the record's cursor may be ahead of what is
			 * committed even with nothing pending (a link) */
			rc = clone_commit(c);
			goto out;
		}
		branch_join(&d, c->dst, rel);
		for (int tries = 0;; tries++) {
			rc = clone_node(c, p.buf, d.buf, rel);
			if (rc != CLONE_ROOT_AGAIN)
				break;
			if (tries == 100) {
				rc = -EAGAIN; /* the folder never stood still */
				break;
			}
		}
		c->checked = true;
		if (rc == 0 && c->stop)
			rc = clone_commit(c);
		if (rc || c->stop)
			goto out;
		(*used)++;
		rc = walk_pre_next(&w, &p);
		if (rc < 0)
			goto out;
		if (rc == 0)
			break;
	}
finish:
	rc = clone_finish(c->dt, &c->rec, c->b, c->h);
	if (rc == 0)
		*done = true;
out:
	kv_iter_free(c->dit);
	kv_iter_free(c->xit);
	c->dit = c->xit = NULL;
	sbuf_release(&c->dlb);
	sbuf_release(&c->xlb);
	c->w = NULL;
	walk_close(&w);
	kv_batch_free(c->b);
	c->b = NULL;
	sbuf_release(&p);
	sbuf_release(&d);
	return rc;
}

int clone_op(struct tree *t, const char *src, struct tree *dt, const char *dst,
	     uint64_t budget, uint64_t *used, struct token *k, bool resuming,
	     struct crash_hook *h, struct tree_op_result *r, bool *done)
{
	struct clone c = {.t = t,
			  .dt = dt,
			  .src = src,
			  .dst = dst,
			  .h = h,
			  .r = r,
			  .strict = k->op == OP_MV};
	struct sbuf pre = {0};
	struct node n = {0};
	uint64_t lock = 0;
	int rc;

	*done = false;
	/* among shared writers the destination branch is this call's alone
	 * (branch_lock.c: the others' changes there wait), from before its
	 * checks to its last batch */
	if (tree_shared(dt)) {
		rc = journal_hold(dt, dst, dst, &lock);
		if (rc)
			return rc;
	}
	key_drive_prefix(&pre, t->name);
	c.splen = pre.len;
	sbuf_reset(&pre);
	key_drive_prefix(&pre, dt->name);
	c.dplen = pre.len;
	sbuf_release(&pre);
	if (resuming) {
		rc = journal_rec_get(dt, k->seq, &c.rec);
		if (rc == -ENOENT) {
			*done = true; /* finished by an earlier call */
			rc = 0;
			goto out;
		}
		if (rc)
			goto out;
		if (c.rec.op != JOP_CLONE || strcmp(c.rec.src.buf, src) ||
		    strcmp(c.rec.dst.buf, dst) ||
		    strcmp(c.rec.sdrive.buf, t->name)) {
			rc = -EINVAL;
			goto out;
		}
	} else {
		struct kv_batch *b;

		rc = tree_get_node(t, src, &n, false);
		if (rc)
			goto out;
		node_release(&n);
		rc = tree_get_node(dt, dst, &n, false);
		if (rc == 0) {
			rc = -EEXIST;
			goto out;
		}
		if (rc != -ENOENT)
			goto out;
		{
			char *parent = path_parent(dst);

			rc = tree_get_node(dt, parent, &n, false);
			free(parent);
			if (rc == 0 && !S_ISDIR(n.a.mode))
				rc = -ENOTDIR;
			if (rc)
				goto out;
		}
		rc = tree_alloc_ino(dt, &c.rec.seq);
		if (rc)
			goto out;
		c.rec.op = JOP_CLONE;
		c.rec.phase = 0;
		sbuf_adds(&c.rec.src, src);
		sbuf_adds(&c.rec.dst, dst);
		sbuf_adds(&c.rec.sdrive, t->name);
		sbuf_nul(&c.rec.cursor);
		b = kv_batch_new(dt->store->kv);
		journal_rec_put(dt, b, &c.rec);
		rc = tree_commit(dt, b);
		kv_batch_free(b);
		if (rc)
			goto out;
		crash_hook_batch(h);
		k->seq = c.rec.seq;
	}
	rc = clone_run(&c, budget, used, done);
out:
	if (lock)
		journal_unhold(dt, lock);
	node_release(&n);
	journal_rec_release(&c.rec);
	for (size_t i = 0; i < c.ndirs; i++)
		free(c.dirs[i].path);
	free(c.dirs);
	return rc;
}

int branch_args(struct tree *t, const char *src, struct tree *dt,
		const char *dst)
{
	int rc = path_check(src);

	if (rc == 0)
		rc = path_check(dst);
	if (rc)
		return rc;
	if (strcmp(dst, "/") == 0)
		return -EEXIST;
	if (t == dt && path_is_within(dst, src))
		return -EINVAL;
	if (t->block_size != dt->block_size)
		return -EXDEV;
	return flags_may_add_at(dt, dst); /* chattr +i on dst's folder */
}

int tree_cp_r(struct tree *t, const char *src, struct tree *dt, const char *dst,
	      uint64_t max_items, const char *resume, struct tree_op_result *r)
{
	struct token k = {0};
	struct crash_hook h;
	uint64_t used = 0;
	bool done = false;
	int rc;

	memset(r, 0, sizeof(*r));
	crash_hook_init(&h);
	rc = branch_args(t, src, dt, dst);
	if (rc)
		goto out;
	if (resume) {
		rc = token_check(t, resume, OP_CP, src, dt->name, dst, &k);
		if (rc)
			goto out;
	}
	token_fill(&k, OP_CP, t, src, dt, dst);
	rc = clone_op(t, src, dt, dst, max_items, &used, &k, resume != NULL, &h,
		      r, &done);
	if (rc == 0 && !done)
		rc = token_issue(t, &k, r);
out:
	token_release(&k);
	return rc;
}
