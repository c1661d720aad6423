/*
 * attrs.c - attributes: GETATTR, SETATTR (chmod, chown, truncate, utimes),
 * the entry of a node as the kernel caches it (fill_entry()), STATFS, the
 * access time a read or listing sets (relatime, strictatime), and the
 * set-user-ID/set-group-ID bits a change of content clears.
 *
 * A change of content (write, truncate, open(O_TRUNC), fallocate) by an
 * unprivileged caller clears set-user-ID and set-group-ID as ext4 does
 * (fs_content_changed()), and so does a chown (privs_to_clear()'s @chown).
 * With HANDLE_KILLPRIV_V2 (negotiated by devio.c) that is the daemon's job
 * alone; without it the kernel also clears them before it sends the
 * request, by FUSE's older rule (set-group-ID only with group execute).
 *
 * Limits: times have nanoseconds, as stored; ctime cannot be set apart from
 * the other changes but by the kernel's own FUSE_SET_ATTR_CTIME.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_i.h"
#include "log.h"
#include "ops_i.h"

#define NS_PER_S       1000000000LL
#define ATIME_STALE_NS (24 * 3600 * NS_PER_S)

void fill_entry(struct fs *fs, const struct tree_attr *a,
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

/* Tells the table what the store said about @a (hard-linked or not). */
static void note_attr(struct fs *fs, const struct tree_attr *a)
{
	if (a->flags & TREE_F_LINKED)
		itab_flags(fs, a->ino, INODE_LINKED, 0);
}

int fs_do_getattr(struct fs *fs, uint64_t ino, struct tree_attr *a)
{
	struct fs_path p = {0};
	int rc;

	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	do
		rc = tree_getattr(fs->tree, p.path, ino, a);
	while (fs_retry(fs, &rc, ino, NULL, &p));
	fs_leave(fs);
	if (!rc)
		note_attr(fs, a);
out:
	fs_path_release(&p);
	return rc;
}

void fs_statfs(fuse_req_t req, fuse_ino_t ino)
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

/* The reply of GETATTR and SETATTR: error @rc, or inode @ino's attributes
 * @a. */
static void reply_attrs(fuse_req_t req, fuse_ino_t ino, int rc,
			const struct tree_attr *a)
{
	struct fs *fs = req_fs(req);
	struct stat st;

	if (rc) {
		reply_err(req, rc);
		return;
	}
	tree_attr_to_stat(fs->tree, a, &st);
	st.st_ino = ino;
	fuse_reply_attr(req, &st, fs->timeout);
}

void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tree_attr a;
	int rc = fs_do_getattr(req_fs(req), ino, &a);

	reply_attrs(req, ino, rc, &a);
}

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * NS_PER_S + ts->tv_nsec;
}

bool fs_in_group(const struct fs_who *w, gid_t gid)
{
	gid_t groups[256];
	int n;

	if (w->uid == 0 || w->gid == gid)
		return true;
	n = w->req ? fuse_req_getgroups(w->req, 256, groups) : 0;
	for (int i = 0; i < n && i < 256; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/*
 * The set-user-ID and set-group-ID bits that a change by @w clears, by
 * ext4's rule (the VFS's setattr_should_drop_suidgid() and chown_common()):
 * set-user-ID always; set-group-ID when group-executable or when the caller
 * is neither in the file's group nor root. A change of content (@chown
 * false) by root clears nothing (CAP_FSETID); a chown (@chown true) clears
 * set-user-ID and a group-executable set-group-ID even for root.
 */
static mode_t privs_to_clear(const struct fs_who *w, const struct tree_attr *a,
			     bool chown)
{
	bool root = w->uid == 0;
	mode_t kill = 0;

	if (!(a->mode & (S_ISUID | S_ISGID)) || (root && !chown))
		return 0;
	if (a->mode & S_ISUID)
		kill |= S_ISUID;
	if ((a->mode & S_ISGID) && !(a->mode & S_IXGRP)) {
		if (!fs_in_group(w, a->gid))
			kill |= S_ISGID;
	} else if ((a->mode & S_ISGID) && (a->mode & S_IXGRP)) {
		kill |= S_ISGID;
	}
	return kill;
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
		rc = tree_setattr(fs->tree, p.path, ino, &in, TREE_SET_MODE, a);
	while (fs_retry(fs, &rc, ino, NULL, &p));
	fs_leave(fs);
out:
	fs_path_release(&p);
	if (rc)
		plog(LOG_WARNING, "inode %llu: clearing set-user/group-ID: %s",
		     (unsigned long long)ino, strerror(-rc));
	else if (fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
}

void fs_content_changed(struct fs *fs, const struct fs_who *w, uint64_t ino,
			struct tree_attr *a)
{
	mode_t kill = privs_to_clear(w, a, false);

	if (kill)
		clear_privs(fs, ino, kill, a);
}

/* FUSE's setattr bits and the store's: the same set, one for one. */
static const struct {
	int fuse;
	unsigned tree;
} set_bits[] = {
    {FUSE_SET_ATTR_MODE, TREE_SET_MODE},
    {FUSE_SET_ATTR_UID, TREE_SET_UID},
    {FUSE_SET_ATTR_GID, TREE_SET_GID},
    {FUSE_SET_ATTR_SIZE, TREE_SET_SIZE},
    {FUSE_SET_ATTR_ATIME, TREE_SET_ATIME},
    {FUSE_SET_ATTR_MTIME, TREE_SET_MTIME},
    {FUSE_SET_ATTR_CTIME, TREE_SET_CTIME},
};

int fs_do_setattr(struct fs *fs, const struct fs_who *w, uint64_t ino,
		  const struct stat *st, int to_set, struct tree_attr *out)
{
	struct tree_attr in;
	unsigned mask = 0;
	struct fs_path p = {0};
	struct stat chown_st;
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

		rc = fs_do_getattr(fs, ino, out);
		if (rc)
			return rc;
		if (!S_ISDIR(out->mode) &&
		    (kill = privs_to_clear(w, out, true))) {
			chown_st = *st;
			chown_st.st_mode = out->mode & ~kill;
			st = &chown_st;
			to_set |= FUSE_SET_ATTR_MODE;
		}
	}
	for (size_t i = 0; i < sizeof(set_bits) / sizeof(set_bits[0]); i++)
		if (to_set & set_bits[i].fuse)
			mask |= set_bits[i].tree;
	/* times set to now only (touch): what an append-only node allows */
	if ((mask & (TREE_SET_ATIME | TREE_SET_MTIME)) &&
	    (!(to_set & FUSE_SET_ATTR_ATIME) ||
	     (to_set & FUSE_SET_ATTR_ATIME_NOW)) &&
	    (!(to_set & FUSE_SET_ATTR_MTIME) ||
	     (to_set & FUSE_SET_ATTR_MTIME_NOW)))
		mask |= TREE_SET_TOUCH;
	/* tree_setattr() reads only the fields @mask names */
	memset(&in, 0, sizeof(in));
	in.mode = st->st_mode;
	in.uid = st->st_uid;
	in.gid = st->st_gid;
	in.size = st->st_size;
	if (to_set & FUSE_SET_ATTR_ATIME)
		in.atime_ns = (to_set & FUSE_SET_ATTR_ATIME_NOW)
				  ? tree_now_ns()
				  : ts_ns(&st->st_atim);
	if (to_set & FUSE_SET_ATTR_MTIME)
		in.mtime_ns = (to_set & FUSE_SET_ATTR_MTIME_NOW)
				  ? tree_now_ns()
				  : ts_ns(&st->st_mtim);
	in.ctime_ns = ts_ns(&st->st_ctim);
	if (!mask)
		return fs_do_getattr(fs, ino, out);
	if (fs->ro)
		return -EROFS;
	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	do
		rc = tree_setattr(fs->tree, p.path, ino, &in, mask, out);
	while (fs_retry(fs, &rc, ino, NULL, &p));
	fs_leave(fs);
	if (!rc)
		note_attr(fs, out);
	/* a truncate is a change of content (a chmod with it says the mode) */
	if (!rc && (to_set & FUSE_SET_ATTR_SIZE) &&
	    !(to_set & FUSE_SET_ATTR_MODE))
		fs_content_changed(fs, w, ino, out);
out:
	fs_path_release(&p);
	return rc;
}

void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		struct fuse_file_info *fi)
{
	struct tree_attr a;
	struct fs_who w = req_who(req);
	int rc = fs_do_setattr(req_fs(req), &w, ino, attr, to_set, &a);

	reply_attrs(req, ino, rc, &a);
}

/*
 * relatime: once per open, after the first read (for a folder: the listing
 * from its start), atime is set to now if it is not newer than mtime or
 * ctime, or is a day old. Never a write per read. With -o strictatime: every
 * read, always.
 */
void touch_atime(struct fs *fs, uint64_t ino)
{
	struct tree_attr a, in;
	struct fs_path p = {0};
	int64_t now;
	int rc;

	/* called before a READ's reply (so that a stat right after sees the
	 * access) and after a READDIR's: on etcd a read and maybe a commit (a
	 * quorum's fsync) of a few ms, which the reader waits for (once per
	 * open with relatime) while another thread serves the rest; on
	 * RocksDB they take microseconds, less than waking another thread */
	if (fs->blocking && store_remote(fs->store))
		fs->blocking();
	rc = fs_do_getattr(fs, ino, &a);
	if (rc || (a.flags & TREE_F_NOATIME))
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
		rc = tree_setattr(
		    fs->tree, p.path, ino, &in,
		    TREE_SET_ATIME | TREE_SET_CTIME | TREE_SET_ACCESS, NULL);
	while (fs_retry(fs, &rc, ino, NULL, &p));
	fs_leave(fs);
	if (!rc && fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
out:
	fs_path_release(&p);
}
