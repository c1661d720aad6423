/*
 * fsck.c - the fsck and recover commands.
 *
 * fsck first reads the whole store with checksums verified (store_verify:
 * a damaged table file is a finding, in a "store" section printed only
 * when there is one), then checks each drive's invariants. A store whose
 * write-ahead log is damaged does not open at all: pathfsctl.c reports
 * that as fsck's finding, and recover --truncate-log is the repair.
 *
 * Limits: on a mounted drive, fsck and recover hold every request of the
 * drive while they run (the daemon's begin/end hooks on "/"); the store's
 * verification holds nothing (a read of one moment). A damaged table file
 * is reported, not repaired: no repair keeps the records of its damaged
 * blocks.
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

struct fsck_ctx {
	struct ctx *x;
	bool first;
};

static void fsck_report(void *arg, const char *msg)
{
	struct fsck_ctx *f = arg;
	struct ctx *x = f->x;

	if (x->o.json) {
		fputs(f->first ? "" : ", ", x->out);
		ctl_put_json(x->out, msg);
	} else {
		/* the store escaped the bytes of names in it (tree_escape) */
		fprintf(x->out, "  %s\n", msg);
	}
	f->first = false;
}

static int fsck_one(struct ctx *x, struct tree *t, bool first_drive,
		    size_t *total)
{
	struct fsck_ctx f = {x, true};
	size_t findings = 0, drive_findings = 0;
	int rc = 0, rc2;

	if (x->o.json) {
		fprintf(x->out, "%s{\"drive\": ", first_drive ? "" : ",\n ");
		ctl_put_json(x->out, tree_drive_name(t));
		fputs(", \"findings\": [", x->out);
	} else {
		fprintf(x->out, "drive %s:\n", tree_drive_name(t));
	}
	/* the store's own files, once: with the first drive's findings */
	if (first_drive)
		rc = store_check_private(x->env->store, x->o.repair,
					 fsck_report, &f, &findings);
	/* A live drive must hold still while it is checked. */
	ctl_hold(x, t, "/", NULL);
	rc2 = tree_fsck(t, x->o.repair, fsck_report, &f, &drive_findings);
	ctl_release(x, t, "/", NULL);
	findings += drive_findings;
	if (!rc)
		rc = rc2;
	*total += findings;
	if (x->o.json)
		fprintf(x->out, "], \"count\": %zu, \"error\": %s}", findings,
			rc ? "true" : "false");
	else
		fprintf(x->out, "%zu finding%s%s\n", findings,
			findings == 1 ? "" : "s",
			findings && x->o.repair ? " (repaired what was safe)"
						: "");
	if (rc)
		ctl_fail(x, tree_drive_name(t), rc);
	return rc;
}

/* The store-wide check (store_verify): its section, if it finds anything. */
static int fsck_store(struct ctx *x, size_t *total)
{
	struct fsck_ctx f = {x, true};
	const char *dir = store_dir(x->env->store);
	char *lines = NULL;
	size_t len = 0, found = 0;
	FILE *mem = open_memstream(&lines, &len);
	int rc;

	if (!mem)
		return -ENOMEM;
	f.x = &(struct ctx){.out = mem, .o = x->o};
	rc = store_verify(x->env->store, fsck_report, &f, &found);
	fclose(mem);
	if (found) {
		if (x->o.json) {
			fputs("{\"store\": ", x->out);
			ctl_put_json(x->out, dir);
			fprintf(x->out,
				", \"findings\": [%s], \"count\": %zu, "
				"\"error\": false}",
				lines, found);
		} else {
			fprintf(x->out, "store %s:\n%s", dir, lines);
			if (x->o.repair)
				fputs("  not repaired: no repair keeps the "
				      "records of a damaged table block; "
				      "copy out what still reads, or "
				      "restore from a backup\n",
				      x->out);
			fprintf(x->out, "%zu finding%s\n", found,
				found == 1 ? "" : "s");
		}
	}
	free(lines);
	*total += found;
	return rc;
}

int ctl_cmd_fsck(struct ctx *x)
{
	char **names = NULL;
	size_t n = 0, i, total = 0;
	struct tree *t;
	int rc = 0, status = 0;

	if (x->o.all) {
		rc = store_drive_list(x->env->store, &names, &n);
		if (rc) {
			ctl_fail(x, store_dir(x->env->store), rc);
			return CTL_FAILED;
		}
	}
	if (x->o.json)
		fputc('[', x->out);
	rc = fsck_store(x, &total);
	if (rc) {
		ctl_fail(x, store_dir(x->env->store), rc);
		status = CTL_FAILED;
	}
	if (x->o.json && total)
		fputs(",\n ", x->out);
	if (!x->o.all) {
		status = ctl_open_drive(
		    x, x->env->default_drive ? x->env->default_drive : "main",
		    &t);
		if (!status && fsck_one(x, t, true, &total))
			status = CTL_FAILED;
	}
	for (i = 0; i < n; i++) {
		rc = store_drive(x->env->store, names[i], &t);
		if (rc) {
			ctl_fail(x, names[i], rc);
			status = CTL_FAILED;
			continue;
		}
		if (fsck_one(x, t, i == 0, &total))
			status = CTL_FAILED;
	}
	if (x->o.json)
		fputs("]\n", x->out);
	store_drive_list_free(names, n);
	if (status)
		return status;
	return total ? CTL_FAILED : CTL_OK;
}

static void print_journal(struct ctx *x, const char *what,
			  const struct tree_journal_entry *e)
{
	/* paths come escaped (tree_journal_list) */
	fprintf(x->out, "%s: #%" PRIu64 " %s %s -> %s at %s\n", what, e->seq,
		e->op, e->src, e->dst, e->cursor[0] ? e->cursor : "(start)");
}

/*
 * Replays the drive's unfinished renames. A clone record (a cp -r or
 * cross-drive mv stopped at its budget or by a crash) is not replayed: it
 * waits for its resume token, and is reported as such.
 */
int ctl_cmd_recover(struct ctx *x)
{
	struct tree_journal_entry *e = NULL, *after = NULL;
	size_t n = 0, m = 0, i, replayed = 0, left = 0, waiting = 0;
	struct tree *t;
	int rc, status;

	/* a daemon opened the store, so its logs were intact: pathfsctl does
	 * the repair of an unmounted store before it runs the command */
	if (x->o.truncate_log && x->env->mounted_drive)
		fputs("the store's write-ahead logs were intact when it was "
		      "mounted: nothing to drop\n",
		      x->out);
	status = ctl_open_drive(
	    x, x->env->default_drive ? x->env->default_drive : "main", &t);
	if (status)
		return status;
	/* In the daemon a listed rename is one in flight: holding the whole
	 * drive waits for it to end. */
	ctl_hold(x, t, "/", NULL);
	rc = tree_journal_list(t, &e, &n);
	if (rc)
		goto out;
	for (i = 0; i < n; i++)
		if (strcmp(e[i].op, "clone"))
			print_journal(x, "unfinished", &e[i]);
	rc = tree_journal_replay(t, &replayed);
	if (rc)
		goto out;
	rc = tree_journal_list(t, &after, &m);
	if (rc)
		goto out;
	for (i = 0; i < m; i++) {
		if (!strcmp(after[i].op, "clone")) {
			print_journal(x, "waiting for its resume token",
				      &after[i]);
			waiting++;
		} else {
			print_journal(x, "left", &after[i]);
			left++;
		}
	}
out:
	ctl_release(x, t, "/", NULL);
	tree_journal_list_free(e, n);
	tree_journal_list_free(after, m);
	if (rc) {
		ctl_fail(x, tree_drive_name(t), rc);
		return CTL_FAILED;
	}
	fprintf(x->out,
		"drive %s: %zu journal record%s replayed now, %zu left, %zu "
		"stopped clone%s waiting\n",
		tree_drive_name(t), replayed, replayed == 1 ? "" : "s", left,
		waiting, waiting == 1 ? "" : "s");
	return left ? CTL_FAILED : CTL_OK;
}
