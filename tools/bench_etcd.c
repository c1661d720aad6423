/*
 * bench_etcd.c - the etcd cluster of `pathfs-bench backends`: three members
 * on loopback ports, started as our children with their data in a folder of
 * ours, stopped by pid on every way out (bench_server.c: etcd_stop(), the
 * signal handler of bench_util.c, and the kernel: each member dies with the
 * bench, through PR_SET_PDEATHSIG).
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
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

#include "bench.h"

/* The members' pids (0: none). */
static pid_t members[3];

static int start_member(const char *dir, unsigned base, int n)
{
	char name[16], data[4200], log[4200], curl[64], purl[64];
	char cluster[256], token[64];
	char *argv[] = {(char *)"etcd", (char *)"--name",
			name,		(char *)"--data-dir",
			data,		(char *)"--listen-client-urls",
			curl,		(char *)"--advertise-client-urls",
			curl,		(char *)"--listen-peer-urls",
			purl,		(char *)"--initial-advertise-peer-urls",
			purl,		(char *)"--initial-cluster",
			cluster,	(char *)"--initial-cluster-token",
			token,		(char *)"--initial-cluster-state",
			(char *)"new",	NULL};

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
	return server_spawn(&members[n], NULL, log, argv);
}

int etcd_start(const char *dir, char *endpoints, size_t len)
{
	unsigned base = server_ports(6);
	char ep[256];
	/* etcdctl says "unhealthy" until the leader is in */
	char *probe[] = {(char *)"etcdctl",
			 (char *)"--endpoints",
			 ep,
			 (char *)"--command-timeout=2s",
			 (char *)"endpoint",
			 (char *)"health",
			 NULL};
	int n, rc = 0;

	snprintf(endpoints, len, "127.0.0.1:%u,127.0.0.1:%u,127.0.0.1:%u", base,
		 base + 2, base + 4);
	snprintf(ep, sizeof(ep), "%s", endpoints);
	setenv("ETCDCTL_API", "3", 1);
	for (n = 0; n < 3 && !rc; n++)
		rc = start_member(dir, base, n);
	if (!rc)
		rc = server_wait(members, 3, probe, 30, "the etcd cluster");
	if (rc)
		etcd_stop();
	return rc;
}

void etcd_stop(void)
{
	for (int i = 0; i < 3; i++) {
		server_stop(members[i]);
		members[i] = 0;
	}
}

void etcd_drop_store(const char *eps, const char *name)
{
	if (run_sh("ETCDCTL_API=3 etcdctl --endpoints '%s' del --prefix "
		   "'%s/' >/dev/null",
		   eps, name))
		progress("could not delete the drive's keys %s/ from etcd",
			 name);
}
