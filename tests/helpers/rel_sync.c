/*
 * rel_sync.c - the durable half of the kill -9 workload (rel_kill9.sh).
 *
 *   rel_sync write DIR LOG TAG     until killed or disconnected
 *   rel_sync check DIR LOG
 *
 * write creates DIR/TAG-<n> files of random sizes (0 to 300 KiB, written in
 * random pieces, some rewritten and truncated before the sync), fsyncs each,
 * and only after fsync returned appends "NAME SIZE HASH" to LOG (on the host
 * filesystem; O_APPEND, one write per line). A synced file is never touched
 * again. It stops quietly when the mount goes away (ENOTCONN, ECONNABORTED,
 * ENOENT, or EIO when the mount is found gone: with the writeback cache the
 * kernel reports cached pages it could not write back as EIO) or at SIGKILL.
 *
 * check reads every line of LOG and compares DIR/NAME byte for byte (size and
 * FNV-1a hash). Exit status 0 when every synced file is intact.
 */
#include <stdbool.h>

#include "rel_common.h"

static bool gone(int e)
{
	return e == ENOTCONN || e == ECONNABORTED || e == ENOENT;
}

static int write_main(const char *dir, const char *logfile, const char *tag)
{
	static unsigned char buf[300 * 1024];
	uint64_t seed =
	    (uint64_t)getpid() * 2654435761ULL + (uint64_t)time(NULL);
	int logfd = open(logfile, O_WRONLY | O_CREAT | O_APPEND, 0644);
	unsigned long n;

	if (logfd < 0) {
		perror(logfile);
		return 1;
	}
	for (n = 0;; n++) {
		char path[4096], line[4200];
		size_t size = rel_below(&seed, sizeof(buf) + 1), off = 0, i;
		int fd, e = 0;

		for (i = 0; i < size; i++) {
			if (i % 8 == 0)
				rel_rand(&seed);
			buf[i] = (unsigned char)(seed >> (8 * (i % 8)));
		}
		snprintf(path, sizeof(path), "%s/%s-%lu", dir, tag, n);
		fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0) {
			e = errno;
			goto fail;
		}
		/*
		 * some garbage first (bytes from the wrong place, reaching
		 * past the final size), overwritten and cut back below
		 */
		if (rel_below(&seed, 3) == 0 &&
		    pwrite(fd, buf, size / 2 + 1000, 5000) < 0) {
			e = errno;
			goto fail;
		}
		while (off < size) {
			size_t len = 1 + rel_below(&seed, 70000);
			ssize_t r;

			if (len > size - off)
				len = size - off;
			r = pwrite(fd, buf + off, len, (off_t)off);
			if (r < 0) {
				e = errno;
				goto fail;
			}
			off += (size_t)r;
		}
		if (ftruncate(fd, (off_t)size) || fsync(fd)) {
			e = errno;
			goto fail;
		}
		snprintf(line, sizeof(line), "%s-%lu %zu %016llx\n", tag, n,
			 size,
			 (unsigned long long)rel_fnv(REL_FNV_INIT, buf, size));
		if (write(logfd, line, strlen(line)) < 0) {
			perror(logfile);
			return 1;
		}
		close(fd);
		continue;
	fail:
		if (gone(e) || (e == EIO && rel_mount_gone(dir)))
			return 0;
		fprintf(stderr, "rel_sync: FAIL %s: %s\n", path, strerror(e));
		return 1;
	}
}

static int check_main(const char *dir, const char *logfile)
{
	char line[4200];
	unsigned long ok = 0, bad = 0;
	FILE *f = fopen(logfile, "r");

	if (!f) {
		/* nothing was synced yet: nothing to check */
		return errno == ENOENT ? 0 : 1;
	}
	while (fgets(line, sizeof(line), f)) {
		char name[4096], path[8300];
		unsigned long long size, hash, gsize;
		uint64_t h;
		int rc;

		if (sscanf(line, "%4095s %llu %llx", name, &size, &hash) != 3)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		rc = rel_hash_file(path, &h, (uint64_t *)&gsize);
		if (rc || gsize != size || h != hash) {
			if (bad++ < 10)
				fprintf(stderr,
					"rel_sync: FAIL %s: %s (size %llu, "
					"synced %llu)\n",
					name,
					rc ? strerror(-rc) : "content differs",
					rc ? 0 : gsize, size);
		} else {
			ok++;
		}
	}
	fclose(f);
	printf("rel_sync: %lu synced files intact, %lu damaged\n", ok, bad);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "write"))
		return write_main(argv[2], argv[3], argv[4]);
	if (argc == 4 && !strcmp(argv[1], "check"))
		return check_main(argv[2], argv[3]);
	fprintf(stderr, "usage: rel_sync write DIR LOG TAG\n"
			"       rel_sync check DIR LOG\n");
	return 2;
}
