/*
 * control.c - the server half of the daemon's control socket: pathfsctl runs
 * its commands on a mounted store through it (only one process may open a
 * RocksDB store). The protocol, and its client half, are in the ctl library
 * (ctl/include/proto.h).
 *
 * The server accepts on <store>/pathfs.sock (mode 0600) in a thread of its own
 * and runs each connection in a detached worker thread (at most
 * CONTROL_MAX_CONN at once; more wait in the listen backlog). Each worker
 * checks the peer's credentials (SO_PEERCRED), reads the request with a
 * receive timeout, and runs ctl_run() with out/err bound to the connection
 * through fopencookie(3).
 *
 * Limits:
 *  - a request holds at most CONTROL_MAX_ARGS strings of CONTROL_MAX_ARG
 *    bytes each (proto.h);
 *  - interrupting pathfsctl does not stop a command the daemon runs: it goes
 *    on to its end (or its --max-items budget); only its output is lost;
 *  - control_stop() waits for running commands to finish.
 *  - a store path longer than sun_path is reached through /proc/self/fd.
 *
 * A store on etcd has no directory: its read-write mount serves the abstract
 * socket proto.h names after the store (a -o ro mount serves none, so
 * pathfsctl reaches the writer when it runs here, and otherwise opens the
 * store itself); a second daemon binding it gets -EADDRINUSE.
 *
 * One request is the daemon's own, not a pathfsctl command:
 * CONTROL_MOUNT_INFO answers what control_set_mount() said (which FUSE
 * connection serves the store, its drive, ...) for a second mount of the
 * store (fs/second.c).
 *
 * Inside the daemon, the store's open check of the mounted drive (fs/main.c
 * registers it) makes a branch delete keep only open files as orphans.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control.h"
#include "log.h"
#include "proto.h"

#define CONTROL_MAX_CONN  16
#define CONTROL_TIMEOUT_S 10 /* for reading a request / a stalled client */

struct control {
	struct ctl_env tmpl;
	char *default_drive; /* owned copy of tmpl.default_drive */
	char *mounted_drive; /* owned copy of tmpl.mounted_drive */
	uid_t owner;
	int lfd;	/* listening socket */
	int wake[2];	/* self-pipe: control_stop() wakes the acceptor */
	int dirfd;	/* the store directory (O_PATH) */
	dev_t sock_dev; /* the socket file we bound, to unlink only ours */
	ino_t sock_ino;
	pthread_t thread;
	bool thread_started;

	pthread_mutex_t lock;
	pthread_cond_t idle;
	unsigned running; /* protected by lock: live worker threads */
	char *mount_info; /* protected by lock: control_set_mount's line */
};
/* ---- server ----------------------------------------------------------- */

/* A FILE* stream that sends what is written as frames of one type. */
struct conn_stream {
	int fd;
	char type;
	bool *broken; /* shared by out and err: the peer went away */
};

/* fopencookie's write: reports everything as written so the command's output
 * calls never fail; a gone client is not the command's concern, its output is
 * dropped from then on. */
static ssize_t stream_write(void *cookie, const char *buf, size_t len)
{
	struct conn_stream *cs = cookie;
	size_t left = len;

	while (left > 0 && !*cs->broken) {
		size_t n = left > CONTROL_MAX_FRAME ? CONTROL_MAX_FRAME : left;

		if (proto_send_frame(cs->fd, cs->type, buf, n))
			*cs->broken = true;
		buf += n;
		left -= n;
	}
	return (ssize_t)len;
}

struct request {
	uint32_t flags;
	char *drive;
	int argc;
	char **argv; /* argc + 1 entries, NULL-terminated */
};

static void request_release(struct request *r)
{
	int i;

	free(r->drive);
	if (r->argv)
		for (i = 0; i < r->argc; i++)
			free(r->argv[i]);
	free(r->argv);
}

/* Reads one string of the request into a malloc'd NUL-terminated copy. */
static int recv_string(int fd, char **out)
{
	unsigned char len[4];
	uint32_t n;
	char *s;
	int rc;

	rc = proto_recv_all(fd, len, sizeof(len));
	if (rc)
		return rc;
	n = proto_get_u32(len);
	if (n > CONTROL_MAX_ARG)
		return -E2BIG;
	s = malloc(n + 1);
	if (!s)
		return -ENOMEM;
	rc = proto_recv_all(fd, s, n);
	if (rc) {
		free(s);
		return rc;
	}
	s[n] = '\0';
	if (strlen(s) != n) { /* an embedded NUL: not something argv holds */
		free(s);
		return -EINVAL;
	}
	*out = s;
	return 0;
}

/* Errors: -EPROTO (bad magic), -E2BIG, -EINVAL, -ECONNRESET, -errno. */
static int recv_request(int fd, struct request *r)
{
	unsigned char hdr[CONTROL_MAGIC_LEN + 8];
	uint32_t n, i;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = proto_recv_all(fd, hdr, sizeof(hdr));
	if (rc)
		goto out;
	if (memcmp(hdr, CONTROL_MAGIC, CONTROL_MAGIC_LEN)) {
		rc = -EPROTO;
		goto out;
	}
	r->flags = proto_get_u32(hdr + CONTROL_MAGIC_LEN);
	n = proto_get_u32(hdr + CONTROL_MAGIC_LEN + 4);
	if (n < 2 || n > CONTROL_MAX_ARGS) {
		rc = -E2BIG;
		goto out;
	}
	rc = recv_string(fd, &r->drive);
	if (rc)
		goto out;
	r->argv = calloc(n, sizeof(char *));
	if (!r->argv) {
		rc = -ENOMEM;
		goto out;
	}
	for (i = 0; i + 1 < n; i++) {
		rc = recv_string(fd, &r->argv[i]);
		if (rc)
			goto out;
		r->argc++;
	}
out:
	return rc;
}

/* Answers CONTROL_MOUNT_INFO: the line control_set_mount() gave, exit 0,
 * or exit 1 with nothing when there is none (yet). */
static void serve_mount_info(struct control *c, int fd)
{
	unsigned char st[4];
	int status = 1;

	pthread_mutex_lock(&c->lock);
	if (c->mount_info &&
	    !proto_send_frame(fd, CONTROL_FRAME_OUT, c->mount_info,
			      strlen(c->mount_info)))
		status = 0;
	pthread_mutex_unlock(&c->lock);
	proto_put_u32(st, (uint32_t)status);
	proto_send_frame(fd, CONTROL_FRAME_EXIT, st, sizeof(st));
}

struct conn {
	struct control *c;
	int fd;
};

static void serve(struct control *c, int fd)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	struct request req;
	struct ctl_env env;
	struct conn_stream os = {fd, CONTROL_FRAME_OUT, NULL};
	struct conn_stream es = {fd, CONTROL_FRAME_ERR, NULL};
	cookie_io_functions_t io = {.write = stream_write};
	struct timeval tv = {CONTROL_TIMEOUT_S, 0};
	bool broken = false;
	unsigned char st[4];
	int rc, status;

	memset(&req, 0, sizeof(req));
	memset(&env, 0, sizeof(env));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen)) {
		plog(LOG_ERR, "control: cannot get peer credentials: %s",
		     strerror(errno));
		goto out;
	}
	if (cred.uid != 0 && cred.uid != c->owner) {
		char msg[160];

		plog(LOG_WARNING,
		     "control: refused uid %u (pid %d): not root or %u",
		     (unsigned)cred.uid, (int)cred.pid, (unsigned)c->owner);
		snprintf(msg, sizeof(msg),
			 "only root and uid %u may control this mount",
			 (unsigned)c->owner);
		proto_send_frame(fd, CONTROL_FRAME_REFUSED, msg, strlen(msg));
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	rc = recv_request(fd, &req);
	if (rc) {
		plog(LOG_WARNING,
		     "control: bad request from uid %u (pid %d): %s",
		     (unsigned)cred.uid, (int)cred.pid, strerror(-rc));
		goto out;
	}

	if (req.argc == 1 && !strcmp(req.argv[0], CONTROL_MOUNT_INFO)) {
		serve_mount_info(c, fd);
		goto out;
	}
	env = c->tmpl;
	os.broken = es.broken = &broken;
	env.out = fopencookie(&os, "w", io);
	env.err = fopencookie(&es, "w", io);
	if (!env.out || !env.err) {
		plog(LOG_ERR, "control: out of memory");
		goto out;
	}
	setvbuf(env.out, NULL, _IOFBF, 65536);
	setvbuf(env.err, NULL, _IOLBF, 4096);
	env.progress = (req.flags & CONTROL_F_PROGRESS) != 0;
	if (req.drive[0])
		env.default_drive = req.drive;
	plog(LOG_INFO, "control: uid %u runs %s%s%s", (unsigned)cred.uid,
	     req.argc ? req.argv[0] : "(nothing)", req.argc > 1 ? " " : "",
	     req.argc > 1 ? req.argv[1] : "");
	status = ctl_run(&env, req.argc, req.argv);
	fflush(env.out);
	fflush(env.err);
	if (!broken) {
		proto_put_u32(st, (uint32_t)status);
		proto_send_frame(fd, CONTROL_FRAME_EXIT, st, sizeof(st));
	}
out:
	if (env.out)
		fclose(env.out);
	if (env.err)
		fclose(env.err);
	request_release(&req);
}

static void *conn_main(void *arg)
{
	struct conn *cn = arg;
	struct control *c = cn->c;

	serve(c, cn->fd);
	close(cn->fd);
	free(cn);
	pthread_mutex_lock(&c->lock);
	c->running--;
	pthread_cond_broadcast(&c->idle);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static void *accept_main(void *arg)
{
	struct control *c = arg;

	for (;;) {
		struct pollfd p[2] = {{c->lfd, POLLIN, 0},
				      {c->wake[0], POLLIN, 0}};
		struct conn *cn;
		pthread_attr_t attr;
		pthread_t th;
		int fd;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			plog(LOG_ERR, "control: poll: %s", strerror(errno));
			break;
		}
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		/* Bound the workers: wait for one to end before accepting. */
		pthread_mutex_lock(&c->lock);
		while (c->running >= CONTROL_MAX_CONN)
			pthread_cond_wait(&c->idle, &c->lock);
		pthread_mutex_unlock(&c->lock);
		fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EINTR && errno != EAGAIN &&
			    errno != ECONNABORTED)
				plog(LOG_WARNING, "control: accept: %s",
				     strerror(errno));
			continue;
		}
		cn = malloc(sizeof(*cn));
		if (!cn) {
			close(fd);
			continue;
		}
		cn->c = c;
		cn->fd = fd;
		pthread_mutex_lock(&c->lock);
		c->running++;
		pthread_mutex_unlock(&c->lock);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, &attr, conn_main, cn)) {
			plog(LOG_ERR, "control: cannot start a worker thread");
			close(fd);
			free(cn);
			pthread_mutex_lock(&c->lock);
			c->running--;
			pthread_cond_broadcast(&c->idle);
			pthread_mutex_unlock(&c->lock);
		}
		pthread_attr_destroy(&attr);
	}
	return NULL;
}

/*
 * Binds @fd to the socket path, replacing a stale socket file nobody answers
 * on. Errors: -EADDRINUSE (someone answers), -errno.
 */
static int bind_socket(struct control *c, int fd, const char *dir)
{
	struct sockaddr_un sa;
	struct stat st;
	int rc, probe;

	rc = proto_sock_addr(&sa, dir, c->dirfd);
	if (rc)
		goto out;
	if (!sa.sun_path[0]) { /* abstract (etcd): no file, nothing stale */
		rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
		goto out;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		goto bound;
	if (errno != EADDRINUSE) {
		rc = -errno;
		goto out;
	}
	/* A socket file exists: is a live daemon behind it? */
	probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (probe < 0) {
		rc = -errno;
		goto out;
	}
	if (connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(probe);
		rc = -EADDRINUSE;
		goto out;
	}
	close(probe);
	plog(LOG_NOTICE, "control: removing stale socket %s/%s", dir,
	     CONTROL_SOCKET_NAME);
	if (unlinkat(c->dirfd, CONTROL_SOCKET_NAME, 0) && errno != ENOENT) {
		rc = -errno;
		goto out;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		rc = -errno;
		goto out;
	}
bound:
	/* Nobody can connect before listen(), so tightening now is safe. */
	if (fchmodat(c->dirfd, CONTROL_SOCKET_NAME, 0600, 0) ||
	    fstatat(c->dirfd, CONTROL_SOCKET_NAME, &st, AT_SYMLINK_NOFOLLOW)) {
		rc = -errno;
		unlinkat(c->dirfd, CONTROL_SOCKET_NAME, 0);
		goto out;
	}
	c->sock_dev = st.st_dev;
	c->sock_ino = st.st_ino;
	rc = 0;
out:
	return rc;
}

int control_start(struct control **out, const struct ctl_env *tmpl, uid_t owner)
{
	struct control *c;
	const char *dir = store_dir(tmpl->store);
	int rc;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->lfd = c->wake[0] = c->wake[1] = c->dirfd = -1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->idle, NULL);
	c->tmpl = *tmpl;
	c->tmpl.out = c->tmpl.err = NULL;
	c->owner = owner;
	if (tmpl->default_drive &&
	    !(c->default_drive = strdup(tmpl->default_drive))) {
		rc = -ENOMEM;
		goto out;
	}
	if (tmpl->mounted_drive &&
	    !(c->mounted_drive = strdup(tmpl->mounted_drive))) {
		rc = -ENOMEM;
		goto out;
	}
	c->tmpl.default_drive = c->default_drive;
	c->tmpl.mounted_drive = c->mounted_drive;

	c->dirfd = store_is_remote(dir)
		       ? -1
		       : open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (c->dirfd < 0 && !store_is_remote(dir)) {
		rc = -errno;
		goto out;
	}
	if (pipe2(c->wake, O_CLOEXEC)) {
		rc = -errno;
		goto out;
	}
	c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->lfd < 0) {
		rc = -errno;
		goto out;
	}
	rc = bind_socket(c, c->lfd, dir);
	if (rc)
		goto out;
	if (listen(c->lfd, 16)) {
		rc = -errno;
		goto out;
	}
	rc = -pthread_create(&c->thread, NULL, accept_main, c);
	if (rc)
		goto out;
	c->thread_started = true;
	*out = c;
out:
	if (rc) {
		if (rc != -EADDRINUSE)
			plog(LOG_ERR, "control: cannot serve %s/%s: %s", dir,
			     CONTROL_SOCKET_NAME, strerror(-rc));
		control_stop(c);
	}
	return rc;
}

int control_set_mount(struct control *c, const char *info)
{
	char *copy = strdup(info);

	if (!copy)
		return -ENOMEM;
	pthread_mutex_lock(&c->lock);
	free(c->mount_info);
	c->mount_info = copy;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void control_stop(struct control *c)
{
	struct stat st;

	if (!c)
		return;
	if (c->thread_started) {
		ssize_t n = write(c->wake[1], "x", 1);

		(void)n;
		pthread_join(c->thread, NULL);
	}
	/* Remove the socket first so new clients fall back or fail fast. */
	if (c->dirfd >= 0 && c->sock_ino &&
	    !fstatat(c->dirfd, CONTROL_SOCKET_NAME, &st, AT_SYMLINK_NOFOLLOW) &&
	    st.st_dev == c->sock_dev && st.st_ino == c->sock_ino)
		unlinkat(c->dirfd, CONTROL_SOCKET_NAME, 0);
	if (c->lfd >= 0)
		close(c->lfd);
	pthread_mutex_lock(&c->lock);
	while (c->running)
		pthread_cond_wait(&c->idle, &c->lock);
	pthread_mutex_unlock(&c->lock);
	if (c->wake[0] >= 0)
		close(c->wake[0]);
	if (c->wake[1] >= 0)
		close(c->wake[1]);
	if (c->dirfd >= 0)
		close(c->dirfd);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->idle);
	free(c->default_drive);
	free(c->mounted_drive);
	free(c->mount_info);
	free(c);
}
