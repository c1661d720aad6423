/*
 * test_log.c - the log file of store/log.c: lines land whole and in order,
 * the file is rotated to FILE.1 once it passes its bound, no line is lost
 * at a rotation, and a message with control bytes stays one line.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "testutil.h"

/* The numbers N of the lines "... line N" of @path, in order; returns count. */
static int line_numbers(const char *path, int *out, int max)
{
	char buf[2048];
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f)
		return 0;
	while (n < max && fgets(buf, sizeof(buf), f)) {
		char *p = strstr(buf, "INFO: line ");

		cr_assert_not_null(p, "unexpected line in %s: %s", path, buf);
		cr_assert(buf[strlen(buf) - 1] == '\n', "line not whole");
		out[n++] = atoi(p + strlen("INFO: line "));
	}
	fclose(f);
	return n;
}

Test(log, file_rotates_by_size_and_loses_nothing, .init = tu_setup,
     .fini = tu_teardown)
{
	char path[4200], old[4300];
	static int a[4000], b[4000];
	struct stat st;
	int na, nb, i, last = 1999;

	snprintf(path, sizeof(path), "%s/pathfs.log", tu_dir);
	snprintf(old, sizeof(old), "%s.1", path);
	cr_assert_eq(log_to_file(path, 8192), 0);
	for (i = 0; i <= last; i++)
		plog(LOG_INFO, "line %d %s", i, "padding padding padding");

	/* both files within the bound (plus the line that crossed it) */
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_leq(st.st_size, 8192 + 200);
	cr_assert_eq(stat(old, &st), 0);
	cr_assert_leq(st.st_size, 8192 + 200);
	cr_assert_geq(st.st_size, 8192);

	/* FILE.1 then FILE: consecutive numbers ending with the last line */
	nb = line_numbers(old, b, 4000);
	na = line_numbers(path, a, 4000);
	cr_assert_gt(nb, 0);
	cr_assert_gt(na, 0);
	for (i = 1; i < nb; i++)
		cr_assert_eq(b[i], b[i - 1] + 1);
	cr_assert_eq(a[0], b[nb - 1] + 1, "a line lost at the rotation");
	for (i = 1; i < na; i++)
		cr_assert_eq(a[i], a[i - 1] + 1);
	cr_assert_eq(a[na - 1], last);
}

Test(log, file_removed_behind_its_back_comes_back_at_rotation, .init = tu_setup,
     .fini = tu_teardown)
{
	char path[4200];
	int a[100], n;

	snprintf(path, sizeof(path), "%s/x.log", tu_dir);
	cr_assert_eq(log_to_file(path, 512), 0);
	plog(LOG_INFO, "line 1");
	cr_assert_eq(unlink(path), 0);
	for (int i = 2; i < 20; i++)
		plog(LOG_INFO, "line %d", i);
	n = line_numbers(path, a, 100);
	cr_assert_gt(n, 0, "nothing written after the file was removed");
	cr_assert_eq(a[n - 1], 19);
}

Test(log, unwritable_file_is_refused, .init = tu_setup, .fini = tu_teardown)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/no/such/dir/x.log", tu_dir);
	cr_assert_eq(log_to_file(path, 0), -ENOENT);
}

Test(log, a_message_is_one_line_whatever_a_name_holds, .init = tu_setup,
     .fini = tu_teardown)
{
	char path[4200], buf[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/x.log", tu_dir);
	cr_assert_eq(log_to_file(path, 0), 0);
	plog(LOG_ERR, "bad key %s", "PATH#/a/odd\nname\\\x7f\t");
	plog(LOG_INFO, "line 2");
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	cr_assert_not_null(
	    strstr(buf, "ERR: bad key PATH#/a/odd\\x0aname\\\\x7f\\x09\n"),
	    "first line: %s", buf);
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	cr_assert_not_null(strstr(buf, "INFO: line 2\n"), "second line: %s",
			   buf);
	cr_assert_null(fgets(buf, sizeof(buf), f));
	fclose(f);
}
