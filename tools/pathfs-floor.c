/*
 * pathfs-floor - the floor of `pathfs-bench mount`: a FUSE daemon that keeps
 * everything in memory and does no storage work, answering the requests
 * pathfs answers. Its times are what any daemon costs on this machine's FUSE
 * transport; pathfs's time over the floor's is what pathfs itself costs.
 *
 *   pathfs-floor [-f] [-d] [-o timeout=SECONDS] [-o stats=FILE] MOUNTPOINT
 *   fusermount3 -u MOUNTPOINT
 *
 * The kernel sends it the requests it sends pathfs for the same work: the
 * same INIT answer (fs/devio.c: READDIRPLUS always, POSIX ACLs with
 * DONT_MASK, HANDLE_KILLPRIV_V2, 1 MiB writes, no writeback cache), the same
 * mount options (default_permissions), entry and attribute timeouts (3600 s
 * unless -o timeout=), negative entries cached as long, file pages kept
 * across opens (keep_cache), a folder's listing kept for an open that is
 * its only one (cache_readdir, as fs/dirs.c's fs_opendir), access times as
 * pathfs sets them (relatime, the kernel told to fetch the attributes
 * again), no FLUSH handler (the kernel stops sending it after the first
 * ENOSYS), ENODATA for every xattr but security.selinux (EOPNOTSUPP, as
 * pathfs answers it), an empty list of them.
 *
 * It counts the requests it answers per opcode with pathfs's own counters
 * (fs/stats.c): on SIGUSR1 it writes the counts so far to -o stats=FILE as
 * JSON, in the form of `pathfsctl stats --json` (FILE.tmp, then renamed
 * over FILE); at unmount it writes them there once more and prints them on
 * stdout as a table.
 *
 * One thread serves every request (libfuse's single-threaded loop; pathfs's
 * loop also serves cheap requests in its reading thread), so nothing is
 * locked. Nodes live in an array indexed by inode number, names in a hash
 * table keyed by (folder, name) and in their folder's list in the order
 * made; a name's listing offset is a number given once (offsets 1 and 2
 * are "." and ".."), so a listing resumes right after names are removed.
 *
 * Limits: inode numbers are never reused and FORGET is ignored; a file's
 * content goes with its last name, even while it is open; no xattrs are kept
 * (SETXATTR and REMOVEXATTR answer 0, GETXATTR ENODATA), nor locks, ioctls,
 * fallocate or lseek; set-user-ID and set-group-ID are never cleared on a
 * write; ".." of a listing is inode 1, as in pathfs; everything is lost at
 * unmount.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "devio.h"
#include "stats.h"

#define NBUCKETS (1u << 20) /* chains stay short up to ~1M names */

/* A name in a folder. */
struct dent {
	char *name;
	uint64_t parent, ino;
	uint64_t off;		  /* its listing offset, > 2 */
	struct dent *hnext;	  /* next in its hash bucket */
	struct dent *prev, *next; /* its folder's names, oldest first */
};

struct node {
	struct stat st;		   /* st_ino 0: no such node */
	struct dent *first, *last; /* a folder's names */
	char *data;		   /* content (a symlink's target): st_size */
	size_t cap;		   /* bytes allocated at data */
	uint32_t opens;		   /* a folder's opens (OPENDIR - RELEASEDIR) */
};

struct floor {
	struct node *nodes; /* nodes[ino]; 0 unused, 1 the root */
	uint64_t nnodes, capnodes;
	struct dent **buckets;
	uint64_t next_off;
	double timeout;
	struct fuse_session *se; /* for notifications, once mounted */
	char *stats;		 /* -o stats=FILE, or NULL */
	int debug;
};

static const char *stats_path; /* for the SIGUSR1 thread */

static struct floor *fl_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static struct node *node_of(struct floor *fl, fuse_ino_t ino)
{
	if (ino >= fl->nnodes || !fl->nodes[ino].st.st_ino)
		return NULL;
	return &fl->nodes[ino];
}

static struct dent **bucket(struct floor *fl, uint64_t parent, const char *name)
{
	uint64_t h = 1469598103934665603ULL ^ parent; /* FNV-1a */

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 1099511628211ULL;
	return &fl->buckets[h & (NBUCKETS - 1)];
}

static struct dent *find(struct floor *fl, uint64_t parent, const char *name)
{
	struct dent *d = *bucket(fl, parent, name);

	while (d && (d->parent != parent || strcmp(d->name, name)))
		d = d->hnext;
	return d;
}

static void stamp(struct timespec *t)
{
	clock_gettime(CLOCK_REALTIME, t);
}

/* <0, 0, >0 as @a is before, at or after @b. */
static int cmp_ts(const struct timespec *a, const struct timespec *b)
{
	if (a->tv_sec != b->tv_sec)
		return a->tv_sec < b->tv_sec ? -1 : 1;
	return a->tv_nsec < b->tv_nsec ? -1 : a->tv_nsec > b->tv_nsec;
}

/* A folder's contents changed now. */
static void touch_dir(struct node *dir)
{
	stamp(&dir->st.st_mtim);
	dir->st.st_ctim = dir->st.st_mtim;
}

/*
 * relatime, as pathfs (fs/attrs.c): after the first read of an open, or a
 * listing from its start, atime becomes now if it is not newer than mtime
 * and ctime or is a day old, and the kernel is told to fetch the
 * attributes again.
 */
static void touch_atime(struct floor *fl, fuse_ino_t ino)
{
	struct node *n = node_of(fl, ino);
	struct timespec t;
	struct stat *st;

	if (!n)
		return;
	st = &n->st;
	stamp(&t);
	if (cmp_ts(&st->st_atim, &st->st_mtim) > 0 &&
	    cmp_ts(&st->st_atim, &st->st_ctim) > 0 &&
	    t.tv_sec - st->st_atim.tv_sec < 24 * 3600)
		return;
	st->st_atim = t;
	if (fl->se)
		fuse_lowlevel_notify_inval_inode(fl->se, ino, -1, 0);
}

/* Puts name @d into the hash table and at the end of its folder's list. */
static void link_dent(struct floor *fl, struct dent *d)
{
	struct dent **b = bucket(fl, d->parent, d->name);
	struct node *dir = &fl->nodes[d->parent];

	d->hnext = *b;
	*b = d;
	d->off = fl->next_off++;
	d->next = NULL;
	d->prev = dir->last;
	if (dir->last)
		dir->last->next = d;
	else
		dir->first = d;
	dir->last = d;
	touch_dir(dir);
}

/* Takes name @d out of the hash table and its folder's list. */
static void unlink_dent(struct floor *fl, struct dent *d)
{
	struct dent **pp = bucket(fl, d->parent, d->name);
	struct node *dir = &fl->nodes[d->parent];

	while (*pp != d)
		pp = &(*pp)->hnext;
	*pp = d->hnext;
	if (d->prev)
		d->prev->next = d->next;
	else
		dir->first = d->next;
	if (d->next)
		d->next->prev = d->prev;
	else
		dir->last = d->prev;
	touch_dir(dir);
}

/* A new name @name in folder @parent for node @ino. Errors: -ENOMEM. */
static int add_name(struct floor *fl, uint64_t parent, const char *name,
		    uint64_t ino)
{
	struct dent *d = calloc(1, sizeof(*d));

	if (!d || !(d->name = strdup(name))) {
		free(d);
		return -ENOMEM;
	}
	d->parent = parent;
	d->ino = ino;
	link_dent(fl, d);
	if (S_ISDIR(fl->nodes[ino].st.st_mode))
		fl->nodes[parent].st.st_nlink++;
	return 0;
}

/* Drops node @n's link from name @d (gone from its folder): its content
 * goes with its last name. */
static void drop_name(struct floor *fl, struct dent *d)
{
	struct node *n = &fl->nodes[d->ino];

	unlink_dent(fl, d);
	if (S_ISDIR(n->st.st_mode)) {
		fl->nodes[d->parent].st.st_nlink--;
		n->st.st_nlink = 0;
	} else if (n->st.st_nlink) {
		n->st.st_nlink--;
	}
	stamp(&n->st.st_ctim);
	if (!n->st.st_nlink) {
		free(n->data);
		n->data = NULL;
		n->cap = 0;
	}
	free(d->name);
	free(d);
}

/*
 * A new node of @mode (the request's umask applied: DONT_MASK) named @name
 * in folder @parent, by the caller of @req; 0 for the root. Its inode number
 * in *ino. Errors: -ENOENT (no such folder), -ENOTDIR, -EEXIST, -ENOMEM.
 */
static int make_node(struct floor *fl, fuse_req_t req, uint64_t parent,
		     const char *name, mode_t mode, uint64_t *ino)
{
	const struct fuse_ctx *c = req ? fuse_req_ctx(req) : NULL;
	struct node *dir = parent ? node_of(fl, parent) : NULL, *n;
	int rc;

	if (parent && !dir)
		return -ENOENT;
	if (dir && !S_ISDIR(dir->st.st_mode))
		return -ENOTDIR;
	if (dir && find(fl, parent, name))
		return -EEXIST;
	if (fl->nnodes == fl->capnodes) {
		uint64_t cap = fl->capnodes ? 2 * fl->capnodes : 1024;
		struct node *v = realloc(fl->nodes, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		fl->nodes = v;
		fl->capnodes = cap;
	}
	/* the array may have moved */
	dir = parent ? &fl->nodes[parent] : NULL;
	*ino = fl->nnodes;
	n = &fl->nodes[*ino];
	memset(n, 0, sizeof(*n));
	n->st.st_ino = *ino;
	n->st.st_mode = c && !S_ISLNK(mode) ? mode & ~(c->umask & 0777) : mode;
	n->st.st_nlink = S_ISDIR(mode) ? 2 : 1;
	n->st.st_uid = c ? c->uid : 0;
	n->st.st_gid = c ? c->gid : 0;
	if (dir && (dir->st.st_mode & S_ISGID)) {
		n->st.st_gid = dir->st.st_gid;
		if (S_ISDIR(mode))
			n->st.st_mode |= S_ISGID;
	}
	n->st.st_blksize = 4096;
	stamp(&n->st.st_mtim);
	n->st.st_atim = n->st.st_ctim = n->st.st_mtim;
	if (parent) {
		rc = add_name(fl, parent, name, *ino);
		if (rc) {
			n->st.st_ino = 0;
			return rc;
		}
	}
	fl->nnodes++;
	return 0;
}

static void fill_entry(struct floor *fl, uint64_t ino,
		       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->attr_timeout = fl->timeout;
	e->entry_timeout = fl->timeout;
	if (ino)
		e->attr = fl->nodes[ino].st;
}

/* Answers a request that made or found node @ino (0 with @rc -ENOENT: a
 * negative entry the kernel caches), or its error. */
static void reply_entry(fuse_req_t req, int rc, uint64_t ino)
{
	struct fuse_entry_param e;

	if (rc && rc != -ENOENT) {
		fuse_reply_err(req, -rc);
		return;
	}
	fill_entry(fl_of(req), rc ? 0 : ino, &e);
	fuse_reply_entry(req, &e);
}

static void fl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct floor *fl = fl_of(req);
	struct dent *d = find(fl, parent, name);

	reply_entry(req, d ? 0 : -ENOENT, d ? d->ino : 0);
}

static void fl_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fuse_reply_none(req);
}

static void fl_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	fuse_reply_none(req);
}

static void fl_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	uint64_t ino = 0;
	int rc = make_node(fl_of(req), req, parent, name, S_IFDIR | mode, &ino);

	reply_entry(req, rc ? (rc == -ENOENT ? -ESTALE : rc) : 0, ino);
}

static void fl_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	struct floor *fl = fl_of(req);
	uint64_t ino = 0;
	int rc = make_node(fl, req, parent, name, mode, &ino);

	if (!rc)
		fl->nodes[ino].st.st_rdev = rdev;
	reply_entry(req, rc ? (rc == -ENOENT ? -ESTALE : rc) : 0, ino);
}

/* What an open file carries: whether its first read set atime. The kernel
 * keeps its pages across opens (keep_cache). Errors: -ENOMEM. */
static int new_open(struct fuse_file_info *fi)
{
	bool *atime_done = calloc(1, sizeof(*atime_done));

	fi->fh = (uintptr_t)atime_done;
	fi->keep_cache = 1;
	return atime_done ? 0 : -ENOMEM;
}

static void fl_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	free((void *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void fl_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct floor *fl = fl_of(req);
	struct fuse_entry_param e;
	uint64_t ino = 0;
	int rc =
	    make_node(fl, req, parent, name, S_IFREG | (mode & 07777), &ino);

	if (!rc)
		rc = new_open(fi);
	if (rc) {
		fuse_reply_err(req, rc == -ENOENT ? ESTALE : -rc);
		return;
	}
	fill_entry(fl, ino, &e);
	fuse_reply_create(req, &e, fi);
}

/* A symlink's target is its content. */
static void fl_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
		       const char *name)
{
	struct floor *fl = fl_of(req);
	struct node *n;
	uint64_t ino = 0;
	int rc = make_node(fl, req, parent, name, S_IFLNK | 0777, &ino);

	if (!rc) {
		n = &fl->nodes[ino];
		n->data = strdup(target);
		if (!n->data) {
			drop_name(fl, find(fl, parent, name));
			rc = -ENOMEM;
		} else {
			n->cap = strlen(target);
			n->st.st_size = (off_t)n->cap;
		}
	}
	reply_entry(req, rc ? (rc == -ENOENT ? -ESTALE : rc) : 0, ino);
}

static void fl_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct node *n = node_of(fl_of(req), ino);

	if (!n || !S_ISLNK(n->st.st_mode) || !n->data)
		fuse_reply_err(req, n ? EINVAL : ENOENT);
	else
		fuse_reply_readlink(req, n->data);
}

static void fl_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent,
		    const char *name)
{
	struct floor *fl = fl_of(req);
	struct node *n = node_of(fl, ino), *dir = node_of(fl, parent);
	int rc = 0;

	if (!n || !dir)
		rc = -ENOENT;
	else if (S_ISDIR(n->st.st_mode))
		rc = -EPERM;
	else if (find(fl, parent, name))
		rc = -EEXIST;
	else
		rc = add_name(fl, parent, name, ino);
	if (!rc) {
		n->st.st_nlink++;
		stamp(&n->st.st_ctim);
	}
	reply_entry(req, rc == -ENOENT ? -ESTALE : rc, ino);
}

static void fl_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct floor *fl = fl_of(req);
	struct node *n = node_of(fl, ino);

	if (!n)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &n->st, fl->timeout);
}

/* Sets file @n's size to @size, the new bytes zero. Errors: -ENOMEM. */
static int resize(struct node *n, size_t size)
{
	size_t cap;
	char *p;

	if (size > n->cap) {
		cap = size < 2 * n->cap ? 2 * n->cap : size;
		p = realloc(n->data, cap);
		if (!p)
			return -ENOMEM;
		n->data = p;
		n->cap = cap;
	}
	if (size > (size_t)n->st.st_size)
		memset(n->data + n->st.st_size, 0,
		       size - (size_t)n->st.st_size);
	n->st.st_size = (off_t)size;
	n->st.st_blocks = (blkcnt_t)((size + 511) / 512);
	stamp(&n->st.st_mtim);
	n->st.st_ctim = n->st.st_mtim;
	return 0;
}

static void fl_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *a, int set,
		       struct fuse_file_info *fi)
{
	struct floor *fl = fl_of(req);
	struct node *n = node_of(fl, ino);
	struct timespec t;
	int rc = 0;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (set & FUSE_SET_ATTR_SIZE)
		rc = S_ISREG(n->st.st_mode) ? resize(n, (size_t)a->st_size)
					    : -EINVAL;
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (set & FUSE_SET_ATTR_MODE)
		n->st.st_mode = (n->st.st_mode & S_IFMT) | (a->st_mode & 07777);
	if (set & FUSE_SET_ATTR_UID)
		n->st.st_uid = a->st_uid;
	if (set & FUSE_SET_ATTR_GID)
		n->st.st_gid = a->st_gid;
	stamp(&t);
	if (set & FUSE_SET_ATTR_ATIME)
		n->st.st_atim =
		    (set & FUSE_SET_ATTR_ATIME_NOW) ? t : a->st_atim;
	if (set & FUSE_SET_ATTR_MTIME)
		n->st.st_mtim =
		    (set & FUSE_SET_ATTR_MTIME_NOW) ? t : a->st_mtim;
	n->st.st_ctim = t;
	fuse_reply_attr(req, &n->st, fl->timeout);
}

static void fl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct node *n = node_of(fl_of(req), ino);
	int rc = 0;

	if (!n)
		rc = -ENOENT;
	else if ((fi->flags & O_TRUNC) && S_ISREG(n->st.st_mode))
		rc = resize(n, 0); /* ATOMIC_O_TRUNC: no SETATTR comes */
	if (!rc)
		rc = new_open(fi);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	fuse_reply_open(req, fi);
}

static void fl_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct node *n = node_of(fl_of(req), ino);
	size_t end = (size_t)off + size;
	int rc = n ? 0 : -ENOENT;

	if (!rc && end > (size_t)n->st.st_size)
		rc = resize(n, end);
	if (rc) {
		fuse_reply_err(req, -rc);
		return;
	}
	memcpy(n->data + off, buf, size);
	stamp(&n->st.st_mtim);
	n->st.st_ctim = n->st.st_mtim;
	fuse_reply_write(req, size);
}

static void fl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct floor *fl = fl_of(req); /* @req is gone once answered */
	struct node *n = node_of(fl, ino);
	bool *atime_done = (bool *)(uintptr_t)fi->fh;
	off_t left;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	left = off < n->st.st_size ? n->st.st_size - off : 0;
	if ((off_t)size > left)
		size = (size_t)left;
	fuse_reply_buf(req, size ? n->data + off : NULL, size);
	/* after the reply, as pathfs */
	if (atime_done && !*atime_done) {
		*atime_done = true;
		touch_atime(fl, ino);
	}
}

/* FSYNC, FSYNCDIR: nothing to do. */
static void fl_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void fl_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct node *n = node_of(fl_of(req), ino);

	if (!n || !S_ISDIR(n->st.st_mode)) {
		fuse_reply_err(req, n ? ENOTDIR : ENOENT);
		return;
	}
	fi->cache_readdir = n->opens++ == 0;
	fi->keep_cache = 1;
	if (fuse_reply_open(req, fi) == -ENOENT)
		n->opens--; /* interrupted: no RELEASEDIR comes */
}

static void fl_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	struct node *n = node_of(fl_of(req), ino);

	if (n && n->opens)
		n->opens--;
	fuse_reply_err(req, 0);
}

/* One listing entry at @buf (@left bytes there); its size, which is more
 * than @left when it does not fit. */
static size_t add_entry(fuse_req_t req, bool plus, char *buf, size_t left,
			const char *name, struct fuse_entry_param *e, off_t off)
{
	if (plus)
		return fuse_add_direntry_plus(req, buf, left, name, e, off);
	return fuse_add_direntry(req, buf, left, name, &e->attr, off);
}

/* READDIR and READDIRPLUS: "." and ".." at offsets 1 and 2 (no attributes,
 * no lookup counted), then the names made after offset @off. */
static void list(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		 bool plus)
{
	struct floor *fl = fl_of(req);
	struct node *dir = node_of(fl, ino);
	struct fuse_entry_param e;
	struct dent *d;
	char *buf;
	size_t pos = 0, n;
	bool from_start = off == 0;

	if (!dir) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (; off < 2; off++) {
		memset(&e, 0, sizeof(e));
		e.attr.st_ino = off == 0 ? ino : FUSE_ROOT_ID;
		e.attr.st_mode = S_IFDIR;
		n = add_entry(req, plus, buf + pos, size - pos,
			      off == 0 ? "." : "..", &e, off + 1);
		if (n > size - pos)
			goto out;
		pos += n;
	}
	for (d = dir->first; d && d->off <= (uint64_t)off; d = d->next)
		;
	for (; d; d = d->next) {
		fill_entry(fl, d->ino, &e);
		n = add_entry(req, plus, buf + pos, size - pos, d->name, &e,
			      (off_t)d->off);
		if (n > size - pos)
			break;
		pos += n;
	}
out:
	fuse_reply_buf(req, buf, pos);
	free(buf);
	if (from_start)
		touch_atime(fl, ino);
}

static void fl_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	list(req, ino, size, off, false);
}

static void fl_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	list(req, ino, size, off, true);
}

/* UNLINK (@dir false) and RMDIR (@dir true). */
static void remove_name(fuse_req_t req, fuse_ino_t parent, const char *name,
			bool dir)
{
	struct floor *fl = fl_of(req);
	struct dent *d = find(fl, parent, name);
	struct node *n = d ? &fl->nodes[d->ino] : NULL;
	int err = 0;

	if (!n)
		err = ENOENT;
	else if (dir != S_ISDIR(n->st.st_mode))
		err = dir ? ENOTDIR : EISDIR;
	else if (n->first)
		err = ENOTEMPTY;
	else
		drop_name(fl, d);
	fuse_reply_err(req, err);
}

static void fl_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, false);
}

static void fl_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	remove_name(req, parent, name, true);
}

/* Whether name @to may be replaced by node @from: 0 or -errno. */
static int may_replace(struct floor *fl, struct dent *from, struct dent *to)
{
	const struct node *a = &fl->nodes[from->ino], *b = &fl->nodes[to->ino];

	if (S_ISDIR(a->st.st_mode) && !S_ISDIR(b->st.st_mode))
		return -ENOTDIR;
	if (!S_ISDIR(a->st.st_mode) && S_ISDIR(b->st.st_mode))
		return -EISDIR;
	return b->first ? -ENOTEMPTY : 0;
}

/* Moves name @d to @name in folder @parent. Errors: -ENOMEM. */
static int move_name(struct floor *fl, struct dent *d, uint64_t parent,
		     const char *name)
{
	char *copy = strdup(name);
	bool isdir = S_ISDIR(fl->nodes[d->ino].st.st_mode);

	if (!copy)
		return -ENOMEM;
	unlink_dent(fl, d);
	if (isdir)
		fl->nodes[d->parent].st.st_nlink--;
	free(d->name);
	d->name = copy;
	d->parent = parent;
	link_dent(fl, d);
	if (isdir)
		fl->nodes[parent].st.st_nlink++;
	stamp(&fl->nodes[d->ino].st.st_ctim);
	return 0;
}

static void fl_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	struct floor *fl = fl_of(req);
	struct dent *d = find(fl, parent, name);
	struct dent *to = find(fl, newparent, newname);
	int rc = 0;

	if (!d || !node_of(fl, newparent))
		rc = -ENOENT;
	else if (flags & ~(unsigned)RENAME_NOREPLACE)
		rc = -EINVAL; /* RENAME_EXCHANGE, RENAME_WHITEOUT */
	else if (to && (flags & RENAME_NOREPLACE))
		rc = -EEXIST;
	else if (to && to != d)
		rc = may_replace(fl, d, to);
	if (!rc && to == d)
		goto out;
	if (!rc && to)
		drop_name(fl, to);
	if (!rc)
		rc = move_name(fl, d, newparent, newname);
out:
	fuse_reply_err(req, -rc);
}

static void fl_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs s;

	memset(&s, 0, sizeof(s));
	s.f_bsize = s.f_frsize = 4096;
	s.f_namemax = 255;
	s.f_blocks = s.f_bfree = s.f_bavail = 1ull << 28;
	s.f_files = s.f_ffree = s.f_favail = 1ull << 28;
	fuse_reply_statfs(req, &s);
}

/* No xattrs; SELinux labels answered as pathfs does (ls stops asking). */
static void fl_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	fuse_reply_err(req,
		       strcmp(name, "security.selinux") ? ENODATA : EOPNOTSUPP);
}

static void fl_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	if (size)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_xattr(req, 0);
}

/* Accepted and forgotten: cp -a sets every copy's ACL (the kernel caches
 * it), and a refusal would make it send a SETATTR more than to pathfs. */
static void fl_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	fuse_reply_err(req, strcmp(name, "security.selinux") ? 0 : EOPNOTSUPP);
}

static void fl_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	fuse_reply_err(req, 0);
}

static void fl_init(void *userdata, struct fuse_conn_info *conn)
{
	fs_conn_want(conn, false); /* pathfs's default: no writeback cache */
}

static const struct fuse_lowlevel_ops floor_ops = {
    .init = fl_init,
    .lookup = fl_lookup,
    .forget = fl_forget,
    .forget_multi = fl_forget_multi,
    .getattr = fl_getattr,
    .setattr = fl_setattr,
    .readlink = fl_readlink,
    .mknod = fl_mknod,
    .mkdir = fl_mkdir,
    .unlink = fl_unlink,
    .rmdir = fl_rmdir,
    .symlink = fl_symlink,
    .rename = fl_rename,
    .link = fl_link,
    .open = fl_open,
    .read = fl_read,
    .write = fl_write,
    .release = fl_release, /* no .flush, as pathfs (fs/ops.c) */
    .fsync = fl_fsync,
    .opendir = fl_opendir,
    .releasedir = fl_releasedir,
    .readdir = fl_readdir,
    .readdirplus = fl_readdirplus,
    .fsyncdir = fl_fsync,
    .statfs = fl_statfs,
    .setxattr = fl_setxattr,
    .getxattr = fl_getxattr,
    .listxattr = fl_listxattr,
    .removexattr = fl_removexattr,
    .create = fl_create,
};

/* Writes the counts so far to stats_path (as JSON). Runs in the SIGUSR1
 * thread, and at the end. */
static void write_stats(void)
{
	char tmp[PATH_MAX];
	FILE *f;

	if (!stats_path)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", stats_path);
	f = fopen(tmp, "we");
	if (!f) {
		fprintf(stderr, "pathfs-floor: %s: %s\n", tmp, strerror(errno));
		return;
	}
	stats_print(f, true, NULL);
	if (fclose(f) || rename(tmp, stats_path))
		fprintf(stderr, "pathfs-floor: %s: %s\n", stats_path,
			strerror(errno));
}

static void floor_free(struct floor *fl)
{
	uint64_t i;
	struct dent *d, *next;

	for (i = 0; i < fl->nnodes; i++) {
		for (d = fl->nodes[i].first; d; d = next) {
			next = d->next;
			free(d->name);
			free(d);
		}
		free(fl->nodes[i].data);
	}
	free(fl->nodes);
	free(fl->buckets);
	free(fl->stats);
}

#define OPT(t, p)                                                              \
	{                                                                      \
		t, offsetof(struct floor, p), 0                                \
	}
static const struct fuse_opt opt_spec[] = {
    OPT("timeout=%lf", timeout), OPT("stats=%s", stats), FUSE_OPT_END};

static void usage(FILE *f)
{
	fprintf(f, "usage: pathfs-floor [-f] [-d] [-o timeout=SECONDS] "
		   "[-o stats=FILE] MOUNTPOINT\n");
}

/* The session: mounted, served by one thread until unmounted. */
static int serve(struct floor *fl, struct fuse_args *args,
		 const struct fuse_cmdline_opts *co)
{
	struct fuse_lowlevel_ops ops;
	struct fuse_session *se;
	sigset_t usr1;
	int rc = 1;

	stats_wrap(&ops, &floor_ops);
	se = fuse_session_new(args, &ops, sizeof(ops), fl);
	if (!se)
		return 1;
	fl->se = se;
	if (fuse_set_signal_handlers(se))
		goto out;
	/* SIGUSR1 blocked before the mount shows, so that one sent as soon as
	 * it does waits for the thread below instead of ending the daemon (its
	 * default action: pathfs-bench asks for the counts right after the
	 * mount, and under load that came first) */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	if (fuse_session_mount(se, co->mountpoint))
		goto out_handlers;
	if (fs_devio_install(se))
		fprintf(stderr, "pathfs-floor: no /dev/fuse hooks: the kernel "
				"asks more than of pathfs\n");
	if (fuse_daemonize(co->foreground))
		goto out_unmount;
	/* after fuse_daemonize(): its fork would lose the thread */
	if (stats_signal_start(write_stats))
		fprintf(stderr, "pathfs-floor: no counts on SIGUSR1\n");
	rc = fuse_session_loop(se) ? 1 : 0;
out_unmount:
	fuse_session_unmount(se);
out_handlers:
	fuse_remove_signal_handlers(se);
out:
	fuse_session_destroy(se);
	return rc;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts co;
	struct floor fl;
	uint64_t root;
	int rc = 2;

	memset(&fl, 0, sizeof(fl));
	memset(&co, 0, sizeof(co));
	fl.timeout = 3600.0;
	fl.next_off = 3;
	if (fuse_opt_parse(&args, &fl, opt_spec, NULL) ||
	    fuse_parse_cmdline(&args, &co) || !co.mountpoint ||
	    fl.timeout < 0) {
		usage(stderr);
		goto out;
	}
	if (co.show_help) {
		usage(stdout);
		rc = 0;
		goto out;
	}
	stats_path = fl.stats;
	rc = 1;
	fl.buckets = calloc(NBUCKETS, sizeof(*fl.buckets));
	if (!fl.buckets ||
	    fuse_opt_add_arg(&args, "-ofsname=pathfs-floor,subtype=pathfs-"
				    "floor,default_permissions")) {
		fprintf(stderr, "pathfs-floor: out of memory\n");
		goto out;
	}
	/* ino 0 unused, ino 1 the root (FUSE_ROOT_ID) */
	if (make_node(&fl, NULL, 0, NULL, S_IFDIR | 0755, &root) ||
	    make_node(&fl, NULL, 0, NULL, S_IFDIR | 0755, &root)) {
		fprintf(stderr, "pathfs-floor: out of memory\n");
		goto out;
	}
	fl.nodes[0].st.st_ino = 0;
	rc = serve(&fl, &args, &co);
	stats_signal_stop();
	write_stats();
	stats_print(stdout, false, NULL);
out:
	floor_free(&fl);
	free(co.mountpoint);
	fuse_opt_free_args(&args);
	return rc;
}
