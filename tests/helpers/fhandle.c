/*
 * fhandle - file handles for the mount tests (name_to_handle_at(2),
 * open_by_handle_at(2): what an NFS server does with a mount).
 *
 *   fhandle save PATH          prints PATH's handle as one hex line
 *   fhandle open MOUNT HEX     opens the handle on the filesystem of MOUNT
 *                              and prints what it found: "file <bytes>" (the
 *                              first 256 bytes), "dir <path> <names...>" (its
 *                              path from /proc/self/fd and its sorted names),
 *                              or the errno name it failed with (ESTALE)
 *
 * Needs CAP_DAC_READ_SEARCH (root). Exit 0 when the call ran (whatever it
 * found), 2 on a usage or setup error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_BYTES 128

static const char *errname(int e)
{
	switch (e) {
	case ESTALE:
		return "ESTALE";
	case ENOENT:
		return "ENOENT";
	case EACCES:
		return "EACCES";
	case EPERM:
		return "EPERM";
	case EIO:
		return "EIO";
	case EOPNOTSUPP:
		return "EOPNOTSUPP";
	case EINVAL:
		return "EINVAL";
	default:
		return "E?";
	}
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int save(const char *path)
{
	struct file_handle *h = malloc(sizeof(*h) + MAX_BYTES);
	int mount_id;

	h->handle_bytes = MAX_BYTES;
	if (name_to_handle_at(AT_FDCWD, path, h, &mount_id, 0) < 0) {
		printf("%s\n", errname(errno));
		free(h);
		return 0;
	}
	printf("%08x%08x", h->handle_bytes, (unsigned)h->handle_type);
	for (unsigned i = 0; i < h->handle_bytes; i++)
		printf("%02x", h->f_handle[i]);
	printf("\n");
	free(h);
	return 0;
}

static int open_handle(const char *mount, const char *hex)
{
	/* one call per process: what it allocates lives until exit */
	static union {
		struct file_handle h;
		char space[sizeof(struct file_handle) + MAX_BYTES];
	} hu;
	struct file_handle *h = &hu.h;
	unsigned bytes, type;
	char link[64], buf[4200];
	struct stat st;
	int mfd, fd;
	ssize_t n;

	if (strlen(hex) < 16 || sscanf(hex, "%8x%8x", &bytes, &type) != 2 ||
	    bytes > MAX_BYTES || strlen(hex) != 16 + 2 * bytes)
		return 2;
	h->handle_bytes = bytes;
	h->handle_type = (int)type;
	for (unsigned i = 0; i < bytes; i++) {
		unsigned x;

		sscanf(hex + 16 + 2 * i, "%2x", &x);
		h->f_handle[i] = (unsigned char)x;
	}
	mfd = open(mount, O_RDONLY | O_DIRECTORY);
	if (mfd < 0)
		return 2;
	fd = open_by_handle_at(mfd, h, O_RDONLY);
	if (fd < 0) {
		printf("%s\n", errname(errno));
		return 0;
	}
	if (fstat(fd, &st) < 0)
		return 2;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = fdopendir(fd);
		struct dirent *e;
		char **v = NULL;
		size_t cnt = 0;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, buf, sizeof(buf) - 1);
		buf[n < 0 ? 0 : n] = '\0';
		printf("dir %s", buf);
		while (d && (e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			v = realloc(v, (cnt + 1) * sizeof(*v));
			v[cnt++] = strdup(e->d_name);
		}
		qsort(v, cnt, sizeof(*v), cmp);
		for (size_t i = 0; i < cnt; i++) {
			printf(" %s", v[i]);
			free(v[i]);
		}
		printf("\n");
		free(v);
		if (d)
			closedir(d);
		return 0;
	}
	n = read(fd, buf, 256);
	if (n < 0) {
		printf("read %s\n", errname(errno));
		return 0;
	}
	buf[n] = '\0';
	printf("file %s\n", buf);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "save"))
		return save(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "open"))
		return open_handle(argv[2], argv[3]);
	fprintf(stderr, "usage: fhandle save PATH | fhandle open MOUNT HEX\n");
	return 2;
}
