/*
 * tree.h - the public API of store/: drives of files and folders kept in one
 * ordered key-value store (an embedded RocksDB database, or an etcd
 * cluster: the engines behind store/kv/), one key per node, keyed by full
 * path.
 *
 * This is store/'s API: fs/ and tools/ see only the headers of store/include/
 * (this one, log.h and siphash.h), so they never build a key or call the kv
 * engine; everything goes through the calls below.
 *
 * Conventions, for every function here unless its comment says otherwise:
 *  - returns 0 on success or a negative errno;
 *  - -EIO means a record did not decode or the engine reported corruption
 *    or an I/O error; the message is logged (log.h) naming the key;
 *  - -ENOSPC means the store's disk is full; nothing was written;
 *  - -EROFS means the store was opened read-only;
 *  - paths are absolute byte strings: "/" or "/" followed by names separated
 *    by single "/"; a name is 1..255 bytes of anything but NUL and "/" and is
 *    never "." or ".."; a path is at most TREE_PATH_MAX (32767) bytes, a
 *    symlink's target at most TREE_SYMLINK_MAX (4095). A malformed path is
 *    -EINVAL, an over-long name, path or target -ENAMETOOLONG (reads of a
 *    path past TREE_PATH_MAX say so too; the daemon answers a lookup of one
 *    with ENOENT, since nothing can be there);
 *  - a few errors mean more than their errno says (what the store was
 *    refused for); store_strerror() gives their words, and its table
 *    below lists them;
 *  - strings passed in are only borrowed for the duration of the call;
 *  - out-structures that own memory are released with their _release call.
 *
 * Thread safety: a struct store and its struct tree handles may be used from
 * any number of threads at once. Read-modify-write of one inode's attributes
 * is serialised inside the store by a lock striped on the inode number.
 * Namespace races (two threads renaming overlapping folders) are the caller's
 * to order: the daemon does it with its subtree lock (fs/).
 *
 * Limits: a folder rename rewrites one key per descendant (see journal.c);
 * everything else touches a bounded number of keys.
 */
#ifndef PATHFS_TREE_H
#define PATHFS_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#define TREE_NAME_MAX 255
/*
 * The longest path inside a drive, from its root: 32 KiB - 1, 128 levels of
 * 255-byte names or 16384 levels of 1-byte ones. Linux bounds only each
 * system call's argument (PATH_MAX 4096) and each name (NAME_MAX 255), so a
 * tree built with chdir/mkdirat may be deeper than PATH_MAX; ours bounds what
 * one path costs:
 *  - a node key is ~80 bytes of drive prefix + the path: at most two 16 KiB
 *    RocksDB blocks for one key, and the same in an index block;
 *  - a journal record holds two paths and a cursor relative to one (at most
 *    64 KiB), rewritten with every copy batch of a folder rename (bounded at
 *    rename_bytes, 4 MiB, so at most 1/64 of it);
 *  - a resume token of pathfsctl is base64 of the same (~88 KiB) and must fit
 *    one command-line argument (MAX_ARG_STRLEN, 128 KiB): the next power of
 *    two would not;
 *  - the daemon builds a request's path on the heap at its own length, so
 *    the limit costs nothing per request.
 */
#define TREE_PATH_MAX 32767
/* The longest symlink target: the kernel's own limit (PATH_MAX - 1). */
#define TREE_SYMLINK_MAX 4095
#define TREE_DRIVE_MAX	 64
#define TREE_ROOT_INO	 1
/*
 * Store format version, in the store's marker and every drive's META record.
 * 2: content blocks in their own kv family (1: all keys in one).
 * 3: a content block may hold patches (partial writes folded when read,
 * content.c), which a format-2 program cannot read.
 * 4: the reverse index PARENT# (tree_find_ino, parent.c).
 * An older store is upgraded when first opened read-write.
 */
#define TREE_FORMAT_VERSION 4

struct store;
struct tree;

/* ---- Store ------------------------------------------------------------- */

struct store_options {
	bool create;	     /* create the store directory if missing */
	bool read_only;	     /* open read-only: every write is -EROFS */
	bool sync;	     /* sync the WAL on every commit */
	size_t cache_mb;     /* block cache size; 0 = default (64 MiB) */
	size_t rename_batch; /* subtree rewrite: entries per batch; 0 = 1024 */
	size_t rename_bytes; /* subtree rewrite: bytes per batch; 0 = 4 MiB */
	/* 0: this program's format. 1 to 3: create a store of that format,
	 * or open one without upgrading it past that (tests of the upgrade
	 * build old stores so) */
	int format;
	/* when the open fails, a line saying why if more is known than the
	 * errno (etcd: wrong password, certificate verification failed,
	 * connection refused on HOST:PORT, TLS wanted, ...), else "";
	 * NULL: not wanted */
	char *why;
	size_t why_size;
	/* a write-ahead log damaged before its end is repaired by dropping
	 * everything from the damage on, a copy of the logs kept in
	 * STORE/lost+found/ and the loss logged; without it such a store is
	 * refused (-EBADMSG). The user's explicit choice only (pathfsctl
	 * recover --truncate-log), never a default. */
	bool truncate_log;
	/*
	 * etcd: open as one writer of several on the store (kv_options.shared:
	 * -EBUSY while an exclusive writer holds it, and the other way round).
	 * Issue 24's first step, for the store's tests: inode numbers are
	 * unique across such writers (drive.c), the namespace operations are
	 * not yet conditioned on what they read, and the open runs no recovery
	 * (journal replay, orphan sweep, unfinished drive deletions: another
	 * writer may be running them, or hold the orphans open). No mount
	 * option sets it yet. A directory store ignores it.
	 */
	bool shared;
};

/*
 * Opens the store at @dir, a directory, or an etcd cluster when @dir is
 * etcd[+https]://HOST:PORT[,HOST:PORT...]/NAME[?OPTIONS] (see
 * store_is_remote, README's etcd section for the options; NAME is the
 * store's key prefix there, and its marker a key), and, unless read-only,
 * upgrades a store
 * of an older format (see TREE_FORMAT_VERSION; resumable, crash-safe), replays
 * every unfinished journal record of every drive, reclaims every orphan
 * inode (removed while still in use before a crash) and builds the reverse
 * index of an older store, logging what it did. A read-only open reads an
 * older format as it is.
 *
 * Errors: -ENOENT (missing and !create, or its parent is missing), -EBUSY
 * (another process holds the store's lock), -EMEDIUMTYPE (the directory is not
 * empty and is not a pathfs store), -EINVAL (a malformed etcd URL),
 * -EHOSTUNREACH (no etcd member answered), -EPROTO (http to an etcd member
 * that speaks TLS), -EACCES (etcd refused the user, its password or
 * certificate, or a key), -EPROTONOSUPPORT (a drive's format version
 * is newer than this program), -EUCLEAN (read-only, and an upgrade was
 * interrupted: open read-write once; or a file its database is opened by is
 * missing: store_missing), -EINVAL (bad @opt->format), -ENOSPC
 * (read-write: no room on its file system to open it, see store_room; or to
 * upgrade), -EROFS, -EBADMSG (a write-ahead log is damaged before its end:
 * nothing was changed; store_damage says what, truncate_log repairs),
 * -EACCES, -EIO.
 * On success *out owns the store; free it with store_close().
 */
int store_open(struct store **out, const char *dir,
	       const struct store_options *opt);

/*
 * The errors a store is refused with that mean more than their errno (the
 * C library's words for them would mislead: "Structure needs cleaning"),
 * as store_strerror() words them:
 *
 *   -EMEDIUMTYPE      not a pathfs store (a folder holding something else,
 *                     or a marker without its database)
 *   -EPROTONOSUPPORT  written by a newer pathfs (the store's or a drive's
 *                     format is newer than this program's)
 *   -EUCLEAN          damaged (a file its database is opened by is missing:
 *                     store_missing), or its upgrade was interrupted and a
 *                     read-only open cannot go on with it (open it
 *                     read-write once)
 *   -EBADMSG          a write-ahead log is damaged before its end
 *                     (store_damage; pathfsctl recover --truncate-log)
 *   -EHOSTUNREACH     no member of the etcd cluster answered
 *   -EPROTO           an etcd member answered in another protocol (http to
 *                     a member that speaks TLS)
 *
 * store_strerror() returns the words for @err (a negative errno), borrowed:
 * the store's for the errors above, strerror(-@err)'s for any other.
 */
const char *store_strerror(int err);

/* true if @where names a store on a service (an etcd cluster, etcd://...,
 * or a DynamoDB table, dynamodb://...), not a directory: no lock file, no
 * control socket, nothing on the local disk. */
bool store_is_remote(const char *where);
/* Whether open store @s is on a service (every read a network round
 * trip). */
bool store_remote(const struct store *s);
/* Whether other processes may write open store @s meanwhile: a store on a
 * service opened read-only (its writer is elsewhere) or as one shared
 * writer of several. */
bool store_others_write(const struct store *s);

/*
 * The one spelling of the store at @where, malloc'd in *out (caller frees),
 * so that every spelling of one store names one daemon (its control
 * socket): for an etcd URL "etcd://" and its members lower-cased, each
 * "localhost" as 127.0.0.1 (the address every resolver gives it; other host
 * names are not resolved: name a member one way on one machine), sorted,
 * each once, then "/NAME" (a trailing slash and the options after '?' left
 * out); a directory as given. Errors: -EINVAL (a malformed etcd URL),
 * -ENOMEM.
 */
int store_identity(const char *where, char **out);

/*
 * Whether the file system of the store at @dir has room for a read-write
 * open, which writes before the store's space reserve guards anything (a
 * log, the engine's own files, what recovery flushes): *avail bytes are
 * free there, *need are wanted (a remote store: UINT64_MAX and 0), for the
 * refusal's words when store_open() said -ENOSPC. Errors: -ENOSPC (*avail <
 * *need).
 */
int store_room(const char *dir, uint64_t *avail, uint64_t *need);

/*
 * Whether the store at @dir lost a file its database is opened by (RocksDB's
 * CURRENT, or the MANIFEST it names), for the refusal's words when
 * store_open() said -EUCLEAN: such a store is damaged, not absent, and is
 * never made again over its tables. Errors: -EUCLEAN (the file's name in
 * @what).
 */
int store_missing(const char *dir, char *what, size_t size);

/* Flushes and closes. Safe on NULL. Handles from store_drive() die with it. */
void store_close(struct store *s);

/*
 * Marks @s as served by this process (the daemon, once mounted) until
 * store_close(), for store_server() in other processes. May wait a moment
 * for the previous holder to finish closing (at most 10 s).
 * Errors: -errno of the lock (the store works on; others cannot tell who
 * serves it).
 */
int store_serve(struct store *s);

/*
 * Who serves the store at @dir: 0 and *pid if a process that called
 * store_serve() holds it (*pid is 0 if that process is in another pid
 * namespace), -ENOENT if none does or the store is remote (the store is
 * free, or held by a process
 * that does not serve it: pathfsctl, a daemon still starting), -errno if the
 * marker cannot be read. Call it only in a process that does not have the
 * store open (closing the probe drops this process's record locks on it).
 */
int store_server(const char *dir, pid_t *pid);

/*
 * Who holds the store at @dir open read-write, when store_open() said
 * -EBUSY, in words for the refusal: a store on etcd or DynamoDB names its
 * writer (its owner key, its lease item: program, pid, host) in @buf and
 * says 0, or its shared writers ("; " between them) and says 1. -ENOENT
 * if nobody holds it now or the store is a directory (store_server tells
 * there), -errno if the cluster cannot be asked.
 */
int store_holder(const char *dir, char *buf, size_t size);

/*
 * When store_open() said -EBADMSG: what is damaged in the store at @dir and
 * what a repair (truncate_log) would drop, in words (which write-ahead log,
 * at which offset, how many records and writes after it), in @buf.
 * -ENOENT if nothing damaged is found, -errno of reading the logs.
 */
int store_damage(const char *dir, char *buf, size_t size);

/*
 * Reads every record of the store with checksums verified (all drives, all
 * of their content: the cost of reading the whole store), so that a damaged
 * table file is found before a read hits it: @report(@ctx, msg) is called
 * for each damage found (msg names the file; borrowed for the call), *found
 * counts them. Errors: -ENOMEM.
 */
int store_verify(struct store *s, void (*report)(void *ctx, const char *msg),
		 void *ctx, size_t *found);

/* Syncs the write-ahead log: everything committed so far is durable. */
int store_sync(struct store *s);

/* The directory the store lives in (borrowed, valid until store_close). */
const char *store_dir(const struct store *s);

/*
 * The calls store @s has made into its kv engine since it was opened, all
 * its drives together: how the bench and the tests count the round trips
 * an operation costs. The counters only grow (subtract two readings); a
 * reading is exact once the calls it counts have returned.
 */
struct store_kv_counts {
	uint64_t gets;	       /* point reads */
	uint64_t content_gets; /* of them, reads of a content block */
	uint64_t iters;	       /* iterators opened */
	uint64_t seeks;	       /* iterator seeks */
	uint64_t nexts;	       /* iterator steps */
	uint64_t commits;      /* batches committed */
	uint64_t conflicts;    /* of them, refused because a key read changed
				  (a shared writer's retry, -EAGAIN) */
	uint64_t stale_pins;   /* reads of one moment (a file's, a readdir
				  page's) that a commit made stale: read
				  again */
	/* the engine's own (DynamoDB; 0 elsewhere): requests sent, of them
	 * sent again (throttled, a conflict, 5xx, a dropped connection),
	 * failures injected by PATHFS_DDB_FAULT, Query pages, transactions,
	 * read and write capacity units consumed (thousandths; the
	 * transactions' write units also alone, as reported and as
	 * DynamoDB's rules make them from the request) */
	uint64_t requests, retries, faults;
	uint64_t pages, txns;
	uint64_t read_milli, write_milli;
	uint64_t txn_write_milli, txn_rule_milli;
};
void store_kv_counts(const struct store *s, struct store_kv_counts *out);

/* 0 if @name is a valid drive id ([A-Za-z0-9_.-]{1,64}), else -EINVAL. */
int store_drive_name_check(const char *name);

/* ---- Paths --------------------------------------------------------------- */

/* 0 if @path is well formed (the rules above), else -EINVAL or
 * -ENAMETOOLONG. */
int tree_path_check(const char *path);
/*
 * Whether @path is @dir itself or anything below it, both well formed: "/a"
 * holds "/a/b" but not "/ab" (a plain prefix test would, and a subtree
 * rewrite or delete would then take a sibling). "/" holds everything.
 */
bool tree_path_is_within(const char *path, const char *dir);

/*
 * The @n bytes at @p (a name, a path, a key) as text on one line, in a
 * malloc'd string (caller frees; out of memory aborts): every byte outside
 * printable ASCII, and "\", as \xNN, so a report is plain ASCII whatever
 * it quotes (fsck, tree_journal_list()); with TREE_ESC_NAME only bytes
 * below 0x20 and 0x7f as \xNN and "\" as "\\", other bytes as they are
 * (a name for a terminal, UTF-8 kept: pathfsctl's listings).
 */
#define TREE_ESC_NAME 0x1
char *tree_escape(const char *p, size_t n, unsigned flags);

/*
 * Creates drive @name with its META record and its root folder "/" (inode 1,
 * mode 0755 | S_IFDIR, owned by @uid/@gid). Errors: -EINVAL, -EEXIST.
 */
int store_drive_create(struct store *s, const char *name, uid_t uid, gid_t gid);

/*
 * Deletes drive @name and everything in it: its META record goes first (the
 * drive is gone then), then its keys, in one range delete, or on an engine
 * that wants big deletes sliced (etcd) a slice of keys per commit. A crash
 * in between leaves keys of no drive, which the next read-write
 * store_open() drops (store_drive_finish_deletes), as does creating a drive
 * of that name. Errors: -EINVAL, -ENOENT, -EIO and the commits'.
 */
int store_drive_delete(struct store *s, const char *name);
/* Drops what interrupted drive deletes left (store_open's recovery does);
 * *count: how many. Errors: -EIO and the commits'. */
int store_drive_finish_deletes(struct store *s, size_t *count);

/*
 * Lists drive names. *names is a malloc'd array of *count malloc'd strings,
 * sorted; free with store_drive_list_free().
 */
int store_drive_list(struct store *s, char ***names, size_t *count);
void store_drive_list_free(char **names, size_t count);

/*
 * Gives the handle of drive @name. The handle is owned by the store and lives
 * until store_close(); calling twice gives the same handle.
 * Errors: -EINVAL (bad name), -ENOENT (no such drive), -EIO (bad META).
 */
int store_drive(struct store *s, const char *name, struct tree **out);

/* ---- Nodes ------------------------------------------------------------- */

/* The attributes of one node, as stat(2) shows them. Times in ns since 1970. */
struct tree_attr {
	uint64_t ino;
	mode_t mode; /* type and permission bits */
	uid_t uid;
	gid_t gid;
	uint64_t size;	/* bytes; a symlink's target length; a folder's 0 */
	uint32_t nlink; /* folders: 2 + number of sub-folders */
	uint64_t rdev;
	int64_t atime_ns, mtime_ns, ctime_ns;
	uint32_t flags; /* TREE_F_* */
	/* regular files: content blocks allocated (DATA keys, each of
	 * tree_block_size() bytes at most), or TREE_BLOCKS_UNKNOWN for a record
	 * written before pathfs kept the count (counted at its next change);
	 * 0 for everything else. Kept by the store; ignored by tree_setattr. */
	uint64_t blocks;
};
#define TREE_BLOCKS_UNKNOWN UINT64_MAX

/* The attributes live in the INODE record (the inode has or had hard links,
 * or is an orphan); path nodes of it are stubs pointing there. */
#define TREE_F_LINKED 0x1
/* A folder with a default ACL (system.posix_acl_default), so that making a
 * node reads the ACL only where there is one. Kept by the store. */
#define TREE_F_DEFACL 0x2
/* An inode with an access ACL (system.posix_acl_access), so that a chmod
 * reads the ACL only where there is one. Kept by the store. */
#define TREE_F_ACL 0x4
/* Regular files: empty blocks may lie past the end of file, allocated by
 * fallocate(FALLOC_FL_KEEP_SIZE) (content.c); a truncate drops them. */
#define TREE_F_PREALLOC 0x8
/*
 * Inode flags a user sets (chattr(1); the daemon maps them to FS_*_FL),
 * kept in the inode's record (a hard-linked inode's INODE record: a stub
 * never holds them) and enforced by the store as ext4 and the VFS do, with
 * -EPERM (flags.c):
 *  - IMMUTABLE: no change of content, size, attributes (tree_setattr, but an
 *    access's atime, TREE_SET_ACCESS), xattrs, no new name (tree_link*), no
 *    removal or rename; a folder: no entry made, removed or renamed in it;
 *  - APPEND: writes only at the end (the daemon refuses other opens), no
 *    truncate, no fallocate but allocation, no chmod, chown or explicit
 *    times (TREE_SET_TOUCH may set them to now), no xattr change, no new
 *    name, no removal or rename; a folder: entries may be made in it, not
 *    removed or renamed out;
 *  - NOATIME: an access never updates atime (TREE_SET_ACCESS);
 *  - NODUMP: for backup programs (dump(8)); nothing to enforce;
 *  - SYNC: a change of the inode is durable when the call returns (the
 *    write-ahead log is synced), on a folder as DIRSYNC too;
 *  - DIRSYNC (folders): a change of entries in it is durable on return.
 * New nodes inherit NODUMP, NOATIME and SYNC from their folder, a new folder
 * DIRSYNC too (as ext4: tree_mknode*, tree_mktmp). Old records hold none.
 */
#define TREE_F_IMMUTABLE 0x10
#define TREE_F_APPEND	 0x20
#define TREE_F_NOATIME	 0x40
#define TREE_F_NODUMP	 0x80
#define TREE_F_SYNC	 0x100
#define TREE_F_DIRSYNC	 0x200
#define TREE_F_USER                                                            \
	(TREE_F_IMMUTABLE | TREE_F_APPEND | TREE_F_NOATIME | TREE_F_NODUMP |   \
	 TREE_F_SYNC | TREE_F_DIRSYNC)

/*
 * Sets the user flags (TREE_F_USER) of inode @ino at @path (or by number
 * when @path is NULL) to @flags, and its ctime to now; DIRSYNC on anything
 * but a folder is dropped, as ext4 drops it. Who may is the caller's to
 * check (the owner, and for IMMUTABLE and APPEND a privileged process:
 * CAP_LINUX_IMMUTABLE). Serialised with namespace changes (ns_lock), so a
 * rename or unlink sees the flags before or after, never in between. @out
 * (may be NULL) gets the result.
 * Errors: -EINVAL (a bit outside TREE_F_USER), -ENOENT, -ENOSPC, -EIO.
 */
int tree_setflags(struct tree *t, const char *path, uint64_t ino,
		  uint32_t flags, struct tree_attr *out);

/*
 * Space used by @a in 512-byte units, as st_blocks shows it: for a regular
 * file the blocks allocated (a->blocks blocks of drive @t), each counted only
 * as far as the file reaches (a small file is not a whole block), so a
 * sparse file shows only what is stored; a file with blocks past its end
 * (TREE_F_PREALLOC) counts every block whole; a file whose count is unknown
 * (old record) shows its size. Other nodes: their size rounded up.
 */
uint64_t tree_attr_blocks(const struct tree *t, const struct tree_attr *a);

/* Fills a struct stat from @a of drive @t (st_blocks: tree_attr_blocks(),
 * st_blksize: the block size). */
void tree_attr_to_stat(const struct tree *t, const struct tree_attr *a,
		       struct stat *st);

/* Name of drive @t (borrowed). */
const char *tree_drive_name(const struct tree *t);

/* The store @t belongs to. */
struct store *tree_store(struct tree *t);

/* Content block size of drive @t in bytes. */
size_t tree_block_size(const struct tree *t);

/* Current time in ns, as the store stamps it. */
int64_t tree_now_ns(void);

/*
 * Looks up @path. Resolves hard-link stubs: @out holds the inode's real
 * attributes. Errors: -ENOENT, -ENOTDIR (a parent is not a folder; only
 * reported when cheap, -ENOENT otherwise), -EINVAL, -ENAMETOOLONG, -EIO.
 */
int tree_lookup(struct tree *t, const char *path, struct tree_attr *out);

/*
 * Finds inode @ino by its number (file handles: the kernel asks for a node
 * id it no longer caches). *path gets a malloc'd path of it (caller frees),
 * or NULL for a hard-linked inode (addressed by number: its INODE record),
 * and @out its attributes. Errors: -ENOENT (no node has that number: never
 * used, removed, or an orphan; also a rename of an ancestor in the same
 * moment, so a caller may retry once), -EOPNOTSUPP (a store of a format
 * before 4 opened read-only: no index), -EIO.
 */
int tree_find_ino(struct tree *t, uint64_t ino, char **path,
		  struct tree_attr *out);

/*
 * The generation of every inode number of drive @t for file handles: inode
 * numbers are never reused within a drive, so one value per drive suffices;
 * it differs between drives created at different times (a drive deleted and
 * created again under its name starts its numbers over). Never 0.
 */
uint32_t tree_generation(const struct tree *t);

/*
 * Reads a symlink's target into a malloc'd NUL-terminated string *target
 * (caller frees). Errors: -ENOENT, -EINVAL (not a symlink), -EIO.
 */
int tree_readlink(struct tree *t, const char *path, char **target);

/*
 * As tree_readlink(), for a hard-linked symlink found by its number @ino
 * (its INODE record holds the target): for callers that know the inode but
 * not which of its names still exists. Errors: -ENOENT (no INODE record: not
 * hard-linked), -EINVAL, -EIO.
 */
int tree_readlink_ino(struct tree *t, uint64_t ino, char **target);

/*
 * Creates a node at @path: a folder, regular file, symlink (@target != NULL,
 * mode S_IFLNK|0777), FIFO, socket or device (@rdev). Allocates a new inode
 * number; times are now; folders get nlink 2, others 1. In a folder with
 * set-group-ID, the node gets the folder's group instead of @gid, and a new
 * folder the set-group-ID bit too (BSD semantics, as ext4). Updates the parent's
 * mtime/ctime (and nlink for a folder) in the same atomic batch.
 * @out (may be NULL) receives the new attributes.
 * Errors: -EEXIST, -ENOENT (no parent), -ENOTDIR (parent not a folder),
 * -EINVAL, -ENAMETOOLONG, -ENOSPC, -EIO.
 */
int tree_mknode(struct tree *t, const char *path, mode_t mode, uid_t uid,
		gid_t gid, uint64_t rdev, const char *target,
		struct tree_attr *out);

/*
 * As tree_mknode() (which is this with @umask 0), for a process's request:
 * in a folder without a default ACL the permission bits are @mode's less
 * @umask; in one with a default ACL the umask does not apply and the node
 * gets the access ACL that the default ACL masked by @mode gives (and the
 * mode that ACL gives), a folder the default ACL too, as POSIX says. A
 * symlink gets neither.
 */
int tree_mknode_umask(struct tree *t, const char *path, mode_t mode,
		      mode_t umask, uid_t uid, gid_t gid, uint64_t rdev,
		      const char *target, struct tree_attr *out);
/*
 * As tree_mknode_umask() for a regular file the caller opens as it makes it
 * (open with O_CREAT): one writer of several records its hold of the file
 * (tree_hold) in the commit that makes it, not in one of its own; the
 * caller's tree_unhold() at the last close drops it.
 */
int tree_mkfile_held(struct tree *t, const char *path, mode_t mode,
		     mode_t umask, uid_t uid, gid_t gid, struct tree_attr *out);

/*
 * Adds hard link @newpath to the file at @oldpath (not a folder: -EPERM).
 * The inode's attributes move to its INODE record (TREE_F_LINKED) on the first
 * link; nlink and ctime are updated; the new parent's mtime/ctime too.
 * Errors: -ENOENT, -EEXIST, -ENOTDIR, -EPERM, -EMLINK, -EIO, -ENOSPC.
 */
int tree_link(struct tree *t, const char *oldpath, const char *newpath,
	      struct tree_attr *out);

/*
 * As tree_link(), for an inode that is already hard-linked (TREE_F_LINKED),
 * found by its number @ino rather than by a path: for callers that know the
 * inode but not which of its paths still exists (the daemon, after the link
 * it first looked the inode up by was removed or renamed). Errors: as
 * tree_link(), and -ENOENT when @ino has no INODE record (it is not
 * hard-linked: use tree_link() with its one path) or is an orphan.
 */
int tree_link_ino(struct tree *t, uint64_t ino, const char *newpath,
		  struct tree_attr *out);

/*
 * Creates an unnamed regular file (open(O_TMPFILE) in folder @dir): a new
 * inode with @mode's permission bits and owner @uid/@gid (group: a
 * set-group-ID @dir's, as tree_mknode() gives it) that is an orphan
 * from the start (nlink 0, addressed by number, reclaimed by tree_reclaim()
 * or at the next store_open() unless tree_link_tmp() names it first). @dir
 * is only checked (a folder), not changed. @umask and @dir's default ACL
 * apply as for tree_mknode_umask(). Errors: -ENOENT, -ENOTDIR, -EINVAL,
 * -ENOSPC, -EIO.
 */
int tree_mktmp(struct tree *t, const char *dir, mode_t mode, mode_t umask,
	       uid_t uid, gid_t gid, struct tree_attr *out);

/*
 * As tree_link_ino(), and also for an orphan of tree_mktmp() (linkat(2) of
 * an O_TMPFILE file): its first name makes it an ordinary hard-linked inode
 * (nlink 1, no longer an orphan). The caller answers for the orphan being
 * one that may get a name (the kernel allows it for O_TMPFILE files not
 * opened with O_EXCL only). Errors: as tree_link_ino().
 */
int tree_link_tmp(struct tree *t, uint64_t ino, const char *newpath,
		  struct tree_attr *out);

/* Flags of tree_unlink()/tree_rename(). */
#define TREE_KEEP_ORPHAN                                                       \
	0x1 /* the inode is in use (open, or known to the
				kernel): if its last link goes, keep it as an
				orphan instead of freeing it */

/*
 * Removes the non-folder at @path. If that was the last link: with
 * TREE_KEEP_ORPHAN the inode becomes an orphan (its attributes and content
 * stay, reachable by inode number with path NULL, until tree_reclaim() or the
 * next store_open()), and *orphan (if not NULL) is set to its number;
 * otherwise its content and xattrs are deleted in the same batch and *orphan
 * is set to 0. On a full store (-ENOSPC) it is tried again without the
 * parent folder's new times, so that it only deletes (tree_remove.c).
 * Errors: -ENOENT, -EISDIR, -ENOTDIR, -EIO, -ENOSPC.
 */
int tree_unlink(struct tree *t, const char *path, unsigned flags,
		uint64_t *orphan);

/* Removes the empty folder @path (not "/": -EBUSY).
 * Errors: -ENOENT, -ENOTDIR, -ENOTEMPTY, -EBUSY, -EIO. */
int tree_rmdir(struct tree *t, const char *path);

/*
 * As tree_unlink() (@dir false) or tree_rmdir() (@dir true); for a folder,
 * TREE_KEEP_ORPHAN makes it an orphan as in tree_unlink() (attributes and
 * xattrs kept by number, nlink 0, *orphan set) for a caller that still
 * answers requests on it (a FUSE node id lives until the kernel forgets it).
 * @ino (0: unknown) is the inode number the caller has just read at @path
 * (its lookup): the node is then read once, under its stripe, instead of
 * once to learn the number and again under the stripe. A wrong guess costs
 * a read more and changes nothing else.
 * Errors: those of tree_unlink() and tree_rmdir().
 */
int tree_remove(struct tree *t, const char *path, uint64_t ino, bool dir,
		unsigned flags, uint64_t *orphan);

/* Frees orphan inode @ino: its attributes, content and xattrs. Among
 * shared writers, one another writer holds open (tree_hold) is left to
 * them instead: its mark is handed over, -EBUSY.
 * Errors: -ENOENT (not an orphan), -EBUSY, -EIO. */
int tree_reclaim(struct tree *t, uint64_t ino);

/*
 * One writer of several (store_options.shared): frees the orphans of drive
 * @t that writers no longer holding the store left (their ORPHAN marks name
 * them, tree_batch_put_orphan; a writer whose lease expired is fenced and
 * cannot touch them again); *count (may be NULL) gets how many. Run at a
 * shared open and by the daemon every few seconds. A sole writer: nothing
 * to do (store_open frees every orphan). Errors: as tree_reclaim, -EIO.
 */
int tree_reclaim_dead(struct tree *t, size_t *count);
/*
 * One writer of several (store_options.shared): records that inode @ino is
 * open here (HOLD#, store/hold.c), so that if another writer removes its
 * last name it stays an orphan until this writer calls tree_unhold(). Call
 * at the first open of @ino here, before that open answers, and
 * tree_unhold() at its last close; the last holder's tree_unhold() frees
 * an orphan kept for its holders. A sole writer: nothing to do (0); one
 * alone on its drive (tree_lone_try) keeps it in memory.
 * Errors: -ENOENT (no inode @ino any more: removed before the open),
 * -EIO, -EROFS (fenced), -ENOSPC, and as tree_reclaim().
 */
int tree_hold(struct tree *t, uint64_t ino);
int tree_unhold(struct tree *t, uint64_t ino);
/* tree_unhold() of the @n @inos, many to a commit (a number this writer
 * does not hold is skipped). On an error the commits before it stay. */
int tree_unhold_many(struct tree *t, const uint64_t *inos, size_t n);
/*
 * One writer of several that watches its drive (tree_watch): if it is the
 * only writer holding the store, says so in the drive (LONE, store/lone.c)
 * and takes no holds from then on (tree_hold keeps the open in memory, as
 * cheap as a sole writer's) until a writer that joins asks it to publish
 * them: the watch reports that (tree_change.share) and the caller then
 * calls tree_share() soon, off the watch's thread (the joiner waits for
 * it); and once after tree_lone_try() (an ask may come as it goes alone;
 * alone and not asked, tree_share() narrows the watch to the keys a
 * joiner writes, store/watch.c, as nobody else changes the drive). Run by the daemon every few seconds. Errors: -EAGAIN (no watch
 * stands yet: ask again soon), as kv_writers, tree_commit, tree_hold.
 */
int tree_lone_try(struct tree *t);
int tree_share(struct tree *t);
/* Whether @t's store is open as one writer of several (store_options.shared). */
bool tree_shared(const struct tree *t);

/*
 * As tree_reclaim() for the @n orphans @inos, several to a commit (each
 * orphan's deletes in one batch; a number that is not an orphan is skipped).
 * The caller answers for no one else using them (the daemon: the kernel has
 * forgotten them and they are not open), and for each number being there
 * once: a hold of this writer's (a shared writer's, that its last close
 * left to drop later) goes in the batch that frees it. *count (if not
 * NULL) gets the number freed. On an error the batches before it stay
 * committed.
 * Errors: -EIO, -ENOSPC.
 */
int tree_reclaim_many(struct tree *t, const uint64_t *inos, size_t n,
		      size_t *count);

/* Flags of tree_rename(), beside TREE_KEEP_ORPHAN (for a replaced target). */
#define TREE_RENAME_NOREPLACE 0x2
#define TREE_RENAME_EXCHANGE  0x4

/*
 * Renames @src to @dst with POSIX rename(2)/renameat2(2) semantics.
 * A file, symlink or empty folder moves in one atomic batch; a non-empty
 * folder goes through the journaled subtree rewrite (journal.c), which a crash
 * at any point cannot leave half done: the next store_open() completes it.
 * A replaced node's last link (a file, or an empty folder) is handled as in
 * tree_unlink() (*orphan; a big file's blocks go in slices after the
 * rename's batch). One writer of several (store_options.shared) holds a
 * non-empty folder's two branches under a lock while it rewrites them
 * (branch_lock.c); -EAGAIN if another's lock kept it waiting too long.
 * Errors: -ENOENT, -EEXIST (NOREPLACE), -ENOTEMPTY, -EISDIR, -ENOTDIR,
 * -EINVAL (@dst inside @src, or "/"), -EBUSY, -ENOSPC, -EIO.
 */
int tree_rename(struct tree *t, const char *src, const char *dst,
		unsigned flags, uint64_t *orphan);

/*
 * tree_rename() (not TREE_RENAME_EXCHANGE: -EINVAL) that leaves a whiteout
 * at @src, as renameat2(RENAME_WHITEOUT) does for overlayfs: a character
 * device 0:0 with mode 0, owned by @uid:@gid (in a set-group-ID folder, the
 * folder's group), made in the same batch as the rename (a non-empty
 * folder's: its final batch, replayed with it after a crash). Nothing is
 * made when nothing moves (two links of one inode). Linux lets any caller
 * make whiteouts (since 5.8), as ext4 does.
 */
int tree_rename_whiteout(struct tree *t, const char *src, const char *dst,
			 unsigned flags, uid_t uid, gid_t gid,
			 uint64_t *orphan);

/* Which fields tree_setattr() changes. */
#define TREE_SET_MODE  0x01 /* permission bits only; the type is kept */
#define TREE_SET_UID   0x02
#define TREE_SET_GID   0x04
#define TREE_SET_SIZE  0x08 /* truncate or extend (holes), content too */
#define TREE_SET_ATIME 0x10
#define TREE_SET_MTIME 0x20
#define TREE_SET_CTIME 0x40 /* explicit ctime; otherwise ctime = now */
/* the times given are now (utimes(NULL), touch): allowed on an APPEND
 * node, where explicit times are not */
#define TREE_SET_TOUCH 0x80
/* an access (a read, a listing) sets atime: allowed on an IMMUTABLE or
 * APPEND node, and nothing is written on a NOATIME one */
#define TREE_SET_ACCESS 0x100

/*
 * Changes the attributes of inode @ino, found at @path (or by inode number
 * alone when @path is NULL: hard-linked inodes and orphans). Any change sets
 * ctime to now unless TREE_SET_CTIME gives it; a size change also sets mtime
 * to now unless TREE_SET_MTIME gives it. A mode change rewrites the access
 * ACL, if any, in the same batch (its owner, mask or group, and other
 * entries take the new rwx bits). @out (may be NULL) gets the result.
 * Errors: -ENOENT (no node, or its inode is not @ino: it was replaced),
 * -EISDIR (size of a folder), -EPERM (the inode's flags: TREE_F_IMMUTABLE,
 * TREE_F_APPEND), -EINVAL, -EFBIG, -ENOSPC, -EIO.
 */
int tree_setattr(struct tree *t, const char *path, uint64_t ino,
		 const struct tree_attr *in, unsigned mask,
		 struct tree_attr *out);

/*
 * Gets the attributes of inode @ino at @path, or by number alone when @path is
 * NULL (hard-linked inodes and orphans). Errors: -ENOENT, -EIO.
 */
int tree_getattr(struct tree *t, const char *path, uint64_t ino,
		 struct tree_attr *out);

/* ---- Content (blocks keyed by inode number) ---------------------------- */

/*
 * Reads up to @len bytes at @off of inode @ino (located as for
 * tree_getattr) into @buf; *nread gets the count (short only at end of file).
 * Holes read as zeros. Never writes (atime is the caller's business).
 * The size and the bytes are of one moment even while another process
 * writes the store (etcd: one revision). Errors: -ENOENT, -EIO, -ESTALE
 * (etcd compacted the revision read, three times running), -EISDIR,
 * -EINVAL (not a regular file).
 */
int tree_read(struct tree *t, const char *path, uint64_t ino, uint64_t off,
	      size_t len, char *buf, size_t *nread);

/*
 * Whether a read of one moment that failed with @rc is to be tried again:
 * -ESTALE (a commit changed a record among its reads: tree_read's,
 * tree_dir_check's) fewer than 16 times (*@tries counts them); from the
 * third try on it pauses first, 1, 2, 4 ... 64 ms, half of it random.
 */
bool tree_read_again(int rc, int *tries);

/*
 * Writes @len bytes at @off (at the end of file if @append) to inode @ino,
 * updating size, mtime and ctime in the same atomic batch.
 * @out (may be NULL) gets the new attributes (out->size is the new size).
 * Errors: -ENOENT, -EFBIG, -ENOSPC, -EIO.
 */
int tree_write(struct tree *t, const char *path, uint64_t ino, uint64_t off,
	       const char *buf, size_t len, bool append, struct tree_attr *out);

/*
 * SEEK_DATA / SEEK_HOLE on inode @ino of size @size from @off, at block
 * granularity; allocated blocks never written (fallocate) are holes.
 * *result gets the offset. Errors: -ENXIO (past the end or no more data),
 * -EINVAL, -EIO.
 */
int tree_seek(struct tree *t, uint64_t ino, uint64_t size, uint64_t off,
	      int whence, uint64_t *result);

/* Modes of tree_fallocate(), as FALLOC_FL_* of fallocate(2). */
#define TREE_FALLOC_KEEP_SIZE  0x01
#define TREE_FALLOC_PUNCH_HOLE 0x02 /* with KEEP_SIZE only */
#define TREE_FALLOC_ZERO_RANGE 0x10

/*
 * fallocate(2) of [@off, @off + @len) of regular file @ino (located as for
 * tree_getattr). Mode 0 allocates the blocks of the range not stored yet
 * (they read as zeros; st_blocks counts them) and extends the size to the
 * range's end; KEEP_SIZE keeps the size (nothing is allocated past it);
 * PUNCH_HOLE|KEEP_SIZE frees the whole blocks of the range and zeroes the
 * rest of it; ZERO_RANGE zeroes the range and leaves it allocated (extending
 * the size unless KEEP_SIZE). Allocating checks first that the store's free
 * space holds every block allocated, else -ENOSPC with nothing changed; it
 * cannot keep that space for later writes (content.c). ctime is set, mtime
 * too when the content or size changed. @out (may be NULL) gets the result.
 * Errors: -ENOENT, -EISDIR, -ENODEV (not a regular file), -EINVAL (@len 0),
 * -EFBIG, -EOPNOTSUPP (another mode), -ENOSPC, -EIO.
 */
int tree_fallocate(struct tree *t, const char *path, uint64_t ino,
		   unsigned mode, uint64_t off, uint64_t len,
		   struct tree_attr *out);

/* ---- Extended attributes (keyed by inode number) ----------------------- */

/* XATTR_CREATE / XATTR_REPLACE as in <sys/xattr.h>. Names up to 255 bytes,
 * values up to 64 KiB. Sets ctime of the inode (at @path or by number). */
#define TREE_XATTR_NAME_MAX 255
#define TREE_XATTR_SIZE_MAX 65536

/*
 * The POSIX ACLs system.posix_acl_access and system.posix_acl_default are
 * kept as xattrs with their rules (store/acl.c): the value must be an ACL in
 * the kernel's xattr form (-EINVAL), a default ACL goes on folders only
 * (-EACCES); an access ACL sets the mode's rwx bits in the same change, and
 * one the mode says all of is not stored; with TREE_XATTR_KILL_SGID in
 * @flags (the caller is neither in the file's group nor privileged) setting
 * it also clears set-group-ID. Removing an ACL that is not there is no
 * error. A chmod (tree_setattr) rewrites the access ACL; tree_mknode_umask()
 * inherits the folder's default ACL.
 */
#define TREE_XATTR_KILL_SGID 0x100

/* Errors: -EEXIST (XATTR_CREATE), -ENODATA (XATTR_REPLACE), -ERANGE (name or
 * value too long), -EINVAL, -EACCES (ACLs), -ENOENT, -ENOSPC, -EIO. */
int tree_setxattr(struct tree *t, const char *path, uint64_t ino,
		  const char *name, const void *value, size_t size, int flags);

/* *value is malloc'd (caller frees), *size its length. Errors: -ENODATA. */
int tree_getxattr(struct tree *t, uint64_t ino, const char *name, void **value,
		  size_t *size);

/* *list is a malloc'd run of NUL-terminated names, *size its total length
 * (0 and NULL when there are none). */
int tree_listxattr(struct tree *t, uint64_t ino, char **list, size_t *size);

/* Errors: -ENODATA, -ENOENT, -EIO. */
int tree_removexattr(struct tree *t, const char *path, uint64_t ino,
		     const char *name);

/* ---- Listing: children of a folder, and a whole branch ----------------- */

struct tree_dir;

/*
 * Opens a streaming listing of the children of folder @path, in byte order of
 * names, starting after the name @after (NULL or "" = from the start). One
 * children range scan (its first entry read here), and a read of the
 * folder's record only when the listing from the start is empty; bounded
 * memory for any folder size.
 * Errors: -ENOENT, -ENOTDIR (a listing resumed after a name that finds no
 * more ends instead, even if the folder went away), -EINVAL, -EIO.
 */
int tree_dir_open(struct tree_dir **out, struct tree *t, const char *path,
		  const char *after);

/*
 * As tree_dir_open(), for a listing that must be of one moment (a readdir
 * page): where the engine's iterators are not (kv_iters_one_moment: on
 * DynamoDB, each Query page is read as the table is then, and a Query is
 * not isolated from a transaction), the listing pins the store (kv_pin)
 * and reads the folder's record first, which every commit that changes
 * its children rewrites; tree_dir_check() reads it again. Costs there one
 * GetItem at open and one at the check (none at the check for the lease
 * holder while none of its own commits ran). Elsewhere as tree_dir_open().
 * A thread has one such listing open at a time.
 */
int tree_dir_open_checked(struct tree_dir **out, struct tree *t,
			  const char *path, const char *after);

/* Whether listing @d is checked (tree_dir_check() may say -ESTALE): its
 * caller holds back what it shows of it until the check. */
bool tree_dir_checked(const struct tree_dir *d);

/*
 * Whether what a listing of tree_dir_open_checked() gave so far is of one
 * moment: 0, or -ESTALE (a commit changed the folder meanwhile: list it
 * again, tree_read_again), -EIO; it ends the check (0 for any other
 * listing).
 */
int tree_dir_check(struct tree_dir *d);

/*
 * Next child: returns 1 and sets *name (NUL-terminated, borrowed until the next
 * call), *namelen and *attr; 0 at the end; negative errno on failure.
 * A child whose value does not decode is returned with attr->ino == 0 and
 * attr->mode == 0 (and logged), so a listing never stops at one bad entry.
 * Hard-link stubs are resolved to the inode's attributes.
 */
int tree_dir_next(struct tree_dir *d, const char **name, size_t *namelen,
		  struct tree_attr *attr);
void tree_dir_free(struct tree_dir *d);

struct tree_scan;

/*
 * Opens a scan of every descendant of folder @path at any depth (not @path
 * itself): one subtree range read. Entries come in key order, which is NOT
 * parent-before-child order (names with bytes below '/' sort first).
 * Errors: -ENOENT, -ENOTDIR, -EINVAL, -EIO.
 */
int tree_scan_open(struct tree_scan **out, struct tree *t, const char *path);

/*
 * Next descendant: returns 1 and sets *path (full path, NUL-terminated,
 * borrowed until the next call) and *attr (hard-link stubs NOT resolved: check
 * TREE_F_LINKED and call tree_getattr(t, NULL, attr->ino, ...) when the real
 * attributes are needed); 0 at the end; negative errno on failure. A bad
 * value is returned with attr->mode == 0 as for tree_dir_next().
 */
int tree_scan_next(struct tree_scan *sc, const char **path,
		   struct tree_attr *attr);
void tree_scan_free(struct tree_scan *sc);

/* ---- Whole-branch operations (rm.c, rm_batch.c, clone.c, move.c) ------- */

/* What a budgeted branch operation did. */
struct tree_op_result {
	uint64_t processed, skipped, failed;
	char **failures; /* malloc'd "path: reason" strings, nfailures */
	size_t nfailures;
	char *token; /* malloc'd resume token, NULL when finished */
};
void tree_op_result_release(struct tree_op_result *r);

/*
 * Deletes the branch at @path: descendants first, @path itself last, so a
 * crash at any point leaves no node without its parent. @max_items (0 = no
 * limit) bounds the nodes removed in this call; when it stops early r->token
 * says how to go on, and passing that token as @resume continues exactly
 * there. Open inodes (the daemon passes TREE_KEEP_ORPHAN) become orphans.
 * Errors: -ENOENT, -EINVAL (bad or foreign token, or "/"), -EIO, -ENOSPC.
 */
int tree_rm_r(struct tree *t, const char *path, uint64_t max_items,
	      const char *resume, unsigned flags, struct tree_op_result *r);
/*
 * The most nodes below a folder that tree_rm_r() removes in one batch: a
 * branch with more goes by the walk, a node at a time, as does a small one,
 * one past @max_items or the engine's limits, and one holding a node the
 * walk must report. For a caller that shows progress.
 */
uint64_t tree_rm_batch_max(void);

/*
 * Tells tree_rm_r(..., TREE_KEEP_ORPHAN) (and the delete half of tree_mv())
 * on drive @t which inodes are open: only those for which @is_open returns
 * true then become orphans; the others are freed at once, which lets a
 * branch go in one batch. Without a check every removed last link becomes
 * an orphan. @is_open is called from the thread running the operation,
 * possibly with store locks held: it must not call into the store. NULL
 * removes the check. The check is kept in @t and goes with it.
 */
void tree_set_open_check(struct tree *t,
			 bool (*is_open)(void *ctx, uint64_t ino), void *ctx);

/*
 * Watching a drive that another process writes (watch.c): a -o ro mount of a
 * store on etcd learns of the writer's changes through it. @fn(@ctx, c) is
 * called on a thread of the watch's own, one change at a time in commit
 * order: c->path is a node put or deleted (c->ino the inode its new value
 * names, 0 if deleted), or c->path is NULL and c->ino an inode whose content,
 * extended attributes or INODE record changed. @fn(@ctx, NULL): everything
 * may have changed (the watch started, or restarted after changes were
 * missed). @c and its path are borrowed for the call. tree_watch_stop() ends
 * it (NULL is fine; no call runs after it returns), before the store closes.
 * Errors: -EOPNOTSUPP (a RocksDB store: one process opens it), -ENOMEM,
 * -EAGAIN.
 */
struct tree_change {
	const char *path;
	uint64_t ino;
	long long rev; /* the commit's: one for all changes of a batch */
	bool share;    /* a writer joins: call tree_share() (tree_lone_try) */
};
typedef void (*tree_change_fn)(void *ctx, const struct tree_change *c);
struct tree_watch;
int tree_watch(struct tree *t, tree_change_fn fn, void *ctx,
	       struct tree_watch **out);
void tree_watch_stop(struct tree_watch *w);
/*
 * Marks this thread's changes of @t's store as the caller's own, applied to
 * its caches as it makes them (a daemon's request threads: the reply tells
 * the kernel): this process's watches (tree_watch) do not hand them back, so
 * they cost the caches nothing (kv_quiet: the watch waits for a quiet
 * commit's answer when it meets its change first). For the threads that
 * serve requests, and a pathfsctl branch command's thread while it runs
 * (its end tells the kernel, ctl_hooks.c), only: a change made for another
 * writer (a takeover of its rename) must be heard. @on false: this
 * thread's changes are heard again.
 */
void tree_watch_quiet(struct tree *t, bool on);

/*
 * Clones the branch at @src of drive @t to @dst of drive @dt (may equal @t):
 * new inode numbers, content and xattrs copied, hard links inside the branch
 * kept as hard links. Budget and token as for tree_rm_r().
 * Errors: -ENOENT, -EEXIST (dst exists and this is not a resume), -EINVAL
 * (dst inside src, bad token), -EIO, -ENOSPC.
 */
int tree_cp_r(struct tree *t, const char *src, struct tree *dt, const char *dst,
	      uint64_t max_items, const char *resume, struct tree_op_result *r);

/*
 * Moves the branch at @src of drive @t to @dst of drive @dt. Within one drive
 * this is the journaled rename (tree_rename, budget ignored: it always
 * completes); across drives it is a clone then a delete, budgeted.
 */
int tree_mv(struct tree *t, const char *src, struct tree *dt, const char *dst,
	    uint64_t max_items, const char *resume, struct tree_op_result *r);

/* ---- Journal and housekeeping ------------------------------------------ */

/* One unfinished journal record, as tree_journal_list() reports it. */
struct tree_journal_entry {
	uint64_t seq;
	char *op;     /* "rename", "exchange", ... (malloc'd) */
	char *src;    /* malloc'd */
	char *dst;    /* malloc'd */
	char *cursor; /* malloc'd, printable; "" before the first batch */
};

/* Lists the unfinished journal records of drive @t. Free with
 * tree_journal_list_free(). */
int tree_journal_list(struct tree *t, struct tree_journal_entry **out,
		      size_t *count);
void tree_journal_list_free(struct tree_journal_entry *e, size_t count);

/* Replays every unfinished journal record of @t; *replayed (may be NULL) gets
 * how many. store_open() already does this; calling again is harmless. A
 * shared writer replays only what tree_journal_takeover() does. */
int tree_journal_replay(struct tree *t, size_t *replayed);

/*
 * One writer of several (store_options.shared): finishes the folder
 * renames of drive @t whose writer no longer holds the store (its branch
 * lock names it: branch_lock.c; one writer takes each over, in a
 * conditioned commit), and this writer's own that no thread of it runs (a
 * failed exchange's). *count (may be NULL) gets how many. Run by the daemon
 * every few seconds. Errors: as kv_writers, tree_commit; -EIO if this
 * writer is fenced.
 */
int tree_journal_takeover(struct tree *t, size_t *count);

/*
 * Checks that no other user can read the store of @s: its folder and every
 * file and folder in it grant nothing to group or others (RocksDB's files
 * hold the drives' content, the write-ahead log a file's bytes as written).
 * Each of the two kinds that does (the store's folder; its files, counted,
 * one named) is reported once through @report and counted in *findings
 * (may be NULL); with @repair it is made owner-only (chmod go-rwx) and the
 * message says so, or why not. A remote store has no files: nothing to
 * check. Programs that open a store create its files owner-only by their
 * umask (077). Errors: -errno of reading the folder.
 */
int store_check_private(struct store *s, bool repair,
			void (*report)(void *arg, const char *msg), void *arg,
			size_t *findings);

/*
 * Checks every invariant of drive @t: values decode; every node's parent exists
 * and is a folder; hard-link counts match; no DATA/XATTR/INODE keys for inodes
 * nothing points to (orphans excepted); content blocks longer than the block
 * size or lying past the end of file; folder nlink; the inode counter is
 * above every inode in use; unfinished journal records (each is a finding).
 * @report is called once per finding with a one-line message. With @repair,
 * what can be fixed safely is fixed (and the message says so).
 * *findings (may be NULL) gets the count. Errors: -EIO only when the scan
 * itself fails.
 */
int tree_fsck(struct tree *t, bool repair,
	      void (*report)(void *ctx, const char *msg), void *ctx,
	      size_t *findings);

/* Statistics of the store's file system for statfs(2). */
int tree_statfs(struct tree *t, struct statvfs *st);

#endif
