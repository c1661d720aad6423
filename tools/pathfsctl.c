/*
 * pathfsctl.c - the admin tool's main (placeholder).
 */
#include <stdio.h>

int main(void)
{
	fprintf(stderr, "pathfsctl: not yet\n");
	return 2;
}
