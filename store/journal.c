/* journal.c - placeholder, being written */
