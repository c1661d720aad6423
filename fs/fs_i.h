/*
 * fs_i.h - internals of the pathfs daemon (fs/): the mounted filesystem
 * state, the inode table, the subtree lock and the FUSE operations.
 *
 * The FUSE node id of a node is its inode number (root = 1). The store is
 * keyed by path, so every request on a node id needs the node's path: the
 * inode table maps each inode the kernel knows (and every folder above one)
 * to {parent inode, name}, and a path is rebuilt by walking up. A rename
 * changes one table entry.
 *
 * Hard-linked inodes (TREE_F_LINKED) and orphans (last name removed while
 * the kernel still knew the inode or had it open) are addressed by number
 * alone (path NULL): their attributes live in their INODE record.
 *
 * Locking, in order (never take an earlier one while holding a later one):
 *   1. fs->sublock (rwlock, writer-preferring): every request that works on
 *      a path holds it for read while it builds the path and calls the store;
 *      a folder rename and the pathfsctl hooks take it for write, briefly, to
 *      (un)register a busy branch and to update the table.
 *   2. fs->open_stripe[]: orders open against unlink/rename-over of one inode
 *      (so an inode is never freed between "is it open?" and the unlink).
 *   3. fs->lock: the inode table. Held only for table work, never across a
 *      store call.
 * fs->busy_mutex (with busy_cond) is only taken alone, to sleep until a busy
 * branch is released.
 *
 * One place per request. A request on a node id (GETATTR, OPEN, READ, WRITE,
 * SETATTR, FSYNC, xattrs, LOOKUP of "." and "..", CREATE in a folder) reads
 * the store by a path built from the table, and the store checks the record
 * there carries the inode number (a node not at the path gives -ENOENT,
 * never another node's data). A change of place must not let that read fall
 * between the store's old place and the table's new one. Two mechanisms,
 * one per kind of change:
 *  - A folder rename and every pathfsctl command on the mounted drive hold
 *    their branches busy: registered under fs->sublock for write (so every
 *    request with a path built before has left), requests for paths inside
 *    wait, and the table is updated under the write lock again. A request
 *    inside such a branch sees it before or after, never during.
 *  - A file rename, exchange or unlink runs beside requests (a sequence
 *    lock, cheaper than taking fs->sublock for write per rename: that would
 *    stall every request of the drive behind each save). It brackets its
 *    store commit and its table update with fs_rename_start() and
 *    fs_rename_done(); fs->ns_gen counts place changes (every such end, and
 *    any move, orphaning or staling of an entry that had a place). A path
 *    notes ns_gen when built. A request whose store call answers -ENOENT
 *    calls fs_retry(): it waits for every change that started before the
 *    failure to end (table updated), then if ns_gen is still the one its
 *    path noted, no change overlapped the request and the table and the
 *    store agreed on the place from build to failure: the miss is the
 *    node's own. Otherwise it rebuilds the path and tries again, always,
 *    even to the same path (moved away and back between build and read).
 *    Each retry is owed to a change that overlapped the request, so a
 *    request ends unless the node is moved without end.
 *  - On a follower (-o ro on etcd) the writer is another process: its
 *    commit is not bracketed here, and the watch moves the table later
 *    (bracketed as a rename: fs_watch_moved()). A request on a node id that
 *    misses with nothing in flight here asks the store where the inode is
 *    now (tree_find_ino(): its reverse index) and retries there; an inode
 *    with no name left answers -ESTALE, as NFS does.
 *
 * Limits: paths are rebuilt per request (cost: depth of the node); a busy
 * branch holds off every request for a path inside it until it is released.
 */
#ifndef PATHFS_FS_I_H
#define PATHFS_FS_I_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "devio.h"
#include "tree.h"

#define FS_STRIPES 64

/* Flags of an inode table entry. */
#define INODE_LINKED	0x1 /* attributes in the INODE record: use path NULL */
#define INODE_ORPHAN	0x2 /* last name gone while in use: reclaim when unused */
#define INODE_STALE	0x4 /* its path is gone: requests get ENOENT */
#define INODE_RECLAIMED 0x8 /* orphan already reclaimed */
/* content changed behind the kernel's page cache (a direct write): the next
 * open drops the cached pages (no keep_cache) */
#define INODE_PAGES_STALE 0x10
/* an O_TMPFILE file (an orphan from birth): linkat(2) may give it a name */
#define INODE_TMPFILE 0x20
/* its record had no POSIX ACL when the kernel was last told of it: a
 * GETXATTR of an ACL answers ENODATA without a store read (ls -l asks every
 * file). Set by the store's one writer, and by a mount that watches the
 * others' changes (-o ro, -o shared on etcd) for a read no change it heard
 * of overtook. itab_record_gained() clears it after a change here,
 * itab_changed_elsewhere() after one the watch heard of; see itab_lookup()
 * for why it cannot go stale (a watching mount: no longer than the watch's
 * lag). */
#define INODE_NO_ACL 0x40
/* its record was neither immutable nor append-only (the inode flags an open
 * for writing checks) when the kernel was last told of it (set and cleared
 * as INODE_NO_ACL): OPEN answers without a store read for the flags.
 * itab_record_gained() clears it after every SETFLAGS, the one way flags
 * change; a hard-linked inode's record is never trusted for it. */
#define INODE_NO_FLAGS 0x80
/* made by this daemon's CREATE, and no security.capability set on it since
 * (a new file has none): a GETXATTR of it (the kernel asks before the first
 * write to a file, to drop it) answers ENODATA without a store read.
 * itab_record_gained() clears it after a SETXATTR of it, and
 * itab_changed_elsewhere() after another writer's change of it. */
#define INODE_NO_CAPS 0x100

struct inode {
	uint64_t ino;
	uint64_t parent; /* 0 when detached (root, stale) */
	char *name;	 /* malloc'd; NULL when detached */
	uint64_t nlookup;
	uint32_t nopen;
	uint32_t nchildren; /* table entries whose parent this is */
	unsigned flags;	    /* INODE_* */
	uint32_t ndiropen;  /* OPENDIRs of this folder not yet released */
	struct inode *next; /* hash chain */
};

/* A rename or unlink between its store call and its table update
 * (fs_rename_start() to fs_rename_done()); on its caller's stack. */
struct fs_renaming {
	uint64_t seq; /* fs->rename_seq when it started */
	struct fs_renaming *prev, *next;
};

/* The boundaries between the steps of a request and of a change of place
 * (see "One place per request"), where a model check's scheduler may stop
 * a thread (fs->step; tests/test_fs_race.c). */
enum fs_step {
	FS_STEP_BUILT,	   /* a request built its path; its store call next */
	FS_STEP_CALLED,	   /* its store call returned; fs_retry() decides */
	FS_STEP_STARTED,   /* a rename or unlink started (fs_rename_start) */
	FS_STEP_COMMITTED, /* its store call returned; table update next */
};

/* A busy branch: a folder rename or a pathfsctl command in progress. */
struct busy {
	char *src;
	char *dst; /* may be NULL */
	struct busy *next;
};

struct fs {
	struct store *store;
	struct tree *tree;
	struct fuse_session *se; /* set once mounted; notify calls use it */
	bool ro;
	bool shared;	  /* -o shared: other writers change the drive too */
	bool writeback;	  /* kernel writeback cache wanted */
	bool noatime;	  /* -o noatime: access times never change */
	bool strictatime; /* -o strictatime: every read sets atime */
	bool nodiratime;  /* -o nodiratime: listing keeps a folder's atime */
	bool debug;
	bool single;	/* single-threaded session loop (-s) */
	double timeout; /* entry and attribute timeout, seconds */
	/* called by a request before it waits for a busy branch or for the
	 * subtree lock, so the request loop lets another thread read meanwhile
	 * (fs_loop_blocking); NULL when nothing needs telling (unit tests) */
	void (*blocking)(void);
	/* called at each enum fs_step boundary by the thread there: a model
	 * check's scheduler (tests); NULL in the daemon */
	void (*step)(struct fs *fs, enum fs_step s);

	pthread_mutex_t lock;
	struct inode **buckets; /* protected by lock */
	size_t nbuckets;	/* protected by lock */
	size_t count;		/* protected by lock */
	/* protected by lock: bumped when an entry with a place loses or
	 * changes it, and at every fs_rename_done(): a path built before
	 * may be stale (see "One place per request" above) */
	uint64_t ns_gen;
	/* protected by lock: itab_record_gained() and
	 * itab_changed_elsewhere() calls */
	uint64_t gained_gen;
	/* renames between their store call and their table update, oldest
	 * first: a request that got -ENOENT waits for every one that started
	 * before it failed (fs_retry), and a LOOKUP does not put back a place
	 * one of them changed after the LOOKUP read it (itab_lookup_read) */
	struct fs_renaming *renaming, *renaming_last; /* protected by lock */
	uint64_t rename_seq;	/* protected by lock: the last one started */
	pthread_cond_t renamed; /* with lock: one finished */

	pthread_rwlock_t sublock;
	struct busy *busy; /* written under sublock (write), read under read */
	pthread_mutex_t busy_mutex;
	pthread_cond_t busy_cond;
	uint64_t busy_gen; /* written under sublock (write) and busy_mutex */

	pthread_mutex_t open_stripe[FS_STRIPES];

	/* orphans due for reclaim, freed by one thread (reclaim.c) */
	pthread_mutex_t rq_lock;
	pthread_cond_t rq_cond; /* with rq_lock: queued, or stop */
	uint64_t *rq;		/* protected by rq_lock */
	size_t rq_n, rq_cap;	/* protected by rq_lock */
	/* and the holds of files closed here, dropped by that thread too,
	 * a while after their last close (fs_unhold_later): queued by when
	 * they are due, then in flight while it drops them */
	struct unhold {
		uint64_t ino;
		int64_t due_ms; /* CLOCK_MONOTONIC */
	} * uq;			/* protected by rq_lock, by due_ms */
	size_t uq_n, uq_cap;	/* protected by rq_lock */
	uint64_t *uq_flight;	/* protected by rq_lock */
	size_t uq_flight_n;	/* protected by rq_lock */
	pthread_cond_t uq_cond; /* with rq_lock: a flight landed */
	bool rq_started;	/* protected by rq_lock: rq_thread runs */
	bool rq_stop;		/* protected by rq_lock: queue no more */
	bool rq_dead;		/* protected by rq_lock: also frees stopped
				 * writers' orphans (fs_reclaim_dead) */
	bool rq_share;		/* protected by rq_lock: a writer joins,
				 * this one alone so far (fs_reclaim_share) */
	pthread_t rq_thread;

	struct fh *fhs; /* protected by lock: open files (files.c) */
	struct dircookies *cookies; /* listing offsets (dircookie.h) */
	/* -o ro on etcd: follows the writer's changes (watch.c) */
	struct fs_watch *watch;

	/* pathfsctl commands on the mounted drive, one at a time: held from
	 * fs_ctl_begin() to fs_ctl_end(); the fields below are its state. */
	pthread_mutex_t ctl_mutex;
	struct busy *ctl_busy;
	uint64_t ctl_ino[2]; /* inodes at path and newpath before the command */
};

/*
 * A path built for one request, on the heap at its own length (a path may be
 * TREE_PATH_MAX long, too much for the stack of every request). Starts
 * zeroed ({0}); fs_path_release() frees it, also after a failed build
 * (safe on NULL).
 */
struct fs_path {
	char *buf;  /* malloc'd; reused when rebuilt */
	size_t cap; /* bytes at buf */
	/* buf, or NULL when the inode is addressed by number */
	const char *path;
	uint64_t gen;	 /* fs->ns_gen when built */
	uint64_t gained; /* fs->gained_gen when built */
	/* fs_retry() on a follower: store lookups by number made */
	unsigned follows;
};

/* A follower's request asks the store where its node is (fs_retry) at most
 * this many times: each miss needs the writer to move it in between (or it
 * has no name left: -ESTALE). */
#define FS_FOLLOW_MAX 16

void fs_path_release(struct fs_path *p);

/* ---- lifecycle (lifecycle.c) ------------------------------------------- */

/*
 * Initialises @fs on drive @t of store @s: the table holds only the root.
 * Errors: -ENOMEM. fs_release() frees everything (not the store).
 */
int fs_init(struct fs *fs, struct store *s, struct tree *t);
void fs_release(struct fs *fs);
/* The FUSE session's start (INIT: what the daemon asks of the kernel,
 * fs_conn_want()) and end (DESTROY, at unmount: the orphans the kernel
 * still knew are reclaimed, the files it never released closed); their
 * @userdata is the struct fs. */
void fs_init_conn(void *userdata, struct fuse_conn_info *conn);
void fs_destroy(void *userdata);

/* ---- inode table (inode_table.c); each takes fs->lock itself ---------- */

/* Sets up the table of fs_init() (the root only) and frees it (fs_release).
 * Errors: -ENOMEM. */
int itab_init(struct fs *fs);
void itab_release(struct fs *fs);

/*
 * Records one more kernel lookup of @ino, reached as @name in folder
 * @parent. Adds the entry if needed; a non-linked inode found under another
 * parent or name than the table says is moved there (the store is the
 * truth). @attr_flags are TREE_F_* of the inode. Errors: -ENOMEM.
 */
int itab_lookup(struct fs *fs, uint64_t ino, uint64_t parent, const char *name,
		uint32_t attr_flags);

/*
 * itab_lookup() of what a LOOKUP read from the store at @p's path (@p built
 * before the read): -EAGAIN, changing nothing, if a rename finished since
 * @p was built and the table's place of @ino is no longer @name in @parent
 * (the rename moved it after the read: putting the read's place back would
 * send the inode's requests to a name that is no longer its); the caller
 * reads again. Errors: -EAGAIN, -ENOMEM.
 */
int itab_lookup_read(struct fs *fs, uint64_t ino, uint64_t parent,
		     const char *name, uint32_t attr_flags,
		     const struct fs_path *p);

/* Drops @n kernel lookups of @ino. If the entry is then unused (no lookup,
 * not open) it is freed and, if it was an orphan not yet reclaimed, its
 * number returned (the caller reclaims it, outside every lock), else 0. */
uint64_t itab_forget(struct fs *fs, uint64_t ino, uint64_t n);

/* Counts one open of @ino (0 if the entry exists, else -ENOENT). */
int itab_open(struct fs *fs, uint64_t ino);
/* Counts one release; returns the orphan to reclaim (as itab_forget). */
uint64_t itab_close(struct fs *fs, uint64_t ino);
/* Open count of @ino (0 if unknown). */
uint32_t itab_nopen(struct fs *fs, uint64_t ino);
/* Counts one OPENDIR of folder @ino and sets *others to the OPENDIRs of it
 * not yet released before this one; false (not counted) if the table has no
 * entry for @ino. */
bool itab_opendir(struct fs *fs, uint64_t ino, uint32_t *others);
/* Counts one RELEASEDIR of an OPENDIR itab_opendir() counted. */
void itab_releasedir(struct fs *fs, uint64_t ino);
/*
 * tree_set_open_check()'s question for the mounted drive (@fs is the struct
 * fs): is @ino open? Takes only fs->lock, so the store may ask it with its
 * own locks held.
 */
bool itab_is_open(void *fs, uint64_t ino);

/*
 * Whether the kernel still holds a lookup of @ino or has it open: if its
 * last name goes now, it must stay as an orphan (the kernel may still send
 * OPEN, GETATTR, ... for the node id until it FORGETs it).
 */
bool itab_in_use(struct fs *fs, uint64_t ino);

/*
 * The store made @ino an orphan: marks it INODE_ORPHAN. Returns @ino if it
 * is due for reclaim at once (the kernel let go of it meanwhile, or it is
 * not in the table), else 0 (it is reclaimed at its last FORGET or release).
 */
uint64_t itab_orphaned(struct fs *fs, uint64_t ino);

/* Sets and clears INODE_* flags of @ino if it is in the table. */
void itab_flags(struct fs *fs, uint64_t ino, unsigned set, unsigned clear);
/* Whether @flag was set on @ino; clears it. */
bool itab_take_flag(struct fs *fs, uint64_t ino, unsigned flag);
/* Whether the table has an entry for @ino. */
bool itab_knows(struct fs *fs, uint64_t ino);
/* Whether @flag is set on @ino. */
bool itab_has_flag(struct fs *fs, uint64_t ino, unsigned flag);
/* After the record of @ino may have gained what INODE_NO_* flag @flag says
 * it lacks (a POSIX ACL set or removed: INODE_NO_ACL; inode flags set:
 * INODE_NO_FLAGS), once the store call is over (committed or not: an error
 * may follow a commit): waits out every request in flight between its read
 * of a record and its itab_lookup() (they hold fs->sublock for read), then
 * clears @flag. The caller holds no lock. */
void itab_record_gained(struct fs *fs, uint64_t ino, unsigned flag);
/* The watch (watch.c) heard that another writer changed the record,
 * content or extended attributes of @ino (0: of any inode, the watch lost
 * track): its INODE_NO_* flags are cleared, and a read made before this
 * (a path built before: fs_path.gained) sets none (itab_lookup()). Takes
 * fs->lock only: the watch never waits for requests. */
void itab_changed_elsewhere(struct fs *fs, uint64_t ino);
/* The count of itab_record_gained() and itab_changed_elsewhere() calls,
 * read before a store call that makes an inode, for
 * itab_flag_unless_gained(). */
uint64_t itab_gained_gen(struct fs *fs);
/* Sets INODE_NO_* flag @flag on @ino unless itab_record_gained() or
 * itab_changed_elsewhere() ran since @gen was read (it may have been for
 * @ino: then the flag would be stale). */
void itab_flag_unless_gained(struct fs *fs, uint64_t ino, unsigned flag,
			     uint64_t gen);

/* Moves @ino to @name in @parent (parent must be in the table; if it is not,
 * @ino is marked stale). Bumps ns_gen. */
void itab_move(struct fs *fs, uint64_t ino, uint64_t parent, const char *name);

/*
 * A hard-linked inode has several names and is addressed by number; its
 * entry keeps one of them as its place, which nothing needs to be right.
 * itab_unplace(): name @name in @parent no longer leads to @ino (if that was
 * its place, the entry is detached until a lookup gives it another).
 * itab_replace_place(): it now is @newname in @newparent (a rename).
 */
void itab_unplace(struct fs *fs, uint64_t ino, uint64_t parent,
		  const char *name);
void itab_replace_place(struct fs *fs, uint64_t ino, uint64_t parent,
			const char *name, uint64_t newparent,
			const char *newname);

/* Marks every open inode below folder @top an orphan (addressed by number
 * from now on): a pathfsctl command deleted the branch. */
void itab_orphan_open_below(struct fs *fs, uint64_t top);

/*
 * The inodes in the table with INODE_* flag @flag, as a malloc'd array in
 * *out (caller frees) of *n numbers: the hard-linked ones (INODE_LINKED),
 * whose link count a branch command may have changed through a name the
 * kernel never saw; the orphans (INODE_ORPHAN) at unmount. Errors: -ENOMEM.
 */
int itab_flagged(struct fs *fs, unsigned flag, uint64_t **out, size_t *n);

/* One table entry's place, as itab_places() copies it out. */
struct itab_place {
	uint64_t ino;
	uint64_t parent; /* 0: detached (root, stale), name NULL */
	char *name;	 /* malloc'd */
};
/*
 * Every entry of the table and its place (a malloc'd array in *out of *n,
 * freed with itab_places_free()): what the kernel may have cached, for a
 * mount that must forget it all. Errors: -ENOMEM.
 */
int itab_places(struct fs *fs, struct itab_place **out, size_t *n);
void itab_places_free(struct itab_place *v, size_t n);

/*
 * Makes sure every folder of @path ("/" or absolute) has a table entry,
 * asking the store for the ones missing; *ino gets the inode of @path.
 * Errors: those of tree_lookup(), -ENOMEM.
 */
int itab_attach_path(struct fs *fs, const char *path, uint64_t *ino);
/*
 * As itab_attach_path(), and records one more kernel lookup of the inode at
 * @path (not for "/": the root's count is not kept). For a node the kernel
 * asks for by number (file handles). @read: a path built before the caller
 * read @path from the store, as for itab_lookup_read() (-EAGAIN, the inode
 * not counted, if a rename finished since and moved a node of @path
 * elsewhere in the table: the caller reads again). Errors: as
 * itab_attach_path(), -EAGAIN.
 */
int itab_lookup_path(struct fs *fs, const char *path, uint64_t *ino,
		     const struct fs_path *read);
/* One more kernel lookup of @ino if the table knows it (and it is neither
 * stale nor reclaimed); else -ENOENT. */
int itab_ref(struct fs *fs, uint64_t ino);

/*
 * Builds the path of @ino, with "/" and @name appended when @name is not
 * NULL, into @p. An inode addressed by number (LINKED, ORPHAN) with no
 * @name gets p->path = NULL unless @need_path (then the place the table
 * knows it by). Errors: -ENOENT (unknown or stale inode, or a stale folder
 * above it), -ENAMETOOLONG (longer than TREE_PATH_MAX), -ENOMEM.
 */
int itab_path(struct fs *fs, uint64_t ino, const char *name, bool need_path,
	      struct fs_path *p);
/* As itab_path(), for a caller that holds fs->lock (fs_retry()). */
int itab_path_locked(struct fs *fs, uint64_t ino, const char *name,
		     bool need_path, struct fs_path *p);

/* ---- reclaiming orphans (reclaim.c) ------------------------------------ */

/* Sets up and frees the queue (fs_init, fs_release). fs_reclaim_release()
 * stops the thread if fs_reclaim_stop() has not: the store must be open
 * then. */
void fs_reclaim_init(struct fs *fs);
void fs_reclaim_release(struct fs *fs);
/* One writer of several (a shared mount): starts the thread, which from
 * now on also frees, every RECLAIM_DEAD_S seconds, the orphans that writers
 * which stopped holding the store left (tree_reclaim_dead). */
void fs_reclaim_dead(struct fs *fs);
/* The watch heard a writer join while this one was alone on the drive
 * (tree_change.share): the thread publishes this writer's holds
 * (tree_share) before anything else it has to do. */
void fs_reclaim_share(struct fs *fs);
/*
 * Frees orphan @ino (0: nothing) soon, in a batch with others, on a thread
 * of its own (started by the first call); at once in the caller if it cannot
 * be queued. The caller answers for the kernel no longer using @ino (it is
 * forgotten and not open: itab_forget(), itab_close(), itab_orphaned()).
 * Errors are logged; a number that is not an orphan is ignored.
 */
void fs_reclaim(struct fs *fs, uint64_t ino);
/*
 * One writer of several: drops this writer's hold of @ino (closed here, no
 * orphan of its own to free) HOLD_LINGER_MS later, on the same thread, off
 * the RELEASE's path, many to a commit, unless it is opened here again
 * meanwhile (fs_unhold_cancel). False if it cannot be queued (the caller
 * drops it at once: fs_unhold).
 */
bool fs_unhold_later(struct fs *fs, uint64_t ino);
/* Caller holds @ino's open stripe, at @ino's first open here: true if its
 * hold is still there, queued to drop (fs_unhold_later) and now kept; false
 * if the caller must take it (tree_hold). Waits for a drop in flight. */
bool fs_unhold_cancel(struct fs *fs, uint64_t ino);
/* Caller holds @ino's open stripe. Drops this writer's hold of @ino now
 * (tree_unhold); a failure is logged (the hold stays until this writer's
 * lease ends). */
void fs_unhold(struct fs *fs, uint64_t ino);
/*
 * Frees every queued orphan, drops every queued hold and ends the thread;
 * later fs_reclaim() calls free at once, fs_unhold_later() ones refuse.
 * Before the store closes (fs_destroy at unmount).
 */
void fs_reclaim_stop(struct fs *fs);

/* ---- subtree lock, request entry and retry (subtree_lock.c) ------------ */

/*
 * Takes the subtree lock for read and builds the path of @ino (plus @name)
 * into @p, waiting while that path is inside a busy branch. On success the
 * caller holds the lock for read and must call fs_leave(). On error nothing
 * is held. Errors: as itab_path().
 */
int fs_enter(struct fs *fs, uint64_t ino, const char *name, struct fs_path *p);
/* As fs_enter(), always with a path (LOOKUP of ".."). */
int fs_enter_path(struct fs *fs, uint64_t ino, struct fs_path *p);
/* As fs_enter() for two paths at once, both always by path (rename, link). */
int fs_enter2(struct fs *fs, uint64_t ino1, const char *name1,
	      struct fs_path *p1, uint64_t ino2, const char *name2,
	      struct fs_path *p2);
void fs_leave(struct fs *fs);

static inline void fs_step(struct fs *fs, enum fs_step s)
{
	if (fs->step)
		fs->step(fs, s);
}

/* Brackets a rename's (or an unlink's) store call and table update, with
 * @r on the caller's stack (see fs->renaming). */
void fs_rename_start(struct fs *fs, struct fs_renaming *r);
void fs_rename_done(struct fs *fs, struct fs_renaming *r);

/*
 * After a store call on @p failed with *@rc: true if *@rc is -ENOENT and a
 * change of place overlapped the request (it first waits for every one that
 * started before the failure to update the table); @p was then rebuilt
 * (still holding the lock) and the caller retries. False: the miss is the
 * node's own (or *@rc is another error, or the rebuild failed). On a
 * follower (fs->watch), a request on inode @ino (@name NULL) that missed
 * with nothing in flight here: true with @p at the place the store's
 * reverse index gives (path NULL for a hard link: by number from now on),
 * else false with *@rc = -ESTALE (no name left) or the lookup's error.
 */
bool fs_retry(struct fs *fs, int *rc, uint64_t ino, const char *name,
	      struct fs_path *p);

/*
 * Marks two branches busy: under the write lock (so every request in flight
 * has left) builds the paths of @ino1/@name1 into @p1 and, if @p2 is not
 * NULL, of @ino2/@name2 into @p2; waits while either overlaps a busy branch;
 * registers them and returns with nothing held. Requests for paths inside
 * them wait until fs_busy_end(). *out is the registration, owned by fs until
 * fs_busy_end(). Errors: -ENOMEM, those of itab_path().
 */
int fs_busy_begin(struct fs *fs, uint64_t ino1, const char *name1,
		  struct fs_path *p1, uint64_t ino2, const char *name2,
		  struct fs_path *p2, struct busy **out);
/* As fs_busy_begin() for given paths (@dst may be NULL). */
int fs_busy_begin_paths(struct fs *fs, const char *src, const char *dst,
			struct busy **out);
/*
 * fs_busy_lock() takes the write lock; the caller updates the table
 * (itab_*) and then calls fs_busy_end(), which unregisters and frees @b,
 * releases the lock and wakes the waiters.
 */
void fs_busy_lock(struct fs *fs);
void fs_busy_end(struct fs *fs, struct busy *b);
/* Frees what is left of the busy list (fs_release). */
void fs_busy_release(struct fs *fs);

/* ---- request loop (loop.c) --------------------------------------------- */

/*
 * Serves @se until it ends (unmount, or a signal marked it exited) with at
 * most @max_threads threads at once and @max_idle idle ones; one thread
 * reads at a time and serves cheap requests itself (see loop.c). Returns 0
 * or the -errno that ended it (-EAGAIN: no thread could be started).
 */
int fs_loop(struct fuse_session *se, struct fs *fs, unsigned max_threads,
	    unsigned max_idle);
/* Called by a request about to wait: if this thread is the reader, another
 * thread takes over reading. */
void fs_loop_blocking(void);

/* ---- /dev/fuse I/O (devio.c) ------------------------------------------ */

/* ---- operations (ops.c; the rest in ops_i.h) --------------------------- */

/* The FUSE low-level operations table; userdata is the struct fs. */
extern const struct fuse_lowlevel_ops fs_ops;

/*
 * (tmpfile.c) Requests libfuse 3.14 has no operation for, answered by the
 * daemon itself from the request loop: FUSE_TMPFILE (open(O_TMPFILE)).
 * Returns true if @buf (@len bytes read from /dev/fuse) was one and has been
 * answered on @se's device; false: hand it to libfuse.
 */
bool fs_raw_request(struct fs *fs, struct fuse_session *se, const void *buf,
		    size_t len);

/*
 * (ctl_hooks.c) pathfsctl hooks (ctl_env.begin/end) for commands the daemon
 * runs on its mounted drive: hold requests off the branch, then fix the
 * table and the kernel's caches. @ctx is the struct fs.
 */
void fs_ctl_begin(void *ctx, struct tree *t, const char *path,
		  const char *newpath);
void fs_ctl_end(void *ctx, struct tree *t, const char *path,
		const char *newpath);
/*
 * (ctl_hooks.c) Tells the kernel to forget what it cached about @path: its
 * entry in its folder and the folder's attributes and listing. Not a
 * request handler; a no-op before the mount, for "/" or a folder the store
 * does not have.
 */
void fs_inval_path(struct fs *fs, const char *path);
/* The same for child @name of folder @parent (0: nothing to do). */
void fs_inval_name(struct fs *fs, uint64_t parent, const char *name);

/*
 * (watch.c) A -o ro mount of a store that another process writes (etcd)
 * watches its drive (tree_watch) and makes the kernel and the inode table
 * forget what each change makes stale. fs_watch_start() once mounted
 * (fs->se set): 0, or -EOPNOTSUPP for a store nobody else writes, or the
 * watch's errors; fs_watch_stop() before the session goes (safe if never
 * started).
 */
int fs_watch_start(struct fs *fs);
void fs_watch_stop(struct fs *fs);
/* The watch's table work for node @ino put at @dir/@name by the writer: it
 * moves there (a LOOKUP that read it at its old place reads again). */
void fs_watch_moved(struct fs *fs, uint64_t ino, const char *dir,
		    const char *name);
/*
 * (watch.c) A lookup of @name in folder @parent found nothing: returns how
 * long (s) the kernel may cache the miss. fs->timeout, but on a watching
 * mount a miss in the root is remembered so that a restarted watch makes
 * the kernel forget it, or, when too many are, cached for 1 s only.
 */
double fs_watch_negative(struct fs *fs, uint64_t parent, const char *name);

#endif
