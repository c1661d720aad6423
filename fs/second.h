/*
 * second.h - a second mount of a store that a daemon on this machine already
 * serves: another mount of that daemon's FUSE connection (second.c).
 */
#ifndef PATHFS_SECOND_H
#define PATHFS_SECOND_H

#include <stdbool.h>
#include <stddef.h>

/* What the new mount asks for. */
struct second_req {
	const char *drive;   /* -o drive= (default main) */
	bool ro;	     /* -o ro */
	bool allow_other;    /* -o allow_other */
	unsigned long flags; /* MS_* of its -o options (fs_mount_flags) */
};

/*
 * Mounts @mnt (resolved, an empty folder) as another mount of the FUSE
 * connection of the daemon on this machine that serves the store @dir (a
 * resolved path or an etcd URL), when there is one: a bind mount of one of
 * that connection's mounts, then made read-only, nosuid, ... as @req's
 * flags say. Root only (CAP_SYS_ADMIN).
 *
 * Returns 1 when this is not such a case (the caller is not root, no daemon
 * here serves @dir, or a -o ro mount of a store on etcd, which follows the
 * writer with a daemon of its own): the caller starts a daemon as before
 * (which refuses a store in use). 0: mounted. -errno with one line in @err
 * (no "pathfs: " prefix): refused or failed, nothing mounted (-EBUSY: a
 * drive other than the served one, rw asked of a read-only daemon, or
 * allow_other differs; -ENOENT: no mount of the connection left to bind;
 * -EPERM, ...).
 */
int fs_second_mount(const char *dir, const char *mnt,
		    const struct second_req *req, char *err, size_t errlen);

/*
 * The daemon's half. The device (major:minor) of the FUSE connection mounted
 * on @mnt (resolved): the topmost FUSE mount there in /proc/self/mountinfo,
 * read without a request to any filesystem. Returns 0, -ENOENT (no FUSE
 * mount there), -errno.
 */
int fs_second_conn(const char *mnt, unsigned *maj, unsigned *min);

/*
 * The line the daemon answers CONTROL_MOUNT_INFO with: its connection
 * @maj:@min, @drive, @ro, @allow_other. Returns a malloc'd line or NULL
 * (errno ENOMEM).
 */
char *fs_second_info(unsigned maj, unsigned min, const char *drive, bool ro,
		     bool allow_other);

/* The mounts of a connection in this mount namespace, by mountpoint. */
struct second_mounts {
	char **points;	 /* malloc'd */
	unsigned *count; /* how many of its mounts are stacked on top there */
	size_t n;
};

/*
 * The daemon's end, after a signal: lists the mounts of its connection
 * @maj:@min left in its mount namespace (second mounts, a user's `mount
 * --bind`) but the one on top of its first mountpoint @first (which
 * fuse_session_unmount() unmounts), for fs_second_detach(). Call it before
 * fuse_session_unmount(), and keep the list only if the kernel still holds
 * the connection after it (once it ended it, the device number may be
 * another mount's already). Returns 0 (*out filled; free with
 * fs_second_detach() or fs_second_mounts_free()), -ENOMEM, -errno of
 * reading /proc/self/mountinfo (*out empty).
 */
int fs_second_mounts(unsigned maj, unsigned min, const char *first,
		     struct second_mounts *out);

/*
 * Unmounts each mount listed by fs_second_mounts() (by its mountpoint, once
 * per mount stacked there), as libfuse's fuse_session_unmount() unmounts the
 * first mountpoint: lazily (MNT_DETACH, what umount -l does: gone from the
 * table at once; a busy mount lets go when its last user does); a non-root
 * daemon through `fusermount3 -u -q -z`. Call it after
 * fuse_session_unmount() has closed the connection, so that no request can
 * reach the daemon. Errors are logged. Frees @m.
 *
 * Limits: by path, as libfuse unmounts: a mountpoint unmounted and mounted
 * again by someone else in between loses that mount; a mount of the
 * connection under another mount is out of reach and stays (ENOTCONN).
 */
void fs_second_detach(struct second_mounts *m);

/* Frees what fs_second_mounts() listed, unmounting nothing. */
void fs_second_mounts_free(struct second_mounts *m);

#endif
