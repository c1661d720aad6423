/*
 * args.c - pathfsctl's path and drive arguments ("/PATH" on the -d drive or
 * "DRIVE:/PATH"; a trailing "/" dropped; empty, "." and ".." names refused)
 * and the daemon's hooks around a command's work on the mounted drive.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl_i.h"

/*
 * Checks and normalises path @in (a trailing "/" dropped) into @buf of
 * TREE_PATH_MAX + 1 bytes. Returns 0 or CTL_USAGE (message printed).
 */
int ctl_check_path(struct ctx *x, const char *in, char *buf)
{
	size_t len = strlen(in);
	int rc;

	if (in[0] != '/')
		return ctl_usage_error(
		    x,
		    "'%s': a path must start with '/' (or be "
		    "DRIVE:/PATH)",
		    in);
	while (len > 1 && in[len - 1] == '/')
		len--;
	if (len > TREE_PATH_MAX)
		return ctl_usage_error(x, "path too long (%s)",
				       "over " CTL_STR(TREE_PATH_MAX) " bytes");
	memcpy(buf, in, len);
	buf[len] = '\0';
	/* the store's rule (tree.h): -ENAMETOOLONG is a name over 255 bytes,
	 * the length was checked above */
	rc = tree_path_check(buf);
	if (rc == -ENAMETOOLONG)
		return ctl_usage_error(x, "'%s': a name is over 255 bytes", in);
	if (rc)
		return ctl_usage_error(
		    x, "'%s': empty, '.' or '..' name in path", in);
	return 0;
}

int ctl_check_drive(struct ctx *x, const char *name)
{
	if (store_drive_name_check(name))
		return ctl_usage_error(x,
				       "'%s': bad drive id (1 to 64 of A-Z a-z "
				       "0-9 _ . -)",
				       name);
	return 0;
}

/* Opens drive @name; prints why not. Returns 0, CTL_USAGE or CTL_FAILED. */
int ctl_open_drive(struct ctx *x, const char *name, struct tree **t)
{
	int rc;

	if (ctl_check_drive(x, name))
		return CTL_USAGE;
	rc = store_drive(x->env->store, name, t);
	if (rc == -ENOENT) {
		fprintf(x->err, "pathfsctl: %s: no drive '%s' in this store\n",
			x->cmd->name, name);
		return CTL_FAILED;
	}
	if (rc) {
		ctl_fail(x, name, rc);
		return CTL_FAILED;
	}
	return 0;
}

/*
 * Resolves @arg, "/path" on the default drive or "DRIVE:/path", to a drive
 * handle and a normalised path in @path (TREE_PATH_MAX + 1 bytes).
 * Returns 0, CTL_USAGE or CTL_FAILED (message printed).
 */
int ctl_resolve(struct ctx *x, const char *arg, struct tree **t, char *path)
{
	char drive[TREE_DRIVE_MAX + 2];
	const char *colon, *p = arg;
	int rc;

	if (arg[0] == '/') {
		snprintf(drive, sizeof(drive), "%s",
			 x->env->default_drive ? x->env->default_drive
					       : "main");
	} else {
		colon = strchr(arg, ':');
		if (!colon)
			return ctl_usage_error(
			    x,
			    "'%s': a path must start with '/' "
			    "(or be DRIVE:/PATH)",
			    arg);
		if ((size_t)(colon - arg) > TREE_DRIVE_MAX || colon == arg)
			return ctl_usage_error(x, "'%s': bad drive id", arg);
		memcpy(drive, arg, (size_t)(colon - arg));
		drive[colon - arg] = '\0';
		p = colon + 1;
	}
	rc = ctl_check_path(x, p, path);
	if (rc)
		return rc;
	return ctl_open_drive(x, drive, t);
}

/* ---- daemon hooks ------------------------------------------------------- */

/* true if @t is the drive the daemon serves (its hooks apply) */
bool ctl_mounted(struct ctx *x, struct tree *t)
{
	return x->env->mounted_drive &&
	       !strcmp(tree_drive_name(t), x->env->mounted_drive);
}

void ctl_hold(struct ctx *x, struct tree *t, const char *path,
	      const char *newpath)
{
	if (ctl_mounted(x, t) && x->env->begin)
		x->env->begin(x->env->ctx, t, path, newpath);
}

void ctl_release(struct ctx *x, struct tree *t, const char *path,
		 const char *newpath)
{
	if (ctl_mounted(x, t) && x->env->end)
		x->env->end(x->env->ctx, t, path, newpath);
}
