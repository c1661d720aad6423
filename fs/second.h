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

/*
 * The daemon's end: unmounts every mount of its connection @maj:@min left in
 * its mount namespace (second mounts, a user's `mount --bind`), each as
 * libfuse unmounts the first mountpoint (fuse_session_unmount: lazily, as
 * umount -l does, so a busy one is gone from the table at once and lets go
 * when its last user does). Call it once the connection is closed
 * (fuse_session_unmount()), when no request can reach the daemon: a mount
 * left would answer ENOTCONN. A mount another one covers (a later mount on
 * the same point) cannot be reached by its path and stays. Errors are
 * logged.
 */
void fs_second_unmount_all(unsigned maj, unsigned min);

#endif
