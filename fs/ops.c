/*
 * ops.c - the FUSE low-level operations table of the pathfs daemon, and
 * nothing else: every entry lives in the file whose job it is, and no file
 * calls back into this one.
 *
 * The operations live by concept: lifecycle.c (the session's INIT and
 * DESTROY), names.c (lookup, create, link, remove, rename), attrs.c
 * (getattr, setattr, statfs, atime, set-user-ID clearing), files.c (open,
 * read, write, fallocate, lseek), tmpfile.c (O_TMPFILE, past libfuse),
 * dirs.c (listings), xattrs.c, ioctl.c (the inode flags of chattr/lsattr,
 * which the store enforces), ctl_hooks.c (pathfsctl on the mounted drive).
 * Each operation with work of its own is split in two, as in libfuse's
 * passthrough_ll: fs_do_<op>() does the work on a struct fs and returns 0
 * or -errno, callable with no request (ops_i.h); fs_<op>() only unpacks
 * the request and replies (FSYNCDIR shares FSYNC's fs_do_fsync()). The
 * others have no half to split off: FORGET is itab_forget(), OPENDIR
 * answers at once, STATFS is one store call. Every path-based request
 * runs inside fs_enter()/fs_leave() (subtree_lock.c): it waits while its
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
#include "fs_i.h"
#include "ops_i.h"

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
    .releasedir = fs_releasedir,
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
