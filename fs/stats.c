/*
 * stats.c - per-request statistics of the pathfs daemon (see stats.h).
 *
 * Every operation of the lowlevel ops table is wrapped: the wrapper reads the
 * monotonic clock (vDSO, ~20 ns), calls the real operation, reads it again
 * and adds one to the opcode's count, the elapsed time to its sum and to one
 * bucket of its histogram. The counters are relaxed atomics in one static
 * table: no lock on the request path; a reader sees each counter exact but
 * not all of them at one instant.
 *
 * Histogram buckets are powers of two of microseconds: bucket 0 is < 1 us,
 * bucket b holds [2^(b-1), 2^b) us, the last one everything above. A
 * percentile is reported as the upper bound of the bucket it falls in (so
 * "p50 8 us" means half the requests took less than 8 us).
 *
 * What the time is: the daemon's work on one request and its reply (the
 * write to /dev/fuse), not the kernel's queueing before the daemon read it,
 * nor the wake-up of the caller after the reply.
 *
 * SIGUSR1: a thread of its own waits for the signal with sigwait() (it is
 * blocked in every other thread, which inherit the mask of the thread that
 * called stats_signal_start() before they were made) and logs the table one
 * line at a time (pathfs), or calls the function it was given
 * (pathfs-floor writes its counts to a file); nothing runs in a signal
 * handler.
 *
 * Limits: one table per process (the daemon serves one mount); counts wrap
 * at 2^64.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "stats.h"

enum op {
	OP_LOOKUP,
	OP_FORGET,
	OP_FORGET_MULTI,
	OP_GETATTR,
	OP_SETATTR,
	OP_READLINK,
	OP_MKNOD,
	OP_MKDIR,
	OP_UNLINK,
	OP_RMDIR,
	OP_SYMLINK,
	OP_RENAME,
	OP_LINK,
	OP_OPEN,
	OP_READ,
	OP_WRITE,
	OP_FLUSH,
	OP_RELEASE,
	OP_FSYNC,
	OP_OPENDIR,
	OP_READDIR,
	OP_READDIRPLUS,
	OP_RELEASEDIR,
	OP_FSYNCDIR,
	OP_STATFS,
	OP_SETXATTR,
	OP_GETXATTR,
	OP_LISTXATTR,
	OP_REMOVEXATTR,
	OP_ACCESS,
	OP_CREATE,
	OP_FALLOCATE,
	OP_LSEEK,
	NOPS
};

static const char *const op_name[NOPS] = {
    "LOOKUP",	"FORGET",      "BATCH_FORGET", "GETATTR",     "SETATTR",
    "READLINK", "MKNOD",       "MKDIR",	       "UNLINK",      "RMDIR",
    "SYMLINK",	"RENAME",      "LINK",	       "OPEN",	      "READ",
    "WRITE",	"FLUSH",       "RELEASE",      "FSYNC",	      "OPENDIR",
    "READDIR",	"READDIRPLUS", "RELEASEDIR",   "FSYNCDIR",    "STATFS",
    "SETXATTR", "GETXATTR",    "LISTXATTR",    "REMOVEXATTR", "ACCESS",
    "CREATE",	"FALLOCATE",   "LSEEK",
};

#define NBUCKETS 24 /* < 1 us ... >= 2^22 us (4.2 s) */

struct op_stats {
	uint64_t count;
	uint64_t ns; /* sum */
	uint64_t max_ns;
	uint64_t bucket[NBUCKETS];
} __attribute__((aligned(64)));

static struct op_stats stats[NOPS];
static struct fuse_lowlevel_ops inner; /* the wrapped operations */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static unsigned bucket_of(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned b = 0;

	while (us && b < NBUCKETS - 1) {
		us >>= 1;
		b++;
	}
	return b;
}

static void account(enum op op, uint64_t t0)
{
	struct op_stats *s = &stats[op];
	uint64_t ns = now_ns() - t0;
	uint64_t max = __atomic_load_n(&s->max_ns, __ATOMIC_RELAXED);

	__atomic_fetch_add(&s->count, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->ns, ns, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->bucket[bucket_of(ns)], 1, __ATOMIC_RELAXED);
	while (ns > max &&
	       !__atomic_compare_exchange_n(&s->max_ns, &max, ns, true,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* One wrapper per operation: W(member, OP_, (parameters), (arguments)). */
#define W(m, op, params, args)                                                 \
	static void w_##m params                                               \
	{                                                                      \
		uint64_t t0 = now_ns();                                        \
		inner.m args;                                                  \
		account(op, t0);                                               \
	}

typedef struct fuse_file_info fi_t;

W(lookup, OP_LOOKUP, (fuse_req_t r, fuse_ino_t p, const char *n), (r, p, n))
W(forget, OP_FORGET, (fuse_req_t r, fuse_ino_t i, uint64_t n), (r, i, n))
W(forget_multi, OP_FORGET_MULTI,
  (fuse_req_t r, size_t c, struct fuse_forget_data *f), (r, c, f))
W(getattr, OP_GETATTR, (fuse_req_t r, fuse_ino_t i, fi_t *f), (r, i, f))
W(setattr, OP_SETATTR,
  (fuse_req_t r, fuse_ino_t i, struct stat *a, int s, fi_t *f), (r, i, a, s, f))
W(readlink, OP_READLINK, (fuse_req_t r, fuse_ino_t i), (r, i))
W(mknod, OP_MKNOD,
  (fuse_req_t r, fuse_ino_t p, const char *n, mode_t m, dev_t d),
  (r, p, n, m, d))
W(mkdir, OP_MKDIR, (fuse_req_t r, fuse_ino_t p, const char *n, mode_t m),
  (r, p, n, m))
W(unlink, OP_UNLINK, (fuse_req_t r, fuse_ino_t p, const char *n), (r, p, n))
W(rmdir, OP_RMDIR, (fuse_req_t r, fuse_ino_t p, const char *n), (r, p, n))
W(symlink, OP_SYMLINK,
  (fuse_req_t r, const char *l, fuse_ino_t p, const char *n), (r, l, p, n))
W(rename, OP_RENAME,
  (fuse_req_t r, fuse_ino_t p, const char *n, fuse_ino_t np, const char *nn,
   unsigned int f),
  (r, p, n, np, nn, f))
W(link, OP_LINK, (fuse_req_t r, fuse_ino_t i, fuse_ino_t np, const char *nn),
  (r, i, np, nn))
W(open, OP_OPEN, (fuse_req_t r, fuse_ino_t i, fi_t *f), (r, i, f))
W(read, OP_READ, (fuse_req_t r, fuse_ino_t i, size_t s, off_t o, fi_t *f),
  (r, i, s, o, f))
W(write, OP_WRITE,
  (fuse_req_t r, fuse_ino_t i, const char *b, size_t s, off_t o, fi_t *f),
  (r, i, b, s, o, f))
W(release, OP_RELEASE, (fuse_req_t r, fuse_ino_t i, fi_t *f), (r, i, f))
W(fsync, OP_FSYNC, (fuse_req_t r, fuse_ino_t i, int d, fi_t *f), (r, i, d, f))
W(opendir, OP_OPENDIR, (fuse_req_t r, fuse_ino_t i, fi_t *f), (r, i, f))
W(readdir, OP_READDIR, (fuse_req_t r, fuse_ino_t i, size_t s, off_t o, fi_t *f),
  (r, i, s, o, f))
W(readdirplus, OP_READDIRPLUS,
  (fuse_req_t r, fuse_ino_t i, size_t s, off_t o, fi_t *f), (r, i, s, o, f))
W(fsyncdir, OP_FSYNCDIR, (fuse_req_t r, fuse_ino_t i, int d, fi_t *f),
  (r, i, d, f))
W(statfs, OP_STATFS, (fuse_req_t r, fuse_ino_t i), (r, i))
W(setxattr, OP_SETXATTR,
  (fuse_req_t r, fuse_ino_t i, const char *n, const char *v, size_t s, int f),
  (r, i, n, v, s, f))
W(getxattr, OP_GETXATTR, (fuse_req_t r, fuse_ino_t i, const char *n, size_t s),
  (r, i, n, s))
W(listxattr, OP_LISTXATTR, (fuse_req_t r, fuse_ino_t i, size_t s), (r, i, s))
W(removexattr, OP_REMOVEXATTR, (fuse_req_t r, fuse_ino_t i, const char *n),
  (r, i, n))
W(create, OP_CREATE,
  (fuse_req_t r, fuse_ino_t p, const char *n, mode_t m, fi_t *f),
  (r, p, n, m, f))
W(fallocate, OP_FALLOCATE,
  (fuse_req_t r, fuse_ino_t i, int m, off_t o, off_t l, fi_t *f),
  (r, i, m, o, l, f))
W(lseek, OP_LSEEK, (fuse_req_t r, fuse_ino_t i, off_t o, int w, fi_t *f),
  (r, i, o, w, f))

/* Counted even when not implemented: answered as libfuse would. */
static void w_flush(fuse_req_t r, fuse_ino_t i, fi_t *f)
{
	uint64_t t0 = now_ns();

	if (inner.flush)
		inner.flush(r, i, f);
	else
		fuse_reply_err(r, ENOSYS);
	account(OP_FLUSH, t0);
}

static void w_access(fuse_req_t r, fuse_ino_t i, int mask)
{
	uint64_t t0 = now_ns();

	if (inner.access)
		inner.access(r, i, mask);
	else
		fuse_reply_err(r, ENOSYS);
	account(OP_ACCESS, t0);
}

static void w_releasedir(fuse_req_t r, fuse_ino_t i, fi_t *f)
{
	uint64_t t0 = now_ns();

	if (inner.releasedir)
		inner.releasedir(r, i, f);
	else
		fuse_reply_err(r, 0);
	account(OP_RELEASEDIR, t0);
}

void stats_wrap(struct fuse_lowlevel_ops *out,
		const struct fuse_lowlevel_ops *in)
{
	inner = *in;
	*out = *in;
#define SET(m)                                                                 \
	if (in->m)                                                             \
		out->m = w_##m;
	SET(lookup);
	SET(forget);
	SET(forget_multi);
	SET(getattr);
	SET(setattr);
	SET(readlink);
	SET(mknod);
	SET(mkdir);
	SET(unlink);
	SET(rmdir);
	SET(symlink);
	SET(rename);
	SET(link);
	SET(open);
	SET(read);
	SET(write);
	SET(release);
	SET(fsync);
	SET(opendir);
	SET(readdir);
	SET(readdirplus);
	SET(fsyncdir);
	SET(statfs);
	SET(setxattr);
	SET(getxattr);
	SET(listxattr);
	SET(removexattr);
	SET(create);
	SET(fallocate);
	SET(lseek);
#undef SET
	out->flush = w_flush;
	out->access = w_access;
	out->releasedir = w_releasedir;
}

/* Upper bound in us of the bucket where fraction @q of @s's requests is
 * reached (the last bucket has none: its lower bound). */
static uint64_t pct_us(const struct op_stats *s, uint64_t count, double q)
{
	uint64_t want = (uint64_t)(q * (double)count + 0.999999), seen = 0;
	unsigned b;

	for (b = 0; b < NBUCKETS; b++) {
		seen += s->bucket[b];
		if (seen >= want)
			break;
	}
	if (b >= NBUCKETS - 1)
		return 1ULL << (NBUCKETS - 2);
	return 1ULL << b;
}

/* The store's calls into its kv engine and the engine's own requests
 * (struct store_kv_counts): a "kv" member of the JSON object, or one line
 * of "name value" pairs. */
static void print_kv(FILE *f, bool json, const struct store_kv_counts *kv)
{
	const struct {
		const char *name;
		uint64_t v;
	} c[] = {
	    {"gets", kv->gets},
	    {"content_gets", kv->content_gets},
	    {"iters", kv->iters},
	    {"seeks", kv->seeks},
	    {"nexts", kv->nexts},
	    {"commits", kv->commits},
	    {"conflicts", kv->conflicts},
	    {"stale_pins", kv->stale_pins},
	    {"requests", kv->requests},
	    {"retries", kv->retries},
	    {"faults", kv->faults},
	    {"pages", kv->pages},
	    {"txns", kv->txns},
	    {"read_milli", kv->read_milli},
	    {"write_milli", kv->write_milli},
	    {"txn_write_milli", kv->txn_write_milli},
	    {"txn_rule_milli", kv->txn_rule_milli},
	};
	size_t i;

	fputs(json ? "\"kv\": {" : "kv:", f);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		fprintf(f, json ? "%s\"%s\": %llu" : "%s %s %llu",
			json && i ? ", " : "", c[i].name,
			(unsigned long long)c[i].v);
	fputs(json ? "}, " : "\n", f);
}

void stats_print(FILE *f, bool json, const struct store_kv_counts *kv)
{
	struct op_stats s;
	uint64_t total = 0, total_ns = 0;
	bool first = true;
	unsigned i, b;

	if (json)
		fputs("{\"ops\": {", f);
	else
		fprintf(f, "%-12s %12s %12s %9s %9s %9s %9s %11s\n", "opcode",
			"count", "total ms", "mean us", "p50 <us", "p90 <us",
			"p99 <us", "max us");
	for (i = 0; i < NOPS; i++) {
		s.count = __atomic_load_n(&stats[i].count, __ATOMIC_RELAXED);
		if (!s.count)
			continue;
		s.ns = __atomic_load_n(&stats[i].ns, __ATOMIC_RELAXED);
		s.max_ns = __atomic_load_n(&stats[i].max_ns, __ATOMIC_RELAXED);
		for (b = 0; b < NBUCKETS; b++)
			s.bucket[b] = __atomic_load_n(&stats[i].bucket[b],
						      __ATOMIC_RELAXED);
		total += s.count;
		total_ns += s.ns;
		if (json) {
			fprintf(f,
				"%s\n  \"%s\": {\"count\": %llu, \"ns\": %llu, "
				"\"max_ns\": %llu, \"buckets_us_log2\": [",
				first ? "" : ",", op_name[i],
				(unsigned long long)s.count,
				(unsigned long long)s.ns,
				(unsigned long long)s.max_ns);
			for (b = 0; b < NBUCKETS; b++)
				fprintf(f, "%s%llu", b ? ", " : "",
					(unsigned long long)s.bucket[b]);
			fputs("]}", f);
		} else {
			fprintf(f,
				"%-12s %12llu %12.1f %9.1f %9llu %9llu %9llu "
				"%11.1f\n",
				op_name[i], (unsigned long long)s.count,
				(double)s.ns / 1e6,
				(double)s.ns / 1e3 / (double)s.count,
				(unsigned long long)pct_us(&s, s.count, 0.5),
				(unsigned long long)pct_us(&s, s.count, 0.9),
				(unsigned long long)pct_us(&s, s.count, 0.99),
				(double)s.max_ns / 1e3);
		}
		first = false;
	}
	if (json) {
		fputs("\n}, ", f);
		if (kv)
			print_kv(f, true, kv);
		fprintf(f, "\"count\": %llu, \"ns\": %llu}\n",
			(unsigned long long)total,
			(unsigned long long)total_ns);
	} else {
		fprintf(f, "%-12s %12llu %12.1f\n", "total",
			(unsigned long long)total, (double)total_ns / 1e6);
		if (kv)
			print_kv(f, false, kv);
	}
}

void stats_reset(void)
{
	unsigned i, b;

	for (i = 0; i < NOPS; i++) {
		__atomic_store_n(&stats[i].count, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&stats[i].ns, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&stats[i].max_ns, 0, __ATOMIC_RELAXED);
		for (b = 0; b < NBUCKETS; b++)
			__atomic_store_n(&stats[i].bucket[b], 0,
					 __ATOMIC_RELAXED);
	}
}

void stats_ctl(FILE *out, bool json, bool reset,
	       const struct store_kv_counts *kv)
{
	stats_print(out, json, kv);
	if (reset)
		stats_reset();
}

static pthread_t sig_thread;
static bool sig_started;
static void (*sig_fn)(void); /* set before the thread starts */
static int sig_stop;	     /* atomic: set before the last SIGUSR1 is sent */
static pthread_mutex_t sig_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct store *sig_store; /* protected by sig_lock */

void stats_signal_store(const struct store *s)
{
	pthread_mutex_lock(&sig_lock);
	sig_store = s;
	pthread_mutex_unlock(&sig_lock);
}

static void *sig_main(void *arg)
{
	sigset_t set;
	char *buf, *line, *save;
	size_t len;
	FILE *f;
	int sig;

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	for (;;) {
		if (sigwait(&set, &sig) ||
		    __atomic_load_n(&sig_stop, __ATOMIC_SEQ_CST))
			break;
		if (sig_fn) {
			sig_fn();
			continue;
		}
		buf = NULL;
		f = open_memstream(&buf, &len);
		if (!f)
			continue;
		pthread_mutex_lock(&sig_lock);
		if (sig_store) {
			struct store_kv_counts kv;

			store_kv_counts(sig_store, &kv);
			stats_print(f, false, &kv);
		} else {
			stats_print(f, false, NULL);
		}
		pthread_mutex_unlock(&sig_lock);
		if (fclose(f) == 0 && buf)
			for (line = strtok_r(buf, "\n", &save); line;
			     line = strtok_r(NULL, "\n", &save))
				plog(LOG_INFO, "stats: %s", line);
		free(buf);
	}
	return NULL;
}

int stats_signal_start(void (*fn)(void))
{
	sigset_t set;
	int rc;

	sig_fn = fn;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	rc = pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (rc)
		return -rc;
	rc = pthread_create(&sig_thread, NULL, sig_main, NULL);
	if (rc)
		return -rc;
	sig_started = true;
	return 0;
}

void stats_signal_stop(void)
{
	if (!sig_started)
		return;
	__atomic_store_n(&sig_stop, 1, __ATOMIC_SEQ_CST);
	pthread_kill(sig_thread, SIGUSR1);
	pthread_join(sig_thread, NULL);
	sig_started = false;
}
