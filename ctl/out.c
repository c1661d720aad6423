/*
 * out.c - pathfsctl's output helpers: names escaped for a terminal and for
 * JSON, modes, times, and the one-line error and usage messages.
 *
 * Limits: names are printed with bytes below 0x20, 0x7f and "\" escaped
 * (\xNN, \\), so one entry is one line; JSON output escapes bytes that are
 * not valid UTF-8 as \u00NN (so such names do not round-trip through JSON).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl_i.h"

int64_t ctl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Prints @s for a human: control bytes and backslash escaped
 * (tree_escape()). */
void ctl_put_name(FILE *f, const char *s)
{
	char *e = tree_escape(s, strlen(s), TREE_ESC_NAME);

	fputs(e, f);
	free(e);
}

/* Length of the valid UTF-8 sequence at @p (0 if invalid). */
static size_t utf8_len(const unsigned char *p)
{
	size_t n, i;
	uint32_t cp;

	if (*p < 0x80)
		return 1;
	if ((*p & 0xe0) == 0xc0) {
		n = 2;
		cp = *p & 0x1f;
	} else if ((*p & 0xf0) == 0xe0) {
		n = 3;
		cp = *p & 0x0f;
	} else if ((*p & 0xf8) == 0xf0) {
		n = 4;
		cp = *p & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* Prints @s as a JSON string (quotes included). */
void ctl_put_json(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	while (*p) {
		size_t n = utf8_len(p);

		if (*p == '"' || *p == '\\') {
			fputc('\\', f);
			fputc(*p, f);
		} else if (*p < 0x20 || *p == 0x7f || n == 0) {
			fprintf(f, "\\u%04x", *p);
			n = 1;
		} else {
			fwrite(p, 1, n, f);
		}
		p += n ? n : 1;
	}
	fputc('"', f);
}

const char *ctl_type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFDIR:
		return "dir";
	case S_IFREG:
		return "file";
	case S_IFLNK:
		return "symlink";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	case S_IFCHR:
		return "chardev";
	case S_IFBLK:
		return "blockdev";
	default:
		return "bad";
	}
}

void ctl_mode_string(mode_t m, char s[11])
{
	static const char rwx[] = "rwxrwxrwx";
	int i;

	switch (m & S_IFMT) {
	case S_IFDIR:
		s[0] = 'd';
		break;
	case S_IFLNK:
		s[0] = 'l';
		break;
	case S_IFIFO:
		s[0] = 'p';
		break;
	case S_IFSOCK:
		s[0] = 's';
		break;
	case S_IFCHR:
		s[0] = 'c';
		break;
	case S_IFBLK:
		s[0] = 'b';
		break;
	case S_IFREG:
		s[0] = '-';
		break;
	default:
		s[0] = '?';
		break;
	}
	for (i = 0; i < 9; i++)
		s[1 + i] = (m & (0400 >> i)) ? rwx[i] : '-';
	if (m & S_ISUID)
		s[3] = (m & S_IXUSR) ? 's' : 'S';
	if (m & S_ISGID)
		s[6] = (m & S_IXGRP) ? 's' : 'S';
	if (m & S_ISVTX)
		s[9] = (m & S_IXOTH) ? 't' : 'T';
	s[10] = '\0';
}

void ctl_time_string(int64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000LL);
	struct tm tm;

	if (!localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M", &tm))
		snprintf(buf, len, "%" PRId64, ns);
}

/* Prints "pathfsctl: CMD: what: strerror" on err. */
void ctl_fail(struct ctx *x, const char *what, int rc)
{
	fprintf(x->err, "pathfsctl: %s: ", x->cmd->name);
	ctl_put_name(x->err, what);
	fprintf(x->err, ": %s\n", strerror(-rc));
}

int ctl_usage_error(struct ctx *x, const char *fmt, const char *arg)
{
	fprintf(x->err, "pathfsctl: %s: ", x->cmd->name);
	fprintf(x->err, fmt, arg ? arg : "");
	fprintf(x->err, "\nusage: pathfsctl %s\n", x->cmd->usage);
	return CTL_USAGE;
}
