/*
 * rel_readdir.c - listings under churn, for tests/mount/rel_readdir.sh.
 *
 *   rel_readdir setup DIR NSTABLE
 *   rel_readdir run DIR NSTABLE SECONDS WRITERS READERS
 *   rel_readdir checklist NSTABLE FILE   (a find -maxdepth 1 -printf '%f\n'
 *                                          listing of DIR, one name a line)
 *   rel_readdir seek DIR NSTABLE         (after setup, DIR otherwise idle)
 *   rel_readdir pagecache DIR            (DIR empty, nothing else in it)
 *
 * setup creates NSTABLE "stable" entries in DIR: files and a few folders whose
 * names interleave with the churn names and hold bytes that sort before '/'
 * ("s0001", "s0001-", "s0001.x", "s0001 x"). run starts WRITERS processes that
 * create, rename and remove churn entries (same prefixes, so they land between
 * the stable ones in key order) and READERS processes that list DIR over and
 * over with getdents64 and a small buffer (many resumed readdir requests per
 * listing) and check every listing: no name twice, every stable name present.
 * checklist applies the same check to a listing made by find(1).
 * seek checks that a listing offset resumes after the same name, in the same
 * open and in another, after names were added before it and its own entry
 * was removed (see seek_test()). pagecache checks a reader whose last name
 * is removed while another open lists the folder again, when the kernel's
 * listing of it then ends exactly at a page's end (see pagecache_test()).
 *
 * Exit status 0 when every listing was right. Names are ASCII (one a line).
 */
#include <signal.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "rel_common.h"

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static const char *const suffix[] = {"", "-", ".x", " x"};

static void stable_name(char *out, size_t n, int i)
{
	snprintf(out, n, "s%04d%s", i / 4, suffix[i % 4]);
}

static int setup(const char *dir, int nstable)
{
	char p[4096], name[64];
	int i, fd;

	for (i = 0; i < nstable; i++) {
		stable_name(name, sizeof(name), i);
		snprintf(p, sizeof(p), "%s/%s", dir, name);
		if (i % 10 == 3) {
			if (mkdir(p, 0755)) {
				perror(p);
				return 1;
			}
			continue;
		}
		fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0 || write(fd, name, strlen(name)) < 0) {
			perror(p);
			return 1;
		}
		close(fd);
	}
	return 0;
}

static int writer(const char *dir, int nstable, uint64_t seed, double end)
{
	char a[4096], b[4096];
	unsigned long n = 0;

	while (rel_now() < end) {
		int k = (int)rel_below(&seed, (uint64_t)nstable / 4 + 1);
		int e;

		/* churn names sort right next to the stable ones */
		snprintf(a, sizeof(a), "%s/s%04d%s~%llu", dir, k,
			 suffix[rel_below(&seed, 4)],
			 (unsigned long long)rel_below(&seed, 8));
		snprintf(b, sizeof(b), "%s/s%04d%s+%llu", dir,
			 (int)rel_below(&seed, (uint64_t)nstable / 4 + 1),
			 suffix[rel_below(&seed, 4)],
			 (unsigned long long)rel_below(&seed, 8));
		switch (rel_below(&seed, 5)) {
		case 0: {
			int fd = open(a, O_CREAT | O_WRONLY, 0644);

			e = fd < 0 ? errno : 0;
			if (fd >= 0)
				close(fd);
			break;
		}
		case 1:
			e = mkdir(a, 0755) ? errno : 0;
			break;
		case 2:
			e = rename(a, b) ? errno : 0;
			break;
		case 3:
			e = unlink(a) ? errno : 0;
			if (e == EISDIR || e == EPERM)
				e = rmdir(a) ? errno : 0;
			break;
		default:
			e = unlink(b) ? errno : 0;
			if (e == EISDIR || e == EPERM)
				e = rmdir(b) ? errno : 0;
			break;
		}
		if (e && e != ENOENT && e != EEXIST && e != ENOTEMPTY &&
		    e != EISDIR && e != ENOTDIR) {
			fprintf(stderr, "writer: FAIL %s/%s: %s\n", a, b,
				strerror(e));
			return 1;
		}
		n++;
	}
	fprintf(stderr, "writer: %lu calls\n", n);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Checks one listing (names[0..n)): no duplicates, every stable name there. */
static int check_listing(char **names, size_t n, int nstable, const char *who)
{
	char name[64];
	size_t i;
	int j, bad = 0, missing = 0, first = 0, last = 0;

	qsort(names, n, sizeof(*names), cmp_str);
	for (i = 1; i < n; i++)
		if (!strcmp(names[i - 1], names[i]) && bad++ < 5)
			fprintf(stderr, "%s: FAIL '%s' listed twice\n", who,
				names[i]);
	for (j = 0; j < nstable; j++) {
		char *key = name;

		stable_name(name, sizeof(name), j);
		if (bsearch(&key, names, n, sizeof(*names), cmp_str))
			continue;
		if (!missing++)
			first = j;
		last = j;
		if (bad++ < 5)
			fprintf(stderr,
				"%s: FAIL stable '%s' missing (%zu "
				"names listed)\n",
				who, name, n);
	}
	if (missing) {
		/* a run from one name to the last is a listing that ended
		 * early; scattered ones, entries skipped */
		stable_name(name, sizeof(name), first);
		fprintf(stderr, "%s: %d of %d stable names missing, from '%s'",
			who, missing, nstable, name);
		stable_name(name, sizeof(name), last);
		fprintf(stderr, " to '%s'\n", name);
	}
	return bad ? 1 : 0;
}

/* The last READER_HISTORY getdents64 calls of a listing, for its report. */
#define READER_HISTORY 6

struct reader_call {
	double t;	  /* when it returned (CLOCK_MONOTONIC, as the kernel's
			  * "mono" trace clock) */
	long bytes;	  /* what it returned */
	int entries;	  /* names in it, "." and ".." not counted */
	int64_t last_off; /* d_off of its last entry */
};

/* Prints the failed listing's last calls (history[], @calls made in all). */
static void report_calls(const struct reader_call *history, unsigned long calls)
{
	unsigned long c;

	fprintf(stderr, "reader %d: its last getdents64 calls:\n",
		(int)getpid());
	for (c = calls > READER_HISTORY ? calls - READER_HISTORY : 0; c < calls;
	     c++) {
		const struct reader_call *h = &history[c % READER_HISTORY];

		fprintf(stderr,
			"  call %lu at %.6f: %ld bytes, %d names, last d_off "
			"%lld\n",
			c + 1, h->t, h->bytes, h->entries,
			(long long)h->last_off);
	}
}

static int reader(const char *dir, int nstable, uint64_t seed, double end)
{
	static char buf[65536];
	char **names = NULL;
	size_t cap = 0;
	unsigned long listings = 0;
	int rc = 0;

	while (!rc && rel_now() < end) {
		/* vary the buffer so resume points fall everywhere */
		size_t bsz = 200 + rel_below(&seed, 4000);
		size_t n = 0, i;
		unsigned long calls = 0;
		struct reader_call history[READER_HISTORY];
		const char *last_read = NULL;
		int fd = open(dir, O_RDONLY | O_DIRECTORY);

		if (fd < 0) {
			perror(dir);
			return 1;
		}
		for (;;) {
			long r = syscall(SYS_getdents64, fd, buf, bsz);
			struct reader_call *h =
			    &history[calls % READER_HISTORY];
			long off;

			calls++;
			h->t = rel_now();
			h->bytes = r;
			h->entries = 0;
			h->last_off = 0;
			if (r < 0) {
				fprintf(stderr, "reader: FAIL getdents64: %s\n",
					strerror(errno));
				rc = 1;
				break;
			}
			if (r == 0)
				break;
			for (off = 0; off < r;) {
				struct linux_dirent64 *d =
				    (struct linux_dirent64 *)(buf + off);

				off += d->d_reclen;
				if (!strcmp(d->d_name, ".") ||
				    !strcmp(d->d_name, ".."))
					continue;
				if (n == cap) {
					cap = cap ? 2 * cap : 1024;
					names = realloc(names,
							cap * sizeof(*names));
				}
				names[n++] = strdup(d->d_name);
				h->entries++;
				h->last_off = d->d_off;
			}
		}
		close(fd);
		if (!rc && n)
			last_read = names[n - 1];
		if (!rc && (rc = check_listing(names, n, nstable, "reader")))
			fprintf(stderr,
				"reader: the failed listing: %zu names in %lu "
				"getdents64 calls of %zu bytes, the last read "
				"'%s'\n",
				n, calls, bsz, last_read ? last_read : "");
		if (rc)
			report_calls(history, calls);
		for (i = 0; i < n; i++)
			free(names[i]);
		listings++;
	}
	free(names);
	fprintf(stderr, "reader: %lu listings %s\n", listings,
		rc ? "FAILED" : "ok");
	return rc;
}

static int checklist(int nstable, const char *file)
{
	struct rel_lines l = {0};
	int rc = rel_manifest_load(file, &l);

	if (rc) {
		fprintf(stderr, "%s: %s\n", file, strerror(-rc));
		return 1;
	}
	rc = check_listing(l.v, l.n, nstable, file);
	rel_lines_free(&l);
	return rc;
}

/*
 * Reads the entries of open folder @fd from its current offset to the end
 * (all of them if @max is 0, else at most @max) with a small buffer; appends
 * their names (not "." and "..") to @names and returns how many, or -1. Sets
 * *last_off to the d_off of the last entry read (its resume offset).
 */
static long read_names(int fd, char **names, size_t max, int64_t *last_off)
{
	char buf[300];
	size_t n = 0;

	for (;;) {
		long r, off;

		r = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (r < 0) {
			fprintf(stderr, "FAIL getdents64: %s\n",
				strerror(errno));
			return -1;
		}
		if (r == 0)
			return (long)n;
		for (off = 0; off < r;) {
			struct linux_dirent64 *d =
			    (struct linux_dirent64 *)(buf + off);

			off += d->d_reclen;
			if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
				continue;
			names[n++] = strdup(d->d_name);
			*last_off = d->d_off;
			if (max && n == max) {
				/* stop right after it, as telldir() would */
				if (lseek(fd, d->d_off, SEEK_SET) < 0)
					return -1;
				return (long)n;
			}
		}
	}
}

/* names[0..n) in order, equal to want[0..nw)? Prints the first difference. */
static int same_names(const char *who, char **names, long n, char **want,
		      long nw)
{
	long i;

	for (i = 0; i < n && i < nw; i++)
		if (strcmp(names[i], want[i]))
			break;
	if (i == n && i == nw)
		return 0;
	fprintf(stderr, "FAIL %s: entry %ld is '%s', expected '%s'\n", who, i,
		i < n ? names[i] : "(end)", i < nw ? want[i] : "(end)");
	return 1;
}

/*
 * seek DIR NSTABLE (after setup, nothing else changing DIR): for several k,
 * reads the first k children with one open, remembers the offset after the
 * k-th, then adds three names that sort before it and removes the k-th
 * itself. Resuming at that offset, with the same open and with a second
 * open, must list exactly the names that sort after the k-th: offsets stand
 * for names, not positions. Then it puts the folder back.
 */
static int seek_test(const char *dir, int nstable)
{
	static char *first[4096], *rest[4096], *all[4096];
	char p[4096], kth[64];
	int k, j, fd1 = -1, fd2 = -1, bad = 0;
	bool was_dir;

	for (k = 1; k < nstable && !bad; k += nstable / 7 + 1) {
		int64_t off = 0, o2;
		long nf, na, nr, skip, i;

		fd1 = open(dir, O_RDONLY | O_DIRECTORY);
		nf = fd1 < 0 ? -1 : read_names(fd1, first, (size_t)k, &off);
		if (nf != k) {
			fprintf(stderr, "seek: FAIL reading %d entries\n", k);
			bad = 1;
			break;
		}
		snprintf(kth, sizeof(kth), "%s", first[k - 1]);
		for (j = 0; j < 3; j++) {
			snprintf(p, sizeof(p), "%s/a%d-%d", dir, k, j);
			if (mknod(p, S_IFREG | 0644, 0))
				bad = 1;
		}
		snprintf(p, sizeof(p), "%s/%s", dir, kth);
		was_dir = false;
		if (!bad && unlink(p) && errno == EISDIR)
			was_dir = !rmdir(p);
		if (bad || !access(p, F_OK)) {
			fprintf(stderr, "seek: FAIL changing %s\n", dir);
			bad = 1;
			break;
		}
		/* what must follow: every name now there that sorts after */
		fd2 = open(dir, O_RDONLY | O_DIRECTORY);
		na = fd2 < 0 ? -1 : read_names(fd2, all, 0, &o2);
		if (na < 0) {
			bad = 1;
			break;
		}
		for (skip = 0; skip < na && strcmp(all[skip], kth) < 0; skip++)
			;
		/* the same open, then a second one, at the remembered offset */
		nr = read_names(fd1, rest, 0, &o2);
		bad |= nr < 0 || same_names("seek, same open", rest, nr,
					    all + skip, na - skip);
		for (i = 0; i < nr; i++)
			free(rest[i]);
		if (lseek(fd2, off, SEEK_SET) < 0)
			bad = 1;
		nr = read_names(fd2, rest, 0, &o2);
		bad |= nr < 0 || same_names("seek, second open", rest, nr,
					    all + skip, na - skip);
		for (i = 0; i < nr; i++)
			free(rest[i]);
		close(fd1);
		close(fd2);
		fd1 = fd2 = -1;
		for (i = 0; i < na; i++)
			free(all[i]);
		for (i = 0; i < nf; i++)
			free(first[i]);
		/* put the folder back as setup made it */
		for (j = 0; j < 3; j++) {
			snprintf(p, sizeof(p), "%s/a%d-%d", dir, k, j);
			unlink(p);
		}
		snprintf(p, sizeof(p), "%s/%s", dir, kth);
		if (was_dir ? mkdir(p, 0755) : mknod(p, S_IFREG | 0644, 0))
			bad = 1;
	}
	if (fd1 >= 0)
		close(fd1);
	if (fd2 >= 0)
		close(fd2);
	printf("rel_readdir: seek %s\n", bad ? "FAILED" : "ok");
	return bad;
}

/*
 * pagecache DIR: the kernel keeps a folder's listing in pages, a cached entry
 * 24 bytes and its name rounded up to 8 ("." and ".." and 8-byte names: 32
 * bytes, 128 to a 4 KiB page). For N = 127 and 255 names, one open reads the
 * first two names (and stops after the second, as telldir() would), the
 * second name is removed, and a second open lists the folder from the start:
 * N + 1 entries, a listing that ends exactly at a page's end if the kernel
 * keeps it again. The first open must then go on with every name after the
 * removed one (Linux 6.18 ended it there when the second open refilled the
 * kernel's listing: the reader's offset is not in it, and its end-of-listing
 * test at a page's end comes before the fallback to asking the daemon).
 */
static int pagecache_test(const char *dir)
{
	static const int sizes[] = {127, 255};
	static char *first[4], *rest[512], *all[512];
	char sub[4096], p[4096 + 16];
	int64_t off = 0, o2;
	long nf = 0, na = 0, nr = 0, i;
	int s, bad = 0, fd1, fd2;

	for (s = 0; s < 2 && !bad; s++) {
		int n = sizes[s];

		snprintf(sub, sizeof(sub), "%s/p%d", dir, n);
		bad = mkdir(sub, 0755);
		for (i = 0; i < n && !bad; i++) {
			snprintf(p, sizeof(p), "%s/p%07ld", sub, i);
			bad = mknod(p, S_IFREG | 0644, 0);
		}
		/* a first listing, kept by the kernel */
		fd2 = open(sub, O_RDONLY | O_DIRECTORY);
		na = bad || fd2 < 0 ? -1 : read_names(fd2, all, 0, &o2);
		for (i = 0; i < na; i++)
			free(all[i]);
		if (fd2 >= 0)
			close(fd2);
		fd1 = open(sub, O_RDONLY | O_DIRECTORY);
		nf = na != n || fd1 < 0 ? -1 : read_names(fd1, first, 2, &off);
		snprintf(p, sizeof(p), "%s/p%07d", sub, 1);
		if (nf != 2 || unlink(p)) {
			fprintf(stderr, "pagecache: FAIL setting up %s\n", sub);
			if (fd1 >= 0)
				close(fd1);
			bad = 1;
			break;
		}
		fd2 = open(sub, O_RDONLY | O_DIRECTORY);
		na = fd2 < 0 ? -1 : read_names(fd2, all, 0, &o2);
		if (fd2 >= 0)
			close(fd2);
		nr = read_names(fd1, rest, 0, &o2);
		close(fd1);
		if (na != n - 1 || nr < 0) {
			fprintf(stderr, "pagecache: FAIL listing %s\n", sub);
			bad = 1;
		} else {
			/* every name there now but the first */
			bad = same_names(sub, rest, nr, all + 1, na - 1);
		}
		for (i = 0; i < nr; i++)
			free(rest[i]);
		for (i = 0; i < na; i++)
			free(all[i]);
		for (i = 0; i < nf; i++)
			free(first[i]);
	}
	printf("rel_readdir: pagecache %s\n", bad ? "FAILED" : "ok");
	return bad;
}

int main(int argc, char **argv)
{
	int nstable, nw, nr, i, failed = 0;
	double end;
	pid_t pid;

	if (argc == 4 && !strcmp(argv[1], "setup"))
		return setup(argv[2], atoi(argv[3]));
	if (argc == 4 && !strcmp(argv[1], "checklist"))
		return checklist(atoi(argv[2]), argv[3]);
	if (argc == 4 && !strcmp(argv[1], "seek"))
		return seek_test(argv[2], atoi(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "pagecache"))
		return pagecache_test(argv[2]);
	if (argc != 7 || strcmp(argv[1], "run")) {
		fprintf(stderr, "usage: rel_readdir setup DIR NSTABLE\n"
				"       rel_readdir run DIR NSTABLE SECONDS "
				"WRITERS READERS\n"
				"       rel_readdir checklist NSTABLE FILE\n"
				"       rel_readdir seek DIR NSTABLE\n"
				"       rel_readdir pagecache DIR\n");
		return 2;
	}
	nstable = atoi(argv[3]);
	end = rel_now() + atof(argv[4]);
	nw = atoi(argv[5]);
	nr = atoi(argv[6]);
	for (i = 0; i < nw + nr; i++) {
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			uint64_t seed =
			    0x9e3779b97f4a7c15ULL * (uint64_t)(i + 1);

			_exit(i < nw ? writer(argv[2], nstable, seed, end)
				     : reader(argv[2], nstable, seed, end));
		}
	}
	for (i = 0; i < nw + nr; i++) {
		int status;

		if (wait(&status) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			failed++;
	}
	printf("rel_readdir: %d of %d processes failed\n", failed, nw + nr);
	return failed ? 1 : 0;
}
