/*
 * dio_write.c - writes with O_DIRECT, for the mount tests (posix_content.sh):
 *
 *   dio_write FILE OFFSET LENGTH BYTE [aio|aio-read]
 *
 * writes LENGTH bytes of value BYTE (0..255) at OFFSET of FILE (opened
 * O_WRONLY|O_DIRECT, not created), with pwrite(2), or with one asynchronous
 * write of the kernel's native AIO (io_submit, waited for with io_getevents;
 * raw system calls, no libaio) when the fifth argument is "aio". With
 * "aio-read" a second, buffered open of FILE reads the range over and over
 * while the write is in flight, filling the kernel's page cache with what
 * it reads meanwhile (old bytes, usually): what a reader racing a database's
 * direct writes does. OFFSET and LENGTH should be multiples of 4096. Exit
 * status 0 when all was written.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int aio_write(int fd, void *buf, size_t len, off_t off,
		     const char *rpath)
{
	aio_context_t ctx = 0;
	struct iocb cb, *cbs[1] = {&cb};
	struct io_event ev;
	struct timespec zero = {0, 0};
	char *rbuf = NULL;
	int rc = -1, rfd = -1;

	if (syscall(SYS_io_setup, 1, &ctx) < 0) {
		perror("io_setup");
		return -1;
	}
	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = (uint32_t)fd;
	cb.aio_lio_opcode = IOCB_CMD_PWRITE;
	cb.aio_buf = (uint64_t)(uintptr_t)buf;
	cb.aio_nbytes = len;
	cb.aio_offset = off;
	if (rpath) {
		rfd = open(rpath, O_RDONLY);
		rbuf = malloc(len ? len : 1);
		if (rfd < 0 || !rbuf) {
			perror(rpath);
			goto out;
		}
	}
	if (syscall(SYS_io_submit, ctx, 1, cbs) != 1) {
		perror("io_submit");
		goto out;
	}
	while (rpath) {
		long n = syscall(SYS_io_getevents, ctx, 1, 1, &ev, &zero);
		if (n == 1)
			goto done;
		if (n < 0) {
			perror("io_getevents");
			goto out;
		}
		if (pread(rfd, rbuf, len, off) < 0) {
			perror("pread");
			goto out;
		}
	}
	if (syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1) {
		perror("io_getevents");
		goto out;
	}
done:
	if (ev.res != (int64_t)len) {
		fprintf(stderr, "aio write: %lld\n", (long long)ev.res);
		goto out;
	}
	rc = 0;
out:
	syscall(SYS_io_destroy, ctx);
	if (rfd >= 0)
		close(rfd);
	free(rbuf);
	return rc;
}

int main(int argc, char **argv)
{
	void *buf;
	size_t len;
	off_t off;
	int fd, rc;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: dio_write FILE OFFSET LENGTH BYTE "
				"[aio|aio-read]\n");
		return 2;
	}
	off = (off_t)strtoll(argv[2], NULL, 0);
	len = (size_t)strtoull(argv[3], NULL, 0);
	if (posix_memalign(&buf, 4096, len ? len : 1))
		return 1;
	memset(buf, atoi(argv[4]), len);
	fd = open(argv[1], O_WRONLY | O_DIRECT);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	if (argc == 6 && !strncmp(argv[5], "aio", 3)) {
		rc = aio_write(fd, buf, len, off,
			       strcmp(argv[5], "aio-read") ? NULL : argv[1]);
	} else {
		ssize_t n = pwrite(fd, buf, len, off);
		rc = n == (ssize_t)len ? 0 : -1;
		if (rc)
			perror("pwrite");
	}
	if (close(fd))
		rc = -1;
	free(buf);
	return rc ? 1 : 0;
}
