/*
 * acl_i.h - POSIX ACLs (acl.c): the two system.posix_acl_* xattrs, checked,
 * kept in step with the mode and inherited by new nodes.
 *
 * Internal to store/. fs/ and tools/ use tree.h only.
 */
#ifndef PATHFS_ACL_I_H
#define PATHFS_ACL_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "drive_i.h"

#define ACL_ACCESS  "system.posix_acl_access"
#define ACL_DEFAULT "system.posix_acl_default"

/* 1 if @name is the access ACL, 2 if the default ACL, 0 if neither. */
int acl_kind(const char *name);

/*
 * Checks @val (@len bytes) as the xattr form of an ACL: version 2, then
 * entries of tag/perm/id in order USER_OBJ, USER..., GROUP_OBJ, GROUP...,
 * MASK, OTHER, each object entry once, named entries by rising id, MASK
 * present when named entries are, perms within rwx. Errors: -EINVAL.
 */
int acl_check(const void *val, size_t len);

/*
 * The mode that access ACL @val (checked) gives: @mode with its rwx bits
 * from USER_OBJ, MASK (or GROUP_OBJ without one) and OTHER. Returns 1 if
 * the ACL says more than the mode (named entries or a MASK: it is kept), 0
 * if the mode says it all (it is not stored).
 */
int acl_to_mode(const void *val, size_t len, mode_t *mode);

/*
 * Adds to @b what a chmod to a->mode does to the access ACL of inode @a, if
 * it has one (TREE_F_ACL): USER_OBJ, MASK (or GROUP_OBJ without one) and
 * OTHER take the mode's rwx bits. Caller holds the inode's stripe.
 * Errors: -EIO.
 */
int acl_batch_chmod(struct tree *t, struct kv_batch *b,
		    const struct tree_attr *a);

/*
 * Adds to @b the ACLs of new node @a (its ino and mode set) made in folder
 * @dir, and sets a->mode's rwx bits: without a default ACL on @dir
 * (TREE_F_DEFACL), the mode less @umask; with one, the default masked by
 * the mode as POSIX says (the access ACL, stored unless the mode says it
 * all: TREE_F_ACL), and a new folder inherits the default ACL too
 * (TREE_F_DEFACL). A symlink gets nothing. Errors: -EIO.
 */
int acl_batch_inherit(struct tree *t, struct kv_batch *b,
		      const struct tree_attr *dir, struct tree_attr *a,
		      mode_t umask);

#endif
