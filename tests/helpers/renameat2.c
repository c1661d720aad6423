/*
 * renameat2.c - mount-test helper: one renameat2(2) call with the flags named
 * on the command line, so the tests can drive RENAME_NOREPLACE,
 * RENAME_EXCHANGE and RENAME_WHITEOUT (coreutils' mv cannot on Debian 12) and
 * see the raw errno of a plain rename(2) that mv would otherwise pre-check
 * and reword.
 *
 *   renameat2 none|noreplace|exchange|whiteout|noreplace,whiteout|
 *             exchange,whiteout SRC DST
 *
 * Exit status 0 on success; on failure it prints "renameat2: SRC -> DST:
 * <strerror>" on stderr (what lib.sh's expect_errno matches) and exits 1.
 * Usage errors exit 2. Limits: paths are taken as given (relative to the
 * current directory), no retries.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#ifndef RENAME_WHITEOUT
#define RENAME_WHITEOUT (1 << 2)
#endif

int main(int argc, char **argv)
{
	unsigned int flags;
	long rc;

	if (argc != 4)
		goto usage;
	if (!strcmp(argv[1], "none"))
		flags = 0;
	else if (!strcmp(argv[1], "noreplace"))
		flags = RENAME_NOREPLACE;
	else if (!strcmp(argv[1], "exchange"))
		flags = RENAME_EXCHANGE;
	else if (!strcmp(argv[1], "whiteout"))
		flags = RENAME_WHITEOUT;
	else if (!strcmp(argv[1], "noreplace,whiteout"))
		flags = RENAME_NOREPLACE | RENAME_WHITEOUT;
	else if (!strcmp(argv[1], "exchange,whiteout"))
		flags = RENAME_EXCHANGE | RENAME_WHITEOUT;
	else
		goto usage;

	/* The raw system call: no dependence on the libc wrapper's age. */
	rc =
	    syscall(SYS_renameat2, AT_FDCWD, argv[2], AT_FDCWD, argv[3], flags);
	if (rc) {
		fprintf(stderr, "renameat2: %s -> %s: %s\n", argv[2], argv[3],
			strerror(errno));
		return 1;
	}
	return 0;
usage:
	fprintf(stderr, "usage: renameat2 none|noreplace|exchange|whiteout|"
			"noreplace,whiteout|exchange,whiteout SRC DST\n");
	return 2;
}
