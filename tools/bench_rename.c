/*
 * bench_rename.c - `pathfs-bench rename`: what renaming a folder costs
 * against the size of the branch under it.
 *
 * For each size N of --sizes, a folder /rN holding about N files spread
 * evenly over ceil(N / 1000) sub-folders is built in-process in one fresh store. Then:
 *  - in-process: tree_rename() of the folder, back and forth --runs times;
 *    the rewrite rate is entries / seconds. After each rename the whole
 *    branch must be at the target (one subtree scan counts it) and nothing
 *    left at the source, and no journal record may remain;
 *  - through the mount: pathfs is mounted on the same store and `mv` moves
 *    the folder back and forth, alternating with `mv` of the same branch on a
 *    host folder (built with mkdir/open, for N up to --host-max; the host's mv
 *    is one directory-entry change whatever N is).
 *
 * The store and the host's branches are on an ext4 image the bench formats
 * afresh (ext4_image_in), or in --host (a fresh folder in it; the store
 * then in the temp dir).
 *
 * Limits: the store is built in-process, so the mount sees a store that was
 * never walked through the kernel (no cached dentries under the branch); the
 * 1M-entry branch takes a while to build (about 1M tree_mknode calls).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"

static int mkfile(void *ctx, const char *path, bool dir)
{
	int fd;

	(void)ctx;
	if (dir)
		return mkdir(path, 0755) ? -errno : 0;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	return close(fd) ? -errno : 0;
}

/* In-process part: returns the median seconds of a rename of /rN. */
static int inproc(const struct bench_opts *o, struct tree *t, uint64_t n,
		  uint64_t entries, double *med)
{
	char a[64], b[64];
	double v[64];
	unsigned r;
	uint64_t seen;
	struct tree_journal_entry *je = NULL;
	size_t nj = 0;
	struct tree_attr at;
	int rc = 0;

	snprintf(a, sizeof(a), "/r%llu", (unsigned long long)n);
	snprintf(b, sizeof(b), "/r%llu.moved", (unsigned long long)n);
	for (r = 0; r < o->runs; r++) {
		const char *src = r % 2 ? b : a, *dst = r % 2 ? a : b;
		double t0 = now_s();

		rc = tree_rename(t, src, dst, 0, NULL);
		v[r] = now_s() - t0;
		if (rc) {
			progress("tree_rename %s %s: %s", src, dst,
				 strerror(-rc));
			return rc;
		}
		rc = branch_count(t, dst, &seen);
		if (rc || seen != entries) {
			progress("after rename %s has %llu entries, expected "
				 "%llu",
				 dst, (unsigned long long)seen,
				 (unsigned long long)entries);
			return rc ? rc : -EIO;
		}
		if (tree_lookup(t, src, &at) != -ENOENT) {
			progress("after rename %s is still there", src);
			return -EIO;
		}
		rc = tree_journal_list(t, &je, &nj);
		tree_journal_list_free(je, nj);
		if (rc || nj) {
			progress("after rename: %zu journal records left", nj);
			return rc ? rc : -EIO;
		}
		progress("  in-process rename %s -> %s: %.3f s (%.0f "
			 "entries/s)",
			 src, dst, v[r], entries / v[r]);
	}
	/* leave it at /rN for the mount part */
	if (o->runs % 2) {
		rc = tree_rename(t, b, a, 0, NULL);
		if (rc)
			return rc;
	}
	*med = median(v, o->runs);
	return 0;
}

/* The fresh ext4's size: the store's branches at about 1 KiB an entry
 * (their keys, the write-ahead log, compactions' new tables before the old
 * ones go), the host's empty files and folders, and room to spare; the
 * image is sparse. */
static uint64_t image_mb(const struct bench_opts *o)
{
	struct shape sh;
	uint64_t kib = 0;

	for (size_t i = 0; i < o->nsizes; i++) {
		branch_shape(&sh, o->sizes[i]);
		kib += shape_entries(&sh, 0);
	}
	return 1024 + kib * 2 / 1024;
}

/* Its inodes: the host's branches and the store's files. */
static uint64_t image_inodes(const struct bench_opts *o)
{
	struct shape sh;
	uint64_t n = 65536;

	for (size_t i = 0; i < o->nsizes; i++) {
		if (o->sizes[i] > o->host_max)
			continue;
		branch_shape(&sh, o->sizes[i]);
		n += shape_entries(&sh, 0);
	}
	return n;
}

int bench_rename(const struct bench_opts *o)
{
	struct store_options sopt = {.create = true};
	struct store *s = NULL;
	struct tree *t = NULL;
	struct fsmount m = {0};
	char dir[4096], sdir[4200], mnt[4200], host[4200], log[4200];
	char ref[4200];
	char p[4400], q[4400], metric[64], s1[32], s2[32], s3[32], s4[32],
	    s5[32];
	double *ip = NULL, *mv = NULL, *hmv = NULL, build_s;
	uint64_t *ent = NULL;
	char *pathfs = NULL;
	struct shape sh;
	size_t i;
	unsigned r;
	int rc, failures = 0;

	ref[0] = host[0] = '\0';
	rc = make_tmpdir(o, dir, sizeof(dir));
	if (rc) {
		progress("cannot make a temp dir in %s", o->tmp);
		return rc;
	}
	ip = calloc(o->nsizes, sizeof(*ip));
	mv = calloc(o->nsizes, sizeof(*mv));
	hmv = calloc(o->nsizes, sizeof(*hmv));
	ent = calloc(o->nsizes, sizeof(*ent));
	if (!ip || !mv || !hmv || !ent) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i < o->nsizes; i++)
		ip[i] = mv[i] = hmv[i] = NAN;
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	snprintf(log, sizeof(log), "%s/pathfs.log", dir);
	if (!o->host) {
		/* the store and the host's branches on a fresh ext4 */
		rc = ext4_image_in(dir, ref, sizeof(ref), image_mb(o),
				   image_inodes(o));
		if (rc)
			goto out;
	}
	snprintf(sdir, sizeof(sdir), "%s/store", o->host ? dir : ref);
	if (o->host) {
		snprintf(host, sizeof(host), "%s/pathfs-bench.XXXXXX", o->host);
		if (!mkdtemp(host)) {
			rc = -errno;
			host[0] = '\0';
			goto out;
		}
	} else {
		snprintf(host, sizeof(host), "%s/host", ref);
		if (mkdir(host, 0755)) {
			rc = -errno;
			goto out;
		}
	}
	if (mkdir(mnt, 0755)) {
		rc = -errno;
		goto out;
	}
	pathfs = find_prog(o->pathfs, "pathfs");

	/* The store's drive is "main", the daemon's default. */
	rc = store_open(&s, sdir, &sopt);
	if (!rc)
		rc = store_drive_create(s, "main", 0, 0);
	if (!rc)
		rc = store_drive(s, "main", &t);
	if (rc) {
		progress("cannot create store %s: %s", sdir, strerror(-rc));
		goto out;
	}
	for (i = 0; i < o->nsizes; i++) {
		uint64_t n = o->sizes[i];

		snprintf(p, sizeof(p), "/r%llu", (unsigned long long)n);
		branch_shape(&sh, n);
		ent[i] = shape_entries(&sh, 0);
		progress("rename: building %s (%llu entries)", p,
			 (unsigned long long)ent[i]);
		rc = build_tree_inproc(t, &sh, p, &build_s);
		if (rc)
			goto out;
		progress("  built in %.2f s", build_s);
		rc = inproc(o, t, n, ent[i], &ip[i]);
		if (rc) {
			failures++;
			rc = 0;
		}
	}
	store_close(s);
	s = NULL;

	if (!pathfs) {
		progress("rename: cannot find pathfs (use --pathfs); no mount "
			 "numbers");
		failures++;
	} else {
		char *argv[] = {pathfs, (char *)"-f", sdir, mnt, NULL};
		double(*v)[2] = NULL;

		for (i = 0; i < o->nsizes; i++) {
			if (o->sizes[i] > o->host_max)
				continue;
			snprintf(p, sizeof(p), "%s/r%llu", host,
				 (unsigned long long)o->sizes[i]);
			branch_shape(&sh, o->sizes[i]);
			progress("rename: building %s on the host", p);
			if (mkdir(p, 0755) ||
			    shape_walk(&sh, p, 0, mkfile, NULL)) {
				progress("cannot build %s", p);
				failures++;
			}
		}
		drop_caches(o);
		rc = fs_mount(&m, argv, mnt, log);
		if (rc) {
			progress("cannot mount pathfs: %s (log %s)",
				 strerror(-rc), log);
			failures++;
			rc = 0;
			goto report;
		}
		v = calloc(o->runs, sizeof(*v));
		if (!v) {
			rc = -ENOMEM;
			goto out;
		}
		for (i = 0; i < o->nsizes; i++) {
			bool on_host = o->sizes[i] <= o->host_max;
			double hv[64];

			for (r = 0; r < o->runs; r++) {
				const char *base[2] = {mnt, host};
				int k;

				for (k = 0; k < (on_host ? 2 : 1); k++) {
					char *mvargv[] = {(char *)"mv", p, q,
							  NULL};
					double secs;

					snprintf(
					    r % 2 ? q : p, sizeof(p),
					    "%s/r%llu", base[k],
					    (unsigned long long)o->sizes[i]);
					snprintf(
					    r % 2 ? p : q, sizeof(p),
					    "%s/r%llu.moved", base[k],
					    (unsigned long long)o->sizes[i]);
					v[r][k] = NAN;
					if (run_cmd(mvargv, &secs, NULL, NULL,
						    0)) {
						failures++;
						continue;
					}
					if (access(q, F_OK) ||
					    !access(p, F_OK)) {
						progress("mv %s %s: source "
							 "still there or no "
							 "target",
							 p, q);
						failures++;
						continue;
					}
					v[r][k] = secs;
					progress("  mv %s: %.1f ms", p,
						 secs * 1e3);
				}
			}
			for (r = 0; r < o->runs; r++)
				hv[r] = v[r][0];
			mv[i] = median(hv, o->runs);
			for (r = 0; r < o->runs; r++)
				hv[r] = on_host ? v[r][1] : NAN;
			hmv[i] = median(hv, o->runs);
		}
		free(v);
		if (fs_umount(&m)) {
			progress("pathfs did not shut down cleanly; see %s",
				 log);
			failures++;
		}
	}
report:
	printf("\nrename: cost against branch size (median of %u runs)\n\n",
	       o->runs);
	printf("%10s %10s | %12s %14s | %12s %12s %10s\n", "size", "entries",
	       "in-process", "rewrite", "pathfs mv", "host mv", "mv p/host");
	for (i = 0; i < o->nsizes; i++) {
		snprintf(metric, sizeof(metric), "n%llu",
			 (unsigned long long)o->sizes[i]);
		res_add("rename", "inproc", metric, ip[i], "s");
		res_add("rename", "inproc", metric, ent[i] / ip[i],
			"entries/s");
		res_add("rename", "pathfs", metric, mv[i], "s");
		res_add("rename", "host", metric, hmv[i], "s");
		res_add("rename", "ratio_vs_host", metric, mv[i] / hmv[i], "x");
		snprintf(metric, sizeof(metric), "%llu entries",
			 (unsigned long long)ent[i]);
		res_plot("rename: pathfs mv time / host mv time", "mv vs host",
			 metric, mv[i] / hmv[i]);
		res_plot("rename: pathfs mv time / host mv time",
			 "in-process rewrite vs host mv", metric,
			 ip[i] / hmv[i]);
		printf("%10llu %10llu | %12s %14s | %12s %12s %10s\n",
		       (unsigned long long)o->sizes[i],
		       (unsigned long long)ent[i], fmt_secs(s1, 32, ip[i]),
		       fmt_rate(s3, sizeof(s3), ent[i] / ip[i], "/s"),
		       fmt_secs(s2, 32, mv[i]),
		       isnan(hmv[i]) ? "-" : fmt_secs(s4, 32, hmv[i]),
		       fmt_ratio(s5, sizeof(s5), mv[i] / hmv[i]));
	}
	printf("\n");
	fflush(stdout);
	if (failures)
		rc = -EIO;
out:
	if (m.pid)
		fs_umount(&m);
	store_close(s);
	if (ref[0] && ref_umount(ref))
		rc = rc ? rc : -EIO;
	if (!o->keep) {
		run_sh("rm -rf '%s'", dir);
		if (o->host && host[0])
			run_sh("rm -rf '%s'", host);
	}
	free(ip);
	free(mv);
	free(hmv);
	free(ent);
	free(pathfs);
	return rc;
}
