/* kv.c - placeholder, being written */
