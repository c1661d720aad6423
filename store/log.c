/*
 * log.c - stderr or syslog, see log.h.
 */
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

static bool use_syslog;
static bool debug;
static int max_level = LOG_INFO;

void log_to_syslog(const char *ident)
{
	openlog(ident, LOG_PID, LOG_DAEMON);
	use_syslog = true;
}

void log_set_debug(bool on)
{
	debug = on;
}

void log_set_level(int level)
{
	max_level = level;
}

void plog(int level, const char *fmt, ...)
{
	va_list ap;

	if (level == LOG_DEBUG && !debug)
		return;
	if (level > max_level && !(level == LOG_DEBUG && debug))
		return;
	va_start(ap, fmt);
	if (use_syslog) {
		vsyslog(level, fmt, ap);
	} else {
		/* one fprintf per line keeps lines whole across threads */
		char line[1024];
		vsnprintf(line, sizeof(line), fmt, ap);
		fprintf(stderr, "pathfs: %s\n", line);
	}
	va_end(ap);
}
