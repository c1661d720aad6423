/*
 * cascade.c - whole-branch operations: delete a branch (rm -r), clone it
 * (cp -r, also to another drive) and move it (mv, also to another drive),
 * each budgeted and resumable by a token.
 *
 * rm -r of a folder whose branch fits the budget and holds between 64 and
 * 1M nodes reads the branch with one forward scan and deletes it in one
 * atomic batch: one range delete of the subtree's keys, the folder's node,
 * and the content and xattrs of the freed inodes (range deletes over runs of
 * consecutive inode numbers); hard-link stubs and files that may be open go
 * one by one first (see rm_fast()). A crash leaves all of it or none.
 *
 * Otherwise rm -r walks the branch in post-order (children before their
 * folder) with one snapshot iterator and seeks: the next node after X is the
 * deepest first descendant of X's next sibling, or else X's parent.
 * Non-folders are
 * removed in batches (tree_batch_remove: content, xattrs, hard-link counts,
 * orphans with TREE_KEEP_ORPHAN); a folder is removed by tree_rmdir() after
 * the batch holding its children is committed, so it goes only once its
 * children range is empty. A crash at any point leaves no node without its
 * parent. The walk needs nothing but the last path handled: that is what the
 * token holds, and resuming from it (even from an older token after a crash
 * that went further) just finds the removed nodes gone.
 *
 * cp -r walks the source in pre-order (a folder before its children), so
 * parents exist before children. New inode numbers come from the destination
 * drive; content blocks and xattrs are copied; a hard-linked inode is cloned
 * once and its other links inside the branch become links of the clone (a
 * map old ino -> new ino kept in the destination's temporary area
 * XTMP#<seq>/<ino>). The progress is a clone record JOURNAL#<seq> in the
 * destination drive (journal.c), updated in the same batch as each chunk of
 * copies: the relative path of the last node copied, plus the block cursor of
 * a file too big for one batch. The token names the record; the record has
 * the exact position even when the token is older than a crash. Replay at
 * store_open() leaves clone records alone: a stopped clone waits for its
 * token (fsck lists it).
 *
 * mv within a drive is tree_rename() (the journaled rewrite; no budget). Across
 * drives it is a clone, then an rm -r of the source, under one token.
 *
 * Tokens: base64url (A-Z a-z 0-9 - _) of {version, op, phase, seq, source
 * drive, source path, destination drive, destination path, cursor, flags}
 * followed by a SipHash-2-4 tag keyed by a 128-bit secret kept in the source
 * drive (DRIVE#<d>|SECRET, created on first use). A token that is truncated,
 * edited, forged, or issued for another operation, path or drive is -EINVAL
 * before anything changes.
 *
 * Budget: @max_items counts nodes removed or copied in one call (0 = no
 * limit). Batches are bounded by store_options.rename_batch / rename_bytes.
 * The crash hook of journal.c (PATHFS_CRASH_AFTER_BATCHES) counts the batches
 * of each call.
 *
 * Limits: a clone between drives of different block sizes is -EXDEV. The
 * one-batch rm -r holds 24 bytes per node of the branch in memory and a
 * batch of a point delete per content block of files whose inode numbers
 * are not in long runs. Nodes
 * that change while an operation runs are the caller's to keep away (the
 * daemon's subtree lock). In-branch folders keep their mtime while their
 * files are removed (they are removed next). An undecodable node is left in
 * place and reported, and so are its ancestors (not empty).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "siphash.h"
#include "store_i.h"

#define OP_RM	      1
#define OP_CP	      2
#define OP_MV	      3
#define TOKEN_VERSION 1
#define SECRET_LEN    SIPHASH_KEY_LEN
/* token flag: the delete walk has handled a node; the cursor names it */
#define TOKEN_RM_STARTED 0x100

/* ---- results ------------------------------------------------------------ */

void tree_op_result_release(struct tree_op_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nfailures; i++)
		free(r->failures[i]);
	free(r->failures);
	free(r->token);
	memset(r, 0, sizeof(*r));
}

static void fail(struct tree_op_result *r, const char *path, const char *fmt,
		 ...) __attribute__((format(printf, 3, 4)));

static void fail(struct tree_op_result *r, const char *path, const char *fmt,
		 ...)
{
	char reason[256], *line;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	r->failed++;
	if (asprintf(&line, "%s: %s", path, reason) < 0)
		abort();
	r->failures =
	    realloc(r->failures, (r->nfailures + 1) * sizeof(*r->failures));
	if (!r->failures)
		abort();
	r->failures[r->nfailures++] = line;
}

/* ---- tokens ------------------------------------------------------------- */

/* The drive's token secret, created on first use. */
static int drive_secret(struct tree *t, uint8_t key[SECRET_LEN])
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct sbuf k = {0};
	struct kv_batch *b = NULL;
	char *val = NULL;
	size_t vlen;
	int rc;

	key_drive_prefix(&k, t->name);
	sbuf_adds(&k, "SECRET");
	pthread_mutex_lock(&lock);
	rc = kv_get(t->store->kv, k.buf, k.len, &val, &vlen);
	if (rc == 0 && vlen == SECRET_LEN) {
		memcpy(key, val, SECRET_LEN);
		goto out;
	}
	if (rc == 0 || rc == -ENOENT) {
		if (rc == 0)
			plog(LOG_WARNING, "drive %s: bad SECRET, replaced",
			     t->name);
		if (getrandom(key, SECRET_LEN, 0) != SECRET_LEN) {
			rc = -EIO;
			goto out;
		}
		b = kv_batch_new(t->store->kv);
		kv_batch_put(b, k.buf, k.len, (const char *)key, SECRET_LEN);
		rc = tree_commit(t, b);
	}
out:
	pthread_mutex_unlock(&lock);
	kv_batch_free(b);
	free(val);
	sbuf_release(&k);
	return rc;
}

struct token {
	uint32_t op, phase;
	uint64_t seq;
	unsigned flags;
	struct sbuf sdrive, src, ddrive, dst, cursor;
};

static void token_release(struct token *k)
{
	sbuf_release(&k->sdrive);
	sbuf_release(&k->src);
	sbuf_release(&k->ddrive);
	sbuf_release(&k->dst);
	sbuf_release(&k->cursor);
}

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void b64_encode(struct sbuf *out, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		size_t left = n - i;

		if (left > 1)
			v |= (uint32_t)p[i + 1] << 8;
		if (left > 2)
			v |= p[i + 2];
		sbuf_addc(out, b64[v >> 18 & 63]);
		sbuf_addc(out, b64[v >> 12 & 63]);
		if (left > 1)
			sbuf_addc(out, b64[v >> 6 & 63]);
		if (left > 2)
			sbuf_addc(out, b64[v & 63]);
	}
}

static int b64_decode(struct sbuf *out, const char *s)
{
	uint32_t v = 0;
	int bits = 0;

	for (; *s; s++) {
		const char *c = strchr(b64, *s);

		if (!c)
			return -EINVAL;
		v = v << 6 | (uint32_t)(c - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			sbuf_addc(out, (char)(v >> bits & 0xff));
		}
	}
	/* leftover bits must be padding zeros of a well-formed encoding */
	if (bits >= 6 || (v & ((1u << bits) - 1)))
		return -EINVAL;
	return 0;
}

static void token_payload(struct sbuf *p, const struct token *k)
{
	sbuf_addc(p, TOKEN_VERSION);
	put_varint(p, k->op);
	put_varint(p, k->phase);
	put_varint(p, k->seq);
	put_varint(p, k->flags);
	put_bytes(p, k->sdrive.buf, k->sdrive.len);
	put_bytes(p, k->src.buf, k->src.len);
	put_bytes(p, k->ddrive.buf, k->ddrive.len);
	put_bytes(p, k->dst.buf, k->dst.len);
	put_bytes(p, k->cursor.buf, k->cursor.len);
}

/* Makes r->token for @k, keyed by the secret of @t (the source drive). */
static int token_issue(struct tree *t, const struct token *k,
		       struct tree_op_result *r)
{
	uint8_t key[SECRET_LEN], tag[8];
	struct sbuf p = {0}, o = {0};
	uint64_t mac;
	int rc;

	rc = drive_secret(t, key);
	if (rc)
		goto out;
	token_payload(&p, k);
	mac = siphash24(key, p.buf, p.len);
	for (int i = 0; i < 8; i++)
		tag[i] = (uint8_t)(mac >> (8 * i));
	sbuf_add(&p, tag, 8);
	sbuf_nul(&o);
	b64_encode(&o, (const uint8_t *)p.buf, p.len);
	free(r->token);
	r->token = o.buf;
	o.buf = NULL;
out:
	sbuf_release(&p);
	sbuf_release(&o);
	return rc;
}

static int get_tok_sbuf(const char **p, const char *end, struct sbuf *s)
{
	const char *v;
	size_t n;

	if (get_bytes(p, end, &v, &n))
		return -EINVAL;
	sbuf_reset(s);
	sbuf_add(s, v, n);
	sbuf_nul(s);
	return 0;
}

/*
 * Checks token @s against the secret of @t and decodes it into @k, which must
 * then match @op, the source drive/path and the destination drive/path
 * (@ddrive/@dst NULL for rm). Errors: -EINVAL.
 */
static int token_check(struct tree *t, const char *s, uint32_t op,
		       const char *src, const char *ddrive, const char *dst,
		       struct token *k)
{
	uint8_t key[SECRET_LEN];
	struct sbuf raw = {0};
	const char *p, *end;
	uint64_t mac = 0, v[4];
	int rc;

	rc = drive_secret(t, key);
	if (rc)
		goto out;
	rc = -EINVAL;
	if (b64_decode(&raw, s) || raw.len < 9)
		goto out;
	for (int i = 0; i < 8; i++)
		mac |= (uint64_t)(uint8_t)raw.buf[raw.len - 8 + i] << (8 * i);
	if (siphash24(key, raw.buf, raw.len - 8) != mac)
		goto out;
	p = raw.buf;
	end = raw.buf + raw.len - 8;
	if (*p++ != TOKEN_VERSION)
		goto out;
	for (int i = 0; i < 4; i++)
		if (get_varint(&p, end, &v[i]))
			goto out;
	if (get_tok_sbuf(&p, end, &k->sdrive) ||
	    get_tok_sbuf(&p, end, &k->src) ||
	    get_tok_sbuf(&p, end, &k->ddrive) ||
	    get_tok_sbuf(&p, end, &k->dst) ||
	    get_tok_sbuf(&p, end, &k->cursor) || p != end)
		goto out;
	k->op = (uint32_t)v[0];
	k->phase = (uint32_t)v[1];
	k->seq = v[2];
	k->flags = (unsigned)v[3];
	if (k->op != op || strcmp(k->sdrive.buf, t->name) ||
	    strcmp(k->src.buf, src) ||
	    strcmp(k->ddrive.buf, ddrive ? ddrive : "") ||
	    strcmp(k->dst.buf, dst ? dst : ""))
		goto out;
	rc = 0;
out:
	if (rc == -EINVAL)
		plog(LOG_NOTICE, "drive %s: resume token rejected", t->name);
	sbuf_release(&raw);
	return rc;
}

/* ---- walking a branch --------------------------------------------------- */

/*
 * A snapshot iterator over one branch, moved by seeks. The node the last
 * successful walk_child() found is kept decoded (have/n), so the walk reads
 * each node once; a folder reached by going up is read with a point get.
 * Siblings that follow each other are reached with a plain next, no seek.
 */
struct walk {
	struct tree *t;
	struct kv_iter *it;
	const char *root;
	size_t plen; /* drive prefix length */
	struct sbuf k, lo, hi;
	bool have; /* n (and bad) describe the current node */
	bool bad;  /* its value does not decode */
	struct node n;
};

static int walk_open(struct walk *w, struct tree *t, const char *root)
{
	struct sbuf pre = {0};
	int rc;

	memset(w, 0, sizeof(*w));
	w->t = t;
	w->root = root;
	key_drive_prefix(&pre, t->name);
	w->plen = pre.len;
	sbuf_release(&pre);
	key_subtree_range(&w->lo, &w->hi, t->name, root);
	rc = kv_iter_open(&w->it, t->store->kv, w->lo.buf, w->lo.len, w->hi.buf,
			  w->hi.len);
	return rc;
}

static void walk_close(struct walk *w)
{
	node_release(&w->n);
	kv_iter_free(w->it);
	sbuf_release(&w->k);
	sbuf_release(&w->lo);
	sbuf_release(&w->hi);
}

/*
 * Sets @out to the first child of @dir whose name is after @after (NULL:
 * the first child). Returns 1 if there is one, 0 if not, or -EIO.
 */
static int walk_child(struct walk *w, const char *dir, const char *after,
		      struct sbuf *out)
{
	struct sbuf lo = {0}, hi = {0};
	const char *key;
	size_t klen;
	int rc = 0;

	key_children_range(&lo, &hi, w->t->name, dir);
	if (after) {
		sbuf_reset(&w->k);
		key_child(&w->k, w->t->name, dir, after, strlen(after));
		/* usually still there: the previous sibling, no seek */
		if (!kv_iter_valid(w->it) ||
		    (key = kv_iter_key(w->it, &klen), klen != w->k.len) ||
		    memcmp(key, w->k.buf, klen))
			kv_iter_seek(w->it, w->k.buf, w->k.len);
		if (kv_iter_valid(w->it)) {
			key = kv_iter_key(w->it, &klen);
			if (klen == w->k.len && !memcmp(key, w->k.buf, klen))
				kv_iter_next(w->it);
		}
	} else {
		kv_iter_seek(w->it, lo.buf, lo.len);
	}
	if (!kv_iter_valid(w->it)) {
		rc = kv_iter_status(w->it);
		goto out;
	}
	key = kv_iter_key(w->it, &klen);
	{
		size_t m = klen < hi.len ? klen : hi.len;
		int d = memcmp(key, hi.buf, m);

		if (d > 0 || (d == 0 && klen >= hi.len))
			goto out; /* past the children */
	}
	sbuf_reset(out);
	if (key_node_decode(key, klen, w->plen, out)) {
		rc = -EIO;
		goto out;
	}
	{
		size_t vlen;
		const char *val = kv_iter_value(w->it, &vlen);

		node_release(&w->n);
		w->bad = node_decode(val, vlen, &w->n, true) != 0;
		w->have = true;
	}
	rc = 1;
out:
	sbuf_release(&lo);
	sbuf_release(&hi);
	return rc;
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

/* Post-order: @p becomes its deepest first descendant (or stays). */
static int post_descend(struct walk *w, struct sbuf *p)
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

/* Post-order successor of @p (which need not exist any more). Returns 1 and
 * updates @p, 0 when @p was the root, or -EIO. */
static int post_next(struct walk *w, struct sbuf *p)
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
		rc = post_descend(w, p);
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

/* Pre-order successor of @p. Returns 1 and updates @p, 0 at the end, or
 * -EIO. */
static int pre_next(struct walk *w, struct sbuf *p)
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

/* The part of @path below @root ("" for the root itself). */
static const char *rel_of(const char *root, const char *path)
{
	if (strcmp(root, "/") == 0)
		return strcmp(path, "/") == 0 ? "" : path;
	return path + strlen(root);
}

static void join(struct sbuf *out, const char *root, const char *rel)
{
	sbuf_reset(out);
	if (strcmp(root, "/") != 0 || !*rel)
		sbuf_adds(out, root);
	sbuf_adds(out, rel);
	sbuf_nul(out);
}

static size_t batch_limit(struct tree *t)
{
	return t->store->opt.rename_batch ? t->store->opt.rename_batch : 1024;
}

static size_t bytes_limit(struct tree *t)
{
	return t->store->opt.rename_bytes ? t->store->opt.rename_bytes
					  : 4 << 20;
}

/* ---- rm -r -------------------------------------------------------------- */

/* The open check of a drive (tree_set_open_check). */
struct open_check {
	struct tree *t;
	bool (*is_open)(void *ctx, uint64_t ino);
	void *ctx;
};
#define OPEN_CHECKS 16
static pthread_mutex_t open_checks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct open_check open_checks[OPEN_CHECKS]; /* open_checks_lock */

void tree_set_open_check(struct tree *t, bool (*is_open)(void *, uint64_t),
			 void *ctx)
{
	int i, free_slot = -1;

	pthread_mutex_lock(&open_checks_lock);
	for (i = 0; i < OPEN_CHECKS; i++) {
		if (open_checks[i].t == t)
			break;
		if (!open_checks[i].t && free_slot < 0)
			free_slot = i;
	}
	if (i == OPEN_CHECKS)
		i = free_slot;
	if (i >= 0) {
		open_checks[i].t = is_open ? t : NULL;
		open_checks[i].is_open = is_open;
		open_checks[i].ctx = ctx;
	} else {
		plog(LOG_WARNING, "drive %s: no room for an open check",
		     t->name);
	}
	pthread_mutex_unlock(&open_checks_lock);
}

static struct open_check open_check_of(struct tree *t)
{
	struct open_check c = {0};

	pthread_mutex_lock(&open_checks_lock);
	for (int i = 0; i < OPEN_CHECKS; i++)
		if (open_checks[i].t == t)
			c = open_checks[i];
	pthread_mutex_unlock(&open_checks_lock);
	return c;
}

/* Whether removing the last link of @ino must keep it as an orphan. */
static bool keep_orphan(const struct open_check *oc, unsigned flags,
			uint64_t ino)
{
	if (!(flags & TREE_KEEP_ORPHAN))
		return false;
	return !oc->is_open || oc->is_open(oc->ctx, ino);
}

/* Commits the pending removals of rm -r under ns_lock. */
static int rm_flush(struct tree *t, struct kv_batch *b, size_t *n,
		    struct journal_hook *h)
{
	int rc;

	if (!*n)
		return 0;
	rc = tree_commit(t, b);
	pthread_mutex_unlock(&t->ns_lock);
	kv_batch_clear(b);
	*n = 0;
	if (rc == 0)
		journal_hook_batch(h);
	return rc;
}

/*
 * Counts the result @rc of a tree_unlink() or tree_rmdir() of one node of
 * the branch: removed (0), or already gone (-ENOENT, by an earlier call, also
 * 0 then). Returns any other error.
 */
static int rm_counted(int rc, struct tree_op_result *r, uint64_t *used,
		      struct journal_hook *h)
{
	if (rc == 0) {
		r->processed++;
		(*used)++;
		journal_hook_batch(h);
	} else if (rc == -ENOENT) {
		r->skipped++;
		rc = 0;
	}
	return rc;
}

/*
 * Adds to @b the removal of plain file or symlink/FIFO node @np at @path
 * whose inode has no other link: the node, its blocks
 * (tree_batch_drop_blocks()) and its xattrs (found with
 * @xit, a snapshot iterator over the drive's XATTR# keys). This is
 * tree_batch_remove()'s last-link case without its two iterators per file,
 * which dominate an rm -r of many small files; only for a branch no one
 * writes to meanwhile (the offline tool, or the daemon's files that are not
 * open: open ones become orphans through tree_unlink()).
 */
static void rm_plain(struct tree *t, struct kv_batch *b, const char *path,
		     const struct node *np, struct kv_iter *xit)
{
	struct sbuf k = {0};
	uint64_t ino = np->a.ino;

	key_node(&k, t->name, path);
	kv_batch_delete(b, k.buf, k.len);
	if (S_ISREG(np->a.mode))
		tree_batch_drop_blocks(t, b, ino, np->a.size);
	sbuf_reset(&k);
	key_xattr(&k, t->name, ino, "");
	for (kv_iter_seek(xit, k.buf, k.len); kv_iter_valid(xit);
	     kv_iter_next(xit)) {
		size_t klen;
		const char *key = kv_iter_key(xit, &klen);

		if (klen < k.len || memcmp(key, k.buf, k.len))
			break;
		kv_batch_delete(b, key, klen);
	}
	sbuf_release(&k);
}

/*
 * Removes the branch at @path in post-order, starting after @cursor (a path
 * relative to @path; NULL: from the start), at most @budget nodes (0: no
 * limit; *used counts them). On return *done tells whether the branch is
 * finished; if not, @cursor holds where to go on.
 */
static int rm_run(struct tree *t, const char *path, struct sbuf *cursor,
		  bool *started, uint64_t budget, uint64_t *used,
		  unsigned flags, struct tree_op_result *r,
		  struct journal_hook *h, bool *done)
{
	struct open_check oc = open_check_of(t);
	struct walk w;
	struct sbuf p = {0}, xlo = {0}, xhi = {0};
	struct kv_iter *xit = NULL;
	struct kv_batch *b = kv_batch_new(t->store->kv);
	size_t n = 0, max_n = batch_limit(t);
	int rc;

	*done = false;
	rc = walk_open(&w, t, path);
	if (rc)
		goto out;
	key_kind_range(&xlo, &xhi, t->name, "XATTR#");
	rc = kv_iter_open(&xit, t->store->kv, xlo.buf, xlo.len, xhi.buf,
			  xhi.len);
	if (rc)
		goto out;
	if (*started) {
		join(&p, path, cursor->buf ? cursor->buf : "");
		rc = post_next(&w, &p);
		if (rc == 0) {
			*done = true;
			goto out;
		}
	} else {
		sbuf_adds(&p, path);
		rc = post_descend(&w, &p);
	}
	if (rc < 0)
		goto out;
	for (;;) {
		struct node nd = {0};
		const struct node *np = &nd;
		bool last = strcmp(p.buf, path) == 0, keep = false;

		if (budget && *used >= budget) {
			rc = rm_flush(t, b, &n, h);
			goto out; /* the cursor names the last node handled */
		}
		if (w.have) { /* read by the walk */
			np = &w.n;
			rc = w.bad ? -EIO : 0;
		} else {
			rc = tree_get_node(t, p.buf, &nd, false);
		}
		if (rc == -ENOENT) {
			r->skipped++; /* removed by an earlier call */
			rc = 0;
		} else if (rc == -EIO) {
			fail(r, p.buf, "value does not decode; left in place");
			rc = 0;
		} else if (rc) {
			goto out_node;
		} else if (S_ISDIR(np->a.mode) ||
			   (np->a.flags & TREE_F_LINKED) ||
			   (keep = keep_orphan(&oc, flags, np->a.ino))) {
			/* alone, after the batch holding its children, or of
			 * the other links of its inode, is committed; and
			 * an inode that may be open (KEEP_ORPHAN: the daemon;
			 * it may be written) under its stripe, by tree.c */
			rc = rm_flush(t, b, &n, h);
			if (rc)
				goto out_node;
			if (!S_ISDIR(np->a.mode) && !keep)
				keep = keep_orphan(&oc, flags, np->a.ino);
			rc = S_ISDIR(np->a.mode)
				 ? tree_rmdir(t, p.buf)
				 : tree_unlink(t, p.buf,
					       keep ? TREE_KEEP_ORPHAN : 0,
					       NULL);
			rc = rm_counted(rc, r, used, h);
			if (rc == -ENOTEMPTY || rc == -EIO)
				fail(r, p.buf, "%s", strerror(-rc));
			else if (rc)
				goto out_node;
			rc = 0;
		} else if (last) {
			rc = rm_flush(t, b, &n, h);
			if (rc == 0)
				rc = tree_unlink(
				    t, p.buf,
				    keep_orphan(&oc, flags, np->a.ino)
					? TREE_KEEP_ORPHAN
					: 0,
				    NULL);
			if (rc)
				goto out_node;
			r->processed++;
			(*used)++;
			journal_hook_batch(h);
		} else {
			if (!n)
				pthread_mutex_lock(&t->ns_lock);
			n++;
			rm_plain(t, b, p.buf, np, xit);
			r->processed++;
			(*used)++;
			/* the batch's own size: keys of nodes, blocks and
			 * xattrs alike */
			if (n >= max_n || kv_batch_bytes(b) >= bytes_limit(t))
				rc = rm_flush(t, b, &n, h);
		}
	out_node:
		node_release(&nd);
		if (rc)
			goto out;
		sbuf_reset(cursor);
		sbuf_adds(cursor, rel_of(path, p.buf));
		*started = true;
		if (last) {
			*done = true;
			break;
		}
		rc = post_next(&w, &p);
		if (rc < 0)
			goto out;
	}
	rc = rm_flush(t, b, &n, h);
out:
	if (n) { /* an error with removals pending: drop them */
		pthread_mutex_unlock(&t->ns_lock);
		n = 0;
	}
	walk_close(&w);
	kv_iter_free(xit);
	kv_batch_free(b);
	sbuf_release(&p);
	sbuf_release(&xlo);
	sbuf_release(&xhi);
	return rc < 0 ? rc : 0;
}

/* ---- rm -r in one batch ------------------------------------------------- */

/*
 * The fast way to delete a whole branch, when it fits the budget: one
 * forward scan of the subtree range learns every node, then one atomic batch
 * deletes the range [PATH#P/, PATH#P0) with one range delete, the node P
 * itself (its parent's nlink and times in the same batch, as tree_rmdir
 * does), and the content and xattrs of every inode freed. Content keys are
 * keyed by inode, and inodes created together have consecutive numbers: a
 * run of at least RM_RUN_MIN consecutive numbers all freed by this batch
 * gets one range delete for its DATA# keys and one for its XATTR# keys (no
 * number inside the run belongs to anything that stays); the others get
 * point deletes of their blocks (from their size, as tree_batch_remove) and
 * of the xattrs found by one forward pass over the XATTR# keys.
 *
 * Nodes that need more than a delete are removed one by one first, each in
 * its own batch by tree_unlink() (they have no children, so any order is
 * safe): hard-link stubs (the INODE record's count decides) and, with
 * TREE_KEEP_ORPHAN, files that may be open (all of them, or those the open
 * check registered with tree_set_open_check() says are).
 *
 * A crash leaves the branch as it was or gone: the batch is atomic. The walk
 * (rm_run) does the work instead when the branch is small (fewer than
 * RM_FAST_MIN descendants: not worth a range tombstone), huge (more than
 * RM_FAST_MAX: memory), larger than the budget, or holds a node that does
 * not decode or could not be removed (the walk reports it and keeps its
 * ancestors).
 */
#define RM_FAST_MIN 64
#define RM_FAST_MAX (1u << 20)
#define RM_RUN_MIN  64

struct rm_ent {
	uint64_t ino, size;
	mode_t mode;
};

struct rm_scan {
	struct rm_ent *ents; /* nodes freed by the batch */
	size_t n, cap;
	struct sbuf special; /* NUL-separated paths removed one by one */
	size_t nspecial;
	bool irregular; /* a node the walk must handle */
};

static void rm_scan_release(struct rm_scan *s)
{
	free(s->ents);
	sbuf_release(&s->special);
}

static int ent_cmp(const void *a, const void *b)
{
	const struct rm_ent *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/*
 * Scans the branch below @path: plain nodes into s->ents, the others'
 * paths into s->special. Stops early (s->irregular, or more than @limit
 * nodes: s->n + s->nspecial > limit). Errors: -EIO.
 */
static int rm_fast_scan(struct tree *t, const char *path, unsigned flags,
			const struct open_check *oc, size_t limit,
			struct rm_scan *s)
{
	struct sbuf lo = {0}, hi = {0}, pre = {0}, p = {0};
	struct kv_iter *it = NULL;
	int rc;

	key_drive_prefix(&pre, t->name);
	key_subtree_range(&lo, &hi, t->name, path);
	rc = kv_iter_open(&it, t->store->kv, lo.buf, lo.len, hi.buf, hi.len);
	if (rc)
		goto out;
	for (; kv_iter_valid(it); kv_iter_next(it)) {
		size_t klen, vlen;
		const char *key = kv_iter_key(it, &klen);
		const char *val = kv_iter_value(it, &vlen);
		struct node n = {0};
		bool keep;

		if (s->n + s->nspecial >= limit ||
		    node_decode(val, vlen, &n, false)) {
			s->irregular = true;
			goto out;
		}
		keep = !S_ISDIR(n.a.mode) && keep_orphan(oc, flags, n.a.ino);
		if (keep ||
		    (!S_ISDIR(n.a.mode) && (n.a.flags & TREE_F_LINKED))) {
			sbuf_reset(&p);
			if (key_node_decode(key, klen, pre.len, &p)) {
				s->irregular = true;
				goto out;
			}
			sbuf_addc(&s->special, keep ? 'k' : '-');
			sbuf_add(&s->special, p.buf, p.len + 1);
			s->nspecial++;
			continue;
		}
		if (s->n == s->cap) {
			s->cap = s->cap ? 2 * s->cap : 1024;
			s->ents = realloc(s->ents, s->cap * sizeof(*s->ents));
			if (!s->ents)
				abort();
		}
		s->ents[s->n].ino = n.a.ino;
		s->ents[s->n].size = S_ISREG(n.a.mode) ? n.a.size : 0;
		s->ents[s->n].mode = n.a.mode;
		s->n++;
	}
	rc = kv_iter_status(it);
out:
	kv_iter_free(it);
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&pre);
	sbuf_release(&p);
	return rc;
}

/* Adds to @b the deletes of the content and xattrs of the inodes s->ents
 * (sorted; all freed by @b): range deletes for long runs of consecutive
 * numbers, point deletes for the rest. Errors: -EIO. */
static int rm_fast_content(struct tree *t, struct kv_batch *b,
			   const struct rm_scan *s)
{
	struct sbuf k = {0}, hi = {0}, tmp = {0};
	struct kv_iter *xit = NULL;
	size_t i = 0, j;
	int rc;

	key_kind_range(&k, &hi, t->name, "XATTR#");
	rc = kv_iter_open(&xit, t->store->kv, k.buf, k.len, hi.buf, hi.len);
	if (rc)
		goto out;
	while (i < s->n) {
		for (j = i + 1;
		     j < s->n && s->ents[j].ino == s->ents[j - 1].ino + 1; j++)
			;
		if (j - i >= RM_RUN_MIN) {
			uint64_t first = s->ents[i].ino,
				 last = s->ents[j - 1].ino;

			/* no number in first..last belongs to a node that
			 * stays: [DATA#first#0, DATA#last$) and the same for
			 * XATTR# hold only keys of inodes freed here */
			sbuf_reset(&k);
			sbuf_reset(&tmp);
			key_data_range(&k, &tmp, t->name, first, 0);
			sbuf_reset(&tmp);
			sbuf_reset(&hi);
			key_data_range(&tmp, &hi, t->name, last, 0);
			kv_batch_delete_range(b, k.buf, k.len, hi.buf, hi.len);
			sbuf_reset(&k);
			sbuf_reset(&tmp);
			key_xattr_range(&k, &tmp, t->name, first);
			sbuf_reset(&tmp);
			sbuf_reset(&hi);
			key_xattr_range(&tmp, &hi, t->name, last);
			kv_batch_delete_range(b, k.buf, k.len, hi.buf, hi.len);
			i = j;
			continue;
		}
		for (; i < j; i++) {
			const struct rm_ent *e = &s->ents[i];
			uint64_t nblk =
			    (e->size + t->block_size - 1) / t->block_size;

			if (nblk > 16) {
				sbuf_reset(&k);
				sbuf_reset(&hi);
				key_data_range(&k, &hi, t->name, e->ino, 0);
				kv_batch_delete_range(b, k.buf, k.len, hi.buf,
						      hi.len);
			} else {
				for (uint64_t blk = 0; blk < nblk; blk++) {
					sbuf_reset(&k);
					key_data(&k, t->name, e->ino, blk);
					kv_batch_delete(b, k.buf, k.len);
				}
			}
			/* xattrs: inodes come in ascending order, so the
			 * iterator only moves forward, and seeks only when it
			 * is still before this inode's keys */
			sbuf_reset(&k);
			key_xattr(&k, t->name, e->ino, "");
			if (kv_iter_valid(xit)) {
				size_t klen;
				const char *key = kv_iter_key(xit, &klen);
				int d = memcmp(key, k.buf,
					       klen < k.len ? klen : k.len);

				if (d < 0 || (d == 0 && klen < k.len))
					kv_iter_seek(xit, k.buf, k.len);
			}
			for (; kv_iter_valid(xit); kv_iter_next(xit)) {
				size_t klen;
				const char *key = kv_iter_key(xit, &klen);

				if (klen < k.len || memcmp(key, k.buf, k.len))
					break;
				kv_batch_delete(b, key, klen);
			}
		}
	}
	rc = kv_iter_status(xit);
out:
	kv_iter_free(xit);
	sbuf_release(&k);
	sbuf_release(&hi);
	sbuf_release(&tmp);
	return rc;
}

/*
 * Deletes the branch at folder @path in one batch when it can (see above):
 * *done tells whether it did. When it cannot, the caller walks; nodes
 * removed one by one meanwhile are counted in @r and *used as usual.
 * Errors: -EIO, -ENOSPC (nothing of the final batch written).
 */
static int rm_fast(struct tree *t, const char *path, uint64_t budget,
		   uint64_t *used, unsigned flags, struct tree_op_result *r,
		   struct journal_hook *h, bool *done)
{
	struct open_check oc = open_check_of(t);
	struct rm_scan s = {0};
	struct node n = {0}, pn = {0};
	struct sbuf lo = {0}, hi = {0}, parent = {0};
	struct kv_batch *b = NULL;
	size_t limit = RM_FAST_MAX, pl;
	uint64_t ino = 0, pino = 0;
	bool ns = false;
	int64_t now;
	int rc = 0;

	*done = false;
	if (budget) {
		if (budget <= *used + RM_FAST_MIN)
			goto out;
		if (budget - *used - 1 < limit)
			limit = (size_t)(budget - *used - 1);
	}
	rc = rm_fast_scan(t, path, flags, &oc, limit, &s);
	if (rc || s.irregular || s.n + s.nspecial < RM_FAST_MIN)
		goto out;
	/* first the nodes that need more than a delete (no children) */
	for (const char *p = s.special.buf; s.nspecial; s.nspecial--) {
		bool keep = *p++ == 'k';

		rc = rm_counted(
		    tree_unlink(t, p, keep ? TREE_KEEP_ORPHAN : 0, NULL), r,
		    used, h);
		if (rc == -EIO || rc == -EISDIR || rc == -ENOTDIR) {
			rc = 0; /* the walk reports it */
			goto out;
		} else if (rc) {
			goto out;
		}
		p += strlen(p) + 1;
	}
	qsort(s.ents, s.n, sizeof(*s.ents), ent_cmp);
	/* then everything else, under the locks tree_rmdir takes */
	pl = path_parent_len(path);
	sbuf_add(&parent, pl ? path : "/", pl ? pl : 1);
	pthread_mutex_lock(&t->ns_lock);
	ns = true;
	rc = tree_get_node(t, path, &n, false);
	if (rc == 0)
		rc = tree_get_node(t, parent.buf, &pn, false);
	if (rc == -ENOENT || rc == -EIO || (rc == 0 && !S_ISDIR(n.a.mode))) {
		rc = 0; /* the walk finds out */
		goto out;
	}
	if (rc)
		goto out;
	ino = n.a.ino;
	pino = pn.a.ino;
	tree_lock_inodes(t, ino, pino, 0, 0);
	node_release(&n);
	rc = tree_get_node(t, path, &n, true); /* fresh, under the stripe */
	if (rc)
		goto out;
	now = tree_now_ns();
	b = kv_batch_new(t->store->kv);
	key_subtree_range(&lo, &hi, t->name, path);
	kv_batch_delete_range(b, lo.buf, lo.len, hi.buf, hi.len);
	rc = tree_batch_remove(t, b, path, &n, 0, NULL, now);
	if (rc == 0)
		rc = tree_batch_dir_touch(t, b, parent.buf, -1, now);
	if (rc == 0)
		rc = rm_fast_content(t, b, &s);
	if (rc == 0)
		rc = tree_commit(t, b);
	if (rc)
		goto out;
	journal_hook_batch(h);
	r->processed += s.n + 1;
	*used += s.n + 1;
	*done = true;
out:
	if (ino)
		tree_unlock_inodes(t, ino, pino, 0, 0);
	if (ns)
		pthread_mutex_unlock(&t->ns_lock);
	kv_batch_free(b);
	node_release(&n);
	node_release(&pn);
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&parent);
	rm_scan_release(&s);
	return rc;
}

/*
 * Deletes the branch at @path (node @nd): in one batch when it can, else by
 * the walk. Arguments as rm_run().
 */
static int rm_branch(struct tree *t, const char *path, const struct node *nd,
		     struct sbuf *cursor, bool *started, uint64_t budget,
		     uint64_t *used, unsigned flags, struct tree_op_result *r,
		     struct journal_hook *h, bool *done)
{
	int rc = 0;

	*done = false;
	if (S_ISDIR(nd->a.mode))
		rc = rm_fast(t, path, budget, used, flags, r, h, done);
	if (rc || *done)
		return rc;
	return rm_run(t, path, cursor, started, budget, used, flags, r, h,
		      done);
}

int tree_rm_r(struct tree *t, const char *path, uint64_t max_items,
	      const char *resume, unsigned flags, struct tree_op_result *r)
{
	struct token k = {0};
	struct journal_hook h;
	struct node nd = {0};
	uint64_t used = 0;
	bool done = false, started;
	int rc;

	memset(r, 0, sizeof(*r));
	journal_hook_init(&h);
	rc = path_check(path);
	if (rc)
		goto out;
	if (strcmp(path, "/") == 0) {
		rc = -EINVAL;
		goto out;
	}
	if (resume) {
		rc = token_check(t, resume, OP_RM, path, NULL, NULL, &k);
		if (rc)
			goto out;
	}
	rc = tree_get_node(t, path, &nd, false);
	if (rc == -ENOENT && resume) {
		rc = 0; /* finished by the call that crashed */
		goto out;
	}
	if (rc && rc != -EIO)
		goto out;
	if (rc == -EIO) {
		fail(r, path, "value does not decode");
		rc = 0;
		goto out;
	}
	k.op = OP_RM;
	started = k.flags & TOKEN_RM_STARTED;
	rc = rm_branch(t, path, &nd, &k.cursor, &started, max_items, &used,
		       flags & TREE_KEEP_ORPHAN, r, &h, &done);
	if (rc || done)
		goto out;
	sbuf_reset(&k.sdrive);
	sbuf_adds(&k.sdrive, t->name);
	sbuf_reset(&k.src);
	sbuf_adds(&k.src, path);
	sbuf_nul(&k.ddrive);
	sbuf_nul(&k.dst);
	k.phase = 1;
	k.flags = started ? TOKEN_RM_STARTED : 0;
	rc = token_issue(t, &k, r);
out:
	node_release(&nd);
	token_release(&k);
	return rc;
}

/* ---- cp -r -------------------------------------------------------------- */

struct clone {
	struct tree *t, *dt; /* source and destination drives */
	const char *src, *dst;
	struct journal_rec rec; /* JOURNAL#seq of dt */
	struct journal_hook *h;
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
};

static int clone_commit(struct clone *c)
{
	int rc;

	journal_rec_put(c->dt, c->b, &c->rec);
	rc = tree_commit(c->dt, c->b);
	kv_batch_clear(c->b);
	c->n = c->bytes = 0;
	if (rc == 0)
		journal_hook_batch(c->h);
	return rc;
}

static void clone_add(struct clone *c, const char *k, size_t klen,
		      const char *v, size_t vlen)
{
	kv_batch_put(c->b, k, klen, v, vlen);
	c->n++;
	c->bytes += klen + vlen;
}

static int clone_maybe_commit(struct clone *c)
{
	if (c->n >= batch_limit(c->dt) || c->bytes >= bytes_limit(c->dt))
		return clone_commit(c);
	return 0;
}

/* Copies the DATA blocks of @x (from block rec.blk) and then all xattrs to
 * inode @y. Batches committed on the way carry rec.ino/blk/aux so a resume
 * continues this file with the same @y. */
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

static int clone_content(struct clone *c, uint64_t x, uint64_t y, bool data)
{
	struct sbuf k = {0}, xs = {0}, xp = {0};
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
		if (c->n && c->bytes + vlen >= bytes_limit(c->dt)) {
			c->rec.ino = y;
			c->rec.aux = x;
			c->rec.blk = blk;
			rc = clone_commit(c);
			if (rc)
				goto out;
		}
		sbuf_reset(&k);
		key_data(&k, c->dt->name, y, blk);
		clone_add(c, k.buf, k.len, val, vlen);
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
	struct sbuf hi = {0};
	char hex[20];

	key_xtmp_range(k, &hi, c->dt->name, c->rec.seq);
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)x);
	sbuf_adds(k, hex);
	sbuf_release(&hi);
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
		c->rec.ino = c->rec.blk = c->rec.aux = 0;
		c->rec.phase = 1;
		sbuf_reset(&c->rec.cursor);
		sbuf_adds(&c->rec.cursor, rel);
		rc = clone_commit(c);
	}
	tree_unlock_inodes(c->dt, y, 0, 0, 0);
	attr_ref_release(&ref);
	sbuf_release(&k);
	sbuf_release(&v);
	return rc;
}

/* Copies the node at @spath to @dpath (rel = @rel), adding to the pending
 * batch. Returns 0 (counted in r), or a negative errno that stops the op. */
static int clone_node(struct clone *c, const char *spath, const char *dpath,
		      const char *rel)
{
	struct node n = {0}, in = {0}, dn = {0};
	struct sbuf k = {0}, v = {0};
	struct tree_attr a;
	uint64_t x, y;
	bool linked = false, root = !*rel;
	int rc;

	if (c->w->have) { /* read by the walk */
		rc = c->w->bad ? -EIO : 0;
		if (rc == 0) {
			n.a = c->w->n.a;
			n.target =
			    c->w->n.target ? strdup(c->w->n.target) : NULL;
		}
	} else {
		rc = tree_get_node(c->t, spath, &n, true);
	}
	if (rc == -ENOENT) {
		c->r->skipped++;
		rc = 0;
		goto advance;
	}
	if (rc == -EIO) {
		fail(c->r, spath, "value does not decode; not copied");
		rc = 0;
		if (c->strict) {
			c->stop = true;
			goto out;
		}
		goto advance;
	}
	if (rc)
		goto out;
	/* the first node of a call: is the destination as the record says?
	 * (later ones follow from the walk) */
	if (!root && c->rec.ino == 0 && !c->checked &&
	    tree_get_node(c->dt, dpath, &dn, false) == 0) {
		fail(c->r, dpath, "destination exists; not copied");
		if (c->strict) {
			c->stop = true;
			goto out;
		}
		goto advance;
	}
	x = n.a.ino;
	linked = n.a.flags & TREE_F_LINKED;
	if (linked) {
		char *val = NULL;
		size_t vlen;

		map_key(c, &k, x);
		rc = kv_get(c->dt->store->kv, k.buf, k.len, &val, &vlen);
		if (rc == 0 && vlen == 8) {
			y = le64((const uint8_t *)val);
			free(val);
			rc = clone_link(c, dpath, rel, y, n.a.mode);
			if (rc)
				goto out;
			c->r->processed++;
			goto advance;
		}
		free(val);
		if (rc && rc != -ENOENT)
			goto out;
		/* the first link: clone the inode from its INODE record */
		rc = tree_get_inode(c->t, x, &in);
		if (rc == -ENOENT || rc == -EIO) {
			fail(c->r, spath,
			     "its hard-link record is %s; not copied",
			     rc == -EIO ? "bad" : "missing");
			rc = 0;
			if (c->strict) {
				c->stop = true;
				goto out;
			}
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
	rc = clone_content(c, x, y, S_ISREG(a.mode) && a.size > 0);
	if (rc)
		goto out;
	a.ino = y;
	if (linked) {
		uint8_t le[8];

		a.nlink = 1;
		sbuf_reset(&k);
		key_inode(&k, c->dt->name, y);
		node_encode(&v, &a, in.target);
		clone_add(c, k.buf, k.len, v.buf, v.len);
		sbuf_reset(&v);
		node_encode_stub(&v, y, a.mode);
		for (int i = 0; i < 8; i++)
			le[i] = (uint8_t)(y >> (8 * i));
		sbuf_reset(&k);
		map_key(c, &k, x);
		clone_add(c, k.buf, k.len, (const char *)le, 8);
		sbuf_reset(&k);
		key_node(&k, c->dt->name, dpath);
		clone_add(c, k.buf, k.len, v.buf, v.len);
	} else {
		tree_batch_put_node(c->dt, c->b, dpath, &a, n.target);
		c->n++;
		c->bytes += strlen(dpath) + 64;
	}
	c->r->processed++;
	if (root) {
		/* the clone's root: the destination parent learns of it in
		 * the same batch, under the locks a namespace change takes */
		size_t pl = path_parent_len(c->dst);
		char *parent = pl ? strndup(c->dst, pl) : strdup("/");
		struct node pn = {0};

		pthread_mutex_lock(&c->dt->ns_lock);
		rc = tree_get_node(c->dt, parent, &pn, false);
		if (rc == 0) {
			tree_lock_inodes(c->dt, pn.a.ino, 0, 0, 0);
			rc = tree_batch_dir_touch(c->dt, c->b, parent,
						  S_ISDIR(a.mode) ? 1 : 0,
						  tree_now_ns());
			c->rec.ino = c->rec.blk = c->rec.aux = 0;
			c->rec.phase = 1;
			sbuf_reset(&c->rec.cursor);
			sbuf_nul(&c->rec.cursor);
			if (rc == 0)
				rc = clone_commit(c);
			tree_unlock_inodes(c->dt, pn.a.ino, 0, 0, 0);
		}
		pthread_mutex_unlock(&c->dt->ns_lock);
		node_release(&pn);
		free(parent);
		goto out;
	}
advance:
	c->rec.ino = c->rec.blk = c->rec.aux = 0;
	c->rec.phase = 1;
	sbuf_reset(&c->rec.cursor);
	sbuf_adds(&c->rec.cursor, rel);
	if (linked && c->n) /* make the map key visible to later links */
		rc = clone_commit(c);
	else
		rc = clone_maybe_commit(c);
out:
	node_release(&n);
	node_release(&in);
	node_release(&dn);
	sbuf_release(&k);
	sbuf_release(&v);
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

		key_kind_range(&lo, &hi, c->t->name, "DATA#");
		rc = kv_iter_open(&c->dit, c->t->store->kv, lo.buf, lo.len,
				  hi.buf, hi.len);
		sbuf_reset(&lo);
		sbuf_reset(&hi);
		key_kind_range(&lo, &hi, c->t->name, "XATTR#");
		if (rc == 0)
			rc = kv_iter_open(&c->xit, c->t->store->kv, lo.buf,
					  lo.len, hi.buf, hi.len);
		sbuf_release(&lo);
		sbuf_release(&hi);
		if (rc)
			goto out;
	}
	sbuf_adds(&p, c->src);
	if (c->rec.phase == 1) {
		join(&p, c->src, c->rec.cursor.buf);
		rc = pre_next(&w, &p);
		if (rc < 0)
			goto out;
		if (rc == 0)
			goto finish;
	}
	for (;;) {
		const char *rel = rel_of(c->src, p.buf);

		if (budget && *used >= budget) {
			/* the record's cursor may be ahead of what is
			 * committed even with nothing pending (a link) */
			rc = clone_commit(c);
			goto out;
		}
		join(&d, c->dst, rel);
		rc = clone_node(c, p.buf, d.buf, rel);
		c->checked = true;
		if (rc == 0 && c->stop)
			rc = clone_commit(c);
		if (rc || c->stop)
			goto out;
		(*used)++;
		rc = pre_next(&w, &p);
		if (rc < 0)
			goto out;
		if (rc == 0)
			break;
	}
finish : {
	/* the last batch: pending copies, drop the map, delete the record */
	struct sbuf lo = {0}, hi = {0}, k = {0};

	key_xtmp_range(&lo, &hi, c->dt->name, c->rec.seq);
	rc = tree_batch_drop_range(c->dt, c->b, lo.buf, lo.len, hi.buf, hi.len);
	key_journal(&k, c->dt->name, c->rec.seq);
	kv_batch_delete(c->b, k.buf, k.len);
	if (rc == 0)
		rc = tree_commit(c->dt, c->b);
	if (rc == 0) {
		journal_hook_batch(c->h);
		*done = true;
	}
	sbuf_release(&lo);
	sbuf_release(&hi);
	sbuf_release(&k);
}
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

/*
 * cp -r and the clone phase of a cross-drive mv. @op is OP_CP or OP_MV.
 * On return *done tells whether the clone is finished; *used counts nodes.
 */
static int clone_op(struct tree *t, const char *src, struct tree *dt,
		    const char *dst, uint64_t budget, uint64_t *used,
		    struct token *k, bool resuming, struct journal_hook *h,
		    struct tree_op_result *r, bool *done)
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
	int rc;

	*done = false;
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
			size_t pl = path_parent_len(dst);
			char *parent = pl ? strndup(dst, pl) : strdup("/");

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
		journal_hook_batch(h);
		k->seq = c.rec.seq;
	}
	rc = clone_run(&c, budget, used, done);
out:
	node_release(&n);
	journal_rec_release(&c.rec);
	return rc;
}

static void token_fill(struct token *k, uint32_t op, struct tree *t,
		       const char *src, struct tree *dt, const char *dst)
{
	k->op = op;
	sbuf_reset(&k->sdrive);
	sbuf_adds(&k->sdrive, t->name);
	sbuf_reset(&k->src);
	sbuf_adds(&k->src, src);
	sbuf_reset(&k->ddrive);
	sbuf_adds(&k->ddrive, dt->name);
	sbuf_reset(&k->dst);
	sbuf_adds(&k->dst, dst);
	sbuf_reset(&k->cursor);
	sbuf_nul(&k->cursor);
}

/* Common argument checks of cp -r and mv. */
static int branch_args(struct tree *t, const char *src, struct tree *dt,
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
	return 0;
}

int tree_cp_r(struct tree *t, const char *src, struct tree *dt, const char *dst,
	      uint64_t max_items, const char *resume, struct tree_op_result *r)
{
	struct token k = {0};
	struct journal_hook h;
	uint64_t used = 0;
	bool done = false;
	int rc;

	memset(r, 0, sizeof(*r));
	journal_hook_init(&h);
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

int tree_mv(struct tree *t, const char *src, struct tree *dt, const char *dst,
	    uint64_t max_items, const char *resume, struct tree_op_result *r)
{
	struct token k = {0};
	struct journal_hook h;
	struct sbuf cur = {0};
	struct node nd = {0};
	uint64_t used = 0, seq;
	uint32_t phase;
	bool done = false, rm_started = false;
	int rc;

	memset(r, 0, sizeof(*r));
	journal_hook_init(&h);
	if (t == dt) {
		if (resume) {
			rc = -EINVAL; /* a rename never stops early */
			goto out;
		}
		rc = tree_rename(t, src, dst, 0, NULL);
		if (rc == 0)
			r->processed = 1;
		goto out;
	}
	rc = branch_args(t, src, dt, dst);
	if (rc)
		goto out;
	if (strcmp(src, "/") == 0) {
		rc = -EINVAL; /* the root cannot be deleted afterwards */
		goto out;
	}
	if (resume) {
		rc = token_check(t, resume, OP_MV, src, dt->name, dst, &k);
		if (rc)
			goto out;
	}
	phase = resume ? k.phase : 1;
	seq = k.seq;
	sbuf_adds(&cur, k.cursor.buf ? k.cursor.buf : "");
	token_fill(&k, OP_MV, t, src, dt, dst);
	k.seq = seq;
	k.phase = phase;
	if (phase == 1) {
		rc = clone_op(t, src, dt, dst, max_items, &used, &k,
			      resume != NULL, &h, r, &done);
		if (rc || !done)
			goto stop;
		/* the clone is complete: now delete the source */
		k.phase = 2;
		done = false;
	} else {
		sbuf_adds(&k.cursor, cur.buf);
		rm_started = k.flags & TOKEN_RM_STARTED;
	}
	rc = tree_get_node(t, src, &nd, false);
	if (rc == -ENOENT && (resume || r->processed)) {
		rc = 0; /* deleted by an earlier call */
		done = true;
		goto stop;
	}
	if (rc)
		goto stop;
	/* open files of a mounted source stay readable (orphans) */
	rc = rm_branch(t, src, &nd, &k.cursor, &rm_started, max_items, &used,
		       open_check_of(t).is_open ? TREE_KEEP_ORPHAN : 0, r, &h,
		       &done);
stop:
	k.flags = rm_started ? TOKEN_RM_STARTED : 0;
	if (rc == 0 && !done)
		rc = token_issue(t, &k, r);
out:
	node_release(&nd);
	sbuf_release(&cur);
	token_release(&k);
	return rc;
}
