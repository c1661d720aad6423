/*
 * log.c - stderr, syslog or a log file rotated by size, see log.h.
 *
 * A log file gets one line per message, "TIME LEVEL: message", written with
 * one write(2) on an O_APPEND descriptor under a mutex, so lines stay whole
 * across threads. Once the file passes its size bound it is renamed to
 * FILE.1 (replacing the older one) and a new FILE is started: the log keeps
 * at most about twice the bound. If a write or the rotation fails, the line
 * goes on to stderr (which the daemon keeps when it detaches only for
 * log=stderr), so one bad moment loses no more than that line.
 *
 * A message is one line on every sink: its control bytes (a newline in a
 * file's name, say) are written as \xNN, so no name can forge a line.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <paths.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

enum sink { SINK_STDERR, SINK_SYSLOG, SINK_FILE };

static enum sink sink = SINK_STDERR;
static bool debug;
static int max_level = LOG_INFO;

/* the log file: protected by file_lock */
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
static char *file_path;
static int file_fd = -1;
static off_t file_size, file_max;

void log_to_syslog(const char *ident)
{
	openlog(ident, LOG_PID, LOG_DAEMON);
	sink = SINK_SYSLOG;
}

bool log_syslog_listening(void)
{
	static const int types[] = {SOCK_DGRAM, SOCK_STREAM};
	struct sockaddr_un a;
	bool ok = false;

	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	strcpy(a.sun_path, _PATH_LOG);
	for (size_t i = 0; i < 2 && !ok; i++) {
		int fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);

		if (fd < 0)
			continue;
		ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
		close(fd);
	}
	return ok;
}

/* Opens file_path for appending. Caller holds file_lock. */
static int file_reopen(void)
{
	struct stat st;
	int fd;

	fd = open(file_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int rc = -errno;
		close(fd);
		return rc;
	}
	if (file_fd >= 0)
		close(file_fd);
	file_fd = fd;
	file_size = st.st_size;
	return 0;
}

int log_to_file(const char *path, off_t max_bytes)
{
	char *copy = strdup(path);
	int rc;

	if (!copy)
		return -ENOMEM;
	pthread_mutex_lock(&file_lock);
	free(file_path);
	file_path = copy;
	file_max = max_bytes > 0 ? max_bytes : LOG_FILE_MAX;
	rc = file_reopen();
	if (rc == 0)
		sink = SINK_FILE;
	pthread_mutex_unlock(&file_lock);
	return rc;
}

/* FILE -> FILE.1, then a new FILE. Caller holds file_lock. */
static int file_rotate(void)
{
	char old[PATH_MAX];

	if (snprintf(old, sizeof(old), "%s.1", file_path) >= (int)sizeof(old))
		return -ENAMETOOLONG;
	/* a file removed behind our back is simply started anew */
	if (rename(file_path, old) < 0 && errno != ENOENT)
		return -errno;
	return file_reopen();
}

static const char *level_name(int level)
{
	static const char *names[] = {"EMERG",	 "ALERT",  "CRIT", "ERR",
				      "WARNING", "NOTICE", "INFO", "DEBUG"};

	return level >= 0 && level <= LOG_DEBUG ? names[level] : "?";
}

/* Writes one line to the log file; -errno if it did not get there. */
static int file_write(int level, const char *msg)
{
	char line[4200], stamp[32]; /* plog()'s line and a stamp */
	struct timespec ts;
	struct tm tm;
	ssize_t n;
	int len, rc = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
	len = snprintf(line, sizeof(line), "%s.%03ld pathfs[%d] %s: %s\n",
		       stamp, ts.tv_nsec / 1000000, (int)getpid(),
		       level_name(level), msg);
	if (len >= (int)sizeof(line)) {
		len = sizeof(line) - 1;
		line[len - 1] = '\n';
	}
	pthread_mutex_lock(&file_lock);
	if (file_fd < 0 ||
	    (file_size >= file_max && file_rotate() < 0 && file_fd < 0)) {
		rc = -EBADF;
		goto out;
	}
	n = write(file_fd, line, (size_t)len);
	if (n != len) {
		rc = n < 0 ? -errno : -EIO;
		goto out;
	}
	file_size += n;
out:
	pthread_mutex_unlock(&file_lock);
	return rc;
}

void log_set_debug(bool on)
{
	debug = on;
}

void log_set_level(int level)
{
	max_level = level;
}

/* @in with its control bytes as \xNN, into @out (4 bytes per byte of @in,
 * plus the NUL). */
static void one_line(const char *in, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (; *in; in++) {
		unsigned char c = (unsigned char)*in;

		if (c >= 0x20 && c != 0x7f) {
			*out++ = (char)c;
			continue;
		}
		*out++ = '\\';
		*out++ = 'x';
		*out++ = digits[c >> 4];
		*out++ = digits[c & 0xf];
	}
	*out = '\0';
}

void plog(int level, const char *fmt, ...)
{
	char msg[1024], line[4 * sizeof(msg)];
	va_list ap;

	if (level == LOG_DEBUG && !debug)
		return;
	if (level > max_level && !(level == LOG_DEBUG && debug))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	one_line(msg, line);
	if (sink == SINK_SYSLOG)
		syslog(level, "%s", line);
	else if (sink != SINK_FILE || file_write(level, line) < 0)
		/* one fprintf per line keeps lines whole across threads */
		fprintf(stderr, "pathfs: %s\n", line);
}
