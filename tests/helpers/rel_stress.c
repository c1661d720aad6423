/*
 * rel_stress.c - concurrent random namespace and content operations on a
 * mounted pathfs, for tests/mount/rel_stress.sh and rel_kill9.sh.
 *
 *   rel_stress [-n PROCS] [-t SECONDS] [-S SEED] [-m MANIFEST_DIR]
 *              [--shared-only] [--disconnect-ok] [--shared-mount] [-v] DIR
 *   rel_stress check DIR MANIFEST
 *
 * Each of PROCS processes owns DIR/w<i> and keeps a model of it: every call it
 * makes there has a predicted result (success or a specific errno), and a
 * result that differs is a failure. Calls are creates, writes, appends,
 * truncates, chmods, symlinks, hard links, renames of files and folders
 * (replacing targets, into sub-folders, onto ancestors), unlinks, mkdirs and
 * rmdirs, reads checked against the model, and writes through descriptors
 * kept open across a rename or an unlink of the file, on names chosen to trap prefix bugs ("a", "a-", "a.b", "a b",
 * "a\001"). Every process also works on the shared DIR/shared with the same
 * names, where the others race it: there only the errno is checked (one a
 * racing call can explain). At the end each process compares DIR/w<i> with
 * its model and writes the model to MANIFEST_DIR/w<i>.txt; "check" compares a
 * tree with such a manifest later (after a remount).
 *
 * Hangs: the parent watches every call; one running longer than 30 s is a
 * failure (it prints which call and kills the workers).
 * --disconnect-ok: ENOTCONN/ECONNABORTED, and EIO (a failed writeback) or
 * ENOENT (paths fall through to the bare mountpoint after a lazy unmount) once
 * the mount is gone, end a worker quietly (the daemon was killed on purpose);
 * the model check is skipped then, and a mount lost before the first call
 * ends the run quietly (exit status 0).
 *
 * --shared-mount: DIR is on one of several -o shared mounts of a drive
 * (tests/mount/etcd_netns.sh), where another mount races the shared area:
 * there ESTALE is let pass too, counted and said at the end ("N ESTALE"):
 * a call through a folder that the other mount removed or renamed in the
 * same moment, whose entry this mount's kernel still held (fs/watch.c's limit: the kernel retries once,
 * a race that outlasts the retry answers ESTALE to the caller, as NFS
 * clients can).
 *
 * -v prints every call, and on a content mismatch the inode's last calls:
 * with -n 1 and a fixed -S a failure replays exactly.
 * REL_STRESS_NO_LINK=1 in the environment leaves out hard links (to tell
 * a link bug from others while debugging).
 *
 * Exit status 0 when every call matched and every tree matched its model.
 * Limits: the model is a flat array (a few hundred entries per worker).
 */
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "rel_common.h"

#define MAXENT	     400
#define MAXINO	     400
#define MAXDATA	     (256 * 1024)
#define HANG_SECONDS 30

struct slot {
	volatile double op_start; /* 0 when no call is running */
	volatile int done;
	char op[512];
};

struct ino {
	unsigned char *data;
	size_t len;
	int refs;
	mode_t mode;
	char hist[12][160]; /* the last calls on this inode, for failures */
	int nhist;
};

static bool trace_all;	  /* -v */
static bool shared_mount; /* --shared-mount */

static void ino_note(struct ino *in, const char *op, const char *path, size_t a,
		     size_t b)
{
	char *h = in->hist[in->nhist++ % 12];

	snprintf(h, sizeof(in->hist[0]), "%s %.100s (%zu, %zu) -> size %zu", op,
		 path, a, b, in->len);
	if (trace_all)
		fprintf(stderr, "    inode %p: %s\n", (void *)in, h);
}

struct ent {
	char path[1024]; /* relative to the worker root, leading "/" */
	char type;	 /* 'f' file, 'd' folder, 'l' symlink */
	int ino;	 /* files: index in inos */
	mode_t mode;	 /* folders */
	char target[64]; /* symlinks */
};

struct worker {
	int id;
	uint64_t rng;
	char root[4096];
	char shared[4096];
	struct ent ents[MAXENT];
	int nent;
	struct ino inos[MAXINO];
	struct slot *slot;
	bool disconnect_ok;
	bool shared_only;
	bool trace; /* -v: print every call */
	unsigned long ops, expected_err, shared_ops, estale;
	char last[8][600];
	int nlast;
};

static const char *const names[] = {"a",  "a-", "a.b", "a b", "a\001",
				    "ab", "b",	"c",   "d",   "e"};
#define NNAMES (sizeof(names) / sizeof(names[0]))

static struct ent *find(struct worker *w, const char *path)
{
	int i;

	for (i = 0; i < w->nent; i++)
		if (!strcmp(w->ents[i].path, path))
			return &w->ents[i];
	return NULL;
}

static bool is_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && path[n] == '/';
}

static bool has_children(struct worker *w, const char *dir)
{
	int i;

	for (i = 0; i < w->nent; i++)
		if (is_within(w->ents[i].path, dir))
			return true;
	return false;
}

static void drop_ent(struct worker *w, struct ent *e)
{
	if (e->type == 'f' && --w->inos[e->ino].refs == 0) {
		free(w->inos[e->ino].data);
		w->inos[e->ino].data = NULL;
		w->inos[e->ino].len = 0;
	}
	*e = w->ents[--w->nent];
}

static int new_ino(struct worker *w)
{
	int i;

	for (i = 0; i < MAXINO; i++)
		if (!w->inos[i].refs) {
			w->inos[i].refs = 1;
			w->inos[i].len = 0;
			w->inos[i].data = NULL;
			w->inos[i].mode = 0644;
			w->inos[i].nhist = 0;
			return i;
		}
	return -1;
}

static struct ent *add_ent(struct worker *w, const char *path, char type)
{
	struct ent *e = &w->ents[w->nent++];

	memset(e, 0, sizeof(*e));
	snprintf(e->path, sizeof(e->path), "%s", path);
	e->type = type;
	return e;
}

/* A random existing folder ("" = the worker root). */
static const char *pick_dir(struct worker *w)
{
	int i, n = 0, dirs[MAXENT];

	for (i = 0; i < w->nent; i++)
		if (w->ents[i].type == 'd')
			dirs[n++] = i;
	if (!n || rel_below(&w->rng, 4) == 0)
		return "";
	return w->ents[dirs[rel_below(&w->rng, n)]].path;
}

/* A random path: an existing entry half of the time, else a new name in an
 * existing folder (which may exist too). */
static void pick_path(struct worker *w, char *out, size_t n, char type)
{
	int i, cand[MAXENT], nc = 0;

	for (i = 0; i < w->nent; i++)
		if (!type || w->ents[i].type == type)
			cand[nc++] = i;
	if (nc && rel_below(&w->rng, 2)) {
		snprintf(out, n, "%s",
			 w->ents[cand[rel_below(&w->rng, nc)]].path);
		return;
	}
	snprintf(out, n, "%s/%s", pick_dir(w),
		 names[rel_below(&w->rng, NNAMES)]);
	if (strlen(out) > 200) /* keep paths short: go back to the root */
		snprintf(out, n, "/%s", names[rel_below(&w->rng, NNAMES)]);
}

static void fill(struct worker *w, unsigned char *p, size_t n)
{
	size_t i;
	uint64_t x = rel_rand(&w->rng) | 1;

	for (i = 0; i < n; i++) {
		if (i % 8 == 0)
			rel_rand(&x);
		p[i] = (unsigned char)(x >> (8 * (i % 8)));
	}
}

static void note(struct worker *w, const char *fmt, const char *a,
		 const char *b)
{
	char *s = w->last[w->nlast++ % 8];

	snprintf(s, 600, fmt, a, b ? b : "");
	if (w->trace)
		fprintf(stderr, "w%d: %s\n", w->id, s);
	snprintf(w->slot->op, sizeof(w->slot->op), "w%d: %s", w->id, s);
	w->slot->op_start = rel_now();
}

static void done_op(struct worker *w)
{
	w->slot->op_start = 0;
	w->ops++;
}

static void dump_last(struct worker *w)
{
	int i, start = w->nlast > 8 ? w->nlast - 8 : 0;

	fprintf(stderr, "w%d: last calls:\n", w->id);
	for (i = start; i < w->nlast; i++)
		fprintf(stderr, "  %s\n", w->last[i % 8]);
}

static void real(struct worker *w, char *out, size_t n, const char *rel)
{
	snprintf(out, n, "%s%s", w->root, rel);
}

/*
 * With --disconnect-ok (@ok): true if @err says the mount was lost (the
 * daemon was killed on purpose): ENOTCONN/ECONNABORTED, or an EIO (failed
 * writeback) or ENOENT (the path now ends in the mountpoint's own empty
 * folder, after the lazy unmount) while @dir, a folder of the mount, is gone.
 */
static bool lost(bool ok, int err, const char *dir)
{
	if (!ok)
		return false;
	return err == ENOTCONN || err == ECONNABORTED ||
	       ((err == EIO || err == ENOENT) && rel_mount_gone(dir));
}

static bool mount_lost(const struct worker *w, int err)
{
	return lost(w->disconnect_ok, err, w->shared);
}

/*
 * Compares a result with the prediction. Returns 0 if it matches; exits the
 * worker quietly on a disconnect when allowed; else prints and returns -1.
 */
static int expect(struct worker *w, const char *what, int got, int want,
		  int alt)
{
	if (got == want || (alt && got == alt)) {
		if (want)
			w->expected_err++;
		return 0;
	}
	if (mount_lost(w, got))
		_exit(0);
	fprintf(stderr, "w%d: FAIL %s: expected %s%s%s, got %s\n", w->id, what,
		want ? strerror(want) : "success", alt ? " or " : "",
		alt ? strerror(alt) : "", got ? strerror(got) : "success");
	dump_last(w);
	return -1;
}

/* ---- model operations ---------------------------------------------------- */

static int op_mkdir(struct worker *w)
{
	char p[1024], rp[8192];
	struct ent *e;
	int got, want;

	pick_path(w, p, sizeof(p), 0);
	real(w, rp, sizeof(rp), p);
	e = find(w, p);
	want = e ? EEXIST : 0;
	if (!e && w->nent >= MAXENT - 2)
		return 0;
	note(w, "mkdir %s%s", p, NULL);
	got = mkdir(rp, 0755) ? errno : 0;
	done_op(w);
	if (expect(w, rp, got, want, 0))
		return -1;
	if (!got)
		add_ent(w, p, 'd')->mode = 0755;
	return 0;
}

static int op_create(struct worker *w)
{
	char p[1024], rp[8192];
	unsigned char *buf = NULL;
	struct ent *e;
	int fd, got, want, ino;
	size_t len = rel_below(&w->rng, 3) ? rel_below(&w->rng, 70000) : 0;

	pick_path(w, p, sizeof(p), 0);
	real(w, rp, sizeof(rp), p);
	e = find(w, p);
	want = e ? EEXIST : 0;
	if (!e && w->nent >= MAXENT - 2)
		return 0;
	note(w, "create %s%s", p, NULL);
	fd = open(rp, O_CREAT | O_EXCL | O_WRONLY, 0644);
	got = fd < 0 ? errno : 0;
	done_op(w);
	if (expect(w, rp, got, want, 0))
		return -1;
	if (got)
		return 0;
	ino = new_ino(w);
	if (ino < 0)
		abort();
	e = add_ent(w, p, 'f');
	e->ino = ino;
	if (len) {
		buf = malloc(len);
		fill(w, buf, len);
		note(w, "write new %s%s", p, NULL);
		got = write(fd, buf, len) == (ssize_t)len ? 0
		      : errno				  ? errno
							  : EIO;
		done_op(w);
		if (expect(w, rp, got, 0, 0)) {
			free(buf);
			close(fd);
			return -1;
		}
		w->inos[ino].data = buf;
		w->inos[ino].len = len;
	}
	ino_note(&w->inos[ino], "create", p, len, 0);
	got = close(fd) ? errno : 0;
	return expect(w, "close", got, 0, 0);
}

static void model_write(struct ino *in, size_t off, const unsigned char *p,
			size_t n)
{
	if (off + n > in->len) {
		in->data = realloc(in->data, off + n);
		if (!in->data)
			abort();
		memset(in->data + in->len, 0, off + n - in->len);
		in->len = off + n;
	}
	memcpy(in->data + off, p, n);
}

static int op_write(struct worker *w, bool append)
{
	char p[1024], rp[8192];
	unsigned char *buf;
	struct ent *e;
	struct ino *in;
	size_t len = 1 + rel_below(&w->rng, 20000), off;
	int fd, got;

	pick_path(w, p, sizeof(p), 'f');
	e = find(w, p);
	if (!e || e->type != 'f')
		return 0;
	in = &w->inos[e->ino];
	off = append ? in->len : rel_below(&w->rng, in->len + 70000);
	if (off + len > MAXDATA)
		return 0;
	real(w, rp, sizeof(rp), p);
	buf = malloc(len);
	fill(w, buf, len);
	note(w, append ? "append %s%s" : "write %s%s", p, NULL);
	fd = open(rp, O_WRONLY | (append ? O_APPEND : 0));
	got = fd < 0 ? errno : 0;
	if (!got) {
		ssize_t r = append ? write(fd, buf, len)
				   : pwrite(fd, buf, len, (off_t)off);

		got = r == (ssize_t)len ? 0 : r < 0 ? errno : EIO;
		if (close(fd) && !got)
			got = errno;
	}
	done_op(w);
	if (!expect(w, rp, got, 0, 0)) {
		model_write(in, off, buf, len);
		ino_note(in, append ? "append" : "write", p, off, len);
	} else
		got = -1;
	free(buf);
	return got ? -1 : 0;
}

static int op_truncate(struct worker *w)
{
	char p[1024], rp[8192];
	struct ent *e;
	struct ino *in;
	size_t size = rel_below(&w->rng, 140000);
	int got;

	pick_path(w, p, sizeof(p), 'f');
	e = find(w, p);
	if (!e || e->type != 'f')
		return 0;
	in = &w->inos[e->ino];
	real(w, rp, sizeof(rp), p);
	note(w, "truncate %s%s", p, NULL);
	got = truncate(rp, (off_t)size) ? errno : 0;
	done_op(w);
	if (expect(w, rp, got, 0, 0))
		return -1;
	if (size > in->len) {
		in->data = realloc(in->data, size);
		memset(in->data + in->len, 0, size - in->len);
	}
	in->len = size;
	ino_note(in, "truncate", p, size, 0);
	return 0;
}

static int op_read(struct worker *w)
{
	char p[1024], rp[8192];
	struct ent *e;
	struct ino *in;
	uint64_t h, size;
	int got;

	pick_path(w, p, sizeof(p), 'f');
	e = find(w, p);
	if (!e || e->type != 'f')
		return 0;
	in = &w->inos[e->ino];
	real(w, rp, sizeof(rp), p);
	note(w, "read %s%s", p, NULL);
	got = -rel_hash_file(rp, &h, &size);
	done_op(w);
	if (expect(w, rp, got, 0, 0))
		return -1;
	if (size != in->len || h != rel_fnv(REL_FNV_INIT, in->data, in->len)) {
		int i;

		fprintf(stderr, "w%d: FAIL read %s: %llu bytes, model %zu%s\n",
			w->id, rp, (unsigned long long)size, in->len,
			size == in->len ? " (content differs)" : "");
		for (i = 0; i < w->nent; i++)
			if (w->ents[i].type == 'f' && w->ents[i].ino == e->ino)
				fprintf(stderr, "w%d:   a link of it: %s\n",
					w->id, w->ents[i].path);
		for (i = in->nhist > 12 ? in->nhist - 12 : 0; i < in->nhist;
		     i++)
			fprintf(stderr, "w%d:   its history: %s\n", w->id,
				in->hist[i % 12]);
		dump_last(w);
		return -1;
	}
	return 0;
}

static int op_chmod(struct worker *w)
{
	static const mode_t modes[] = {0600, 0644, 0640, 0755, 0700, 0666};
	char p[1024], rp[8192];
	struct ent *e;
	mode_t m = modes[rel_below(&w->rng, 6)];
	int got;

	pick_path(w, p, sizeof(p), 0);
	e = find(w, p);
	if (!e || e->type == 'l')
		return 0;
	real(w, rp, sizeof(rp), p);
	note(w, "chmod %s%s", p, NULL);
	got = chmod(rp, m) ? errno : 0;
	done_op(w);
	if (expect(w, rp, got, 0, 0))
		return -1;
	if (e->type == 'f')
		w->inos[e->ino].mode = m;
	else
		e->mode = m;
	return 0;
}

static int op_symlink(struct worker *w)
{
	char p[1024], rp[8192], target[64];
	struct ent *e;
	int got, want;

	pick_path(w, p, sizeof(p), 0);
	e = find(w, p);
	want = e ? EEXIST : 0;
	if (!e && w->nent >= MAXENT - 2)
		return 0;
	snprintf(target, sizeof(target), "../t%llu/x y",
		 (unsigned long long)rel_below(&w->rng, 100000));
	real(w, rp, sizeof(rp), p);
	note(w, "symlink %s%s", p, NULL);
	got = symlink(target, rp) ? errno : 0;
	done_op(w);
	if (expect(w, rp, got, want, 0))
		return -1;
	if (!got)
		snprintf(add_ent(w, p, 'l')->target, 64, "%s", target);
	return 0;
}

static int op_link(struct worker *w)
{
	char a[1024], b[1024], ra[8192], rb[8192];
	struct ent *ea, *eb;
	int got, want;

	pick_path(w, a, sizeof(a), 'f');
	ea = find(w, a);
	if (!ea || ea->type != 'f')
		return 0;
	pick_path(w, b, sizeof(b), 0);
	eb = find(w, b);
	want = eb ? EEXIST : 0;
	if (!eb && w->nent >= MAXENT - 2)
		return 0;
	real(w, ra, sizeof(ra), a);
	real(w, rb, sizeof(rb), b);
	note(w, "link %s %s", a, b);
	got = link(ra, rb) ? errno : 0;
	done_op(w);
	if (expect(w, rb, got, want, 0))
		return -1;
	if (!got) {
		int ino = ea->ino; /* ea may move when the array grows: no */

		add_ent(w, b, 'f')->ino = ino;
		w->inos[ino].refs++;
		ino_note(&w->inos[ino], "link to", b, 0, 0);
	}
	return 0;
}

static int op_unlink(struct worker *w)
{
	char p[1024], rp[8192];
	struct ent *e;
	int got, want;

	pick_path(w, p, sizeof(p), 0);
	e = find(w, p);
	want = !e ? ENOENT : e->type == 'd' ? EISDIR : 0;
	real(w, rp, sizeof(rp), p);
	note(w, "unlink %s%s", p, NULL);
	got = unlink(rp) ? errno : 0;
	done_op(w);
	/* unlink(2) of a folder: Linux says EISDIR, POSIX allows EPERM */
	if (expect(w, rp, got, want, want == EISDIR ? EPERM : 0))
		return -1;
	if (!got)
		drop_ent(w, e);
	return 0;
}

static int op_rmdir(struct worker *w)
{
	char p[1024], rp[8192];
	struct ent *e;
	int got, want;

	pick_path(w, p, sizeof(p), rel_below(&w->rng, 4) ? 'd' : 0);
	e = find(w, p);
	want = !e		    ? ENOENT
	       : e->type != 'd'	    ? ENOTDIR
	       : has_children(w, p) ? ENOTEMPTY
				    : 0;
	real(w, rp, sizeof(rp), p);
	note(w, "rmdir %s%s", p, NULL);
	got = rmdir(rp) ? errno : 0;
	done_op(w);
	if (expect(w, rp, got, want, want == ENOTEMPTY ? EEXIST : 0))
		return -1;
	if (!got)
		drop_ent(w, e);
	return 0;
}

static int op_rename(struct worker *w)
{
	char a[1024], b[1024], ra[8192], rb[8192];
	struct ent *ea, *eb;
	int got, want = 0, alt = 0, i;
	size_t alen;

	pick_path(w, a, sizeof(a), rel_below(&w->rng, 2) ? 'd' : 0);
	ea = find(w, a);
	if (!ea)
		return 0;
	pick_path(w, b, sizeof(b), 0);
	eb = find(w, b);
	if (!strcmp(a, b) ||
	    (eb && ea->type == 'f' && eb->type == 'f' && ea->ino == eb->ino))
		want = 0; /* same file: nothing happens */
	else if (is_within(b, a))
		want = EINVAL;
	else if (is_within(a, b))
		want = ENOTEMPTY, alt = EEXIST; /* target is an ancestor */
	else if (ea->type == 'd' && eb && eb->type != 'd')
		want = ENOTDIR;
	else if (ea->type != 'd' && eb && eb->type == 'd')
		want = EISDIR;
	else if (eb && eb->type == 'd' && has_children(w, b))
		want = ENOTEMPTY, alt = EEXIST;
	if (ea->type == 'd' && strlen(b) + 200 > sizeof(a))
		return 0;
	real(w, ra, sizeof(ra), a);
	real(w, rb, sizeof(rb), b);
	note(w, "rename %s %s", a, b);
	got = rename(ra, rb) ? errno : 0;
	done_op(w);
	if (expect(w, rb, got, want, alt))
		return -1;
	if (got || !strcmp(a, b))
		return 0;
	if (eb && ea->type == 'f' && eb->type == 'f' && ea->ino == eb->ino)
		return 0;
	if (eb) {
		if (ea == &w->ents[w->nent - 1])
			ea = eb; /* drop_ent moves the last entry into eb */
		drop_ent(w, eb);
	}
	if (ea->type == 'f')
		ino_note(&w->inos[ea->ino], "renamed to", b, 0, 0);
	alen = strlen(a);
	for (i = 0; i < w->nent; i++) {
		struct ent *e = &w->ents[i];
		char np[sizeof(e->path)];
		size_t blen = strlen(b);

		if (e == ea) {
			snprintf(e->path, sizeof(e->path), "%s", b);
		} else if (ea->type == 'd' && is_within(e->path, a)) {
			if (blen + strlen(e->path + alen) >= sizeof(np))
				abort(); /* paths are kept far shorter */
			memcpy(np, b, blen);
			strcpy(np + blen, e->path + alen);
			strcpy(e->path, np);
		}
	}
	return 0;
}

/*
 * Opens a file, unlinks it (its last link or not), then writes through the
 * open descriptor and reads everything back through it: an unlinked open
 * file stays usable until closed, and other links see the writes.
 */
static int op_unlink_open(struct worker *w)
{
	char p[1024], rp[8192];
	unsigned char *copy = NULL, *buf = NULL, *back = NULL;
	size_t clen, off, len = 1 + rel_below(&w->rng, 30000);
	struct ent *e;
	struct stat st;
	int fd, got, ino, rc = -1;

	pick_path(w, p, sizeof(p), 'f');
	e = find(w, p);
	if (!e || e->type != 'f')
		return 0;
	ino = e->ino;
	real(w, rp, sizeof(rp), p);
	note(w, "open+unlink %s%s", p, NULL);
	fd = open(rp, O_RDWR);
	got = fd < 0 ? errno : 0;
	if (!got)
		got = unlink(rp) ? errno : 0;
	done_op(w);
	if (expect(w, rp, got, 0, 0)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	clen = w->inos[ino].len;
	copy = malloc(clen + 1);
	if (clen)
		memcpy(copy, w->inos[ino].data, clen);
	drop_ent(w, e);
	off = rel_below(&w->rng, clen + 1000);
	buf = malloc(len);
	fill(w, buf, len);
	note(w, "write+read unlinked %s%s", p, NULL);
	got = pwrite(fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : errno;
	if (!got) {
		size_t n = off + len > clen ? off + len : clen;

		if (n > 4 * MAXDATA)
			abort(); /* cannot happen: off and len are bounded */
		copy = realloc(copy, n);
		if (off > clen)
			memset(copy + clen, 0, off - clen);
		memcpy(copy + off, buf, len);
		clen = n;
		if (w->inos[ino].refs) /* other links see it */
			model_write(&w->inos[ino], off, buf, len);
		back = malloc(clen + 1);
		got = pread(fd, back, clen + 1, 0) == (ssize_t)clen ? 0
		      : errno					    ? errno
								    : EIO;
		if (!got && memcmp(back, copy, clen))
			got = EIO;
		if (!got && (fstat(fd, &st) || (size_t)st.st_size != clen))
			got = EIO;
	}
	if (close(fd) && !got)
		got = errno;
	done_op(w);
	if (!expect(w, "write/read/close of an unlinked open file", got, 0, 0))
		rc = 0;
	free(copy);
	free(buf);
	free(back);
	return rc;
}

/*
 * Opens a file, runs a random rename (which may move the file, a folder
 * above it, or replace it), then writes through the descriptor: the write
 * lands in the same inode wherever it is now.
 */
static int op_fd_across_rename(struct worker *w)
{
	char p[1024], rp[8192];
	unsigned char buf[4096];
	struct ent *e;
	size_t off;
	int fd, got, ino;

	pick_path(w, p, sizeof(p), 'f');
	e = find(w, p);
	if (!e || e->type != 'f')
		return 0;
	ino = e->ino;
	real(w, rp, sizeof(rp), p);
	note(w, "open %s%s", p, NULL);
	fd = open(rp, O_WRONLY);
	got = fd < 0 ? errno : 0;
	done_op(w);
	if (expect(w, rp, got, 0, 0))
		return -1;
	if (op_rename(w)) {
		close(fd);
		return -1;
	}
	off = rel_below(&w->rng, w->inos[ino].len + 5000);
	fill(w, buf, sizeof(buf));
	note(w, "write through fd of %s%s after a rename", p, NULL);
	got = pwrite(fd, buf, sizeof(buf), (off_t)off) == (ssize_t)sizeof(buf)
		  ? 0
		  : errno;
	if (close(fd) && !got)
		got = errno;
	done_op(w);
	if (expect(w, "write through an fd kept across a rename", got, 0, 0))
		return -1;
	if (w->inos[ino].refs) {
		model_write(&w->inos[ino], off, buf, sizeof(buf));
		ino_note(&w->inos[ino], "write via fd", p, off, sizeof(buf));
	}
	return 0;
}

/* The model as manifest lines (see rel_common.h). */
static void model_lines(struct worker *w, struct rel_lines *l)
{
	int i, j;

	for (i = 0; i < w->nent; i++) {
		struct ent *e = &w->ents[i];
		char line[4096] = "";

		if (e->type == 'd') {
			int sub = 0;
			size_t n = strlen(e->path);

			for (j = 0; j < w->nent; j++)
				if (w->ents[j].type == 'd' &&
				    is_within(w->ents[j].path, e->path) &&
				    !strchr(w->ents[j].path + n + 1, '/'))
					sub++;
			strcpy(line, "d ");
			rel_escape(line, sizeof(line), e->path);
			snprintf(line + strlen(line),
				 sizeof(line) - strlen(line), " %o %d",
				 (unsigned)e->mode, 2 + sub);
		} else if (e->type == 'f') {
			struct ino *in = &w->inos[e->ino];

			strcpy(line, "f ");
			rel_escape(line, sizeof(line), e->path);
			snprintf(line + strlen(line),
				 sizeof(line) - strlen(line),
				 " %o %d %zu %016llx", (unsigned)in->mode,
				 in->refs, in->len,
				 (unsigned long long)rel_fnv(
				     REL_FNV_INIT, in->data, in->len));
		} else {
			strcpy(line, "l ");
			rel_escape(line, sizeof(line), e->path);
			strcat(line, " ");
			rel_escape(line, sizeof(line), e->target);
		}
		rel_lines_add(l, line);
	}
	rel_lines_sort(l);
}

static int verify(struct worker *w, const char *manifest_dir)
{
	struct rel_lines want = {0}, got = {0};
	char who[64];
	int rc;
	size_t bad;

	model_lines(w, &want);
	rc = rel_manifest_tree(w->root, "", &got);
	rel_lines_sort(&got);
	snprintf(who, sizeof(who), "w%d", w->id);
	bad = rel_lines_diff(who, &want, &got);
	if (!rc && manifest_dir) {
		char file[4096];
		FILE *f;
		size_t i;

		snprintf(file, sizeof(file), "%s/w%d.txt", manifest_dir, w->id);
		f = fopen(file, "w");
		if (!f) {
			perror(file);
			rc = -1;
		} else {
			for (i = 0; i < want.n; i++)
				fprintf(f, "%s\n", want.v[i]);
			fclose(f);
		}
	}
	if (bad)
		fprintf(stderr,
			"w%d: FAIL tree differs from model in %zu lines\n",
			w->id, bad);
	rel_lines_free(&want);
	rel_lines_free(&got);
	return rc || bad ? -1 : 0;
}

/* ---- shared area: racing calls, only the errno is checked ----------------- */

static int shared_op(struct worker *w)
{
	static const int allowed[] = {0,      ENOENT,  EEXIST, ENOTEMPTY,
				      EISDIR, ENOTDIR, EINVAL, EPERM};
	char a[8192], b[8192];
	int got = 0, fd, k = (int)rel_below(&w->rng, 10);
	size_t i;
	const char *what;

	/* up to two levels of the shared names below DIR/shared */
	snprintf(a, sizeof(a), "%s/%s", w->shared,
		 names[rel_below(&w->rng, 4)]);
	if (rel_below(&w->rng, 2))
		snprintf(a + strlen(a), sizeof(a) - strlen(a), "/%s",
			 names[rel_below(&w->rng, 4)]);
	snprintf(b, sizeof(b), "%s/%s", w->shared,
		 names[rel_below(&w->rng, 4)]);
	if (rel_below(&w->rng, 2))
		snprintf(b + strlen(b), sizeof(b) - strlen(b), "/%s",
			 names[rel_below(&w->rng, 4)]);
	note(w, "shared %s %s", a, b);
	switch (k) {
	case 0:
		what = "mkdir";
		got = mkdir(a, 0755) ? errno : 0;
		break;
	case 1:
		what = "rmdir";
		got = rmdir(a) ? errno : 0;
		break;
	case 2:
		what = "unlink";
		got = unlink(a) ? errno : 0;
		break;
	case 3:
	case 4:
		what = "rename";
		got = rename(a, b) ? errno : 0;
		break;
	case 5:
		what = "link";
		got = link(a, b) ? errno : 0;
		break;
	case 6:
		what = "truncate";
		got =
		    truncate(a, (off_t)rel_below(&w->rng, 100000)) ? errno : 0;
		break;
	default: {
		char buf[8192];

		what = "write";
		fill(w, (unsigned char *)buf, sizeof(buf));
		fd =
		    open(a, O_CREAT | O_WRONLY | (k == 7 ? O_APPEND : 0), 0644);
		got = fd < 0 ? errno : 0;
		if (fd >= 0) {
			if (pwrite(fd, buf, sizeof(buf),
				   (off_t)rel_below(&w->rng, 100000)) < 0)
				got = errno;
			if (close(fd) && !got)
				got = errno;
		}
		break;
	}
	}
	done_op(w);
	w->shared_ops++;
	/* before the allowed list: an ENOENT may mean the mount is gone */
	if (mount_lost(w, got))
		_exit(0);
	for (i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
		if (got == allowed[i])
			return 0;
	if (shared_mount && got == ESTALE) {
		w->estale++;
		return 0;
	}
	fprintf(stderr, "w%d: FAIL shared %s %s %s: %s\n", w->id, what, a, b,
		strerror(got));
	dump_last(w);
	return -1;
}

static int worker_run(struct worker *w, double seconds,
		      const char *manifest_dir)
{
	double end = rel_now() + seconds;
	int rc = 0;

	if (!w->shared_only && mkdir(w->root, 0755) && errno != EEXIST) {
		fprintf(stderr, "w%d: mkdir %s: %s\n", w->id, w->root,
			strerror(errno));
		return -1;
	}
	while (!rc && rel_now() < end) {
		unsigned k = (unsigned)rel_below(&w->rng, 100);

		if (w->shared_only || k < 15) {
			rc = shared_op(w);
			continue;
		}
		/* bias towards removals when the model grows big */
		if (w->nent > 150 && k < 40)
			k = 90 + k % 10;
		if (k < 25)
			rc = op_mkdir(w);
		else if (k < 37)
			rc = op_create(w);
		else if (k < 47)
			rc = op_write(w, false);
		else if (k < 53)
			rc = op_write(w, true);
		else if (k < 58)
			rc = op_truncate(w);
		else if (k < 63)
			rc = op_read(w);
		else if (k < 66)
			rc = op_chmod(w);
		else if (k < 69)
			rc = op_symlink(w);
		else if (k < 73)
			rc = getenv("REL_STRESS_NO_LINK") ? 0 : op_link(w);
		else if (k < 82)
			rc = op_rename(w);
		else if (k < 84)
			rc = op_unlink_open(w);
		else if (k < 86)
			rc = op_fd_across_rename(w);
		else if (k < 93)
			rc = op_unlink(w);
		else
			rc = op_rmdir(w);
	}
	if (!rc && !w->shared_only)
		rc = verify(w, manifest_dir);
	fprintf(stderr,
		"w%d: %lu calls in own tree (%lu expected errors), %lu shared "
		"(%lu ESTALE), %d entries: %s\n",
		w->id, w->ops - w->shared_ops, w->expected_err, w->shared_ops,
		w->estale, w->nent, rc ? "FAILED" : "ok");
	return rc;
}

static int check_main(int argc, char **argv)
{
	struct rel_lines want = {0}, got = {0};
	size_t bad;
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: rel_stress check DIR MANIFEST\n");
		return 2;
	}
	rc = rel_manifest_load(argv[3], &want);
	if (rc) {
		fprintf(stderr, "%s: %s\n", argv[3], strerror(-rc));
		return 1;
	}
	rc = rel_manifest_tree(argv[2], "", &got);
	rel_lines_sort(&got);
	bad = rel_lines_diff(argv[2], &want, &got);
	printf("%s: %zu entries, %zu differences\n", argv[2], want.n, bad);
	rel_lines_free(&want);
	rel_lines_free(&got);
	return rc || bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	int nproc = 8, i, failed = 0, live, opt;
	double seconds = 20;
	uint64_t seed = (uint64_t)time(NULL);
	const char *manifest_dir = NULL, *dir;
	bool shared_only = false, disconnect_ok = false, trace = false;
	struct slot *slots;
	pid_t *pids;

	if (argc > 1 && !strcmp(argv[1], "check"))
		return check_main(argc, argv);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--shared-only")) {
			shared_only = true;
			continue;
		}
		if (!strcmp(argv[i], "-v")) {
			trace = true;
			continue;
		}
		if (!strcmp(argv[i], "--disconnect-ok")) {
			disconnect_ok = true;
			continue;
		}
		if (!strcmp(argv[i], "--shared-mount")) {
			shared_mount = true;
			continue;
		}
		if (i + 1 >= argc)
			goto usage;
		opt = argv[i][1];
		if (opt == 'n')
			nproc = atoi(argv[++i]);
		else if (opt == 't')
			seconds = atof(argv[++i]);
		else if (opt == 'S')
			seed = strtoull(argv[++i], NULL, 0);
		else if (opt == 'm')
			manifest_dir = argv[++i];
		else
			goto usage;
	}
	if (i != argc - 1 || nproc < 1)
		goto usage;
	dir = argv[i];
	fprintf(stderr, "rel_stress: %d processes, %.0f s, seed %llu\n", nproc,
		seconds, (unsigned long long)seed);
	slots = mmap(NULL, sizeof(*slots) * nproc, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED)
		return 1;
	memset(slots, 0, sizeof(*slots) * nproc);
	{
		char sh[4096];
		int e;

		snprintf(sh, sizeof(sh), "%s/shared", dir);
		e = mkdir(sh, 0755) ? errno : 0;
		if (e == EEXIST)
			e = 0;
		/* killed before the first call: nothing to check */
		if (e && lost(disconnect_ok, e, dir))
			return 0;
		if (e) {
			fprintf(stderr, "rel_stress: FAIL mkdir %s: %s\n", sh,
				strerror(e));
			return 1;
		}
	}
	pids = calloc(nproc, sizeof(*pids));
	if (!pids)
		return 1;
	umask(022);
	for (i = 0; i < nproc; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("fork");
			free(pids);
			return 1;
		}
		if (pids[i] == 0) {
			static struct worker w;

			w.id = i;
			w.rng = seed * 1000003 + (uint64_t)i * 7919 + 1;
			w.slot = &slots[i];
			w.shared_only = shared_only;
			w.disconnect_ok = disconnect_ok;
			w.trace = trace;
			trace_all = trace;
			snprintf(w.root, sizeof(w.root), "%s/w%d", dir, i);
			snprintf(w.shared, sizeof(w.shared), "%s/shared", dir);
			_exit(worker_run(&w, seconds, manifest_dir) ? 1 : 0);
		}
	}
	live = nproc;
	while (live) {
		int status;
		pid_t p = waitpid(-1, &status, WNOHANG);

		if (p > 0) {
			live--;
			for (i = 0; i < nproc; i++)
				if (pids[i] == p) {
					slots[i].done = 1;
					pids[i] = 0;
				}
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				fprintf(stderr,
					"rel_stress: worker pid %d %s %d\n",
					(int)p,
					WIFEXITED(status) ? "exited"
							  : "killed by signal",
					WIFEXITED(status) ? WEXITSTATUS(status)
							  : WTERMSIG(status));
				failed++;
			}
			continue;
		}
		usleep(100000);
		for (i = 0; i < nproc; i++) {
			double s = slots[i].op_start;

			if (pids[i] && s && rel_now() - s > HANG_SECONDS) {
				fprintf(stderr,
					"rel_stress: FAIL hang: %s running "
					"for %.0f s\n",
					slots[i].op, rel_now() - s);
				failed++;
				kill(pids[i], SIGKILL);
				slots[i].op_start = 0;
			}
		}
	}
	printf("rel_stress: %d of %d workers failed\n", failed, nproc);
	free(pids);
	munmap(slots, sizeof(*slots) * nproc);
	return failed ? 1 : 0;
usage:
	fprintf(stderr, "usage: rel_stress [-n PROCS] [-t SECONDS] [-S SEED] "
			"[-m MANIFEST_DIR] [--shared-only] [--disconnect-ok] "
			"[--shared-mount] [-v] DIR\n       rel_stress check "
			"DIR MANIFEST\n");
	return 2;
}
