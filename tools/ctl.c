/*
 * ctl.c - pathfsctl's commands: drives, mkdrive, rmdrive, ls, stat, tree, du,
 * fsck, recover, rm -r, cp -r, mv, stats.
 *
 * The same code runs in the pathfsctl process on an unmounted store and inside
 * the daemon (fs/control.c) on a mounted one, so it is reentrant: no getopt,
 * no globals, no exit(); everything goes to env->out / env->err.
 *
 * Paths are "/..." on the -d drive, or "DRIVE:/..." on another drive of the
 * store. A trailing "/" is dropped; empty, "." and ".." names are refused.
 *
 * Resume tokens are the store's own (store/token.c: base64url, MAC'd with a
 * secret of the drive and bound to the operation, drives and paths), printed
 * and taken as they are. One the store refuses is exit 2, nothing changed.
 *
 * Limits:
 *  - names are printed with bytes below 0x20, 0x7f and "\" escaped (\xNN,
 *    \\), so one entry is one line; JSON output escapes bytes that are not
 *    valid UTF-8 as \u00NN (so such names do not round-trip through JSON);
 *  - a progress bar (stderr a terminal) runs a branch operation in slices of
 *    PROGRESS_SLICE items through its own resume tokens, after one extra
 *    subtree scan to learn the total; an rm -r without a budget that the
 *    store does in one batch is not sliced (the bar shows its end only);
 *  - du counts each hard-linked inode's bytes once, with a hash set of the
 *    linked inodes it met (memory grows with their number only);
 *  - inside the daemon rm -r passes TREE_KEEP_ORPHAN: removed files that
 *    are open become orphans (the store asks the daemon through the open
 *    check fs/control.c registers, see tree_set_open_check()), freed at
 *    their last close; the others are freed at once;
 *  - on a mounted drive, fsck and recover hold every request of the drive
 *    while they run (the daemon's begin/end hooks on "/").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

#define PROGRESS_SLICE 2000
#define CTL_STR_(v)    #v
#define CTL_STR(v)     CTL_STR_(v)
/* An rm -r of up to this many nodes goes in one batch (store/cascade.c's
 * RM_FAST_MAX + 1): the progress bar does not slice it. */
#define RM_ONE_BATCH_MAX   (1u << 20)
#define PROGRESS_REDRAW_NS 100000000LL /* 0.1 s */

struct opts {
	bool help, json, recursive, repair, all, reset;
	bool have_max;
	uint64_t max_items;
	const char *resume;
	long depth; /* -1: no limit */
	const char *owner;
	int npos;
	const char *pos[4];
};

/* Options a command accepts. */
#define O_JSON	 0x01
#define O_R	 0x02
#define O_BUDGET 0x04 /* --max-items, --resume */
#define O_REPAIR 0x08
#define O_ALL	 0x10
#define O_DEPTH	 0x20
#define O_OWNER	 0x40
#define O_RESET	 0x80

struct ctx {
	struct ctl_env *env;
	FILE *out, *err;
	const struct cmd *cmd;
	struct opts o;
	/* two path buffers of TREE_PATH_MAX + 1 bytes for the command, on the
	 * heap (the daemon runs commands on its threads' stacks) */
	char *pathbuf[2];
};

struct cmd {
	const char *name;
	int (*run)(struct ctx *x);
	unsigned opts;
	int minpos, maxpos;
	const char *usage;
	const char *help;
};

/* ---- small helpers ---------------------------------------------------- */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Prints @s for a human: control bytes and backslash escaped. */
static void put_name(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	for (; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else if (*p == '\\')
			fputs("\\\\", f);
		else
			fputc(*p, f);
	}
}

/* Length of the valid UTF-8 sequence at @p (0 if invalid). */
static size_t utf8_len(const unsigned char *p)
{
	size_t n, i;
	uint32_t cp;

	if (*p < 0x80)
		return 1;
	if ((*p & 0xe0) == 0xc0) {
		n = 2;
		cp = *p & 0x1f;
	} else if ((*p & 0xf0) == 0xe0) {
		n = 3;
		cp = *p & 0x0f;
	} else if ((*p & 0xf8) == 0xf0) {
		n = 4;
		cp = *p & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* Prints @s as a JSON string (quotes included). */
static void put_json(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	while (*p) {
		size_t n = utf8_len(p);

		if (*p == '"' || *p == '\\') {
			fputc('\\', f);
			fputc(*p, f);
		} else if (*p < 0x20 || *p == 0x7f || n == 0) {
			fprintf(f, "\\u%04x", *p);
			n = 1;
		} else {
			fwrite(p, 1, n, f);
		}
		p += n ? n : 1;
	}
	fputc('"', f);
}

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFDIR:
		return "dir";
	case S_IFREG:
		return "file";
	case S_IFLNK:
		return "symlink";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	case S_IFCHR:
		return "chardev";
	case S_IFBLK:
		return "blockdev";
	default:
		return "bad";
	}
}

static void mode_string(mode_t m, char s[11])
{
	static const char rwx[] = "rwxrwxrwx";
	int i;

	switch (m & S_IFMT) {
	case S_IFDIR:
		s[0] = 'd';
		break;
	case S_IFLNK:
		s[0] = 'l';
		break;
	case S_IFIFO:
		s[0] = 'p';
		break;
	case S_IFSOCK:
		s[0] = 's';
		break;
	case S_IFCHR:
		s[0] = 'c';
		break;
	case S_IFBLK:
		s[0] = 'b';
		break;
	case S_IFREG:
		s[0] = '-';
		break;
	default:
		s[0] = '?';
		break;
	}
	for (i = 0; i < 9; i++)
		s[1 + i] = (m & (0400 >> i)) ? rwx[i] : '-';
	if (m & S_ISUID)
		s[3] = (m & S_IXUSR) ? 's' : 'S';
	if (m & S_ISGID)
		s[6] = (m & S_IXGRP) ? 's' : 'S';
	if (m & S_ISVTX)
		s[9] = (m & S_IXOTH) ? 't' : 'T';
	s[10] = '\0';
}

static void time_string(int64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000LL);
	struct tm tm;

	if (!localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M", &tm))
		snprintf(buf, len, "%" PRId64, ns);
}

/* Prints "pathfsctl: CMD: what: strerror" on err. */
static void fail(struct ctx *x, const char *what, int rc)
{
	fprintf(x->err, "pathfsctl: %s: ", x->cmd->name);
	put_name(x->err, what);
	fprintf(x->err, ": %s\n", strerror(-rc));
}

static int usage_error(struct ctx *x, const char *fmt, const char *arg)
{
	fprintf(x->err, "pathfsctl: %s: ", x->cmd->name);
	fprintf(x->err, fmt, arg ? arg : "");
	fprintf(x->err, "\nusage: pathfsctl %s\n", x->cmd->usage);
	return CTL_USAGE;
}

/* ---- paths and drives -------------------------------------------------- */

/*
 * Checks and normalises path @in (a trailing "/" dropped) into @buf of
 * TREE_PATH_MAX + 1 bytes. Returns 0 or CTL_USAGE (message printed).
 */
static int check_path(struct ctx *x, const char *in, char *buf)
{
	size_t len = strlen(in);
	const char *p, *name;

	if (in[0] != '/')
		return usage_error(x,
				   "'%s': a path must start with '/' (or be "
				   "DRIVE:/PATH)",
				   in);
	while (len > 1 && in[len - 1] == '/')
		len--;
	if (len > TREE_PATH_MAX)
		return usage_error(x, "path too long (%s)",
				   "over " CTL_STR(TREE_PATH_MAX) " bytes");
	memcpy(buf, in, len);
	buf[len] = '\0';
	if (len == 1)
		return 0;
	for (name = buf + 1;; name = p + 1) {
		size_t n;

		p = strchr(name, '/');
		n = p ? (size_t)(p - name) : strlen(name);
		if (n == 0)
			return usage_error(x, "'%s': empty name in path", in);
		if ((n == 1 && name[0] == '.') ||
		    (n == 2 && name[0] == '.' && name[1] == '.'))
			return usage_error(
			    x, "'%s': '.' and '..' are not names here", in);
		if (n > TREE_NAME_MAX)
			return usage_error(x, "'%s': a name is over 255 bytes",
					   in);
		if (!p)
			break;
	}
	return 0;
}

/* Opens drive @name; prints why not. Returns 0, CTL_USAGE or CTL_FAILED. */
static int open_drive(struct ctx *x, const char *name, struct tree **t)
{
	int rc;

	if (store_drive_name_check(name))
		return usage_error(x,
				   "'%s': bad drive id (1 to 64 of A-Z a-z "
				   "0-9 _ . -)",
				   name);
	rc = store_drive(x->env->store, name, t);
	if (rc == -ENOENT) {
		fprintf(x->err, "pathfsctl: %s: no drive '%s' in this store\n",
			x->cmd->name, name);
		return CTL_FAILED;
	}
	if (rc) {
		fail(x, name, rc);
		return CTL_FAILED;
	}
	return 0;
}

/*
 * Resolves @arg, "/path" on the default drive or "DRIVE:/path", to a drive
 * handle and a normalised path in @path (TREE_PATH_MAX + 1 bytes).
 * Returns 0, CTL_USAGE or CTL_FAILED (message printed).
 */
static int resolve(struct ctx *x, const char *arg, struct tree **t, char *path)
{
	char drive[TREE_DRIVE_MAX + 2];
	const char *colon, *p = arg;
	int rc;

	if (arg[0] == '/') {
		snprintf(drive, sizeof(drive), "%s",
			 x->env->default_drive ? x->env->default_drive
					       : "main");
	} else {
		colon = strchr(arg, ':');
		if (!colon)
			return usage_error(x,
					   "'%s': a path must start with '/' "
					   "(or be DRIVE:/PATH)",
					   arg);
		if ((size_t)(colon - arg) > TREE_DRIVE_MAX || colon == arg)
			return usage_error(x, "'%s': bad drive id", arg);
		memcpy(drive, arg, (size_t)(colon - arg));
		drive[colon - arg] = '\0';
		p = colon + 1;
	}
	rc = check_path(x, p, path);
	if (rc)
		return rc;
	return open_drive(x, drive, t);
}

/* ---- daemon hooks ------------------------------------------------------- */

/* true if @t is the drive the daemon serves (its hooks apply) */
static bool mounted(struct ctx *x, struct tree *t)
{
	return x->env->mounted_drive &&
	       !strcmp(tree_drive_name(t), x->env->mounted_drive);
}

static void hold(struct ctx *x, struct tree *t, const char *path,
		 const char *newpath)
{
	if (mounted(x, t) && x->env->begin)
		x->env->begin(x->env->ctx, t, path, newpath);
}

static void release(struct ctx *x, struct tree *t, const char *path,
		    const char *newpath)
{
	if (mounted(x, t) && x->env->end)
		x->env->end(x->env->ctx, t, path, newpath);
}

/* ---- progress bar -------------------------------------------------------- */

struct progress {
	FILE *f; /* NULL: off */
	const char *label;
	uint64_t total;
	int64_t start, last;
	bool drawn;
};

static void progress_init(struct progress *p, struct ctx *x, const char *label,
			  uint64_t total)
{
	p->f = x->env->progress ? x->err : NULL;
	p->label = label;
	p->total = total;
	p->start = now_ns();
	p->last = 0;
	p->drawn = false;
}

static void progress_draw(struct progress *p, uint64_t done, bool force)
{
	int64_t now = now_ns();
	double secs, rate;
	int pct;

	if (!p->f || (!force && now - p->last < PROGRESS_REDRAW_NS))
		return;
	p->last = now;
	secs = (double)(now - p->start) / 1e9;
	rate = secs > 0 ? (double)done / secs : 0;
	pct = p->total ? (int)(done * 100 / p->total) : 0;
	if (pct > 100)
		pct = 100;
	fprintf(p->f, "\r\033[K%s: %" PRIu64, p->label, done);
	if (p->total)
		fprintf(p->f, "/%" PRIu64 " (%d%%)", p->total, pct);
	fprintf(p->f, " %.0f/s", rate);
	if (p->total && rate > 0 && done < p->total)
		fprintf(p->f, " ETA %.0fs", (double)(p->total - done) / rate);
	fflush(p->f);
	p->drawn = true;
}

static void progress_end(struct progress *p)
{
	if (p->f && p->drawn) {
		fputs("\r\033[K", p->f);
		fflush(p->f);
	}
}

/* ---- budgeted branch operations ---------------------------------------- */

struct branch_op {
	const char *op; /* "rm", "cp", "mv" */
	struct tree *t, *dt;
	const char *src, *dst;
	unsigned flags;
};

static int branch_call(struct branch_op *b, uint64_t max, const char *resume,
		       struct tree_op_result *r)
{
	if (!strcmp(b->op, "rm"))
		return tree_rm_r(b->t, b->src, max, resume, b->flags, r);
	if (!strcmp(b->op, "cp"))
		return tree_cp_r(b->t, b->src, b->dt, b->dst, max, resume, r);
	return tree_mv(b->t, b->src, b->dt, b->dst, max, resume, r);
}

/* Counts @path and its descendants (for the progress bar's total). */
static uint64_t branch_count(struct tree *t, const char *path)
{
	struct tree_scan *sc;
	struct tree_attr a;
	const char *p;
	uint64_t n = 1;

	if (tree_lookup(t, path, &a) || !S_ISDIR(a.mode))
		return 1;
	if (tree_scan_open(&sc, t, path))
		return 1;
	while (tree_scan_next(sc, &p, &a) == 1)
		n++;
	tree_scan_free(sc);
	return n;
}

/* Collects the failures of @r into @acc (taking them over). */
static void take_failures(struct tree_op_result *acc, struct tree_op_result *r)
{
	char **f;
	size_t i;

	acc->processed += r->processed;
	acc->skipped += r->skipped;
	acc->failed += r->failed;
	if (!r->nfailures)
		return;
	f = realloc(acc->failures,
		    (acc->nfailures + r->nfailures) * sizeof(char *));
	if (!f)
		return; /* counted, not listed */
	acc->failures = f;
	for (i = 0; i < r->nfailures; i++) {
		acc->failures[acc->nfailures++] = r->failures[i];
		r->failures[i] = NULL;
	}
}

/*
 * Runs @b under the user's budget and token, in slices when a progress bar is
 * drawn; prints the summary. Returns the exit status.
 */
static int run_branch(struct ctx *x, struct branch_op *b, const char *label)
{
	struct tree_op_result acc, r;
	struct progress pg;
	char *resume = NULL, *tok;
	uint64_t budget = x->o.have_max ? x->o.max_items : 0;
	int64_t t0 = now_ns();
	uint64_t total;
	bool sliced;
	int rc = 0, status;
	size_t i;

	memset(&acc, 0, sizeof(acc));
	if (x->o.resume) {
		resume = strdup(x->o.resume);
		if (!resume) {
			fail(x, "resume token", -ENOMEM);
			return CTL_FAILED;
		}
	}
	/* A move inside one drive is one journaled rename: nothing to slice. */
	sliced = x->env->progress && !(!strcmp(b->op, "mv") && b->t == b->dt);
	total =
	    sliced ? branch_count(b->t, b->src) * (!strcmp(b->op, "mv") ? 2 : 1)
		   : 0;
	/* Nor is an rm -r the store does in one batch: slices would walk. */
	if (sliced && !strcmp(b->op, "rm") && !budget &&
	    total <= RM_ONE_BATCH_MAX)
		sliced = false;
	progress_init(&pg, x, label, total);
	for (;;) {
		uint64_t max = budget, moved,
			 done = acc.processed + acc.skipped + acc.failed;

		if (sliced) {
			if (budget && done >= budget)
				break;
			max = PROGRESS_SLICE;
			if (budget && budget - done < max)
				max = budget - done;
		}
		memset(&r, 0, sizeof(r));
		rc = branch_call(b, max, resume, &r);
		moved = r.processed + r.skipped + r.failed;
		take_failures(&acc, &r);
		if (rc) {
			tree_op_result_release(&r);
			break;
		}
		free(resume);
		resume = r.token; /* NULL when finished */
		r.token = NULL;
		tree_op_result_release(&r);
		progress_draw(&pg, acc.processed + acc.skipped + acc.failed,
			      false);
		/* A slice that did nothing would do nothing again: hand the
		 * token to the user rather than spin. */
		if (!sliced || !resume || !moved)
			break;
	}
	progress_end(&pg);

	if (rc) {
		const char *why = b->src;

		if (rc == -EINVAL && x->o.resume)
			fprintf(x->err,
				"pathfsctl: %s: the store refused the resume "
				"token (truncated, altered, stale, or for "
				"another operation, paths or drive); nothing "
				"changed\n",
				x->cmd->name);
		else if (rc == -EEXIST && b->dst)
			fail(x, b->dst, rc);
		else if (rc == -EINVAL && b->dst)
			fprintf(x->err,
				"pathfsctl: %s: cannot put %s inside itself "
				"(or the token is stale)\n",
				x->cmd->name, b->src);
		else
			fail(x, why, rc);
	}
	tok = resume; /* the store's token, MAC'd and bound to the op */
	resume = NULL;

	if (x->o.json) {
		fprintf(x->out,
			"{\"op\": \"%s\", \"processed\": %" PRIu64
			", \"skipped\": %" PRIu64 ", \"failed\": %" PRIu64
			", \"failures\": [",
			b->op, acc.processed, acc.skipped, acc.failed);
		for (i = 0; i < acc.nfailures; i++) {
			fputs(i ? ", " : "", x->out);
			put_json(x->out, acc.failures[i]);
		}
		fprintf(x->out, "], \"error\": ");
		if (rc)
			put_json(x->out, strerror(-rc));
		else
			fputs("null", x->out);
		fprintf(x->out,
			", \"done\": %s, \"seconds\": %.3f, \"resume\": ",
			!rc && !tok ? "true" : "false",
			(double)(now_ns() - t0) / 1e9);
		put_json(x->out, tok);
		fputs("}\n", x->out);
	} else {
		fprintf(x->out, "processed: %" PRIu64 "\n", acc.processed);
		fprintf(x->out, "skipped: %" PRIu64 "\n", acc.skipped);
		fprintf(x->out, "failed: %" PRIu64 "\n", acc.failed);
		for (i = 0; i < acc.nfailures; i++) {
			fputs("  ", x->out);
			put_name(x->out, acc.failures[i]);
			fputc('\n', x->out);
		}
		if (tok)
			fprintf(x->out, "resume: %s\n", tok);
	}
	if (rc == -EINVAL && x->o.resume)
		status = CTL_USAGE;
	else if (rc || acc.failed)
		status = CTL_FAILED;
	else if (tok)
		status = CTL_PARTIAL;
	else
		status = CTL_OK;
	free(tok);
	free(resume);
	tree_op_result_release(&acc);
	return status;
}

/* ---- commands ---------------------------------------------------------- */

static int cmd_drives(struct ctx *x)
{
	char **names = NULL;
	size_t n = 0, i;
	int rc;

	rc = store_drive_list(x->env->store, &names, &n);
	if (rc) {
		fail(x, store_dir(x->env->store), rc);
		return CTL_FAILED;
	}
	if (x->o.json)
		fputc('[', x->out);
	for (i = 0; i < n; i++) {
		bool m = x->env->mounted_drive &&
			 !strcmp(names[i], x->env->mounted_drive);

		if (x->o.json) {
			fprintf(x->out, "%s{\"name\": ", i ? ", " : "");
			put_json(x->out, names[i]);
			fprintf(x->out, ", \"mounted\": %s}",
				m ? "true" : "false");
		} else {
			fprintf(x->out, "%s%s\n", names[i],
				m ? " (mounted)" : "");
		}
	}
	if (x->o.json)
		fputs("]\n", x->out);
	store_drive_list_free(names, n);
	return CTL_OK;
}

static int cmd_mkdrive(struct ctx *x)
{
	const char *name = x->o.pos[0];
	uid_t uid = getuid();
	gid_t gid = getgid();
	int rc;

	if (store_drive_name_check(name))
		return usage_error(x,
				   "'%s': bad drive id (1 to 64 of A-Z a-z "
				   "0-9 _ . -)",
				   name);
	if (x->o.owner) {
		unsigned long u, g;
		char *end;

		errno = 0;
		u = strtoul(x->o.owner, &end, 10);
		if (errno || end == x->o.owner || *end != ':')
			return usage_error(x, "'%s': --owner wants UID:GID",
					   x->o.owner);
		g = strtoul(end + 1, &end, 10);
		if (errno || *end || u > UINT32_MAX - 1 || g > UINT32_MAX - 1)
			return usage_error(x, "'%s': --owner wants UID:GID",
					   x->o.owner);
		uid = (uid_t)u;
		gid = (gid_t)g;
	}
	rc = store_drive_create(x->env->store, name, uid, gid);
	if (rc == -EEXIST) {
		fprintf(x->err, "pathfsctl: mkdrive: drive '%s' exists\n",
			name);
		return CTL_FAILED;
	}
	if (rc) {
		fail(x, name, rc);
		return CTL_FAILED;
	}
	fprintf(x->out, "created drive %s\n", name);
	return CTL_OK;
}

static int cmd_rmdrive(struct ctx *x)
{
	const char *name = x->o.pos[0];
	int rc;

	if (store_drive_name_check(name))
		return usage_error(x,
				   "'%s': bad drive id (1 to 64 of A-Z a-z "
				   "0-9 _ . -)",
				   name);
	if (x->env->mounted_drive && !strcmp(name, x->env->mounted_drive)) {
		fprintf(x->err,
			"pathfsctl: rmdrive: drive '%s' is mounted; unmount "
			"it first (nothing changed)\n",
			name);
		return CTL_FAILED;
	}
	rc = store_drive_delete(x->env->store, name);
	if (rc == -ENOENT) {
		fprintf(x->err, "pathfsctl: rmdrive: no drive '%s'\n", name);
		return CTL_FAILED;
	}
	if (rc) {
		fail(x, name, rc);
		return CTL_FAILED;
	}
	fprintf(x->out, "deleted drive %s\n", name);
	return CTL_OK;
}

/* Joins @dir and @name into @buf of @size bytes. -ENAMETOOLONG. */
static int join(char *buf, size_t size, const char *dir, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", strcmp(dir, "/") ? dir : "",
			 name);

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
		put_json(x->out, name);
		fprintf(x->out,
			", \"type\": \"%s\", \"ino\": %" PRIu64
			", \"mode\": \"%04o\", \"uid\": %u, \"gid\": %u, "
			"\"size\": %" PRIu64 ", \"nlink\": %u, "
			"\"mtime_ns\": %" PRId64,
			type_name(a->mode), a->ino, (unsigned)(a->mode & 07777),
			(unsigned)a->uid, (unsigned)a->gid, a->size,
			(unsigned)a->nlink, a->mtime_ns);
		if (target) {
			fputs(", \"target\": ", x->out);
			put_json(x->out, target);
		}
		fputc('}', x->out);
	} else {
		char ms[11], ts[32];

		mode_string(a->mode, ms);
		time_string(a->mtime_ns, ts, sizeof(ts));
		fprintf(x->out, "%s %3u %5u %5u %10" PRIu64 " %s ", ms,
			(unsigned)a->nlink, (unsigned)a->uid, (unsigned)a->gid,
			a->size, ts);
		put_name(x->out, name);
		if (target) {
			fputs(" -> ", x->out);
			put_name(x->out, target);
		}
		fputc('\n', x->out);
	}
	free(target);
}

static int cmd_ls(struct ctx *x)
{
	char *path = x->pathbuf[0], *full = x->pathbuf[1];
	struct tree_dir *d = NULL;
	struct tree_attr a;
	struct tree *t;
	const char *name;
	size_t nlen, bad = 0;
	bool first = true;
	int rc, status;

	status = resolve(x, x->o.npos ? x->o.pos[0] : "/", &t, path);
	if (status)
		return status;
	rc = tree_lookup(t, path, &a);
	if (rc) {
		fail(x, path, rc);
		return CTL_FAILED;
	}
	if (x->o.json)
		fputc('[', x->out);
	if (!S_ISDIR(a.mode)) {
		print_entry(x, t, path, path, &a, true);
		goto done;
	}
	rc = tree_dir_open(&d, t, path, NULL);
	while (!rc && (rc = tree_dir_next(d, &name, &nlen, &a)) == 1) {
		rc = 0;
		if (join(full, TREE_PATH_MAX + 1, path, name))
			continue;
		print_entry(x, t, name, full, &a, first);
		first = false;
		if (!a.mode) { /* listed, as ls(1) does, and said */
			fputs("pathfsctl: ls: ", x->err);
			put_name(x->err, full);
			fputs(": record does not decode\n", x->err);
			bad++;
		}
	}
	tree_dir_free(d);
done:
	if (x->o.json)
		fputs("]\n", x->out);
	if (rc < 0) {
		fail(x, path, rc);
		return CTL_FAILED;
	}
	return bad ? CTL_FAILED : CTL_OK;
}

static int cmd_stat(struct ctx *x)
{
	char *path = x->pathbuf[0], *target = NULL;
	struct tree_attr a;
	struct tree *t;
	int rc, status;

	status = resolve(x, x->o.pos[0], &t, path);
	if (status)
		return status;
	rc = tree_lookup(t, path, &a);
	if (rc) {
		fail(x, path, rc);
		return CTL_FAILED;
	}
	if (S_ISLNK(a.mode))
		tree_readlink(t, path, &target);
	if (x->o.json) {
		fputs("{\"drive\": ", x->out);
		put_json(x->out, tree_drive_name(t));
		fputs(", \"path\": ", x->out);
		put_json(x->out, path);
		fprintf(
		    x->out,
		    ", \"type\": \"%s\", \"ino\": %" PRIu64
		    ", \"mode\": \"%04o\", \"uid\": %u, \"gid\": %u, "
		    "\"size\": %" PRIu64 ", \"nlink\": %u, \"rdev\": %" PRIu64
		    ", \"atime_ns\": %" PRId64 ", \"mtime_ns\": %" PRId64
		    ", \"ctime_ns\": %" PRId64 ", \"hardlinked\": %s",
		    type_name(a.mode), a.ino, (unsigned)(a.mode & 07777),
		    (unsigned)a.uid, (unsigned)a.gid, a.size, (unsigned)a.nlink,
		    a.rdev, a.atime_ns, a.mtime_ns, a.ctime_ns,
		    (a.flags & TREE_F_LINKED) ? "true" : "false");
		if (target) {
			fputs(", \"target\": ", x->out);
			put_json(x->out, target);
		}
		fputs("}\n", x->out);
	} else {
		char ms[11], at[32], mt[32], ct[32];

		mode_string(a.mode, ms);
		time_string(a.atime_ns, at, sizeof(at));
		time_string(a.mtime_ns, mt, sizeof(mt));
		time_string(a.ctime_ns, ct, sizeof(ct));
		fprintf(x->out, "  path: %s:", tree_drive_name(t));
		put_name(x->out, path);
		if (target) {
			fputs(" -> ", x->out);
			put_name(x->out, target);
		}
		fprintf(x->out,
			"\n  type: %s\n inode: %" PRIu64
			"%s\n  mode: %04o (%s)\n"
			"   uid: %u\n   gid: %u\n  size: %" PRIu64
			"\n links: %u\n  rdev: %" PRIu64
			"\naccess: %s (%" PRId64 " ns)\nmodify: %s (%" PRId64
			" ns)\nchange: %s (%" PRId64 " ns)\n",
			type_name(a.mode), a.ino,
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
		put_name(w->x->out, cur);
		if (S_ISLNK(a.mode) && !join(full, fsize, path, cur)) {
			char *tg = NULL;

			if (!tree_readlink(w->t, full, &tg)) {
				fputs(" -> ", w->x->out);
				put_name(w->x->out, tg);
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

static int cmd_tree(struct ctx *x)
{
	struct tree_walk *w;
	char *path = x->pathbuf[0];
	struct tree_attr a;
	struct tree *t;
	int rc, status;

	status = resolve(x, x->o.npos ? x->o.pos[0] : "/", &t, path);
	if (status)
		return status;
	rc = tree_lookup(t, path, &a);
	if (rc) {
		fail(x, path, rc);
		return CTL_FAILED;
	}
	put_name(x->out, path);
	fputc('\n', x->out);
	if (!S_ISDIR(a.mode))
		return CTL_OK;
	w = calloc(1, sizeof(*w));
	if (!w) {
		fail(x, path, -ENOMEM);
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
		fail(x, path, rc);
		return CTL_FAILED;
	}
	return CTL_OK;
}

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

static int cmd_du(struct ctx *x)
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

	status = resolve(x, x->o.npos ? x->o.pos[0] : "/", &t, path);
	if (status)
		return status;
	t0 = now_ns();
	rc = tree_lookup(t, path, &a);
	if (rc)
		goto out;
	/* tree_lookup resolved a link stub already: count it as found. */
	a.flags &= ~TREE_F_LINKED;
	rc = du_add(t, &seen, &c, path, &a);
	if (rc || !S_ISDIR(a.mode))
		goto out;
	progress_init(&pg, x, "du", 0);
	rc = tree_scan_open(&sc, t, path);
	while (!rc && (rc = tree_scan_next(sc, &p, &a)) == 1) {
		rc = du_add(t, &seen, &c, p, &a);
		if (!a.mode) {
			fprintf(x->err, "pathfsctl: du: ");
			put_name(x->err, p);
			fprintf(x->err, ": record does not decode\n");
		}
		if (!(++n & 0xfff))
			progress_draw(&pg, n, false);
	}
	progress_end(&pg);
	if (rc > 0)
		rc = 0;
out:
	secs = (double)(now_ns() - t0) / 1e9;
	tree_scan_free(sc);
	free(seen.v);
	if (rc) {
		fail(x, path, rc);
		return CTL_FAILED;
	}
	if (x->o.json) {
		fputs("{\"drive\": ", x->out);
		put_json(x->out, tree_drive_name(t));
		fputs(", \"path\": ", x->out);
		put_json(x->out, path);
		fprintf(x->out,
			", \"bytes\": %" PRIu64 ", \"allocated\": %" PRIu64
			", \"files\": %" PRIu64
			", \"dirs\": %" PRIu64 ", \"symlinks\": %" PRIu64
			", \"other\": %" PRIu64 ", \"unreadable\": %" PRIu64
			", \"seconds\": %.6f}\n",
			c.bytes, c.allocated, c.files, c.dirs, c.symlinks,
			c.other, c.bad, secs);
	} else {
		fprintf(x->out,
			"%" PRIu64 " bytes (%" PRIu64 " allocated), %" PRIu64
			" files, %" PRIu64 " folders, %" PRIu64
			" symlinks, %" PRIu64 " other%s in %.3f s: ",
			c.bytes, c.allocated, c.files, c.dirs, c.symlinks,
			c.other,
			c.bad ? " (some unreadable)" : "", secs);
		put_name(x->out, path);
		fputc('\n', x->out);
	}
	return c.bad ? CTL_FAILED : CTL_OK;
}

struct fsck_ctx {
	struct ctx *x;
	bool first;
};

static void fsck_report(void *arg, const char *msg)
{
	struct fsck_ctx *f = arg;
	struct ctx *x = f->x;

	if (x->o.json) {
		fputs(f->first ? "" : ", ", x->out);
		put_json(x->out, msg);
	} else {
		fputs("  ", x->out);
		put_name(x->out, msg);
		fputc('\n', x->out);
	}
	f->first = false;
}

static int fsck_one(struct ctx *x, struct tree *t, bool first_drive,
		    size_t *total)
{
	struct fsck_ctx f = {x, true};
	size_t findings = 0;
	int rc;

	if (x->o.json) {
		fprintf(x->out, "%s{\"drive\": ", first_drive ? "" : ",\n ");
		put_json(x->out, tree_drive_name(t));
		fputs(", \"findings\": [", x->out);
	} else {
		fprintf(x->out, "drive %s:\n", tree_drive_name(t));
	}
	/* A live drive must hold still while it is checked. */
	hold(x, t, "/", NULL);
	rc = tree_fsck(t, x->o.repair, fsck_report, &f, &findings);
	release(x, t, "/", NULL);
	*total += findings;
	if (x->o.json)
		fprintf(x->out, "], \"count\": %zu, \"error\": %s}", findings,
			rc ? "true" : "false");
	else
		fprintf(x->out, "%zu finding%s%s\n", findings,
			findings == 1 ? "" : "s",
			findings && x->o.repair ? " (repaired what was safe)"
						: "");
	if (rc)
		fail(x, tree_drive_name(t), rc);
	return rc;
}

static int cmd_fsck(struct ctx *x)
{
	char **names = NULL;
	size_t n = 0, i, total = 0;
	struct tree *t;
	int rc = 0, status = 0;

	if (x->o.all) {
		rc = store_drive_list(x->env->store, &names, &n);
		if (rc) {
			fail(x, store_dir(x->env->store), rc);
			return CTL_FAILED;
		}
	}
	if (x->o.json)
		fputc('[', x->out);
	if (!x->o.all) {
		status = open_drive(
		    x, x->env->default_drive ? x->env->default_drive : "main",
		    &t);
		if (!status && fsck_one(x, t, true, &total))
			status = CTL_FAILED;
	}
	for (i = 0; i < n; i++) {
		rc = store_drive(x->env->store, names[i], &t);
		if (rc) {
			fail(x, names[i], rc);
			status = CTL_FAILED;
			continue;
		}
		if (fsck_one(x, t, i == 0, &total))
			status = CTL_FAILED;
	}
	if (x->o.json)
		fputs("]\n", x->out);
	store_drive_list_free(names, n);
	if (status)
		return status;
	return total ? CTL_FAILED : CTL_OK;
}

static void print_journal(struct ctx *x, const char *what,
			  const struct tree_journal_entry *e)
{
	fprintf(x->out, "%s: #%" PRIu64 " %s ", what, e->seq, e->op);
	put_name(x->out, e->src);
	fputs(" -> ", x->out);
	put_name(x->out, e->dst);
	fputs(" at ", x->out);
	put_name(x->out, e->cursor[0] ? e->cursor : "(start)");
	fputc('\n', x->out);
}

/*
 * Replays the drive's unfinished renames. A clone record (a cp -r or
 * cross-drive mv stopped at its budget or by a crash) is not replayed: it
 * waits for its resume token, and is reported as such.
 */
static int cmd_recover(struct ctx *x)
{
	struct tree_journal_entry *e = NULL, *after = NULL;
	size_t n = 0, m = 0, i, replayed = 0, left = 0, waiting = 0;
	struct tree *t;
	int rc, status;

	status = open_drive(
	    x, x->env->default_drive ? x->env->default_drive : "main", &t);
	if (status)
		return status;
	/* In the daemon a listed rename is one in flight: holding the whole
	 * drive waits for it to end. */
	hold(x, t, "/", NULL);
	rc = tree_journal_list(t, &e, &n);
	if (rc)
		goto out;
	for (i = 0; i < n; i++)
		if (strcmp(e[i].op, "clone"))
			print_journal(x, "unfinished", &e[i]);
	rc = tree_journal_replay(t, &replayed);
	if (rc)
		goto out;
	rc = tree_journal_list(t, &after, &m);
	if (rc)
		goto out;
	for (i = 0; i < m; i++) {
		if (!strcmp(after[i].op, "clone")) {
			print_journal(x, "waiting for its resume token",
				      &after[i]);
			waiting++;
		} else {
			print_journal(x, "left", &after[i]);
			left++;
		}
	}
out:
	release(x, t, "/", NULL);
	tree_journal_list_free(e, n);
	tree_journal_list_free(after, m);
	if (rc) {
		fail(x, tree_drive_name(t), rc);
		return CTL_FAILED;
	}
	fprintf(x->out,
		"drive %s: %zu journal record%s replayed now, %zu left, %zu "
		"stopped clone%s waiting\n",
		tree_drive_name(t), replayed, replayed == 1 ? "" : "s", left,
		waiting, waiting == 1 ? "" : "s");
	return left ? CTL_FAILED : CTL_OK;
}

static int need_r(struct ctx *x)
{
	if (!x->o.recursive)
		return usage_error(x, "%swhole branches only: give -r", NULL);
	return 0;
}

static int cmd_rm(struct ctx *x)
{
	char *path = x->pathbuf[0];
	struct branch_op b = {"rm", NULL, NULL, path, NULL, 0};
	int status;

	status = need_r(x);
	if (!status)
		status = resolve(x, x->o.pos[0], &b.t, path);
	if (status)
		return status;
	if (!strcmp(path, "/"))
		return usage_error(x, "%srefusing to remove '/' (use rmdrive)",
				   NULL);
	/* Inside the daemon a deleted file may still be open: keep it as an
	 * orphan; the daemon frees it at its last close. */
	if (mounted(x, b.t))
		b.flags = TREE_KEEP_ORPHAN;
	hold(x, b.t, path, NULL);
	status = run_branch(x, &b, "rm -r");
	release(x, b.t, path, NULL);
	return status;
}

/* Checks that @dst is not @src or inside it (same drive). */
static bool inside(const char *src, const char *dst)
{
	size_t n = strlen(src);

	if (!strcmp(src, "/"))
		return true;
	return !strncmp(src, dst, n) && (dst[n] == '\0' || dst[n] == '/');
}

static int cmd_cp_mv(struct ctx *x, const char *op)
{
	char *src = x->pathbuf[0], *dst = x->pathbuf[1];
	struct branch_op b = {op, NULL, NULL, src, dst, 0};
	int status;

	if (!strcmp(op, "cp")) {
		status = need_r(x);
		if (status)
			return status;
	}
	status = resolve(x, x->o.pos[0], &b.t, src);
	if (!status)
		status = resolve(x, x->o.pos[1], &b.dt, dst);
	if (status)
		return status;
	if (!strcmp(src, "/") || !strcmp(dst, "/"))
		return usage_error(x,
				   "%s'/' cannot be copied or moved, nor "
				   "replaced",
				   NULL);
	if (b.t == b.dt && inside(src, dst))
		return usage_error(x, "%scannot put a branch inside itself",
				   NULL);
	/*
	 * The daemon runs one command's hooks at a time, so hold one branch:
	 * a clone changes only its destination; a move inside the drive is a
	 * rename of src to dst; across drives only one side can be mounted.
	 */
	if (!strcmp(op, "mv") && b.t == b.dt) {
		hold(x, b.t, src, dst);
		status = run_branch(x, &b, "mv");
		release(x, b.t, src, dst);
	} else if (!strcmp(op, "mv") && mounted(x, b.t)) {
		hold(x, b.t, src, NULL);
		status = run_branch(x, &b, "mv");
		release(x, b.t, src, NULL);
	} else {
		hold(x, b.dt, dst, NULL);
		status = run_branch(x, &b, !strcmp(op, "cp") ? "cp -r" : "mv");
		release(x, b.dt, dst, NULL);
	}
	return status;
}

static int cmd_cp(struct ctx *x)
{
	return cmd_cp_mv(x, "cp");
}

static int cmd_mv(struct ctx *x)
{
	return cmd_cp_mv(x, "mv");
}

/* The daemon's per-request statistics (fs/stats.c): only a mounted store
 * has them. */
static int cmd_stats(struct ctx *x)
{
	if (!x->env->stats) {
		fputs("pathfsctl: stats: the store is not mounted (request "
		      "statistics live in the daemon)\n",
		      x->err);
		return CTL_FAILED;
	}
	x->env->stats(x->out, x->o.json, x->o.reset);
	return CTL_OK;
}

static int cmd_help(struct ctx *x);

static const struct cmd cmds[] = {
    {"drives", cmd_drives, O_JSON, 0, 0, "drives [--json]",
     "list the drives of the store"},
    {"mkdrive", cmd_mkdrive, O_OWNER, 1, 1, "mkdrive [--owner UID:GID] NAME",
     "create a drive (root folder owned by the caller or UID:GID)"},
    {"rmdrive", cmd_rmdrive, 0, 1, 1, "rmdrive NAME",
     "delete a drive and everything in it (not the mounted one)"},
    {"ls", cmd_ls, O_JSON, 0, 1, "ls [--json] [PATH]",
     "list a folder with attributes, from one children scan"},
    {"stat", cmd_stat, O_JSON, 1, 1, "stat [--json] PATH",
     "show every attribute of one node"},
    {"tree", cmd_tree, O_DEPTH, 0, 1, "tree [--depth N] [PATH]",
     "draw a branch as a tree"},
    {"du", cmd_du, O_JSON, 0, 1, "du [--json] [PATH]",
     "bytes, files, folders and symlinks of a branch, from one scan"},
    {"fsck", cmd_fsck, O_JSON | O_REPAIR | O_ALL, 0, 0,
     "fsck [--repair] [--all] [--json]",
     "check the drive's invariants; exit 1 on any finding"},
    {"recover", cmd_recover, 0, 0, 0, "recover",
     "replay unfinished journal records (interrupted renames, moves)"},
    {"rm", cmd_rm, O_R | O_BUDGET | O_JSON, 1, 1,
     "rm -r [--max-items N] [--resume TOKEN] [--json] PATH",
     "delete a branch, descendants first"},
    {"cp", cmd_cp, O_R | O_BUDGET | O_JSON, 2, 2,
     "cp -r [--max-items N] [--resume TOKEN] [--json] SRC [DRIVE:]DST",
     "clone a branch (new inodes, content and xattrs copied)"},
    {"mv", cmd_mv, O_BUDGET | O_JSON, 2, 2,
     "mv [--max-items N] [--resume TOKEN] [--json] SRC [DRIVE:]DST",
     "move a branch (journaled rename; across drives clone + delete)"},
    {"stats", cmd_stats, O_JSON | O_RESET, 0, 0, "stats [--json] [--reset]",
     "the daemon's request counts and latencies per FUSE opcode (mounted "
     "only)"},
    {"help", cmd_help, 0, 0, 1, "help [COMMAND]", "show help"},
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static const struct cmd *find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < NCMDS; i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

static void cmd_usage(FILE *f, const struct cmd *c)
{
	fprintf(f, "usage: pathfsctl [-s STORE] [-d DRIVE] %s\n  %s\n",
		c->usage, c->help);
	if (c->opts & O_BUDGET)
		fputs("  --max-items N  stop after N items: prints 'resume: "
		      "TOKEN' last and exits 3\n"
		      "  --resume TOKEN continue where a budgeted run "
		      "stopped (same arguments)\n",
		      f);
	if (c->opts & O_JSON)
		fputs("  --json         machine-readable output\n", f);
	if (c->opts & O_RESET)
		fputs("  --reset        start counting again from zero\n", f);
	if (c->opts & O_REPAIR)
		fputs("  --repair       fix what can be fixed safely\n"
		      "  --all          every drive of the store\n",
		      f);
	fputs("  paths: /PATH on the -d drive, or DRIVE:/PATH\n"
	      "  exit status: 0 ok, 1 failed or fsck findings, 2 usage, 3 "
	      "work left\n",
	      f);
}

static int cmd_help(struct ctx *x)
{
	size_t i;

	if (x->o.npos) {
		const struct cmd *c = find_cmd(x->o.pos[0]);

		if (!c)
			return usage_error(x, "no command '%s'", x->o.pos[0]);
		cmd_usage(x->out, c);
		return CTL_OK;
	}
	fputs("commands:\n", x->out);
	for (i = 0; i < NCMDS; i++)
		fprintf(x->out, "  %s\n      %s\n", cmds[i].usage,
			cmds[i].help);
	fputs("exit status: 0 ok, 1 failed or fsck findings, 2 usage, 3 "
	      "stopped at --max-items with work left\n",
	      x->out);
	return CTL_OK;
}

/* Parses a count; returns 0 or -EINVAL. */
static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

static int parse_opts(struct ctx *x, int argc, char **argv)
{
	struct opts *o = &x->o;
	unsigned allow = x->cmd->opts;
	bool dashdash = false;
	int i;

	memset(o, 0, sizeof(*o));
	o->depth = -1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL, *eq;
		char name[32];
		size_t nlen;

		if (dashdash || a[0] != '-' || !a[1]) {
			if (o->npos >= x->cmd->maxpos)
				return usage_error(
				    x, "'%s': too many arguments", a);
			o->pos[o->npos++] = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			dashdash = true;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			o->help = true;
			continue;
		}
		if (a[1] != '-') { /* short options: only -r (and -R) */
			const char *p;

			for (p = a + 1; *p; p++)
				if ((*p != 'r' && *p != 'R') || !(allow & O_R))
					return usage_error(
					    x, "unknown option '%s'", a);
			o->recursive = true;
			continue;
		}
		eq = strchr(a, '=');
		nlen = eq ? (size_t)(eq - a) : strlen(a);
		if (nlen >= sizeof(name))
			return usage_error(x, "unknown option '%s'", a);
		memcpy(name, a, nlen);
		name[nlen] = '\0';
		if (!strcmp(name, "--json") && (allow & O_JSON) && !eq) {
			o->json = true;
		} else if (!strcmp(name, "--repair") && (allow & O_REPAIR) &&
			   !eq) {
			o->repair = true;
		} else if (!strcmp(name, "--reset") && (allow & O_RESET) &&
			   !eq) {
			o->reset = true;
		} else if (!strcmp(name, "--all") && (allow & O_ALL) && !eq) {
			o->all = true;
		} else if (!strcmp(name, "--recursive") && (allow & O_R) &&
			   !eq) {
			o->recursive = true;
		} else if ((!strcmp(name, "--max-items") ||
			    !strcmp(name, "--resume")) &&
			   (allow & O_BUDGET)) {
			val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
			if (!val)
				return usage_error(x, "%s needs a value", name);
			if (name[2] == 'm') {
				if (parse_u64(val, &o->max_items))
					return usage_error(
					    x,
					    "--max-items '%s': not a "
					    "count",
					    val);
				o->have_max = true;
			} else {
				o->resume = val;
			}
		} else if (!strcmp(name, "--depth") && (allow & O_DEPTH)) {
			uint64_t d;

			val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
			if (parse_u64(val, &d) || d > 100000)
				return usage_error(
				    x, "--depth '%s': not a count", val);
			o->depth = (long)d;
		} else if (!strcmp(name, "--owner") && (allow & O_OWNER)) {
			val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
			if (!val)
				return usage_error(x, "%s needs a value", name);
			o->owner = val;
		} else {
			return usage_error(x, "unknown option '%s'", a);
		}
	}
	if (!o->help && o->npos < x->cmd->minpos)
		return usage_error(x, "%smissing argument", NULL);
	return 0;
}

int ctl_run(struct ctl_env *env, int argc, char **argv)
{
	struct ctx x;
	int status;

	memset(&x, 0, sizeof(x));
	x.env = env;
	x.out = env->out;
	x.err = env->err;
	if (argc < 1 || !argv[0]) {
		fputs("pathfsctl: no command (try 'pathfsctl help')\n", x.err);
		return CTL_USAGE;
	}
	x.cmd = find_cmd(argv[0]);
	if (!x.cmd) {
		fputs("pathfsctl: unknown command '", x.err);
		put_name(x.err, argv[0]);
		fputs("' (try 'pathfsctl help')\n", x.err);
		return CTL_USAGE;
	}
	x.pathbuf[0] = malloc(TREE_PATH_MAX + 1);
	x.pathbuf[1] = malloc(TREE_PATH_MAX + 1);
	if (!x.pathbuf[0] || !x.pathbuf[1]) {
		fputs("pathfsctl: out of memory\n", x.err);
		status = CTL_FAILED;
		goto out;
	}
	status = parse_opts(&x, argc, argv);
	if (status)
		goto out;
	if (x.o.help) {
		cmd_usage(x.out, x.cmd);
		status = CTL_OK;
		goto out;
	}
	if (!env->store && x.cmd->run != cmd_help) {
		fputs("pathfsctl: no store\n", x.err);
		status = CTL_FAILED;
		goto out;
	}
	status = x.cmd->run(&x);
out:
	free(x.pathbuf[0]);
	free(x.pathbuf[1]);
	fflush(x.out);
	fflush(x.err);
	return status;
}
