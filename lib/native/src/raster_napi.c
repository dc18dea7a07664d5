/*
 * rasterOverlay(width, height, ops: Float64Array[, out: Uint8Array]) → Buffer | out: the overlay box
 * (premultiplied RGBA) drawn from its operations by raster.c into `out` (width·height·4 bytes: a pooled
 * buffer, so that no new memory is allocated per image) or a new buffer, on the calling thread (the
 * bench's overlays: well under a millisecond).
 */
#define TB_RASTER_NAPI
#include "raster.h"
#include <node_api.h>
#include <stdbool.h>
#include <stdlib.h>

static napi_value raster_overlay(napi_env env, napi_callback_info info) {
  size_t argc = 4, len = 0, outlen = 0;
  napi_value argv[4], out;
  uint32_t w = 0, h = 0;
  napi_typedarray_type type;
  void *data = NULL, *bytes = NULL;
  bool typed = false, given = false;
  napi_valuetype outtype = napi_undefined;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3 || napi_get_value_uint32(env, argv[0], &w) != napi_ok ||
      napi_get_value_uint32(env, argv[1], &h) != napi_ok || napi_is_typedarray(env, argv[2], &typed) != napi_ok || !typed ||
      napi_get_typedarray_info(env, argv[2], &type, &len, &data, NULL, NULL) != napi_ok || type != napi_float64_array ||
      (argc > 3 && napi_typeof(env, argv[3], &outtype) != napi_ok)) {
    napi_throw_type_error(env, NULL, "png-fast: rasterOverlay(width, height, ops: Float64Array[, out: Uint8Array])");
    return NULL;
  }
  if (w == 0 || h == 0 || (uint64_t)w * h > (1u << 26)) {
    napi_throw_range_error(env, NULL, "png-fast: rasterOverlay: bad size");
    return NULL;
  }
  if (argc > 3 && outtype != napi_undefined) {
    if (napi_is_typedarray(env, argv[3], &given) != napi_ok || !given || napi_get_typedarray_info(env, argv[3], &type, &outlen, &bytes, NULL, NULL) != napi_ok ||
        type != napi_uint8_array || outlen != (size_t)w * h * 4) {
      napi_throw_range_error(env, NULL, "png-fast: rasterOverlay: out must be a Uint8Array of width·height·4 bytes");
      return NULL;
    }
    out = argv[3];
  } else if (napi_create_buffer(env, (size_t)w * h * 4, &bytes, &out) != napi_ok) {
    return NULL;
  }
  tb_raster *r = tb_raster_new(w, h, bytes);
  if (!r) {
    napi_throw_error(env, NULL, "png-fast: rasterOverlay: out of memory");
    return NULL;
  }
  const double *op = data;
  for (size_t at = 0, used = 0; at < len; at += used) {
    if (tb_raster_op(r, op + at, len - at, &used) != 0) {
      tb_raster_free(r);
      napi_throw_range_error(env, NULL, "png-fast: rasterOverlay: a malformed operation (or out of memory)");
      return NULL;
    }
  }
  tb_raster_free(r);
  return out;
}

void tb_raster_register(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "rasterOverlay", NAPI_AUTO_LENGTH, raster_overlay, NULL, &fn) == napi_ok) napi_set_named_property(env, exports, "rasterOverlay", fn);
}
