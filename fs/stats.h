/*
 * stats.h - per-request statistics of the pathfs daemon: how many requests of
 * each FUSE opcode it answered and how long each took (a log2 histogram).
 *
 * `pathfsctl stats` prints them from a mounted store (ctl/ctl.c, through
 * the control socket); SIGUSR1 writes them to the daemon's log.
 */
#ifndef PATHFS_STATS_H
#define PATHFS_STATS_H

#include <stdbool.h>
#include <stdio.h>

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "tree.h"

/*
 * Fills @out with @in, each operation wrapped so that it is counted and
 * timed (from the call until it returns, which includes the reply: every
 * operation of fs_ops replies before returning). FLUSH, ACCESS and
 * RELEASEDIR are wrapped even when @in has none, answered as libfuse
 * answers them then, so they are counted too. @in must outlive the session.
 */
void stats_wrap(struct fuse_lowlevel_ops *out,
		const struct fuse_lowlevel_ops *in);

/* Writes the statistics to @f: a table, or one JSON object when @json.
 * Opcodes never seen are left out. @kv (NULL: none) adds the store's
 * counts of kv calls and engine requests ("kv" in the JSON). */
void stats_print(FILE *f, bool json, const struct store_kv_counts *kv);

/* Starts counting again from zero (counts of requests in flight may land
 * on either side). */
void stats_reset(void);

/* ctl_env.stats: prints (stats_print()), then resets if @reset (the kv
 * counts only grow: compare two readings). */
void stats_ctl(FILE *out, bool json, bool reset,
	       const struct store_kv_counts *kv);

/*
 * Starts the thread that, on each SIGUSR1, calls @fn, or logs the
 * statistics when @fn is NULL, and blocks SIGUSR1 in the calling thread:
 * call it before any other thread is made (they inherit the mask, so the
 * signal always reaches that thread). Errors: -errno of pthread_sigmask /
 * pthread_create.
 */
int stats_signal_start(void (*fn)(void));
/* The store whose kv counts SIGUSR1 logs with the table (NULL: none, as
 * at start): set it to NULL before closing the store (it waits for a log
 * in progress). A -o ro follower serves no control socket: this is how
 * its counts are read. */
void stats_signal_store(const struct store *s);
/* Stops that thread. Safe if it never started. */
void stats_signal_stop(void);

#endif
