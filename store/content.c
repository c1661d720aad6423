/* content.c - placeholder, being written */
