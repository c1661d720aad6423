/* xattr.c - placeholder, being written */
