/*
 * pathfsctl.c - the admin tool's main: global options, then the command runs
 * either in the daemon that has the store mounted (over its control socket:
 * ctl/client.c to fs/control.c) or here on the store opened directly (the
 * ctl library, ctl/include/ctl.h).
 *
 *   pathfsctl [-s STORE] [-d DRIVE] [-v] [-b N] COMMAND [ARGS]
 *
 * STORE defaults to $PATHFS_STORE (there is no built-in default: a store is a
 * directory the user chose when mounting); DRIVE defaults to $PATHFS_DRIVE,
 * else "main", as the daemon's.
 *
 * A store on etcd (etcd://...) has one writer: its read-write mount on this
 * machine serves the control socket (an abstract one, proto.h), so commands
 * go to it as on a RocksDB store. With no writer here, a command that only
 * reads (ctl_reads_only: ls, stat, tree, du, fsck without --repair, drives)
 * opens the store read-only, with no owner key, wherever the writer is; the
 * others open it read-write and are refused in one line naming the writer
 * while there is one.
 *
 * Limits: only one process may open a RocksDB store; when a daemon holds it
 * and does not answer on its socket (hung, or another user's), the command
 * fails with a clear message rather than waiting. A read on an etcd store
 * being written sees the state of one moment per scan (etcd.c's iterators
 * read at one revision), not one moment for the whole command.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "log.h"
#include "proto.h"

static void usage(FILE *f)
{
	fputs("usage: pathfsctl [-s STORE] [-d DRIVE] [-v] [-b N] COMMAND "
	      "[ARGS]\n"
	      "  -s STORE  the store directory (default: $PATHFS_STORE)\n"
	      "  -d DRIVE  the drive (default: $PATHFS_DRIVE, else main)\n"
	      "  -v        show the store's informational log lines\n"
	      "  -b N      entries per batch of a rename or branch operation\n"
	      "            (store opened here only; default 1024)\n"
	      "On a mounted store the daemon runs the command (control "
	      "socket STORE/pathfs.sock);\notherwise pathfsctl opens the "
	      "store itself.\n"
	      "'pathfsctl help' lists the commands, 'pathfsctl COMMAND "
	      "--help' explains one.\n",
	      f);
}

static bool wants_help(int argc, char **argv)
{
	int i;

	if (!strcmp(argv[0], "help"))
		return true;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	}
	return false;
}

/* The sentence for a store refused with -EBADMSG, in @buf. */
static void damage_words(const char *dir, char *buf, size_t size)
{
	if (store_damage(dir, buf, size))
		snprintf(buf, size, "a write-ahead log is damaged");
}

static int open_error(const char *dir, int rc, const char *why)
{
	char what[1024];

	switch (rc) {
	case -EBADMSG:
		damage_words(dir, what, sizeof(what));
		fprintf(stderr,
			"pathfsctl: store %s: %s; nothing changed ('pathfsctl "
			"-s %s recover --truncate-log' keeps what precedes "
			"the damage and drops the rest, after copying the logs "
			"to %s/lost+found/)\n",
			dir, what, dir, dir);
		break;
	case -ENOENT:
		fprintf(stderr,
			"pathfsctl: no store at %s (mount it once, or create "
			"one with 'pathfsctl -s %s mkdrive main')\n",
			dir, dir);
		break;
	case -EBUSY: {
		char who[512];
		int held = store_holder(dir, who, sizeof(who));

		if (held == 0 || held == 1) {
			fprintf(
			    stderr,
			    "pathfsctl: store %s is open read-write by %s%s "
			    "(pathfsctl opens it as its only writer: run it "
			    "where it is mounted, through that daemon, or "
			    "unmount it; a writer that died lets go when its "
			    "lease expires); nothing done\n",
			    dir, held ? "shared writers: " : "", who);
			break;
		}
		fprintf(stderr,
			"pathfsctl: store %s is held by another process (a "
			"pathfs daemon that does not answer on its control "
			"socket, or another pathfsctl); nothing done\n",
			dir);
		break;
	}
	case -EMEDIUMTYPE:
		fprintf(stderr, "pathfsctl: %s is not a pathfs store\n", dir);
		break;
	case -EUCLEAN: {
		char what[64];

		if (store_missing(dir, what, sizeof(what)) == 0)
			goto other;
		fprintf(stderr,
			"pathfsctl: %s is a damaged pathfs store: its file %s "
			"is missing; nothing done\n",
			dir, what);
		break;
	}
	case -ENOSPC: {
		uint64_t avail, need;

		if (store_room(dir, &avail, &need))
			fprintf(stderr,
				"pathfsctl: store %s: no space left on its "
				"file system (%llu KiB free, opening it for "
				"writing needs %llu KiB); nothing done\n",
				dir, (unsigned long long)(avail >> 10),
				(unsigned long long)(need >> 10));
		else
			fprintf(stderr,
				"pathfsctl: store %s: no space left on its "
				"file system to finish opening it (recovery "
				"or upgrade); nothing done\n",
				dir);
		break;
	}
	case -EPROTONOSUPPORT:
		fprintf(stderr,
			"pathfsctl: store %s was written by a newer pathfs "
			"(format version %d here); nothing done\n",
			dir, TREE_FORMAT_VERSION);
		break;
	default: /* etcd: wrong password, certificate, refused, ... */
	other:
		if (why[0])
			fprintf(stderr, "pathfsctl: cannot open store %s: %s\n",
				dir, why);
		else
			fprintf(stderr,
				"pathfsctl: cannot open store %s: %s (-v tells "
				"more)\n",
				dir, store_strerror(rc));
	}
	return CTL_FAILED;
}

/* true if the command line @argv has option @opt before any "--" */
static bool has_opt(int argc, char **argv, const char *opt)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], opt))
			return true;
	return false;
}

/*
 * fsck of a store that does not open for a damaged write-ahead log: that is
 * its finding (exit 1); --repair points to the repair, which drops data and
 * so is recover's explicit choice.
 */
static int fsck_damaged(const char *dir, int argc, char **argv)
{
	char what[1024];

	damage_words(dir, what, sizeof(what));
	if (has_opt(argc, argv, "--json")) {
		printf("[{\"store\": \"");
		for (const char *p = dir; *p; p++)
			printf(*p == '"' || *p == '\\' ? "\\%c" : "%c", *p);
		printf("\", \"findings\": [\"%s\"], \"count\": 1, "
		       "\"error\": true}]\n",
		       what);
		return CTL_FAILED;
	}
	printf("store %s:\n  %s\n", dir, what);
	if (has_opt(argc, argv, "--repair"))
		printf("  not repaired: the repair drops data, so it is "
		       "yours to choose: 'pathfsctl -s %s recover "
		       "--truncate-log'\n",
		       dir);
	printf("1 finding\n");
	return CTL_FAILED;
}

/*
 * `recover --truncate-log` on an unmounted store: says what is damaged and
 * what will be dropped, then opens the store with the repair (store.c logs
 * it, to STORE/pathfs.log here, and keeps a copy of the logs in
 * STORE/lost+found/). A store with intact logs opens as always.
 * Returns store_open()'s result, or -errno of reading the logs.
 */
static int open_truncating(const char *dir, struct store_options *opt,
			   struct store **s)
{
	char what[1024], *logpath = NULL;
	int rc = store_damage(dir, what, sizeof(what));

	if (rc == -ENOENT) {
		printf("the write-ahead logs of %s are intact: nothing to "
		       "drop\n",
		       dir);
		return store_open(s, dir, opt);
	}
	if (rc)
		return rc;
	printf("%s\ndropping that: a copy of the logs goes to "
	       "%s/lost+found/, the repair is logged to %s/pathfs.log\n",
	       what, dir, dir);
	fflush(stdout);
	if (asprintf(&logpath, "%s/pathfs.log", dir) < 0 ||
	    log_to_file(logpath, 0))
		fprintf(stderr,
			"pathfsctl: cannot write %s/pathfs.log: the "
			"repair is logged here\n",
			dir);
	free(logpath);
	log_set_level(LOG_INFO);
	opt->truncate_log = true;
	rc = store_open(s, dir, opt);
	if (!rc)
		printf("recovered: %s opens with what preceded the damage; the "
		       "records after it were dropped\n",
		       dir);
	return rc;
}

/*
 * A command that only reads still works where the store cannot be opened for
 * writing: on a full file system (-ENOSPC, @rc) or a read-only one (-EROFS),
 * it opens the store read-only (which replays nothing: a folder rename a
 * crash interrupted shows as it was left) and says so in one line. Returns
 * 0 with *s open, or @rc.
 */
static int open_read_only(const char *dir, int rc, int argc, char **argv,
			  struct store_options *opt, struct store **s)
{
	if ((rc != -ENOSPC && rc != -EROFS) || opt->read_only ||
	    !ctl_reads_only(argc, argv))
		return rc;
	opt->read_only = true;
	if (store_open(s, dir, opt))
		return rc;
	fprintf(stderr,
		"pathfsctl: store %s: %s: opened read-only (unfinished "
		"journal records not replayed)\n",
		dir,
		rc == -ENOSPC ? "no space left on its file system"
			      : "its file system is read-only");
	return 0;
}

/*
 * `recover` on an unmounted store: opening the store for writing replays the
 * journal, so first look at what is unfinished through a read-only open (which
 * replays nothing) and report it.
 */
static void list_unfinished(const char *dir)
{
	struct store_options ro = {.read_only = true};
	struct store *s = NULL;
	char **names = NULL;
	size_t n = 0, i, j, total = 0;

	if (store_open(&s, dir, &ro))
		return;
	if (store_drive_list(s, &names, &n))
		goto out;
	for (i = 0; i < n; i++) {
		struct tree_journal_entry *e = NULL;
		struct tree *t;
		size_t ne = 0;

		if (store_drive(s, names[i], &t) ||
		    tree_journal_list(t, &e, &ne))
			continue;
		for (j = 0; j < ne; j++) {
			bool clone = !strcmp(e[j].op, "clone");

			printf("%s: drive %s #%llu %s %s -> %s at %s\n",
			       clone ? "paused" : "unfinished", names[i],
			       (unsigned long long)e[j].seq, e[j].op, e[j].src,
			       e[j].dst,
			       e[j].cursor[0] ? e[j].cursor : "(start)");
			total += !clone;
		}
		tree_journal_list_free(e, ne);
	}
	printf("%zu unfinished journal record%s found; opening the store "
	       "replays %s\n",
	       total, total == 1 ? "" : "s", total == 1 ? "it" : "them");
out:
	store_drive_list_free(names, n);
	store_close(s);
}

int main(int argc, char **argv)
{
	const char *dir = getenv("PATHFS_STORE");
	const char *drive = getenv("PATHFS_DRIVE");
	bool drive_given = false;
	struct store_options opt = {0};
	char why[1024] = "";
	struct ctl_env env = {0};
	struct store *s = NULL;
	bool verbose = false;
	int i, rc, status;

	/* a store's files are its owner's only: RocksDB creates them with
	 * mode 0644 less the umask (README, Security) */
	umask(077);
	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return CTL_OK;
		}
		if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			verbose = true;
		} else if (!strcmp(a, "-b") || !strcmp(a, "--batch")) {
			char *end;
			unsigned long v = 0;

			if (i + 1 < argc) {
				errno = 0;
				v = strtoul(argv[++i], &end, 10);
				if (errno || *end || argv[i][0] == '-')
					v = 0;
			}
			if (!v || v > 1000000) {
				fprintf(stderr, "pathfsctl: -b wants a count "
						"of entries (1 to 1000000)\n");
				return CTL_USAGE;
			}
			opt.rename_batch = v;
		} else if (!strcmp(a, "-s") || !strcmp(a, "-d") ||
			   !strcmp(a, "--store") || !strcmp(a, "--drive")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "pathfsctl: %s needs a value\n",
					a);
				usage(stderr);
				return CTL_USAGE;
			}
			if (a[1] == 's' || a[2] == 's') {
				dir = argv[++i];
			} else {
				drive = argv[++i];
				drive_given = true;
			}
		} else if (!strncmp(a, "--store=", 8)) {
			dir = a + 8;
		} else if (!strncmp(a, "--drive=", 8)) {
			drive = a + 8;
			drive_given = true;
		} else if (a[1] == 's' || a[1] == 'd') { /* -sDIR, -dDRIVE */
			if (a[1] == 's') {
				dir = a + 2;
			} else {
				drive = a + 2;
				drive_given = true;
			}
		} else {
			fprintf(stderr, "pathfsctl: unknown option '%s'\n", a);
			usage(stderr);
			return CTL_USAGE;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return CTL_USAGE;
	}
	argc -= i;
	argv += i;
	if (!drive || (!*drive && !drive_given))
		drive = "main";
	if (store_drive_name_check(drive)) {
		fprintf(stderr,
			"pathfsctl: '%s': bad drive id (1 to 64 of A-Z a-z 0-9 "
			"_ . -)\n",
			drive);
		return CTL_USAGE;
	}

	env.out = stdout;
	env.err = stderr;
	env.progress = isatty(2);
	env.default_drive = drive;
	if (!verbose)
		log_set_level(LOG_WARNING);

	/* Help needs no store. */
	if (wants_help(argc, argv))
		return ctl_run(&env, argc, argv);

	if (!dir || !*dir) {
		fprintf(stderr, "pathfsctl: no store: give -s STORE or set "
				"PATHFS_STORE\n");
		return CTL_USAGE;
	}

	rc = control_call(dir, drive, argc, argv);
	if (rc >= 0)
		return rc;
	/* the socket's own mode is not what refused us when its folder
	 * does (a store is its owner's only), mounted or not */
	if (rc == -EACCES && !store_is_remote(dir) && access(dir, X_OK) < 0 &&
	    errno == EACCES) {
		fprintf(stderr,
			"pathfsctl: store %s: permission denied (a store is "
			"its owner's only: run pathfsctl as its owner or "
			"root)\n",
			dir);
		return CTL_FAILED;
	}
	if (rc == -EACCES) {
		fprintf(stderr,
			"pathfsctl: %s is mounted and its control socket "
			"refuses you: only root and the user who mounted it "
			"may run commands on it\n",
			dir);
		return CTL_FAILED;
	}
	if (rc == -EPIPE) {
		fprintf(stderr,
			"pathfsctl: the daemon serving %s closed the "
			"connection before the command ended (did it stop?); "
			"after a remount, 'pathfsctl recover' and 'fsck' tell "
			"what state the drive is in\n",
			dir);
		return CTL_FAILED;
	}
	if (rc != -ENOENT) {
		fprintf(stderr,
			"pathfsctl: cannot reach the daemon serving %s: %s\n",
			dir, strerror(-rc));
		return CTL_FAILED;
	}

	/* No daemon: open the store here. */
	if (!strcmp(argv[0], "recover"))
		list_unfinished(dir);
	opt.create = !strcmp(argv[0], "mkdrive");
	opt.why = why;
	opt.why_size = sizeof(why);
	/* On etcd a writer may hold the store on another machine: a command
	 * that only reads opens it read-only (no owner key), as -o ro does. */
	opt.read_only = store_is_remote(dir) && ctl_reads_only(argc, argv);
	/* Why the store cannot be opened is said below in one line; the
	 * store's own log lines about it are for -v. */
	if (!verbose)
		log_set_level(LOG_CRIT);
	if (!strcmp(argv[0], "recover") &&
	    has_opt(argc, argv, "--truncate-log"))
		rc = open_truncating(dir, &opt, &s);
	else
		rc = store_open(&s, dir, &opt);
	if (rc)
		rc = open_read_only(dir, rc, argc, argv, &opt, &s);
	if (!verbose)
		log_set_level(LOG_WARNING);
	if (rc == -EBADMSG && !strcmp(argv[0], "fsck"))
		return fsck_damaged(dir, argc, argv);
	if (rc)
		return open_error(dir, rc, why);
	env.store = s;
	fflush(stdout);
	status = ctl_run(&env, argc, argv);
	store_close(s);
	if (fflush(stdout) || ferror(stdout)) {
		if (status == CTL_OK)
			status = CTL_FAILED;
	}
	return status;
}
