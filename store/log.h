/*
 * log.h - one logging call for the whole project.
 *
 * Messages go to stderr by default; the daemon switches to syslog when it
 * detaches. Safe from any thread. Levels are syslog's (LOG_ERR, LOG_WARNING,
 * LOG_NOTICE, LOG_INFO, LOG_DEBUG); LOG_DEBUG lines are dropped unless
 * log_set_debug(true).
 */
#ifndef PATHFS_LOG_H
#define PATHFS_LOG_H

#include <stdbool.h>
#include <syslog.h>

void plog(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Send messages to syslog (ident @ident) instead of stderr. */
void log_to_syslog(const char *ident);
void log_set_debug(bool on);
/* Drop messages below @level (default LOG_INFO to stderr, all to syslog). */
void log_set_level(int level);

#endif
