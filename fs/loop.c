/*
 * loop.c - the daemon's request loop: one reader at a time, more threads
 * only when a request may take long.
 *
 * Why not libfuse's multi-threaded loop: it keeps every idle worker blocked
 * in read(2) on /dev/fuse, and the kernel hands each request to the worker
 * that has waited longest. A worker that has just replied therefore never
 * finds the next request itself: every request of a serial workload (a
 * program creating files: LOOKUP, CREATE, GETXATTR, WRITE, RELEASE per
 * file) wakes a sleeping thread, a context switch that costs more than the
 * request on a virtual machine. Measured on the project's 2-CPU VM (5,000
 * files, load 16): libfuse's loop 3.9-11.7 s and 1.0-2.2 s of daemon CPU,
 * the single-threaded loop 2.4-2.8 s and 0.65 s.
 *
 * Here exactly one thread, the reader, is in read(2) at a time. It serves
 * cheap requests itself and reads again at once (so a caller that is quick
 * with its next request finds the same thread, often still awake). Before a
 * request that may take long (cheap_request() says which) it hands the role
 * of reader to an idle thread, starting one if there is none, so requests
 * from others keep flowing; so does a thread that is about to wait inside
 * the daemon (fs_loop_blocking(), called where a request waits for a busy
 * branch). A thread that has handed the role off takes it back when it is
 * free, else waits for it as an idle thread (at most @max_idle of those;
 * more end).
 *
 * End: unmount makes read(2) fail (ENODEV) and the reader ends the loop;
 * a signal handled by libfuse (SIGTERM, SIGINT, SIGHUP) only marks the
 * session exited, which the caller of fs_loop() notices within a second
 * and then cancels the reader's read(2).
 *
 * Limits: cheap requests from several processes are served one after the
 * other by one thread (they take microseconds); at most @max_threads
 * requests are served at once.
 */
#include <errno.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "fs_i.h"
#include "log.h"

/* A write or read above this goes to its own thread (1 MiB writes of a
 * streaming writer take ~1 ms each; 8 parallel writers keep both CPUs
 * busy). */
#define CHEAP_IO_MAX (128 * 1024)

struct loop {
	struct fuse_session *se;
	struct fs *fs; /* for fs_raw_request() */
	unsigned max_threads, max_idle;

	pthread_mutex_t lock;
	pthread_cond_t turn;  /* with lock: the reader's role is free */
	pthread_cond_t ended; /* with lock: a thread ended */
	bool has_reader;      /* protected by lock: a thread holds the role */
	pthread_t reader;     /* protected by lock: that thread */
	unsigned threads;     /* protected by lock: live workers */
	unsigned idle;	      /* protected by lock: waiting in turn */
	bool exit;	      /* protected by lock */
	int error;	      /* protected by lock: -errno of read(2) */
};

/* The loop whose reader this thread is, else NULL. */
static __thread struct loop *holding;

/*
 * Requests the reader serves itself: metadata work of microseconds that
 * never waits for another request (a wait for a busy branch hands the role
 * off first, see fs_loop_blocking()). Not cheap: READ (it may touch atime
 * and notify the kernel, which may wait for another READ), FSYNC and
 * FSYNCDIR (a disk sync), RENAME (a folder's rewrite), FALLOCATE, large
 * WRITEs, anything unknown.
 */
static bool cheap_request(const struct fuse_buf *b, size_t len)
{
	const struct fuse_in_header *in = b->mem;

	if ((b->flags & FUSE_BUF_IS_FD) || len < sizeof(*in))
		return false;
	switch (in->opcode) {
	case FUSE_LOOKUP:
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_GETATTR:
	case FUSE_SETATTR:
	case FUSE_READLINK:
	case FUSE_SYMLINK:
	case FUSE_MKNOD:
	case FUSE_MKDIR:
	case FUSE_UNLINK:
	case FUSE_RMDIR:
	case FUSE_LINK:
	case FUSE_OPEN:
	case FUSE_CREATE:
	case FUSE_RELEASE:
	case FUSE_FLUSH:
	case FUSE_OPENDIR:
	case FUSE_READDIR:
	case FUSE_READDIRPLUS:
	case FUSE_RELEASEDIR:
	case FUSE_STATFS:
	case FUSE_SETXATTR:
	case FUSE_GETXATTR:
	case FUSE_LISTXATTR:
	case FUSE_REMOVEXATTR:
	case FUSE_ACCESS:
	case FUSE_LSEEK:
	case FUSE_INIT:
	case FUSE_INTERRUPT:
		return true;
	case FUSE_WRITE:
		return len <= CHEAP_IO_MAX + 4096;
	default:
		return false;
	}
}

static void *worker(void *arg);

/* Caller holds l->lock. Errors: -errno of pthread_create. */
static int start_thread(struct loop *l)
{
	pthread_attr_t attr;
	pthread_t th;
	int rc;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&th, &attr, worker, l);
	pthread_attr_destroy(&attr);
	if (rc)
		return -rc;
	l->threads++;
	return 0;
}

/* Caller holds l->lock and the reader's role: gives the role away. */
static void hand_off(struct loop *l)
{
	l->has_reader = false;
	holding = NULL;
	if (l->idle)
		pthread_cond_signal(&l->turn);
	else if (l->threads < l->max_threads && start_thread(l))
		plog(LOG_WARNING, "cannot start a request thread");
	/* else: the first thread done with its request takes the role */
}

void fs_loop_blocking(void)
{
	struct loop *l = holding;

	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	hand_off(l);
	pthread_mutex_unlock(&l->lock);
}

/* Cancellation cleanup of a reader cancelled in read(2) at the end. */
static void worker_cancelled(void *arg)
{
	struct loop *l = arg;

	pthread_mutex_lock(&l->lock);
	l->has_reader = false;
	l->threads--;
	pthread_cond_broadcast(&l->ended);
	pthread_mutex_unlock(&l->lock);
}

static void free_buf(void *arg)
{
	free(((struct fuse_buf *)arg)->mem);
}

static void *worker(void *arg)
{
	struct loop *l = arg;
	struct fuse_buf fbuf = {.mem = NULL};
	int res;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	/* its replies tell the kernel of its changes: the watch need not */
	tree_watch_quiet(l->fs->tree, true);
	pthread_mutex_lock(&l->lock);
	for (;;) {
		if (holding != l) {
			while (!l->exit && l->has_reader) {
				if (l->idle >= l->max_idle)
					goto out;
				l->idle++;
				pthread_cond_wait(&l->turn, &l->lock);
				l->idle--;
			}
			if (l->exit)
				break;
			l->has_reader = true;
			l->reader = pthread_self();
			holding = l;
		}
		if (l->exit)
			break;
		pthread_mutex_unlock(&l->lock);

		pthread_cleanup_push(worker_cancelled, l);
		pthread_cleanup_push(free_buf, &fbuf);
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		res = fuse_session_receive_buf(l->se, &fbuf);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		pthread_cleanup_pop(0);
		pthread_cleanup_pop(0);

		if (res == -EINTR || res == -EAGAIN) {
			pthread_mutex_lock(&l->lock);
			continue;
		}
		if (res <= 0 || fuse_session_exited(l->se)) {
			pthread_mutex_lock(&l->lock);
			if (res < 0 && res != -ENODEV)
				l->error = res;
			fuse_session_exit(l->se);
			l->exit = true;
			pthread_cond_broadcast(&l->turn);
			break;
		}
		if (!cheap_request(&fbuf, (size_t)res)) {
			pthread_mutex_lock(&l->lock);
			hand_off(l);
			pthread_mutex_unlock(&l->lock);
		}
		/* libfuse knows no FUSE_TMPFILE: the daemon answers it */
		if ((fbuf.flags & FUSE_BUF_IS_FD) ||
		    !fs_raw_request(l->fs, l->se, fbuf.mem, (size_t)res))
			fuse_session_process_buf(l->se, &fbuf);
		pthread_mutex_lock(&l->lock);
	}
out:
	if (holding == l) {
		l->has_reader = false;
		holding = NULL;
		pthread_cond_signal(&l->turn);
	}
	l->threads--;
	pthread_cond_broadcast(&l->ended);
	pthread_mutex_unlock(&l->lock);
	free(fbuf.mem);
	return NULL;
}

int fs_loop(struct fuse_session *se, struct fs *fs, unsigned max_threads,
	    unsigned max_idle)
{
	struct loop l = {.se = se,
			 .fs = fs,
			 .max_threads = max_threads,
			 .max_idle = max_idle};
	pthread_condattr_t ca;
	struct timespec ts;
	int rc;

	pthread_mutex_init(&l.lock, NULL);
	pthread_cond_init(&l.turn, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l.ended, &ca);
	pthread_condattr_destroy(&ca);

	pthread_mutex_lock(&l.lock);
	rc = start_thread(&l);
	while (!rc && l.threads) {
		if (!l.exit && fuse_session_exited(se)) {
			/* a signal: stop the reader waiting in read(2) */
			l.exit = true;
			pthread_cond_broadcast(&l.turn);
			if (l.has_reader)
				pthread_cancel(l.reader);
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&l.ended, &l.lock, &ts);
	}
	if (!rc)
		rc = l.error;
	pthread_mutex_unlock(&l.lock);
	pthread_cond_destroy(&l.turn);
	pthread_cond_destroy(&l.ended);
	pthread_mutex_destroy(&l.lock);
	fuse_session_reset(se);
	return rc;
}
