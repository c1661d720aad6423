/*
 * fsutil.h - the fixture of the daemon's unit suites (test_fs_ops.c,
 * test_fs_inodes.c): a struct fs over testutil.h's fresh store and drive,
 * with no mount. Linked with fs/'s library (fs/meson.build).
 */
#ifndef PATHFS_FSUTIL_H
#define PATHFS_FSUTIL_H

#include "fs_i.h"

/* Set by tu_fs_setup(): the daemon's state over tu_store and tu_tree. */
extern struct fs tu_fs;

/* Criterion .init/.fini: tu_setup() and fs_init() / fs_release() and
 * tu_teardown(). */
void tu_fs_setup(void);
void tu_fs_teardown(void);

#endif
