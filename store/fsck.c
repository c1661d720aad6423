/* fsck.c - placeholder, being written */
