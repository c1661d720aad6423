/*
 * remount.c - `mount -o remount,OPTIONS ... MNT`: mount(8) runs mount.fuse3,
 * which runs `pathfs STORE MNT -o remount,OPTIONS` as for a new mount. No
 * second daemon starts: the mount's kernel flags change in place with
 * mount(2)'s MS_REMOUNT (the kernel syncs the mount first, and refuses to
 * make it read-only with EBUSY while a file is open for writing), and the
 * daemon serving it goes on, as ext4 does.
 *
 * Limits: only the kernel's flags change (ro/rw, nosuid, nodev, noexec,
 * sync, dirsync, noatime); those not named are cleared, as mount(2) does
 * (mount.fuse3 names suid and dev itself). The daemon's own options (drive,
 * log, writeback, timeout, its atime policy) stay as mounted; a drive
 * mounted -o ro keeps its store open read-only, so after remount,rw its
 * writes still fail with EROFS.
 */
#include <errno.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "remount.h"

/* The kernel flag an -o option sets or (its opposite) clears in *flags;
 * other options (the daemon's and libfuse's own) are fixed at mount. */
static void kernel_flag(const char *opt, unsigned long *flags)
{
	static const struct {
		const char *name;
		unsigned long flag;
		bool on;
	} map[] = {
	    {"ro", MS_RDONLY, true},	    {"rw", MS_RDONLY, false},
	    {"nosuid", MS_NOSUID, true},    {"suid", MS_NOSUID, false},
	    {"nodev", MS_NODEV, true},	    {"dev", MS_NODEV, false},
	    {"noexec", MS_NOEXEC, true},    {"exec", MS_NOEXEC, false},
	    {"sync", MS_SYNCHRONOUS, true}, {"async", MS_SYNCHRONOUS, false},
	    {"dirsync", MS_DIRSYNC, true},  {"noatime", MS_NOATIME, true},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(opt, map[i].name)) {
			if (map[i].on)
				*flags |= map[i].flag;
			else
				*flags &= ~map[i].flag;
		}
}

/* 1 if the topmost mount on @mnt (absolute, resolved) is a pathfs drive, 0
 * if not, -errno if the mount table cannot be read. */
static int is_pathfs_mount(const char *mnt)
{
	struct mntent me, *m;
	char buf[8192];
	FILE *f = setmntent("/proc/self/mounts", "re");
	int found = 0;

	if (!f)
		return -errno;
	while ((m = getmntent_r(f, &me, buf, sizeof(buf))))
		if (!strcmp(m->mnt_dir, mnt))
			found = !strcmp(m->mnt_type, "fuse.pathfs");
	endmntent(f);
	return found;
}

int fs_mount_flags(const struct fuse_args *args, unsigned long *flags)
{
	char *opts, *tok, *save;

	/* the options libfuse would get: "-o A,B" or "-oA,B" */
	for (int i = 1; i < args->argc; i++) {
		const char *a = args->argv[i];

		if (!strcmp(a, "-o") && i + 1 < args->argc)
			a = args->argv[++i];
		else if (!strncmp(a, "-o", 2))
			a += 2;
		else
			continue;
		opts = strdup(a);
		if (!opts)
			return -ENOMEM;
		for (tok = strtok_r(opts, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save))
			kernel_flag(tok, flags);
		free(opts);
	}
	return 0;
}

int fs_remount(const char *mnt_arg, const struct fuse_args *args, char *err,
	       size_t errlen)
{
	unsigned long flags = 0;
	char *mnt = realpath(mnt_arg, NULL);
	int rc;

	if (!mnt) {
		rc = -errno;
		snprintf(err, errlen, "remount of %s: %s", mnt_arg,
			 strerror(errno));
		return rc;
	}
	rc = is_pathfs_mount(mnt);
	if (rc <= 0) {
		rc = rc ? rc : -EINVAL;
		snprintf(err, errlen, "remount of %s: %s", mnt_arg,
			 rc == -EINVAL ? "not a pathfs mount" : strerror(-rc));
		free(mnt);
		return rc;
	}
	if (fs_mount_flags(args, &flags)) {
		free(mnt);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rc = 0;
	if (mount(NULL, mnt, NULL, MS_REMOUNT | flags, NULL)) {
		rc = -errno;
		snprintf(err, errlen, "remount of %s: %s", mnt_arg,
			 strerror(errno));
	}
	free(mnt);
	return rc;
}
