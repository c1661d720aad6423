/*
 * pathfs-bench - measures pathfs: subtree reads in-process, the standard tools
 * through the mount next to a fresh ext4, a fresh tmpfs and a FUSE daemon
 * doing no storage work (pathfs-floor), and the cost of renaming a folder
 * against its size.
 *
 *   pathfs-bench subtree [--files N --fanout F --depth D --size B --runs R]
 *   pathfs-bench mount   [--host DIR] [--targets LIST] [--files N] ...
 *   pathfs-bench rename  [--sizes 1000,10000,100000,1000000] ...
 *   pathfs-bench content [--big-mb M] [--content-files N] [--pwrites N]
 *                        [--sqlite-rows N] [--host DIR] [--tmpfs DIR]
 *   pathfs-bench backends [--etcd HOST:PORT,...] [--files N] [--churn N]
 *                        [--write-mb M] [--writers N]
 *   pathfs-bench all     (subtree, mount, rename in turn)
 *
 * Every variant runs --runs times (default 3), the targets in alternation
 * (pathfs, ext4, tmpfs, floor, pathfs, ...), and the medians are reported: a
 * table on
 * stdout, progress on stderr, --csv FILE (benchmark,target,metric,value,unit,
 * one row per median) and --plot FILE.png (the ratios, drawn by gnuplot).
 *
 * Exit status: 0 when every measurement ran and every check passed, 1 when
 * one failed (the table says FAIL where), 2 on a usage error.
 *
 * Limits: needs root (FUSE mounts, dropping caches) for `mount`, `rename`
 * and `backends` (which also needs etcd: it is not in `all`);
 * builds its trees in a fresh temp dir under --tmp ($TMPDIR or /tmp) and
 * removes it unless --keep.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: pathfs-bench subtree|mount|rename|content|backends|all "
	    "[options]\n"
	    "\n"
	    "  --runs R            repetitions, medians reported (3)\n"
	    "  --csv FILE          one row per median: "
	    "benchmark,target,metric,value,unit\n"
	    "  --plot FILE.png     draw the ratios with gnuplot\n"
	    "  --tmp DIR           where temp dirs go ($TMPDIR or /tmp)\n"
	    "  --keep              keep the temp dirs\n"
	    "\n"
	    "subtree and mount (the generated tree):\n"
	    "  --files N           files (100000)\n"
	    "  --fanout F          folders per folder (10)\n"
	    "  --depth D           folder levels (3); files in the last\n"
	    "  --size BYTES        bytes per file (100)\n"
	    "\n"
	    "mount (pathfs against a fresh ext4 image, a fresh tmpfs and\n"
	    "pathfs-floor, each made for each run):\n"
	    "  --host DIR          the ext4 column (and pathfs's store) in\n"
	    "                      a fresh folder in DIR, not an image\n"
	    "  --write-mb M        sequential write/read size (1024)\n"
	    "  --churn N           create/stat/unlink count (20000)\n"
	    "  --pathfs PATH       daemon binary (next to this one)\n"
	    "  --pathfsctl PATH    admin tool binary (next to this one)\n"
	    "  --floor PATH        pathfs-floor binary (next to this one)\n"
	    "  --no-drop-caches    do not sync and drop the kernel's caches\n"
	    "                      for cold runs\n"
	    "  --targets LIST      run only these of pathfs,ext4,tmpfs,\n"
	    "                      floor\n"
	    "  --copy-src DIR      real folder for cp -a and rsync -a\n"
	    "                      (/usr/share/doc)\n"
	    "  --tar-src DIR       real folder archived for tar x\n"
	    "                      (/usr/include)\n"
	    "  --workloads LIST    only these (CSV metric names; the tree\n"
	    "                      is always created)\n"
	    "\n"
	    "content (all is without it):\n"
	    "  --big-mb M          random file on the full drive (4096)\n"
	    "  --content-files N   create+stat+unlink count (5000)\n"
	    "  --pwrites N         4 KiB pwrites per run (2000; a tenth "
	    "with fsync)\n"
	    "  --sqlite-rows N     sqlite3 rows, 1000 a transaction "
	    "(200000)\n"
	    "  --host DIR          host folder to compare with (default:\n"
	    "                      a fresh ext4 image in --tmp holding it\n"
	    "                      and the stores; rename too)\n"
	    "  --tmpfs DIR         tmpfs folder to compare with (/dev/shm)\n"
	    "\n"
	    "backends (the mount's workloads on RocksDB, on etcd and on\n"
	    "DynamoDB Local, started here: scripts/dynamodb_local.sh\n"
	    "installs it, java runs it; all is without it):\n"
	    "  --etcd H:P,H:P,...  a running etcd cluster (default: start\n"
	    "                      3 members on loopback ports, stop them\n"
	    "                      after); --files 2000 --fanout 20\n"
	    "                      --depth 1 --churn 500 --write-mb 64\n"
	    "                      unless given\n"
	    "  --targets LIST      run only these of rocksdb,etcd,\n"
	    "                      etcd-shared,dynamodb\n"
	    "  --writers N         instead: create/stat/unlink through the\n"
	    "                      store by a sole writer and by 1..N shared\n"
	    "                      writers of one etcd drive, --churn files\n"
	    "                      each (200 unless given), then mv of a\n"
	    "                      folder of --files entries each (10000\n"
	    "                      unless given)\n"
	    "\n"
	    "rename:\n"
	    "  --sizes N,N,...     branch sizes (1000,10000,100000,1000000)\n"
	    "  --host-max N        largest branch also built on the host "
	    "(100000)\n");
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -EINVAL;
	*v = x;
	return 0;
}

static int parse_sizes(const char *s, struct bench_opts *o)
{
	char *copy = strdup(s), *tok, *save = NULL;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	free(o->sizes);
	o->sizes = NULL;
	o->nsizes = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		uint64_t *p, v;

		rc = parse_u64(tok, &v);
		if (rc || !v) {
			rc = -EINVAL;
			break;
		}
		p = realloc(o->sizes, (o->nsizes + 1) * sizeof(*p));
		if (!p) {
			rc = -ENOMEM;
			break;
		}
		o->sizes = p;
		o->sizes[o->nsizes++] = v;
	}
	free(copy);
	if (!rc && !o->nsizes)
		rc = -EINVAL;
	return rc;
}

enum {
	OPT_RUNS = 256,
	OPT_FILES,
	OPT_FANOUT,
	OPT_DEPTH,
	OPT_SIZE,
	OPT_TMP,
	OPT_HOST,
	OPT_FLOOR,
	OPT_PATHFS,
	OPT_PATHFSCTL,
	OPT_WRITE_MB,
	OPT_CHURN,
	OPT_WRITERS,
	OPT_SIZES,
	OPT_HOST_MAX,
	OPT_KEEP,
	OPT_NO_DROP,
	OPT_CSV,
	OPT_PLOT,
	OPT_TARGETS,
	OPT_TMPFS,
	OPT_COPY_SRC,
	OPT_TAR_SRC,
	OPT_WORKLOADS,
	OPT_BIG_MB,
	OPT_CONTENT_FILES,
	OPT_PWRITES,
	OPT_SQLITE_ROWS,
	OPT_ETCD,
};

static const struct option longopts[] = {
    {"runs", required_argument, NULL, OPT_RUNS},
    {"files", required_argument, NULL, OPT_FILES},
    {"fanout", required_argument, NULL, OPT_FANOUT},
    {"depth", required_argument, NULL, OPT_DEPTH},
    {"size", required_argument, NULL, OPT_SIZE},
    {"tmp", required_argument, NULL, OPT_TMP},
    {"host", required_argument, NULL, OPT_HOST},
    {"floor", required_argument, NULL, OPT_FLOOR},
    {"pathfs", required_argument, NULL, OPT_PATHFS},
    {"pathfsctl", required_argument, NULL, OPT_PATHFSCTL},
    {"write-mb", required_argument, NULL, OPT_WRITE_MB},
    {"churn", required_argument, NULL, OPT_CHURN},
    {"writers", required_argument, NULL, OPT_WRITERS},
    {"big-mb", required_argument, NULL, OPT_BIG_MB},
    {"content-files", required_argument, NULL, OPT_CONTENT_FILES},
    {"pwrites", required_argument, NULL, OPT_PWRITES},
    {"sqlite-rows", required_argument, NULL, OPT_SQLITE_ROWS},
    {"sizes", required_argument, NULL, OPT_SIZES},
    {"host-max", required_argument, NULL, OPT_HOST_MAX},
    {"keep", no_argument, NULL, OPT_KEEP},
    {"no-drop-caches", no_argument, NULL, OPT_NO_DROP},
    {"csv", required_argument, NULL, OPT_CSV},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"targets", required_argument, NULL, OPT_TARGETS},
    {"tmpfs", required_argument, NULL, OPT_TMPFS},
    {"copy-src", required_argument, NULL, OPT_COPY_SRC},
    {"tar-src", required_argument, NULL, OPT_TAR_SRC},
    {"workloads", required_argument, NULL, OPT_WORKLOADS},
    {"etcd", required_argument, NULL, OPT_ETCD},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The 1-minute load average, or NaN. */
static double loadavg(void)
{
	double v = NAN;
	FILE *f = fopen("/proc/loadavg", "re");

	if (f) {
		if (fscanf(f, "%lf", &v) != 1)
			v = NAN;
		fclose(f);
	}
	return v;
}

/*
 * Runs one benchmark and records the machine's load around it: on a shared
 * machine a busy neighbour shows up here rather than silently in the numbers.
 */
static int run_one(const char *name, int (*fn)(const struct bench_opts *),
		   const struct bench_opts *o)
{
	double l0 = loadavg(), l1;
	int rc;

	rc = fn(o);
	l1 = loadavg();
	res_add(name, "machine", "loadavg_start", l0, "load");
	res_add(name, "machine", "loadavg_end", l1, "load");
	printf("(%s: 1-minute load average %.1f at start, %.1f at end, on "
	       "%ld CPUs)\n\n",
	       name, l0, l1, sysconf(_SC_NPROCESSORS_ONLN));
	fflush(stdout);
	return rc;
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
	    .runs = 3,
	    .files = 100000,
	    .fanout = 10,
	    .depth = 3,
	    .size = 100,
	    .write_mb = 1024,
	    .churn = 20000,
	    .host_max = 100000,
	    .tmpfs = "/dev/shm",
	    .copy_src = "/usr/share/doc",
	    .tar_src = "/usr/include",
	};
	const char *cmd;
	uint64_t v, given = 0; /* bit c - OPT_RUNS: option c was given */
	int c, rc = 0, status = 0;

	o.tmp = getenv("TMPDIR");
	if (!o.tmp || !*o.tmp)
		o.tmp = "/tmp";
	if (parse_sizes("1000,10000,100000,1000000", &o))
		return 1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		v = 0;
		if (c >= OPT_RUNS && c - OPT_RUNS < 64)
			given |= 1ull << (c - OPT_RUNS);
		switch (c) {
		case OPT_RUNS:
		case OPT_FILES:
		case OPT_FANOUT:
		case OPT_DEPTH:
		case OPT_SIZE:
		case OPT_WRITE_MB:
		case OPT_CHURN:
		case OPT_WRITERS:
		case OPT_HOST_MAX:
		case OPT_BIG_MB:
		case OPT_CONTENT_FILES:
		case OPT_PWRITES:
		case OPT_SQLITE_ROWS:
			if (parse_u64(optarg, &v)) {
				fprintf(stderr,
					"pathfs-bench: bad number: "
					"%s\n",
					optarg);
				status = 2;
				goto out;
			}
			break;
		default:
			break;
		}
		switch (c) {
		case OPT_RUNS:
			if (v < 1 || v > 64) {
				fprintf(stderr, "pathfs-bench: --runs is "
						"1..64\n");
				status = 2;
				goto out;
			}
			o.runs = (unsigned)v;
			break;
		case OPT_FILES:
			o.files = v;
			break;
		case OPT_FANOUT:
			if (v < 1 || v > 1000) {
				fprintf(stderr, "pathfs-bench: --fanout is "
						"1..1000\n");
				status = 2;
				goto out;
			}
			o.fanout = (unsigned)v;
			break;
		case OPT_DEPTH:
			if (v > 20) {
				fprintf(stderr, "pathfs-bench: --depth is "
						"0..20\n");
				status = 2;
				goto out;
			}
			o.depth = (unsigned)v;
			break;
		case OPT_SIZE:
			if (v > (64u << 20)) {
				fprintf(stderr, "pathfs-bench: --size is at "
						"most 64 MiB\n");
				status = 2;
				goto out;
			}
			o.size = (size_t)v;
			break;
		case OPT_TMP:
			o.tmp = optarg;
			break;
		case OPT_HOST:
			o.host = optarg;
			break;
		case OPT_FLOOR:
			o.floor = optarg;
			break;
		case OPT_PATHFS:
			o.pathfs = optarg;
			break;
		case OPT_PATHFSCTL:
			o.pathfsctl = optarg;
			break;
		case OPT_WRITE_MB:
			o.write_mb = v;
			break;
		case OPT_CHURN:
			o.churn = v;
			break;
		case OPT_WRITERS:
			o.writers = (unsigned)v;
			break;
		case OPT_BIG_MB:
			o.big_mb = v;
			break;
		case OPT_CONTENT_FILES:
			o.content_files = v;
			break;
		case OPT_PWRITES:
			o.pwrites = v;
			break;
		case OPT_SQLITE_ROWS:
			o.sqlite_rows = v;
			break;
		case OPT_SIZES:
			if (parse_sizes(optarg, &o)) {
				fprintf(stderr,
					"pathfs-bench: bad --sizes: "
					"%s\n",
					optarg);
				status = 2;
				goto out;
			}
			break;
		case OPT_HOST_MAX:
			o.host_max = v;
			break;
		case OPT_KEEP:
			o.keep = true;
			break;
		case OPT_NO_DROP:
			o.no_drop = true;
			break;
		case OPT_CSV:
			o.csv = optarg;
			break;
		case OPT_PLOT:
			o.plot = optarg;
			break;
		case OPT_TARGETS:
			o.targets = optarg;
			break;
		case OPT_TMPFS:
			o.tmpfs = optarg;
			break;
		case OPT_COPY_SRC:
			o.copy_src = optarg;
			break;
		case OPT_TAR_SRC:
			o.tar_src = optarg;
			break;
		case OPT_WORKLOADS:
			o.workloads = optarg;
			break;
		case OPT_ETCD:
			o.etcd = optarg;
			break;
		case 'h':
			usage(stdout);
			status = 0;
			goto out;
		default:
			usage(stderr);
			status = 2;
			goto out;
		}
	}
	bench_signals();
	/* getopt_long() moved the operands to the end: the benchmark name */
	if (optind >= argc) {
		usage(stderr);
		status = 2;
		goto out;
	}
	cmd = argv[optind];
	if (optind + 1 < argc) {
		fprintf(stderr, "pathfs-bench: unexpected argument: %s\n",
			argv[optind + 1]);
		status = 2;
		goto out;
	}

	if (!strcmp(cmd, "subtree")) {
		rc = run_one("subtree", bench_subtree, &o);
	} else if (!strcmp(cmd, "mount")) {
		rc = run_one("mount", bench_mount, &o);
	} else if (!strcmp(cmd, "rename")) {
		rc = run_one("rename", bench_rename, &o);
	} else if (!strcmp(cmd, "content")) {
		rc = run_one("content", bench_content, &o);
	} else if (!strcmp(cmd, "backends")) {
		/* a run of a few minutes at load 15, when a create costs
		 * 20-60 ms on etcd: 2,000 files in 20 folders of 100 etc. */
#define GIVEN(opt) (given & (1ull << ((opt)-OPT_RUNS)))
		if (!GIVEN(OPT_FILES))
			o.files = o.writers ? 10000 : 2000;
		if (!GIVEN(OPT_FANOUT))
			o.fanout = 20;
		if (!GIVEN(OPT_DEPTH))
			o.depth = 1;
		if (!GIVEN(OPT_CHURN))
			o.churn = o.writers ? 200 : 500;
		if (!GIVEN(OPT_WRITE_MB))
			o.write_mb = 64;
#undef GIVEN
		rc = run_one("backends", bench_backends, &o);
	} else if (!strcmp(cmd, "all")) {
		rc = run_one("subtree", bench_subtree, &o);
		c = run_one("mount", bench_mount, &o);
		rc = rc ? rc : c;
		c = run_one("rename", bench_rename, &o);
		rc = rc ? rc : c;
	} else {
		fprintf(stderr, "pathfs-bench: unknown benchmark: %s\n", cmd);
		usage(stderr);
		status = 2;
		goto out;
	}
	if (rc)
		status = 1;
	if (o.csv) {
		c = res_write_csv(o.csv);
		if (c) {
			fprintf(stderr, "pathfs-bench: cannot write %s: %s\n",
				o.csv, strerror(-c));
			status = 1;
		} else {
			progress("wrote %s", o.csv);
		}
	}
	if (o.plot) {
		c = res_write_plot(o.plot);
		if (c) {
			fprintf(stderr, "pathfs-bench: cannot draw %s: %s\n",
				o.plot,
				c == -ENODATA ? "no ratios measured"
					      : strerror(-c));
			status = 1;
		} else {
			progress("wrote %s", o.plot);
		}
	}
out:
	res_free();
	free(o.sizes);
	return status;
}
