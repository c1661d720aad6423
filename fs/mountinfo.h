/*
 * mountinfo.h - one line of a /proc/PID/mountinfo table, parsed
 * (mountinfo.c): the daemon's start (is a closing daemon's mount gone?) and
 * the second mount (second.c: which mounts are of a connection) read it.
 */
#ifndef PATHFS_MOUNTINFO_H
#define PATHFS_MOUNTINFO_H

/* One line, split in place (the strings point into it; escapes undone). */
struct mountinfo {
	unsigned maj, min; /* the mount's device */
	char *root, *point, *type, *source;
};

/*
 * Parses @line ("ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - TYPE
 * SOURCE SUPER", as getline() read it) into @m, in place: the kernel's
 * octal escapes (\040 for a space) of ROOT, POINT and SOURCE undone.
 * Returns 0, or -1 for a line of another shape.
 */
int mountinfo_parse(char *line, struct mountinfo *m);

#endif
