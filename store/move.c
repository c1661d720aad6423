/*
 * move.c - mv of a branch: tree_mv().
 *
 * Within a drive it is tree_rename() (the journaled rewrite of journal.c; no
 * budget, no token). Across drives it is a clone (clone.c), then an rm -r of
 * the source (rm.c), under one token: phase 1 clones, phase 2 deletes. Open
 * files of a mounted source (a drive with an open check) stay readable as
 * orphans.
 */
#include <errno.h>
#include <string.h>

#include "branch_i.h"
#include "crash_hook_i.h"
#include "drive_i.h"

int tree_mv(struct tree *t, const char *src, struct tree *dt, const char *dst,
	    uint64_t max_items, const char *resume, struct tree_op_result *r)
{
	struct token k = {0};
	struct crash_hook h;
	struct sbuf cur = {0};
	struct node nd = {0};
	uint64_t used = 0, seq;
	uint32_t phase;
	bool done = false, rm_started = false;
	int rc;

	memset(r, 0, sizeof(*r));
	crash_hook_init(&h);
	if (t == dt) {
		if (resume) {
			rc = -EINVAL; /* a rename never stops early */
			goto out;
		}
		rc = tree_rename(t, src, dst, 0, NULL);
		if (rc == 0)
			r->processed = 1;
		goto out;
	}
	rc = branch_args(t, src, dt, dst);
	if (rc)
		goto out;
	if (strcmp(src, "/") == 0) {
		rc = -EINVAL; /* the root cannot be deleted afterwards */
		goto out;
	}
	if (resume) {
		rc = token_check(t, resume, OP_MV, src, dt->name, dst, &k);
		if (rc)
			goto out;
	}
	phase = resume ? k.phase : 1;
	seq = k.seq;
	sbuf_adds(&cur, k.cursor.buf ? k.cursor.buf : "");
	token_fill(&k, OP_MV, t, src, dt, dst);
	k.seq = seq;
	k.phase = phase;
	if (phase == 1) {
		rc = clone_op(t, src, dt, dst, max_items, &used, &k,
			      resume != NULL, &h, r, &done);
		if (rc || !done)
			goto stop;
		/* the clone is complete: now delete the source */
		k.phase = 2;
		done = false;
	} else {
		sbuf_adds(&k.cursor, cur.buf);
		rm_started = k.flags & TOKEN_RM_STARTED;
	}
	rc = tree_get_node(t, src, &nd, false);
	if (rc == -ENOENT && (resume || r->processed)) {
		rc = 0; /* deleted by an earlier call */
		done = true;
		goto stop;
	}
	if (rc)
		goto stop;
	/* open files of a mounted source stay readable (orphans) */
	rc = rm_branch(t, src, &nd, &k.cursor, &rm_started, max_items, &used,
		       open_check_of(t).is_open ? TREE_KEEP_ORPHAN : 0, r, &h,
		       &done);
stop:
	k.flags = rm_started ? TOKEN_RM_STARTED : 0;
	if (rc == 0 && !done)
		rc = token_issue(t, &k, r);
out:
	node_release(&nd);
	sbuf_release(&cur);
	token_release(&k);
	return rc;
}
