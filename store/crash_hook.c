/*
 * crash_hook.c - test-only hooks that kill the process between two commits,
 * so that the tests can check what a crash there leaves and what the next
 * open makes of it, and one that pauses a read of one moment so that a
 * test makes another process's commit land inside it.
 *
 * With PATHFS_CRASH_AFTER_BATCHES=N in the environment, the process kills
 * itself with SIGKILL (no cleanup, like kill -9) right after committing
 * batch number N of a multi-batch operation started in this process: for a
 * subtree rewrite (journal.c) batch 0 is the journal-record batch, 1..k the
 * copy batches (for an exchange also the two phase-change batches, in
 * order), k+1 the final batch. N past the end means no crash. The budgeted
 * branch operations (rm.c, rm_batch.c, clone.c, move.c) and the store's own
 * multi-batch work (upgrades, drive deletion, orphan reclaim) count their
 * batches the same way. Replay never crashes, so a store always opens.
 *
 * PATHFS_CRASH_AFTER_COMMITS=N is the same for every commit of the process
 * (tree_commit(): creates, writes, unlinks, renames, reclaims, every batch
 * of every operation; store_open()'s recovery counts too): the process
 * dies right after its Nth commit, so a test that picks N at random under
 * load stops the daemon between any two commits of any operation.
 *
 * PATHFS_ENOSPC_AT_BATCH=N refuses batch number N of a rename with -ENOSPC,
 * once, without sending it (journal.c's commit()): the undo that follows is
 * counted from N on, so both hooks together stop an undo between slices.
 *
 * PATHFS_READ_PAUSE_MS=N makes every read of one moment sleep N ms between
 * the record it pins and the rest (tree_read(): a file's record and its
 * blocks; tree_dir_open_checked(): a folder's record and its children).
 *
 * Limits: read once per operation (the commit hook once per process); a
 * malformed or negative number turns a hook off.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "crash_hook_i.h"
#include "log.h"

void crash_hook_init(struct crash_hook *h)
{
	const char *e = getenv("PATHFS_CRASH_AFTER_BATCHES");
	char *end;
	long v;

	h->limit = h->fail = -1;
	h->done = 0;
	if (e && *e) {
		v = strtol(e, &end, 10);
		if (*end == '\0' && v >= 0)
			h->limit = v;
	}
	e = getenv("PATHFS_ENOSPC_AT_BATCH");
	if (e && *e) {
		v = strtol(e, &end, 10);
		if (*end == '\0' && v >= 0)
			h->fail = v;
	}
}

void crash_hook_batch(struct crash_hook *h)
{
	if (!h)
		return;
	if (h->limit >= 0 && h->done == h->limit) {
		plog(LOG_WARNING, "PATHFS_CRASH_AFTER_BATCHES=%ld: crashing",
		     h->limit);
		kill(getpid(), SIGKILL);
	}
	h->done++;
}

static long commit_limit = -2; /* -2: not read yet; -1: off */
static long commits_done;      /* atomic */
static pthread_once_t commit_once = PTHREAD_ONCE_INIT;

static void commit_hook_read(void)
{
	const char *e = getenv("PATHFS_CRASH_AFTER_COMMITS");
	char *end;
	long v;

	commit_limit = -1;
	if (!e || !*e)
		return;
	v = strtol(e, &end, 10);
	if (*end == '\0' && v > 0)
		commit_limit = v;
}

void crash_hook_commit(void)
{
	pthread_once(&commit_once, commit_hook_read);
	if (commit_limit < 0)
		return;
	if (__atomic_add_fetch(&commits_done, 1, __ATOMIC_SEQ_CST) ==
	    commit_limit) {
		plog(LOG_WARNING, "PATHFS_CRASH_AFTER_COMMITS=%ld: crashing",
		     commit_limit);
		kill(getpid(), SIGKILL);
	}
}

static long read_pause_ms = -1; /* -1: not read yet */
static pthread_once_t read_pause_once = PTHREAD_ONCE_INIT;

static void read_pause_init(void)
{
	const char *e = getenv("PATHFS_READ_PAUSE_MS");
	char *end;
	long v;

	read_pause_ms = 0;
	if (!e || !*e)
		return;
	v = strtol(e, &end, 10);
	if (*end == '\0' && v > 0 && v <= 60000)
		read_pause_ms = v;
}

void crash_hook_read_pause(void)
{
	pthread_once(&read_pause_once, read_pause_init);
	if (read_pause_ms > 0)
		usleep((useconds_t)read_pause_ms * 1000);
}
