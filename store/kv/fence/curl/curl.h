/*
 * fence/curl/curl.h - stands in for the system's <curl/curl.h>
 * in every build above the kv seam (store/kv/meson.build): only
 * store/kv/ calls an engine. Go through kv_i.h.
 */
#error "<curl/curl.h>: only store/kv/ calls the engines; use kv_i.h"
