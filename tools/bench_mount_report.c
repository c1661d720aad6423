/*
 * bench_mount_report.c - the report of `pathfs-bench mount`: per workload
 * the median seconds of each target, pathfs's ratio to the host folder and
 * to tmpfs, the CSV rows and the plot's ratios. See bench_mount_i.h.
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

/* The value of target @k (host or tmpfs) a pathfs row is compared with. */
static double host_ref(struct mctx *c, int w, int k)
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

void mount_report(struct mctx *c)
{
	const struct bench_opts *o = c->o;
	char s1[32], s2[32], s3[32], r1[32], r2[32], lab[96];
	int w, k;
	double amount[NW] = {0};
	const char *unit[NW] = {0};

	amount[W_CHURN] = 3.0 * o->churn;
	unit[W_CHURN] = "ops/s";
	amount[W_WRITE] = amount[W_READ] = (double)o->write_mb;
	unit[W_WRITE] = unit[W_READ] = "MiB/s";

	printf("\nmount: %llu-entry tree (%llu files of %zu B), host %s (%s), "
	       "median of %u runs\n",
	       (unsigned long long)shape_entries(&c->sh, 0) + 1,
	       (unsigned long long)shape_files(&c->sh, 0), c->sh.size,
	       c->hostdir, fstype(c->hostdir), o->runs);
	printf(
	    "ratio = pathfs time / other time: below 1 pathfs is faster\n\n");
	printf("%-32s %10s %10s %8s", "workload", "pathfs", "host", "p/host");
	if (wanted(o, T_TMPFS))
		printf(" %10s %8s", "tmpfs", "p/tmpfs");
	if (o->vs_pt)
		printf(" %12s %8s", "passthrough", "p/pt");
	printf("\n");
	for (w = 0; w < NW; w++) {
		double p = med(c, w, T_PATHFS), h = host_ref(c, w, T_HOST);
		double tm = host_ref(c, w, T_TMPFS);
		double pt = med(c, w, T_PT);

		if (!want_w(c, w))
			continue;
		bool ctl = w == W_CTL_DU || w == W_CTL_RM;

		for (k = 0; k < NT; k++) {
			double v = med(c, w, k);

			if (ctl && k != T_PATHFS)
				continue;
			if (!wanted(o, k))
				continue;
			res_add("mount", tname[k], wl[w].metric, v, "s");
			if (unit[w])
				res_add("mount", tname[k], wl[w].metric,
					amount[w] / v, unit[w]);
		}
		res_add("mount", "ratio_vs_host", wl[w].metric, p / h, "x");
		res_plot(MOUNT_PANEL, "vs host", wl[w].label, p / h);
		snprintf(lab, sizeof(lab), "%s", wl[w].label);
		if (w == W_MV)
			snprintf(lab, sizeof(lab), "mv of a %llu-entry folder",
				 (unsigned long long)shape_entries(&c->sh, 1) +
				     1);
		if (w == W_CHURN)
			snprintf(lab, sizeof(lab), "create/stat/unlink %llu",
				 (unsigned long long)o->churn);
		if (w == W_TAR)
			snprintf(
			    lab, sizeof(lab), "tar x, %llu entries %.0f MB",
			    (unsigned long long)c->tar_entries + 1, c->tar_mb);
		if (w == W_CP_REAL || w == W_RSYNC)
			snprintf(lab, sizeof(lab), "%s, %llu entries %.0f MB",
				 w == W_CP_REAL ? "cp -a" : "rsync -a",
				 (unsigned long long)c->copy_entries,
				 c->copy_mb);
		if (w == W_WRITE || w == W_READ)
			snprintf(lab, sizeof(lab), "%s %llu MiB",
				 w == W_WRITE ? "write+fsync" : "read, cold",
				 (unsigned long long)o->write_mb);
		if (unit[w]) {
			fmt_rate(s1, sizeof(s1), amount[w] / p, "");
			fmt_rate(s2, sizeof(s2), amount[w] / h, "");
		} else {
			fmt_secs(s1, sizeof(s1), p);
			fmt_secs(s2, sizeof(s2), h);
		}
		if (!wanted(o, T_PATHFS))
			snprintf(s1, sizeof(s1), "-");
		if (!wanted(o, T_HOST))
			snprintf(s2, sizeof(s2), "-");
		printf("%-32s %10s %10s %8s", lab, s1, s2,
		       fmt_ratio(r1, sizeof(r1), p / h));
		if (wanted(o, T_TMPFS)) {
			if (unit[w])
				fmt_rate(s3, sizeof(s3), amount[w] / tm, "");
			else
				fmt_secs(s3, sizeof(s3), tm);
			printf(" %10s %8s", s3,
			       fmt_ratio(r2, sizeof(r2), p / tm));
			res_add("mount", "ratio_vs_tmpfs", wl[w].metric, p / tm,
				"x");
			res_plot(MOUNT_PANEL, "vs tmpfs", wl[w].label, p / tm);
		}
		if (o->vs_pt) {
			if (ctl) {
				printf(" %12s %8s", "-", "-");
			} else {
				if (unit[w])
					fmt_rate(s3, sizeof(s3), amount[w] / pt,
						 "");
				else
					fmt_secs(s3, sizeof(s3), pt);
				printf(" %12s %8s", s3,
				       fmt_ratio(r2, sizeof(r2), p / pt));
				res_add("mount", "ratio_vs_passthrough",
					wl[w].metric, p / pt, "x");
				res_plot(MOUNT_PANEL, "vs passthrough",
					 wl[w].label, p / pt);
			}
		}
		if (unit[w])
			printf("  (%s)", unit[w]);
		printf("\n");
	}
	printf("\n");
	fflush(stdout);
}
