/*
 * fsck.c - checks every invariant of a drive that the rest of store/ relies
 * on, and repairs what can be repaired without guessing.
 *
 * Checked, each violation one finding (one line naming the path or key):
 *  - every node key is well formed and every value decodes (nodes, INODE,
 *    META, journal records);
 *  - the root folder exists; every other node's parent exists and is a folder;
 *  - no two nodes (other than hard-link stubs) share an inode number;
 *  - a folder's nlink is 2 + its sub-folders;
 *  - hard links: an INODE record's nlink equals the number of stubs pointing
 *    to it; 0 only for an orphan (ORPHAN key); every stub has its INODE
 *    record; every ORPHAN key has its INODE record;
 *  - no DATA, XATTR or INODE key of an inode nothing points to;
 *  - the reverse index (parent.c, stores of format 4): every node with one
 *    name but the root has its PARENT record naming its parent's inode and
 *    its name, and every PARENT record belongs to such a node;
 *  - the inode counter (META's high-water mark) is above every inode number
 *    and journal sequence number in use;
 *  - unfinished journal records, and temporary keys (XTMP#) left without
 *    their journal record;
 *  - content (content.c's invariants): a DATA block longer than the drive's
 *    block size, a block lying wholly past its file's size, and a last block
 *    holding bytes at or past the size (each finding names the key, the inode
 *    and, when a node points to it, a path); a file's block count (st_blocks)
 *    that differs from the DATA keys it has, re-counted under the inode's
 *    stripe before it is reported (a write may have been in flight).
 *
 * Repaired with @repair: rename/exchange journal records are replayed (first,
 * so the checks then see the finished tree); unreferenced DATA/XATTR/INODE
 * keys and stray ORPHAN keys are deleted; wrong nlink values are set to what
 * the tree says; the counter is raised; leftover temporary keys are deleted;
 * PARENT records are rewritten from the tree, and stray ones deleted;
 * blocks wholly past the end of their file are deleted and a last block is
 * cut at the end of file (what a truncate to the file's size does: no reader
 * can see those bytes, and an extension must read zeros there), each after
 * re-reading the size and the block under the inode's stripe; a wrong block
 * count is set to the keys counted under the stripe.
 * Not repaired (reported only): values that do not decode, nodes without a
 * parent, duplicate inode numbers, stubs without an INODE record, paused
 * clones (they are resumed with their token), blocks longer than the block
 * size within the file (reads of them fail with EIO; cutting one would serve
 * bytes of unknown worth as file content). While any node value does not
 * decode, unreferenced content is reported but kept: that node may be the
 * one pointing to it.
 *
 * Limits: one pass over the drive plus one children scan per folder, and one
 * more pass over the nodes when content is damaged (to name the files);
 * memory is 8 bytes per node (the inode numbers, sorted to find unreferenced
 * keys) plus 16 per regular file (inode and size) plus 8 per hard-link stub,
 * INODE record and orphan, plus a little per damaged block. While a rename or clone
 * is in flight, the nodes under its source and destination are not checked
 * for parents and nlink (the record itself is the finding), the copies under
 * a rename's destination do not count as users of their inodes, and while an
 * exchange is unfinished the inode reference checks are skipped.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_i.h"

struct u64vec {
	uint64_t *v;
	size_t n, cap;
};

static void vec_push(struct u64vec *a, uint64_t x)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 1024;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
		if (!a->v)
			abort();
	}
	a->v[a->n++] = x;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void vec_sort(struct u64vec *a)
{
	if (a->n)
		qsort(a->v, a->n, sizeof(*a->v), cmp_u64);
}

/* Number of times @x occurs in sorted @a. */
static size_t vec_count(const struct u64vec *a, uint64_t x)
{
	size_t lo = 0, hi = a->n, n = 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a->v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo + n < a->n && a->v[lo + n] == x)
		n++;
	return n;
}

/* A regular file's size and block count, for the content checks. */
struct isize {
	uint64_t ino, size;
	uint64_t blocks; /* recorded (TREE_BLOCKS_UNKNOWN: not kept) */
	uint64_t stored; /* DATA keys found */
};

struct sizevec {
	struct isize *v;
	size_t n, cap;
};

static void size_push(struct sizevec *a, uint64_t ino, uint64_t size,
		      uint64_t blocks)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 1024;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
		if (!a->v)
			abort();
	}
	a->v[a->n].ino = ino;
	a->v[a->n].blocks = blocks;
	a->v[a->n].stored = 0;
	a->v[a->n++].size = size;
}

static int cmp_isize(const void *a, const void *b)
{
	const struct isize *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The size of regular file @ino, or NULL if no decodable record gives one. */
static struct isize *size_find(const struct sizevec *a, uint64_t ino)
{
	struct isize k = {.ino = ino};

	return a->n ? bsearch(&k, a->v, a->n, sizeof(*a->v), cmp_isize) : NULL;
}

/* A damaged content block, reported once the files' paths are known; or
 * (BLK_COUNT) a file whose block count is wrong. */
enum block_damage { BLK_LONG, BLK_PAST_END, BLK_TAIL, BLK_COUNT };

struct bad_block {
	uint64_t ino, blk;
	size_t vlen;
	uint64_t recorded, stored; /* BLK_COUNT: the count and the keys */
	uint64_t size; /* the file's size, when known */
	bool size_known;
	enum block_damage kind;
	char *path; /* a path of the inode (malloc'd) or NULL */
};

struct fsck {
	struct tree *t;
	bool repair;
	void (*report)(void *ctx, const char *msg);
	void *ctx;
	size_t findings;
	size_t plen; /* length of the drive prefix of every key */
	struct u64vec nodes, stubs, inodes, orphans, seqs;
	uint64_t max_ino;
	char **busy; /* src and dst of unfinished journal records */
	size_t nbusy;
	char **copies; /* dst of unfinished renames: copies of src's nodes */
	size_t ncopies;
	bool skip_refs;	  /* an exchange is unfinished: inodes are in flux */
	size_t bad_nodes; /* node values that do not decode */
	struct sizevec sizes; /* regular files, sorted by inode before DATA# */
	struct bad_block *bad;
	size_t nbad, capbad;
};

static void finding(struct fsck *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void finding(struct fsck *f, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	f->findings++;
	if (f->report)
		f->report(f->ctx, line);
}

/* @p (length @n) with bytes outside printable ASCII as \xNN, malloc'd, so a
 * finding stays one line whatever a name holds. */
static char *esc(const char *p, size_t n)
{
	struct sbuf o = {0};

	sbuf_nul(&o);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		char hex[8];

		if (c < 0x20 || c > 0x7e || c == '\\') {
			snprintf(hex, sizeof(hex), "\\x%02x", c);
			sbuf_adds(&o, hex);
		} else {
			sbuf_addc(&o, (char)c);
		}
	}
	return o.buf;
}

static bool is_busy(const struct fsck *f, const char *path)
{
	for (size_t i = 0; i < f->nbusy; i++)
		if (path_is_within(path, f->busy[i]))
			return true;
	return false;
}

static bool is_copy(const struct fsck *f, const char *path)
{
	for (size_t i = 0; i < f->ncopies; i++)
		if (path_is_within(path, f->copies[i]))
			return true;
	return false;
}

static void see_ino(struct fsck *f, uint64_t ino)
{
	if (ino > f->max_ino)
		f->max_ino = ino;
}

/* Commits a one-off repair batch under ns_lock. */
static int repair_commit(struct fsck *f, struct kv_batch *b)
{
	int rc = tree_commit(f->t, b);

	kv_batch_clear(b);
	return rc;
}

/* ---- journal ------------------------------------------------------------ */

static int check_journal(struct fsck *f)
{
	struct tree *t = f->t;
	struct tree_journal_entry *e = NULL;
	size_t n = 0;
	int rc;

	if (f->repair) {
		size_t replayed = 0;

		rc = tree_journal_list(t, &e, &n);
		if (rc)
			return rc;
		for (size_t i = 0; i < n; i++)
			if (strcmp(e[i].op, "clone") != 0)
				finding(f,
					"JOURNAL#%016llx: unfinished %s %s -> "
					"%s (replayed)",
					(unsigned long long)e[i].seq, e[i].op,
					e[i].src, e[i].dst);
		tree_journal_list_free(e, n);
		rc = tree_journal_replay(t, &replayed);
		if (rc)
			finding(f, "journal replay failed: %s", strerror(-rc));
	}
	rc = tree_journal_list(t, &e, &n);
	if (rc)
		return rc;
	f->busy = calloc(2 * n + 1, sizeof(*f->busy));
	f->copies = calloc(n + 1, sizeof(*f->copies));
	if (!f->busy || !f->copies)
		abort();
	for (size_t i = 0; i < n; i++) {
		struct journal_rec rec = {0};

		vec_push(&f->seqs, e[i].seq);
		see_ino(f, e[i].seq);
		if (journal_rec_get(t, e[i].seq, &rec) != 0) {
			finding(f, "JOURNAL#%016llx: value does not decode",
				(unsigned long long)e[i].seq);
			journal_rec_release(&rec);
			continue;
		}
		if (rec.op == JOP_CLONE)
			finding(f,
				"JOURNAL#%016llx: paused clone %s -> %s at "
				"'%s' (resume it with its token)",
				(unsigned long long)e[i].seq, e[i].src,
				e[i].dst, e[i].cursor);
		else
			finding(f,
				"JOURNAL#%016llx: unfinished %s %s -> %s at "
				"phase %u cursor '%s' (the next store open "
				"replays it)",
				(unsigned long long)e[i].seq, e[i].op, e[i].src,
				e[i].dst, rec.phase, e[i].cursor);
		/* a clone only builds its destination; its source is
		 * untouched and checked as usual */
		if (rec.op != JOP_CLONE)
			f->busy[f->nbusy++] = strdup(rec.src.buf);
		f->busy[f->nbusy++] = strdup(rec.dst.buf);
		if (rec.op == JOP_RENAME)
			f->copies[f->ncopies++] = strdup(rec.dst.buf);
		/* the file a paused clone is copying: its blocks so far are
		 * in use (the resume appends to them) */
		if (rec.op == JOP_CLONE && rec.ino) {
			vec_push(&f->nodes, rec.ino);
			see_ino(f, rec.ino);
		}
		if (rec.op == JOP_EXCHANGE)
			f->skip_refs = true;
		journal_rec_release(&rec);
	}
	vec_sort(&f->seqs);
	tree_journal_list_free(e, n);
	return 0;
}

/* ---- nodes -------------------------------------------------------------- */

/* Number of sub-folders of @dir, through node iterator @cit. */
static int count_subdirs(struct fsck *f, struct node_iter *cit,
			 const char *dir, uint32_t *count)
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

static void fix_nlink(struct fsck *f, const char *path, uint64_t ino,
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
		rc = repair_commit(f, b);
	}
	tree_unlock_inodes(t, ino, 0, 0, 0);
	pthread_mutex_unlock(&t->ns_lock);
	if (rc)
		finding(f, "repair of inode %llu failed: %s",
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
	size_t pl = path_parent_len(path);
	char *parent = pl ? strndup(path, pl) : strdup("/");
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
		ep = esc(path, strlen(path));
		epar = esc(parent, strlen(parent));
		finding(f, "%s: parent %s %s", ep, epar,
			*last_rc == -ENOTDIR  ? "is not a folder"
			: *last_rc == -ENOENT ? "is missing"
					      : "does not decode");
		free(ep);
		free(epar);
	}
	free(parent);
}

/* Whether the drive has the reverse index (PARENT#, parent.c) to check. */
static bool has_index(const struct fsck *f)
{
	return f->t->store->format >= PARENT_FORMAT;
}

/* Checks the PARENT record of node @ino at @path, a child of folder inode
 * @pino, and with repair writes it right. */
static void check_parent_record(struct fsck *f, const char *path,
				uint64_t ino, uint64_t pino)
{
	struct tree *t = f->t;
	struct sbuf name = {0};
	uint64_t rp = 0;
	int rc = parent_get(t, ino, &rp, &name);
	char *ep;

	if (rc == 0 && rp == pino && !strcmp(name.buf, path_name(path)))
		goto out;
	ep = esc(path, strlen(path));
	if (rc == 0) {
		char *en = esc(name.buf, name.len);

		finding(f, "%s: PARENT#%016llx names %llu/%s%s", ep,
			(unsigned long long)ino, (unsigned long long)rp, en,
			f->repair ? " (repaired)" : "");
		free(en);
	} else {
		finding(f, "%s: PARENT#%016llx %s (the inode cannot be found "
			"by number)%s", ep, (unsigned long long)ino,
			rc == -ENOENT ? "is missing" : "does not decode",
			f->repair ? " (repaired)" : "");
	}
	free(ep);
	if (f->repair) {
		struct kv_batch *b = kv_batch_new(t->store->kv);

		pthread_mutex_lock(&t->ns_lock);
		parent_batch_put(t, b, ino, pino, path);
		rc = repair_commit(f, b);
		pthread_mutex_unlock(&t->ns_lock);
		kv_batch_free(b);
		if (rc)
			finding(f, "repair of inode %llu failed: %s",
				(unsigned long long)ino, strerror(-rc));
	}
out:
	sbuf_release(&name);
}

static int check_nodes(struct fsck *f)
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
			ep = esc(it.key, it.klen);
			finding(f, "%s: malformed node key", ep);
			free(ep);
			continue;
		}
		busy = is_busy(f, path.buf);
		if (strcmp(path.buf, "/") == 0)
			root = true;
		else if (!busy)
			check_parent(f, path.buf, &last, &last_rc, &last_ino);
		ep = esc(path.buf, path.len);
		if (node_iter_node(&it, &n, false)) {
			finding(f, "%s: value does not decode (%zu bytes)", ep,
				it.vlen);
			f->bad_nodes++;
			free(ep);
			continue;
		}
		see_ino(f, n.a.ino);
		if (busy && is_copy(f, path.buf)) {
			/* the same inodes as the source's nodes */
		} else if (n.a.flags & TREE_F_LINKED) {
			vec_push(&f->stubs, n.a.ino);
		} else {
			vec_push(&f->nodes, n.a.ino);
			if (!busy && last_ino && has_index(f) &&
			    strcmp(path.buf, "/") && !last_rc)
				check_parent_record(f, path.buf, n.a.ino,
						    last_ino);
			if (S_ISREG(n.a.mode))
				size_push(&f->sizes, n.a.ino, n.a.size,
					  n.a.blocks);
		}
		if (S_ISDIR(n.a.mode) && !busy) {
			uint32_t sub;

			rc = count_subdirs(f, &cit, path.buf, &sub);
			if (rc)
				goto next;
			if (n.a.nlink != 2 + sub) {
				finding(f,
					"%s: folder nlink %u, expected %u "
					"(2 + %u sub-folders)%s",
					ep, n.a.nlink, 2 + sub, sub,
					f->repair ? " (repaired)" : "");
				if (f->repair)
					fix_nlink(f, path.buf, n.a.ino,
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
		finding(f, "/: the root folder is missing");
out:
	node_iter_close(&it);
	node_iter_close(&cit);
	sbuf_release(&path);
	sbuf_release(&last);
	return rc;
}

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
		char *ek = esc(key, klen);
		finding(f, "%s: malformed key", ek);
		free(ek);
		return;
	}
	sz = size_find(&f->sizes, ino);
	if (sz)
		sz->stored++;
	d.ino = ino;
	d.blk = blk;
	d.vlen = vlen;
	if (sz) {
		d.size = sz->size;
		d.size_known = true;
	}
	if (sz && blk >= (sz->size + bs - 1) / bs)
		d.kind = BLK_PAST_END; /* even when also too long */
	else if (vlen > bs)
		d.kind = BLK_LONG;
	else if (sz && blk * bs + vlen > sz->size)
		d.kind = BLK_TAIL;
	else
		return;
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
			char *ek = esc(key, klen);
			finding(f, "%s: malformed key", ek);
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
	vec_push(&f->orphans, ino);
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

static void drop_inode(struct fsck *f, uint64_t ino, bool inode_rec,
		       bool orphan_rec)
{
	struct tree *t = f->t;
	struct kv_batch *b = kv_batch_new(f->t->store->kv);
	struct sbuf k = {0};
	int rc;

	tree_lock_inodes(t, ino, 0, 0, 0);
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
		rc = repair_commit(f, b);
	tree_unlock_inodes(t, ino, 0, 0, 0);
	if (rc)
		finding(f, "repair of inode %llu failed: %s",
			(unsigned long long)ino, strerror(-rc));
	sbuf_release(&k);
	kv_batch_free(b);
}

static void on_inode(struct fsck *f, uint64_t ino, size_t nkeys,
		     const char *val, size_t vlen)
{
	size_t stubs = vec_count(&f->stubs, ino);
	bool orphan = vec_count(&f->orphans, ino) > 0;
	const char *fix = f->repair ? " (repaired)" : "";
	struct node n = {0};

	vec_push(&f->inodes, ino);
	see_ino(f, ino);
	if (f->skip_refs)
		return;
	if (node_decode(val, vlen, &n, false)) {
		finding(f, "INODE#%016llx: value does not decode",
			(unsigned long long)ino);
		return;
	}
	if (S_ISREG(n.a.mode) && (stubs || orphan))
		size_push(&f->sizes, ino, n.a.size, n.a.blocks);
	if (stubs == 0 && !orphan) {
		finding(f,
			"INODE#%016llx: no link points to it and it is not "
			"an orphan: attributes and content unreferenced%s",
			(unsigned long long)ino, drop_note(f));
		if (may_drop(f))
			drop_inode(f, ino, true, false);
	} else if (n.a.nlink != stubs) {
		finding(f,
			"INODE#%016llx: nlink %u but %zu link%s point%s to "
			"it%s",
			(unsigned long long)ino, n.a.nlink, stubs,
			stubs == 1 ? "" : "s", stubs == 1 ? "s" : "", fix);
		if (f->repair)
			fix_nlink(f, NULL, ino, (uint32_t)stubs);
	}
	node_release(&n);
}

static bool referenced(const struct fsck *f, uint64_t ino)
{
	return vec_count(&f->nodes, ino) || vec_count(&f->inodes, ino);
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
	finding(f, "%s%016llx: %zu key%s of an inode nothing points to%s",
		key_kind_name(kind), (unsigned long long)ino, nkeys,
		nkeys == 1 ? "" : "s", drop_note(f));
	if (!may_drop(f))
		return;
	b = kv_batch_new(f->t->store->kv);
	if (kind == KEY_DATA)
		key_data_range(&lo, &hi, t->name, ino, 0);
	else
		key_xattr_range(&lo, &hi, t->name, ino);
	rc = tree_batch_drop_range(t, b, lo.buf, lo.len, hi.buf, hi.len);
	if (rc == 0)
		rc = repair_commit(f, b);
	if (rc)
		finding(f, "repair of inode %llu failed: %s",
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
	if (f->bad_nodes || (ino != TREE_ROOT_INO && vec_count(&f->nodes, ino)))
		return;
	finding(f, "PARENT#%016llx: no node with one name has this inode%s",
		(unsigned long long)ino, f->repair ? " (repaired)" : "");
	if (!f->repair)
		return;
	b = kv_batch_new(f->t->store->kv);
	pthread_mutex_lock(&f->t->ns_lock);
	parent_batch_delete(f->t, b, ino);
	rc = repair_commit(f, b);
	pthread_mutex_unlock(&f->t->ns_lock);
	kv_batch_free(b);
	if (rc)
		finding(f, "repair of inode %llu failed: %s",
			(unsigned long long)ino, strerror(-rc));
}

static void on_xtmp(struct fsck *f, uint64_t seq, size_t nkeys, const char *val,
		    size_t vlen)
{
	struct kv_batch *b;
	struct sbuf lo = {0}, hi = {0};
	int rc;

	if (vec_count(&f->seqs, seq))
		return;
	finding(f,
		"XTMP#%016llx: %zu temporary key%s left without a journal "
		"record%s",
		(unsigned long long)seq, nkeys, nkeys == 1 ? "" : "s",
		f->repair ? " (repaired)" : "");
	if (!f->repair)
		return;
	b = kv_batch_new(f->t->store->kv);
	key_xtmp_range(&lo, &hi, f->t->name, seq);
	/* the range covers XTMP#seq/ .. XTMP#seq0; also drop XTMP#seq#... */
	rc = tree_batch_drop_range(f->t, b, lo.buf, lo.len, hi.buf, hi.len);
	if (rc == 0)
		rc = repair_commit(f, b);
	if (rc)
		finding(f, "repair of XTMP#%016llx failed: %s",
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
	if (d->blk >= (ref.n.a.size + bs - 1) / bs)
		kv_batch_delete(b, k.buf, k.len);
	else if (vlen <= bs && d->blk * bs + vlen > ref.n.a.size)
		kv_batch_put(b, k.buf, k.len, val,
			     (size_t)(ref.n.a.size - d->blk * bs));
	else
		rc = 1;
	if (rc == 0)
		rc = repair_commit(f, b);
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
	if (rc == 0 && (!S_ISREG(ref.n.a.mode) ||
			ref.n.a.blocks == TREE_BLOCKS_UNKNOWN))
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
		rc = repair_commit(f, b);
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
		char *ep = d->path ? esc(d->path, strlen(d->path)) : NULL;
		char what[160], fix[80] = "";
		bool repair = f->repair && !f->skip_refs && d->kind != BLK_LONG;

		if (d->kind == BLK_COUNT) {
			int r = recheck_count(f, d, repair);

			if (r == 0 || r < 0)
				finding(f,
					"inode %llu%s%s: block count %llu, "
					"but %llu blocks stored (st_blocks is "
					"wrong)%s",
					(unsigned long long)d->ino,
					ep ? ", " : "", ep ? ep : "",
					(unsigned long long)d->recorded,
					(unsigned long long)d->stored,
					r < 0	 ? " (re-check failed)"
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
		finding(f, "DATA#%016llx#%016llx (inode %llu%s%s): %s%s",
			(unsigned long long)d->ino, (unsigned long long)d->blk,
			(unsigned long long)d->ino, ep ? ", " : "",
			ep ? ep : "", what, fix);
		free(ep);
	}
	return 0;
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
		if (!vec_count(&f->inodes, ino))
			finding(f,
				"INODE#%016llx: missing, but %zu hard-link "
				"stub%s point to it",
				(unsigned long long)ino,
				vec_count(&f->stubs, ino),
				vec_count(&f->stubs, ino) == 1 ? "" : "s");
		if (vec_count(&f->nodes, ino))
			finding(f,
				"inode %llu: used by a hard-link stub and by "
				"a plain node",
				(unsigned long long)ino);
	}
	for (size_t i = 0; i < f->orphans.n; i++) {
		uint64_t ino = f->orphans.v[i];

		if (vec_count(&f->inodes, ino))
			continue;
		finding(f, "ORPHAN#%016llx: its INODE record is missing%s",
			(unsigned long long)ino,
			f->repair ? " (repaired)" : "");
		if (f->repair)
			drop_inode(f, ino, false, true);
	}
	for (size_t i = 1; i < f->nodes.n; i++)
		if (f->nodes.v[i] == f->nodes.v[i - 1] &&
		    (i < 2 || f->nodes.v[i - 2] != f->nodes.v[i]))
			finding(f, "inode %llu: used by %zu nodes",
				(unsigned long long)f->nodes.v[i],
				vec_count(&f->nodes, f->nodes.v[i]));
}

/* ---- the inode counter -------------------------------------------------- */

static int check_counter(struct fsck *f)
{
	struct tree *t = f->t;
	struct sbuf k = {0}, v = {0};
	struct kv_batch *b = NULL;
	struct meta m;
	char *val = NULL;
	size_t vlen;
	int rc;

	key_meta(&k, t->name);
	rc = kv_get(t->store->kv, k.buf, k.len, &val, &vlen);
	if (rc == 0)
		rc = meta_decode(val, vlen, &m);
	if (rc) {
		finding(f, "META: %s",
			rc == -ENOENT ? "missing" : "does not decode");
		rc = 0;
		goto out;
	}
	if (f->max_ino < m.ino_hwm)
		goto out;
	finding(f, "META: inode counter %llu is not above inode %llu in use%s",
		(unsigned long long)m.ino_hwm, (unsigned long long)f->max_ino,
		f->repair ? " (repaired)" : "");
	if (!f->repair)
		goto out;
	pthread_mutex_lock(&t->alloc_lock);
	m.ino_hwm = f->max_ino + 1 + INO_RANGE;
	if (m.ino_hwm < t->ino_limit)
		m.ino_hwm = t->ino_limit;
	meta_encode(&v, &m);
	b = kv_batch_new(t->store->kv);
	kv_batch_put(b, k.buf, k.len, v.buf, v.len);
	rc = tree_commit(t, b);
	if (rc == 0) {
		t->ino_limit = m.ino_hwm;
		if (t->ino_next <= f->max_ino)
			t->ino_next = f->max_ino + 1;
	}
	pthread_mutex_unlock(&t->alloc_lock);
	if (rc) {
		finding(f, "repair of META failed: %s", strerror(-rc));
		rc = 0;
	}
out:
	kv_batch_free(b);
	free(val);
	sbuf_release(&k);
	sbuf_release(&v);
	return rc;
}

int tree_fsck(struct tree *t, bool repair,
	      void (*report)(void *ctx, const char *msg), void *ctx,
	      size_t *findings)
{
	struct fsck f = {
	    .t = t, .repair = repair, .report = report, .ctx = ctx};
	struct sbuf pre = {0};
	int rc;

	if (repair && kv_read_only(t->store->kv))
		f.repair = false;
	key_drive_prefix(&pre, t->name);
	f.plen = pre.len;
	sbuf_release(&pre);

	rc = check_journal(&f);
	if (rc == 0)
		rc = scan_kind(&f, KEY_ORPHAN, on_orphan);
	vec_sort(&f.orphans);
	if (rc == 0)
		rc = check_nodes(&f);
	vec_sort(&f.nodes);
	vec_sort(&f.stubs);
	if (rc == 0)
		rc = scan_kind(&f, KEY_INODE, on_inode);
	vec_sort(&f.inodes);
	if (f.sizes.n)
		qsort(f.sizes.v, f.sizes.n, sizeof(*f.sizes.v), cmp_isize);
	if (rc == 0)
		check_cross(&f);
	if (rc == 0)
		rc = scan_kind(&f, KEY_DATA, on_data);
	if (rc == 0 && !f.skip_refs)
		check_counts(&f);
	if (rc == 0)
		rc = report_blocks(&f);
	if (rc == 0)
		rc = scan_kind(&f, KEY_XATTR, on_xattr);
	if (rc == 0)
		rc = scan_kind(&f, KEY_XTMP, on_xtmp);
	if (rc == 0 && has_index(&f) && !f.skip_refs && !f.nbusy)
		rc = scan_kind(&f, KEY_PARENT, on_parent);
	if (rc == 0)
		rc = check_counter(&f);
	if (findings)
		*findings = f.findings;
	free(f.nodes.v);
	free(f.stubs.v);
	free(f.inodes.v);
	free(f.orphans.v);
	free(f.seqs.v);
	free(f.sizes.v);
	for (size_t i = 0; i < f.nbad; i++)
		free(f.bad[i].path);
	free(f.bad);
	for (size_t i = 0; i < f.nbusy; i++)
		free(f.busy[i]);
	free(f.busy);
	for (size_t i = 0; i < f.ncopies; i++)
		free(f.copies[i]);
	free(f.copies);
	return rc;
}
