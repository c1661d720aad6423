/*
 * second.c - `pathfs STORE MNT2` (or mount -t fuse.pathfs, an fstab line)
 * while a daemon on this machine serves STORE: as a second mount of a
 * mounted ext4 device is the same superblock, MNT2 becomes another mount of
 * the serving daemon's FUSE connection, a bind mount of its mount, and no
 * second daemon starts (only one process may open a RocksDB store; a store
 * on etcd has one writer).
 *
 * The new mount finds the daemon (a local store: its serving lock,
 * store_server(); etcd: the writer's abstract control socket) and asks it
 * over the control socket (CONTROL_MOUNT_INFO, through pathfsctl's client,
 * control_request(), talking only to root's daemon or ours: the answer is
 * bound as root) which connection it serves
 * (the device major:minor its mounts show), which drive and whether
 * read-only. Any mount of that connection with root "/" will do as the
 * source of the bind (the daemon's first mountpoint may be gone while a
 * bind of it lives on): /proc/self/mountinfo lists them, and the one opened
 * must show the connection's device. A store on etcd is known by its
 * identity (store_identity(): members in any order and case, localhost,
 * a trailing slash or options), not by the first mount's spelling. Then the bind gets the flags the new
 * mount asks for (remount,bind: ro, nosuid, nodev, noexec, noatime), so a
 * -o ro second mount is a read-only view while the first stays read-write.
 *
 * The daemon serves every mount of its connection and exits when the last
 * one is unmounted (the kernel ends the connection then), whichever order
 * they go in. A signal (SIGTERM, SIGINT, SIGHUP) ends the connection and,
 * on the daemon's way out, every mount of it in its mount namespace
 * (fs_second_mounts, fs_second_detach: second mounts, a user's `mount
 * --bind`), as libfuse unmounts the first mountpoint: lazily. SIGKILL
 * leaves them, answering ENOTCONN, until unmounted by hand.
 *
 * Refused, with one line: another drive than the served one; rw asked of a
 * daemon serving read-only; allow_other other than the connection's (who may
 * enter is the connection's, not a mount's). The daemon's other options
 * (writeback, timeout, sync, cache_mb, log, its atime policy, -s, -d) stay
 * the first mount's and a second mount's are ignored, as an ext4 second
 * mount ignores its superblock options.
 *
 * Limits: root only (mount(2) of a bind needs CAP_SYS_ADMIN); a non-root
 * caller gets the refusal of a store in use, as before. A -o ro mount of a
 * store on etcd starts a daemon of its own (it follows the writer, also one
 * on another machine); a writer elsewhere keeps the one-writer refusal. A
 * daemon whose control socket did not start (or from before this file)
 * cannot be asked: its store is refused as in use.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control.h"
#include "log.h"
#include "mountinfo.h"
#include "proto.h"
#include "second.h"
#include "tree.h"

#define SECOND_TIMEOUT_S 10 /* for the daemon's answer */

/* The answer CONTROL_MOUNT_INFO gets. */
struct conn_info {
	unsigned maj, min;
	char drive[72];
	int ro, allow_other;
};

int fs_second_conn(const char *mnt, unsigned *maj, unsigned *min)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	bool found = false;
	struct mountinfo m;

	if (!f)
		return -errno;
	/* the last match is the topmost mount there: ours */
	while (getline(&line, &cap, f) > 0)
		if (!mountinfo_parse(line, &m) && !strncmp(m.type, "fuse", 4) &&
		    !strcmp(m.point, mnt)) {
			*maj = m.maj;
			*min = m.min;
			found = true;
		}
	free(line);
	fclose(f);
	return found ? 0 : -ENOENT;
}

char *fs_second_info(unsigned maj, unsigned min, const char *drive, bool ro,
		     bool allow_other)
{
	char *out = NULL;

	if (asprintf(&out, "conn %u:%u drive %s ro %d allow_other %d\n", maj,
		     min, drive, ro ? 1 : 0, allow_other ? 1 : 0) < 0) {
		errno = ENOMEM;
		return NULL;
	}
	return out;
}

/*
 * Unmounts @point as libfuse's fuse_kern_unmount() unmounts the first
 * mountpoint: lazily (MNT_DETACH, what umount -l does: gone from the table
 * at once, a busy mount lets go when its last user does); a non-root daemon
 * through `fusermount3 -u -q -z`. Returns 0 or -errno.
 */
static int detach(const char *point)
{
	const char *argv[] = {"fusermount3", "-u",  "-q", "-z",
			      "--",	     point, NULL};
	int status;
	pid_t pid;

	if (umount2(point, MNT_DETACH) == 0)
		return 0;
	if (errno != EPERM || geteuid() == 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);

		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EPERM;
}

void fs_second_mounts_free(struct second_mounts *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->points[i]);
	free(m->points);
	free(m->count);
	memset(m, 0, sizeof(*m));
}

int fs_second_mounts(unsigned maj, unsigned min, const char *first,
		     struct second_mounts *out)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0, i;
	struct mountinfo m;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		if (mountinfo_parse(line, &m))
			continue;
		for (i = 0; i < out->n && strcmp(out->points[i], m.point); i++)
			;
		if (i == out->n) {
			char **np = realloc(out->points, (i + 1) * sizeof(*np));
			unsigned *nc;

			if (np)
				out->points = np;
			nc = realloc(out->count, (i + 1) * sizeof(*nc));
			if (nc)
				out->count = nc;
			if (!np || !nc || !(np[i] = strdup(m.point))) {
				rc = -ENOMEM;
				break;
			}
			out->count[i] = 0;
			out->n++;
		}
		/* a later mount on a point covers the earlier ones: count the
		 * connection's mounts on top there */
		if (m.maj == maj && m.min == min && !strncmp(m.type, "fuse", 4))
			out->count[i]++;
		else
			out->count[i] = 0;
	}
	free(line);
	fclose(f);
	if (rc) {
		fs_second_mounts_free(out);
		return rc;
	}
	for (i = 0; i < out->n; i++)
		if (!strcmp(out->points[i], first) && out->count[i])
			out->count[i]--; /* fuse_session_unmount()'s */
	return 0;
}

void fs_second_detach(struct second_mounts *m)
{
	for (size_t i = 0; i < m->n; i++)
		for (unsigned k = 0; k < m->count[i]; k++) {
			int rc = detach(m->points[i]);

			/* EINVAL, ENOENT: gone with a mount above it */
			if (rc && rc != -EINVAL && rc != -ENOENT)
				plog(LOG_WARNING,
				     "cannot unmount %s: %s (it answers "
				     "ENOTCONN until unmounted by hand)",
				     m->points[i], strerror(-rc));
			if (rc)
				break;
		}
	fs_second_mounts_free(m);
}

/* Whether a mount's @source names the store whose identity is @id
 * (store_identity(): an etcd store's members in any order and spelling). */
static bool same_store(const char *source, const char *id)
{
	char *sid = NULL;
	bool same;

	if (!store_is_remote(source))
		return !strcmp(source, id);
	if (store_identity(source, &sid))
		return false;
	same = !strcmp(sid, id);
	free(sid);
	return same;
}

/* Whether a FUSE mount of the whole store @id (source a spelling of it, root
 * "/") is in this mount namespace: else there is nothing to bind, and a
 * daemon that is closing the store need not be asked. */
static bool store_mounted(const char *id)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	struct mountinfo m;
	bool found = false;

	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0)
		found = !mountinfo_parse(line, &m) &&
			!strncmp(m.type, "fuse", 4) && !strcmp(m.root, "/") &&
			same_store(m.source, id);
	free(line);
	fclose(f);
	return found;
}

/* The answer to CONTROL_MOUNT_INFO as it arrives (control_request()). */
struct answer {
	char out[256];
	size_t used;
};

/* Keeps the 'o' frames that fit; stderr, a refusal's message and what does
 * not fit are dropped (then the answer does not parse). */
static int take_answer(void *ctx, char type, const char *buf, size_t len)
{
	struct answer *a = ctx;

	if (type == CONTROL_FRAME_OUT && len < sizeof(a->out) - a->used) {
		memcpy(a->out + a->used, buf, len);
		a->used += len;
	}
	return 0;
}

/*
 * Asks the daemon serving the store @dir (root's or ours only: what it
 * names is bound as root) CONTROL_MOUNT_INFO and reads its answer into @ci.
 * Returns 0, 1 if the daemon has no answer (not mounted yet, or a daemon
 * from before CONTROL_MOUNT_INFO), -errno (-ENOENT: no daemon answers;
 * -EACCES: refused, or a peer we do not trust; -EPROTO: an answer of
 * another shape).
 */
static int ask_daemon(const char *dir, struct conn_info *ci)
{
	char arg[] = CONTROL_MOUNT_INFO, *argv[] = {arg};
	struct answer a = {.used = 0};
	struct control_req req = {
	    .store = dir,
	    .drive = "", /* the daemon's */
	    .argc = 1,
	    .argv = argv,
	    .strict_peer = true,
	    .timeout_s = SECOND_TIMEOUT_S,
	    .frame = take_answer,
	    .ctx = &a,
	};
	int rc = control_request(&req);

	if (rc)
		return rc > 0 ? 1 : rc;
	a.out[a.used] = '\0';
	if (sscanf(a.out, "conn %u:%u drive %64s ro %d allow_other %d",
		   &ci->maj, &ci->min, ci->drive, &ci->ro,
		   &ci->allow_other) != 5)
		return -EPROTO;
	return 0;
}

/*
 * Binds a mount of connection @ci (root "/", source a spelling of the store
 * @id) on @mnt. Returns 0, -ENOENT if there is none left, -errno of
 * mount(2).
 */
static int bind_conn(const char *id, const char *mnt,
		     const struct conn_info *ci)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	dev_t dev = makedev(ci->maj, ci->min);
	char *line = NULL, proc[64];
	size_t cap = 0;
	struct mountinfo m;
	struct stat st;
	int rc = -ENOENT, fd;

	if (!f)
		return -errno;
	while (rc == -ENOENT && getline(&line, &cap, f) > 0) {
		if (mountinfo_parse(line, &m) || m.maj != ci->maj ||
		    m.min != ci->min || strcmp(m.root, "/") ||
		    strncmp(m.type, "fuse", 4) || !same_store(m.source, id) ||
		    !strcmp(m.point, mnt))
			continue;
		fd = open(m.point, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue; /* gone meanwhile: another one may do */
		if (fstat(fd, &st) == 0 && st.st_dev == dev) {
			snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
			if (mount(proc, mnt, NULL, MS_BIND, NULL))
				rc = -errno;
			else
				rc = 0;
		}
		close(fd);
	}
	free(line);
	fclose(f);
	return rc;
}

/* The refusal of a read-write mount of a read-only connection. */
static void ro_refusal(const char *dir, char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "store %s is in use, mounted read-only: a second mount of it "
		 "must be read-only too (-o ro)",
		 dir);
}

/* fs_second_mount() of the store @dir, whose identity is @id. */
static int second_mount(const char *dir, const char *id, const char *mnt,
			const struct second_req *req, char *err, size_t errlen)
{
	/* the flags a bind mount has of its own */
	const unsigned long per_mount = MS_RDONLY | MS_NOSUID | MS_NODEV |
					MS_NOEXEC | MS_NOATIME | MS_NODIRATIME;
	struct conn_info ci;
	struct statvfs sv;
	struct stat st;
	pid_t pid;
	int rc;

	if (store_is_remote(dir) ? req->ro : store_server(dir, &pid) != 0)
		return 1;
	if (!store_mounted(id))
		return 1; /* a daemon closing it: the open waits for it */
	memset(&ci, 0, sizeof(ci));
	if (ask_daemon(dir, &ci))
		return 1; /* nobody answers: the open tells who holds it */
	if (strcmp(ci.drive, req->drive)) {
		snprintf(err, errlen,
			 "store %s is in use, serving drive %s: a second "
			 "mount of it serves the same drive, not %s",
			 dir, ci.drive, req->drive);
		return -EBUSY;
	}
	if (ci.ro && !req->ro) {
		ro_refusal(dir, err, errlen);
		return -EBUSY;
	}
	if (!ci.allow_other != !req->allow_other) {
		snprintf(err, errlen,
			 "store %s is in use, mounted %s allow_other: a "
			 "second mount of it cannot differ (who may enter is "
			 "the connection's)",
			 dir, ci.allow_other ? "with" : "without");
		return -EBUSY;
	}
	rc = bind_conn(id, mnt, &ci);
	if (rc == -ENOENT)
		return 1; /* its mounts went meanwhile: the open waits */
	if (rc) {
		snprintf(err, errlen, "second mount of %s on %s: %s", dir, mnt,
			 strerror(-rc));
		return rc;
	}
	/* as mount(8) --bind -o OPTS: the new mount's own flags */
	if (mount(NULL, mnt, NULL,
		  MS_REMOUNT | MS_BIND | (req->flags & per_mount) |
		      (req->ro ? MS_RDONLY : 0),
		  NULL)) {
		rc = -errno;
		snprintf(err, errlen, "second mount of %s on %s: flags: %s",
			 dir, mnt, strerror(errno));
		umount2(mnt, MNT_DETACH);
		return rc;
	}
	/* a connection made read-only since (mount -o remount,ro of the
	 * first) takes no read-write mount, as ext4's superblock would not */
	if (!req->ro && statvfs(mnt, &sv) == 0 && (sv.f_flag & ST_RDONLY)) {
		ro_refusal(dir, err, errlen);
		umount2(mnt, MNT_DETACH);
		return -EBUSY;
	}
	if (stat(mnt, &st) || st.st_dev != makedev(ci.maj, ci.min)) {
		snprintf(err, errlen,
			 "second mount of %s on %s: the mount is not the "
			 "daemon's connection",
			 dir, mnt);
		umount2(mnt, MNT_DETACH);
		return -EIO;
	}
	return 0;
}

int fs_second_mount(const char *dir, const char *mnt,
		    const struct second_req *req, char *err, size_t errlen)
{
	char *id = NULL;
	int rc;

	if (geteuid() != 0)
		return 1;
	/* a malformed URL, no memory: the open says why */
	if (store_identity(dir, &id))
		return 1;
	rc = second_mount(dir, id, mnt, req, err, errlen);
	free(id);
	return rc;
}
