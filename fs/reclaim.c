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
 * At its start and at each of those sweeps it also checks whether this
 * writer is the only one (tree_lone_try): then it takes no holds (below)
 * until another joins, when it publishes them first thing
 * (fs_reclaim_share, tree_share: the joiner waits for that).
 *
 * A shared writer's last close of a file drops its hold (HOLD#, see
 * store/hold.c) through this thread too (fs_unhold_later), off the
 * RELEASE's path (in it, `: > f` waited for three commits where the sole
 * writer waits for one), and HOLD_LINGER_MS after it, with every other
 * drop due by then, in one commit (tree_unhold_many): a file written and
 * closed costs the commits the sole writer's does, and a few more for a
 * whole folder of them. An open here in between keeps the hold
 * (fs_unhold_cancel: no read, no commit); an unlink here frees the file
 * and its hold in one commit (store/tree.c), and so does the reclaim of an
 * orphan this writer made (tree_reclaim_many; its queued drop, after it,
 * then finds nothing to drop). A hold kept late keeps the file a
 * little longer for nobody: another writer removing it meanwhile leaves an
 * orphan marked for its holders, which the drop then frees.
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
/* a hold outlives its last close by this long, and goes with the others
 * due within half of it */
#define HOLD_LINGER_MS 1000
/* a stopped writer's lease lasts 5 s by default (etcd ?lease-ttl=; 10 s
 * on DynamoDB) */
#define RECLAIM_DEAD_S 5
/* how soon it asks again whether this writer is alone, while its watch
 * does not stand yet (tree_lone_try) */
#define LONE_RETRY_MS 100

void fs_reclaim_init(struct fs *fs)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&fs->rq_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&fs->rq_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&fs->uq_cond, NULL);
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
	pthread_cond_destroy(&fs->uq_cond);
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

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Caller holds rq_lock. Waits on rq_cond until @ms (CLOCK_MONOTONIC), or
 * a signal; @ms < 0: no deadline. */
static void wait_until(struct fs *fs, int64_t ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	if (ms < 0)
		pthread_cond_wait(&fs->rq_cond, &fs->rq_lock);
	else
		pthread_cond_timedwait(&fs->rq_cond, &fs->rq_lock, &ts);
}

/* Whether @ino is one of the @n @v. */
static bool among(const uint64_t *v, size_t n, uint64_t ino)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == ino)
			return true;
	return false;
}

/* Caller holds rq_lock. Moves to the flight the queued holds due by @by,
 * and those of the @n orphans @v about to be freed (the batch that frees
 * one drops this writer's hold of it, tree_reclaim_many: the flight, after
 * it, then finds none). Leaves them queued if it cannot. */
static void take_unholds(struct fs *fs, int64_t by, const uint64_t *v, size_t n)
{
	uint64_t *f = fs->uq_n ? malloc(fs->uq_n * sizeof(*f)) : NULL;
	size_t nf = 0, kept = 0;

	if (!f)
		return;
	for (size_t i = 0; i < fs->uq_n; i++) {
		if (fs->uq[i].due_ms <= by || among(v, n, fs->uq[i].ino))
			f[nf++] = fs->uq[i].ino;
		else
			fs->uq[kept++] = fs->uq[i];
	}
	fs->uq_n = kept;
	fs->uq_flight = f;
	fs->uq_flight_n = nf;
}

/* Caller holds rq_lock. Drops the holds in flight (rq_lock released
 * meanwhile): the opens waiting for them go on once they are gone. */
static void drop_unholds(struct fs *fs)
{
	size_t n = fs->uq_flight_n;

	if (n) {
		int rc;

		pthread_mutex_unlock(&fs->rq_lock);
		rc = tree_unhold_many(fs->tree, fs->uq_flight, n);
		if (rc)
			plog(LOG_WARNING,
			     "holds of %zu closed files: some stay until this "
			     "writer's lease ends: %s",
			     n, strerror(-rc));
		pthread_mutex_lock(&fs->rq_lock);
	}
	free(fs->uq_flight); /* (taken with nothing due: empty) */
	fs->uq_flight = NULL;
	fs->uq_flight_n = 0;
	pthread_cond_broadcast(&fs->uq_cond);
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

/* tree_share() failed (logged): asked again a second later, unless this
 * writer is fenced (its joiner goes on once its lease ends). */
static void share_later(struct fs *fs, int rc)
{
	if (rc == 0 || rc == -EROFS)
		return;
	nanosleep(&(struct timespec){1, 0}, NULL);
	pthread_mutex_lock(&fs->rq_lock);
	fs->rq_share = true;
	pthread_mutex_unlock(&fs->rq_lock);
}

/* Whether this writer is alone on the drive now: then it holds nothing.
 * -EAGAIN: its watch does not stand yet. */
static int lone_try(struct fs *fs)
{
	int rc = tree_lone_try(fs->tree);

	if (rc == 0) /* asked while it went alone: publish at once */
		share_later(fs, tree_share(fs->tree));
	if (rc && rc != -EAGAIN)
		plog(LOG_WARNING,
		     "is this writer alone on the drive: %s "
		     "(asked again in %d s)",
		     strerror(-rc), RECLAIM_DEAD_S);
	return rc;
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
	lone_try(fs);
}

static void *reclaimer(void *arg)
{
	struct fs *fs = arg;
	int64_t sweep = now_ms() + RECLAIM_DEAD_S * 1000;
	int64_t alone = now_ms(); /* then at each sweep */

	pthread_mutex_lock(&fs->rq_lock);
	for (;;) {
		int64_t now = now_ms(), wake = -1;
		uint64_t *v;
		size_t n;

		if (fs->rq_share) {
			fs->rq_share = false;
			pthread_mutex_unlock(&fs->rq_lock);
			share_later(fs, tree_share(fs->tree));
			pthread_mutex_lock(&fs->rq_lock);
			continue;
		}
		if (fs->rq_dead && !fs->rq_stop && now >= alone) {
			pthread_mutex_unlock(&fs->rq_lock);
			alone = lone_try(fs) == -EAGAIN ? now + LONE_RETRY_MS
							: INT64_MAX;
			pthread_mutex_lock(&fs->rq_lock);
			continue;
		}
		if (fs->rq_dead && !fs->rq_stop && now >= sweep) {
			pthread_mutex_unlock(&fs->rq_lock);
			reclaim_dead(fs);
			pthread_mutex_lock(&fs->rq_lock);
			sweep = now_ms() + RECLAIM_DEAD_S * 1000;
			continue;
		}
		if (!fs->rq_n &&
		    !(fs->uq_n && (fs->rq_stop || fs->uq[0].due_ms <= now))) {
			if (fs->rq_stop)
				break; /* stopped with nothing left */
			if (fs->uq_n)
				wake = fs->uq[0].due_ms;
			if (fs->rq_dead && (wake < 0 || sweep < wake))
				wake = sweep;
			if (fs->rq_dead && alone != INT64_MAX &&
			    (wake < 0 || alone < wake))
				wake = alone;
			wait_until(fs, wake);
			continue;
		}
		/* gather what comes soon after the first into one commit */
		wake = now + RECLAIM_DELAY_MS;
		while (fs->rq_n && fs->rq_n < RECLAIM_BATCH && !fs->rq_stop &&
		       now_ms() < wake)
			wait_until(fs, wake);
		v = fs->rq;
		n = fs->rq_n;
		fs->rq = NULL;
		fs->rq_n = fs->rq_cap = 0;
		take_unholds(
		    fs, fs->rq_stop ? INT64_MAX : now_ms() + HOLD_LINGER_MS / 2,
		    v, n);
		pthread_mutex_unlock(&fs->rq_lock);
		if (n)
			reclaim_now(fs, v, n);
		free(v);
		pthread_mutex_lock(&fs->rq_lock);
		drop_unholds(fs);
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

/* Caller holds rq_lock. Whether the thread takes what is queued now
 * (started the first time); false if the caller must do the work itself. */
static bool taking(struct fs *fs)
{
	return !fs->rq_stop && started(fs);
}

/* Room for one more than @n elements of @size bytes in array @q (room for
 * *@cap): the array, moved or not; NULL if it cannot grow. */
static void *room(void *q, size_t n, size_t *cap, size_t size)
{
	size_t more = *cap ? 2 * *cap : 256;
	void *v;

	if (n < *cap)
		return q;
	v = realloc(q, more * size);
	if (v)
		*cap = more;
	return v;
}

/* Caller holds rq_lock, and queued the @n-th element of a queue: wakes the
 * thread from its wait, or from gathering when full. */
static void queued_one(struct fs *fs, size_t n)
{
	if (n == 1 || n == RECLAIM_BATCH)
		pthread_cond_signal(&fs->rq_cond);
}

void fs_reclaim(struct fs *fs, uint64_t ino)
{
	uint64_t *v = NULL;

	if (!ino)
		return;
	pthread_mutex_lock(&fs->rq_lock);
	if (taking(fs))
		v = room(fs->rq, fs->rq_n, &fs->rq_cap, sizeof(*v));
	if (v) {
		fs->rq = v;
		fs->rq[fs->rq_n++] = ino;
		queued_one(fs, fs->rq_n);
	}
	pthread_mutex_unlock(&fs->rq_lock);
	if (!v)
		reclaim_now(fs, &ino, 1);
}

bool fs_unhold_later(struct fs *fs, uint64_t ino)
{
	struct unhold *v = NULL;

	pthread_mutex_lock(&fs->rq_lock);
	if (taking(fs))
		v = room(fs->uq, fs->uq_n, &fs->uq_cap, sizeof(*v));
	if (v) {
		fs->uq = v;
		fs->uq[fs->uq_n++] =
		    (struct unhold){ino, now_ms() + HOLD_LINGER_MS};
		queued_one(fs, fs->uq_n);
	}
	pthread_mutex_unlock(&fs->rq_lock);
	return v != NULL;
}

bool fs_unhold_cancel(struct fs *fs, uint64_t ino)
{
	bool found = false;

	pthread_mutex_lock(&fs->rq_lock);
	while (among(fs->uq_flight, fs->uq_flight_n, ino))
		pthread_cond_wait(&fs->uq_cond, &fs->rq_lock);
	for (size_t i = 0; i < fs->uq_n && !found; i++) {
		if (fs->uq[i].ino != ino)
			continue;
		memmove(&fs->uq[i], &fs->uq[i + 1],
			(fs->uq_n - i - 1) * sizeof(*fs->uq));
		fs->uq_n--;
		found = true;
	}
	pthread_mutex_unlock(&fs->rq_lock);
	return found;
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

void fs_reclaim_share(struct fs *fs)
{
	pthread_mutex_lock(&fs->rq_lock);
	fs->rq_share = true;
	pthread_cond_signal(&fs->rq_cond);
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
