/*
 * bench_server.c - the servers `pathfs-bench backends` runs as its children
 * (bench_etcd.c: three etcd members; bench_ddb.c: DynamoDB Local): free
 * loopback ports, a child started in a session of its own with its output
 * in a log file and SIGKILL at our death (PR_SET_PDEATHSIG), a wait until a
 * probe command says it serves, and a stop by pid on every way out
 * (server_stop_all(), and the signal handler of bench_util.c through
 * bench_at_signal()).
 *
 * Limits: SERVER_MAX children at a time; a port taken between our check
 * and the server's bind fails its start (the caller reports it).
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define SERVER_MAX 8

/* The children's pids (0: free slot), for server_stop() and the handler. */
static volatile pid_t servers[SERVER_MAX];

/* Kills and reaps slot @i's server. Async-signal-safe. */
static void kill_slot(int i)
{
	pid_t p = servers[i];
	int st;

	if (p <= 0)
		return;
	kill(p, SIGKILL);
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	servers[i] = 0;
}

/* Async-signal-safe: every server still running. */
static void kill_all(void)
{
	for (int i = 0; i < SERVER_MAX; i++)
		kill_slot(i);
}

void server_stop_all(void)
{
	kill_all();
}

void server_stop(pid_t pid)
{
	for (int i = 0; i < SERVER_MAX; i++)
		if (pid > 0 && servers[i] == pid)
			kill_slot(i);
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

unsigned server_ports(unsigned n)
{
	static bool seeded;
	unsigned base = 0, p;
	int try;

	if (!seeded) {
		srandom((unsigned)time(NULL) ^ (unsigned)getpid());
		seeded = true;
	}
	for (try = 0; try < 50; try++) {
		base = 20000 + (unsigned)(random() % 40000);
		base -= base % 2;
		for (p = base; p < base + n && port_free(p); p++)
			;
		if (p == base + n)
			return base;
	}
	return base;
}

int server_spawn(pid_t *pid, const char *cwd, const char *log,
		 char *const argv[])
{
	int fd, slot;
	pid_t p;

	for (slot = 0; slot < SERVER_MAX && servers[slot]; slot++)
		;
	if (slot == SERVER_MAX)
		return -EMFILE;
	bench_at_signal(kill_all);
	fflush(NULL);
	p = fork();
	if (p < 0)
		return -errno;
	if (p == 0) {
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
		if (cwd && chdir(cwd))
			_exit(127);
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	servers[slot] = p;
	*pid = p;
	return 0;
}

/* Whether the servers @pids (@n of them) all still run (reaps one that
 * exited). */
static bool alive(const pid_t *pids, int n)
{
	int st;

	for (int i = 0; i < n; i++)
		if (waitpid(pids[i], &st, WNOHANG) == pids[i]) {
			server_stop(pids[i]); /* forget it */
			return false;
		}
	return true;
}

/* Runs @probe quietly; its exit status, 127 if it could not run, or
 * -errno. */
static int probe_once(char *const probe[])
{
	pid_t p;
	int st, fd;

	fflush(NULL);
	p = fork();
	if (p < 0)
		return -errno;
	if (p == 0) {
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(probe[0], probe);
		_exit(127);
	}
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int server_wait(const pid_t *pids, int n, char *const probe[], double secs,
		const char *what)
{
	double deadline = now_s() + secs, t;
	int rc;

	for (;;) {
		if (!alive(pids, n)) {
			progress("%s exited at start; see its log", what);
			return -ECHILD;
		}
		t = now_s();
		rc = probe_once(probe);
		if (rc == 0)
			return 0;
		if (rc == 127) {
			progress("cannot run %s (for %s)", probe[0], what);
			return -ENOENT;
		}
		if (rc < 0)
			return rc;
		if (now_s() > deadline) {
			progress("%s did not serve within %.0f s; see its log",
				 what, secs);
			return -ETIMEDOUT;
		}
		if (now_s() - t < 0.2)
			usleep(200000);
	}
}
