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
 * The daemon's half: the line it answers CONTROL_MOUNT_INFO with, for the
 * connection it mounted on @mnt (resolved): its device (found in
 * /proc/self/mountinfo), @drive, @ro, @allow_other. Returns a malloc'd line
 * or NULL (errno: ENOENT if @mnt is no FUSE mount here, ENOMEM).
 */
char *fs_second_info(const char *mnt, const char *drive, bool ro,
		     bool allow_other);

#endif
