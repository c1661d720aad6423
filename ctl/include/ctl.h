/*
 * ctl.h - pathfsctl's commands as a library.
 *
 * The same code runs in two places: in the pathfsctl process on an unmounted
 * store (it opens the store itself), and inside the daemon when the store is
 * mounted (pathfsctl forwards its arguments over the control socket, because
 * only one process may open a RocksDB store, and the daemon runs ctl_run() on
 * its own open store, sending the output back).
 */
#ifndef PATHFS_CTL_H
#define PATHFS_CTL_H

#include <stdbool.h>
#include <stdio.h>

#include "tree.h"

/* Exit statuses of pathfsctl. */
#define CTL_OK	    0
#define CTL_FAILED  1 /* something failed, or fsck found damage */
#define CTL_USAGE   2
#define CTL_PARTIAL 3 /* a budgeted operation stopped with work left */

struct ctl_env {
	struct store *store;
	FILE *out;		   /* command output */
	FILE *err;		   /* messages and progress */
	bool progress;		   /* draw a progress bar on err */
	const char *default_drive; /* -d default: "main" */
	/* Inside the daemon: the mounted drive (rmdrive refuses it), else NULL */
	const char *mounted_drive;
	/*
	 * Inside the daemon, mutating commands call these around their work on
	 * a branch of the mounted drive: begin() waits until no request is
	 * using the branch and holds new ones off it; end() tells the daemon
	 * what changed (@newpath for a move, else NULL) so it fixes its inode
	 * table and invalidates the kernel's caches, then lets requests go on.
	 * NULL outside the daemon.
	 */
	void (*begin)(void *ctx, struct tree *t, const char *path,
		      const char *newpath);
	void (*end)(void *ctx, struct tree *t, const char *path,
		    const char *newpath);
	void *ctx;
	/*
	 * Inside the daemon: writes its request statistics to @out (a table,
	 * or JSON when @json), with the store's kv counts @kv, then zeroes
	 * the request statistics if @reset (`pathfsctl stats`). NULL outside
	 * the daemon: there are none to show.
	 */
	void (*stats)(FILE *out, bool json, bool reset,
		      const struct store_kv_counts *kv);
};

/* Runs one command line (argv[0] is the command name, e.g. "du"); returns
 * the exit status. Global options (-s, -d) are parsed by the caller. */
int ctl_run(struct ctl_env *env, int argc, char **argv);

/*
 * true if the command line @argv (argv[0] the command) only reads the store:
 * drives, ls, stat, tree, du, fsck without --repair, stats, help. pathfsctl
 * opens a store on etcd read-only for these (no owner key: a writer may hold
 * it elsewhere). An unknown command is not one.
 */
bool ctl_reads_only(int argc, char **argv);

#endif
