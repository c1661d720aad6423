/*
 * bench_content.c - pathfs-bench content: a drive full of content keeps the
 * tree fast, and small in-place writes against ext4 (the host) and tmpfs.
 *
 *  - churn: create (100 bytes) + stat + unlink of --content-files (5,000) on an
 *    empty drive and on a drive holding one --big-mb file of random data
 *    (4096), both mounted at once and measured in alternation; the ratio
 *    full/empty is the result;
 *  - pwrite: --pwrites random 4 KiB-aligned 4 KiB pwrites into a 256 MiB file
 *    (median latency per write), without and with an fsync after each (a
 *    tenth as many), on pathfs (the empty drive), the host folder and tmpfs
 *    in alternation;
 *  - sqlite: the sqlite3 CLI inserts --sqlite-rows rows (200,000) in
 *    transactions of 1,000, with the rollback journal and with WAL, then
 *    PRAGMA integrity_check must answer ok; wall time per target.
 *
 * The stores and the host folder are on an ext4 image the bench formats
 * afresh (ext4_image_in), or the host folder is --host (the stores then
 * in the temp dir).
 *
 * Limits: the big file is written once (its time is reported, not repeated);
 * sqlite runs once per target and mode unless --runs asks for more; the
 * machine's load is the caller's to note.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define FILE_MB 256

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* Writes @mb MiB of random bytes to @path, fsync'd; seconds or NaN. */
static double write_random(const char *path, uint64_t mb)
{
	uint64_t *buf = malloc(1 << 20);
	double t0 = now_s(), t;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || !buf) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NAN;
	}
	for (uint64_t i = 0; i < mb; i++) {
		for (size_t j = 0; j < (1 << 20) / 8; j++)
			buf[j] = rng();
		if (write(fd, buf, 1 << 20) != 1 << 20) {
			close(fd);
			free(buf);
			return NAN;
		}
	}
	t = fsync(fd) == 0 ? now_s() - t0 : NAN;
	close(fd);
	free(buf);
	return t;
}

/* create + stat + unlink of @n files in a fresh folder under @dir. */
static double churn(const char *dir, uint64_t n)
{
	char d[4200], p[4300];
	char data[100];
	struct stat st;
	double t0;

	memset(data, 'x', sizeof(data));
	snprintf(d, sizeof(d), "%s/churn", dir);
	if (mkdir(d, 0755) < 0 && errno != EEXIST)
		return NAN;
	t0 = now_s();
	for (uint64_t i = 0; i < n; i++) {
		int fd;

		snprintf(p, sizeof(p), "%s/f%06llu", d, (unsigned long long)i);
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || write(fd, data, sizeof(data)) != sizeof(data))
			return NAN;
		close(fd);
	}
	for (uint64_t i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/f%06llu", d, (unsigned long long)i);
		if (stat(p, &st) < 0)
			return NAN;
	}
	for (uint64_t i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/f%06llu", d, (unsigned long long)i);
		if (unlink(p) < 0)
			return NAN;
	}
	return now_s() - t0;
}

/* Median latency of @n random 4 KiB pwrites into @path (FILE_MB MiB), each
 * followed by an fsync if @sync. */
static double pwrite_median(const char *path, uint64_t n, bool sync)
{
	double *lat = calloc(n ? n : 1, sizeof(double)), m;
	char buf[4096];
	int fd = open(path, O_WRONLY);

	if (fd < 0 || !lat) {
		free(lat);
		if (fd >= 0)
			close(fd);
		return NAN;
	}
	for (size_t j = 0; j < sizeof(buf); j++)
		buf[j] = (char)rng();
	for (uint64_t i = 0; i < n; i++) {
		off_t off = (off_t)(rng() % ((uint64_t)FILE_MB << 8)) << 12;
		double t0 = now_s();

		if (pwrite(fd, buf, sizeof(buf), off) != sizeof(buf) ||
		    (sync && fsync(fd) < 0)) {
			lat[i] = NAN;
			continue;
		}
		lat[i] = now_s() - t0;
	}
	close(fd);
	m = median(lat, n);
	free(lat);
	return m;
}

/* Runs sqlite3 on @db with the script @sql; seconds, NaN if it failed or
 * the integrity check did not answer ok. */
static double sqlite_run(const char *db, const char *sql)
{
	char out[64] = "";
	char *argv[] = {(char *)"sqlite3", (char *)db,
			(char *)"PRAGMA integrity_check;", NULL};
	double t0 = now_s(), t, ct;

	unlink(db);
	if (run_sh("sqlite3 '%s' < '%s' >/dev/null", db, sql))
		return NAN;
	t = now_s() - t0;
	if (run_cmd(argv, &ct, NULL, out, sizeof(out)) ||
	    strncmp(out, "ok", 2) != 0) {
		progress("sqlite: integrity_check on %s: %s", db, out);
		return NAN;
	}
	run_sh("rm -f '%s' '%s-journal' '%s-wal' '%s-shm'", db, db, db, db);
	return t;
}

static int write_sql(const char *path, const char *mode, uint64_t rows)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f, "PRAGMA journal_mode=%s;\n", mode);
	fprintf(f, "CREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT, b INT);\n");
	for (uint64_t i = 0; i < rows; i++) {
		if (i % 1000 == 0)
			fprintf(f, "BEGIN;\n");
		fprintf(f,
			"INSERT INTO t(a, b) VALUES('row %llu of the bench', "
			"%llu);\n",
			(unsigned long long)i, (unsigned long long)(i * 7919));
		if (i % 1000 == 999 || i + 1 == rows)
			fprintf(f, "COMMIT;\n");
	}
	return fclose(f) ? -errno : 0;
}

/* @dir/@name into @buf (a function, so the compiler checks @len only) */
static void in_dir(char *buf, size_t len, const char *dir, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

enum { T_PFS, T_HOST, T_TMPFS, NT };
static const char *const tname[NT] = {"pathfs", "host", "tmpfs"};

int bench_content(const struct bench_opts *o)
{
	char base[4096], empty[4200], full[4200], s1[4300], s2[4300];
	char log1[4300], log2[4300], hostd[4300], sql[2][4300];
	char ref[4300];
	const char *dirs[NT];
	struct fsmount m1 = {0}, m2 = {0};
	char *pathfs = find_prog(o->pathfs, "pathfs");
	unsigned runs = o->runs ? o->runs : 3;
	uint64_t n = o->content_files ? o->content_files : 5000;
	uint64_t big = o->big_mb ? o->big_mb : 4096;
	uint64_t npw = o->pwrites ? o->pwrites : 2000;
	uint64_t rows = o->sqlite_rows ? o->sqlite_rows : 200000;
	double *ce = calloc(runs, sizeof(double));
	double *cf = calloc(runs, sizeof(double));
	double pw[2][NT][16], sq[2][NT][16];
	char b1[32], b2[32], b3[32], b4[32];
	int rc;

	base[0] = ref[0] = '\0';
	if (!pathfs || !ce || !cf) {
		rc = -ENOENT;
		goto out;
	}
	if (runs > 16)
		runs = 16;
	rc = make_tmpdir(o, base, sizeof(base));
	if (rc)
		goto out;
	if (!o->host) {
		/* the stores and the host folder on a fresh ext4 */
		rc = ext4_image_in(base, ref, sizeof(ref),
				   2 * (big + 3 * FILE_MB) + 2048,
				   2 * n + 65536);
		if (rc)
			goto out;
	}
	snprintf(empty, sizeof(empty), "%s/empty", base);
	snprintf(full, sizeof(full), "%s/full", base);
	snprintf(s1, sizeof(s1), "%s/store-empty", ref[0] ? ref : base);
	snprintf(s2, sizeof(s2), "%s/store-full", ref[0] ? ref : base);
	snprintf(log1, sizeof(log1), "%s/empty.log", base);
	snprintf(log2, sizeof(log2), "%s/full.log", base);
	mkdir(empty, 0755);
	mkdir(full, 0755);
	{
		char *a1[] = {pathfs, (char *)"-f", s1, empty, NULL};
		char *a2[] = {pathfs, (char *)"-f", s2, full, NULL};

		rc = fs_mount(&m1, a1, empty, log1);
		if (rc == 0)
			rc = fs_mount(&m2, a2, full, log2);
		if (rc)
			goto out;
	}

	/* churn, empty against full */
	{
		char p[4300];
		double t;

		snprintf(p, sizeof(p), "%s/big", full);
		progress("content: writing %llu MiB of random data",
			 (unsigned long long)big);
		t = write_random(p, big);
		res_add("content", "pathfs", "big_write_s", t, "s");
		progress("content: big file written in %s",
			 fmt_secs(b1, sizeof(b1), t));
	}
	for (unsigned r = 0; r < runs; r++) {
		ce[r] = churn(empty, n);
		cf[r] = churn(full, n);
		progress("content: churn run %u: empty %s, full %s", r + 1,
			 fmt_secs(b1, sizeof(b1), ce[r]),
			 fmt_secs(b2, sizeof(b2), cf[r]));
	}

	/* pwrite and sqlite on every target */
	dirs[T_PFS] = empty;
	if (o->host)
		snprintf(hostd, sizeof(hostd), "%s", o->host);
	else
		snprintf(hostd, sizeof(hostd), "%s/host", ref);
	mkdir(hostd, 0755);
	dirs[T_HOST] = hostd;
	dirs[T_TMPFS] =
	    o->tmpfs && strcmp(o->tmpfs, "none") ? o->tmpfs : "/dev/shm";
	for (int t = 0; t < NT; t++) {
		char p[4400];

		in_dir(p, sizeof(p), dirs[t], "pw.bin");
		if (isnan(write_random(p, FILE_MB)))
			progress("content: cannot write %s", p);
	}
	for (unsigned r = 0; r < runs; r++)
		for (int s = 0; s < 2; s++)
			for (int t = 0; t < NT; t++) {
				char p[4400];

				in_dir(p, sizeof(p), dirs[t], "pw.bin");
				pw[s][t][r] =
				    pwrite_median(p, s ? npw / 10 : npw, s);
			}
	snprintf(sql[0], sizeof(sql[0]), "%s/delete.sql", base);
	snprintf(sql[1], sizeof(sql[1]), "%s/wal.sql", base);
	write_sql(sql[0], "DELETE", rows);
	write_sql(sql[1], "WAL", rows);
	for (unsigned r = 0; r < runs; r++)
		for (int s = 0; s < 2; s++)
			for (int t = 0; t < NT; t++) {
				char db[4400];

				in_dir(db, sizeof(db), dirs[t], "bench.db");
				sq[s][t][r] = sqlite_run(db, sql[s]);
				progress("content: sqlite %s on %s: %s",
					 s ? "WAL" : "rollback", tname[t],
					 fmt_secs(b1, sizeof(b1), sq[s][t][r]));
			}
	for (int t = 0; t < NT; t++)
		run_sh("rm -f '%s/pw.bin'", dirs[t]);

	/* the table */
	{
		double me = median(ce, runs), mf = median(cf, runs);

		printf("\ncontent: %u runs, alternated\n", runs);
		printf("  churn %llu files (create+stat+unlink): empty %s, "
		       "with %llu MiB: %s, ratio %s\n",
		       (unsigned long long)n, fmt_secs(b1, sizeof(b1), me),
		       (unsigned long long)big, fmt_secs(b2, sizeof(b2), mf),
		       fmt_ratio(b3, sizeof(b3), mf / me));
		res_add("content", "pathfs", "churn_empty_s", me, "s");
		res_add("content", "pathfs", "churn_full_s", mf, "s");
		res_plot("content", "full/empty", "churn", mf / me);
	}
	for (int s = 0; s < 2; s++) {
		const char *what = s ? "pwrite4k_fsync" : "pwrite4k";
		double mt[NT];

		for (int t = 0; t < NT; t++) {
			mt[t] = median(pw[s][t], runs);
			res_add("content", tname[t], what, mt[t] * 1e6, "us");
		}
		printf("  4 KiB pwrite%s median: pathfs %.1f us, host %.1f "
		       "us (%s), tmpfs %.1f us (%s)\n",
		       s ? "+fsync" : "", mt[T_PFS] * 1e6, mt[T_HOST] * 1e6,
		       fmt_ratio(b1, sizeof(b1), mt[T_PFS] / mt[T_HOST]),
		       mt[T_TMPFS] * 1e6,
		       fmt_ratio(b2, sizeof(b2), mt[T_PFS] / mt[T_TMPFS]));
		res_plot("content", "pathfs/host", what,
			 mt[T_PFS] / mt[T_HOST]);
	}
	for (int s = 0; s < 2; s++) {
		const char *what = s ? "sqlite_wal_s" : "sqlite_rollback_s";
		double mt[NT];

		for (int t = 0; t < NT; t++) {
			mt[t] = median(sq[s][t], runs);
			res_add("content", tname[t], what, mt[t], "s");
		}
		printf("  sqlite %llu rows, %s: pathfs %s, host %s (%s), "
		       "tmpfs %s\n",
		       (unsigned long long)rows, s ? "WAL" : "rollback",
		       fmt_secs(b1, sizeof(b1), mt[T_PFS]),
		       fmt_secs(b2, sizeof(b2), mt[T_HOST]),
		       fmt_ratio(b3, sizeof(b3), mt[T_PFS] / mt[T_HOST]),
		       fmt_secs(b4, sizeof(b4), mt[T_TMPFS]));
		res_plot("content", "pathfs/host", what,
			 mt[T_PFS] / mt[T_HOST]);
	}
out:
	fs_umount(&m1);
	fs_umount(&m2);
	if (ref[0] && ref_umount(ref))
		rc = rc ? rc : -EIO;
	if (!o->keep && base[0])
		run_sh("rm -rf '%s'", base);
	free(pathfs);
	free(ce);
	free(cf);
	return rc;
}
