/*
 * du.c - the du command: a branch's bytes, allocated bytes, files, folders
 * and symlinks from one subtree scan.
 *
 * Limits: du counts each hard-linked inode's bytes once, with a hash set of
 * the linked inodes it met (memory grows with their number only).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl_i.h"

/* An open-addressing set of inode numbers (du's hard-linked inodes). */
struct ino_set {
	uint64_t *v;
	size_t cap, n;
};

/* Adds @ino; returns 1 if new, 0 if present, -ENOMEM. */
static int ino_set_add(struct ino_set *s, uint64_t ino)
{
	size_t i;

	if ((s->n + 1) * 2 > s->cap) {
		struct ino_set g = {NULL, s->cap ? s->cap * 2 : 1024, 0};

		g.v = calloc(g.cap, sizeof(uint64_t));
		if (!g.v)
			return -ENOMEM;
		for (i = 0; i < s->cap; i++)
			if (s->v[i])
				ino_set_add(&g, s->v[i]);
		free(s->v);
		*s = g;
	}
	for (i = (ino * 0x9e3779b97f4a7c15ULL) & (s->cap - 1); s->v[i];
	     i = (i + 1) & (s->cap - 1))
		if (s->v[i] == ino)
			return 0;
	s->v[i] = ino;
	s->n++;
	return 1;
}

struct du_count {
	uint64_t bytes, files, dirs, symlinks, other, bad;
	uint64_t allocated; /* bytes of the blocks stored (st_blocks * 512) */
};

static int du_add(struct tree *t, struct ino_set *seen, struct du_count *c,
		  const char *path, const struct tree_attr *in)
{
	struct tree_attr a = *in;
	int rc;

	if (!a.mode) {
		c->bad++;
		return 0;
	}
	if (S_ISDIR(a.mode)) {
		c->dirs++;
	} else if (S_ISLNK(a.mode)) {
		c->symlinks++;
	} else if (S_ISREG(a.mode)) {
		c->files++;
		if (a.flags & TREE_F_LINKED) {
			rc = ino_set_add(seen, a.ino);
			if (rc <= 0)
				return rc;
			rc = tree_getattr(t, NULL, a.ino, &a);
			if (rc) {
				c->bad++;
				return 0;
			}
		}
		c->bytes += a.size;
	} else {
		c->other++;
	}
	c->allocated += tree_attr_blocks(t, &a) * 512;
	return 0;
}

int ctl_cmd_du(struct ctx *x)
{
	char *path = x->pathbuf[0];
	struct du_count c = {0};
	struct ino_set seen = {NULL, 0, 0};
	struct tree_scan *sc = NULL;
	struct progress pg;
	struct tree_attr a;
	struct tree *t;
	const char *p;
	int64_t t0;
	double secs;
	uint64_t n = 0;
	int rc, status;

	status = ctl_resolve(x, x->o.npos ? x->o.pos[0] : "/", &t, path);
	if (status)
		return status;
	t0 = ctl_now_ns();
	rc = tree_lookup(t, path, &a);
	if (rc)
		goto out;
	/* tree_lookup resolved a link stub already: count it as found. */
	a.flags &= ~TREE_F_LINKED;
	rc = du_add(t, &seen, &c, path, &a);
	if (rc || !S_ISDIR(a.mode))
		goto out;
	ctl_progress_init(&pg, x, "du", 0);
	rc = tree_scan_open(&sc, t, path);
	while (!rc && (rc = tree_scan_next(sc, &p, &a)) == 1) {
		rc = du_add(t, &seen, &c, p, &a);
		if (!a.mode) {
			fprintf(x->err, "pathfsctl: du: ");
			ctl_put_name(x->err, p);
			fprintf(x->err, ": record does not decode\n");
		}
		if (!(++n & 0xfff))
			ctl_progress_draw(&pg, n, false);
	}
	ctl_progress_end(&pg);
	if (rc > 0)
		rc = 0;
out:
	secs = (double)(ctl_now_ns() - t0) / 1e9;
	tree_scan_free(sc);
	free(seen.v);
	if (rc) {
		ctl_fail(x, path, rc);
		return CTL_FAILED;
	}
	if (x->o.json) {
		fputs("{\"drive\": ", x->out);
		ctl_put_json(x->out, tree_drive_name(t));
		fputs(", \"path\": ", x->out);
		ctl_put_json(x->out, path);
		fprintf(x->out,
			", \"bytes\": %" PRIu64 ", \"allocated\": %" PRIu64
			", \"files\": %" PRIu64 ", \"dirs\": %" PRIu64
			", \"symlinks\": %" PRIu64 ", \"other\": %" PRIu64
			", \"unreadable\": %" PRIu64 ", \"seconds\": %.6f}\n",
			c.bytes, c.allocated, c.files, c.dirs, c.symlinks,
			c.other, c.bad, secs);
	} else {
		fprintf(x->out,
			"%" PRIu64 " bytes (%" PRIu64 " allocated), %" PRIu64
			" files, %" PRIu64 " folders, %" PRIu64
			" symlinks, %" PRIu64 " other%s in %.3f s: ",
			c.bytes, c.allocated, c.files, c.dirs, c.symlinks,
			c.other, c.bad ? " (some unreadable)" : "", secs);
		ctl_put_name(x->out, path);
		fputc('\n', x->out);
	}
	return c.bad ? CTL_FAILED : CTL_OK;
}
