/*
 * ops.c - the FUSE low-level operations table of the pathfs daemon, the
 * session's start (INIT: what the daemon asks of the kernel) and end, and
 * the helpers every operation file shares (ops_i.h).
 *
 * The operations live by concept: names.c (lookup, create, link, remove,
 * rename), attrs.c (getattr, setattr, atime, set-user-ID clearing), files.c
 * (open, read, write, fallocate, lseek), tmpfile.c (O_TMPFILE, past
 * libfuse), dirs.c (listings), xattrs.c, ioctl.c (the inode flags of
 * chattr/lsattr, which the store enforces), ctl_hooks.c (pathfsctl on the
 * mounted drive). Each operation is split in two, as in libfuse's
 * passthrough_ll: fs_do_<op>() does the work on a struct fs and returns 0 or
 * -errno; fs_<op>() only unpacks the request and replies. Every path-based
 * request runs inside fs_enter()/fs_leave() (inodes.c): it waits while its
 * path is inside a branch a folder rename is rewriting, and it rebuilds its
 * path and retries once a concurrent rename has moved its node (the store
 * answers -ENOENT when a path no longer holds the inode asked for).
 *
 * Kernel caching: entries, negative entries and attributes are cached for
 * fs->timeout seconds (the daemon is the only writer of the drive; changes
 * made behind the kernel's back by pathfsctl commands are invalidated in
 * fs_ctl_end()); file pages and folder listings are kept across opens
 * (files.c, dirs.c); symlinks are cached. The writeback cache is off unless
 * -o writeback (see main.c).
 *
 * Limits: no SELinux labels, no copy_file_range; of the ioctls only the
 * inode flags' (see the files above).
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

void note_attr(struct fs *fs, const struct tree_attr *a)
{
	if (a->flags & TREE_F_LINKED)
		itab_flags(fs, a->ino, INODE_LINKED, 0);
}

void reclaim(struct fs *fs, uint64_t ino)
{
	fs_reclaim(fs, ino);
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

/* ---- session ------------------------------------------------------------ */

/*
 * The session ends (unmount): the kernel holds nothing any more, so the
 * orphans it still knew are reclaimed now rather than at the next mount,
 * with those queued (reclaim.c), before the store closes.
 */
static void fs_destroy(void *userdata)
{
	struct fs *fs = userdata;
	uint64_t *v = NULL;
	size_t i, n = 0;

	if (!fs->ro && !itab_flagged(fs, INODE_ORPHAN, &v, &n)) {
		for (i = 0; i < n; i++)
			reclaim(fs, v[i]);
		free(v);
	}
	fs_reclaim_stop(fs);
	fs_close_all(fs);
}

static void fs_init_conn(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;

	fs_conn_want(conn, fs->writeback);
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
    .ioctl = fs_ioctl,
};
