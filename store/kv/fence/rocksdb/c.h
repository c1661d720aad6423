/*
 * fence/rocksdb/c.h - stands in for the system's <rocksdb/c.h>
 * in every build above the kv seam (store/kv/meson.build): only
 * store/kv/ calls an engine. Go through kv_i.h.
 */
#error "<rocksdb/c.h>: only store/kv/ calls the engines; use kv_i.h"
