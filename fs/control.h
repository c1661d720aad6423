/*
 * control.h - the server half of the daemon's control socket, through which
 * pathfsctl runs its commands on a mounted store (the engine:
 * ctl/include/ctl.h; the protocol and the client half:
 * ctl/include/proto.h).
 *
 * The socket is <store dir>/pathfs.sock, mode 0600. Each connection's peer
 * credentials are checked (SO_PEERCRED): only root and the user who mounted
 * are served; others are refused and logged.
 */
#ifndef PATHFS_CONTROL_H
#define PATHFS_CONTROL_H

#include "ctl.h"

struct control;

/*
 * Starts serving on the store's socket in a thread of its own. @tmpl gives the
 * store, mounted drive and daemon hooks for each command (out/err are set per
 * connection). @owner is the uid allowed beside root.
 * Errors: -EADDRINUSE (a live daemon already serves this store), -errno.
 */
int control_start(struct control **out, const struct ctl_env *tmpl,
		  uid_t owner);
/*
 * The request (argv of one string) a second mount of the store sends
 * (fs/second.c): answered with the line of control_set_mount(), exit 0, or
 * exit 1 and no line before it was set. Not a pathfsctl command (they never
 * start with "--").
 */
#define CONTROL_MOUNT_INFO "--mount-info"

/* Sets the line CONTROL_MOUNT_INFO answers (copied). Errors: -ENOMEM. */
int control_set_mount(struct control *c, const char *info);

/* Stops serving and removes the socket. Safe on NULL. */
void control_stop(struct control *c);

#endif
