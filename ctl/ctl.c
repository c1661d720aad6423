/*
 * ctl.c - pathfsctl's command engine: the command table, option parsing,
 * help, and ctl_run(). One file per command family beside it: drives.c,
 * list.c (ls, stat, tree), du.c, fsck.c (fsck, recover), branch.c (rm -r,
 * cp -r, mv); stats is here (the daemon's hook does the work).
 *
 * The same code runs in the pathfsctl process on an unmounted store and inside
 * the daemon (fs/control.c) on a mounted one, so it is reentrant: no getopt,
 * no globals, no exit(); everything goes to env->out / env->err.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl_i.h"

/* The daemon's per-request statistics (fs/stats.c), with the store's kv
 * counts (its engine's requests and capacity units): only a mounted store
 * has them. */
static int cmd_stats(struct ctx *x)
{
	struct store_kv_counts kv;

	if (!x->env->stats) {
		fputs("pathfsctl: stats: the store is not mounted (request "
		      "statistics live in the daemon)\n",
		      x->err);
		return CTL_FAILED;
	}
	store_kv_counts(x->env->store, &kv);
	x->env->stats(x->out, x->o.json, x->o.reset, &kv);
	return CTL_OK;
}

static int cmd_help(struct ctx *x);

static const struct cmd cmds[] = {
    {"drives", ctl_cmd_drives, O_JSON, 0, 0, "drives [--json]",
     "list the drives of the store"},
    {"mkdrive", ctl_cmd_mkdrive, O_OWNER, 1, 1,
     "mkdrive [--owner UID:GID] NAME",
     "create a drive (root folder owned by the caller or UID:GID)"},
    {"rmdrive", ctl_cmd_rmdrive, 0, 1, 1, "rmdrive NAME",
     "delete a drive and everything in it (not the mounted one)"},
    {"ls", ctl_cmd_ls, O_JSON, 0, 1, "ls [--json] [PATH]",
     "list a folder with attributes, from one children scan"},
    {"stat", ctl_cmd_stat, O_JSON, 1, 1, "stat [--json] PATH",
     "show every attribute of one node"},
    {"tree", ctl_cmd_tree, O_DEPTH, 0, 1, "tree [--depth N] [PATH]",
     "draw a branch as a tree"},
    {"du", ctl_cmd_du, O_JSON, 0, 1, "du [--json] [PATH]",
     "bytes, files, folders and symlinks of a branch, from one scan"},
    {"fsck", ctl_cmd_fsck, O_JSON | O_REPAIR | O_ALL, 0, 0,
     "fsck [--repair] [--all] [--json]",
     "check the drive's invariants; exit 1 on any finding"},
    {"recover", ctl_cmd_recover, O_TRUNC, 0, 0, "recover [--truncate-log]",
     "replay unfinished journal records (interrupted renames, moves); "
     "with --truncate-log, open a store whose write-ahead log is damaged "
     "by dropping what follows the damage"},
    {"rm", ctl_cmd_rm, O_R | O_BUDGET | O_JSON, 1, 1,
     "rm -r [--max-items N] [--resume TOKEN] [--json] PATH",
     "delete a branch, descendants first"},
    {"cp", ctl_cmd_cp, O_R | O_BUDGET | O_JSON, 2, 2,
     "cp -r [--max-items N] [--resume TOKEN] [--json] SRC [DRIVE:]DST",
     "clone a branch (new inodes, content and xattrs copied)"},
    {"mv", ctl_cmd_mv, O_BUDGET | O_JSON, 2, 2,
     "mv [--max-items N] [--resume TOKEN] [--json] SRC [DRIVE:]DST",
     "move a branch (journaled rename; across drives clone + delete)"},
    {"stats", cmd_stats, O_JSON | O_RESET, 0, 0, "stats [--json] [--reset]",
     "the daemon's request counts and latencies per FUSE opcode (mounted "
     "only)"},
    {"help", cmd_help, 0, 0, 1, "help [COMMAND]", "show help"},
};

#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

/* The commands that only read the store (fsck without --repair too). */
static const char *const readers[] = {"drives", "ls",	"stat",	 "tree",
				      "du",	"fsck", "stats", "help"};

static const struct cmd *find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < NCMDS; i++)
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
	return NULL;
}

bool ctl_reads_only(int argc, char **argv)
{
	size_t i;
	int j;

	if (argc < 1)
		return false;
	for (i = 0; i < sizeof(readers) / sizeof(readers[0]); i++) {
		if (strcmp(argv[0], readers[i]))
			continue;
		for (j = 1; j < argc && strcmp(argv[j], "--"); j++)
			if (!strncmp(argv[j], "--repair", 8))
				return false;
		return true;
	}
	return false;
}

static void cmd_usage(FILE *f, const struct cmd *c)
{
	fprintf(f, "usage: pathfsctl [-s STORE] [-d DRIVE] %s\n  %s\n",
		c->usage, c->help);
	if (c->opts & O_BUDGET)
		fputs("  --max-items N  stop after N items: prints 'resume: "
		      "TOKEN' last and exits 3\n"
		      "  --resume TOKEN continue where a budgeted run "
		      "stopped (same arguments)\n",
		      f);
	if (c->opts & O_JSON)
		fputs("  --json         machine-readable output\n", f);
	if (c->opts & O_RESET)
		fputs("  --reset        start counting again from zero\n", f);
	if (c->opts & O_TRUNC)
		fputs("  --truncate-log a store refused for a damaged "
		      "write-ahead log: keep what\n"
		      "                 precedes the damage, drop the rest "
		      "(told first, logged to\n"
		      "                 STORE/pathfs.log, the logs copied to "
		      "STORE/lost+found/)\n",
		      f);
	if (c->opts & O_REPAIR)
		fputs("  --repair       fix what can be fixed safely\n"
		      "  --all          every drive of the store\n",
		      f);
	fputs("  paths: /PATH on the -d drive, or DRIVE:/PATH\n"
	      "  exit status: 0 ok, 1 failed or fsck findings, 2 usage, 3 "
	      "work left\n",
	      f);
}

static int cmd_help(struct ctx *x)
{
	size_t i;

	if (x->o.npos) {
		const struct cmd *c = find_cmd(x->o.pos[0]);

		if (!c)
			return ctl_usage_error(x, "no command '%s'",
					       x->o.pos[0]);
		cmd_usage(x->out, c);
		return CTL_OK;
	}
	fputs("commands:\n", x->out);
	for (i = 0; i < NCMDS; i++)
		fprintf(x->out, "  %s\n      %s\n", cmds[i].usage,
			cmds[i].help);
	fputs("exit status: 0 ok, 1 failed or fsck findings, 2 usage, 3 "
	      "stopped at --max-items with work left\n",
	      x->out);
	return CTL_OK;
}

/* Parses a count; returns 0 or -EINVAL. */
static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

static int parse_opts(struct ctx *x, int argc, char **argv)
{
	struct opts *o = &x->o;
	unsigned allow = x->cmd->opts;
	bool dashdash = false;
	int i;

	memset(o, 0, sizeof(*o));
	o->depth = -1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL, *eq;
		char name[32];
		size_t nlen;

		if (dashdash || a[0] != '-' || !a[1]) {
			if (o->npos >= x->cmd->maxpos)
				return ctl_usage_error(
				    x, "'%s': too many arguments", a);
			o->pos[o->npos++] = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			dashdash = true;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			o->help = true;
			continue;
		}
		if (a[1] != '-') { /* short options: only -r (and -R) */
			const char *p;

			for (p = a + 1; *p; p++)
				if ((*p != 'r' && *p != 'R') || !(allow & O_R))
					return ctl_usage_error(
					    x, "unknown option '%s'", a);
			o->recursive = true;
			continue;
		}
		eq = strchr(a, '=');
		nlen = eq ? (size_t)(eq - a) : strlen(a);
		if (nlen >= sizeof(name))
			return ctl_usage_error(x, "unknown option '%s'", a);
		memcpy(name, a, nlen);
		name[nlen] = '\0';
		if (!strcmp(name, "--json") && (allow & O_JSON) && !eq) {
			o->json = true;
		} else if (!strcmp(name, "--repair") && (allow & O_REPAIR) &&
			   !eq) {
			o->repair = true;
		} else if (!strcmp(name, "--truncate-log") &&
			   (allow & O_TRUNC) && !eq) {
			o->truncate_log = true;
		} else if (!strcmp(name, "--reset") && (allow & O_RESET) &&
			   !eq) {
			o->reset = true;
		} else if (!strcmp(name, "--all") && (allow & O_ALL) && !eq) {
			o->all = true;
		} else if (!strcmp(name, "--recursive") && (allow & O_R) &&
			   !eq) {
			o->recursive = true;
		} else if ((!strcmp(name, "--max-items") ||
			    !strcmp(name, "--resume")) &&
			   (allow & O_BUDGET)) {
			val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
			if (!val)
				return ctl_usage_error(x, "%s needs a value",
						       name);
			if (name[2] == 'm') {
				if (parse_u64(val, &o->max_items))
					return ctl_usage_error(
					    x,
					    "--max-items '%s': not a "
					    "count",
					    val);
				/* 0 reads as "nothing" but the budget
				 * means "no limit": a computed 0 would do
				 * the whole branch */
				if (!o->max_items)
					return ctl_usage_error(
					    x,
					    "--max-items %s: give 1 or "
					    "more (without it, there is "
					    "no limit)",
					    val);
				o->have_max = true;
			} else {
				o->resume = val;
			}
		} else if (!strcmp(name, "--depth") && (allow & O_DEPTH)) {
			uint64_t d;

			val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
			if (parse_u64(val, &d) || d > 100000)
				return ctl_usage_error(
				    x, "--depth '%s': not a count", val);
			o->depth = (long)d;
		} else if (!strcmp(name, "--owner") && (allow & O_OWNER)) {
			val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
			if (!val)
				return ctl_usage_error(x, "%s needs a value",
						       name);
			o->owner = val;
		} else {
			return ctl_usage_error(x, "unknown option '%s'", a);
		}
	}
	if (!o->help && o->npos < x->cmd->minpos)
		return ctl_usage_error(x, "%smissing argument", NULL);
	return 0;
}

int ctl_run(struct ctl_env *env, int argc, char **argv)
{
	struct ctx x;
	int status;

	memset(&x, 0, sizeof(x));
	x.env = env;
	x.out = env->out;
	x.err = env->err;
	if (argc < 1 || !argv[0]) {
		fputs("pathfsctl: no command (try 'pathfsctl help')\n", x.err);
		return CTL_USAGE;
	}
	x.cmd = find_cmd(argv[0]);
	if (!x.cmd) {
		fputs("pathfsctl: unknown command '", x.err);
		ctl_put_name(x.err, argv[0]);
		fputs("' (try 'pathfsctl help')\n", x.err);
		return CTL_USAGE;
	}
	x.pathbuf[0] = malloc(TREE_PATH_MAX + 1);
	x.pathbuf[1] = malloc(TREE_PATH_MAX + 1);
	if (!x.pathbuf[0] || !x.pathbuf[1]) {
		fputs("pathfsctl: out of memory\n", x.err);
		status = CTL_FAILED;
		goto out;
	}
	status = parse_opts(&x, argc, argv);
	if (status)
		goto out;
	if (x.o.help) {
		cmd_usage(x.out, x.cmd);
		status = CTL_OK;
		goto out;
	}
	if (!env->store && x.cmd->run != cmd_help) {
		fputs("pathfsctl: no store\n", x.err);
		status = CTL_FAILED;
		goto out;
	}
	status = x.cmd->run(&x);
out:
	free(x.pathbuf[0]);
	free(x.pathbuf[1]);
	fflush(x.out);
	fflush(x.err);
	return status;
}
