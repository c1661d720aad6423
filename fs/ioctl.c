/*
 * ioctl.c - IOCTL: the inode flags of chattr(1) and lsattr(1)
 * (FS_IOC_GETFLAGS/SETFLAGS) and of xfs_io's chattr and lsattr
 * (FS_IOC_FSGETXATTR/FSSETXATTR: the same flags as FS_XFLAG_*), on files
 * and folders. Every other ioctl is ENOTTY.
 *
 * The kernel sends these four itself (fs/fuse/ioctl.c, fuse_fileattr_get
 * and _set): it opens the node read-only (OPEN or OPENDIR), asks, and
 * releases it; the value is 4 bytes for the flags (an unsigned int, though
 * the command is numbered for a long) and a struct fsxattr for the
 * xflags, and the answer must be exactly the size asked. Folders get an
 * IOCTL only with FUSE_CAP_IOCTL_DIR (devio.c asks for it).
 *
 * Flags are stored as the store's TREE_F_* user flags (tree.h), which the
 * store enforces; setting them is tree_setflags(). The VFS checks before
 * us that the caller owns the node (or has CAP_FOWNER) and that only a
 * CAP_LINUX_IMMUTABLE process changes i and a; the daemon checks the same
 * again by uid (root for both capabilities: a daemon does not learn a
 * caller's capabilities), for callers the kernel does not check (none
 * today) and so that the rule is written where the flags are.
 *
 * Supported: i (immutable), a (append-only), A (noatime), d (nodump), S
 * (sync), D (dirsync, folders; dropped elsewhere, as ext4). Any other flag
 * is EOPNOTSUPP, as ext4 answers for flags it lacks; so is a project id,
 * extent size hint or CoW hint in FSSETXATTR (xflags with no inode flag
 * are ignored, as ext4 ignores them).
 */
#include <errno.h>
#include <linux/fs.h>
#include <string.h>

#include "fs_i.h"
#include "ops_i.h"

/* FS_*_FL and FS_XFLAG_* against the store's flags. */
static const struct {
	unsigned fl;	/* FS_*_FL */
	unsigned xflag; /* FS_XFLAG_*, 0: none */
	uint32_t tree;	/* TREE_F_* */
} flag_map[] = {
    {FS_IMMUTABLE_FL, FS_XFLAG_IMMUTABLE, TREE_F_IMMUTABLE},
    {FS_APPEND_FL, FS_XFLAG_APPEND, TREE_F_APPEND},
    {FS_NOATIME_FL, FS_XFLAG_NOATIME, TREE_F_NOATIME},
    {FS_NODUMP_FL, FS_XFLAG_NODUMP, TREE_F_NODUMP},
    {FS_SYNC_FL, FS_XFLAG_SYNC, TREE_F_SYNC},
    {FS_DIRSYNC_FL, 0, TREE_F_DIRSYNC},
};
#define NFLAGS (sizeof(flag_map) / sizeof(flag_map[0]))

unsigned fs_flags_to_fl(uint32_t tree)
{
	unsigned fl = 0;

	for (size_t i = 0; i < NFLAGS; i++)
		if (tree & flag_map[i].tree)
			fl |= flag_map[i].fl;
	return fl;
}

int fs_flags_from_fl(unsigned fl, uint32_t *tree)
{
	*tree = 0;
	for (size_t i = 0; i < NFLAGS; i++)
		if (fl & flag_map[i].fl) {
			*tree |= flag_map[i].tree;
			fl &= ~flag_map[i].fl;
		}
	return fl ? -EOPNOTSUPP : 0;
}

/* The xflags of @tree; flags with no xflag (D) are not shown. */
static unsigned to_xflags(uint32_t tree)
{
	unsigned x = 0;

	for (size_t i = 0; i < NFLAGS; i++)
		if (tree & flag_map[i].tree)
			x |= flag_map[i].xflag;
	return x;
}

/* @old's flags with those xflags can say replaced by @x's. The VFS turns
 * only some xflags into inode flags (fileattr_fill_xflags()) and ext4 keeps
 * only those, ignoring the rest (xfs_io's chattr +S, filestreams, is no
 * error there); of those, one pathfs does not keep is -EOPNOTSUPP. */
static int from_xflags(unsigned x, uint32_t old, uint32_t *tree)
{
	x &= FS_XFLAG_IMMUTABLE | FS_XFLAG_APPEND | FS_XFLAG_SYNC |
	     FS_XFLAG_NOATIME | FS_XFLAG_NODUMP | FS_XFLAG_DAX;
	*tree = old;
	for (size_t i = 0; i < NFLAGS; i++) {
		if (!flag_map[i].xflag)
			continue;
		*tree &= ~flag_map[i].tree;
		if (x & flag_map[i].xflag) {
			*tree |= flag_map[i].tree;
			x &= ~flag_map[i].xflag;
		}
	}
	return x ? -EOPNOTSUPP : 0;
}

int fs_do_getflags(struct fs *fs, uint64_t ino, uint32_t *flags)
{
	struct tree_attr a;
	int rc = fs_do_getattr(fs, ino, &a);

	if (rc == 0)
		*flags = a.flags & TREE_F_USER;
	return rc;
}

int fs_do_setflags(struct fs *fs, const struct fs_who *w, uint64_t ino,
		   uint32_t flags)
{
	struct tree_attr a;
	struct fs_path p = {0};
	int rc;

	if (fs->ro)
		return -EROFS;
	rc = fs_do_getattr(fs, ino, &a);
	if (rc)
		return rc;
	if (w->uid != 0 && w->uid != a.uid)
		return -EPERM; /* inode_owner_or_capable() */
	if (w->uid != 0 &&
	    ((a.flags ^ flags) & (TREE_F_IMMUTABLE | TREE_F_APPEND)))
		return -EPERM; /* CAP_LINUX_IMMUTABLE */
	rc = fs_enter(fs, ino, NULL, &p);
	if (rc)
		goto out;
	do
		rc = tree_setflags(fs->tree, p.path, ino, flags, &a);
	while (fs_retry(fs, &rc, ino, NULL, &p));
	fs_leave(fs);
	/* an OPEN for writing reads the flags again (files.c) */
	itab_record_gained(fs, ino, INODE_NO_FLAGS);
	/* ctime changed: the kernel's copy of the attributes is stale (not
	 * its pages: -1; the kernel holds the inode lock, which this does not
	 * take) */
	if (!rc && fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
out:
	fs_path_release(&p);
	return rc;
}

/* The answer to an ioctl that reads: exactly @out_bufsz bytes (the kernel
 * takes no other size), @len of them from @val and the rest zero. */
static void reply_value(fuse_req_t req, const void *val, size_t len,
			size_t out_bufsz)
{
	char buf[64] = {0};

	if (out_bufsz < len || out_bufsz > sizeof(buf)) {
		reply_err(req, -EINVAL);
		return;
	}
	memcpy(buf, val, len);
	fuse_reply_ioctl(req, 0, buf, out_bufsz);
}

/* FS_IOC_GETFLAGS (@x false) and FS_IOC_FSGETXATTR (@x true): the flags
 * of @ino, answered as the command says them (FS_*_FL or a struct
 * fsxattr of FS_XFLAG_*). */
static void ioctl_get(fuse_req_t req, struct fs *fs, uint64_t ino, bool x,
		      size_t out_bufsz)
{
	struct fsxattr fx;
	uint32_t tree;
	unsigned fl;
	int rc = fs_do_getflags(fs, ino, &tree);

	if (rc) {
		reply_err(req, rc);
		return;
	}
	memset(&fx, 0, sizeof(fx));
	fx.fsx_xflags = to_xflags(tree);
	fl = fs_flags_to_fl(tree);
	if (x)
		reply_value(req, &fx, sizeof(fx), out_bufsz);
	else
		reply_value(req, &fl, sizeof(fl), out_bufsz);
}

/* FS_IOC_SETFLAGS (@x false) and FS_IOC_FSSETXATTR (@x true): sets the
 * flags of @ino that @in (@in_bufsz bytes) says. Errors: -EINVAL (too
 * short), -EOPNOTSUPP (a flag or field pathfs does not keep), those of
 * fs_do_getflags() and fs_do_setflags(). */
static int ioctl_set(struct fs *fs, const struct fs_who *w, uint64_t ino,
		     bool x, const void *in, size_t in_bufsz)
{
	struct fsxattr fx;
	uint32_t tree;
	unsigned fl;
	int rc;

	if (in_bufsz < (x ? sizeof(fx) : sizeof(fl)))
		return -EINVAL;
	if (x) {
		memcpy(&fx, in, sizeof(fx));
		if (fx.fsx_extsize || fx.fsx_projid || fx.fsx_cowextsize)
			return -EOPNOTSUPP;
		rc = fs_do_getflags(fs, ino, &tree);
		if (rc == 0)
			rc = from_xflags(fx.fsx_xflags, tree, &tree);
	} else {
		memcpy(&fl, in, sizeof(fl));
		rc = fs_flags_from_fl(fl, &tree);
	}
	return rc ? rc : fs_do_setflags(fs, w, ino, tree);
}

void fs_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd, void *arg,
	      struct fuse_file_info *fi, unsigned flags, const void *in_buf,
	      size_t in_bufsz, size_t out_bufsz)
{
	struct fs *fs = req_fs(req);
	struct fs_who w = req_who(req);
	bool x = cmd == FS_IOC_FSGETXATTR || cmd == FS_IOC_FSSETXATTR;
	int rc;

	(void)arg;
	(void)fi;
	if (flags & FUSE_IOCTL_COMPAT) {
		reply_err(req, -ENOTTY); /* 32-bit callers: not kept */
		return;
	}
	switch (cmd) {
	case FS_IOC_GETFLAGS:
	case FS_IOC_FSGETXATTR:
		ioctl_get(req, fs, ino, x, out_bufsz);
		return;
	case FS_IOC_SETFLAGS:
	case FS_IOC_FSSETXATTR:
		rc = ioctl_set(fs, &w, ino, x, in_buf, in_bufsz);
		if (rc == 0) {
			fuse_reply_ioctl(req, 0, NULL, 0);
			return;
		}
		break;
	default:
		rc = -ENOTTY;
	}
	reply_err(req, rc);
}
