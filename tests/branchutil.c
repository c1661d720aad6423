/*
 * branchutil.c - helpers shared by test_journal.c and test_cascade.c (see
 * branchutil.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "branchutil.h"
#include "codec_i.h"
#include "keys_i.h"
#include "testutil.h"

#define T tu_tree

/* Reopens tu_store with subtree rewrite batches of @batch entries. */
void reopen_opts(size_t batch, size_t bytes)
{
	struct store_options o = {.rename_batch = batch, .rename_bytes = bytes};
	int rc;

	store_close(tu_store);
	tu_store = NULL;
	rc = store_open(&tu_store, tu_dir, &o);
	cr_assert_eq(rc, 0, "store_open: %s", strerror(-rc));
	cr_assert_eq(store_drive(tu_store, "main", &tu_tree), 0);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++) {
		h ^= c[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* One line describing node @path (rel @rel) of @t. */
void describe(struct tree *t, FILE *f, const char *rel, const char *path,
	      struct tree_attr a, bool with_ino)
{
	char *list = NULL;
	size_t lsize = 0;

	if (a.flags & TREE_F_LINKED)
		cr_assert_eq(tree_getattr(t, NULL, a.ino, &a), 0);
	fprintf(
	    f, "%llx|",
	    (unsigned long long)fnv(0xcbf29ce484222325ULL, rel, strlen(rel)));
	for (const char *c = rel; *c; c++)
		fprintf(f, (unsigned char)*c < 0x20 ? "\\%02x" : "%c",
			(unsigned char)*c);
	fprintf(f, "|%o|%u|%u|%llu|%u|%lld", a.mode, a.uid, a.gid,
		(unsigned long long)a.size, a.nlink, (long long)a.mtime_ns);
	if (with_ino)
		fprintf(f, "|ino=%llu", (unsigned long long)a.ino);
	if (S_ISLNK(a.mode)) {
		char *target = NULL;
		cr_assert_eq(tree_readlink(t, path, &target), 0);
		fprintf(f, "|->%s", target);
		free(target);
	}
	if (S_ISREG(a.mode)) {
		static char buf[1 << 16];
		uint64_t off = 0, h = 0xcbf29ce484222325ULL;
		size_t got;

		do {
			cr_assert_eq(tree_read(t, path, a.ino, off, sizeof(buf),
					       buf, &got),
				     0, "read %s", path);
			h = fnv(h, buf, got);
			off += got;
		} while (got == sizeof(buf));
		cr_assert_eq(off, a.size, "%s: read %llu of %llu", path,
			     (unsigned long long)off,
			     (unsigned long long)a.size);
		fprintf(f, "|c=%016llx", (unsigned long long)h);
	}
	cr_assert_eq(tree_listxattr(t, a.ino, &list, &lsize), 0);
	for (size_t i = 0; i < lsize; i += strlen(list + i) + 1) {
		void *v = NULL;
		size_t vs = 0;
		cr_assert_eq(tree_getxattr(t, a.ino, list + i, &v, &vs), 0);
		fprintf(f, "|x:%s=%016llx", list + i,
			(unsigned long long)fnv(0xcbf29ce484222325ULL, v, vs));
		free(v);
	}
	free(list);
	fputc('\n', f);
}

/* Canonical description of the branch at @root (malloc'd). */
char *snap(struct tree *t, const char *root, bool with_ino)
{
	struct tree_attr a;
	struct tree_scan *sc;
	const char *p;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	int rc;

	rc = tree_lookup(t, root, &a);
	cr_assert_eq(rc, 0, "lookup %s: %s", root, strerror(-rc));
	describe(t, f, "", root, a, with_ino);
	if (S_ISDIR(a.mode)) {
		cr_assert_eq(tree_scan_open(&sc, t, root), 0);
		while ((rc = tree_scan_next(sc, &p, &a)) == 1)
			describe(t, f,
				 p + (strcmp(root, "/") ? strlen(root) : 0), p,
				 a, with_ino);
		cr_assert_eq(rc, 0);
		tree_scan_free(sc);
	}
	fclose(f);
	return out;
}

size_t count_keys(const struct sbuf *lo, const struct sbuf *hi)
{
	struct kv_iter *it;
	size_t n = 0;

	cr_assert_eq(
	    kv_iter_open(&it, tu_store->kv, lo->buf, lo->len, hi->buf, hi->len),
	    0);
	for (; kv_iter_valid(it); kv_iter_next(it))
		n++;
	kv_iter_free(it);
	return n;
}

size_t subtree_keys(struct tree *t, const char *dir)
{
	struct sbuf lo = {0}, hi = {0};
	size_t n;

	key_subtree_range(&lo, &hi, t->name, dir);
	n = count_keys(&lo, &hi);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return n;
}

size_t kind_keys(struct tree *t, enum key_kind kind)
{
	struct sbuf lo = {0}, hi = {0};
	size_t n;

	key_kind_range(&lo, &hi, t->name, kind);
	n = count_keys(&lo, &hi);
	sbuf_release(&lo);
	sbuf_release(&hi);
	return n;
}

void print_finding(void *ctx, const char *msg)
{
	cr_log_info("fsck: %s", msg);
}

void assert_fsck_clean(struct tree *t)
{
	size_t n = 99;

	cr_assert_eq(tree_fsck(t, false, print_finding, NULL, &n), 0);
	cr_assert_eq(n, 0, "fsck: %zu findings", n);
}

void assert_no_journal(struct tree *t)
{
	struct tree_journal_entry *e;
	size_t n = 99;

	cr_assert_eq(tree_journal_list(t, &e, &n), 0);
	tree_journal_list_free(e, n);
	cr_assert_eq(n, 0, "%zu journal records left", n);
	cr_assert_eq(kind_keys(t, KEY_XTMP), 0, "temporary keys left");
}

void assert_gone(struct tree *t, const char *path)
{
	struct tree_attr a;

	cr_assert_eq(tree_lookup(t, path, &a), -ENOENT, "%s still there", path);
	cr_assert_eq(subtree_keys(t, path), 0, "keys left under %s", path);
}

void assert_found_by_number(struct tree *t, const char *dir)
{
	struct tree_scan *sc;
	struct tree_attr a, fa;
	const char *p;
	size_t n = 0;
	int rc;

	cr_assert_eq(tree_scan_open(&sc, t, dir), 0);
	while ((rc = tree_scan_next(sc, &p, &a)) == 1) {
		char *found = NULL;

		cr_assert_eq(tree_find_ino(t, a.ino, &found, &fa), 0, "%s", p);
		if (a.flags & TREE_F_LINKED)
			cr_assert_null(found, "%s", p);
		else
			cr_assert_str_eq(found, p);
		cr_assert_eq(fa.ino, a.ino);
		free(found);
		n++;
	}
	cr_assert_eq(rc, 0);
	tree_scan_free(sc);
	cr_assert_gt(n, 0);
}

void mkfile_n(struct tree *t, const char *path, size_t len, int seed)
{
	char *buf = malloc(len ? len : 1);

	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(seed * 31 + i * 7 + (i >> 9));
	tu_mkfile(t, path, buf, len);
	free(buf);
}

/*
 * Builds a branch at @root: nested folders (names with bytes below '/'),
 * @n entries of every kind (files of many sizes, symlinks, FIFOs, xattrs)
 * and a hard link inside the branch. Returns the number of nodes below root.
 */
size_t build(struct tree *t, const char *root, int n)
{
	static const char *dirs[] = {"",
				     "/sub",
				     "/sub/deep",
				     "/s p",
				     "/\x01"
				     "d",
				     "/a-b",
				     "/a.b"};
	char p[512], q[512];
	size_t count = 0;
	struct tree_scan *sc;
	struct tree_attr a;
	const char *sp;
	int rc;

	tu_mkdir(t, root);
	for (size_t i = 1; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", root, dirs[i]);
		tu_mkdir(t, p);
	}
	for (int i = 0; i < n; i++) {
		static const char *pre[] = {"f", "f-", "f.", "f ", "\x01"};
		const char *d = dirs[i % 7];

		snprintf(p, sizeof(p), "%s%s/%s%03d", root, d, pre[i % 5], i);
		switch (i % 6) {
		case 0:
		case 1:
		case 2:
			mkfile_n(t, p, (size_t)(i * 37) % 3000, i);
			break;
		case 3:
			snprintf(q, sizeof(q), "../t%d", i);
			cr_assert_eq(
			    tree_mknode(t, p, S_IFLNK | 0777, 0, 0, 0, q, NULL),
			    0);
			break;
		case 4:
			cr_assert_eq(tree_mknode(t, p, S_IFIFO | 0600, 0, 0, 0,
						 NULL, NULL),
				     0);
			break;
		case 5:
			mkfile_n(t, p, 5, i);
			cr_assert_eq(tree_lookup(t, p, &a), 0);
			snprintf(q, sizeof(q), "v%d", i);
			cr_assert_eq(tree_setxattr(t, p, a.ino, "user.k", q,
						   strlen(q), 0),
				     0);
			break;
		}
	}
	snprintf(p, sizeof(p), "%s/sub/big", root);
	mkfile_n(t, p, 200000, 3);
	snprintf(q, sizeof(q), "%s/s p/hardlink", root);
	cr_assert_eq(tree_link(t, p, q, NULL), 0);
	snprintf(p, sizeof(p), "%s/sub", root);
	cr_assert_eq(tree_lookup(t, p, &a), 0);
	cr_assert_eq(tree_setxattr(t, p, a.ino, "user.dir", "x", 1, 0), 0);
	cr_assert_eq(tree_scan_open(&sc, t, root), 0);
	while ((rc = tree_scan_next(sc, &sp, &a)) == 1)
		count++;
	tree_scan_free(sc);
	return count;
}

/* Neighbours of /docs that sort next to its keys and must never move. */
void make_neighbours(struct tree *t)
{
	tu_mkdir(t, "/docs-archive");
	mkfile_n(t, "/docs-archive/keep", 100, 1);
	mkfile_n(t, "/docs.txt", 10, 2);
	tu_mkdir(t, "/docs 2");
	mkfile_n(t, "/docs 2/x", 10, 3);
	mkfile_n(t, "/docs\x01", 1, 4);
	tu_mkdir(t, "/docs0");
	mkfile_n(t, "/docs0/in", 3, 5); /* its key is the subtree's bound */
}

/* The whole drive minus the given branch (both rel lines start with it). */
char *snap_outside(struct tree *t, const char *a, const char *b)
{
	char *all = snap(t, "/", true), *out = NULL, *line, *save;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	for (line = strtok_r(all, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *rel = strchr(line, '|') + 1;
		bool in = false;
		const char *br[] = {a, b};

		for (int i = 0; i < 2; i++) {
			size_t n = br[i] ? strlen(br[i]) : 0;
			if (n && !strncmp(rel, br[i], n) &&
			    (rel[n] == '|' || rel[n] == '/'))
				in = true;
		}
		/* the root's and the parents' times change with a rename */
		if (!in && strncmp(rel, "|", 1) != 0)
			fprintf(f, "%s\n", line);
	}
	fclose(f);
	free(all);
	return out;
}

uint64_t meta_hwm(struct store *s, const char *drive)
{
	struct sbuf k = {0};
	struct meta m;
	char *v = NULL;
	size_t vlen;

	key_meta(&k, drive);
	cr_assert_eq(kv_get(s->kv, k.buf, k.len, &v, &vlen), 0);
	cr_assert_eq(meta_decode(v, vlen, &m), 0);
	free(v);
	sbuf_release(&k);
	return m.ino_hwm;
}
