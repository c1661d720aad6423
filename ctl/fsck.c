/*
 * fsck.c - the fsck and recover commands.
 *
 * fsck first reads the whole store with checksums verified (store_verify:
 * a damaged table file is a finding, in a "store" section printed only
 * when there is one), then checks each drive's invariants. A store whose
 * write-ahead log is damaged does not open at all: pathfsctl.c reports
 * that as fsck's finding, and recover --truncate-log is the repair.
 *
 * A check's passes over a drive (journal, orphans, nodes, content) are
 * each of their own moment: on a drive others write meanwhile
 * (store_others_write: read here while its writer is elsewhere, or by one
 * shared writer of several), a file made or removed between two of them
 * would read as damage. There a finding is one that each of several checks
 * found (fsck_settled): damage is found by every check, a change in flight
 * by one.
 *
 * Limits: on a mounted drive, fsck and recover hold every request of the
 * drive while they run (the daemon's begin/end hooks on "/"), but not
 * those of other writers; the store's verification holds nothing (a read
 * of one moment). An operation of another writer that stays in flight
 * through every check (a long folder rename's journal record) is a
 * finding. --repair is refused where others write (what one check found
 * may be their change in flight): it needs the store to itself. A damaged
 * table file is reported, not repaired: no repair keeps the records of its
 * damaged blocks.
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

#define FSCK_PASSES 4

/* The findings of one pass, in the order found (a strvec of copies). */
struct findings {
	char **v;
	size_t n, cap;
};

static void findings_free(struct findings *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	*a = (struct findings){0};
}

static void collect(void *arg, const char *msg)
{
	struct findings *a = arg;
	char *m = strdup(msg);

	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 16;
		a->v = realloc(a->v, a->cap * sizeof(*a->v));
	}
	if (!a->v || !m)
		abort(); /* as the store does when out of memory */
	a->v[a->n++] = m;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Keeps in *@kept those of its findings that @found has too (in @found's
 * order); returns true if @found has no others. */
static bool keep_common(struct findings *kept, const struct findings *found)
{
	struct findings both = {0};
	char **sorted = malloc((kept->n + 1) * sizeof(char *));
	bool same = true;

	if (!sorted)
		abort();
	memcpy(sorted, kept->v, kept->n * sizeof(char *));
	qsort(sorted, kept->n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < found->n; i++) {
		if (bsearch(&found->v[i], sorted, kept->n, sizeof(char *),
			    cmp_str))
			collect(&both, found->v[i]);
		else
			same = false;
	}
	free(sorted);
	findings_free(kept);
	*kept = both;
	return same;
}

/*
 * tree_fsck() of a drive others write meanwhile: a finding is one that
 * every pass found, passes running until one finds nothing or finds no
 * finding the ones before it did not (at most FSCK_PASSES). Reported
 * through @f, counted in *@found.
 */
static int fsck_settled(struct tree *t, struct fsck_ctx *f, size_t *found)
{
	struct findings kept = {0}, pass = {0};
	int rc;

	rc = tree_fsck(t, false, collect, &kept, NULL);
	for (int i = 1; !rc && kept.n && i < FSCK_PASSES; i++) {
		rc = tree_fsck(t, false, collect, &pass, NULL);
		if (!rc && keep_common(&kept, &pass))
			break;
		findings_free(&pass);
	}
	for (size_t i = 0; !rc && i < kept.n; i++)
		fsck_report(f, kept.v[i]);
	*found = rc ? 0 : kept.n;
	findings_free(&kept);
	findings_free(&pass);
	return rc;
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
	if (!x->o.repair && store_others_write(x->env->store))
		rc2 = fsck_settled(t, &f, &drive_findings);
	else
		rc2 =
		    tree_fsck(t, x->o.repair, fsck_report, &f, &drive_findings);
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

	/* a repair acts on what its passes found: others' changes made
	 * between two passes would read as damage (a file's record with no
	 * name yet) and be "repaired" away */
	if (x->o.repair && store_others_write(x->env->store)) {
		fprintf(x->err,
			"pathfsctl: fsck --repair needs the store to itself, "
			"and this daemon is one writer of several (-o "
			"shared): unmount them all, then run it again (it "
			"opens the store alone); fsck without --repair "
			"reports what a repair would do\n");
		return CTL_FAILED;
	}
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
