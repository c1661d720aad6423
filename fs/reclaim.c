/*
 * reclaim.c - frees the daemon's orphans in the background, many to a commit.
 *
 * An orphan (an inode whose last name went while the kernel still knew it or
 * had it open, see inode_table.c) is due for reclaim at its last FORGET or
 * release. rm -rf makes one per file: the kernel holds a lookup on every
 * entry it unlinks, so each UNLINK leaves an orphan that the FORGET right
 * after it frees. Freed in the FORGET, that was a commit of its own per file
 * (16 us of the daemon's 56 us per file of rm -rf). Instead fs_reclaim()
 * queues the number and one thread frees the queue with tree_reclaim_many():
 * whatever came within RECLAIM_DELAY_MS of the first, or RECLAIM_BATCH
 * numbers, in one commit.
 *
 * The delay loses nothing and shows nothing: a queued orphan is an orphan in
 * the store already (its ORPHAN mark went in the batch that removed its last
 * name); the kernel holds no reference to its number any more (it forgot it
 * and closed it, and a file handle of it is ESTALE, lookup_dot); a crash
 * leaves it to the next mount, which reclaims every orphan (store_open);
 * unmount drains the queue (fs_reclaim_stop() from fs_destroy). Space: the
 * store's deletes free disk only when RocksDB compacts, so statfs shows no
 * difference.
 *
 * One writer of several (a shared mount, fs_reclaim_dead()): an orphan is
 * also freed when the writer that made it stops (killed, its machine lost
 * or cut off: its lease expired, and it is fenced). The thread looks every
 * RECLAIM_DEAD_S seconds for orphans whose mark names no writer holding the
 * store any more (tree_reclaim_dead), as the next sole writer's open would;
 * first it finishes such a writer's folder renames, whose branch locks keep
 * the other writers out of both branches until then (tree_journal_takeover).
 *
 * A shared writer's last close of a file drops its hold (HOLD#, see
 * store/hold.c) through this thread too (fs_unhold_later), off the
 * RELEASE's path: a commit of its own per file, which made `: > f` wait
 * for three commits where the sole writer waits for one. A hold dropped
 * RECLAIM_DELAY_MS late keeps the file a little longer for nobody: another
 * writer removing it meanwhile leaves an orphan marked for its holders,
 * which this drop then frees (tree_unhold); an open here in between finds
 * its hold still there (tree_hold reads, no commit) and the drop skips it.
 *
 * Limits: one thread; the queue grows while the store is slower than the
 * kernel forgets (a batch frees an orphan in a few us, the kernel sends at
 * most one FORGET per round trip of the unlink). If the queue cannot grow
 * (ENOMEM) or the thread cannot start, or after fs_reclaim_stop(), the caller
 * frees the orphan itself, at once. A failed batch is logged; its orphans
 * stay for the next mount.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs_i.h"
#include "log.h"
#include "ops_i.h"

/* ~20,000 forgets a second in rm -rf: a few hundred orphans per commit */
#define RECLAIM_DELAY_MS 20
#define RECLAIM_BATCH	 1024
/* a stopped writer's lease lasts 5 s by default (etcd ?lease-ttl=) */
#define RECLAIM_DEAD_S 5

void fs_reclaim_init(struct fs *fs)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&fs->rq_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fs->rq_cond, &ca);
	pthread_condattr_destroy(&ca);
}

void fs_reclaim_release(struct fs *fs)
{
	/* no fs_destroy (a unit test driving fs_do_*() with no mount): the
	 * thread ends here, with the store still open */
	fs_reclaim_stop(fs);
	free(fs->rq);
	fs->rq = NULL;
	fs->rq_n = fs->rq_cap = 0;
	free(fs->uq);
	fs->uq = NULL;
	fs->uq_n = fs->uq_cap = 0;
	pthread_cond_destroy(&fs->rq_cond);
	pthread_mutex_destroy(&fs->rq_lock);
}

void fs_unhold(struct fs *fs, uint64_t ino)
{
	int rc = tree_unhold(fs->tree, ino);

	if (rc)
		plog(LOG_WARNING,
		     "inode %llu: its hold stays until this writer's lease "
		     "ends: %s",
		     (unsigned long long)ino, strerror(-rc));
}

/* Drops this writer's hold of @ino unless it was opened here again since
 * its last close (fs_unhold_later). */
static void unhold_closed(struct fs *fs, uint64_t ino)
{
	pthread_mutex_t *m = open_stripe(fs, ino);

	pthread_mutex_lock(m);
	if (!itab_nopen(fs, ino))
		fs_unhold(fs, ino);
	pthread_mutex_unlock(m);
}

/* Frees @n orphans @v now. */
static void reclaim_now(struct fs *fs, const uint64_t *v, size_t n)
{
	size_t done = 0;
	int rc = tree_reclaim_many(fs->tree, v, n, &done);

	if (rc)
		plog(LOG_ERR,
		     "reclaim of %zu orphan inode%s: %s (%zu freed; the rest "
		     "at the next mount)",
		     n, n == 1 ? "" : "s", strerror(-rc), done);
}

static void deadline(struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_nsec += RECLAIM_DELAY_MS * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Logs what one of reclaim_dead()'s sweeps did: @n of @what (plural)
 * done, or its error @rc. */
static void reclaim_said(int rc, size_t n, const char *what)
{
	if (rc)
		plog(LOG_WARNING,
		     "%s of writers that stopped: %s (%zu done; tried again "
		     "in %d s)",
		     what, strerror(-rc), n, RECLAIM_DEAD_S);
	else if (n)
		plog(LOG_NOTICE, "%s of writers that stopped: %zu done", what,
		     n);
}

/* Finishes the folder renames and frees the orphans of writers that
 * stopped holding the store. */
static void reclaim_dead(struct fs *fs)
{
	size_t n = 0;
	int rc = tree_journal_takeover(fs->tree, &n);

	reclaim_said(rc, n, "folder renames");
	n = 0;
	rc = tree_reclaim_dead(fs->tree, &n);
	reclaim_said(rc, n, "orphans");
}

static void *reclaimer(void *arg)
{
	struct fs *fs = arg;
	struct timespec ts;
	uint64_t *v, *u;
	size_t n, un;

	pthread_mutex_lock(&fs->rq_lock);
	for (;;) {
		while (!fs->rq_n && !fs->uq_n && !fs->rq_stop) {
			if (!fs->rq_dead) {
				pthread_cond_wait(&fs->rq_cond, &fs->rq_lock);
				continue;
			}
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += RECLAIM_DEAD_S;
			if (pthread_cond_timedwait(&fs->rq_cond, &fs->rq_lock,
						   &ts) == ETIMEDOUT) {
				pthread_mutex_unlock(&fs->rq_lock);
				reclaim_dead(fs);
				pthread_mutex_lock(&fs->rq_lock);
			}
		}
		if (!fs->rq_n && !fs->uq_n)
			break; /* stopped with nothing left */
		/* gather what comes soon after the first into one commit */
		deadline(&ts);
		while (fs->rq_n < RECLAIM_BATCH && !fs->rq_stop &&
		       pthread_cond_timedwait(&fs->rq_cond, &fs->rq_lock,
					      &ts) != ETIMEDOUT)
			;
		v = fs->rq;
		n = fs->rq_n;
		fs->rq = NULL;
		fs->rq_n = fs->rq_cap = 0;
		u = fs->uq;
		un = fs->uq_n;
		fs->uq = NULL;
		fs->uq_n = fs->uq_cap = 0;
		pthread_mutex_unlock(&fs->rq_lock);
		for (size_t i = 0; i < un; i++)
			unhold_closed(fs, u[i]);
		free(u);
		if (n)
			reclaim_now(fs, v, n);
		free(v);
		pthread_mutex_lock(&fs->rq_lock);
	}
	pthread_mutex_unlock(&fs->rq_lock);
	return NULL;
}

/* Caller holds rq_lock. Starts the thread if not running; false if it
 * cannot. */
static bool started(struct fs *fs)
{
	if (!fs->rq_started &&
	    !pthread_create(&fs->rq_thread, NULL, reclaimer, fs))
		fs->rq_started = true;
	return fs->rq_started;
}

/* Caller holds rq_lock. Appends @ino to the queue *@q of *@n (room for
 * *@cap), starting the thread the first time. Returns false if the caller
 * must do the work itself. */
static bool enqueue(struct fs *fs, uint64_t **q, size_t *n, size_t *cap,
		    uint64_t ino)
{
	if (fs->rq_stop || !started(fs))
		return false;
	if (*n == *cap) {
		size_t more = *cap ? 2 * *cap : 256;
		uint64_t *v = realloc(*q, more * sizeof(*v));

		if (!v)
			return false;
		*q = v;
		*cap = more;
	}
	(*q)[(*n)++] = ino;
	/* wake the thread from its idle wait, or from gathering when full */
	if (fs->rq_n + fs->uq_n == 1 || *n == RECLAIM_BATCH)
		pthread_cond_signal(&fs->rq_cond);
	return true;
}

void fs_reclaim(struct fs *fs, uint64_t ino)
{
	bool queued;

	if (!ino)
		return;
	pthread_mutex_lock(&fs->rq_lock);
	queued = enqueue(fs, &fs->rq, &fs->rq_n, &fs->rq_cap, ino);
	pthread_mutex_unlock(&fs->rq_lock);
	if (!queued)
		reclaim_now(fs, &ino, 1);
}

bool fs_unhold_later(struct fs *fs, uint64_t ino)
{
	bool queued;

	pthread_mutex_lock(&fs->rq_lock);
	queued = enqueue(fs, &fs->uq, &fs->uq_n, &fs->uq_cap, ino);
	pthread_mutex_unlock(&fs->rq_lock);
	return queued;
}

void fs_reclaim_dead(struct fs *fs)
{
	pthread_mutex_lock(&fs->rq_lock);
	fs->rq_dead = true;
	if (!fs->rq_stop && !started(fs))
		plog(LOG_WARNING, "cannot start the reclaim thread: orphans of "
				  "writers that stop are freed at the next "
				  "sole writer's open");
	pthread_mutex_unlock(&fs->rq_lock);
}

void fs_reclaim_stop(struct fs *fs)
{
	bool started;

	pthread_mutex_lock(&fs->rq_lock);
	fs->rq_stop = true;
	started = fs->rq_started;
	fs->rq_started = false;
	pthread_cond_signal(&fs->rq_cond);
	pthread_mutex_unlock(&fs->rq_lock);
	/* the thread drains the queue before it ends */
	if (started)
		pthread_join(fs->rq_thread, NULL);
}
