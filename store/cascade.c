/* cascade.c - placeholder, being written */
