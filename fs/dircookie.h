/*
 * dircookie.h - stable folder listing offsets.
 *
 * A listing is a children scan in name order, resumed after a name. The
 * offset (d_off) the daemon gives each entry is a cookie of its name, so a
 * reader that comes back with an offset, from any open of the folder (the
 * kernel's listing cache is shared by all of them) and after any number of
 * changes, resumes right after that name: entries that stayed are listed
 * exactly once. The table maps recently listed cookies back to names; an
 * offset it forgot is found again by scanning the folder (fs_do_readdir()).
 *
 * Cookies are SipHash-2-4 of the name under a random per-mount key, in
 * [3, 2^62 + 2] (1 and 2 are "." and ".."), so nobody can make two names of
 * a folder collide on purpose.
 *
 * Limits: the table remembers the last DIRCOOKIE_CAP listed entries of all
 * folders (oldest forgotten first); an offset whose name is both forgotten
 * and gone from the folder lists the folder from the start again.
 */
#ifndef PATHFS_DIRCOOKIE_H
#define PATHFS_DIRCOOKIE_H

#include <stddef.h>
#include <stdint.h>

#define DIRCOOKIE_CAP (1u << 18)

struct dircookies;

/* Creates an empty table with a fresh random key. Errors: -ENOMEM. */
int dircookies_new(struct dircookies **out);

/* Frees @dc (NULL is fine). */
void dircookies_free(struct dircookies *dc);

/* The offset of child @name (@len bytes) in any folder: >= 3. */
uint64_t dircookie_of(const struct dircookies *dc, const char *name,
		      size_t len);

/*
 * Remembers that @cookie in folder @dir stands for @name; forgets the oldest
 * entry when full. Without memory it remembers nothing (the scan finds it).
 * Thread-safe.
 */
void dircookies_put(struct dircookies *dc, uint64_t dir, uint64_t cookie,
		    const char *name, size_t len);

/*
 * The name @cookie stands for in folder @dir, as a malloc'd copy the caller
 * frees, or NULL if not remembered (or out of memory). Thread-safe.
 */
char *dircookies_get(struct dircookies *dc, uint64_t dir, uint64_t cookie);

#endif
