/*
 * proto.h - the control socket's protocol, shared by its two halves: the
 * server in the daemon (fs/control.c) and the client in pathfsctl
 * (client.c). One command per connection, both directions little-endian:
 *
 *   request:  "PFSCTL1\n", u32 flags (CONTROL_F_*), u32 n, then n strings,
 *             each u32 length + bytes: the drive ("" = the daemon's default)
 *             and then argv[0..n-2] of the command.
 *   response: frames of u8 type, u32 length, payload:
 *             'o' bytes for stdout, 'e' bytes for stderr, then one final
 *             'x' frame carrying the exit status as a u32, or 'r' (refused:
 *             the peer is not root nor the mounting user; payload a message).
 *
 * The socket is <store dir>/pathfs.sock, mode 0600. A store on etcd has no
 * directory: its writer's socket is in the abstract namespace (no file; seen
 * by the processes of this machine's network namespace), named after the
 * store (its members sorted, and its NAME): "@pathfs-ctl/etcd/<hash>". Its
 * client checks that root or its own user serves it (anyone may bind an
 * abstract name), its server who connects, as on the socket file.
 *
 * Limits: a request holds at most CONTROL_MAX_ARGS strings of
 * CONTROL_MAX_ARG bytes each; a frame at most CONTROL_MAX_FRAME bytes. A
 * store path longer than sun_path is reached through /proc/self/fd.
 */
#ifndef PATHFS_PROTO_H
#define PATHFS_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/un.h>

/* Name of the socket file inside the store directory. */
#define CONTROL_SOCKET_NAME "pathfs.sock"

/* The abstract socket of a store on etcd: this, its NAME, '/', then 16 hex
 * digits (proto.c). */
#define CONTROL_SOCKET_REMOTE "pathfs-ctl/etcd/"

#define CONTROL_MAGIC	   "PFSCTL1\n"
#define CONTROL_MAGIC_LEN  8
#define CONTROL_F_PROGRESS 0x1 /* the client's stderr is a terminal */
#define CONTROL_MAX_ARGS   256
/* MAX_ARG_STRLEN: no command-line argument is longer (a DRIVE:/PATH of
 * TREE_PATH_MAX bytes, a resume token) */
#define CONTROL_MAX_ARG	  (128 * 1024)
#define CONTROL_MAX_FRAME (1u << 20)

/* Frame types of the response. */
#define CONTROL_FRAME_OUT     'o'
#define CONTROL_FRAME_ERR     'e'
#define CONTROL_FRAME_EXIT    'x'
#define CONTROL_FRAME_REFUSED 'r'

/*
 * Fills @sa with the socket path of the store whose directory is @dir, open
 * as @dirfd (-1: not open): the plain path when it fits, else through
 * /proc/self/fd/N; for an etcd URL the abstract name (sun_path[0] is NUL;
 * give sizeof(*sa) as its length to bind and connect). Errors:
 * -ENAMETOOLONG, and for an etcd URL -EINVAL (malformed), -ENOMEM.
 */
int proto_sock_addr(struct sockaddr_un *sa, const char *dir, int dirfd);

void proto_put_u32(unsigned char *p, uint32_t v);
uint32_t proto_get_u32(const unsigned char *p);
/* Sends all of @len bytes. Errors: -errno (-EPIPE when the peer is gone). */
int proto_send_all(int fd, const void *buf, size_t len);
/* Reads exactly @len bytes. Errors: -ECONNRESET on EOF, -errno. */
int proto_recv_all(int fd, void *buf, size_t len);
/* Sends one response frame. Errors: as proto_send_all(). */
int proto_send_frame(int fd, char type, const void *buf, size_t len);

/* A request of control_request(). */
struct control_req {
	const char *store; /* the store's path or etcd URL */
	const char *drive; /* NULL or "": the daemon's */
	int argc;	   /* 1..CONTROL_MAX_ARGS - 1 strings of argv */
	char **argv;
	uint32_t flags; /* CONTROL_F_* */
	/* talk only to a daemon of root or of our effective user, on any
	 * socket (a caller acting on the answer as root); else only an
	 * abstract socket's peer is checked: root or our user, or we are
	 * root */
	bool strict_peer;
	int timeout_s; /* per send and receive; 0: none */
	/* each 'o' and 'e' frame (NUL-terminated after @len), and a refusal's
	 * message ('r'); a non-zero return stops and is returned */
	int (*frame)(void *ctx, char type, const char *buf, size_t len);
	void *ctx;
};

/*
 * The client half (client.c): if a daemon serves @req->store, runs
 * @req->argv there, handing the response's frames to @req->frame, and
 * returns the command's exit status (>= 0). Errors: -ENOENT (no daemon
 * serves the store: no socket, nobody listens, a malformed URL), -EACCES
 * (the daemon refused us, or a peer we do not talk to), -EPIPE (closed
 * without a status), -EPROTO, -E2BIG, -EAGAIN (timed out), -errno, or
 * what @req->frame returned.
 */
int control_request(const struct control_req *req);

/*
 * pathfsctl's call (control_request()): if a daemon serves
 * @store_dir, runs argv there, copying its output to stdout/stderr, and
 * returns the exit status (>= 0). Returns -ENOENT if no daemon serves the
 * store (caller opens it itself), -EACCES if it refused us (said on
 * stderr), or another negative errno.
 */
int control_call(const char *store_dir, const char *drive, int argc,
		 char **argv);

#endif
