/*
 * ctl.c - pathfsctl's commands (placeholder: not yet implemented).
 */
#include "ctl.h"

int ctl_run(struct ctl_env *env, int argc, char **argv)
{
	fprintf(env->err, "pathfsctl: not yet\n");
	return CTL_FAILED;
}
