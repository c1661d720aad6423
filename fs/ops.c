/*
 * ops.c - the FUSE low-level operations of the pathfs daemon.
 *
 * Each operation is split in two, as in libfuse's passthrough_ll: fs_do_<op>()
 * does the work on a struct fs and returns 0 or -errno; fs_<op>() only
 * unpacks the request and replies. Every path-based request runs inside
 * fs_enter()/fs_leave() (inodes.c): it waits while its path is inside a branch
 * a folder rename is rewriting, and it rebuilds its path and retries once a
 * concurrent rename has moved its node (the store answers -ENOENT when a path
 * no longer holds the inode asked for).
 *
 * Kernel caching: entries, negative entries and attributes are cached for
 * fs->timeout seconds (the daemon is the only writer of the drive; changes
 * made behind the kernel's back by pathfsctl commands are invalidated in
 * fs_ctl_end()); file pages and folder listings are kept across opens
 * (keep_cache, cache_readdir; listing offsets are name cookies, see
 * dircookie.h); symlinks are cached; readdirplus answers listings with
 * attributes from the same scan. The writeback cache is off
 * unless -o writeback (see main.c). keep_cache promises that the cached pages
 * are still the file's: a write the kernel sends past its page cache (an
 * O_DIRECT write, synchronous or asynchronous, from any open) marks the inode
 * INODE_PAGES_STALE, so the next open answers without keep_cache and the
 * kernel drops the pages; the written range is also invalidated at once
 * for opens that stay open (the invalidation may wait for a READ: the
 * request loop hands reading to another thread first, and -s skips it).
 * Buffered writes, truncates and fallocate go through (or are applied to)
 * the page cache by the kernel itself.
 *
 * A change of content (write, truncate, open(O_TRUNC), fallocate) by an
 * unprivileged caller clears set-user-ID and set-group-ID as ext4 does
 * (privs_to_clear()), and so does a chown (privs_to_clear_by()). With
 * HANDLE_KILLPRIV_V2 (negotiated by devio.c) that is the daemon's job
 * alone; without it the kernel also clears them before it sends the
 * request, by FUSE's older rule (set-group-ID only with group execute).
 *
 * Races with unlink and rename: a node id is valid until the kernel FORGETs
 * it, so an inode the kernel still knows or has open is never freed under it:
 * losing its last name (unlink, rmdir, rename over it) it becomes an orphan,
 * addressed by number with nlink 0, reclaimed at its last FORGET and release
 * (open and unlink/rename-over are ordered on fs->open_stripe[]);
 * a request that fails with ENOENT because a rename or unlink moved its node
 * waits for the table update and retries with the new path (fs_retry).
 *
 * O_TMPFILE: an orphan from birth (fs_do_tmpfile), answered past libfuse
 * (fs_raw_request, called by loop.c), named by linkat (fs_do_link).
 *
 * Limits: no POSIX ACLs and no SELinux labels (EOPNOTSUPP, see
 * unsupported_xattr()); fallocate: allocate, KEEP_SIZE, PUNCH_HOLE,
 * ZERO_RANGE (not COLLAPSE/INSERT_RANGE, EOPNOTSUPP); no copy_file_range or
 * ioctl.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "dircookie.h"

#include "fs_i.h"
#include "log.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#ifndef RENAME_WHITEOUT
#define RENAME_WHITEOUT (1 << 2)
#endif

#define NS_PER_S       1000000000LL
#define ATIME_STALE_NS (24 * 3600 * NS_PER_S)

/* One open file. */
struct fh {
	uint64_t ino;
	bool append;	 /* O_APPEND without writeback cache */
	bool atime_done; /* atime considered once per open (relatime) */
};

static struct fs *req_fs(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void reply_err(fuse_req_t req, int rc)
{
	fuse_reply_err(req, rc < 0 && rc > -4096 ? -rc : EIO);
}

static void fill_entry(struct fs *fs, const struct tree_attr *a,
		       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = a->ino;
	/* file handles carry it; the kernel wants 0 for the root */
	e->generation = a->ino == TREE_ROOT_INO ? 0 : tree_generation(fs->tree);
	tree_attr_to_stat(fs->tree, a, &e->attr);
	e->attr.st_ino = a->ino;
	e->attr_timeout = fs->timeout;
	e->entry_timeout = fs->timeout;
}

static void note_attr(struct fs *fs, const struct tree_attr *a)
{
	if (a->flags & TREE_F_LINKED)
		itab_flags(fs, a->ino, INODE_LINKED, 0);
}

static pthread_mutex_t *open_stripe(struct fs *fs, uint64_t ino)
{
	return &fs->open_stripe[ino % FS_STRIPES];
}

/* ---- attributes --------------------------------------------------------- */

static int fs_do_getattr(struct fs *fs, uint64_t ino, struct tree_attr *a)
{
	struct fs_path p = {0};
	int rc;

	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	do
		rc = tree_getattr(fs->tree, p.path, ino, a);
	while (fs_retry(fs, rc, ino, NULL, &p));
	fs_leave(fs);
	if (!rc)
		note_attr(fs, a);
out:
	fs_path_release(&p);
	return rc;
}

/*
 * fs_enter() for child @name of @parent, and its attributes in *a (looked up
 * again if a concurrent rename moved it). On 0 the caller is inside and
 * calls fs_leave(); on an error it is not.
 */
static int enter_child(struct fs *fs, uint64_t parent, const char *name,
		       struct fs_path *p, struct tree_attr *a)
{
	int rc;

	rc = fs_enter(fs, parent, name, p);
	if (rc)
		return rc;
	do
		rc = tree_lookup(fs->tree, p->path, a);
	while (fs_retry(fs, rc, parent, name, p));
	if (rc)
		fs_leave(fs);
	return rc;
}

/*
 * LOOKUP of "." in node @ino: the kernel asks for a node id it holds no
 * inode for (a file handle: open_by_handle_at, an NFS export), so the table
 * may not know it either: the store finds it by number (tree_find_ino) and
 * the table learns its path (itab_lookup_path; a hard-linked inode is
 * addressed by number). Counts one lookup. A number that leads nowhere (the
 * node was removed) is -ESTALE, never another node.
 */
static int lookup_dot(struct fs *fs, uint64_t ino, struct tree_attr *a)
{
	struct fs_path p = {0};
	char *path = NULL;
	uint64_t got = 0;
	int rc, tries = 0;

	rc = fs_do_getattr(fs, ino, a);
	if (rc == 0 && itab_ref(fs, ino) == 0)
		return 0; /* known: counted where it is */
	do {
		free(path);
		path = NULL;
		rc = fs_enter(fs, TREE_ROOT_INO, NULL, &p);
		if (rc)
			break;
		rc = tree_find_ino(fs->tree, ino, &path, a);
		if (rc == 0 && path) {
			rc = itab_lookup_path(fs, path, &got);
			if (rc == 0 && got != ino) {
				/* renamed over meanwhile: not ours to count */
				uint64_t r = itab_forget(fs, got, 1);

				if (r)
					plog(LOG_WARNING, "lookup by number: "
					     "inode %llu left an orphan",
					     (unsigned long long)r);
				rc = -ENOENT;
			}
		} else if (rc == 0) {
			rc = itab_lookup(fs, ino, 0, "", a->flags);
		}
		fs_leave(fs);
		/* an ancestor renamed in the same moment: once more */
	} while (rc == -ENOENT && ++tries < 2);
	free(path);
	fs_path_release(&p);
	return rc == -ENOENT || rc == -EOPNOTSUPP ? -ESTALE : rc;
}

/*
 * LOOKUP of ".." in folder @ino: its parent folder (file handles: the
 * kernel reconnects a folder found by number to the tree). Counts one
 * lookup of the parent.
 */
static int lookup_dotdot(struct fs *fs, uint64_t ino, struct tree_attr *a)
{
	struct fs_path p = {0};
	uint64_t got;
	char *slash;
	int rc;

	rc = fs_enter_path(fs, ino, &p);
	if (rc)
		goto out;
	slash = strrchr(p.buf, '/');
	if (slash == p.buf)
		slash[1] = '\0'; /* a folder of the root, or the root itself */
	else
		*slash = '\0';
	rc = tree_lookup(fs->tree, p.buf, a);
	if (rc == 0 && a->ino != TREE_ROOT_INO) {
		rc = itab_lookup_path(fs, p.buf, &got);
		if (rc == 0 && got != a->ino) {
			itab_forget(fs, got, 1);
			rc = -ENOENT;
		}
	}
	fs_leave(fs);
out:
	fs_path_release(&p);
	return rc == -ENOENT ? -ESTALE : rc;
}

static int fs_do_lookup(struct fs *fs, uint64_t parent, const char *name,
			struct fuse_entry_param *e)
{
	struct tree_attr a;
	struct fs_path p = {0};
	int rc;

	if (!strcmp(name, ".") || !strcmp(name, "..")) {
		rc = name[1] ? lookup_dotdot(fs, parent, &a)
			     : lookup_dot(fs, parent, &a);
		if (rc == 0)
			fill_entry(fs, &a, e);
		return rc;
	}
	if (strlen(name) > TREE_NAME_MAX)
		return -ENAMETOOLONG;
	rc = enter_child(fs, parent, name, &p, &a);
	if (!rc) {
		rc = itab_lookup(fs, a.ino, parent, name, a.flags);
		fs_leave(fs);
	}
	fs_path_release(&p);
	/* the name is not over-long, so the path is: nothing can be there */
	if (rc == -ENAMETOOLONG)
		rc = -ENOENT;
	if (rc == -ENOENT) {
		/* cached negative entry: the kernel remembers the miss */
		memset(e, 0, sizeof(*e));
		e->entry_timeout = fs->timeout;
		rc = 0;
		goto out;
	}
	if (!rc)
		fill_entry(fs, &a, e);
out:
	return rc;
}

static void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	int rc = fs_do_lookup(req_fs(req), parent, name, &e);

	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_entry(req, &e);
}

static void reclaim(struct fs *fs, uint64_t ino)
{
	int rc;

	if (!ino)
		return;
	rc = tree_reclaim(fs->tree, ino);
	if (rc && rc != -ENOENT)
		plog(LOG_ERR, "reclaim of orphan inode %llu: %s",
		     (unsigned long long)ino, strerror(-rc));
}

static void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct fs *fs = req_fs(req);

	reclaim(fs, itab_forget(fs, ino, nlookup));
	fuse_reply_none(req);
}

static void fs_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	struct fs *fs = req_fs(req);
	size_t i;

	for (i = 0; i < count; i++)
		reclaim(fs,
			itab_forget(fs, forgets[i].ino, forgets[i].nlookup));
	fuse_reply_none(req);
}

static void fs_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct tree_attr a;
	struct stat st;
	int rc = fs_do_getattr(fs, ino, &a);

	if (rc) {
		reply_err(req, rc);
		return;
	}
	tree_attr_to_stat(fs->tree, &a, &st);
	st.st_ino = ino;
	fuse_reply_attr(req, &st, fs->timeout);
}

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * NS_PER_S + ts->tv_nsec;
}

/*
 * The set-user-ID and set-group-ID bits that a change by the caller of @req
 * clears, by ext4's rule (the VFS's setattr_should_drop_suidgid() and
 * chown_common()): set-user-ID always; set-group-ID when group-executable or
 * when the caller is neither in the file's group nor root. A change of
 * content (@chown false) by root clears nothing (CAP_FSETID); a chown
 * (@chown true) clears set-user-ID and a group-executable set-group-ID even
 * for root.
 */
static mode_t privs_to_clear_by(fuse_req_t req, const struct tree_attr *a,
				bool chown)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	bool root = c->uid == 0;
	mode_t kill = 0;

	if (!(a->mode & (S_ISUID | S_ISGID)) || (root && !chown))
		return 0;
	if (a->mode & S_ISUID)
		kill |= S_ISUID;
	if ((a->mode & S_ISGID) && !(a->mode & S_IXGRP) && !root &&
	    c->gid != a->gid) {
		gid_t groups[256];
		int n = fuse_req_getgroups(req, 256, groups);
		bool in = false;

		for (int i = 0; i < n && i < 256; i++)
			in = in || groups[i] == a->gid;
		if (!in)
			kill |= S_ISGID;
	} else if ((a->mode & S_ISGID) && (a->mode & S_IXGRP)) {
		kill |= S_ISGID;
	}
	return kill;
}

/* The bits a change of content (write, truncate, open(O_TRUNC), fallocate)
 * by the caller of @req clears. */
static mode_t privs_to_clear(fuse_req_t req, const struct tree_attr *a)
{
	return privs_to_clear_by(req, a, false);
}

/* Clears mode bits @kill of @ino (after a change of content); *a gets the
 * result. The kernel forgets the mode it has cached. A failure is logged:
 * the change of content itself stands. */
static void clear_privs(struct fs *fs, uint64_t ino, mode_t kill,
			struct tree_attr *a)
{
	struct tree_attr in;
	struct fs_path p = {0};
	int rc;

	memset(&in, 0, sizeof(in));
	in.mode = a->mode & ~kill;
	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	do
		rc = tree_setattr(fs->tree, p.path, ino, &in, TREE_SET_MODE,
				  a);
	while (fs_retry(fs, rc, ino, NULL, &p));
	fs_leave(fs);
out:
	fs_path_release(&p);
	if (rc)
		plog(LOG_WARNING, "inode %llu: clearing set-user/group-ID: %s",
		     (unsigned long long)ino, strerror(-rc));
	else if (fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
}

static int fs_do_setattr(struct fs *fs, uint64_t ino, const struct stat *st,
			 int to_set, struct tree_attr *out)
{
	struct tree_attr in;
	unsigned mask = 0;
	struct fs_path p = {0};
	int rc;

	memset(&in, 0, sizeof(in));
	if (to_set & FUSE_SET_ATTR_MODE) {
		in.mode = st->st_mode;
		mask |= TREE_SET_MODE;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		in.uid = st->st_uid;
		mask |= TREE_SET_UID;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		in.gid = st->st_gid;
		mask |= TREE_SET_GID;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		in.size = st->st_size;
		mask |= TREE_SET_SIZE;
	}
	if (to_set & FUSE_SET_ATTR_ATIME) {
		in.atime_ns = (to_set & FUSE_SET_ATTR_ATIME_NOW)
				  ? tree_now_ns()
				  : ts_ns(&st->st_atim);
		mask |= TREE_SET_ATIME;
	}
	if (to_set & FUSE_SET_ATTR_MTIME) {
		in.mtime_ns = (to_set & FUSE_SET_ATTR_MTIME_NOW)
				  ? tree_now_ns()
				  : ts_ns(&st->st_mtim);
		mask |= TREE_SET_MTIME;
	}
	if (to_set & FUSE_SET_ATTR_CTIME) {
		in.ctime_ns = ts_ns(&st->st_ctim);
		mask |= TREE_SET_CTIME;
	}
	if (!mask)
		return fs_do_getattr(fs, ino, out);
	if (fs->ro)
		return -EROFS;
	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	do
		rc = tree_setattr(fs->tree, p.path, ino, &in, mask, out);
	while (fs_retry(fs, rc, ino, NULL, &p));
	fs_leave(fs);
	if (!rc)
		note_attr(fs, out);
out:
	fs_path_release(&p);
	return rc;
}

static void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct tree_attr a;
	struct stat st;
	int rc;

	if ((to_set & FUSE_SET_ATTR_KILL_SUID) &&
	    (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) &&
	    !(to_set & FUSE_SET_ATTR_MODE)) {
		/* a chown under HANDLE_KILLPRIV_V2 (devio.c): the kernel sends
		 * FATTR_KILL_SUIDGID (libfuse's KILL_SUID bit) instead of the
		 * cleared mode; the mode goes in the same change as the owner.
		 * The kernel holds the inode's lock across a setattr, so no
		 * chmod comes in between. */
		mode_t kill;

		rc = fs_do_getattr(fs, ino, &a);
		if (rc) {
			reply_err(req, rc);
			return;
		}
		if (!S_ISDIR(a.mode) && (kill = privs_to_clear_by(req, &a, true))) {
			attr->st_mode = a.mode & ~kill;
			to_set |= FUSE_SET_ATTR_MODE;
		}
	}
	rc = fs_do_setattr(fs, ino, attr, to_set, &a);
	if (rc) {
		reply_err(req, rc);
		return;
	}
	if ((to_set & FUSE_SET_ATTR_SIZE) && !(to_set & FUSE_SET_ATTR_MODE)) {
		mode_t kill = privs_to_clear(req, &a);
		if (kill)
			clear_privs(fs, ino, kill, &a);
	}
	tree_attr_to_stat(fs->tree, &a, &st);
	st.st_ino = ino;
	fuse_reply_attr(req, &st, fs->timeout);
}

/*
 * Checks that @p, the path of @ino built from the table's place (an inode
 * with one name), still leads to @ino. Errors: -ENOENT, and those of
 * tree_lookup().
 */
static int place_check(struct fs *fs, uint64_t ino, const struct fs_path *p)
{
	struct tree_attr a;
	int rc;

	rc = tree_lookup(fs->tree, p->path, &a);
	if (!rc && a.ino != ino)
		rc = -ENOENT;
	return rc == -ENOTDIR ? -ENOENT : rc;
}

static int fs_do_readlink(struct fs *fs, uint64_t ino, char **target)
{
	struct fs_path p = {0};
	int rc;

	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	if (p.path) {
		do
			rc = tree_readlink(fs->tree, p.path, target);
		while (fs_retry(fs, rc, ino, NULL, &p));
	} else {
		/* a hard-linked symlink: its INODE record holds the target */
		rc = tree_readlink_ino(fs->tree, ino, target);
	}
	fs_leave(fs);
out:
	fs_path_release(&p);
	return rc;
}

static void fs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char *target = NULL;
	int rc = fs_do_readlink(req_fs(req), ino, &target);

	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_readlink(req, target);
	free(target);
}

/* ---- creating nodes ----------------------------------------------------- */

/*
 * Creates @name in @parent. Owner from the request; in a set-group-ID folder
 * the group is the folder's and a new folder inherits the bit.
 */
static int fs_do_mknode(struct fs *fs, const struct fuse_ctx *ctx,
			uint64_t parent, const char *name, mode_t mode,
			uint64_t rdev, const char *target, struct tree_attr *a)
{
	struct fs_path p = {0};
	int rc;

	if (fs->ro)
		return -EROFS;
	if (strlen(name) > TREE_NAME_MAX)
		return -ENAMETOOLONG;
	rc = fs_enter(fs, parent, name, &p);
	if (rc)
		goto out;
	/* tree_mknode gives a set-group-ID folder's group (and bit) */
	do
		rc = tree_mknode(fs->tree, p.path, mode, ctx->uid, ctx->gid,
				 rdev, target, a);
	while (fs_retry(fs, rc, parent, name, &p));
	if (!rc)
		rc = itab_lookup(fs, a->ino, parent, name, a->flags);
	fs_leave(fs);
out:
	fs_path_release(&p);
	return rc;
}

static void reply_made(fuse_req_t req, int rc, const struct tree_attr *a)
{
	struct fuse_entry_param e;

	if (rc) {
		reply_err(req, rc);
		return;
	}
	fill_entry(req_fs(req), a, &e);
	fuse_reply_entry(req, &e);
}

static void fs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct tree_attr a;
	int rc;

	if ((S_ISCHR(mode) || S_ISBLK(mode)) && ctx->uid != 0)
		rc = -EPERM;
	else if (!S_ISREG(mode) && !S_ISFIFO(mode) && !S_ISSOCK(mode) &&
		 !S_ISCHR(mode) && !S_ISBLK(mode))
		rc = -EINVAL;
	else
		rc = fs_do_mknode(req_fs(req), ctx, parent, name, mode,
				  (S_ISCHR(mode) || S_ISBLK(mode)) ? rdev : 0,
				  NULL, &a);
	reply_made(req, rc, &a);
}

static void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	struct tree_attr a;
	int rc = fs_do_mknode(req_fs(req), fuse_req_ctx(req), parent, name,
			      (mode & 07777) | S_IFDIR, 0, NULL, &a);

	reply_made(req, rc, &a);
}

static void fs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	struct tree_attr a;
	int rc;

	if (strlen(link) > TREE_SYMLINK_MAX)
		rc = -ENAMETOOLONG;
	else
		rc = fs_do_mknode(req_fs(req), fuse_req_ctx(req), parent, name,
				  S_IFLNK | 0777, 0, link, &a);
	reply_made(req, rc, &a);
}

static int fs_do_link(struct fs *fs, uint64_t ino, uint64_t newparent,
		      const char *newname, struct tree_attr *a)
{
	struct fs_path *p1 = NULL, *p2 = NULL;
	int rc;

	if (fs->ro)
		return -EROFS;
	if (strlen(newname) > TREE_NAME_MAX)
		return -ENAMETOOLONG;
	p1 = calloc(1, sizeof(*p1));
	p2 = calloc(1, sizeof(*p2));
	if (!p1 || !p2) {
		rc = -ENOMEM;
		goto out;
	}
	rc = fs_enter(fs, newparent, newname, p2);
	if (rc)
		goto out;
	/* an O_TMPFILE file gets its first name (the kernel let it: not
	 * opened O_EXCL) and is no longer an orphan */
	if (itab_has_flag(fs, ino, INODE_TMPFILE)) {
		rc = tree_link_tmp(fs->tree, ino, p2->path, a);
		if (!rc)
			itab_flags(fs, ino, 0, INODE_ORPHAN | INODE_TMPFILE);
		goto counted;
	}
	/*
	 * An inode linked already is found by number, whichever of its names
	 * remain; one with a single name (-ENOENT: no INODE record) by that.
	 * That name must not be inside a branch a folder rename is copying:
	 * a copy made before the link would keep the node as it was (not a
	 * hard-link stub) while the INODE record counts it as a link. So the
	 * subtree lock is taken again for both paths.
	 */
	rc = tree_link_ino(fs->tree, ino, p2->path, a);
	if (rc == -ENOENT) {
		fs_leave(fs);
		rc = fs_enter2(fs, ino, NULL, p1, newparent, newname, p2);
		if (rc)
			goto out;
		rc = place_check(fs, ino, p1);
		if (!rc)
			rc = tree_link(fs->tree, p1->path, p2->path, a);
	}
counted:
	if (!rc)
		rc = itab_lookup(fs, a->ino, newparent, newname, a->flags);
	fs_leave(fs);
out:
	fs_path_release(p1);
	fs_path_release(p2);
	free(p1);
	free(p2);
	return rc;
}

static void fs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	struct tree_attr a;
	int rc = fs_do_link(req_fs(req), ino, newparent, newname, &a);

	reply_made(req, rc, &a);
}

/* ---- removing and renaming ---------------------------------------------- */

/*
 * After the node @a (before the change) lost its name @name in @parent: the
 * store kept it as orphan @orphan (it was in use), or a hard-linked inode
 * with links left lives on by number (and under its other names), or it is
 * gone and its entry is stale. An orphan the kernel let go of meanwhile is
 * reclaimed here.
 */
static void lost_name(struct fs *fs, const struct tree_attr *a, uint64_t parent,
		      const char *name, uint64_t orphan)
{
	if (orphan) {
		reclaim(fs, itab_orphaned(fs, orphan));
	} else if ((a->flags & TREE_F_LINKED) && a->nlink > 1 &&
		   !S_ISDIR(a->mode)) {
		itab_flags(fs, a->ino, INODE_LINKED, 0);
		itab_unplace(fs, a->ino, parent, name);
	} else {
		itab_flags(fs, a->ino, INODE_STALE, 0);
	}
}

/*
 * unlink (@dir false) and rmdir (@dir true) of @name in @parent. A node the
 * kernel still knows or has open becomes an orphan: it keeps answering by
 * number until its last FORGET and release (a node id lives until FORGET).
 */
static int fs_do_remove(struct fs *fs, uint64_t parent, const char *name,
			bool dir)
{
	uint64_t orphan = 0;
	struct tree_attr a;
	struct fs_path p = {0};
	pthread_mutex_t *m;
	unsigned flags;
	int rc;

	if (fs->ro)
		return -EROFS;
	rc = enter_child(fs, parent, name, &p, &a);
	if (rc)
		goto out;
	m = open_stripe(fs, a.ino);
	pthread_mutex_lock(m);
	/* a request on the inode that fails meanwhile waits to see it orphaned
	 * (fs_retry); it is marked before an open waiting on the stripe looks */
	fs_rename_start(fs);
	flags = itab_in_use(fs, a.ino) ? TREE_KEEP_ORPHAN : 0;
	rc = dir ? tree_rmdir_flags(fs->tree, p.path, flags, &orphan)
		 : tree_unlink(fs->tree, p.path, flags, &orphan);
	if (!rc)
		lost_name(fs, &a, parent, name, orphan);
	fs_rename_done(fs);
	pthread_mutex_unlock(m);
	fs_leave(fs);
out:
	fs_path_release(&p);
	return rc;
}

static void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, -fs_do_remove(req_fs(req), parent, name, false));
}

static void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, -fs_do_remove(req_fs(req), parent, name, true));
}

/* Moves the table's name of @a from parent/name to newparent/newname. */
static void moved(struct fs *fs, const struct tree_attr *a, uint64_t parent,
		  const char *name, uint64_t newparent, const char *newname)
{
	if ((a->flags & TREE_F_LINKED) && !S_ISDIR(a->mode))
		itab_replace_place(fs, a->ino, parent, name, newparent,
				   newname);
	else
		itab_move(fs, a->ino, newparent, newname);
}

/* The table after a successful rename of @sa (at parent/name) to
 * newparent/newname, which held @da (ino 0: nothing). */
static void renamed(struct fs *fs, const struct tree_attr *sa,
		    const struct tree_attr *da, unsigned flags, uint64_t parent,
		    const char *name, uint64_t newparent, const char *newname,
		    uint64_t orphan)
{
	if (da->ino == sa->ino)
		return; /* two links of one inode: nothing moved */
	if (da->ino && !(flags & TREE_RENAME_EXCHANGE))
		lost_name(fs, da, newparent, newname, orphan);
	moved(fs, sa, parent, name, newparent, newname);
	if (da->ino && (flags & TREE_RENAME_EXCHANGE))
		moved(fs, da, newparent, newname, parent, name);
}

static int fs_do_rename(struct fs *fs, uint64_t parent, const char *name,
			uint64_t newparent, const char *newname,
			unsigned int flags)
{
	struct fs_path *p1 = NULL, *p2 = NULL;
	struct tree_attr sa, da;
	unsigned tflags = 0;
	uint64_t orphan = 0;
	struct busy *b = NULL;
	pthread_mutex_t *m = NULL;
	bool entered = false;
	int rc;

	if (fs->ro)
		return -EROFS;
	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL; /* RENAME_WHITEOUT and unknown flags */
	if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))
		return -EINVAL;
	if (strlen(newname) > TREE_NAME_MAX)
		return -ENAMETOOLONG;
	if (flags & RENAME_NOREPLACE)
		tflags |= TREE_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		tflags |= TREE_RENAME_EXCHANGE;
	p1 = calloc(1, sizeof(*p1));
	p2 = calloc(1, sizeof(*p2));
	if (!p1 || !p2) {
		rc = -ENOMEM;
		goto out;
	}
	rc = fs_enter2(fs, parent, name, p1, newparent, newname, p2);
	if (rc)
		goto out;
	entered = true;
	rc = tree_lookup(fs->tree, p1->path, &sa);
	if (rc)
		goto out;
	rc = tree_lookup(fs->tree, p2->path, &da);
	if (rc == -ENOENT)
		memset(&da, 0, sizeof(da));
	else if (rc)
		goto out;
	rc = 0;

	if (S_ISDIR(sa.mode) || (da.ino && S_ISDIR(da.mode))) {
		/*
		 * A folder: its rename may rewrite a whole branch. Hold the
		 * two branches busy (requests inside them wait) and run it
		 * with no lock held, so the rest of the drive keeps going.
		 */
		fs_leave(fs);
		entered = false;
		rc = fs_busy_begin(fs, parent, name, p1, newparent, newname, p2,
				   &b);
		if (rc)
			goto out;
		/* the branches are ours now: look again, things may have
		 * changed while we were not holding anything */
		rc = tree_lookup(fs->tree, p1->path, &sa);
		if (!rc) {
			rc = tree_lookup(fs->tree, p2->path, &da);
			if (rc == -ENOENT) {
				memset(&da, 0, sizeof(da));
				rc = 0;
			}
		}
		if (!rc) {
			if (da.ino && !(tflags & TREE_RENAME_EXCHANGE) &&
			    itab_in_use(fs, da.ino))
				tflags |= TREE_KEEP_ORPHAN;
			rc = tree_rename(fs->tree, p1->path, p2->path, tflags,
					 &orphan);
		}
		fs_busy_lock(fs);
		if (!rc)
			renamed(fs, &sa, &da, tflags, parent, name, newparent,
				newname, orphan);
		fs_busy_end(fs, b);
		goto out;
	}

	if (da.ino && !(tflags & TREE_RENAME_EXCHANGE)) {
		m = open_stripe(fs, da.ino);
		pthread_mutex_lock(m);
		if (itab_in_use(fs, da.ino))
			tflags |= TREE_KEEP_ORPHAN;
	}
	fs_rename_start(fs);
	rc = tree_rename(fs->tree, p1->path, p2->path, tflags, &orphan);
	if (!rc)
		renamed(fs, &sa, &da, tflags, parent, name, newparent, newname,
			orphan);
	if (m)
		pthread_mutex_unlock(m);
	fs_rename_done(fs);
out:
	if (entered)
		fs_leave(fs);
	fs_path_release(p1);
	fs_path_release(p2);
	free(p1);
	free(p2);
	return rc;
}

static void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	int rc =
	    fs_do_rename(req_fs(req), parent, name, newparent, newname, flags);

	fuse_reply_err(req, rc < 0 ? -rc : 0);
}

/* ---- files -------------------------------------------------------------- */

static int fs_do_open(struct fs *fs, uint64_t ino, int flags, struct fh **out)
{
	pthread_mutex_t *m = open_stripe(fs, ino);
	struct tree_attr in, a;
	struct fh *fh;
	struct fs_path p = {0};
	int rc;

	if (fs->ro && ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)))
		return -EROFS;
	fh = calloc(1, sizeof(*fh));
	if (!fh)
		return -ENOMEM;
	fh->ino = ino;
	fh->append = (flags & O_APPEND) && !fs->writeback;
	/* counted open before any unlink can look: see fs_do_remove() */
	pthread_mutex_lock(m);
	rc = itab_open(fs, ino);
	pthread_mutex_unlock(m);
	if (rc)
		goto out;
	if (flags & O_TRUNC) {
		memset(&in, 0, sizeof(in));
		rc = fs_enter(fs, ino, NULL, &p);
		if (!rc) {
			do
				rc = tree_setattr(fs->tree, p.path, ino, &in,
						  TREE_SET_SIZE, &a);
			while (fs_retry(fs, rc, ino, NULL, &p));
			fs_leave(fs);
		}
		fs_path_release(&p);
		if (rc) {
			reclaim(fs, itab_close(fs, ino));
			goto out;
		}
	}
	*out = fh;
	fh = NULL;
out:
	free(fh);
	return rc;
}

static void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fh *fh = NULL;
	int rc = fs_do_open(fs, ino, fi->flags, &fh);

	if (rc) {
		reply_err(req, rc);
		return;
	}
	if ((fi->flags & O_TRUNC) && !fs->ro) {
		/* a truncate by open(O_TRUNC): a change of content too */
		struct tree_attr a;
		mode_t kill;

		if (!fs_do_getattr(fs, ino, &a) &&
		    (kill = privs_to_clear(req, &a)))
			clear_privs(fs, ino, kill, &a);
	}
	fi->fh = (uintptr_t)fh;
	/* pages a direct write went past are dropped by this open; with
	 * strictatime every read must reach us to be an access */
	fi->keep_cache = !itab_take_flag(fs, ino, INODE_PAGES_STALE) &&
			 !fs->strictatime;
	if (fuse_reply_open(req, fi) == -ENOENT) {
		/* interrupted: the kernel will not release it */
		reclaim(fs, itab_close(fs, ino));
		free(fh);
	}
}

static void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fuse_entry_param e;
	struct tree_attr a;
	struct fh *fh = NULL;
	int rc;

	rc = fs_do_mknode(fs, fuse_req_ctx(req), parent, name,
			  (mode & 07777) | S_IFREG, 0, NULL, &a);
	if (rc == -EEXIST && !(fi->flags & O_EXCL)) {
		/* created meanwhile by someone else: open it */
		rc = fs_do_lookup(fs, parent, name, &e);
		if (!rc && !e.ino)
			rc = -ENOENT;
		if (!rc && S_ISDIR(e.attr.st_mode)) {
			reclaim(fs, itab_forget(fs, e.ino, 1));
			rc = -EISDIR;
		}
		if (!rc) {
			rc = fs_do_open(fs, e.ino, fi->flags, &fh);
			if (rc)
				reclaim(fs, itab_forget(fs, e.ino, 1));
		}
		if (!rc && (fi->flags & O_TRUNC))
			rc = fs_do_getattr(fs, e.ino, &a);
		if (!rc && !(fi->flags & O_TRUNC))
			goto reply;
	} else if (!rc) {
		rc = fs_do_open(fs, a.ino, fi->flags & ~O_TRUNC, &fh);
		if (rc)
			reclaim(fs, itab_forget(fs, a.ino, 1));
	}
	if (rc) {
		reply_err(req, rc);
		return;
	}
	fill_entry(fs, &a, &e);
reply:
	fi->fh = (uintptr_t)fh;
	fi->keep_cache = 1;
	if (fuse_reply_create(req, &e, fi) == -ENOENT) {
		reclaim(fs, itab_close(fs, e.ino));
		reclaim(fs, itab_forget(fs, e.ino, 1));
		free(fh);
	}
}

/* ---- O_TMPFILE ------------------------------------------------------------ */

/*
 * open(O_TMPFILE) in folder @parent: a new regular file that is an orphan
 * from birth (tree_mktmp: nlink 0, addressed by number, reclaimed at its
 * last close and FORGET, or at the next mount after a crash), opened, its
 * entry counted as one lookup. Owner and set-group-ID folders as for
 * fs_do_mknode(). linkat(2) may name it later (fs_do_link, INODE_TMPFILE).
 */
static int fs_do_tmpfile(struct fs *fs, uid_t uid, gid_t gid, uint64_t parent,
			 mode_t mode, int flags, struct tree_attr *a,
			 struct fh **fh)
{
	struct tree_attr pa;
	struct fs_path p = {0};
	int rc;

	if (fs->ro)
		return -EROFS;
	rc = fs_enter(fs, parent, NULL, &p);
	if (rc)
		goto out;
	do {
		rc = p.path ? tree_lookup(fs->tree, p.path, &pa) : -ENOTDIR;
		if (!rc && (pa.mode & S_ISGID))
			gid = pa.gid;
		if (!rc)
			rc = tree_mktmp(fs->tree, p.path, mode, uid, gid, a);
	} while (fs_retry(fs, rc, parent, NULL, &p));
	if (!rc)
		rc = itab_lookup(fs, a->ino, 0, "", a->flags);
	if (!rc)
		itab_flags(fs, a->ino, INODE_ORPHAN | INODE_TMPFILE, 0);
	fs_leave(fs);
	if (rc)
		goto out;
	rc = fs_do_open(fs, a->ino, flags & ~O_TRUNC, fh);
	if (rc)
		reclaim(fs, itab_forget(fs, a->ino, 1));
out:
	fs_path_release(&p);
	return rc;
}

static void attr_out(const struct stat *st, struct fuse_attr *o)
{
	memset(o, 0, sizeof(*o));
	o->ino = st->st_ino;
	o->mode = st->st_mode;
	o->nlink = (uint32_t)st->st_nlink;
	o->uid = st->st_uid;
	o->gid = st->st_gid;
	o->rdev = (uint32_t)st->st_rdev;
	o->size = (uint64_t)st->st_size;
	o->blocks = (uint64_t)st->st_blocks;
	o->blksize = (uint32_t)st->st_blksize;
	o->atime = (uint64_t)st->st_atim.tv_sec;
	o->atimensec = (uint32_t)st->st_atim.tv_nsec;
	o->mtime = (uint64_t)st->st_mtim.tv_sec;
	o->mtimensec = (uint32_t)st->st_mtim.tv_nsec;
	o->ctime = (uint64_t)st->st_ctim.tv_sec;
	o->ctimensec = (uint32_t)st->st_ctim.tv_nsec;
}

static void timeout_out(double t, uint64_t *sec, uint32_t *nsec)
{
	*sec = (uint64_t)t;
	*nsec = (uint32_t)((t - (double)*sec) * 1e9);
}

/*
 * FUSE_TMPFILE (kernel 6.x; libfuse 3.14 answers ENOSYS, and the kernel
 * then refuses O_TMPFILE with EOPNOTSUPP for good): the request is CREATE's
 * (fuse_create_in and a name, "/" from the VFS, ignored) and so is the
 * reply, an entry and an open. Written to the device here, past libfuse,
 * which never sees the request: it keeps no state for it (an INTERRUPT of
 * it finds nothing to interrupt; the request is answered at once anyway).
 * The entry says nlink 0, as the kernel takes it: linkat(2) may then name
 * the file only if it was not opened O_EXCL (the VFS's I_LINKABLE).
 */
bool fs_raw_request(struct fs *fs, struct fuse_session *se, const void *buf,
		    size_t len)
{
	const struct fuse_in_header *in = buf;
	const struct fuse_create_in *ci;
	struct {
		struct fuse_out_header h;
		struct fuse_entry_out e;
		struct fuse_open_out o;
	} out;
	struct fuse_entry_param e;
	struct tree_attr a;
	struct fh *fh = NULL;
	ssize_t n;
	int rc;

	if (len < sizeof(*in) || in->opcode != FUSE_TMPFILE)
		return false;
	memset(&out, 0, sizeof(out));
	out.h.unique = in->unique;
	ci = (const void *)(in + 1);
	if (len < sizeof(*in) + sizeof(*ci))
		rc = -EINVAL;
	else
		rc = fs_do_tmpfile(fs, in->uid, in->gid, in->nodeid,
				   ci->mode, (int)ci->flags, &a, &fh);
	if (rc) {
		out.h.error = rc < 0 && rc > -4096 ? rc : -EIO;
		out.h.len = sizeof(out.h);
	} else {
		fill_entry(fs, &a, &e);
		out.e.nodeid = e.ino;
		out.e.generation = e.generation;
		timeout_out(e.entry_timeout, &out.e.entry_valid,
			    &out.e.entry_valid_nsec);
		timeout_out(e.attr_timeout, &out.e.attr_valid,
			    &out.e.attr_valid_nsec);
		attr_out(&e.attr, &out.e.attr); /* nlink 0: no name */
		out.o.fh = (uintptr_t)fh;
		out.h.len = sizeof(out);
	}
	n = write(fuse_session_fd(se), &out, out.h.len);
	if (n != (ssize_t)out.h.len && !rc) {
		/* not delivered (the caller was interrupted): undo */
		plog(LOG_DEBUG, "tmpfile reply not delivered: %s",
		     n < 0 ? strerror(errno) : "short write");
		reclaim(fs, itab_close(fs, a.ino));
		reclaim(fs, itab_forget(fs, a.ino, 1));
		free(fh);
	}
	return true;
}

/*
 * relatime: once per open, after the first read (for a folder: the listing
 * from its start), atime is set to now if it is not newer than mtime or
 * ctime, or is a day old. Never a write per read. With -o strictatime: every
 * read, always.
 */
static void touch_atime(struct fs *fs, uint64_t ino)
{
	struct tree_attr a, in;
	struct fs_path p = {0};
	int64_t now;
	int rc;

	rc = fs_do_getattr(fs, ino, &a);
	if (rc)
		return;
	now = tree_now_ns();
	if (!fs->strictatime && a.atime_ns > a.mtime_ns &&
	    a.atime_ns > a.ctime_ns && now - a.atime_ns < ATIME_STALE_NS)
		return;
	memset(&in, 0, sizeof(in));
	in.atime_ns = now;
	in.ctime_ns = a.ctime_ns; /* atime alone does not change ctime */
	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	do
		rc = tree_setattr(fs->tree, p.path, ino, &in,
				  TREE_SET_ATIME | TREE_SET_CTIME, NULL);
	while (fs_retry(fs, rc, ino, NULL, &p));
	fs_leave(fs);
	if (!rc && fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
out:
	fs_path_release(&p);
}

static int fs_do_read(struct fs *fs, uint64_t ino, size_t size, off_t off,
		      char *buf, size_t *nread)
{
	struct fs_path p = {0};
	int rc;

	if (off < 0)
		return -EINVAL;
	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	do
		rc = tree_read(fs->tree, p.path, ino, off, size, buf, nread);
	while (fs_retry(fs, rc, ino, NULL, &p));
	fs_leave(fs);
out:
	fs_path_release(&p);
	return rc;
}

static void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fh *fh = (struct fh *)(uintptr_t)fi->fh;
	size_t n = 0;
	char *buf = malloc(size ? size : 1);
	bool atime = false;
	int rc;

	if (!buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	rc = fs_do_read(fs, ino, size, off, buf, &n);
	/* decided now: once replied to, the file may be released (fh freed) */
	if (!rc && fh && (!fh->atime_done || fs->strictatime)) {
		fh->atime_done = true;
		atime = !fs->ro && !fs->noatime;
	}
	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_buf(req, buf, n);
	free(buf);
	/* after the reply: the reader does not wait for it */
	if (atime)
		touch_atime(fs, ino);
}

static int fs_do_write(struct fs *fs, uint64_t ino, const char *buf,
		       size_t size, off_t off, bool append,
		       struct tree_attr *out)
{
	struct fs_path p = {0};
	int rc;

	if (fs->ro)
		return -EROFS;
	if (off < 0)
		return -EINVAL;
	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	do
		rc = tree_write(fs->tree, p.path, ino, off, buf, size, append,
				out);
	while (fs_retry(fs, rc, ino, NULL, &p));
	fs_leave(fs);
out:
	fs_path_release(&p);
	return rc;
}

static void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct fh *fh = (struct fh *)(uintptr_t)fi->fh;
	bool direct = (fi->flags & O_DIRECT) && !fi->writepage;
	struct tree_attr a;
	mode_t kill;
	int rc = fs_do_write(fs, ino, buf, size, off, fh && fh->append, &a);

	if (!rc && (kill = privs_to_clear(req, &a)))
		clear_privs(fs, ino, kill, &a);
	/* before the reply: an open after the write must see it */
	if (!rc && direct)
		itab_flags(fs, ino, INODE_PAGES_STALE, 0);
	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_write(req, size);
	/* after it: the kernel may hold the pages' locks until it has it;
	 * the invalidation may wait for a READ, which another thread reads */
	if (!rc && direct && fs->se && !fs->single) {
		if (fs->blocking)
			fs->blocking();
		fuse_lowlevel_notify_inval_inode(fs->se, ino, off,
						 (off_t)size);
	}
}

static void fs_release_file(fuse_req_t req, fuse_ino_t ino,
			    struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);

	reclaim(fs, itab_close(fs, ino));
	free((struct fh *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	int rc = fs->ro ? 0 : store_sync(fs->store);

	fuse_reply_err(req, rc < 0 ? -rc : 0);
}

static int fs_do_fallocate(struct fs *fs, uint64_t ino, int mode, off_t off,
			   off_t len, struct tree_attr *out)
{
	unsigned tmode = 0;
	struct fs_path p = {0};
	int rc;

	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE |
		     FALLOC_FL_ZERO_RANGE))
		return -EOPNOTSUPP;
	if (fs->ro)
		return -EROFS;
	if (off < 0 || len <= 0)
		return -EINVAL;
	if (mode & FALLOC_FL_KEEP_SIZE)
		tmode |= TREE_FALLOC_KEEP_SIZE;
	if (mode & FALLOC_FL_PUNCH_HOLE)
		tmode |= TREE_FALLOC_PUNCH_HOLE;
	if (mode & FALLOC_FL_ZERO_RANGE)
		tmode |= TREE_FALLOC_ZERO_RANGE;
	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	do
		rc = tree_fallocate(fs->tree, p.path, ino, tmode, (uint64_t)off,
				    (uint64_t)len, out);
	while (fs_retry(fs, rc, ino, NULL, &p));
	fs_leave(fs);
out:
	fs_path_release(&p);
	return rc;
}

static void fs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
			 off_t len, struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct tree_attr a;
	mode_t kill;
	int rc = fs_do_fallocate(fs, ino, mode, off, len, &a);

	if (!rc && (kill = privs_to_clear(req, &a)))
		clear_privs(fs, ino, kill, &a);
	/* the kernel forgets only the size and times it expects to change */
	if (!rc && fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
	fuse_reply_err(req, rc < 0 ? -rc : 0);
}

static void fs_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi)
{
	struct fs *fs = req_fs(req);
	struct tree_attr a;
	uint64_t res = 0;
	int rc;

	if (whence != SEEK_DATA && whence != SEEK_HOLE) {
		reply_err(req, -EINVAL);
		return;
	}
	if (off < 0) {
		/* as ext4: no data or hole there */
		reply_err(req, -ENXIO);
		return;
	}
	rc = fs_do_getattr(fs, ino, &a);
	if (!rc)
		rc = tree_seek(fs->tree, ino, a.size, off, whence, &res);
	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_lseek(req, (off_t)res);
}

/* ---- folders ------------------------------------------------------------ */

static void fs_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	/*
	 * The kernel keeps listings, shared by all opens of the folder: it
	 * drops them itself when it changes the folder, and fs_ctl_end() when
	 * a pathfsctl command does. Offsets are name cookies (dircookie.h), so
	 * a reader resuming from another open's cached offset resumes at the
	 * right name.
	 */
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/*
 * The child name a request at offset @off (> 2) of folder @ino at @path
 * resumes after: the name the cookie stands for, remembered or found by a
 * scan of the folder; *after is malloc'd, or NULL (list from the first
 * child) if no child has that cookie any more and the table forgot it.
 * Errors: those of tree_dir_open() and tree_dir_next().
 */
static int resume_after(struct fs *fs, uint64_t ino, const char *path,
			off_t off, char **after)
{
	struct tree_dir *it = NULL;
	struct tree_attr a;
	const char *name;
	size_t len;
	int rc;

	*after = dircookies_get(fs->cookies, ino, (uint64_t)off);
	if (*after)
		return 0;
	rc = tree_dir_open(&it, fs->tree, path, NULL);
	while (rc == 0 && (rc = tree_dir_next(it, &name, &len, &a)) > 0) {
		if (dircookie_of(fs->cookies, name, len) == (uint64_t)off) {
			*after = strndup(name, len);
			rc = *after ? 0 : -ENOMEM;
			break;
		}
	}
	tree_dir_free(it);
	return rc < 0 ? rc : 0;
}

static int fs_do_readdir(struct fs *fs, fuse_req_t req, uint64_t ino,
			 size_t size, off_t off, bool plus, char *buf,
			 size_t *used)
{
	const char *name;
	char *after = NULL;
	size_t pos = 0, namelen, n;
	struct tree_dir *it = NULL;
	struct fuse_entry_param e;
	struct tree_attr a;
	struct fs_path p = {0};
	off_t cur = off < 0 ? 0 : off;
	uint64_t cookie;
	int rc;

	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out_free;
	if (!p.path) {
		rc = -ENOTDIR;
		goto out;
	}
	/* "." and "..": offsets 1 and 2, no lookup counted (ino 0 in plus) */
	while (cur < 2) {
		const char *dot = cur == 0 ? "." : "..";

		memset(&e, 0, sizeof(e));
		e.attr.st_ino = cur == 0 ? ino : TREE_ROOT_INO;
		e.attr.st_mode = S_IFDIR;
		if (plus)
			n = fuse_add_direntry_plus(req, buf + pos, size - pos,
						   dot, &e, cur + 1);
		else
			n = fuse_add_direntry(req, buf + pos, size - pos, dot,
					      &e.attr, cur + 1);
		if (n > size - pos)
			goto out;
		pos += n;
		cur++;
	}
	if (cur > 2) {
		rc = resume_after(fs, ino, p.path, cur, &after);
		if (rc)
			goto out;
	}
	rc = tree_dir_open(&it, fs->tree, p.path, after);
	if (rc)
		goto out;
	for (;;) {
		rc = tree_dir_next(it, &name, &namelen, &a);
		if (rc <= 0)
			break;
		fill_entry(fs, &a, &e);
		if (!a.ino)
			e.ino = 0; /* bad record: lookup gives EIO */
		cookie = dircookie_of(fs->cookies, name, namelen);
		if (plus)
			n = fuse_add_direntry_plus(req, buf + pos, size - pos,
						   name, &e, (off_t)cookie);
		else
			n = fuse_add_direntry(req, buf + pos, size - pos, name,
					      &e.attr, (off_t)cookie);
		if (n > size - pos)
			break;
		/* readdirplus entries count as lookups in the kernel */
		if (plus && a.ino &&
		    itab_lookup(fs, a.ino, ino, name, a.flags) < 0) {
			rc = -ENOMEM;
			break;
		}
		dircookies_put(fs->cookies, ino, cookie, name, namelen);
		pos += n;
	}
	if (rc < 0 && pos)
		rc = 0; /* give what fitted; the error comes back next time */
	if (rc > 0)
		rc = 0;
out:
	fs_leave(fs);
out_free:
	fs_path_release(&p);
	tree_dir_free(it);
	free(after);
	*used = pos;
	return rc;
}

static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi, bool plus)
{
	struct fs *fs = req_fs(req);
	size_t used = 0;
	char *buf = malloc(size ? size : 1);
	int rc;

	(void)fi;
	if (!buf) {
		reply_err(req, -ENOMEM);
		return;
	}
	rc = fs_do_readdir(fs, req, ino, size, off, plus, buf, &used);
	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
	/* after the reply, as for reads: a listing from the start is an
	 * access (the kernel answers the listings it keeps itself) */
	if (!rc && off == 0 && !fs->ro && !fs->noatime && !fs->nodiratime)
		touch_atime(fs, ino);
}

static void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, fi, false);
}

static void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, fi, true);
}

static void fs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	fs_fsync(req, ino, datasync, fi);
}

static void fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;
	int rc;

	memset(&st, 0, sizeof(st));
	rc = tree_statfs(req_fs(req)->tree, &st);
	if (rc)
		reply_err(req, rc);
	else
		fuse_reply_statfs(req, &st);
}

/* ---- extended attributes ------------------------------------------------ */

/*
 * Attributes pathfs does not keep, answered EOPNOTSUPP as by a filesystem
 * without them:
 * - POSIX ACLs: the kernel would hand their xattrs to us raw and never
 *   enforce them, and a stored trivial ACL would shadow the mode (cp -a sets
 *   one instead of chmod); tools fall back to chmod.
 * - SELinux labels: FUSE mounts are labelled by policy (genfscon or the
 *   context= mount option), never from xattrs. ls -l asks for the label of
 *   every file it lists, a round trip each, until one answer is EOPNOTSUPP:
 *   then it stops asking for that filesystem.
 */
static bool unsupported_xattr(const char *name)
{
	return !strcmp(name, "system.posix_acl_access") ||
	       !strcmp(name, "system.posix_acl_default") ||
	       !strcmp(name, "security.selinux");
}

/* Sets xattr @name of @ino to @value (@size bytes), or removes it when
 * @value is NULL. */
static int fs_do_setxattr(struct fs *fs, uint64_t ino, const char *name,
			  const char *value, size_t size, int flags)
{
	struct fs_path p = {0};
	int rc;

	if (unsupported_xattr(name))
		return -EOPNOTSUPP;
	if (fs->ro)
		return -EROFS;
	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	do
		rc = value ? tree_setxattr(fs->tree, p.path, ino, name, value,
					   size, flags)
			   : tree_removexattr(fs->tree, p.path, ino, name);
	while (fs_retry(fs, rc, ino, NULL, &p));
	fs_leave(fs);
out:
	fs_path_release(&p);
	return rc;
}

static void fs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	int rc = fs_do_setxattr(req_fs(req), ino, name, value, size, flags);

	fuse_reply_err(req, rc < 0 ? -rc : 0);
}

/* Replies with @val (@len bytes) to a request for @size bytes (0: the size
 * only). */
static void reply_xattr_value(fuse_req_t req, const void *val, size_t len,
			      size_t size)
{
	if (!size)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, val, len);
}

static void fs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	void *val = NULL;
	size_t len = 0;
	int rc = unsupported_xattr(name)
		     ? -EOPNOTSUPP
		     : tree_getxattr(req_fs(req)->tree, ino, name, &val, &len);

	if (rc)
		reply_err(req, rc);
	else
		reply_xattr_value(req, val, len, size);
	free(val);
}

static void fs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *list = NULL;
	size_t len = 0;
	int rc = tree_listxattr(req_fs(req)->tree, ino, &list, &len);

	if (rc)
		reply_err(req, rc);
	else
		reply_xattr_value(req, list, len, size);
	free(list);
}

static void fs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	int rc = fs_do_setxattr(req_fs(req), ino, name, NULL, 0, 0);

	fuse_reply_err(req, rc < 0 ? -rc : 0);
}

/* ---- pathfsctl commands on the mounted drive ---------------------------- */

/* Splits @path into its folder (*dir, malloc'd: caller frees) and last name
 * (returned, borrowed from @path). NULL for "/" and when out of memory. */
static const char *split(const char *path, char **dir)
{
	const char *slash = strrchr(path, '/');

	*dir = NULL;
	if (!slash || !slash[1])
		return NULL;
	*dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
	return *dir ? slash + 1 : NULL;
}

static uint64_t ino_at(struct fs *fs, const char *path)
{
	struct tree_attr a;

	if (!path || tree_lookup(fs->tree, path, &a))
		return 0;
	return a.ino;
}

/* Tells the kernel to forget what it cached about @path (its dentry and its
 * folder's attributes). Not a request handler: safe to call. */
static void inval_path(struct fs *fs, const char *path)
{
	char *dir = NULL;
	const char *name;
	uint64_t parent;

	if (!path || !fs->se || !(name = split(path, &dir)))
		goto out;
	parent = ino_at(fs, dir);
	if (!parent)
		goto out;
	fuse_lowlevel_notify_inval_entry(fs->se, parent, name, strlen(name));
	/* attributes and the cached listing (offset 0, length 0: all) */
	fuse_lowlevel_notify_inval_inode(fs->se, parent, 0, 0);
out:
	free(dir);
}

/*
 * Tells the kernel to forget the attributes of every hard-linked inode it
 * knows: a branch command that removed or cloned one of its names changed its
 * link count, also as seen through names outside the branch.
 */
static void inval_linked(struct fs *fs)
{
	uint64_t *v = NULL;
	size_t i, n = 0;

	if (!fs->se || itab_flagged(fs, INODE_LINKED, &v, &n))
		return;
	for (i = 0; i < n; i++)
		fuse_lowlevel_notify_inval_inode(fs->se, v[i], -1, 0);
	free(v);
}

void fs_ctl_begin(void *ctx, struct tree *t, const char *path,
		  const char *newpath)
{
	struct fs *fs = ctx;

	pthread_mutex_lock(&fs->ctl_mutex);
	fs->ctl_busy = NULL;
	fs->ctl_ino[0] = fs->ctl_ino[1] = 0;
	if (t != fs->tree || !path)
		return;
	if (fs_busy_begin_paths(fs, path, newpath, &fs->ctl_busy)) {
		plog(LOG_ERR, "cannot hold requests off %s: out of memory",
		     path);
		fs->ctl_busy = NULL;
		return;
	}
	fs->ctl_ino[0] = ino_at(fs, path);
	fs->ctl_ino[1] = ino_at(fs, newpath);
}

void fs_ctl_end(void *ctx, struct tree *t, const char *path,
		const char *newpath)
{
	char *dir = NULL;
	struct fs *fs = ctx;
	uint64_t after0, after1, parent;
	const char *name;

	if (!fs->ctl_busy)
		goto inval;
	after0 = ino_at(fs, path);
	after1 = ino_at(fs, newpath);
	fs_busy_lock(fs);
	if (newpath && fs->ctl_ino[0] && after1 == fs->ctl_ino[0] &&
	    (name = split(newpath, &dir)) &&
	    itab_attach_path(fs, dir, &parent) == 0) {
		itab_move(fs, fs->ctl_ino[0], parent, name);
	} else if (fs->ctl_ino[0] && after0 != fs->ctl_ino[0]) {
		/*
		 * The store kept the branch's open files as orphans (the open
		 * check, see main.c) and freed the rest; the open ones are
		 * freed at their last close from now on. One closed while the
		 * command ran stays an orphan until the next mount reclaims it.
		 */
		itab_orphan_open_below(fs, fs->ctl_ino[0]);
		itab_flags(fs, fs->ctl_ino[0], INODE_STALE, 0);
	}
	if (fs->ctl_ino[1] && after1 != fs->ctl_ino[1]) {
		itab_orphan_open_below(fs, fs->ctl_ino[1]);
		itab_flags(fs, fs->ctl_ino[1], INODE_STALE, 0);
	}
	fs_busy_end(fs, fs->ctl_busy);
	fs->ctl_busy = NULL;
inval:
	if (t == fs->tree || newpath) {
		inval_path(fs, path);
		inval_path(fs, newpath);
		inval_linked(fs);
	}
	pthread_mutex_unlock(&fs->ctl_mutex);
	free(dir);
}

/* ---- session ------------------------------------------------------------ */

/*
 * The session ends (unmount): the kernel holds nothing any more, so the
 * orphans it still knew are reclaimed now rather than at the next mount.
 */
static void fs_destroy(void *userdata)
{
	struct fs *fs = userdata;
	uint64_t *v = NULL;
	size_t i, n = 0;

	if (fs->ro || itab_flagged(fs, INODE_ORPHAN, &v, &n))
		return;
	for (i = 0; i < n; i++)
		reclaim(fs, v[i]);
	free(v);
}

static void fs_init_conn(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;

	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	/* always plus: one scan gives names and attributes alike */
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* file handles (open_by_handle_at, NFS export): the kernel asks for
	 * nodes it no longer caches by LOOKUP of "." and ".." (lookup_dot) */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	/* not the first version (the daemon would have to drop
	 * security.capability on every write); HANDLE_KILLPRIV_V2, which
	 * libfuse 3.14 does not know, is negotiated by devio.c */
	conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
	conn->want &= ~FUSE_CAP_POSIX_ACL;
	if (fs->writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* fewer, larger requests: 1 MiB is 16 content blocks */
	conn->max_write = 1024 * 1024;
	conn->max_readahead = 1024 * 1024;
	conn->time_gran = 1;
}

const struct fuse_lowlevel_ops fs_ops = {
    .init = fs_init_conn,
    .destroy = fs_destroy,
    .lookup = fs_lookup,
    .forget = fs_forget,
    .forget_multi = fs_forget_multi,
    .getattr = fs_getattr,
    .setattr = fs_setattr,
    .readlink = fs_readlink,
    .mknod = fs_mknod,
    .mkdir = fs_mkdir,
    .unlink = fs_unlink,
    .rmdir = fs_rmdir,
    .symlink = fs_symlink,
    .rename = fs_rename,
    .link = fs_link,
    .open = fs_open,
    .read = fs_read,
    .write = fs_write,
    /*
     * No .flush: every write is committed to the store before it is
     * answered, so a close has nothing to report. libfuse answers the first
     * FLUSH with ENOSYS and the kernel sends no more: one round trip less
     * per close. (With -o writeback the kernel still writes its dirty pages
     * back at close, before it would have sent FLUSH.)
     */
    .release = fs_release_file,
    .fsync = fs_fsync,
    .opendir = fs_opendir,
    .readdir = fs_readdir,
    .readdirplus = fs_readdirplus,
    .fsyncdir = fs_fsyncdir,
    .statfs = fs_statfs,
    .setxattr = fs_setxattr,
    .getxattr = fs_getxattr,
    .listxattr = fs_listxattr,
    .removexattr = fs_removexattr,
    .create = fs_create,
    .fallocate = fs_fallocate,
    .lseek = fs_lseek,
};
