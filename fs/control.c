/*
 * control.c - the daemon's control socket (placeholder: serves nothing yet).
 */
#include <errno.h>
#include <stdlib.h>

#include "control.h"

struct control {
	int unused;
};

int control_start(struct control **out, const struct ctl_env *tmpl,
		  uid_t owner)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void control_stop(struct control *c)
{
	free(c);
}

int control_call(const char *store_dir, const char *drive, int argc,
		 char **argv)
{
	return -ENOENT;
}
