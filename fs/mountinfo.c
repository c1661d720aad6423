/*
 * mountinfo.c - parses a line of /proc/PID/mountinfo (mountinfo.h).
 *
 * Limits: no allocation, no errors beyond "another shape"; the line is cut
 * in place, as strtok_r does.
 */
#include <stdio.h>
#include <string.h>

#include "mountinfo.h"

/* Undoes mountinfo's octal escapes (\040 for a space) of @s in place. */
static void unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				      (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

int mountinfo_parse(char *line, struct mountinfo *m)
{
	char *save = NULL, *f[5], *tok;
	int i;

	for (i = 0; i < 5; i++) {
		f[i] = strtok_r(i ? NULL : line, " \n", &save);
		if (!f[i])
			return -1;
	}
	if (sscanf(f[2], "%u:%u", &m->maj, &m->min) != 2)
		return -1;
	while ((tok = strtok_r(NULL, " \n", &save)) && strcmp(tok, "-"))
		;
	if (!tok)
		return -1;
	m->type = strtok_r(NULL, " \n", &save);
	m->source = strtok_r(NULL, " \n", &save);
	if (!m->type || !m->source)
		return -1;
	m->root = f[3];
	m->point = f[4];
	unescape(m->root);
	unescape(m->point);
	unescape(m->source);
	return 0;
}
