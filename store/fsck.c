/*
 * fsck.c - checks every invariant of a drive that the rest of store/ relies
 * on, and repairs what can be repaired without guessing. This file runs the
 * passes and checks journal records and the inode counter; the nodes are
 * fsck_nodes.c's, everything keyed by inode fsck_content.c's (fsck_i.h).
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

#include "codec_i.h"
#include "drive_i.h"
#include "fsck_i.h"
#include "journal_i.h"

void fsck_vec_push(struct u64vec *a, uint64_t x)
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

void fsck_vec_sort(struct u64vec *a)
{
	if (a->n)
		qsort(a->v, a->n, sizeof(*a->v), cmp_u64);
}

/* Number of times @x occurs in sorted @a. */
size_t fsck_vec_count(const struct u64vec *a, uint64_t x)
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

void fsck_size_push(struct sizevec *a, const struct tree_attr *attr)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 1024;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
		if (!a->v)
			abort();
	}
	a->v[a->n].ino = attr->ino;
	a->v[a->n].blocks = attr->blocks;
	a->v[a->n].stored = 0;
	a->v[a->n].prealloc = (attr->flags & TREE_F_PREALLOC) != 0;
	a->v[a->n++].size = attr->size;
}

int fsck_cmp_isize(const void *a, const void *b)
{
	const struct isize *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The size of regular file @ino, or NULL if no decodable record gives one. */
struct isize *fsck_size_find(const struct sizevec *a, uint64_t ino)
{
	struct isize k = {.ino = ino};

	return a->n ? bsearch(&k, a->v, a->n, sizeof(*a->v), fsck_cmp_isize)
		    : NULL;
}

void fsck_finding(struct fsck *f, const char *fmt, ...)
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

/* Commits a one-off repair batch under ns_lock. */
int fsck_repair_commit(struct fsck *f, struct kv_batch *b)
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
				fsck_finding(
				    f,
				    "JOURNAL#%016llx: unfinished %s %s -> "
				    "%s (replayed)",
				    (unsigned long long)e[i].seq, e[i].op,
				    e[i].src, e[i].dst);
		tree_journal_list_free(e, n);
		rc = tree_journal_replay(t, &replayed);
		if (rc)
			fsck_finding(f, "journal replay failed: %s",
				     strerror(-rc));
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

		fsck_vec_push(&f->seqs, e[i].seq);
		see_ino(f, e[i].seq);
		if (journal_rec_get(t, e[i].seq, &rec) != 0) {
			fsck_finding(f,
				     "JOURNAL#%016llx: value does not decode",
				     (unsigned long long)e[i].seq);
			journal_rec_release(&rec);
			continue;
		}
		if (rec.op == JOP_CLONE && rec.phase == CLONE_PHASE_DROP)
			fsck_finding(
			    f,
			    "JOURNAL#%016llx: clone %s -> %s copied, its map "
			    "not yet dropped (the next store open or its "
			    "token finishes it)",
			    (unsigned long long)e[i].seq, e[i].src, e[i].dst);
		else if (rec.op == JOP_CLONE)
			fsck_finding(
			    f,
			    "JOURNAL#%016llx: paused clone %s -> %s at "
			    "'%s' (resume it with its token)",
			    (unsigned long long)e[i].seq, e[i].src, e[i].dst,
			    e[i].cursor);
		else
			fsck_finding(
			    f,
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
			fsck_vec_push(&f->nodes, rec.ino);
			see_ino(f, rec.ino);
		}
		if (rec.op == JOP_EXCHANGE)
			f->skip_refs = true;
		journal_rec_release(&rec);
	}
	fsck_vec_sort(&f->seqs);
	tree_journal_list_free(e, n);
	return 0;
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
		fsck_finding(f, "META: %s",
			     rc == -ENOENT ? "missing" : "does not decode");
		rc = 0;
		goto out;
	}
	if (f->max_ino < m.ino_hwm)
		goto out;
	fsck_finding(
	    f, "META: inode counter %llu is not above inode %llu in use%s",
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
		fsck_finding(f, "repair of META failed: %s", strerror(-rc));
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
		rc = fsck_check_orphans(&f);
	if (rc == 0)
		rc = fsck_check_nodes(&f);
	if (rc == 0)
		rc = fsck_check_content(&f);
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
