/* keys.c - placeholder, being written */
