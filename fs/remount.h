/*
 * remount.h - `mount -o remount` of a mounted drive (remount.c).
 */
#ifndef PATHFS_REMOUNT_H
#define PATHFS_REMOUNT_H

#include <stdbool.h>
#include <stddef.h>

#include <fuse_opt.h>

/*
 * Changes the kernel flags of the pathfs mount on @mnt to those the -o
 * options of @args name (ro/rw, nosuid/suid, nodev/dev, noexec/exec,
 * sync/async, dirsync, noatime; others are ignored) with mount(2)'s
 * MS_REMOUNT; the daemon serving it goes on. Errors: -errno with a message
 * in @err (-EINVAL: @mnt is no pathfs mount; -EBUSY: read-only asked while
 * a file is open for writing; -EPERM: not root).
 */
int fs_remount(const char *mnt, const struct fuse_args *args, char *err,
	       size_t errlen);

/*
 * Sets and clears in *@flags the kernel mount flags (MS_*) the -o options
 * of @args name, as fs_remount() applies them: ro/rw, nosuid/suid,
 * nodev/dev, noexec/exec, sync/async, dirsync, noatime; the last of a pair
 * wins. Errors: -ENOMEM.
 */
int fs_mount_flags(const struct fuse_args *args, unsigned long *flags);

#endif
