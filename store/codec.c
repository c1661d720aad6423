/* codec.c - placeholder, being written */
