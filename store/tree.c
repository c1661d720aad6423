/* tree.c - placeholder, being written */
