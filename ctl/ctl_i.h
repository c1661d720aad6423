/*
 * ctl_i.h - what the files of the ctl library (ctl/) share: a command's
 * context, the command table's entry, the output, argument and progress
 * helpers, and each command's entry point (ctl_cmd_<name>, run by ctl_run()
 * with its options parsed).
 *
 * Internal to ctl/ (the build shows it to no one else). The daemon and
 * pathfsctl use include/ctl.h (the engine) and include/proto.h (the control
 * socket).
 */
#ifndef PATHFS_CTL_I_H
#define PATHFS_CTL_I_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctl.h"

#define PROGRESS_SLICE	   2000
#define CTL_STR_(v)	   #v
#define CTL_STR(v)	   CTL_STR_(v)
#define PROGRESS_REDRAW_NS 100000000LL /* 0.1 s */

struct opts {
	bool help, json, recursive, repair, all, reset, truncate_log;
	bool have_max;
	uint64_t max_items;
	const char *resume;
	long depth; /* -1: no limit */
	const char *owner;
	int npos;
	const char *pos[4];
};

/* Options a command accepts. */
#define O_JSON	 0x01
#define O_R	 0x02
#define O_BUDGET 0x04 /* --max-items, --resume */
#define O_REPAIR 0x08
#define O_ALL	 0x10
#define O_DEPTH	 0x20
#define O_OWNER	 0x40
#define O_RESET	 0x80
#define O_TRUNC	 0x100 /* --truncate-log */

struct ctx {
	struct ctl_env *env;
	FILE *out, *err;
	const struct cmd *cmd;
	struct opts o;
	/* two path buffers of TREE_PATH_MAX + 1 bytes for the command, on the
	 * heap (the daemon runs commands on its threads' stacks) */
	char *pathbuf[2];
};

struct cmd {
	const char *name;
	int (*run)(struct ctx *x);
	unsigned opts;
	int minpos, maxpos;
	const char *usage;
	const char *help;
};

/* A progress bar (progress.c); off unless env->progress. */
struct progress {
	FILE *f; /* NULL: off */
	const char *label;
	uint64_t total;
	int64_t start, last;
	bool drawn;
};

/* ---- output helpers (out.c) ---------------------------------------------- */

int64_t ctl_now_ns(void); /* CLOCK_MONOTONIC */
/* @s for a human: control bytes and backslash escaped. */
void ctl_put_name(FILE *f, const char *s);
/* @s as a JSON string (quotes included; NULL: null). */
void ctl_put_json(FILE *f, const char *s);
const char *ctl_type_name(mode_t m);	    /* "dir", "file", ... */
void ctl_mode_string(mode_t m, char s[11]); /* "drwxr-xr-x" */
void ctl_time_string(int64_t ns, char *buf, size_t len);
/* Prints "pathfsctl: CMD: what: strerror" on err. */
void ctl_fail(struct ctx *x, const char *what, int rc);
/* Prints "pathfsctl: CMD: " @fmt (with @arg) and the usage; CTL_USAGE. */
int ctl_usage_error(struct ctx *x, const char *fmt, const char *arg);

/* ---- paths, drives and the daemon's hooks (args.c) ----------------------- */

/* Checks and normalises @in into @buf (TREE_PATH_MAX + 1 bytes).
 * Returns 0 or CTL_USAGE (message printed). */
int ctl_check_path(struct ctx *x, const char *in, char *buf);
/* Checks drive id @name by the store's rule (store_drive_name_check()).
 * Returns 0 or CTL_USAGE (message printed). */
int ctl_check_drive(struct ctx *x, const char *name);
/* Opens drive @name. Returns 0, CTL_USAGE or CTL_FAILED (message printed). */
int ctl_open_drive(struct ctx *x, const char *name, struct tree **t);
/* "/path" on the default drive or "DRIVE:/path" to a drive and a
 * normalised @path. Returns 0, CTL_USAGE or CTL_FAILED (message printed). */
int ctl_resolve(struct ctx *x, const char *arg, struct tree **t, char *path);
/* Whether @t is the drive the daemon serves (its hooks apply). */
bool ctl_mounted(struct ctx *x, struct tree *t);
/* The daemon's begin/end hooks around work on a branch of the mounted
 * drive (nothing elsewhere). */
void ctl_hold(struct ctx *x, struct tree *t, const char *path,
	      const char *newpath);
void ctl_release(struct ctx *x, struct tree *t, const char *path,
		 const char *newpath);

/* ---- progress bar (progress.c) ------------------------------------------- */

void ctl_progress_init(struct progress *p, struct ctx *x, const char *label,
		       uint64_t total);
void ctl_progress_draw(struct progress *p, uint64_t done, bool force);
void ctl_progress_end(struct progress *p);

/* ---- commands (one file per family) -------------------------------------- */

/* drives.c */
int ctl_cmd_drives(struct ctx *x);
int ctl_cmd_mkdrive(struct ctx *x);
int ctl_cmd_rmdrive(struct ctx *x);
/* list.c */
int ctl_cmd_ls(struct ctx *x);
int ctl_cmd_stat(struct ctx *x);
int ctl_cmd_tree(struct ctx *x);
/* du.c */
int ctl_cmd_du(struct ctx *x);
/* fsck.c */
int ctl_cmd_fsck(struct ctx *x);
int ctl_cmd_recover(struct ctx *x);
/* branch.c */
int ctl_cmd_rm(struct ctx *x);
int ctl_cmd_cp(struct ctx *x);
int ctl_cmd_mv(struct ctx *x);

#endif
