/*
 * fence/json-c/json.h - stands in for the system's <json-c/json.h>
 * in every build above the kv seam (store/kv/meson.build): only
 * store/kv/ calls an engine. Go through kv_i.h.
 */
#error "<json-c/json.h>: only store/kv/ calls the engines; use kv_i.h"
