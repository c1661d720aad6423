/*
 * crash_hook_i.h - the test-only hooks that stop a process between two
 * commits or pause a read (crash_hook.c says which environment variables
 * set them).
 *
 * Internal to store/.
 */
#ifndef PATHFS_CRASH_HOOK_I_H
#define PATHFS_CRASH_HOOK_I_H

/*
 * The batch hooks of one multi-batch operation (PATHFS_CRASH_AFTER_BATCHES,
 * and PATHFS_ENOSPC_AT_BATCH, which only journal.c's batches heed): init
 * reads the environment; call batch() right after each committed batch.
 */
struct crash_hook {
	long limit; /* -1: off */
	long done;  /* batches committed so far */
	long fail;  /* -1: off; else the batch refused with -ENOSPC, once */
};
void crash_hook_init(struct crash_hook *h);
/* NULL is fine (nothing counted). */
void crash_hook_batch(struct crash_hook *h);
/* The process-wide hook (PATHFS_CRASH_AFTER_COMMITS): tree_commit() calls
 * it right after each successful commit. */
void crash_hook_commit(void);
/* The pause of a read of one moment between the record it pins and the
 * rest (PATHFS_READ_PAUSE_MS; none when unset). */
void crash_hook_read_pause(void);

#endif
