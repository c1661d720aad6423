/*
 * drives.c - the drives, mkdrive and rmdrive commands.
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

int ctl_cmd_drives(struct ctx *x)
{
	char **names = NULL;
	size_t n = 0, i;
	int rc;

	rc = store_drive_list(x->env->store, &names, &n);
	if (rc) {
		ctl_fail(x, store_dir(x->env->store), rc);
		return CTL_FAILED;
	}
	if (x->o.json)
		fputc('[', x->out);
	for (i = 0; i < n; i++) {
		bool m = x->env->mounted_drive &&
			 !strcmp(names[i], x->env->mounted_drive);

		if (x->o.json) {
			fprintf(x->out, "%s{\"name\": ", i ? ", " : "");
			ctl_put_json(x->out, names[i]);
			fprintf(x->out, ", \"mounted\": %s}",
				m ? "true" : "false");
		} else {
			fprintf(x->out, "%s%s\n", names[i],
				m ? " (mounted)" : "");
		}
	}
	if (x->o.json)
		fputs("]\n", x->out);
	store_drive_list_free(names, n);
	return CTL_OK;
}

int ctl_cmd_mkdrive(struct ctx *x)
{
	const char *name = x->o.pos[0];
	uid_t uid = getuid();
	gid_t gid = getgid();
	int rc;

	if (ctl_check_drive(x, name))
		return CTL_USAGE;
	if (x->o.owner) {
		unsigned long u, g;
		char *end;

		errno = 0;
		u = strtoul(x->o.owner, &end, 10);
		if (errno || end == x->o.owner || *end != ':')
			return ctl_usage_error(x, "'%s': --owner wants UID:GID",
					       x->o.owner);
		g = strtoul(end + 1, &end, 10);
		if (errno || *end || u > UINT32_MAX - 1 || g > UINT32_MAX - 1)
			return ctl_usage_error(x, "'%s': --owner wants UID:GID",
					       x->o.owner);
		uid = (uid_t)u;
		gid = (gid_t)g;
	}
	rc = store_drive_create(x->env->store, name, uid, gid);
	if (rc == -EEXIST) {
		fprintf(x->err, "pathfsctl: mkdrive: drive '%s' exists\n",
			name);
		return CTL_FAILED;
	}
	if (rc) {
		ctl_fail(x, name, rc);
		return CTL_FAILED;
	}
	fprintf(x->out, "created drive %s\n", name);
	return CTL_OK;
}

int ctl_cmd_rmdrive(struct ctx *x)
{
	const char *name = x->o.pos[0];
	int rc;

	if (ctl_check_drive(x, name))
		return CTL_USAGE;
	if (x->env->mounted_drive && !strcmp(name, x->env->mounted_drive)) {
		fprintf(x->err,
			"pathfsctl: rmdrive: drive '%s' is mounted; unmount "
			"it first (nothing changed)\n",
			name);
		return CTL_FAILED;
	}
	rc = store_drive_delete(x->env->store, name);
	if (rc == -ENOENT) {
		fprintf(x->err, "pathfsctl: rmdrive: no drive '%s'\n", name);
		return CTL_FAILED;
	}
	if (rc) {
		ctl_fail(x, name, rc);
		return CTL_FAILED;
	}
	fprintf(x->out, "deleted drive %s\n", name);
	return CTL_OK;
}
