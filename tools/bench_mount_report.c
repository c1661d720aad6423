/*
 * bench_mount_report.c - the report of `pathfs-bench mount`: per workload
 * the median seconds of each target and pathfs's ratio to each reference
 * (ext4, tmpfs, the floor), the requests per created file of the FUSE
 * targets, the CSV rows and the plot's ratios. See bench_mount_i.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bench_mount_i.h"

static double med(struct mctx *c, int w, int k)
{
	double v[64];
	unsigned i, n = c->o->runs;

	for (i = 0; i < n; i++)
		v[i] = *slot(c, w, k, i);
	return median(v, n);
}

/* The value of reference @k a pathfs row is compared with: du -s and
 * rm -rf for the pathfsctl rows. */
static double ref_of(struct mctx *c, int w, int k)
{
	if (w == W_CTL_DU)
		return med(c, W_DU, k);
	if (w == W_CTL_RM)
		return med(c, W_RM, k);
	return med(c, w, k);
}

const char *fstype(const char *path)
{
	struct statfs sf;

	if (statfs(path, &sf))
		return "?";
	switch ((unsigned long)sf.f_type) {
	case 0xEF53:
		return "ext4";
	case 0x01021994:
		return "tmpfs";
	case 0x58465342:
		return "xfs";
	case 0x9123683E:
		return "btrfs";
	case 0x65735546:
		return "fuse";
	default:
		return "other";
	}
}

/* The row's label: the workload's, with its size where it has one. */
static void row_label(struct mctx *c, int w, char *lab, size_t len)
{
	const struct bench_opts *o = c->o;

	snprintf(lab, len, "%s", wl[w].label);
	if (w == W_MV)
		snprintf(lab, len, "mv of a %llu-entry folder",
			 (unsigned long long)shape_entries(&c->sh, 1) + 1);
	if (w == W_CHURN)
		snprintf(lab, len, "create/stat/unlink %llu",
			 (unsigned long long)o->churn);
	if (w == W_TAR)
		snprintf(lab, len, "tar x, %llu entries %.0f MB",
			 (unsigned long long)c->tar_entries + 1, c->tar_mb);
	if (w == W_CP_REAL || w == W_RSYNC)
		snprintf(lab, len, "%s, %llu entries %.0f MB",
			 w == W_CP_REAL ? "cp -a" : "rsync -a",
			 (unsigned long long)c->copy_entries, c->copy_mb);
	if (w == W_WRITE || w == W_READ)
		snprintf(lab, len, "%s %llu MiB",
			 w == W_WRITE ? "write+fsync" : "read, cold",
			 (unsigned long long)o->write_mb);
}

/* The requests per created file of FUSE target @k: the median, then the
 * last run's by opcode. */
static void report_requests(struct mctx *c, int k)
{
	const struct reqs *d = &c->ops[k];
	double v[64], files = (double)shape_files(&c->sh, 0), per;
	char metric[64];
	unsigned i;

	if (!wanted(c->o, k))
		return;
	for (i = 0; i < c->o->runs; i++)
		v[i] = c->reqs[k * c->o->runs + i];
	per = median(v, c->o->runs);
	res_add("mount", tname[k], "create_requests_per_file", per, "req/file");
	printf("  %-7s %5.2f:", tname[k], per);
	for (i = 0; i < d->n; i++) {
		if (!d->count[i])
			continue;
		printf(" %s %.2f", d->name[i], (double)d->count[i] / files);
		snprintf(metric, sizeof(metric), "create_%s_per_file",
			 d->name[i]);
		res_add("mount", tname[k], metric, (double)d->count[i] / files,
			"req/file");
	}
	printf("\n");
}

void mount_report(struct mctx *c)
{
	const struct bench_opts *o = c->o;
	char s1[32], r1[32], lab[96], ser[32], met[48];
	int w, k;
	double amount[NW] = {0};
	const char *unit[NW] = {0};

	amount[W_CHURN] = 3.0 * o->churn;
	unit[W_CHURN] = "ops/s";
	amount[W_WRITE] = amount[W_READ] = (double)o->write_mb;
	unit[W_WRITE] = unit[W_READ] = "MiB/s";

	printf("\nmount: %llu-entry tree (%llu files of %zu B), median of %u "
	       "runs\n",
	       (unsigned long long)shape_entries(&c->sh, 0) + 1,
	       (unsigned long long)shape_files(&c->sh, 0), c->sh.size, o->runs);
	if (c->hostdir[0])
		printf("ext4: a fresh folder in --host %s (%s), pathfs's store "
		       "there too\n",
		       o->host, fstype(c->hostdir));
	else
		printf("ext4: a %llu MiB image formatted for each run, "
		       "pathfs's store on one too\n",
		       (unsigned long long)c->ref_mb);
	printf("tmpfs: mounted for each run; floor: pathfs-floor, in memory, "
	       "no storage work, pathfs's requests\n");
	printf(
	    "ratio = pathfs time / other time: below 1 pathfs is faster\n\n");
	printf("%-32s %10s", "workload", "pathfs");
	for (k = T_PATHFS + 1; k < NT; k++)
		if (wanted(o, k))
			printf(" %10s p/%-6s", tname[k], tname[k]);
	printf("\n");
	for (w = 0; w < NW; w++) {
		double p = med(c, w, T_PATHFS);
		bool ctl = w == W_CTL_DU || w == W_CTL_RM;

		if (!want_w(c, w))
			continue;
		for (k = 0; k < NT; k++) {
			double v = med(c, w, k);

			if ((ctl && k != T_PATHFS) || !wanted(o, k))
				continue;
			res_add("mount", tname[k], wl[w].metric, v, "s");
			if (unit[w])
				res_add("mount", tname[k], wl[w].metric,
					amount[w] / v, unit[w]);
		}
		row_label(c, w, lab, sizeof(lab));
		if (!wanted(o, T_PATHFS))
			snprintf(s1, sizeof(s1), "-");
		else if (unit[w])
			fmt_rate(s1, sizeof(s1), amount[w] / p, "");
		else
			fmt_secs(s1, sizeof(s1), p);
		printf("%-32s %10s", lab, s1);
		for (k = T_PATHFS + 1; k < NT; k++) {
			double v = ref_of(c, w, k);

			if (!wanted(o, k))
				continue;
			if (unit[w])
				fmt_rate(s1, sizeof(s1), amount[w] / v, "");
			else
				fmt_secs(s1, sizeof(s1), v);
			printf(" %10s %8s", s1,
			       fmt_ratio(r1, sizeof(r1), p / v));
			snprintf(met, sizeof(met), "ratio_vs_%s", tname[k]);
			res_add("mount", met, wl[w].metric, p / v, "x");
			snprintf(ser, sizeof(ser), "vs %s", tname[k]);
			res_plot(MOUNT_PANEL, ser, wl[w].label, p / v);
		}
		if (unit[w])
			printf("  (%s)", unit[w]);
		printf("\n");
	}
	if (wanted(o, T_PATHFS) || wanted(o, T_FLOOR)) {
		printf("\nrequests per created file, creating the tree (the "
		       "daemons' own counts; by opcode: the last run):\n");
		report_requests(c, T_PATHFS);
		report_requests(c, T_FLOOR);
	}
	printf("\n");
	fflush(stdout);
}
