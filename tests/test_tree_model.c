/*
 * test_tree_model.c - random namespace operations on a drive (store/tree*.c)
 * against a model of the tree kept in memory: every return code and, now and
 * then and after a reopen, the whole tree are compared.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "branchutil.h"
#include "testutil.h"

#define T tu_tree

/* ---- random namespace operations against a model ------------------------
 * Names "a", "a-" and "b" (so "/a" and "/a-" are prefix neighbours) at depths
 * 1-3; every op's return code is compared with the model's, and the whole
 * tree (paths, types, inodes, link counts, content) is compared now and then
 * and after a reopen. Non-empty folders go through the journal. */

#define MMAX 512

struct ment {
	char path[128];
	bool dir;
	uint64_t ino;
};

static struct ment model[MMAX];
static size_t nmodel;

static struct ment *mfind(const char *p)
{
	for (size_t i = 0; i < nmodel; i++)
		if (strcmp(model[i].path, p) == 0)
			return &model[i];
	return NULL;
}

static void mparent(const char *p, char *out)
{
	const char *s = strrchr(p, '/');
	if (s == p) {
		strcpy(out, "/");
		return;
	}
	memcpy(out, p, (size_t)(s - p));
	out[s - p] = '\0';
}

/* 1 if the model has p as a folder (the root included), 0 if as a file, -1
 * if not at all */
static int mkind(const char *p)
{
	struct ment *e;

	if (strcmp(p, "/") == 0)
		return 1;
	e = mfind(p);
	return e ? e->dir : -1;
}

static bool mwithin(const char *p, const char *d)
{
	size_t n = strlen(d);
	return strncmp(p, d, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

static bool mempty(const char *d)
{
	for (size_t i = 0; i < nmodel; i++)
		if (mwithin(model[i].path, d) && strcmp(model[i].path, d))
			return false;
	return true;
}

static void mdelete(struct ment *e)
{
	*e = model[--nmodel];
}

/* renames every entry at or below @from to @to */
static void mmove(const char *from, const char *to)
{
	size_t n = strlen(from);
	char tmp[256];

	for (size_t i = 0; i < nmodel; i++)
		if (mwithin(model[i].path, from)) {
			snprintf(tmp, sizeof(tmp), "%s%s", to,
				 model[i].path + n);
			cr_assert_lt(strlen(tmp), sizeof(model[i].path));
			strcpy(model[i].path, tmp);
		}
}

static uint32_t mnlink(const struct ment *e)
{
	uint32_t n = 0;

	if (!e->dir) {
		for (size_t i = 0; i < nmodel; i++)
			n += model[i].ino == e->ino;
		return n;
	}
	for (size_t i = 0; i < nmodel; i++) {
		char par[128];
		mparent(model[i].path, par);
		n += model[i].dir && strcmp(par, e->path) == 0;
	}
	return 2 + n;
}

static int model_rename(const char *s, const char *d, unsigned fl)
{
	char dp[128];
	struct ment *se = mfind(s), *de;

	if (!se)
		return -ENOENT;
	mparent(d, dp);
	if (mkind(dp) < 0)
		return -ENOENT;
	if (mkind(dp) == 0)
		return -ENOTDIR;
	de = mfind(d);
	if (strcmp(s, d) == 0)
		return (fl & TREE_RENAME_NOREPLACE) ? -EEXIST : 0;
	if (mwithin(d, s))
		return -EINVAL;
	if (fl & TREE_RENAME_EXCHANGE) {
		if (!de)
			return -ENOENT;
		if (mwithin(s, d))
			return -EINVAL;
		if (se->ino == de->ino)
			return 0;
		mmove(s, "/#tmp");
		mmove(d, s);
		mmove("/#tmp", d);
		return 0;
	}
	if (de) {
		if (fl & TREE_RENAME_NOREPLACE)
			return -EEXIST;
		if (se->ino == de->ino)
			return 0;
		if (se->dir && !de->dir)
			return -ENOTDIR;
		if (!se->dir && de->dir)
			return -EISDIR;
		if (de->dir && !mempty(d))
			return -ENOTEMPTY;
		mdelete(de);
	}
	mmove(s, d);
	return 0;
}

static void random_path(unsigned *seed, char *out)
{
	static const char *names[] = {"a", "a-", "b"};
	int depth = 1 + (int)(rand_r(seed) % 3);

	out[0] = '\0';
	for (int i = 0; i < depth; i++) {
		strcat(out, "/");
		strcat(out, names[rand_r(seed) % 3]);
	}
}

static void model_verify(void)
{
	struct tree_scan *sc;
	struct tree_attr a;
	const char *p;
	size_t seen = 0, n;
	int rc;

	cr_assert_eq(tree_scan_open(&sc, T, "/"), 0);
	while ((rc = tree_scan_next(sc, &p, &a)) == 1) {
		struct ment *e = mfind(p);
		cr_assert_not_null(e, "unexpected %s", p);
		cr_assert_eq(e->dir, S_ISDIR(a.mode), "%s type", p);
		cr_assert_eq(e->ino, a.ino, "%s ino", p);
		seen++;
	}
	cr_assert_eq(rc, 0);
	tree_scan_free(sc);
	cr_assert_eq(seen, nmodel);
	cr_assert_eq(tu_stat(T, "/").nlink,
		     mnlink(&(struct ment){"/", true, 1}));
	for (size_t i = 0; i < nmodel; i++) {
		struct ment *e = &model[i];
		a = tu_stat(T, e->path);
		cr_assert_eq(a.nlink, mnlink(e), "%s nlink %u", e->path,
			     a.nlink);
		if (!e->dir) {
			char want[32], *c = tu_read(T, e->path, e->ino, &n);
			snprintf(want, sizeof(want), "ino:%llu",
				 (unsigned long long)e->ino);
			cr_assert(n == strlen(want) && memcmp(c, want, n) == 0,
				  "%s content", e->path);
		}
	}
}

Test(tree_model, random_namespace_ops_against_model, .init = tu_setup,
     .fini = tu_teardown, .timeout = 600)
{
	unsigned seed = 4242;
	char p[128], q[128], par[128];
	int counts[8] = {0};

	nmodel = 0;
	for (int op = 0; op < 2500; op++) {
		unsigned r = rand_r(&seed) % 100;
		int rc, want;
		struct tree_attr a;

		random_path(&seed, p);
		random_path(&seed, q);
		mparent(p, par);
		if (r < 20) { /* mkdir */
			want = mfind(p)		? -EEXIST
			       : mkind(par) < 0 ? -ENOENT
			       : !mkind(par)	? -ENOTDIR
						: 0;
			rc = tree_mknode(T, p, S_IFDIR | 0755, 0, 0, 0, NULL,
					 &a);
			if (want == 0 && rc == 0) {
				struct ment *e = &model[nmodel++];
				snprintf(e->path, sizeof(e->path), "%s", p);
				e->dir = true;
				e->ino = a.ino;
			}
			counts[0]++;
		} else if (r < 40) { /* create a file holding its inode */
			want = mfind(p)		? -EEXIST
			       : mkind(par) < 0 ? -ENOENT
			       : !mkind(par)	? -ENOTDIR
						: 0;
			rc = tree_mknode(T, p, S_IFREG | 0644, 0, 0, 0, NULL,
					 &a);
			if (want == 0 && rc == 0) {
				char c[32];
				struct ment *e = &model[nmodel++];
				snprintf(e->path, sizeof(e->path), "%s", p);
				e->dir = false;
				e->ino = a.ino;
				snprintf(c, sizeof(c), "ino:%llu",
					 (unsigned long long)a.ino);
				cr_assert_eq(tree_write(T, p, a.ino, 0, c,
							strlen(c), false, NULL),
					     0);
			}
			counts[1]++;
		} else if (r < 50) { /* unlink */
			struct ment *e = mfind(p);
			want = !e ? -ENOENT : e->dir ? -EISDIR : 0;
			rc = tree_unlink(T, p, 0, NULL);
			if (want == 0 && rc == 0)
				mdelete(e);
			counts[2]++;
		} else if (r < 60) { /* rmdir */
			struct ment *e = mfind(p);
			want = !e	    ? -ENOENT
			       : !e->dir    ? -ENOTDIR
			       : !mempty(p) ? -ENOTEMPTY
					    : 0;
			rc = tree_rmdir(T, p);
			if (want == 0 && rc == 0)
				mdelete(e);
			counts[3]++;
		} else if (r < 70) { /* link */
			struct ment *e = mfind(p);
			char qp[128];
			mparent(q, qp);
			want = !e	       ? -ENOENT
			       : e->dir	       ? -EPERM
			       : mkind(qp) < 0 ? -ENOENT
			       : !mkind(qp)    ? -ENOTDIR
			       : mfind(q)      ? -EEXIST
					       : 0;
			rc = tree_link(T, p, q, NULL);
			if (want == 0 && rc == 0) {
				struct ment *n = &model[nmodel++];
				snprintf(n->path, sizeof(n->path), "%s", q);
				n->dir = false;
				n->ino = e->ino;
			}
			counts[4]++;
		} else { /* rename, all flavours */
			unsigned fl = r < 85   ? 0
				      : r < 92 ? TREE_RENAME_NOREPLACE
					       : TREE_RENAME_EXCHANGE;
			want = model_rename(p, q, fl);
			rc = tree_rename(T, p, q, fl, NULL);
			counts[5 + (fl ? (fl == TREE_RENAME_EXCHANGE ? 2 : 1)
				       : 0)]++;
		}
		cr_assert_eq(rc, want, "op %d (r=%u) %s %s: got %d want %d", op,
			     r, p, q, rc, want);
		cr_assert_lt(nmodel, MMAX - 1);
		if (op % 100 == 0)
			model_verify();
		if (op == 1200)
			tu_reopen();
	}
	model_verify();
	assert_fsck_clean(T);
	printf("tree: model ops: mkdir %d create %d unlink %d rmdir %d link "
	       "%d rename %d/%d/%d, %zu nodes at the end\n",
	       counts[0], counts[1], counts[2], counts[3], counts[4], counts[5],
	       counts[6], counts[7], nmodel);
}
