/*
 * bench_etcd.c - the etcd cluster of `pathfs-bench backends`: three members
 * on loopback ports, started as our children with their data in a folder of
 * ours, stopped by pid on every way out (etcd_stop(), the signal handler of
 * bench_util.c, and the kernel: each member dies with the bench, through
 * PR_SET_PDEATHSIG).
 *
 * Like tests/etcd_cluster.sh: six free ports from a random base in
 * 20000-59999 (free = we could bind them), etcd's default flags otherwise
 * (every member fsyncs its WAL on the disk of the folder), healthy when
 * `etcdctl endpoint health` says so for all three.
 *
 * Limits: one cluster per process; a port taken between our check and etcd's
 * bind fails the start (the caller reports it).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

/* The members' pids, for etcd_stop() and the signal handler (0: none). */
static volatile pid_t members[3];

/* Kills every member we started and reaps it. Async-signal-safe. */
static void kill_members(void)
{
	int i, st;

	for (i = 0; i < 3; i++) {
		pid_t p = members[i];

		if (p <= 0)
			continue;
		kill(p, SIGKILL);
		while (waitpid(p, &st, 0) < 0 && errno == EINTR)
			;
		members[i] = 0;
	}
}

/* Whether TCP port @port on 127.0.0.1 can be bound now. */
static bool port_free(unsigned port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	int fd, rc;

	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	return rc == 0;
}

static unsigned pick_base(void)
{
	unsigned base = 0, p;
	int try;

	srandom((unsigned)time(NULL) ^ (unsigned)getpid());
	for (try = 0; try < 50; try++) {
		base = 20000 + (unsigned)(random() % 40000);
		base -= base % 2;
		for (p = base; p < base + 6 && port_free(p); p++)
			;
		if (p == base + 6)
			return base;
	}
	return base;
}

static int start_member(const char *dir, unsigned base, int n)
{
	char name[16], data[4200], log[4200], curl[64], purl[64];
	char cluster[256], token[64];
	pid_t pid;
	int fd;

	snprintf(name, sizeof(name), "m%d", n + 1);
	snprintf(data, sizeof(data), "%s/m%d", dir, n + 1);
	snprintf(log, sizeof(log), "%s/m%d.log", dir, n + 1);
	snprintf(curl, sizeof(curl), "http://127.0.0.1:%u", base + 2 * n);
	snprintf(purl, sizeof(purl), "http://127.0.0.1:%u", base + 2 * n + 1);
	snprintf(cluster, sizeof(cluster),
		 "m1=http://127.0.0.1:%u,m2=http://127.0.0.1:%u,"
		 "m3=http://127.0.0.1:%u",
		 base + 1, base + 3, base + 5);
	snprintf(token, sizeof(token), "pathfs-bench-%u", base);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* not our terminal's ^C (we stop it), and gone with us */
		setsid();
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			dup2(fd, 0);
		execlp("etcd", "etcd", "--name", name, "--data-dir", data,
		       "--listen-client-urls", curl, "--advertise-client-urls",
		       curl, "--listen-peer-urls", purl,
		       "--initial-advertise-peer-urls", purl,
		       "--initial-cluster", cluster, "--initial-cluster-token",
		       token, "--initial-cluster-state", "new", (char *)NULL);
		fprintf(stderr, "cannot run etcd: %s\n", strerror(errno));
		_exit(127);
	}
	members[n] = pid;
	return 0;
}

/* Whether every member still runs (reaps one that exited). */
static bool members_alive(void)
{
	int i, st;

	for (i = 0; i < 3; i++)
		if (members[i] > 0 &&
		    waitpid(members[i], &st, WNOHANG) == members[i]) {
			members[i] = 0;
			return false;
		}
	return true;
}

int etcd_start(const char *dir, char *endpoints, size_t len)
{
	unsigned base = pick_base();
	double deadline;
	int n, rc;

	bench_at_signal(kill_members);
	snprintf(endpoints, len, "127.0.0.1:%u,127.0.0.1:%u,127.0.0.1:%u", base,
		 base + 2, base + 4);
	for (n = 0; n < 3; n++) {
		rc = start_member(dir, base, n);
		if (rc)
			goto fail;
	}
	deadline = now_s() + 30;
	for (;;) {
		char ep[256];
		char *argv[] = {(char *)"etcdctl",
				(char *)"--endpoints",
				ep,
				(char *)"--command-timeout=2s",
				(char *)"endpoint",
				(char *)"health",
				NULL};
		double secs;
		pid_t p;
		int st, fd;

		snprintf(ep, sizeof(ep), "%s", endpoints);
		if (!members_alive()) {
			progress(
			    "an etcd member exited at start; see %s/m*.log",
			    dir);
			rc = -ECHILD;
			goto fail;
		}
		/* quietly: etcdctl says "unhealthy" until the leader is in */
		secs = now_s();
		fflush(NULL);
		p = fork();
		if (p == 0) {
			fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
			}
			setenv("ETCDCTL_API", "3", 1);
			execvp(argv[0], argv);
			_exit(127);
		}
		if (p < 0) {
			rc = -errno;
			goto fail;
		}
		while (waitpid(p, &st, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			break;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 127) {
			progress("cannot run etcdctl (etcd-client)");
			rc = -ENOENT;
			goto fail;
		}
		if (now_s() > deadline) {
			progress("the etcd cluster in %s did not become "
				 "healthy in 30 s; see its m*.log",
				 dir);
			rc = -ETIMEDOUT;
			goto fail;
		}
		if (now_s() - secs < 0.2)
			usleep(200000);
	}
	return 0;
fail:
	kill_members();
	return rc;
}

void etcd_stop(void)
{
	kill_members();
}

void etcd_drop_store(const char *eps, const char *name)
{
	if (run_sh("ETCDCTL_API=3 etcdctl --endpoints '%s' del --prefix "
		   "'%s/' >/dev/null",
		   eps, name))
		progress("could not delete the drive's keys %s/ from etcd",
			 name);
}
