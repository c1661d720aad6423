/* dir.c - placeholder, being written */
