/*
 * drawOverlay(rgb, alpha | null, width, height, ops: Float64Array, left, top, ow, oh) → undefined: the
 * overlay's operations drawn by raster.c straight onto an image in place (`rgb` premultiplied by
 * `alpha`, null: opaque), within the ow×oh box at (left, top), which must lie inside the image. On the
 * calling thread (the bench's overlays: well under a millisecond).
 */
#define TB_RASTER_NAPI
#include "raster.h"
#include "binding.h"
#include <node_api.h>
#include <stdbool.h>
#include <stdlib.h>

static napi_value draw_overlay(napi_env env, napi_callback_info info) {
  size_t argc = 9, rlen = 0, alen = 0, len = 0;
  napi_value argv[9];
  napi_valuetype atype = napi_undefined;
  uint32_t n[6]; /* width, height, left, top, ow, oh */
  const int idx[6] = {2, 3, 5, 6, 7, 8};
  bool ok = napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == napi_ok && argc == 9 && napi_typeof(env, argv[1], &atype) == napi_ok;
  uint8_t *rgb = ok ? tb_typed(env, argv[0], napi_uint8_array, &rlen) : NULL;
  uint8_t *alpha = ok && atype != napi_null ? tb_typed(env, argv[1], napi_uint8_array, &alen) : NULL;
  const double *ops = ok ? tb_typed(env, argv[4], napi_float64_array, &len) : NULL;
  ok = ok && rgb && ops && (atype == napi_null || alpha);
  for (int i = 0; i < 6 && ok; i++) ok = napi_get_value_uint32(env, argv[idx[i]], &n[i]) == napi_ok;
  if (!ok) {
    napi_throw_type_error(env, NULL, "png-fast: drawOverlay(rgb: Uint8Array, alpha: Uint8Array | null, width, height, ops: Float64Array, left, top, ow, oh)");
    return NULL;
  }
  const uint64_t px = (uint64_t)n[0] * n[1];
  if (rlen != px * 3 || (alpha && alen != px) || n[4] == 0 || n[5] == 0 || (uint64_t)n[2] + n[4] > n[0] || (uint64_t)n[3] + n[5] > n[1]) {
    napi_throw_range_error(env, NULL, "png-fast: drawOverlay: bad buffers or sizes (the box must lie inside the image)");
    return NULL;
  }
  const tb_raster_target t = {rgb, alpha, n[0], n[2], n[3]};
  tb_raster *r = tb_raster_new(n[4], n[5], &t);
  if (!r) {
    napi_throw_error(env, NULL, "png-fast: drawOverlay: out of memory");
    return NULL;
  }
  for (size_t at = 0, used = 0; at < len; at += used) {
    if (tb_raster_op(r, ops + at, len - at, &used) != 0) {
      tb_raster_free(r);
      napi_throw_range_error(env, NULL, "png-fast: drawOverlay: a malformed operation (or out of memory)");
      return NULL;
    }
  }
  tb_raster_free(r);
  return NULL;
}

void tb_raster_register(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "drawOverlay", NAPI_AUTO_LENGTH, draw_overlay, NULL, &fn) == napi_ok) napi_set_named_property(env, exports, "drawOverlay", fn);
}
