/*
 * branch.c - rm -r, cp -r and mv: the store's budgeted branch operations
 * under the user's --max-items and --resume, with a summary.
 *
 * Resume tokens are the store's own (store/token.c: base64url, MAC'd with a
 * secret of the drive and bound to the operation, drives and paths), printed
 * and taken as they are. One the store refuses is exit 2, nothing changed.
 *
 * Limits:
 *  - a progress bar (stderr a terminal) runs a branch operation in slices of
 *    PROGRESS_SLICE items through its own resume tokens, after one extra
 *    subtree scan to learn the total; an rm -r without a budget that the
 *    store does in one batch is not sliced (the bar shows its end only);
 *  - inside the daemon rm -r passes TREE_KEEP_ORPHAN: removed files that
 *    are open become orphans (the store asks the daemon through the open
 *    check fs/main.c registers, see tree_set_open_check()), freed at their
 *    last close; the others are freed at once.
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

struct branch_op {
	const char *op; /* "rm", "cp", "mv" */
	struct tree *t, *dt;
	const char *src, *dst;
	unsigned flags;
};

static int branch_call(struct branch_op *b, uint64_t max, const char *resume,
		       struct tree_op_result *r)
{
	if (!strcmp(b->op, "rm"))
		return tree_rm_r(b->t, b->src, max, resume, b->flags, r);
	if (!strcmp(b->op, "cp"))
		return tree_cp_r(b->t, b->src, b->dt, b->dst, max, resume, r);
	return tree_mv(b->t, b->src, b->dt, b->dst, max, resume, r);
}

/* Counts @path and its descendants (for the progress bar's total). */
static uint64_t branch_count(struct tree *t, const char *path)
{
	struct tree_scan *sc;
	struct tree_attr a;
	const char *p;
	uint64_t n = 1;

	if (tree_lookup(t, path, &a) || !S_ISDIR(a.mode))
		return 1;
	if (tree_scan_open(&sc, t, path))
		return 1;
	while (tree_scan_next(sc, &p, &a) == 1)
		n++;
	tree_scan_free(sc);
	return n;
}

/* Collects the failures of @r into @acc (taking them over). */
static void take_failures(struct tree_op_result *acc, struct tree_op_result *r)
{
	char **f;
	size_t i;

	acc->processed += r->processed;
	acc->skipped += r->skipped;
	acc->failed += r->failed;
	if (!r->nfailures)
		return;
	f = realloc(acc->failures,
		    (acc->nfailures + r->nfailures) * sizeof(char *));
	if (!f)
		return; /* counted, not listed */
	acc->failures = f;
	for (i = 0; i < r->nfailures; i++) {
		acc->failures[acc->nfailures++] = r->failures[i];
		r->failures[i] = NULL;
	}
}

/*
 * Runs @b under the user's budget and token, in slices when a progress bar is
 * drawn; prints the summary. Returns the exit status.
 */
static int run_branch(struct ctx *x, struct branch_op *b, const char *label)
{
	struct tree_op_result acc, r;
	struct progress pg;
	char *resume = NULL, *tok;
	uint64_t budget = x->o.have_max ? x->o.max_items : 0;
	int64_t t0 = ctl_now_ns();
	uint64_t total;
	bool sliced;
	int rc = 0, status;
	size_t i;

	memset(&acc, 0, sizeof(acc));
	if (x->o.resume) {
		resume = strdup(x->o.resume);
		if (!resume) {
			ctl_fail(x, "resume token", -ENOMEM);
			return CTL_FAILED;
		}
	}
	/* A move inside one drive is one journaled rename: nothing to slice. */
	sliced = x->env->progress && !(!strcmp(b->op, "mv") && b->t == b->dt);
	total =
	    sliced ? branch_count(b->t, b->src) * (!strcmp(b->op, "mv") ? 2 : 1)
		   : 0;
	/* Nor is an rm -r the store does in one batch (total counts the
	 * folder itself): slices would walk. */
	if (sliced && !strcmp(b->op, "rm") && !budget &&
	    total - 1 <= tree_rm_batch_max())
		sliced = false;
	ctl_progress_init(&pg, x, label, total);
	for (;;) {
		uint64_t max = budget, moved,
			 done = acc.processed + acc.skipped + acc.failed;

		if (sliced) {
			if (budget && done >= budget)
				break;
			max = PROGRESS_SLICE;
			if (budget && budget - done < max)
				max = budget - done;
		}
		memset(&r, 0, sizeof(r));
		rc = branch_call(b, max, resume, &r);
		moved = r.processed + r.skipped + r.failed;
		take_failures(&acc, &r);
		if (rc) {
			tree_op_result_release(&r);
			break;
		}
		free(resume);
		resume = r.token; /* NULL when finished */
		r.token = NULL;
		tree_op_result_release(&r);
		ctl_progress_draw(&pg, acc.processed + acc.skipped + acc.failed,
				  false);
		/* A slice that did nothing would do nothing again: hand the
		 * token to the user rather than spin. */
		if (!sliced || !resume || !moved)
			break;
	}
	ctl_progress_end(&pg);

	if (rc) {
		const char *why = b->src;

		if (rc == -EINVAL && x->o.resume)
			fprintf(x->err,
				"pathfsctl: %s: the store refused the resume "
				"token (truncated, altered, stale, or for "
				"another operation, paths or drive); nothing "
				"changed\n",
				x->cmd->name);
		else if (rc == -EEXIST && b->dst)
			ctl_fail(x, b->dst, rc);
		else if (rc == -EINVAL && b->dst)
			fprintf(x->err,
				"pathfsctl: %s: cannot put %s inside itself "
				"(or the token is stale)\n",
				x->cmd->name, b->src);
		else
			ctl_fail(x, why, rc);
	}
	tok = resume; /* the store's token, MAC'd and bound to the op */
	resume = NULL;

	if (x->o.json) {
		fprintf(x->out,
			"{\"op\": \"%s\", \"processed\": %" PRIu64
			", \"skipped\": %" PRIu64 ", \"failed\": %" PRIu64
			", \"failures\": [",
			b->op, acc.processed, acc.skipped, acc.failed);
		for (i = 0; i < acc.nfailures; i++) {
			fputs(i ? ", " : "", x->out);
			ctl_put_json(x->out, acc.failures[i]);
		}
		fprintf(x->out, "], \"error\": ");
		if (rc)
			ctl_put_json(x->out, strerror(-rc));
		else
			fputs("null", x->out);
		fprintf(x->out,
			", \"done\": %s, \"seconds\": %.3f, \"resume\": ",
			!rc && !tok ? "true" : "false",
			(double)(ctl_now_ns() - t0) / 1e9);
		ctl_put_json(x->out, tok);
		fputs("}\n", x->out);
	} else {
		fprintf(x->out, "processed: %" PRIu64 "\n", acc.processed);
		fprintf(x->out, "skipped: %" PRIu64 "\n", acc.skipped);
		fprintf(x->out, "failed: %" PRIu64 "\n", acc.failed);
		for (i = 0; i < acc.nfailures; i++) {
			fputs("  ", x->out);
			ctl_put_name(x->out, acc.failures[i]);
			fputc('\n', x->out);
		}
		if (tok)
			fprintf(x->out, "resume: %s\n", tok);
	}
	if (rc == -EINVAL && x->o.resume)
		status = CTL_USAGE;
	else if (rc || acc.failed)
		status = CTL_FAILED;
	else if (tok)
		status = CTL_PARTIAL;
	else
		status = CTL_OK;
	free(tok);
	free(resume);
	tree_op_result_release(&acc);
	return status;
}

static int need_r(struct ctx *x)
{
	if (!x->o.recursive)
		return ctl_usage_error(x, "%swhole branches only: give -r",
				       NULL);
	return 0;
}

int ctl_cmd_rm(struct ctx *x)
{
	char *path = x->pathbuf[0];
	struct branch_op b = {"rm", NULL, NULL, path, NULL, 0};
	int status;

	status = need_r(x);
	if (!status)
		status = ctl_resolve(x, x->o.pos[0], &b.t, path);
	if (status)
		return status;
	if (!strcmp(path, "/"))
		return ctl_usage_error(
		    x, "%srefusing to remove '/' (use rmdrive)", NULL);
	/* Inside the daemon a deleted file may still be open: keep it as an
	 * orphan; the daemon frees it at its last close. */
	if (ctl_mounted(x, b.t))
		b.flags = TREE_KEEP_ORPHAN;
	ctl_hold(x, b.t, path, NULL);
	status = run_branch(x, &b, "rm -r");
	ctl_release(x, b.t, path, NULL);
	return status;
}

static int cmd_cp_mv(struct ctx *x, const char *op)
{
	char *src = x->pathbuf[0], *dst = x->pathbuf[1];
	struct branch_op b = {op, NULL, NULL, src, dst, 0};
	int status;

	if (!strcmp(op, "cp")) {
		status = need_r(x);
		if (status)
			return status;
	}
	status = ctl_resolve(x, x->o.pos[0], &b.t, src);
	if (!status)
		status = ctl_resolve(x, x->o.pos[1], &b.dt, dst);
	if (status)
		return status;
	if (!strcmp(src, "/") || !strcmp(dst, "/"))
		return ctl_usage_error(x,
				       "%s'/' cannot be copied or moved, nor "
				       "replaced",
				       NULL);
	if (b.t == b.dt && tree_path_is_within(dst, src))
		return ctl_usage_error(x, "%scannot put a branch inside itself",
				       NULL);
	/*
	 * The daemon runs one command's hooks at a time, so hold one branch:
	 * a clone changes only its destination; a move inside the drive is a
	 * rename of src to dst; across drives only one side can be mounted.
	 */
	if (!strcmp(op, "mv") && b.t == b.dt) {
		ctl_hold(x, b.t, src, dst);
		status = run_branch(x, &b, "mv");
		ctl_release(x, b.t, src, dst);
	} else if (!strcmp(op, "mv") && ctl_mounted(x, b.t)) {
		ctl_hold(x, b.t, src, NULL);
		status = run_branch(x, &b, "mv");
		ctl_release(x, b.t, src, NULL);
	} else {
		ctl_hold(x, b.dt, dst, NULL);
		status = run_branch(x, &b, !strcmp(op, "cp") ? "cp -r" : "mv");
		ctl_release(x, b.dt, dst, NULL);
	}
	return status;
}

int ctl_cmd_cp(struct ctx *x)
{
	return cmd_cp_mv(x, "cp");
}

int ctl_cmd_mv(struct ctx *x)
{
	return cmd_cp_mv(x, "mv");
}
