/*
 * main.c - pathfs: mount one drive of a pathfs store with FUSE.
 *
 *   pathfs [options] STORE MOUNTPOINT
 *
 * Startup: options are parsed, the mountpoint is checked (it must exist, be a
 * folder and be empty), then, unless -f, the process forks: the child opens
 * the store (RocksDB's threads and its lock file do not survive a fork, so the
 * serving process must be the one that opens it), mounts and tells the parent
 * over a status pipe; the parent prints the child's error line, if any, and
 * exits with its status. So every startup error is one line on stderr and a
 * non-zero exit, before the shell gets its prompt back, and a successful
 * `pathfs` returns with the mount in place.
 *
 * Unmount of its last mount (fusermount3 -u, umount) or a signal (SIGTERM,
 * SIGINT, SIGHUP) ends the session loop; the daemon then stops the control
 * socket, unmounts every mount of its connection still there (the first
 * mountpoint, second mounts, a user's bind mounts: second.c), syncs and
 * closes the store. SIGKILL cannot be handled: its mounts stay, answering
 * ENOTCONN, until unmounted by hand. The
 * kernel lets go of the mount before that, so a new mount may find the store
 * still locked: from its mount until it closes the store the daemon holds
 * the store's serving lock (store_serve), and a new mount that finds the
 * store held by a serving daemon whose mount is gone waits for it (bounded,
 * open_waiting); any other holder means the store is in use: refused at once.
 *
 * Works from /etc/fstab through mount.fuse3, which runs
 * `pathfs STORE MOUNTPOINT -o OPTIONS`: the atime options are the daemon's
 * (atime_opt), options only mount(8) acts on are dropped (mount_opt), and the
 * rest go to libfuse (allow_other, rw, nosuid, nodev, noexec, ...), which
 * refuses what it does not know, by name. `mount -o remount,...` comes the
 * same way: remount.c changes the mount's flags and no daemon starts.
 *
 * A store already served by a daemon here is mounted again as another mount
 * of that daemon's FUSE connection (second.c, root only), as a second mount
 * of a mounted ext4 device is the same superblock: no second daemon.
 *
 * Limits: one drive per mount, and per store while it is mounted; the store
 * cannot be opened by another process while mounted (pathfsctl talks to the
 * daemon over the control socket).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <paths.h>
#include <poll.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "fs_i.h"
#include "log.h"
#include "mountinfo.h"
#include "remount.h"
#include "second.h"
#include "stats.h"

struct options {
	char *drive;
	char
	    *log; /* -o log=: syslog, stderr or a file (absolute once parsed) */
	unsigned rename_batch, rename_bytes;
	unsigned cache_mb;
	double timeout;
	int ro, sync, writeback, noatime, strictatime, nodiratime;
	int shared;	 /* -o shared: one writer of several (etcd, DynamoDB) */
	int allow_other; /* -o allow_other (also passed to libfuse) */
	int foreground, debug, single;
	int help, version;
	int remount;	   /* -o remount: change a mounted drive's flags */
	char *store, *mnt; /* the two arguments (malloc'd) */
	int nargs;
};

enum {
	KEY_RO,
	KEY_SYNC,
	KEY_FG,
	KEY_DEBUG,
	KEY_SINGLE,
	KEY_HELP,
	KEY_VERSION,
	KEY_REMOUNT,
	KEY_KEEP,
};

#define OPT(t, p, v)                                                           \
	{                                                                      \
		t, offsetof(struct options, p), v                              \
	}
static const struct fuse_opt opt_spec[] = {
    OPT("drive=%s", drive, 0),
    OPT("log=%s", log, 0),
    OPT("rename_batch=%u", rename_batch, 0),
    OPT("rename_bytes=%u", rename_bytes, 0),
    OPT("cache_mb=%u", cache_mb, 0),
    OPT("timeout=%lf", timeout, 0),
    OPT("shared", shared, 1),
    OPT("writeback", writeback, 1),
    OPT("writeback_cache", writeback, 1),
    OPT("nowriteback", writeback, 0),
    OPT("no_writeback_cache", writeback, 0),
    FUSE_OPT_KEY("ro", KEY_RO),
    FUSE_OPT_KEY("sync", KEY_SYNC),
    FUSE_OPT_KEY("-f", KEY_FG),
    FUSE_OPT_KEY("-d", KEY_DEBUG),
    FUSE_OPT_KEY("debug", KEY_DEBUG),
    FUSE_OPT_KEY("-s", KEY_SINGLE),
    FUSE_OPT_KEY("-h", KEY_HELP),
    FUSE_OPT_KEY("--help", KEY_HELP),
    FUSE_OPT_KEY("-V", KEY_VERSION),
    FUSE_OPT_KEY("--version", KEY_VERSION),
    FUSE_OPT_KEY("remount", KEY_REMOUNT),
    FUSE_OPT_END};

/*
 * Options of mount(8) and fstab that pathfs has nothing to do for: mount(8)'s
 * own (which mount.fuse3 may pass on), and ones with no meaning for a FUSE
 * drive (lazytime: every timestamp is written with its change anyway; mand:
 * no mandatory locks, as on current kernels). Accepted and dropped, as are
 * x-* and comment=. suid, dev, exec, ro, rw, sync, async, dirsync and noatime
 * go to libfuse, which sets the kernel's mount flags.
 */
static const char *const dropped_opts[] = {
    "defaults", "_netdev",    "nofail",	  "auto",	"noauto",
    "user",	"nouser",     "users",	  "owner",	"group",
    "lazytime", "nolazytime", "iversion", "noiversion", "mand",
    "nomand",	"silent",     "loud",	  NULL};

/*
 * Access times: the kernel leaves them to a FUSE filesystem, so the atime
 * options are the daemon's to honour: relatime (the default, and atime,
 * nostrictatime), strictatime (and norelatime: every read), noatime (goes
 * to the kernel too, which shows it), nodiratime (folders keep theirs).
 * Returns 0 (dropped), 1 (kept for libfuse) or -1 for another option.
 */
static int atime_opt(struct options *o, const char *arg)
{
	if (!strcmp(arg, "relatime") || !strcmp(arg, "atime") ||
	    !strcmp(arg, "nostrictatime")) {
		o->strictatime = 0;
		o->noatime = 0;
		return 0;
	}
	if (!strcmp(arg, "strictatime") || !strcmp(arg, "norelatime")) {
		o->strictatime = 1;
		o->noatime = 0;
		return 0;
	}
	if (!strcmp(arg, "noatime")) {
		o->noatime = 1;
		return 1;
	}
	if (!strcmp(arg, "nodiratime") || !strcmp(arg, "diratime")) {
		o->nodiratime = arg[0] == 'n';
		return 0;
	}
	return -1;
}

/* An -o option not in opt_spec: dropped (0), or kept for libfuse (1), which
 * refuses what it does not know, by name. */
static int mount_opt(struct options *o, const char *arg)
{
	int rc = atime_opt(o, arg);

	if (rc >= 0)
		return rc;
	if (!strncasecmp(arg, "x-", 2) || !strncmp(arg, "comment=", 8))
		return 0;
	for (size_t i = 0; dropped_opts[i]; i++)
		if (!strcmp(arg, dropped_opts[i]))
			return 0;
	if (!strcmp(arg, "dirsync"))
		o->sync = 1; /* every change durable: folder changes too */
	if (!strcmp(arg, "allow_other"))
		o->allow_other = 1;
	return 1;
}

static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct options *o = data;

	switch (key) {
	case KEY_RO:
		o->ro = 1;
		return 1; /* libfuse mounts read-only too */
	case KEY_SYNC:
		o->sync = 1;
		return 1;
	case KEY_FG:
		o->foreground = 1;
		return 0;
	case KEY_DEBUG:
		o->debug = 1;
		o->foreground = 1;
		return 1;
	case KEY_SINGLE:
		o->single = 1;
		return 0;
	case KEY_HELP:
		o->help = 1;
		return 0;
	case KEY_VERSION:
		o->version = 1;
		return 0;
	case KEY_REMOUNT:
		o->remount = 1;
		return 0;
	case FUSE_OPT_KEY_OPT:
		return mount_opt(o, arg);
	case FUSE_OPT_KEY_NONOPT:
		if (o->nargs == 0)
			o->store = strdup(arg);
		else if (o->nargs == 1)
			o->mnt = strdup(arg);
		o->nargs++;
		return 0;
	default:
		return 1;
	}
}

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: pathfs [options] STORE MOUNTPOINT\n"
	    "\n"
	    "Mounts a drive of the pathfs store in directory STORE.\n"
	    "\n"
	    "  -f                     stay in the foreground\n"
	    "  -d, -o debug           debug output (implies -f)\n"
	    "  -s                     single-threaded\n"
	    "  -o drive=NAME          drive to mount (default main)\n"
	    "  -o ro                  read-only\n"
	    "  -o shared              a store on etcd or DynamoDB: one\n"
	    "                         read-write mount of several, on any\n"
	    "                         machines (each -o shared)\n"
	    "  -o sync                sync the write-ahead log on every "
	    "change\n"
	    "  -o rename_batch=N      entries per batch of a folder rename\n"
	    "  -o rename_bytes=N      bytes per batch of a folder rename "
	    "(4 MiB)\n"
	    "  -o writeback           kernel writeback cache (default: off)\n"
	    "  -o timeout=SECONDS     entry/attribute cache timeout (3600)\n"
	    "  -o cache_mb=N          store block cache (MiB)\n"
	    "  -o allow_other         let other users in (needs root or\n"
	    "                         user_allow_other in /etc/fuse.conf)\n"
	    "  -o noatime             never update access times (default\n"
	    "                         relatime; also strictatime, nodiratime)\n"
	    "  -o log=syslog|stderr|FILE  where the daemon logs (default:\n"
	    "                         stderr with -f, else syslog if a syslog\n"
	    "                         daemon listens, else STORE/pathfs.log;\n"
	    "                         a store on etcd needs one of these)\n"
	    "  -h, --help             this help\n"
	    "  -V, --version          version\n");
}

/* Where startup errors go: the status pipe in a forked child, else stderr. */
static int status_fd = -1;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	char msg[PATH_MAX + 256];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "pathfs: ");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
	va_end(ap);
	if (status_fd >= 0) {
		/* '1' and the message: the parent prints it */
		if (write(status_fd, "1", 1) == 1 &&
		    write(status_fd, msg, strlen(msg)) < 0)
			n = 0;
	} else {
		fprintf(stderr, "%s\n", msg);
	}
}

/* Whether folder @dir has no entries (unreadable: no, the open tells). */
static bool empty_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool empty = d != NULL;

	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			empty = false;
			break;
		}
	if (d)
		closedir(d);
	return empty;
}

/* Absolute form of the store path (it may not exist yet: then its parent
 * must), or the etcd URL of a remote store as it is (*exists: true; the open
 * tells). *exists says whether a store is there: an empty folder (made for
 * it, as for a mount point) is none yet. Errors: -errno, reported. */
static int resolve_store(const char *arg, char **out, bool *exists)
{
	char *copy1 = NULL, *copy2 = NULL, *parent = NULL;
	struct stat st;
	int rc = 0;

	if (store_is_remote(arg)) {
		*exists = true;
		*out = strdup(arg);
		if (!*out) {
			fail("out of memory");
			return -ENOMEM;
		}
		return 0;
	}
	*out = realpath(arg, NULL);
	if (*out) {
		*exists = !empty_dir(*out);
		if (stat(*out, &st) == 0 && !S_ISDIR(st.st_mode)) {
			fail("store %s: %s", arg, strerror(ENOTDIR));
			rc = -ENOTDIR;
		}
		goto out;
	}
	if (errno != ENOENT) {
		rc = -errno;
		fail("store %s: %s", arg, strerror(errno));
		goto out;
	}
	*exists = false;
	copy1 = strdup(arg);
	copy2 = strdup(arg);
	if (!copy1 || !copy2) {
		rc = -ENOMEM;
		fail("out of memory");
		goto out;
	}
	parent = realpath(dirname(copy1), NULL);
	if (!parent) {
		rc = -errno;
		fail("store %s: parent directory %s: %s", arg, dirname(copy2),
		     strerror(errno));
		goto out;
	}
	if (asprintf(out, "%s/%s", strcmp(parent, "/") ? parent : "",
		     basename(copy2)) < 0) {
		*out = NULL;
		rc = -ENOMEM;
		fail("out of memory");
	}
out:
	free(copy1);
	free(copy2);
	free(parent);
	return rc;
}

/* The mountpoint must exist, be a folder and be empty. */
static int check_mountpoint(const char *arg, char **out)
{
	struct dirent *de;
	DIR *d = NULL;
	int rc = 0;

	*out = realpath(arg, NULL);
	if (!*out) {
		rc = -errno;
		fail("mountpoint %s: %s", arg, strerror(errno));
		goto out;
	}
	d = opendir(*out);
	if (!d) {
		rc = -errno;
		fail("mountpoint %s: %s", arg, strerror(errno));
		goto out;
	}
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			rc = -ENOTEMPTY;
			fail("mountpoint %s is not empty", arg);
			goto out;
		}
	}
out:
	if (d)
		closedir(d);
	return rc;
}

/* Parent side of the daemonizing fork: waits for the child's word. */
static int wait_child(pid_t pid, int fd)
{
	char buf[PATH_MAX + 256];
	size_t len = 0;
	ssize_t n;
	int status;

	while (len < sizeof(buf) - 1 &&
	       (n = read(fd, buf + len, sizeof(buf) - 1 - len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		len += n;
		if (buf[0] == '0')
			break; /* mounted */
	}
	buf[len] = '\0';
	if (len && buf[0] == '0')
		return 0;
	if (len > 1)
		fprintf(stderr, "%s\n", buf + 1);
	if (waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	    WEXITSTATUS(status))
		return WEXITSTATUS(status);
	if (len <= 1)
		fprintf(stderr, "pathfs: the daemon died while starting\n");
	return 1;
}

/*
 * 1 if process @pid sees a FUSE mount of a drive of the store at @dir (source
 * "DIR", as add_mount_opts names it, or "DIR:DRIVE", as daemons before it
 * did), 0 if not, -errno if its mount table cannot be read (-ENOENT: the
 * process is gone).
 */
static int serves_mount(pid_t pid, const char *dir)
{
	char path[64], *line = NULL;
	size_t cap = 0, dlen = strlen(dir);
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!found && getline(&line, &cap, f) > 0) {
		struct mountinfo m;
		const char *src;

		if (mountinfo_parse(line, &m) || strncmp(m.type, "fuse", 4))
			continue;
		src = m.source;
		found = !strncmp(src, dir, dlen) &&
			(!src[dlen] ||
			 (src[dlen] == ':' &&
			  store_drive_name_check(src + dlen + 1) == 0));
	}
	free(line);
	fclose(f);
	return found;
}

/*
 * How long a new mount waits for the daemon that served the store before and
 * whose mount is gone (unmounted, still closing the store), and after how
 * long it says that it waits.
 */
#define CLOSE_WAIT_SECONDS 60
#define CLOSE_WAIT_NOTICE  1

static double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * store_open(), waiting while the only holder of the store is a daemon that
 * is shutting down: `fusermount3 -u MNT` returns when the kernel lets go, a
 * moment before the old daemon has closed the store. Any other holder (a
 * mounted daemon, pathfsctl, a daemon still starting) gives -EBUSY at once.
 * *waited_for is the pid waited for, if it took so long that we said so.
 */
static int open_waiting(const char *dir, const struct store_options *so,
			struct store **out, pid_t *waited_for)
{
	double start = now_seconds(), t;
	int rc, m, unserved = 0, said = 0;
	pid_t pid;

	*waited_for = 0;
	for (;;) {
		rc = store_open(out, dir, so);
		if (rc != -EBUSY)
			return rc;
		if (store_server(dir, &pid) || pid <= 0) {
			/*
			 * No daemon serves it. The store lock is dropped
			 * before the serving lock, so a daemon that closed
			 * between our two looks has freed the store: one more
			 * try tells.
			 */
			if (unserved++)
				return rc;
			continue;
		}
		unserved = 0;
		m = serves_mount(pid, dir);
		if (m > 0 || (m < 0 && m != -ENOENT))
			return rc; /* still mounted, or cannot tell: in use */
		t = now_seconds() - start;
		if (t >= CLOSE_WAIT_SECONDS)
			return -ETIMEDOUT;
		if (m == -ENOENT)
			continue; /* it has just exited */
		if (t >= CLOSE_WAIT_NOTICE && !said) {
			fprintf(stderr,
				"pathfs: waiting for the daemon that served "
				"%s before (pid %d, unmounted) to close it\n",
				dir, (int)pid);
			said = 1;
			*waited_for = pid;
		}
		usleep(10000);
	}
}

static int open_store(const char *dir, bool exists, const struct options *o,
		      struct store **out)
{
	struct store_options so;
	char why[1024] = "";
	pid_t waited_for;
	int rc;

	memset(&so, 0, sizeof(so));
	so.why = why;
	so.why_size = sizeof(why);
	/* a remote store is made at its first read-write open */
	so.create = (!exists || store_is_remote(dir)) && !o->ro;
	so.read_only = o->ro;
	so.shared = o->shared;
	so.sync = o->sync;
	so.rename_batch = o->rename_batch;
	so.rename_bytes = o->rename_bytes;
	so.cache_mb = o->cache_mb;
	rc = open_waiting(dir, &so, out, &waited_for);
	switch (rc) {
	case 0:
		if (waited_for)
			fprintf(stderr, "pathfs: store %s is free now\n", dir);
		break;
	case -EBUSY: {
		char who[512];
		int held = store_holder(dir, who, sizeof(who));

		if (held == 1 && !o->shared)
			fail("store %s is open by shared writers (-o shared "
			     "mounts: %s): mount it with -o shared too, or -o "
			     "ro",
			     dir, who);
		else if (held == 0)
			fail("store %s is open read-write by %s: one writer "
			     "per drive (if that one died, its lease frees "
			     "the drive within seconds; -o ro mounts "
			     "anywhere)%s",
			     dir, who,
			     o->shared ? "; -o shared mounts only beside "
					 "other -o shared ones"
				       : "");
		else if (store_is_remote(dir) && !o->shared)
			fail("store %s is open by shared writers (-o shared "
			     "mounts): mount it with -o shared too, or -o ro",
			     dir);
		else
			fail("store %s is in use by another process "
			     "(mounted?)",
			     dir);
		break;
	}
	case -ETIMEDOUT:
		fail("store %s: the daemon that served it before (pid %d, "
		     "unmounted) did not close it within %d seconds",
		     dir, (int)waited_for, CLOSE_WAIT_SECONDS);
		break;
	case -ENOSPC: {
		uint64_t avail, need;

		if (store_room(dir, &avail, &need))
			fail("store %s: no space left on its file system "
			     "(%llu KiB free, a read-write mount needs %llu "
			     "KiB): free some there, or mount it with -o ro",
			     dir, (unsigned long long)(avail >> 10),
			     (unsigned long long)(need >> 10));
		else
			fail("store %s: no space left on its file system to "
			     "finish opening it (recovery or upgrade): free "
			     "some there, or mount it with -o ro",
			     dir);
		break;
	}
	case -EMEDIUMTYPE:
		fail("%s is not a pathfs store", dir);
		break;
	case -EBADMSG: {
		char what[1024];

		if (store_damage(dir, what, sizeof(what)))
			snprintf(what, sizeof(what),
				 "a write-ahead log is damaged");
		fail("store %s: %s; not mounted, nothing changed ('pathfsctl "
		     "-s %s recover --truncate-log' keeps what precedes the "
		     "damage and drops the rest, after copying the logs to "
		     "%s/lost+found/)",
		     dir, what, dir, dir);
		break;
	}
	case -EROFS:
		fail("store %s is on a read-only file system: mount it with "
		     "-o ro",
		     dir);
		break;
	case -EUCLEAN: {
		char what[64];

		if (store_missing(dir, what, sizeof(what)))
			fail("%s is a damaged pathfs store: its file %s is "
			     "missing",
			     dir, what);
		else
			fail("cannot open store %s: %s", dir,
			     store_strerror(rc));
		break;
	}
	case -EPROTONOSUPPORT:
		fail("store %s was written by a newer pathfs (format version "
		     "%d here)",
		     dir, TREE_FORMAT_VERSION);
		break;
	case -ENOENT:
		fail("store %s: %s", dir,
		     o->ro && !exists ? "does not exist (read-only mount)"
				      : strerror(-rc));
		break;
	default: /* etcd: wrong password, certificate, refused, ... */
		fail("cannot open store %s: %s", dir,
		     why[0] ? why : store_strerror(rc));
		break;
	}
	return rc;
}

/* A finding of store_check_private() at mount, repaired: to the log. */
static void private_note(void *arg, const char *msg)
{
	(void)arg;
	plog(LOG_NOTICE, "%s", msg);
}

/* Opens drive o->drive, creating it if it is missing (*created). */
static int open_drive(struct store *s, const struct options *o,
		      struct tree **out, bool *created)
{
	int rc = store_drive(s, o->drive, out);

	*created = false;
	if (rc == -ENOENT && !o->ro) {
		rc = store_drive_create(s, o->drive, getuid(), getgid());
		if (!rc) {
			*created = true;
			rc = store_drive(s, o->drive, out);
		}
	}
	if (rc)
		fail("drive %s of %s: %s", o->drive, store_dir(s),
		     rc == -ENOENT ? "no such drive" : store_strerror(rc));
	return rc;
}

/*
 * Adds -o fsname=STORE,subtype=pathfs,default_permissions for libfuse. The
 * mount's source is the store's resolved path (or URL) alone, as an fstab
 * line or `mount -t fuse.pathfs STORE MNT` names it, so that findmnt -S
 * STORE and mount -a (which skips a line whose source is mounted there)
 * find the mount; one daemon serves a store, so the drive need not be part
 * of it. (umount STORE cannot: umount(8) takes a folder for a mount point.)
 */
static int add_mount_opts(struct fuse_args *args, const char *store)
{
	char *fsname = NULL, *opts = NULL;
	int rc = -1;

	if (fuse_opt_add_opt_escaped(&fsname, store) ||
	    asprintf(&opts, "-ofsname=%s,subtype=pathfs,default_permissions",
		     fsname) < 0) {
		opts = NULL;
		goto out;
	}
	rc = fuse_opt_add_arg(args, opts);
out:
	free(fsname);
	free(opts);
	return rc;
}

/* Points stdin, stdout and, unless @keep_stderr, stderr at /dev/null. */
static void detach_stdio(bool keep_stderr)
{
	int fd = open("/dev/null", O_RDWR);

	if (fd < 0)
		return;
	dup2(fd, 0);
	dup2(fd, 1);
	if (!keep_stderr)
		dup2(fd, 2);
	if (fd > 2)
		close(fd);
}

/*
 * Sends the log where -o log= says (syslog, stderr or a file), or else to
 * stderr in the foreground, to syslog when a syslog daemon listens, and to
 * STORE/pathfs.log (rotated by size) when none does: without one, syslog(3)
 * would drop every line, errors about damaged records included. *where
 * names the place for the mount message ("syslog", "stderr" or the file;
 * static or owned by @o). A -o ro mount of a store on a read-only file
 * system, with no log asked for, logs to syslog(3) all the same, and says
 * so on stderr. Errors: -errno, reported.
 */
static int start_log(struct options *o, const char *dir, const char **where)
{
	const char *want = o->log;
	int rc;

	if (!want)
		want = o->foreground		? "stderr"
		       : log_syslog_listening() ? "syslog"
						: NULL;
	if (want && !strcmp(want, "stderr")) {
		*where = "stderr";
		return 0;
	}
	if (want && !strcmp(want, "syslog")) {
		if (!log_syslog_listening()) {
			fail("-o log=syslog: no syslog daemon listens on %s "
			     "(use -o log=FILE)",
			     _PATH_LOG);
			return -ENOTCONN;
		}
		log_to_syslog("pathfs");
		*where = "syslog";
		return 0;
	}
	if (!want && store_is_remote(dir)) {
		fail("store %s is a service, no directory: no "
		     "STORE/pathfs.log there and no syslog daemon listens "
		     "(use -o log=FILE)",
		     dir);
		return -ENOTCONN;
	}
	if (!want) {
		free(o->log);
		if (asprintf(&o->log, "%s/pathfs.log", dir) < 0) {
			o->log = NULL;
			fail("out of memory");
			return -ENOMEM;
		}
	}
	rc = log_to_file(o->log, 0);
	if (rc == -EROFS && !want && o->ro) {
		/* a -o ro mount of a store on a read-only file system: no
		 * log file there, and none asked for elsewhere */
		fprintf(stderr,
			"pathfs: %s is read-only: logging to syslog, which no "
			"daemon reads here (-o log=FILE keeps the lines)\n",
			o->log);
		log_to_syslog("pathfs");
		*where = "syslog";
		return 0;
	}
	if (rc) {
		fail("log file %s: %s", o->log, strerror(-rc));
		return rc;
	}
	*where = o->log;
	return 0;
}

/* A line about what a successful startup did (made a store or a drive,
 * mounted): to the log, and to stderr only when it is a terminal the log
 * does not already write to; silent otherwise, as mount(8) and other
 * filesystems are on success (scripts and test suites compare what a mount
 * prints). */
static void startup_note(const char *log_where, const char *fmt, ...)
{
	char *line = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (strcmp(log_where, "stderr") && isatty(STDERR_FILENO))
		fprintf(stderr, "pathfs: %s\n", line);
	plog(LOG_INFO, "%s", line);
	free(line);
}

/* Whether the kernel still holds the FUSE connection of @se (a signal ended
 * the loop, not the unmount of its last mount): poll gives POLLERR once it
 * ended it. */
static bool conn_alive(struct fuse_session *se)
{
	struct pollfd p = {.fd = fuse_session_fd(se), .events = 0};

	return p.fd >= 0 && poll(&p, 1, 0) >= 0 && !(p.revents & POLLERR);
}

/* What serve() brings up, in this order, and serve_end() takes down. */
struct served {
	struct store *s;
	struct tree *t;
	struct fs fs;
	bool inited;	       /* fs_init() done */
	const char *log_where; /* start_log()'s *where */
	struct fuse_lowlevel_ops ops;
	struct fuse_session *se;
	bool handlers, mounted;
	/* the connection's device (conn_known: read from the mount table),
	 * for a second mount's answer and for the end's unmounts */
	bool conn_known;
	unsigned conn_maj, conn_min;
	struct control *ctl;
};

/* Opens the store and the drive, sets up the daemon's state (sv->fs) by
 * the options and starts the log. Errors: -errno, reported (fail). */
static int open_fs(struct served *sv, struct options *o, const char *dir,
		   bool exists)
{
	bool made_drive;
	int rc;

	rc = open_store(dir, exists, o, &sv->s);
	if (rc)
		return rc;
	rc = open_drive(sv->s, o, &sv->t, &made_drive);
	if (rc)
		return rc;
	rc = fs_init(&sv->fs, sv->s, sv->t);
	if (rc) {
		fail("out of memory");
		return rc;
	}
	sv->inited = true;
	rc = start_log(o, dir, &sv->log_where);
	if (rc)
		return rc;
	if (!exists)
		startup_note(sv->log_where, "created store %s", dir);
	/* a store others could read (a folder made with mkdir, files of an
	 * older pathfs) is made owner-only, and the log says so */
	if (!o->ro)
		store_check_private(sv->s, true, private_note, NULL, NULL);
	if (made_drive)
		startup_note(sv->log_where, "created drive %s in %s", o->drive,
			     dir);
	/* branch deletes (pathfsctl rm -r, mv) keep only open files as orphans */
	tree_set_open_check(sv->t, itab_is_open, &sv->fs);
	sv->fs.ro = o->ro;
	sv->fs.shared = o->shared;
	/* -o sync: every write durable when it returns, not when flushed */
	sv->fs.writeback = o->writeback && !o->sync;
	sv->fs.noatime = o->noatime;
	sv->fs.strictatime = o->strictatime;
	sv->fs.nodiratime = o->nodiratime;
	sv->fs.debug = o->debug;
	sv->fs.single = o->single;
	if (o->timeout > 0)
		sv->fs.timeout = o->timeout;
	return 0;
}

/* Starts the FUSE session and mounts it on @mnt. Errors: -EINVAL, -EIO,
 * reported (fail). */
static int mount_session(struct served *sv, struct fuse_args *args,
			 const char *mnt)
{
	int rc;

	/* every request counted and timed (pathfsctl stats, SIGUSR1) */
	stats_wrap(&sv->ops, &fs_ops);
	sv->se = fuse_session_new(args, &sv->ops, sizeof(sv->ops), &sv->fs);
	if (!sv->se) {
		fail("cannot start a FUSE session (bad option?)");
		return -EINVAL;
	}
	if (fuse_set_signal_handlers(sv->se)) {
		fail("cannot set signal handlers");
		return -EIO;
	}
	sv->handlers = true;
	if (fuse_session_mount(sv->se, mnt)) {
		fail("cannot mount on %s", mnt);
		return -EIO;
	}
	sv->mounted = true;
	sv->fs.se = sv->se;
	/* the connection's device, for a second mount and for the end */
	rc = fs_second_conn(mnt, &sv->conn_maj, &sv->conn_min);
	if (rc)
		plog(LOG_WARNING,
		     "%s: the mount is not in the mount table (a second mount "
		     "of the store will be refused as in use)",
		     strerror(-rc));
	else
		sv->conn_known = true;
	/* INIT flags libfuse 3.14 does not know (HANDLE_KILLPRIV_V2) */
	rc = fs_devio_install(sv->se);
	if (rc)
		plog(LOG_WARNING,
		     "/dev/fuse hooks: %s (writes ask for "
		     "security.capability each time)",
		     strerror(-rc));
	return 0;
}

/*
 * What runs beside the mounted session: the watch of the writer's changes
 * (a -o ro mount of a store on etcd or DynamoDB), the serving lock, the
 * control socket and its answer to a second mount. Each failure is logged;
 * the mount serves without it.
 */
static void start_beside(struct served *sv, const struct options *o,
			 const char *dir)
{
	struct ctl_env env;
	int rc;

	/* a -o ro mount of a remote store (etcd, DynamoDB) follows the
	 * writer, a -o shared one the other writers (watch.c) */
	if ((o->ro || o->shared) && store_is_remote(dir)) {
		rc = fs_watch_start(&sv->fs);
		if (rc)
			plog(LOG_WARNING,
			     "cannot watch the other writers' changes: %s "
			     "(this mount shows them after its cache timeout)",
			     strerror(-rc));
	}
	/* from here until store_close(), a new mount that finds the store
	 * busy and this mount gone waits for us instead of failing */
	rc = store_serve(sv->s);
	if (rc)
		plog(LOG_WARNING,
		     "serving lock of %s: %s (a remount right after the "
		     "unmount may find the store busy)",
		     dir, strerror(-rc));

	stats_signal_store(sv->s);
	memset(&env, 0, sizeof(env));
	env.store = sv->s;
	env.default_drive = o->drive;
	env.mounted_drive = o->drive;
	env.begin = fs_ctl_begin;
	env.end = fs_ctl_end;
	env.ctx = &sv->fs;
	env.stats = stats_ctl;
	/* a -o ro mount of a store on etcd serves no socket: pathfsctl
	 * reaches the writer, or opens the store itself (fs/control.c) */
	rc = store_is_remote(dir) && o->ro
		 ? 0
		 : control_start(&sv->ctl, &env, getuid());
	if (rc == -EADDRINUSE && o->shared) {
		/* the socket is named after the store: the first shared
		 * writer on this machine serves it */
		plog(LOG_NOTICE,
		     "control socket: another -o shared mount of the store "
		     "on this machine serves pathfsctl");
		sv->ctl = NULL;
	} else if (rc) {
		plog(LOG_WARNING,
		     "control socket: %s (pathfsctl cannot reach "
		     "this mount)",
		     strerror(-rc));
		sv->ctl = NULL;
	}
	/* what a second mount of the store asks (second.c) */
	if (sv->ctl && sv->conn_known) {
		char *info = fs_second_info(sv->conn_maj, sv->conn_min,
					    o->drive, o->ro, o->allow_other);

		if (!info || control_set_mount(sv->ctl, info))
			plog(LOG_WARNING,
			     "%s: no answer for a second mount of the store "
			     "(it will be refused as in use)",
			     strerror(errno));
		free(info);
	}
}

/* Mounted: tells the log and a user at a terminal where the log goes,
 * tells the parent, then leaves the terminal. */
static void tell_mounted(const struct served *sv, const struct options *o,
			 const char *dir, const char *mnt)
{
	startup_note(sv->log_where, "mounted drive %s of %s on %s (log: %s)",
		     o->drive, dir, mnt, sv->log_where);
	if (status_fd < 0)
		return;
	if (write(status_fd, "0", 1) != 1) {
		/* the parent is gone: nobody to tell */
	}
	close(status_fd);
	status_fd = -1;
	if (chdir("/")) {
		/* harmless: the paths the daemon keeps are absolute
		 * (absolute_log) */
	}
	detach_stdio(!strcmp(sv->log_where, "stderr"));
}

/*
 * Takes down what serve() brought up, in reverse: the control socket, the
 * watch, every mount of the connection, the session, then syncs and closes
 * the store and frees the daemon's state.
 */
static void serve_end(struct served *sv, const struct options *o,
		      const char *mnt)
{
	struct second_mounts others = {NULL, NULL, 0};
	int rc;

	control_stop(sv->ctl);
	if (sv->inited)
		fs_watch_stop(&sv->fs);
	/* a signal ends every mount of the connection, not only the first.
	 * Its device number is ours only until the kernel ends the
	 * connection (the unmount of its last mount did: then it may be
	 * another mount's already), which it does before it frees the
	 * number: alive after the mount table was read, every mount of that
	 * number in it was ours. */
	if (sv->mounted && sv->conn_known) {
		rc = fs_second_mounts(sv->conn_maj, sv->conn_min, mnt, &others);
		if (rc)
			plog(LOG_WARNING,
			     "cannot read the mount table: %s (other mounts "
			     "of the store stay, answering ENOTCONN)",
			     strerror(-rc));
		if (!conn_alive(sv->se))
			fs_second_mounts_free(&others);
	}
	if (sv->mounted)
		fuse_session_unmount(sv->se);
	fs_second_detach(&others);
	if (sv->handlers)
		fuse_remove_signal_handlers(sv->se);
	if (sv->se)
		fuse_session_destroy(sv->se);
	if (sv->s) {
		rc = o->ro ? 0 : store_sync(sv->s);
		if (rc)
			plog(LOG_ERR, "sync at unmount: %s", strerror(-rc));
		if (sv->t)
			tree_set_open_check(sv->t, NULL, NULL);
		stats_signal_store(NULL);
		store_close(sv->s);
	}
	if (sv->inited)
		fs_release(&sv->fs);
	if (sv->mounted)
		plog(LOG_INFO, "unmounted %s", mnt);
}

/* Opens, mounts, serves, unmounts, closes. Runs in the serving process.
 * Returns 0 once it served (however the session loop ended), else the
 * startup's error, reported. */
static int serve(struct options *o, struct fuse_args *args, const char *dir,
		 bool exists, const char *mnt)
{
	struct served sv;
	int rc;

	memset(&sv, 0, sizeof(sv));
	/* first: every thread made later must block SIGUSR1 (stats.h) */
	rc = stats_signal_start(NULL);
	if (rc)
		plog(LOG_WARNING, "no statistics on SIGUSR1: %s",
		     strerror(-rc));
	rc = open_fs(&sv, o, dir, exists);
	if (!rc)
		rc = mount_session(&sv, args, mnt);
	if (!rc) {
		start_beside(&sv, o, dir);
		tell_mounted(&sv, o, dir, mnt);
		if (o->single) {
			/* as fs_loop's threads: the watch need not hand
			 * back what the replies tell */
			tree_watch_quiet(sv.fs.tree, true);
			rc = fuse_session_loop(sv.se);
		} else {
			/* one reader at a time, more threads for slow
			 * requests */
			sv.fs.blocking = fs_loop_blocking;
			rc = fs_loop(sv.se, &sv.fs, 16, 8);
		}
		if (rc)
			plog(LOG_ERR, "session loop ended: %s",
			     strerror(rc < 0 ? -rc : rc));
		rc = 0;
	}
	serve_end(&sv, o, mnt);
	stats_signal_stop();
	return rc;
}

/*
 * The store is served by a daemon here: @mnt becomes another mount of its
 * connection (second.c) and pathfs exits, silent on success. Returns true
 * when that was the case (*rc: the exit status), false when a daemon must
 * start.
 */
static bool second_mount(const struct options *o, const struct fuse_args *args,
			 const char *dir, const char *mnt, int *rc)
{
	/* libfuse's defaults for a new mount, unless suid or dev is asked */
	struct second_req req = {o->drive, o->ro, o->allow_other,
				 MS_NOSUID | MS_NODEV};
	char err[PATH_MAX + 256];
	int r;

	if (fs_mount_flags(args, &req.flags)) {
		fprintf(stderr, "pathfs: out of memory\n");
		*rc = 1;
		return true;
	}
	r = fs_second_mount(dir, mnt, &req, err, sizeof(err));
	if (r > 0)
		return false;
	if (r < 0)
		fprintf(stderr, "pathfs: %s\n", err);
	*rc = r < 0 ? 1 : 0;
	return true;
}

/* -o shared where it cannot be: said on stderr, true. */
static bool shared_refused(const struct options *o, const char *dir)
{
	if (o->ro) {
		fprintf(stderr, "pathfs: -o shared and -o ro together: a "
				"shared mount is a writer (a -o ro mount "
				"follows the writers without it)\n");
		return true;
	}
	if (!store_is_remote(dir)) {
		fprintf(stderr,
			"pathfs: -o shared: %s is a store directory, which "
			"has one writer (its daemon; more mounts of it here "
			"share that daemon): -o shared is for a store on "
			"etcd or DynamoDB\n",
			dir);
		return true;
	}
	return false;
}

/* -o log=FILE relative to where pathfs was started (the daemon leaves for
 * "/"): made absolute. Errors: -1 with errno. */
static int absolute_log(struct options *o)
{
	char *cwd, *abs;

	if (!o->log || o->log[0] == '/' || !strcmp(o->log, "syslog") ||
	    !strcmp(o->log, "stderr"))
		return 0;
	if (!o->log[0]) {
		errno = EINVAL;
		return -1;
	}
	cwd = getcwd(NULL, 0);
	if (!cwd)
		return -1;
	if (asprintf(&abs, "%s/%s", cwd, o->log) < 0) {
		free(cwd);
		return -1;
	}
	free(cwd);
	free(o->log);
	o->log = abs;
	return 0;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct options o;
	char *dir = NULL, *mnt = NULL;
	bool exists = false;
	int pfd[2], rc = 1;
	pid_t pid;

	memset(&o, 0, sizeof(o));
	/*
	 * Writeback cache off by default: it makes 4 KiB writes ~6x faster
	 * (no read-modify-write of a 64 KiB block per write) and 1 MiB writes
	 * no faster, but data the kernel holds back is lost with an EIO at
	 * close if the daemon dies, and the kernel becomes the authority on
	 * size and mtime. -o writeback turns it on.
	 */
	o.writeback = 0;
	/*
	 * The store's files are its owner's only (README, Security): RocksDB
	 * creates them all the daemon's life (tables, logs, from background
	 * threads) with mode 0644 less the umask. Nodes of the drive are not
	 * host files: their modes come from the requests.
	 */
	umask(077);
	if (fuse_opt_parse(&args, &o, opt_spec, opt_proc) == -1) {
		fprintf(stderr, "pathfs: bad options (see pathfs --help)\n");
		goto out;
	}
	if (o.help) {
		usage(stdout);
		rc = 0;
		goto out;
	}
	if (o.version) {
		printf("pathfs %s (libfuse %s)\n", PATHFS_VERSION,
		       fuse_pkgversion());
		rc = 0;
		goto out;
	}
	if (o.nargs != 2) {
		usage(stderr);
		rc = 2;
		goto out;
	}
	if (!o.drive)
		o.drive = strdup("main");
	if (!o.drive || store_drive_name_check(o.drive)) {
		fprintf(stderr,
			"pathfs: bad drive name '%s' (1..64 of "
			"A-Z a-z 0-9 _ . -)\n",
			o.drive ? o.drive : "");
		goto out;
	}
	if (o.debug)
		log_set_debug(true);
	if (o.remount) {
		/* mount -o remount: the mount's flags change in place */
		char err[PATH_MAX + 64];

		rc = fs_remount(o.mnt, &args, err, sizeof(err)) ? 1 : 0;
		if (rc)
			fprintf(stderr, "pathfs: %s\n", err);
		goto out;
	}
	if (absolute_log(&o)) {
		fprintf(stderr, "pathfs: -o log=%s: %s\n", o.log,
			strerror(errno));
		goto out;
	}
	if (resolve_store(o.store, &dir, &exists))
		goto out;
	if (check_mountpoint(o.mnt, &mnt))
		goto out;
	if (o.shared && shared_refused(&o, dir))
		goto out;
	/* a shared writer is a daemon of its own, as on another machine */
	if (!o.shared && second_mount(&o, &args, dir, mnt, &rc))
		goto out;
	if (add_mount_opts(&args, dir)) {
		fprintf(stderr, "pathfs: out of memory\n");
		goto out;
	}

	if (!o.foreground) {
		if (pipe(pfd)) {
			fprintf(stderr, "pathfs: pipe: %s\n", strerror(errno));
			goto out;
		}
		pid = fork();
		if (pid < 0) {
			fprintf(stderr, "pathfs: fork: %s\n", strerror(errno));
			goto out;
		}
		if (pid > 0) {
			close(pfd[1]);
			rc = wait_child(pid, pfd[0]);
			close(pfd[0]);
			goto out;
		}
		close(pfd[0]);
		status_fd = pfd[1];
		setsid();
	}
	rc = serve(&o, &args, dir, exists, mnt) ? 1 : 0;
out:
	if (status_fd >= 0)
		close(status_fd);
	fuse_opt_free_args(&args);
	free(o.drive);
	free(o.log);
	free(o.store);
	free(o.mnt);
	free(dir);
	free(mnt);
	return rc;
}
