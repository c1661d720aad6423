/*
 * fsutil.c - the fixture of the daemon's unit suites (see fsutil.h).
 */
#include <criterion/criterion.h>

#include "fsutil.h"
#include "testutil.h"

struct fs tu_fs;

void tu_fs_setup(void)
{
	tu_setup();
	cr_assert_eq(fs_init(&tu_fs, tu_store, tu_tree), 0);
}

void tu_fs_teardown(void)
{
	fs_release(&tu_fs);
	tu_teardown();
}
