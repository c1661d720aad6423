/*
 * rel_common.h - small helpers shared by the reliability test programs in
 * tests/helpers/ (header-only: each helper is one executable).
 *
 * Provides a seeded xorshift generator, FNV-1a hashing, a monotonic clock,
 * the escaping used in manifests (bytes outside 0x21..0x7e and '%' become
 * %XX, so any name fits on one line) and a manifest of a directory tree: one
 * sorted line per entry, "TYPE PATH ..." with its content hash, so two trees
 * (or a tree and a model of it) compare as two sorted lists of lines.
 *
 * Limits: a manifest is built in memory (fine for the few thousand entries
 * the tests create); files are hashed whole.
 */
#ifndef REL_COMMON_H
#define REL_COMMON_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t rel_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

static inline uint64_t rel_below(uint64_t *s, uint64_t n)
{
	return n ? rel_rand(s) % n : 0;
}

static inline uint64_t rel_fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= c[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}
#define REL_FNV_INIT 0xcbf29ce484222325ULL

static inline double rel_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * true if the mount holding @dir is gone (its daemon was killed): a stat of
 * @dir fails with ENOTCONN or ECONNABORTED, or ENOENT once it was lazily
 * unmounted. Used to tell an EIO caused by the kill (the kernel reports a
 * failed writeback of cached pages as EIO) from an EIO of a live daemon.
 */
static inline int rel_mount_gone(const char *dir)
{
	struct stat st;

	if (stat(dir, &st) == 0)
		return 0;
	return errno == ENOTCONN || errno == ECONNABORTED || errno == ENOENT;
}

/* Appends the escaped form of @s to @out (size @n, always NUL-terminated). */
static inline void rel_escape(char *out, size_t n, const char *s)
{
	size_t o = strlen(out);

	for (; *s && o + 4 < n; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x21 || c > 0x7e || c == '%')
			o += snprintf(out + o, n - o, "%%%02X", c);
		else
			out[o++] = (char)c;
	}
	out[o] = '\0';
}

/* A growable list of malloc'd lines. */
struct rel_lines {
	char **v;
	size_t n, cap;
};

static inline void rel_lines_add(struct rel_lines *l, const char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			abort();
	}
	l->v[l->n] = strdup(s);
	if (!l->v[l->n])
		abort();
	l->n++;
}

static inline int rel_lines_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static inline void rel_lines_sort(struct rel_lines *l)
{
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), rel_lines_cmp);
}

static inline void rel_lines_free(struct rel_lines *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

/*
 * Compares two sorted line lists; prints up to 20 differences to stderr
 * prefixed by @who. Returns the number of differing lines.
 */
static inline size_t rel_lines_diff(const char *who, struct rel_lines *want,
				    struct rel_lines *got)
{
	size_t i = 0, j = 0, bad = 0;

	while (i < want->n || j < got->n) {
		int c;

		if (i == want->n)
			c = 1;
		else if (j == got->n)
			c = -1;
		else
			c = strcmp(want->v[i], got->v[j]);
		if (c == 0) {
			i++;
			j++;
			continue;
		}
		if (bad++ < 20)
			fprintf(stderr, "%s: %s %s\n", who,
				c < 0 ? "missing:" : "unexpected:",
				c < 0 ? want->v[i] : got->v[j]);
		if (c < 0)
			i++;
		else
			j++;
	}
	return bad;
}

/* Hashes the whole file at @path; -errno on failure. */
static inline int rel_hash_file(const char *path, uint64_t *h, uint64_t *size)
{
	char buf[65536];
	ssize_t r;
	int fd;

	*h = REL_FNV_INIT;
	*size = 0;
	fd = open(path, O_RDONLY | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	while ((r = read(fd, buf, sizeof(buf))) > 0) {
		*h = rel_fnv(*h, buf, (size_t)r);
		*size += (uint64_t)r;
	}
	if (r < 0) {
		r = -errno;
		close(fd);
		return (int)r;
	}
	close(fd);
	return 0;
}

/*
 * Adds one manifest line per entry below @dir (not @dir itself) to @l, paths
 * relative to @dir with a leading "/" (@rel is the current relative prefix,
 * "" at the top). Lines:
 *   d PATH MODE NLINK
 *   f PATH MODE NLINK SIZE HASH
 *   l PATH TARGET
 * Returns 0, or -errno of the first failing call (and prints it).
 */
static inline int rel_manifest_tree(const char *dir, const char *rel,
				    struct rel_lines *l)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		rc = -errno;
		fprintf(stderr, "opendir %s: %s\n", dir, strerror(errno));
		return rc;
	}
	while ((errno = 0, de = readdir(d))) {
		char path[8192], rp[8192], line[16384] = "";
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		snprintf(rp, sizeof(rp), "%s/%s", rel, de->d_name);
		if (lstat(path, &st)) {
			rc = -errno;
			fprintf(stderr, "lstat %s: %s\n", path,
				strerror(errno));
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			strcpy(line, "d ");
			rel_escape(line, sizeof(line), rp);
			snprintf(line + strlen(line),
				 sizeof(line) - strlen(line), " %o %lu",
				 (unsigned)(st.st_mode & 07777),
				 (unsigned long)st.st_nlink);
			rel_lines_add(l, line);
			rc = rel_manifest_tree(path, rp, l);
			if (rc)
				break;
		} else if (S_ISREG(st.st_mode)) {
			uint64_t h, size;

			rc = rel_hash_file(path, &h, &size);
			if (rc) {
				fprintf(stderr, "read %s: %s\n", path,
					strerror(-rc));
				break;
			}
			if (size != (uint64_t)st.st_size)
				fprintf(stderr, "%s: st_size %lld, read %llu\n",
					path, (long long)st.st_size,
					(unsigned long long)size);
			strcpy(line, "f ");
			rel_escape(line, sizeof(line), rp);
			snprintf(line + strlen(line),
				 sizeof(line) - strlen(line),
				 " %o %lu %llu %016llx",
				 (unsigned)(st.st_mode & 07777),
				 (unsigned long)st.st_nlink,
				 (unsigned long long)st.st_size,
				 (unsigned long long)h);
			rel_lines_add(l, line);
		} else if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t n = readlink(path, target, sizeof(target) - 1);

			if (n < 0) {
				rc = -errno;
				fprintf(stderr, "readlink %s: %s\n", path,
					strerror(errno));
				break;
			}
			target[n] = '\0';
			strcpy(line, "l ");
			rel_escape(line, sizeof(line), rp);
			strcat(line, " ");
			rel_escape(line, sizeof(line), target);
			rel_lines_add(l, line);
		} else {
			strcpy(line, "? ");
			rel_escape(line, sizeof(line), rp);
			rel_lines_add(l, line);
		}
	}
	if (!rc && errno) {
		rc = -errno;
		fprintf(stderr, "readdir %s: %s\n", dir, strerror(errno));
	}
	closedir(d);
	return rc;
}

/* Reads a manifest file (one line each) into @l, sorted. -errno on failure. */
static inline int rel_manifest_load(const char *file, struct rel_lines *l)
{
	char line[16384];
	FILE *f = fopen(file, "r");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0])
			rel_lines_add(l, line);
	}
	fclose(f);
	rel_lines_sort(l);
	return 0;
}

#endif
