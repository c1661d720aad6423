/*
 * bench_util.c - results, the generated tree shape, timing, running programs
 * and mounting file systems for pathfs-bench.
 *
 * Limits: results live in a growing array until res_free(); run_cmd() keeps
 * at most the first outlen bytes of a program's output; fs_mount() only knows
 * daemons that stay in the foreground (-f), so that the daemon is our child
 * and its exit can be awaited after unmounting.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* ---- results ------------------------------------------------------------ */

struct row {
	char *bench, *target, *metric, *unit;
	double value;
};

struct ratio {
	char *panel, *series, *label;
	double value;
};

static struct row *rows;
static size_t nrows, rows_cap;
static struct ratio *ratios;
static size_t nratios, ratios_cap;

static char *xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");

	if (!p)
		abort();
	return p;
}

void res_add(const char *bench, const char *target, const char *metric,
	     double value, const char *unit)
{
	if (nrows == rows_cap) {
		rows_cap = rows_cap ? rows_cap * 2 : 64;
		rows = realloc(rows, rows_cap * sizeof(*rows));
		if (!rows)
			abort();
	}
	rows[nrows].bench = xstrdup(bench);
	rows[nrows].target = xstrdup(target);
	rows[nrows].metric = xstrdup(metric);
	rows[nrows].unit = xstrdup(unit);
	rows[nrows].value = value;
	nrows++;
}

void res_plot(const char *panel, const char *series, const char *label,
	      double ratio)
{
	if (nratios == ratios_cap) {
		ratios_cap = ratios_cap ? ratios_cap * 2 : 32;
		ratios = realloc(ratios, ratios_cap * sizeof(*ratios));
		if (!ratios)
			abort();
	}
	ratios[nratios].panel = xstrdup(panel);
	ratios[nratios].series = xstrdup(series);
	ratios[nratios].label = xstrdup(label);
	ratios[nratios].value = ratio;
	nratios++;
}

int res_write_csv(const char *path)
{
	FILE *f;
	size_t i;
	int rc = 0;

	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "benchmark,target,metric,value,unit\n");
	for (i = 0; i < nrows; i++) {
		if (isnan(rows[i].value))
			fprintf(f, "%s,%s,%s,nan,%s\n", rows[i].bench,
				rows[i].target, rows[i].metric, rows[i].unit);
		else
			fprintf(f, "%s,%s,%s,%.6g,%s\n", rows[i].bench,
				rows[i].target, rows[i].metric, rows[i].value,
				rows[i].unit);
	}
	if (ferror(f))
		rc = -EIO;
	if (fclose(f) && !rc)
		rc = -errno;
	return rc;
}

/* Index of the first ratio with this panel (and series/label if given). */
static size_t first_of(const char *panel, const char *series, const char *label)
{
	size_t i;

	for (i = 0; i < nratios; i++)
		if (!strcmp(ratios[i].panel, panel) &&
		    (!series || !strcmp(ratios[i].series, series)) &&
		    (!label || !strcmp(ratios[i].label, label)))
			return i;
	return nratios;
}

/*
 * Writes the data of panel @p (the panel of ratio @p) to @f: one row per
 * label, one column per series, "?" where a series has no value. Returns the
 * number of series; *nlabels gets the rows.
 */
static size_t panel_data(FILE *f, size_t p, size_t *nlabels, char *titles,
			 size_t tlen)
{
	const char *panel = ratios[p].panel;
	size_t i, j, ns = 0, tl = 0;
	const char *series[16];

	*nlabels = 0;
	titles[0] = '\0';
	for (i = p; i < nratios; i++) {
		if (strcmp(ratios[i].panel, panel) ||
		    first_of(panel, ratios[i].series, NULL) != i || ns == 16)
			continue;
		series[ns++] = ratios[i].series;
		tl += (size_t)snprintf(titles + tl, tl < tlen ? tlen - tl : 0,
				       "%s\t", ratios[i].series);
	}
	for (i = p; i < nratios; i++) {
		if (strcmp(ratios[i].panel, panel) ||
		    first_of(panel, NULL, ratios[i].label) != i)
			continue;
		(*nlabels)++;
		fprintf(f, "\"%s\"", ratios[i].label);
		for (j = 0; j < ns; j++) {
			size_t k = first_of(panel, series[j], ratios[i].label);

			if (k < nratios && isfinite(ratios[k].value) &&
			    ratios[k].value > 0)
				fprintf(f, " %.6g", ratios[k].value);
			else
				fprintf(f, " ?");
		}
		fprintf(f, "\n");
	}
	return ns;
}

/*
 * One panel per benchmark (stacked), one cluster of bars per workload, one
 * bar per series, log scale, a red line at 1. gnuplot reads the data from
 * temp files next to the PNG.
 */
int res_write_plot(const char *png)
{
	char *script = NULL, data[8][4200], titles[8][1024];
	size_t slen = 0, scap = 65536, i, np = 0, maxl = 1, ns[8], nl;
	size_t panels[8];
	FILE *f;
	int rc = 0;

	for (i = 0; i < nratios && np < 8; i++)
		if (first_of(ratios[i].panel, NULL, NULL) == i)
			panels[np++] = i;
	if (!np)
		return -ENODATA;
	script = malloc(scap);
	if (!script)
		return -ENOMEM;
	for (i = 0; i < np; i++) {
		snprintf(data[i], sizeof(data[i]), "%s.%zu.dat", png, i);
		f = fopen(data[i], "w");
		if (!f) {
			rc = -errno;
			np = i;
			goto out;
		}
		ns[i] =
		    panel_data(f, panels[i], &nl, titles[i], sizeof(titles[i]));
		fclose(f);
		if (nl > maxl)
			maxl = nl;
	}
#define S(...)                                                                 \
	slen += (size_t)snprintf(script + slen, slen < scap ? scap - slen : 0, \
				 __VA_ARGS__)
	S("set terminal pngcairo size %zu,%zu font ',9' noenhanced;",
	  500 + maxl * 60, np * 440);
	S("set output '%s';", png);
	S("set multiplot layout %zu,1;", np);
	S("set logscale y; set grid ytics; set style data histograms;");
	S("set style histogram clustered gap 1; set style fill solid 0.7;");
	S("set xtics rotate by -25 left; set key outside right top vertical;");
	S("set datafile missing '?'; set bmargin 6; set yrange "
	  "[*:*];");
	for (i = 0; i < np; i++) {
		size_t j;
		char *tok, *save = NULL;

		S("set title '%s';", ratios[panels[i]].panel);
		S("plot ");
		tok = strtok_r(titles[i], "\t", &save);
		for (j = 0; j < ns[i] && tok; j++) {
			S("'%s' using %zu%s title '%s', ", data[i], j + 2,
			  j == 0 ? ":xtic(1)" : "", tok);
			tok = strtok_r(NULL, "\t", &save);
		}
		S("1 notitle with lines lc rgb 'red' lw 2;");
	}
	S("unset multiplot");
#undef S
	if (slen >= scap) {
		rc = -E2BIG;
		goto out;
	}
	{
		char *argv[] = {(char *)"gnuplot", (char *)"-e", script, NULL};
		double secs;

		rc = run_cmd(argv, &secs, NULL, NULL, 0);
		if (rc && rc != -ENOENT)
			rc = -EIO;
	}
out:
	for (i = 0; i < np; i++)
		unlink(data[i]);
	free(script);
	return rc;
}

void res_free(void)
{
	size_t i;

	for (i = 0; i < nrows; i++) {
		free(rows[i].bench);
		free(rows[i].target);
		free(rows[i].metric);
		free(rows[i].unit);
	}
	free(rows);
	rows = NULL;
	nrows = rows_cap = 0;
	for (i = 0; i < nratios; i++) {
		free(ratios[i].panel);
		free(ratios[i].series);
		free(ratios[i].label);
	}
	free(ratios);
	ratios = NULL;
	nratios = ratios_cap = 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double median(double *v, size_t n)
{
	size_t i, m = 0;

	for (i = 0; i < n; i++)
		if (!isnan(v[i]))
			v[m++] = v[i];
	if (!m)
		return NAN;
	qsort(v, m, sizeof(*v), cmp_double);
	return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

const char *fmt_secs(char *buf, size_t len, double secs)
{
	if (isnan(secs))
		snprintf(buf, len, "FAIL");
	else if (secs < 1e-3)
		snprintf(buf, len, "%.0f us", secs * 1e6);
	else if (secs < 1)
		snprintf(buf, len, "%.1f ms", secs * 1e3);
	else
		snprintf(buf, len, "%.2f s", secs);
	return buf;
}

const char *fmt_rate(char *buf, size_t len, double per_s, const char *unit)
{
	if (isnan(per_s))
		snprintf(buf, len, "FAIL");
	else if (per_s >= 1e6)
		snprintf(buf, len, "%.2f M%s", per_s / 1e6, unit);
	else if (per_s >= 1e3)
		snprintf(buf, len, "%.1f k%s", per_s / 1e3, unit);
	else
		snprintf(buf, len, "%.1f %s", per_s, unit);
	return buf;
}

bool bench_wanted(const struct bench_opts *o, const char *name)
{
	char list[256], *tok, *save = NULL;

	if (!o->targets)
		return true;
	snprintf(list, sizeof(list), "%s", o->targets);
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, name))
			return true;
	return false;
}

const char *fmt_ratio(char *buf, size_t len, double ratio)
{
	if (!isfinite(ratio))
		snprintf(buf, len, "-");
	else if (ratio >= 100)
		snprintf(buf, len, "%.0fx", ratio);
	else
		snprintf(buf, len, "%.2fx", ratio);
	return buf;
}

void progress(const char *fmt, ...)
{
	va_list ap;

	fputs("bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- the generated tree -------------------------------------------------- */

void shape_init(struct shape *sh, uint64_t files, unsigned fanout,
		unsigned depth, size_t size)
{
	uint64_t leaves = 1;
	unsigned i;

	for (i = 0; i < depth; i++)
		leaves *= fanout;
	sh->fanout = fanout;
	sh->depth = depth;
	sh->per_leaf = (files + leaves - 1) / leaves;
	sh->size = size;
}

uint64_t shape_dirs(const struct shape *sh, unsigned k)
{
	uint64_t n = 0, level = 1;
	unsigned i;

	for (i = k; i < sh->depth; i++) {
		level *= sh->fanout;
		n += level;
	}
	return n;
}

uint64_t shape_files(const struct shape *sh, unsigned k)
{
	uint64_t leaves = 1;
	unsigned i;

	for (i = k; i < sh->depth; i++)
		leaves *= sh->fanout;
	return leaves * sh->per_leaf;
}

uint64_t shape_entries(const struct shape *sh, unsigned k)
{
	return shape_dirs(sh, k) + shape_files(sh, k);
}

void shape_branch(const struct shape *sh, const char *root, unsigned k,
		  char *buf, size_t len)
{
	size_t n;
	unsigned i;

	n = (size_t)snprintf(buf, len, "%s", root);
	for (i = 0; i < k && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "/d0");
}

static int walk_rec(const struct shape *sh, char *path, size_t plen,
		    unsigned level, shape_cb cb, void *ctx)
{
	uint64_t i;
	int rc;

	if (level == sh->depth) {
		for (i = 0; i < sh->per_leaf; i++) {
			snprintf(path + plen, 4096 - plen, "/f%05llu",
				 (unsigned long long)i);
			rc = cb(ctx, path, false);
			if (rc)
				return rc;
		}
		return 0;
	}
	for (i = 0; i < sh->fanout; i++) {
		size_t n =
		    plen + (size_t)snprintf(path + plen, 4096 - plen, "/d%llu",
					    (unsigned long long)i);

		rc = cb(ctx, path, true);
		if (rc)
			return rc;
		rc = walk_rec(sh, path, n, level + 1, cb, ctx);
		if (rc)
			return rc;
		path[plen] = '\0';
	}
	return 0;
}

int shape_walk(const struct shape *sh, const char *root, unsigned k,
	       shape_cb cb, void *ctx)
{
	char path[4096];

	shape_branch(sh, root, k, path, sizeof(path));
	return walk_rec(sh, path, strlen(path), k, cb, ctx);
}

/* Finds "key": NUMBER in a JSON object (pathfsctl's flat output). */
int json_u64(const char *json, const char *key, uint64_t *v)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\"", key);
	p = strstr(json, pat);
	if (!p)
		return -ENOENT;
	p += strlen(pat);
	while (*p == ' ' || *p == ':' || *p == '\t')
		p++;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	*v = strtoull(p, NULL, 10);
	return 0;
}

/* ---- programs and mounts ------------------------------------------------- */

int run_cmd(char *const argv[], double *secs, uint64_t *lines, char *out,
	    size_t outlen)
{
	int pfd[2], status, rc = 0;
	char buf[65536];
	size_t kept = 0;
	uint64_t nl = 0;
	double t0;
	ssize_t n;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	t0 = now_s();
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return rc;
	}
	if (pid == 0) {
		dup2(pfd[1], 1);
		execvp(argv[0], argv);
		fprintf(stderr, "bench: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	while ((n = read(pfd[0], buf, sizeof(buf))) != 0) {
		ssize_t i;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (lines)
			for (i = 0; i < n; i++)
				nl += buf[i] == '\n';
		if (out && kept + 1 < outlen) {
			size_t c = (size_t)n;

			if (c > outlen - 1 - kept)
				c = outlen - 1 - kept;
			memcpy(out + kept, buf, c);
			kept += c;
		}
	}
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	*secs = now_s() - t0;
	if (out && outlen)
		out[kept] = '\0';
	if (lines)
		*lines = nl;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return -ENOENT;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "bench: %s failed (%s %d)\n", argv[0],
			WIFEXITED(status) ? "exit" : "signal",
			WIFEXITED(status) ? WEXITSTATUS(status)
					  : WTERMSIG(status));
		rc = -ECHILD;
	}
	return rc;
}

int run_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(NULL);
	st = system(cmd);
	return st == 0 ? 0 : -ECHILD;
}

void drop_caches(const struct bench_opts *o)
{
	static bool warned;
	int fd;

	if (o->no_drop)
		return;
	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "3\n", 2) != 2) {
		if (!warned)
			progress("cannot drop caches (%s): cold runs are "
				 "only cold in the daemons",
				 strerror(errno));
		warned = true;
	}
	if (fd >= 0)
		close(fd);
}

/* Mount points in /proc/self/mountinfo are octal-escaped (\040 = space). */
static void unescape(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] &&
		    s[3]) {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

bool is_mounted(const char *path)
{
	char line[8192], mp[4096];
	bool found = false;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
			continue;
		unescape(mp);
		found = strcmp(mp, path) == 0;
	}
	fclose(f);
	return found;
}

/* Mounts made by fs_mount() and not yet unmounted, for the signal handler. */
#define MAX_ACTIVE 8
static struct fsmount *volatile active[MAX_ACTIVE];

static void track(struct fsmount *m, bool on)
{
	int i;

	for (i = 0; i < MAX_ACTIVE; i++) {
		if (on && !active[i]) {
			active[i] = m;
			return;
		}
		if (!on && active[i] == m)
			active[i] = NULL;
	}
}

/* What else a signal must stop (bench_at_signal), after the mounts. */
static void (*volatile at_signal)(void);

/* The file system the bench mounted itself (ref_mounted), "" if none. */
static char ref_mnt[4096];

void bench_at_signal(void (*fn)(void))
{
	at_signal = fn;
}

void ref_mounted(const char *mnt)
{
	snprintf(ref_mnt, sizeof(ref_mnt), "%s", mnt);
}

int ref_umount(const char *mnt)
{
	if (!strcmp(ref_mnt, mnt))
		ref_mnt[0] = '\0';
	if (!run_sh("umount '%s'", mnt))
		return 0;
	progress("cannot unmount %s; unmounting it lazily", mnt);
	run_sh("umount -l '%s'", mnt);
	return -ECHILD;
}

int ext4_image_mount(const char *image, const char *mnt, uint64_t mb,
		     uint64_t inodes)
{
	if (run_sh("rm -f '%s' && truncate -s %lluM '%s' && mkfs.ext4 -q -F "
		   "-N %llu -E lazy_itable_init=0,lazy_journal_init=0 '%s' "
		   ">/dev/null && mount -o loop '%s' '%s'",
		   image, (unsigned long long)mb, image,
		   (unsigned long long)inodes, image, image, mnt)) {
		progress("cannot make and mount a %llu MiB ext4 image at %s "
			 "(mkfs.ext4 of e2fsprogs, loop devices, root)",
			 (unsigned long long)mb, image);
		return -ECHILD;
	}
	ref_mounted(mnt);
	progress("a fresh %llu MiB ext4 image mounted on %s",
		 (unsigned long long)mb, mnt);
	return 0;
}

int ext4_image_in(const char *dir, char *mnt, size_t len, uint64_t mb,
		  uint64_t inodes)
{
	char image[4200];
	int rc;

	snprintf(mnt, len, "%s/ext4", dir);
	snprintf(image, sizeof(image), "%s/ext4.img", dir);
	rc = mkdir(mnt, 0755) ? -errno
			      : ext4_image_mount(image, mnt, mb, inodes);
	if (rc)
		mnt[0] = '\0';
	return rc;
}

/* Runs @prog @flag @mnt and waits for it, in a signal handler. */
static void lazy_umount(const char *prog, const char *flag, const char *mnt)
{
	int st;
	pid_t p = fork();

	if (p == 0) {
		execlp(prog, prog, flag, mnt, (char *)NULL);
		_exit(127);
	}
	if (p > 0)
		waitpid(p, &st, 0);
}

/* On SIGINT/SIGTERM: lazily unmount what we mounted, stop those daemons
 * (and what bench_at_signal named), and leave the temp dirs (their paths
 * were printed) for rm -rf. */
static void on_signal(int sig)
{
	static const char msg[] = "\npathfs-bench: interrupted; unmounted "
				  "its mounts, temp dirs left behind\n";
	int i;

	for (i = 0; i < MAX_ACTIVE; i++) {
		struct fsmount *m = active[i];

		if (!m || !m->pid)
			continue;
		lazy_umount("fusermount3", "-uz", m->mnt);
		kill(m->pid, SIGTERM);
	}
	if (ref_mnt[0])
		lazy_umount("umount", "-l", ref_mnt);
	if (at_signal)
		at_signal();
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(128 + sig);
	_exit(128 + sig);
}

void bench_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

int fs_mount(struct fsmount *m, char *const argv[], const char *mnt,
	     const char *log)
{
	double deadline;
	int status, fd;
	pid_t pid;

	m->pid = 0;
	snprintf(m->mnt, sizeof(m->mnt), "%s", mnt);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0) {
			dup2(fd, 2);
			dup2(fd, 1);
		}
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	m->pid = pid;
	deadline = now_s() + 20;
	while (!is_mounted(mnt)) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			m->pid = 0;
			progress("%s exited before mounting %s; see %s",
				 argv[0], mnt, log);
			return -ECHILD;
		}
		if (now_s() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			m->pid = 0;
			return -ETIMEDOUT;
		}
		usleep(10000);
	}
	track(m, true);
	return 0;
}

int fs_umount(struct fsmount *m)
{
	double deadline;
	int status, rc = 0;

	if (!m->pid)
		return 0;
	track(m, false);
	if (is_mounted(m->mnt) &&
	    run_sh("fusermount3 -u '%s' 2>/dev/null || umount '%s'", m->mnt,
		   m->mnt))
		run_sh("fusermount3 -u -z '%s' 2>/dev/null", m->mnt);
	deadline = now_s() + 120;
	for (;;) {
		pid_t w = waitpid(m->pid, &status, WNOHANG);

		if (w == m->pid) {
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				progress("daemon %d on %s ended badly (%s %d)",
					 (int)m->pid, m->mnt,
					 WIFEXITED(status) ? "exit" : "signal",
					 WIFEXITED(status) ? WEXITSTATUS(status)
							   : WTERMSIG(status));
				rc = -ECHILD;
			}
			break;
		}
		if (w < 0) {
			rc = -errno;
			break;
		}
		if (now_s() > deadline) {
			progress("daemon %d did not exit; killing it",
				 (int)m->pid);
			kill(m->pid, SIGKILL);
			waitpid(m->pid, &status, 0);
			rc = -ETIMEDOUT;
			break;
		}
		usleep(10000);
	}
	m->pid = 0;
	return rc;
}

char *find_prog(const char *given, const char *name)
{
	char self[4096], cand[8192 + 64];
	const char *dirs[] = {"", "/../fs", "/../tools"};
	ssize_t n;
	size_t i;
	char *slash;

	if (given)
		return access(given, X_OK) == 0 ? strdup(given) : NULL;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash)
			*slash = '\0';
		for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
			snprintf(cand, sizeof(cand), "%s%s/%s", self, dirs[i],
				 name);
			if (access(cand, X_OK) == 0)
				return realpath(cand, NULL);
		}
	}
	{
		const char *path = getenv("PATH");
		char *p, *save = NULL, *tok, *copy;
		char *found = NULL;

		if (!path)
			return NULL;
		copy = strdup(path);
		if (!copy)
			return NULL;
		for (tok = strtok_r(copy, ":", &save); tok && !found;
		     tok = strtok_r(NULL, ":", &save)) {
			snprintf(cand, sizeof(cand), "%s/%s", tok, name);
			if (access(cand, X_OK) == 0)
				found = strdup(cand);
		}
		p = copy;
		free(p);
		return found;
	}
}

int make_tmpdir(const struct bench_opts *o, char *buf, size_t len)
{
	snprintf(buf, len, "%s/pathfs-bench.XXXXXX", o->tmp);
	if (!mkdtemp(buf))
		return -errno;
	return 0;
}
