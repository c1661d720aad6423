/*
 * log.h - one logging call for the whole project.
 *
 * Messages go to stderr by default; the daemon switches to syslog or a log
 * file when it detaches (or when told with -o log=). Safe from any thread. Levels are syslog's (LOG_ERR, LOG_WARNING,
 * LOG_NOTICE, LOG_INFO, LOG_DEBUG); LOG_DEBUG lines are dropped unless
 * log_set_debug(true).
 */
#ifndef PATHFS_LOG_H
#define PATHFS_LOG_H

#include <stdbool.h>
#include <sys/types.h>
#include <syslog.h>

void plog(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Send messages to syslog (ident @ident) instead of stderr. */
void log_to_syslog(const char *ident);

/* true if a syslog daemon listens on /dev/log: without one, syslog(3)
 * drops every line without a word. */
bool log_syslog_listening(void);

/* Bound of a log file before it is rotated (FILE -> FILE.1). */
#define LOG_FILE_MAX (4 << 20)

/*
 * Send messages to the file @path (appended to, created 0600; an absolute
 * path, as it is reopened at rotation), renamed to @path.1 and started anew
 * each time it passes @max_bytes (0: LOG_FILE_MAX). A line that cannot be
 * written goes to stderr. Errors: -errno of the open (nothing changes).
 */
int log_to_file(const char *path, off_t max_bytes);
void log_set_debug(bool on);
/* Drop messages below @level (default LOG_INFO to stderr, all to syslog). */
void log_set_level(int level);

#endif
