/*
 * devio.h - what a daemon of this project asks of the kernel at INIT: the
 * capabilities, the request sizes (fs_conn_want()) and the flags libfuse
 * 3.14 does not know, negotiated by hooks on /dev/fuse (fs_devio_install()).
 * pathfs and pathfs-floor (tools/) both use them, so the kernel sends the
 * floor daemon the requests it sends pathfs. See devio.c.
 */
#ifndef PATHFS_DEVIO_H
#define PATHFS_DEVIO_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <stdbool.h>

/*
 * The INIT answer (call from the init operation): READDIRPLUS always,
 * cached symlinks, ATOMIC_O_TRUNC, IOCTL_DIR, EXPORT_SUPPORT, POSIX ACLs
 * with DONT_MASK (the daemon applies the umask the request carries), not
 * HANDLE_KILLPRIV, the writeback cache only if @writeback, 1 MiB writes
 * and readahead, nanosecond times. Each only where @conn says the kernel
 * offers it.
 */
void fs_conn_want(struct fuse_conn_info *conn, bool writeback);

/*
 * Makes @se (mounted) read and write /dev/fuse through the hooks that
 * negotiate FUSE_HANDLE_KILLPRIV_V2 in INIT: the daemon then clears
 * set-user-ID and set-group-ID itself on a write, truncate and chown. Call
 * before the session loop, for one session per process. Returns 0 or
 * -errno (-ENOMEM); on failure the session goes on without the hooks.
 */
int fs_devio_install(struct fuse_session *se);

#endif
