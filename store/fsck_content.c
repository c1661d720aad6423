/*
 * fsck_content.c - fsck's checks of everything keyed by inode number
 * (fsck_i.h): ORPHAN and INODE records and hard-link counts, DATA blocks
 * (length, past the end (empty ones are allowed there with TREE_F_PREALLOC),
 * the last block's tail, the block count), XATTR keys,
 * the temporary keys of journal records (XTMP) and PARENT records nothing
 * points to; and their repairs.
 *
 * Repairs that drop a range that may be big go in slices (drop_big()).
 *
 * Limits: one scan per kind of key; a damaged block's path costs one more
 * pass over the nodes (name_blocks()), paid only when there is one.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch_i.h"
#include "content_i.h"
#include "drive_i.h"
#include "fsck_i.h"
#include "journal_i.h"
#include "parent_i.h"

/* ---- inodes, orphans, content ------------------------------------------- */

static void bad_push(struct fsck *f, const struct bad_block *d)
{
	if (f->nbad == f->capbad) {
		f->capbad = f->capbad ? f->capbad * 2 : 16;
		f->bad = realloc(f->bad, f->capbad * sizeof(*f->bad));
		if (!f->bad)
			abort();
	}
	f->bad[f->nbad++] = *d;
}

static int cmp_bad(const void *a, const void *b)
{
	const struct bad_block *x = a, *y = b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind == BLK_COUNT ? 1 : y->kind == BLK_COUNT ? -1 : 0;
	return x->blk < y->blk ? -1 : x->blk > y->blk;
}

/* Checks one DATA key against content.c's invariants; damage is kept in
 * f->bad and reported by report_blocks(). */
static void check_block(struct fsck *f, const char *key, size_t klen,
			size_t vlen)
{
	uint64_t bs = f->t->block_size, ino, blk;
	struct isize *sz;
	struct bad_block d = {0};

	if (key_data_decode(key, klen, f->plen, &ino, &blk)) {
		char *ek = tree_escape(key, klen, 0);
		fsck_finding(f, "%s: malformed key", ek);
		free(ek);
		return;
	}
	sz = fsck_size_find(&f->sizes, ino);
	if (sz)
		sz->stored++;
	d.ino = ino;
	d.blk = blk;
	d.vlen = vlen;
	if (sz) {
		d.size = sz->size;
		d.size_known = true;
	}
	if (sz && blk >= (sz->size + bs - 1) / bs) {
		/* fallocate(FALLOC_FL_KEEP_SIZE) allocates there */
		if (sz->prealloc && vlen == 0)
			return;
		d.kind = BLK_PAST_END; /* even when also too long */
	} else if (vlen > bs) {
		d.kind = BLK_LONG;
	} else if (sz && blk * bs + vlen > sz->size) {
		d.kind = BLK_TAIL;
	} else {
		return;
	}
	bad_push(f, &d);
}

/* Files whose block count differs from their DATA keys (after the DATA
 * scan), added to f->bad, which is then sorted by inode again. */
static void check_counts(struct fsck *f)
{
	for (size_t i = 0; i < f->sizes.n; i++) {
		const struct isize *sz = &f->sizes.v[i];
		struct bad_block d = {0};

		if (sz->blocks == TREE_BLOCKS_UNKNOWN ||
		    sz->blocks == sz->stored ||
		    (i + 1 < f->sizes.n && f->sizes.v[i + 1].ino == sz->ino))
			continue; /* a duplicate inode is reported elsewhere */
		d.ino = sz->ino;
		d.kind = BLK_COUNT;
		d.recorded = sz->blocks;
		d.stored = sz->stored;
		bad_push(f, &d);
	}
	if (f->nbad)
		qsort(f->bad, f->nbad, sizeof(*f->bad), cmp_bad);
}

/* Scans the keys of @kind, calling @fn once per distinct inode number with
 * the number of keys it has. */
static int scan_kind(struct fsck *f, enum key_kind kind,
		     void (*fn)(struct fsck *f, uint64_t ino, size_t nkeys,
				const char *val, size_t vlen))
{
	struct sbuf lo = {0}, hi = {0};
	struct kv_iter *it = NULL;
	uint64_t cur = 0;
	size_t count = 0;
	int rc;

	key_kind_range(&lo, &hi, f->t->name, kind);
	rc = kv_iter_open(&it, f->t->store->kv, lo.buf, lo.len, hi.buf, hi.len);
	if (rc)
		goto out;
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		size_t klen, vlen;
		const char *key = kv_iter_key(it, &klen);
		const char *val = kv_iter_value(it, &vlen);
		uint64_t ino;

		if (key_ino_decode(key, klen, f->plen, kind, &ino)) {
			char *ek = tree_escape(key, klen, 0);
			fsck_finding(f, "%s: malformed key", ek);
			free(ek);
			continue;
		}
		if (kind == KEY_DATA)
			check_block(f, key, klen, vlen);
		if (count && ino != cur) {
			fn(f, cur, count, NULL, 0);
			count = 0;
		}
		cur = ino;
		count++;
		if (count == 1 && val &&
		    (kind == KEY_INODE || kind == KEY_ORPHAN)) {
			/* one key per inode: hand the value over now */
			fn(f, ino, 1, val, vlen);
			count = 0;
		}
	}
	if (count)
		fn(f, cur, count, NULL, 0);
	rc = kv_iter_status(it);
out:
	kv_iter_free(it);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
}

static void on_orphan(struct fsck *f, uint64_t ino, size_t nkeys,
		      const char *val, size_t vlen)
{
	fsck_vec_push(&f->orphans, ino);
	see_ino(f, ino);
}

/* Whether unreferenced keys may be dropped: not when a node that does not
 * decode might be the one pointing to them. */
static const char *drop_note(const struct fsck *f)
{
	if (!f->repair)
		return "";
	return f->bad_nodes ? " (not repaired: a node value does not decode "
			      "and may point to it)"
			    : " (repaired)";
}

static bool may_drop(const struct fsck *f)
{
	return f->repair && !f->bad_nodes;
}

/*
 * A repair's drop of [lo, hi) that may be big (a leaked file's blocks, a
 * leftover map): in slices, one commit each, until at most one is left for
 * the repair's own batch @b (tree_drop_slices; etcd). Each slice drops keys
 * nothing uses: a crash in between leaves fewer for the next fsck.
 */
static int drop_big(struct fsck *f, struct kv_batch *b, const struct sbuf *lo,
		    const struct sbuf *hi)
{
	return tree_drop_slices(f->t, b, lo->buf, lo->len, hi->buf, hi->len,
				NULL, NULL);
}

static void drop_inode(struct fsck *f, uint64_t ino, bool inode_rec,
		       bool orphan_rec)
{
	struct tree *t = f->t;
	struct kv_batch *b = kv_batch_new(f->t->store->kv);
	struct sbuf k = {0}, hi = {0};
	int rc;

	tree_lock_inodes(t, ino, 0, 0, 0);
	key_data_range(&k, &hi, t->name, ino, 0);
	rc = drop_big(f, b, &k, &hi);
	sbuf_reset(&k);
	sbuf_reset(&hi);
	key_xattr_range(&k, &hi, t->name, ino);
	if (rc == 0)
		rc = drop_big(f, b, &k, &hi);
	sbuf_reset(&k);
	if (rc == 0)
		rc = tree_drop_inode_content(t, b, ino);
	if (inode_rec) {
		key_inode(&k, t->name, ino);
		kv_batch_delete(b, k.buf, k.len);
	}
	if (orphan_rec) {
		sbuf_reset(&k);
		key_orphan(&k, t->name, ino);
		kv_batch_delete(b, k.buf, k.len);
	}
	if (rc == 0)
		rc = fsck_repair_commit(f, b);
	tree_unlock_inodes(t, ino, 0, 0, 0);
	if (rc)
		fsck_finding(f, "repair of inode %llu failed: %s",
			     (unsigned long long)ino, strerror(-rc));
	sbuf_release(&k);
	sbuf_release(&hi);
	kv_batch_free(b);
}

static void on_inode(struct fsck *f, uint64_t ino, size_t nkeys,
		     const char *val, size_t vlen)
{
	size_t stubs = fsck_vec_count(&f->stubs, ino);
	bool orphan = fsck_vec_count(&f->orphans, ino) > 0;
	const char *fix = f->repair ? " (repaired)" : "";
	struct node n = {0};

	fsck_vec_push(&f->inodes, ino);
	see_ino(f, ino);
	if (f->skip_refs)
		return;
	if (node_decode(val, vlen, &n, false)) {
		fsck_finding(f, "INODE#%016llx: value does not decode",
			     (unsigned long long)ino);
		return;
	}
	if (S_ISREG(n.a.mode) && (stubs || orphan))
		fsck_size_push(&f->sizes, &n.a);
	if (stubs == 0 && !orphan) {
		fsck_finding(
		    f,
		    "INODE#%016llx: no link points to it and it is not "
		    "an orphan: attributes and content unreferenced%s",
		    (unsigned long long)ino, drop_note(f));
		if (may_drop(f))
			drop_inode(f, ino, true, false);
	} else if (n.a.nlink != stubs) {
		fsck_finding(
		    f,
		    "INODE#%016llx: nlink %u but %zu link%s point%s to "
		    "it%s",
		    (unsigned long long)ino, n.a.nlink, stubs,
		    stubs == 1 ? "" : "s", stubs == 1 ? "s" : "", fix);
		if (f->repair)
			fsck_fix_nlink(f, NULL, ino, (uint32_t)stubs);
	}
	node_release(&n);
}

static bool referenced(const struct fsck *f, uint64_t ino)
{
	return fsck_vec_count(&f->nodes, ino) ||
	       fsck_vec_count(&f->inodes, ino);
}

static void on_content(struct fsck *f, uint64_t ino, size_t nkeys,
		       enum key_kind kind)
{
	struct tree *t = f->t;
	struct kv_batch *b;
	struct sbuf lo = {0}, hi = {0};
	int rc;

	if (f->skip_refs || referenced(f, ino))
		return;
	fsck_finding(f, "%s%016llx: %zu key%s of an inode nothing points to%s",
		     key_kind_name(kind), (unsigned long long)ino, nkeys,
		     nkeys == 1 ? "" : "s", drop_note(f));
	if (!may_drop(f))
		return;
	b = kv_batch_new(f->t->store->kv);
	if (kind == KEY_DATA)
		key_data_range(&lo, &hi, t->name, ino, 0);
	else
		key_xattr_range(&lo, &hi, t->name, ino);
	rc = drop_big(f, b, &lo, &hi);
	if (rc == 0)
		rc =
		    tree_batch_drop_range(t, b, lo.buf, lo.len, hi.buf, hi.len);
	if (rc == 0)
		rc = fsck_repair_commit(f, b);
	if (rc)
		fsck_finding(f, "repair of inode %llu failed: %s",
			     (unsigned long long)ino, strerror(-rc));
	kv_batch_free(b);
	sbuf_release(&lo);
	sbuf_release(&hi);
}

static void on_data(struct fsck *f, uint64_t ino, size_t nkeys, const char *val,
		    size_t vlen)
{
	on_content(f, ino, nkeys, KEY_DATA);
}

static void on_xattr(struct fsck *f, uint64_t ino, size_t nkeys,
		     const char *val, size_t vlen)
{
	on_content(f, ino, nkeys, KEY_XATTR);
}

/* A PARENT record must belong to a node with one name (f->nodes): a
 * hard-linked inode, an orphan or a removed node has none. */
static void on_parent(struct fsck *f, uint64_t ino, size_t nkeys,
		      const char *val, size_t vlen)
{
	struct kv_batch *b;
	int rc;

	/* while a node does not decode, it may be the one this is of */
	if (f->bad_nodes ||
	    (ino != TREE_ROOT_INO && fsck_vec_count(&f->nodes, ino)))
		return;
	fsck_finding(f,
		     "PARENT#%016llx: no node with one name has this inode%s",
		     (unsigned long long)ino, f->repair ? " (repaired)" : "");
	if (!f->repair)
		return;
	b = kv_batch_new(f->t->store->kv);
	pthread_mutex_lock(&f->t->ns_lock);
	parent_batch_delete(f->t, b, ino);
	rc = fsck_repair_commit(f, b);
	pthread_mutex_unlock(&f->t->ns_lock);
	kv_batch_free(b);
	if (rc)
		fsck_finding(f, "repair of inode %llu failed: %s",
			     (unsigned long long)ino, strerror(-rc));
}

static void on_xtmp(struct fsck *f, uint64_t seq, size_t nkeys, const char *val,
		    size_t vlen)
{
	struct kv_batch *b;
	struct sbuf lo = {0}, hi = {0};
	int rc;

	if (fsck_vec_count(&f->seqs, seq))
		return;
	fsck_finding(f,
		     "XTMP#%016llx: %zu temporary key%s left without a journal "
		     "record%s",
		     (unsigned long long)seq, nkeys, nkeys == 1 ? "" : "s",
		     f->repair ? " (repaired)" : "");
	if (!f->repair)
		return;
	b = kv_batch_new(f->t->store->kv);
	key_xtmp_range(&lo, &hi, f->t->name, seq);
	/* the range covers XTMP#seq/ .. XTMP#seq0; XTMP#seq itself (a
	 * rename's go-ahead, journal.c) goes on its own */
	rc = drop_big(f, b, &lo, &hi);
	if (rc == 0)
		rc = tree_batch_drop_range(f->t, b, lo.buf, lo.len, hi.buf,
					   hi.len);
	sbuf_reset(&lo);
	key_xtmp_mark(&lo, f->t->name, seq);
	kv_batch_delete(b, lo.buf, lo.len);
	if (rc == 0)
		rc = fsck_repair_commit(f, b);
	if (rc)
		fsck_finding(f, "repair of XTMP#%016llx failed: %s",
			     (unsigned long long)seq, strerror(-rc));
	kv_batch_free(b);
	sbuf_release(&lo);
	sbuf_release(&hi);
}

/* Gives each damaged block a path of its inode: one pass over the nodes,
 * paid only when content is damaged. f->bad is in key order, so by inode. */
static int name_blocks(struct fsck *f)
{
	struct sbuf path = {0};
	struct node_iter it;
	int rc;

	rc = node_iter_open(&it, f->t, NODES_ALL, NULL, NULL);
	while (rc == 0 && (rc = node_iter_next(&it)) == 1) {
		size_t l = 0, h = f->nbad;
		struct node n = {0};

		rc = 0;
		if (node_iter_node(&it, &n, false))
			continue;
		while (l < h) {
			size_t mid = l + (h - l) / 2;
			if (f->bad[mid].ino < n.a.ino)
				l = mid + 1;
			else
				h = mid;
		}
		node_release(&n);
		if (l == f->nbad || f->bad[l].ino != n.a.ino || f->bad[l].path)
			continue;
		sbuf_reset(&path);
		if (node_iter_path(&it, &path))
			continue;
		for (; l < f->nbad && f->bad[l].ino == n.a.ino; l++)
			f->bad[l].path = strdup(path.buf);
	}
	node_iter_close(&it);
	sbuf_release(&path);
	return rc;
}

/*
 * Deletes block @d (wholly past the end) or cuts it at the end of file, after
 * re-reading the file's size and the block under the inode's stripe (and
 * ns_lock, so @d->path stays put). Returns 0 when repaired, 1 when the file
 * changed meanwhile and nothing was done, or a negative errno.
 */
static int repair_block(struct fsck *f, const struct bad_block *d)
{
	struct tree *t = f->t;
	uint64_t bs = t->block_size;
	struct attr_ref ref = {0};
	struct kv_batch *b = kv_batch_new(f->t->store->kv);
	struct sbuf k = {0};
	char *val = NULL;
	size_t vlen;
	int rc;

	pthread_mutex_lock(&t->ns_lock);
	tree_lock_inodes(t, d->ino, 0, 0, 0);
	rc = tree_attr_load(t, d->path, d->ino, &ref);
	if (rc == 0 && !S_ISREG(ref.n.a.mode))
		rc = 1;
	if (rc)
		goto out;
	key_data(&k, t->name, d->ino, d->blk);
	rc = kv_get(t->store->kv, k.buf, k.len, &val, &vlen);
	if (rc == -ENOENT)
		rc = 1;
	if (rc)
		goto out;
	if (d->blk >= (ref.n.a.size + bs - 1) / bs &&
	    ((ref.n.a.flags & TREE_F_PREALLOC) && vlen == 0))
		rc = 1; /* allocated past the end by now */
	else if (d->blk >= (ref.n.a.size + bs - 1) / bs)
		kv_batch_delete(b, k.buf, k.len);
	else if (vlen <= bs && d->blk * bs + vlen > ref.n.a.size)
		kv_batch_put(b, k.buf, k.len, val,
			     (size_t)(ref.n.a.size - d->blk * bs));
	else
		rc = 1;
	if (rc == 0)
		rc = fsck_repair_commit(f, b);
out:
	tree_unlock_inodes(t, d->ino, 0, 0, 0);
	pthread_mutex_unlock(&t->ns_lock);
	free(val);
	sbuf_release(&k);
	attr_ref_release(&ref);
	kv_batch_free(b);
	return rc;
}

/*
 * Re-counts the DATA keys of @d's file under its stripe (and ns_lock, so
 * @d->path stays put), as a write may have been in flight during the scan;
 * with @repair sets the count to them. Returns 0 when the count is wrong
 * (d->recorded and d->stored are updated), 1 when it is right by now, or a
 * negative errno.
 */
static int recheck_count(struct fsck *f, struct bad_block *d, bool repair)
{
	struct tree *t = f->t;
	struct attr_ref ref = {0};
	struct kv_batch *b = kv_batch_new(t->store->kv);
	uint64_t n;
	int rc;

	pthread_mutex_lock(&t->ns_lock);
	tree_lock_inodes(t, d->ino, 0, 0, 0);
	rc = tree_attr_load(t, d->path, d->ino, &ref);
	if (rc == -ENOENT)
		rc = 1; /* gone meanwhile */
	if (rc == 0 &&
	    (!S_ISREG(ref.n.a.mode) || ref.n.a.blocks == TREE_BLOCKS_UNKNOWN))
		rc = 1;
	if (rc == 0)
		rc = tree_count_blocks(t, d->ino, 0, UINT64_MAX, &n);
	if (rc == 0 && n == ref.n.a.blocks)
		rc = 1;
	if (rc)
		goto out;
	d->recorded = ref.n.a.blocks;
	d->stored = n;
	if (repair) {
		ref.n.a.blocks = n;
		tree_attr_store(t, b, &ref);
		rc = fsck_repair_commit(f, b);
	}
out:
	tree_unlock_inodes(t, d->ino, 0, 0, 0);
	pthread_mutex_unlock(&t->ns_lock);
	attr_ref_release(&ref);
	kv_batch_free(b);
	return rc;
}

/* One finding per damaged block, repaired where that is safe. */
static int report_blocks(struct fsck *f)
{
	size_t bs = f->t->block_size;
	int rc;

	if (!f->nbad)
		return 0;
	rc = name_blocks(f);
	if (rc)
		return rc;
	for (size_t i = 0; i < f->nbad; i++) {
		struct bad_block *d = &f->bad[i];
		char *ep =
		    d->path ? tree_escape(d->path, strlen(d->path), 0) : NULL;
		char what[160], fix[80] = "";
		bool repair = f->repair && !f->skip_refs && d->kind != BLK_LONG;

		if (d->kind == BLK_COUNT) {
			int r = recheck_count(f, d, repair);

			if (r == 0 || r < 0)
				fsck_finding(
				    f,
				    "inode %llu%s%s: block count %llu, "
				    "but %llu blocks stored (st_blocks is "
				    "wrong)%s",
				    (unsigned long long)d->ino, ep ? ", " : "",
				    ep ? ep : "",
				    (unsigned long long)d->recorded,
				    (unsigned long long)d->stored,
				    r < 0    ? " (re-check failed)"
				    : repair ? " (repaired)"
					     : "");
			free(ep);
			continue;
		}
		if (d->kind == BLK_LONG)
			snprintf(what, sizeof(what),
				 "%zu bytes, longer than the block size %zu "
				 "(reads of it fail)%s",
				 d->vlen, bs,
				 f->repair ? " (not repaired)" : "");
		else if (d->kind == BLK_PAST_END)
			snprintf(what, sizeof(what),
				 "block lies wholly past the end of file "
				 "(size %llu)",
				 (unsigned long long)d->size);
		else
			snprintf(what, sizeof(what),
				 "%llu bytes lie past the end of file "
				 "(size %llu)",
				 (unsigned long long)(d->blk * bs + d->vlen -
						      d->size),
				 (unsigned long long)d->size);
		if (repair) {
			int r = repair_block(f, d);

			snprintf(fix, sizeof(fix), "%s",
				 r == 0	  ? " (repaired)"
				 : r == 1 ? " (not repaired: the file changed "
					    "meanwhile)"
					  : " (repair failed)");
		}
		fsck_finding(f, "DATA#%016llx#%016llx (inode %llu%s%s): %s%s",
			     (unsigned long long)d->ino,
			     (unsigned long long)d->blk,
			     (unsigned long long)d->ino, ep ? ", " : "",
			     ep ? ep : "", what, fix);
		free(ep);
	}
	return 0;
}

/* True if orphan @ino, listed before the INODE records were, still lacks
 * its INODE record and is still an orphan. On a mounted drive the daemon
 * reclaims orphans while fsck runs, and a reclaim deletes both keys in one
 * batch: read in this order, a record gone with its orphan is not taken for
 * a record missing beside it. */
static bool orphan_still(struct fsck *f, uint64_t ino)
{
	struct kv *kv = f->t->store->kv;
	struct sbuf k = {0};
	char *v = NULL;
	size_t vlen;
	bool still;

	key_inode(&k, f->t->name, ino);
	still = kv_get(kv, k.buf, k.len, &v, &vlen) == -ENOENT;
	free(v);
	v = NULL;
	sbuf_reset(&k);
	key_orphan(&k, f->t->name, ino);
	still = still && kv_get(kv, k.buf, k.len, &v, &vlen) == 0;
	free(v);
	sbuf_release(&k);
	return still;
}

/* Stubs whose INODE record is missing, orphans without INODE record, and
 * inode numbers used twice. */
static void check_cross(struct fsck *f)
{
	if (f->skip_refs)
		return;
	for (size_t i = 0; i < f->stubs.n; i++) {
		uint64_t ino = f->stubs.v[i];

		if (i && f->stubs.v[i - 1] == ino)
			continue;
		if (!fsck_vec_count(&f->inodes, ino))
			fsck_finding(
			    f,
			    "INODE#%016llx: missing, but %zu hard-link "
			    "stub%s point to it",
			    (unsigned long long)ino,
			    fsck_vec_count(&f->stubs, ino),
			    fsck_vec_count(&f->stubs, ino) == 1 ? "" : "s");
		if (fsck_vec_count(&f->nodes, ino))
			fsck_finding(
			    f,
			    "inode %llu: used by a hard-link stub and by "
			    "a plain node",
			    (unsigned long long)ino);
	}
	for (size_t i = 0; i < f->orphans.n; i++) {
		uint64_t ino = f->orphans.v[i];

		if (fsck_vec_count(&f->inodes, ino) || !orphan_still(f, ino))
			continue;
		fsck_finding(f, "ORPHAN#%016llx: its INODE record is missing%s",
			     (unsigned long long)ino,
			     f->repair ? " (repaired)" : "");
		if (f->repair)
			drop_inode(f, ino, false, true);
	}
	for (size_t i = 1; i < f->nodes.n; i++)
		if (f->nodes.v[i] == f->nodes.v[i - 1] &&
		    (i < 2 || f->nodes.v[i - 2] != f->nodes.v[i]))
			fsck_finding(f, "inode %llu: used by %zu nodes",
				     (unsigned long long)f->nodes.v[i],
				     fsck_vec_count(&f->nodes, f->nodes.v[i]));
}

int fsck_check_orphans(struct fsck *f)
{
	int rc = scan_kind(f, KEY_ORPHAN, on_orphan);

	fsck_vec_sort(&f->orphans);
	return rc;
}

int fsck_check_content(struct fsck *f)
{
	int rc;

	rc = scan_kind(f, KEY_INODE, on_inode);
	fsck_vec_sort(&f->inodes);
	if (f->sizes.n)
		qsort(f->sizes.v, f->sizes.n, sizeof(*f->sizes.v),
		      fsck_cmp_isize);
	if (rc == 0)
		check_cross(f);
	if (rc == 0)
		rc = scan_kind(f, KEY_DATA, on_data);
	if (rc == 0 && !f->skip_refs)
		check_counts(f);
	if (rc == 0)
		rc = report_blocks(f);
	if (rc == 0)
		rc = scan_kind(f, KEY_XATTR, on_xattr);
	if (rc == 0)
		rc = scan_kind(f, KEY_XTMP, on_xtmp);
	if (rc == 0 && has_index(f) && !f->skip_refs && !f->nbusy)
		rc = scan_kind(f, KEY_PARENT, on_parent);
	return rc;
}
