/*
 * list.c - the ls, stat and tree commands: straight from the store.
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

/* Joins @dir and @name into @buf of @size bytes. -ENAMETOOLONG. */
static int join(char *buf, size_t size, const char *dir, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", strcmp(dir, "/") ? dir : "", name);

	return n < 0 || (size_t)n >= size || n > TREE_PATH_MAX ? -ENAMETOOLONG
							       : 0;
}

/* One entry as ls prints it. @full is its path (for a symlink's target). */
static void print_entry(struct ctx *x, struct tree *t, const char *name,
			const char *full, const struct tree_attr *a, bool first)
{
	char *target = NULL;

	if (S_ISLNK(a->mode) && full)
		tree_readlink(t, full, &target);
	if (x->o.json) {
		fprintf(x->out, "%s{\"name\": ", first ? "" : ",\n ");
		ctl_put_json(x->out, name);
		fprintf(x->out,
			", \"type\": \"%s\", \"ino\": %" PRIu64
			", \"mode\": \"%04o\", \"uid\": %u, \"gid\": %u, "
			"\"size\": %" PRIu64 ", \"nlink\": %u, "
			"\"mtime_ns\": %" PRId64,
			ctl_type_name(a->mode), a->ino,
			(unsigned)(a->mode & 07777), (unsigned)a->uid,
			(unsigned)a->gid, a->size, (unsigned)a->nlink,
			a->mtime_ns);
		if (target) {
			fputs(", \"target\": ", x->out);
			ctl_put_json(x->out, target);
		}
		fputc('}', x->out);
	} else {
		char ms[11], ts[32];

		ctl_mode_string(a->mode, ms);
		ctl_time_string(a->mtime_ns, ts, sizeof(ts));
		fprintf(x->out, "%s %3u %5u %5u %10" PRIu64 " %s ", ms,
			(unsigned)a->nlink, (unsigned)a->uid, (unsigned)a->gid,
			a->size, ts);
		ctl_put_name(x->out, name);
		if (target) {
			fputs(" -> ", x->out);
			ctl_put_name(x->out, target);
		}
		fputc('\n', x->out);
	}
	free(target);
}

/*
 * The node the first positional argument names ("/" if none): its drive in
 * *t, its normalised path in @path, its attributes in *a. Returns 0,
 * CTL_USAGE or CTL_FAILED (message printed).
 */
static int resolve_node(struct ctx *x, struct tree **t, char *path,
			struct tree_attr *a)
{
	int rc, status;

	status = ctl_resolve(x, x->o.npos ? x->o.pos[0] : "/", t, path);
	if (status)
		return status;
	rc = tree_lookup(*t, path, a);
	if (rc) {
		ctl_fail(x, path, rc);
		return CTL_FAILED;
	}
	return 0;
}

/*
 * Prints the children of folder @path as ls does, from one listing
 * (tree_dir_open_checked). Where the engine checks it (DynamoDB), what it
 * prints is held in memory (*@out, *@err) until the check; else printed
 * at once. *@bad counts the records that do not decode. Errors: those of
 * the listing, -ESTALE (a commit changed the folder meanwhile).
 */
static int list_once(struct ctx *x, struct tree *t, const char *path,
		     char **out, char **err, size_t *bad)
{
	char *full = x->pathbuf[1];
	FILE *real_out = x->out, *real_err = x->err;
	struct tree_dir *d = NULL;
	struct tree_attr a;
	const char *name;
	size_t nlen, olen, elen;
	bool first = true;
	int rc;

	*bad = 0;
	rc = tree_dir_open_checked(&d, t, path, NULL);
	if (!rc && tree_dir_checked(d)) {
		x->out = open_memstream(out, &olen);
		x->err = open_memstream(err, &elen);
		if (!x->out || !x->err)
			rc = -ENOMEM;
	}
	while (!rc && (rc = tree_dir_next(d, &name, &nlen, &a)) == 1) {
		rc = 0;
		if (join(full, TREE_PATH_MAX + 1, path, name))
			continue;
		print_entry(x, t, name, full, &a, first);
		first = false;
		if (!a.mode) { /* listed, as ls(1) does, and said */
			fputs("pathfsctl: ls: ", x->err);
			ctl_put_name(x->err, full);
			fputs(": record does not decode\n", x->err);
			(*bad)++;
		}
	}
	if (!rc)
		rc = tree_dir_check(d);
	tree_dir_free(d);
	if (x->out != real_out && x->out)
		fclose(x->out);
	if (x->err != real_err && x->err)
		fclose(x->err);
	x->out = real_out;
	x->err = real_err;
	return rc;
}

int ctl_cmd_ls(struct ctx *x)
{
	char *path = x->pathbuf[0], *out = NULL, *err = NULL;
	struct tree_attr a;
	struct tree *t;
	size_t bad = 0;
	int rc = 0, tries = 0, status;

	status = resolve_node(x, &t, path, &a);
	if (status)
		return status;
	if (x->o.json)
		fputc('[', x->out);
	if (!S_ISDIR(a.mode)) {
		print_entry(x, t, path, path, &a, true);
		goto done;
	}
	do {
		free(out);
		free(err);
		out = err = NULL;
		rc = list_once(x, t, path, &out, &err, &bad);
	} while (tree_read_again(rc, &tries));
	if (out)
		fputs(out, x->out);
	if (err)
		fputs(err, x->err);
	if (rc == -ESTALE) { /* as a readdir page does: the last read */
		fputs("pathfsctl: ls: ", x->err);
		ctl_put_name(x->err, path);
		fputs(": changed while each listing was read: a name may be "
		      "shown twice or missed\n",
		      x->err);
		rc = 0;
	}
done:
	free(out);
	free(err);
	if (x->o.json)
		fputs("]\n", x->out);
	if (rc < 0) {
		ctl_fail(x, path, rc);
		return CTL_FAILED;
	}
	return bad ? CTL_FAILED : CTL_OK;
}

int ctl_cmd_stat(struct ctx *x)
{
	char *path = x->pathbuf[0], *target = NULL;
	struct tree_attr a;
	struct tree *t;
	int rc, status;

	status = ctl_resolve(x, x->o.pos[0], &t, path);
	if (status)
		return status;
	rc = tree_lookup(t, path, &a);
	if (rc) {
		ctl_fail(x, path, rc);
		return CTL_FAILED;
	}
	if (S_ISLNK(a.mode))
		tree_readlink(t, path, &target);
	if (x->o.json) {
		fputs("{\"drive\": ", x->out);
		ctl_put_json(x->out, tree_drive_name(t));
		fputs(", \"path\": ", x->out);
		ctl_put_json(x->out, path);
		fprintf(
		    x->out,
		    ", \"type\": \"%s\", \"ino\": %" PRIu64
		    ", \"mode\": \"%04o\", \"uid\": %u, \"gid\": %u, "
		    "\"size\": %" PRIu64 ", \"nlink\": %u, \"rdev\": %" PRIu64
		    ", \"atime_ns\": %" PRId64 ", \"mtime_ns\": %" PRId64
		    ", \"ctime_ns\": %" PRId64 ", \"hardlinked\": %s",
		    ctl_type_name(a.mode), a.ino, (unsigned)(a.mode & 07777),
		    (unsigned)a.uid, (unsigned)a.gid, a.size, (unsigned)a.nlink,
		    a.rdev, a.atime_ns, a.mtime_ns, a.ctime_ns,
		    (a.flags & TREE_F_LINKED) ? "true" : "false");
		if (target) {
			fputs(", \"target\": ", x->out);
			ctl_put_json(x->out, target);
		}
		fputs("}\n", x->out);
	} else {
		char ms[11], at[32], mt[32], ct[32];

		ctl_mode_string(a.mode, ms);
		ctl_time_string(a.atime_ns, at, sizeof(at));
		ctl_time_string(a.mtime_ns, mt, sizeof(mt));
		ctl_time_string(a.ctime_ns, ct, sizeof(ct));
		fprintf(x->out, "  path: %s:", tree_drive_name(t));
		ctl_put_name(x->out, path);
		if (target) {
			fputs(" -> ", x->out);
			ctl_put_name(x->out, target);
		}
		fprintf(x->out,
			"\n  type: %s\n inode: %" PRIu64
			"%s\n  mode: %04o (%s)\n"
			"   uid: %u\n   gid: %u\n  size: %" PRIu64
			"\n links: %u\n  rdev: %" PRIu64
			"\naccess: %s (%" PRId64 " ns)\nmodify: %s (%" PRId64
			" ns)\nchange: %s (%" PRId64 " ns)\n",
			ctl_type_name(a.mode), a.ino,
			(a.flags & TREE_F_LINKED) ? " (hard-linked)" : "",
			(unsigned)(a.mode & 07777), ms, (unsigned)a.uid,
			(unsigned)a.gid, a.size, (unsigned)a.nlink, a.rdev, at,
			a.atime_ns, mt, a.mtime_ns, ct, a.ctime_ns);
	}
	free(target);
	return CTL_OK;
}

struct tree_walk {
	struct ctx *x;
	struct tree *t;
	uint64_t dirs, files;
	char prefix[3 * 4 * 1024]; /* 4 bytes per level, UTF-8 bars */
};

/*
 * Prints the children of @path, depth first, holding one listing open at a
 * time: before descending, the listing is closed and reopened after the
 * child's name, so memory stays bounded for any depth and width.
 */
static int walk(struct tree_walk *w, const char *path, size_t plen, long depth)
{
	struct tree_dir *d = NULL;
	struct tree_attr a, na;
	char *cur = NULL, *next = NULL, *full = NULL;
	const char *name;
	size_t nlen, fsize;
	bool have_next;
	int rc;

	/* a child's path: this one, "/" and a name */
	fsize = strlen(path) + TREE_NAME_MAX + 2;
	full = malloc(fsize);
	if (!full)
		return -ENOMEM;
	rc = tree_dir_open(&d, w->t, path, NULL);
	if (rc)
		goto out;
	rc = tree_dir_next(d, &name, &nlen, &a);
	if (rc <= 0)
		goto out;
	cur = strdup(name);
	for (;;) {
		if (!cur) {
			rc = -ENOMEM;
			goto out;
		}
		rc = tree_dir_next(d, &name, &nlen, &na);
		if (rc < 0)
			goto out;
		have_next = rc == 1;
		free(next);
		next = have_next ? strdup(name) : NULL;
		if (have_next && !next) {
			rc = -ENOMEM;
			goto out;
		}
		fputs(w->prefix, w->x->out);
		fputs(have_next ? "├── " : "└── ", w->x->out);
		ctl_put_name(w->x->out, cur);
		if (S_ISLNK(a.mode) && !join(full, fsize, path, cur)) {
			char *tg = NULL;

			if (!tree_readlink(w->t, full, &tg)) {
				fputs(" -> ", w->x->out);
				ctl_put_name(w->x->out, tg);
			}
			free(tg);
		}
		fputc('\n', w->x->out);
		if (S_ISDIR(a.mode)) {
			w->dirs++;
			if (depth != 0 && !join(full, fsize, path, cur) &&
			    plen + 8 < sizeof(w->prefix)) {
				strcpy(w->prefix + plen,
				       have_next ? "│   " : "    ");
				tree_dir_free(d);
				d = NULL;
				rc = walk(w, full, strlen(w->prefix),
					  depth > 0 ? depth - 1 : depth);
				w->prefix[plen] = '\0';
				if (rc && rc != -ENOENT) /* gone meanwhile */
					goto out;
				rc = tree_dir_open(&d, w->t, path, cur);
				if (rc)
					goto out;
				rc = tree_dir_next(d, &name, &nlen, &na);
				if (rc < 0)
					goto out;
				have_next = rc == 1;
				free(next);
				next = have_next ? strdup(name) : NULL;
			}
		} else {
			w->files++;
		}
		if (!have_next)
			break;
		free(cur);
		cur = next;
		next = NULL;
		a = na;
	}
	rc = 0;
out:
	tree_dir_free(d);
	free(cur);
	free(next);
	free(full);
	return rc < 0 ? rc : 0;
}

int ctl_cmd_tree(struct ctx *x)
{
	struct tree_walk *w;
	char *path = x->pathbuf[0];
	struct tree_attr a;
	struct tree *t;
	int rc, status;

	status = resolve_node(x, &t, path, &a);
	if (status)
		return status;
	ctl_put_name(x->out, path);
	fputc('\n', x->out);
	if (!S_ISDIR(a.mode))
		return CTL_OK;
	w = calloc(1, sizeof(*w));
	if (!w) {
		ctl_fail(x, path, -ENOMEM);
		return CTL_FAILED;
	}
	w->x = x;
	w->t = t;
	rc = x->o.depth == 0
		 ? 0
		 : walk(w, path, 0, x->o.depth > 0 ? x->o.depth - 1 : -1);
	fprintf(x->out, "\n%" PRIu64 " directories, %" PRIu64 " files\n",
		w->dirs, w->files);
	free(w);
	if (rc) {
		ctl_fail(x, path, rc);
		return CTL_FAILED;
	}
	return CTL_OK;
}
