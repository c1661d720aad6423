/*
 * store.c - opening, upgrading, recovering and closing a store; its drives
 * are drive.c's.
 *
 * A store is a directory: RocksDB's files plus a marker file PATHFS that says
 * "this is a pathfs store" and its format version, and that carries our own
 * lock (flock). The marker is checked and locked before RocksDB opens
 * anything, so a store held by another process, a directory that is not a
 * store, or a store of a newer format is refused without a byte written.
 *
 * A second lock on the marker says who *serves* the store: a daemon takes a
 * POSIX record lock on its first byte (store_serve) once its mount is in
 * place and keeps it until store_close(), which drops the flock first. So
 * whenever the flock is held and the record lock is not, the holder is not a
 * daemon that got as far as mounting (pathfsctl, a daemon still starting);
 * and a process that finds the store busy can learn the serving daemon's pid
 * (F_GETLK) and look whether its mount is still there (store_server).
 *
 * A store's files hold every drive's content, so they are their owner's
 * only: store_check_private() finds (and makes owner-only) a folder or files
 * that grant group or others anything; the programs' umask (077) keeps the
 * files RocksDB makes so.
 *
 * A remote store (etcd://HOSTS/NAME, kv_etcd.c) has no directory: its marker
 * is the key PATHFS, beside every drive's keys, and it has no lock file and
 * no serving lock: kv_etcd.c's owner key (a lease) refuses a second
 * read-write open anywhere (-EBUSY; store_holder names the writer).
 *
 * Formats (the marker's number): 1 kept content blocks with the tree; 2 has
 * them in their own kv family (store_upgrade moves them); 3 may hold patched
 * blocks (content.c); 4 has the reverse index PARENT# (parent.c;
 * store_upgrade_index builds it). A read-write open upgrades a store step by
 * step, each step resumable; a read-only open reads an older store as it
 * is.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "branch_lock_i.h"
#include "crash_hook_i.h"
#include "drive_i.h"
#include "log.h"
#include "parent_i.h"

#define MARKER_NAME "PATHFS"
/* operations a rename chunk leaves for its journal record and the like */
#define STORE_BATCH_SLACK 8
#define MARKER_TEXT	  "pathfs store\nformat %d\n"

struct store_priv {
	struct store pub;
	int marker_fd;
};

/* 1 if @dir holds nothing, 0 if it holds something, -errno. */
static int dir_is_empty(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int empty = 1;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			empty = 0;
			break;
		}
	}
	closedir(d);
	return empty;
}

/*
 * Checks and locks the marker of the store at @dir, creating the store
 * directory and marker (of format @opt->format, or this program's) when @opt
 * allows. On success *fd is the locked marker and *fmt its format.
 */
static int marker_open(const char *dir, const struct store_options *opt,
		       int *fd, int *fmt)
{
	char path[4200], buf[128];
	struct stat st;
	int rc, format = 0, mfd = -1;
	ssize_t n;

	if (stat(dir, &st) < 0) {
		if (errno != ENOENT || !opt->create || opt->read_only)
			return -errno;
		if (mkdir(dir, 0700) < 0)
			return -errno;
	} else if (!S_ISDIR(st.st_mode)) {
		return -ENOTDIR;
	}
	snprintf(path, sizeof(path), "%s/" MARKER_NAME, dir);
	mfd = open(path, (opt->read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (mfd < 0) {
		if (errno != ENOENT)
			return -errno;
		rc = dir_is_empty(dir);
		if (rc < 0)
			return rc;
		if (rc == 0)
			return -EMEDIUMTYPE; /* something else lives here */
		if (!opt->create || opt->read_only)
			return -ENOENT;
		mfd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (mfd < 0)
			return -errno;
		n = snprintf(buf, sizeof(buf), MARKER_TEXT,
			     opt->format ? opt->format : TREE_FORMAT_VERSION);
		if (write(mfd, buf, (size_t)n) != n || fsync(mfd) < 0) {
			rc = -errno;
			close(mfd);
			unlink(path);
			return rc ? rc : -EIO;
		}
	}
	n = pread(mfd, buf, sizeof(buf) - 1, 0);
	if (n < 0) {
		rc = -errno;
		goto fail;
	}
	buf[n] = '\0';
	if (sscanf(buf, MARKER_TEXT, &format) != 1 || format < 1) {
		rc = -EMEDIUMTYPE;
		goto fail;
	}
	if (format > TREE_FORMAT_VERSION) {
		rc = -EPROTONOSUPPORT;
		goto fail;
	}
	if (flock(mfd, (opt->read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		goto fail;
	}
	*fd = mfd;
	*fmt = format;
	return 0;
fail:
	close(mfd);
	return rc;
}

/*
 * Records format @format in the locked marker @fd, durably. The text keeps its
 * length (one digit), so the one small pwrite leaves the old text or the new.
 */
static int marker_set_format(int fd, int format)
{
	char buf[128];
	int n = snprintf(buf, sizeof(buf), MARKER_TEXT, format);

	if (pwrite(fd, buf, (size_t)n, 0) != n || ftruncate(fd, n) < 0 ||
	    fsync(fd) < 0)
		return -EIO;
	return 0;
}

/* The crash hook of the upgrade (PATHFS_CRASH_AFTER_BATCHES, tests). */
static void upgrade_hook(void *ctx, uint64_t moved)
{
	(void)moved;
	crash_hook_batch(ctx);
}

/*
 * Upgrades the store from format @from to @to, before anything else reads it.
 * From 1 (every key in one kv family): kv_upgrade moves the content blocks to
 * their family in atomic batches and syncs. From 2, there is nothing to
 * convert: format 3 only adds patched blocks (content.c), which a format-2
 * program cannot read, so the marker must say 3 before the first patch is
 * written. The marker is rewritten last, in one small write: a crash at any
 * point leaves a store that the next open upgrades again from where it
 * stopped (moved blocks are no longer in the tree family), and that an older
 * program refuses meanwhile, as it refuses the upgraded store.
 */
static int store_upgrade(struct store *s, int fd, int from, int to)
{
	struct crash_hook h;
	uint64_t moved = 0;
	int rc = 0;

	crash_hook_init(&h);
	plog(LOG_NOTICE, "store %s: upgrading from format %d to %d", s->dir,
	     from, to);
	if (from == 1)
		rc = kv_upgrade(s->kv, s->opt.rename_batch, upgrade_hook, &h,
				&moved);
	if (rc == 0)
		rc = marker_set_format(fd, to);
	if (rc)
		plog(LOG_ERR,
		     "store %s: upgrade stopped: %s (opening it again "
		     "continues it)",
		     s->dir, strerror(-rc));
	else
		plog(LOG_NOTICE,
		     "store %s: upgraded, %llu content blocks moved", s->dir,
		     (unsigned long long)moved);
	return rc;
}

/*
 * Upgrades a format-3 store to format 4 (the reverse index PARENT#, see
 * parent.c): builds every drive's index, syncs, then the marker says 4. A
 * crash midway leaves the marker at 3, and the next open builds the index
 * from scratch again; a format-3 program may use the store meanwhile (it
 * ignores the records, and the next build replaces them).
 */
static int store_upgrade_index(struct store *s, int fd, int from)
{
	char **names = NULL;
	size_t n = 0;
	uint64_t total = 0;
	int rc;

	plog(LOG_NOTICE, "store %s: upgrading from format %d to %d", s->dir,
	     from, PARENT_FORMAT);
	rc = store_drive_list(s, &names, &n);
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct tree *t;
		uint64_t count = 0;

		rc = store_drive(s, names[i], &t);
		if (rc == 0)
			rc = parent_index_build(t, &count);
		total += count;
	}
	store_drive_list_free(names, n);
	if (rc == 0)
		rc = marker_set_format(fd, PARENT_FORMAT);
	if (rc)
		plog(LOG_ERR,
		     "store %s: upgrade stopped: %s (opening it again "
		     "continues it)",
		     s->dir, strerror(-rc));
	else
		plog(LOG_NOTICE, "store %s: upgraded, %llu nodes indexed",
		     s->dir, (unsigned long long)total);
	return rc;
}

/* The byte of the marker that the serving lock covers. */
static void serve_range(struct flock *fl, short type)
{
	memset(fl, 0, sizeof(*fl));
	fl->l_type = type;
	fl->l_whence = SEEK_SET;
	fl->l_start = 0;
	fl->l_len = 1;
}

int store_serve(struct store *s)
{
	struct store_priv *p = (struct store_priv *)s;
	struct flock fl;
	int tries = 0;

	/*
	 * The previous holder drops its serving lock a moment after its store
	 * lock (store_close): a conflict here is that moment, and it passes.
	 * Bounded (10 s) all the same, for a holder stopped in between.
	 */
	if (p->marker_fd < 0)
		return 0; /* remote: no lock file */
	serve_range(&fl, s->opt.read_only ? F_RDLCK : F_WRLCK);
	while (fcntl(p->marker_fd, F_SETLK, &fl) < 0) {
		if ((errno != EAGAIN && errno != EACCES) || ++tries > 10000)
			return -errno;
		usleep(1000);
	}
	return 0;
}

int store_holder(const char *dir, char *buf, size_t size)
{
	return kv_holder(dir, buf, size);
}

int store_server(const char *dir, pid_t *pid)
{
	char path[4200];
	struct flock fl;
	int fd, rc = 0;

	*pid = 0;
	if (store_is_remote(dir))
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/" MARKER_NAME, dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	serve_range(&fl, F_WRLCK); /* conflicts with any holder */
	if (fcntl(fd, F_GETLK, &fl) < 0)
		rc = -errno;
	else if (fl.l_type == F_UNLCK)
		rc = -ENOENT;
	else
		*pid = fl.l_pid;
	close(fd); /* this process holds no record lock on the marker */
	return rc;
}

/* Whether a branch lock of @l (@n) names record @seq. */
static bool locked(const struct branch_lock *l, size_t n, uint64_t seq)
{
	for (size_t i = 0; i < n; i++)
		if (l[i].seq == seq)
			return true;
	return false;
}

/* How many journal records of drive @t are unfinished renames a sole
 * writer left (not paused clones, which wait for their token, nor shared
 * writers' under their branch lock, which a writer finishes), each logged;
 * or -errno. */
static int unfinished_renames(struct tree *t)
{
	struct tree_journal_entry *e = NULL;
	struct branch_lock *l = NULL;
	size_t n = 0, nl = 0;
	int rc, left = 0;

	rc = lock_list(t, &l, &nl);
	if (rc == 0)
		rc = tree_journal_list(t, &e, &n);
	for (size_t i = 0; i < n && rc == 0; i++) {
		if (!strcmp(e[i].op, "clone") || locked(l, nl, e[i].seq))
			continue;
		left++;
		plog(LOG_ERR, "drive %s: unfinished %s #%llu %s -> %s", t->name,
		     e[i].op, (unsigned long long)e[i].seq, e[i].src, e[i].dst);
	}
	tree_journal_list_free(e, n);
	lock_list_free(l, nl);
	return rc ? rc : left;
}

/* Finishes interrupted drive deletes, replays journals and reclaims orphans
 * of every drive, before serving. */
static int store_recover(struct store *s)
{
	char **names = NULL;
	size_t n = 0;
	int rc;

	rc = store_drive_finish_deletes(s, &n);
	if (rc == 0)
		rc = store_drive_list(s, &names, &n);
	if (rc)
		return rc;
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct tree *t;
		size_t replayed = 0, reclaimed = 0;

		rc = store_drive(s, names[i], &t);
		if (rc)
			break;
		rc = tree_journal_replay(t, &replayed);
		if (rc == 0)
			rc = tree_reclaim_orphans(t, &reclaimed);
		if (replayed)
			plog(LOG_NOTICE,
			     "drive %s: replayed %zu unfinished journal "
			     "record%s",
			     t->name, replayed, replayed == 1 ? "" : "s");
		if (reclaimed)
			plog(LOG_NOTICE,
			     "drive %s: reclaimed %zu orphan inode%s", t->name,
			     reclaimed, reclaimed == 1 ? "" : "s");
	}
	store_drive_list_free(names, n);
	return rc;
}

/*
 * Sizes the batches of branch operations (clone, rm -r, the parent index)
 * to the engine's limits (kv_limits): a chunk of rename_batch keys goes with
 * a few more keys in one batch, and a chunk's bytes are at most about
 * rename_bytes plus one value. A rename's copies go by rename_copy, the
 * rename_batch asked, and fill their batches exactly (journal.c).
 */
static void store_fit_limits(struct store *s)
{
	const struct kv_limits *l = kv_limits(s->kv);

	if (l->batch_ops != SIZE_MAX &&
	    s->opt.rename_batch + STORE_BATCH_SLACK > l->batch_ops)
		s->opt.rename_batch = l->batch_ops > 2 * STORE_BATCH_SLACK
					  ? l->batch_ops - STORE_BATCH_SLACK
					  : l->batch_ops / 2;
	if (l->batch_bytes != SIZE_MAX &&
	    s->opt.rename_bytes > l->batch_bytes / 2)
		s->opt.rename_bytes = l->batch_bytes / 2;
}

const char *store_strerror(int err)
{
	switch (err) {
	case -EMEDIUMTYPE:
		return "not a pathfs store";
	case -EPROTONOSUPPORT:
		return "written by a newer pathfs";
	case -EUCLEAN:
		return "damaged (a file of its database is missing), or its "
		       "upgrade was interrupted (open it read-write once)";
	case -EBADMSG:
		return "a write-ahead log is damaged before its end";
	case -EHOSTUNREACH:
		return "no etcd member answered";
	case -EPROTO:
		return "an etcd member answered in another protocol (http to "
		       "a member that speaks TLS)";
	case -ENOTRECOVERABLE:
		return "a writer that stopped left a folder rename unfinished, "
		       "which only a sole writer finishes: open it read-write "
		       "once without shared writers (pathfsctl recover)";
	}
	return strerror(-err);
}

bool store_is_remote(const char *where)
{
	return kv_is_remote(where);
}

bool store_remote(const struct store *s)
{
	return store_is_remote(s->dir);
}

bool store_others_write(const struct store *s)
{
	return store_remote(s) && (s->opt.read_only || s->opt.shared);
}

/* The mode bits that let group or others at a store's folder or files. */
#define STORE_OTHERS 077

/*
 * Reports one finding of store_check_private(): @what (@many things) lets
 * group or others in (@mode, the first one's), and with @repair whether the
 * chmod of it worked (@err, an errno, or 0).
 */
static void private_report(void (*report)(void *, const char *), void *arg,
			   const char *what, bool many, mode_t mode,
			   bool repair, int err)
{
	char msg[4600];

	snprintf(msg, sizeof(msg),
		 "%s: other users may read %s (mode %04o, wants %04o)%s%s",
		 what, many ? "them" : "it", (unsigned)(mode & 07777),
		 (unsigned)(mode & 07777 & ~STORE_OTHERS),
		 !repair ? ""
		 : err	 ? ": cannot make it owner-only: "
			 : ": made owner-only",
		 repair && err ? strerror(err) : "");
	report(arg, msg);
}

int store_check_private(struct store *s, bool repair,
			void (*report)(void *arg, const char *msg), void *arg,
			size_t *findings)
{
	char what[4400], first[256] = "";
	mode_t first_mode = 0;
	size_t n = 0, files = 0;
	int rc = 0, err = 0, dfd;
	struct dirent *e;
	struct stat st;
	DIR *d = NULL;

	if (findings)
		*findings = 0;
	if (store_remote(s))
		return 0;
	dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if (st.st_mode & STORE_OTHERS) {
		if (repair && fchmod(dfd, st.st_mode & 07777 & ~STORE_OTHERS))
			err = errno;
		snprintf(what, sizeof(what), "store folder %s", s->dir);
		private_report(report, arg, what, false, st.st_mode, repair,
			       err);
		n++;
	}
	err = 0;
	d = fdopendir(dup(dfd));
	if (!d) {
		rc = -errno;
		goto out;
	}
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    S_ISLNK(st.st_mode) || !(st.st_mode & STORE_OTHERS))
			continue;
		if (!files++) {
			snprintf(first, sizeof(first), "%s", e->d_name);
			first_mode = st.st_mode;
		}
		if (repair &&
		    fchmodat(dfd, e->d_name, st.st_mode & 07777 & ~STORE_OTHERS,
			     0) &&
		    !err)
			err = errno;
	}
	if (files) {
		snprintf(what, sizeof(what), "store %s: %zu file%s (%s%s)",
			 s->dir, files, files == 1 ? "" : "s", first,
			 files > 1 ? ", ..." : "");
		private_report(report, arg, what, files > 1, first_mode, repair,
			       err);
		n++;
	}
out:
	if (d)
		closedir(d);
	if (dfd >= 0)
		close(dfd);
	if (findings)
		*findings = n;
	return rc;
}

int store_missing(const char *dir, char *what, size_t size)
{
	return kv_missing(dir, what, size);
}

int store_room(const char *dir, uint64_t *avail, uint64_t *need)
{
	return kv_room(dir, avail, need);
}

int store_identity(const char *where, char **out)
{
	return kv_identity(where, out);
}

/*
 * The marker of a remote store: key MARKER_NAME (outside every drive's
 * keys), holding the marker file's text; created (synced) if missing and
 * @opt allows. *fmt is its format. Errors: -ENOENT, -EMEDIUMTYPE,
 * -EPROTONOSUPPORT, and kv's.
 */
static int marker_key(struct store *s, const struct store_options *opt,
		      int *fmt)
{
	char *val = NULL, buf[128];
	size_t vlen;
	int rc, n, format = 0;

	rc = kv_get(s->kv, MARKER_NAME, strlen(MARKER_NAME), &val, &vlen);
	if (rc == -ENOENT && opt->create && !opt->read_only) {
		struct kv_batch *b = kv_batch_new(s->kv);
		n = snprintf(buf, sizeof(buf), MARKER_TEXT,
			     TREE_FORMAT_VERSION);
		kv_batch_put(b, MARKER_NAME, strlen(MARKER_NAME), buf,
			     (size_t)n);
		rc = kv_batch_commit(s->kv, b, true);
		kv_batch_free(b);
		if (rc)
			return rc;
		*fmt = TREE_FORMAT_VERSION;
		return 0;
	}
	if (rc)
		return rc;
	if (sscanf(val, MARKER_TEXT, &format) != 1 || format < 1)
		rc = -EMEDIUMTYPE;
	else if (format > TREE_FORMAT_VERSION)
		rc = -EPROTONOSUPPORT;
	free(val);
	*fmt = format;
	return rc;
}

int store_open(struct store **out, const char *dir,
	       const struct store_options *opt)
{
	bool remote = store_is_remote(dir);
	struct store_priv *p;
	struct store *s;
	struct kv_options ko = {0};
	int rc, format = 0, target;

	if (opt->why && opt->why_size)
		opt->why[0] = '\0';
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	s = &p->pub;
	p->marker_fd = -1;
	s->opt = *opt;
	s->opt.shared = remote && opt->shared; /* a directory has one writer */
	if (!s->opt.rename_batch)
		s->opt.rename_batch = 1024;
	s->rename_copy = s->opt.rename_batch;
	if (!s->opt.rename_bytes)
		s->opt.rename_bytes = 4 << 20;
	pthread_mutex_init(&s->lock, NULL);
	s->dir = strdup(dir);
	if (!s->dir) {
		rc = -ENOMEM;
		goto out;
	}
	if (opt->format > TREE_FORMAT_VERSION) {
		rc = -EINVAL;
		goto out;
	}
	/* a remote store is always of this program's format */
	if (remote && opt->format && opt->format != TREE_FORMAT_VERSION) {
		rc = -EINVAL;
		goto out;
	}
	rc = remote ? 0 : marker_open(dir, opt, &p->marker_fd, &format);
	if (rc)
		goto out;
	if (opt->format && opt->format < format) {
		rc = -EINVAL; /* no way back to an older format */
		goto out;
	}
	ko.create = opt->create;
	ko.read_only = opt->read_only;
	ko.sync = opt->sync;
	ko.cache_mb = opt->cache_mb;
	ko.family = key_family;
	ko.why = opt->why;
	ko.why_size = opt->why_size;
	ko.truncate_log = opt->truncate_log;
	ko.shared = opt->shared;
	/* format 1 is read as it is when it cannot or must not be upgraded */
	ko.single_family = format == 1 && (opt->read_only || opt->format == 1);
	rc = kv_open(&s->kv, dir, &ko);
	if (rc == -ENOENT)
		rc = -EMEDIUMTYPE; /* a marker but no database */
	if (rc)
		goto out;
	store_fit_limits(s);
	if (remote) {
		rc = marker_key(s, opt, &format);
		if (rc)
			goto out;
	}
	target = opt->format ? opt->format : TREE_FORMAT_VERSION;
	/* remote stores are made at this program's format (their marker is
	 * a key, which the upgrades, of a marker file, do not move) */
	/* up to format 3 before anything is read; the index (4) once the
	 * journals are replayed, of the finished tree */
	if (!opt->read_only && !remote && format < target &&
	    format < PARENT_FORMAT - 1) {
		int to = target < PARENT_FORMAT ? target : PARENT_FORMAT - 1;

		rc = store_upgrade(s, p->marker_fd, format, to);
		if (rc)
			goto out;
		format = to;
	}
	s->patch = format >= 3 && kv_can_patch(s->kv);
	s->format = format;
	if (!opt->read_only && !(remote && opt->shared)) {
		rc = store_recover(s);
		if (rc == 0 && !remote && format < PARENT_FORMAT &&
		    target >= PARENT_FORMAT) {
			rc = store_upgrade_index(s, p->marker_fd, format);
			if (rc == 0)
				s->format = PARENT_FORMAT;
		}
	} else {
		/* no recovery (read-only, or one writer of several: another
		 * may be running it); still refuse drives of a newer format.
		 * A shared writer also refuses a drive with a folder rename a
		 * stopped sole writer left unfinished: serving its half-moved
		 * branch, another writer's changes there would be lost to the
		 * replay that finishes it later (a shared writer's rename
		 * holds its branches: branch_lock.c) */
		char **names = NULL;
		size_t n = 0;
		rc = store_drive_list(s, &names, &n);
		for (size_t i = 0; i < n && rc == 0; i++) {
			struct tree *t;
			rc = store_drive(s, names[i], &t);
			if (rc == 0 && s->opt.shared && !opt->read_only)
				rc = unfinished_renames(t);
			if (rc > 0)
				rc = -ENOTRECOVERABLE;
		}
		store_drive_list_free(names, n);
	}
out:
	if (rc) {
		store_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void store_close(struct store *s)
{
	struct store_priv *p = (struct store_priv *)s;
	struct tree *t, *next;

	if (!s)
		return;
	kv_close(s->kv);
	for (t = s->drives; t; t = next) {
		next = t->next;
		tree_free(t);
	}
	for (t = s->dead; t; t = next) {
		next = t->next;
		tree_free(t);
	}
	if (p->marker_fd >= 0) {
		/* the store lock first, then the serving lock (see the top) */
		flock(p->marker_fd, LOCK_UN);
		close(p->marker_fd);
	}
	pthread_mutex_destroy(&s->lock);
	free(s->dir);
	free(p);
}

int store_damage(const char *dir, char *buf, size_t size)
{
	return kv_damage(dir, buf, size);
}

int store_verify(struct store *s, void (*report)(void *ctx, const char *msg),
		 void *ctx, size_t *found)
{
	return kv_verify(s->kv, report, ctx, found);
}

int store_sync(struct store *s)
{
	return kv_sync(s->kv);
}

const char *store_dir(const struct store *s)
{
	return s->dir;
}

void store_kv_counts(const struct store *s, struct store_kv_counts *out)
{
	struct kv_counts c;

	kv_counts(s->kv, &c);
	out->gets = c.gets;
	out->content_gets = c.content_gets;
	out->iters = c.iters;
	out->seeks = c.seeks;
	out->nexts = c.nexts;
	out->commits = c.commits;
	out->conflicts = c.conflicts;
	out->stale_pins = c.stale_pins;
	out->requests = c.requests;
	out->retries = c.retries;
	out->faults = c.faults;
	out->pages = c.pages;
	out->txns = c.txns;
	out->read_milli = c.read_milli;
	out->write_milli = c.write_milli;
	out->txn_write_milli = c.txn_write_milli;
	out->txn_rule_milli = c.txn_rule_milli;
}
