/*
 * Node-API binding of the PNG encoder:
 *   encode(pixels, width, height, channels, alpha | null, premultiplied, async, simd[, allocate]) → Buffer | Promise<Buffer>:
 *     the PNG in a new Buffer, or in allocate(size)'s Uint8Array (exactly size bytes, e.g. from a pool)
 *   resizeLinear, resizeReduce: the resamplers (resize_napi.c)
 *   blend(rgb, alpha | null, width, height, overlay, left, top, ow, oh): an overlay blended in place (blend.c)
 *   simdLevel() → the instruction set encode uses by default (filter.h's TB_SIMD_*: 1 none, 2 SSE2, 3 AVX2)
 * `simd` caps the instruction set (0: the best there is; tests compare the levels). Async runs on libuv's thread pool (the input buffers are referenced until it completes); sync runs
 * on the calling thread. lib/png-fast.ts validates the arguments for users; they are checked again here.
 */
#include "binding.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "blend.h"
#define TB_RASTER_NAPI
#include "raster.h"
#include "checksum.h"
#include "deflate.h"
#include "filter.h"
#include "resample.h"

void *tb_typed(napi_env env, napi_value v, napi_typedarray_type want, size_t *len) {
  napi_typedarray_type type;
  void *data = NULL;
  bool is_typed = false;
  if (napi_is_typedarray(env, v, &is_typed) != napi_ok || !is_typed || napi_get_typedarray_info(env, v, &type, len, &data, NULL, NULL) != napi_ok || type != want) return NULL;
  /* An empty array may have no data pointer; the size checks that follow reject it. */
  return data ? data : (void *)"";
}

const uint8_t *tb_bytes_of(napi_env env, napi_value v, size_t *len, const char *name) {
  const uint8_t *data = tb_typed(env, v, napi_uint8_array, len);
  if (!data) {
    char msg[96];
    snprintf(msg, sizeof msg, "png-fast: %s must be a Uint8Array or Buffer", name);
    napi_throw_type_error(env, NULL, msg);
  }
  return data;
}

static void execute(napi_env env, void *data) {
  (void)env;
  job *j = data;
  if (j->kind == JOB_ENCODE) j->error = tb_png_encode(&j->in, &j->out);
  else if ((j->kind == JOB_REDUCE ? tb_resample_reduce : tb_resample_linear)(&j->rd)) j->error = "out of memory";
}

/*
 * The encoded bytes as a JavaScript value: a new Buffer, or, with `allocate` (a function; NULL: none),
 * what allocate(size) returns — a Uint8Array of exactly `size` bytes, e.g. from a pool — filled with
 * them. napi_pending_exception when allocate threw; another status with *error set otherwise.
 */
static napi_status deliver(napi_env env, napi_value allocate, const tb_png_output *out, napi_value *result, const char **error) {
  if (!allocate) {
    void *copy;
    napi_status s = napi_create_buffer_copy(env, out->size, out->data, &copy, result);
    if (s != napi_ok) *error = "out of memory";
    return s;
  }
  napi_value size, global;
  uint8_t *dst = NULL;
  size_t len = 0;
  napi_status s = napi_get_global(env, &global);
  if (s == napi_ok) s = napi_create_double(env, (double)out->size, &size);
  if (s == napi_ok) s = napi_call_function(env, global, allocate, 1, &size, result);
  if (s == napi_pending_exception) return s;
  if (s == napi_ok && (!(dst = tb_typed(env, *result, napi_uint8_array, &len)) || len != out->size)) s = napi_invalid_arg;
  if (s != napi_ok) {
    *error = "png-fast: allocate(size) must return a Uint8Array of exactly size bytes";
    return s;
  }
  memcpy(dst, out->data, out->size);
  return napi_ok;
}

static void complete(napi_env env, napi_status status, void *data) {
  job *j = data;
  napi_value result = NULL, allocate = NULL;
  bool threw = false; /* allocate threw: the promise is rejected with what it threw */
  if (status == napi_ok && !j->error && j->kind != JOB_ENCODE) {
    napi_get_undefined(env, &result);
  } else if (status == napi_ok && !j->error) {
    if (j->allocate && napi_get_reference_value(env, j->allocate, &allocate) != napi_ok) j->error = "png-fast: allocate was lost";
    else if (deliver(env, allocate, &j->out, &result, &j->error) == napi_pending_exception && !(threw = napi_get_and_clear_last_exception(env, &result) == napi_ok)) j->error = "png-fast: allocate threw";
  } else if (!j->error) {
    j->error = "encoding was cancelled";
  }
  if (threw) {
    napi_reject_deferred(env, j->deferred, result);
  } else if (j->error) {
    napi_value msg;
    napi_create_string_utf8(env, j->error, NAPI_AUTO_LENGTH, &msg);
    napi_create_error(env, NULL, msg, &result);
    napi_reject_deferred(env, j->deferred, result);
  } else {
    napi_resolve_deferred(env, j->deferred, result);
  }
  for (int i = 0; i < 2; i++) {
    if (j->refs[i]) napi_delete_reference(env, j->refs[i]);
  }
  if (j->allocate) napi_delete_reference(env, j->allocate);
  napi_delete_async_work(env, j->work);
  free(j->out.data);
  free(j->taps);
  free(j->tiles);
  free(j);
}

napi_value tb_queue(napi_env env, job *j, napi_value a, napi_value b) {
  napi_value promise, name;
  CHECK(env, napi_create_reference(env, a, 1, &j->refs[0]));
  if (b) CHECK(env, napi_create_reference(env, b, 1, &j->refs[1]));
  CHECK(env, napi_create_promise(env, &j->deferred, &promise));
  CHECK(env, napi_create_string_utf8(env, j->kind != JOB_ENCODE ? "tilebake:resize" : "tilebake:png-encode", NAPI_AUTO_LENGTH, &name));
  CHECK(env, napi_create_async_work(env, NULL, name, execute, complete, j, &j->work));
  CHECK(env, napi_queue_async_work(env, j->work));
  return promise;
}

static napi_value encode(napi_env env, napi_callback_info info) {
  size_t argc = 9;
  napi_value argv[9], allocate = NULL;
  napi_valuetype allocate_type = napi_undefined;
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 8) {
    napi_throw_type_error(env, NULL, "png-fast: encode takes 8 or 9 arguments");
    return NULL;
  }
  if (argc > 8) CHECK(env, napi_typeof(env, argv[8], &allocate_type));
  if (allocate_type == napi_function) {
    allocate = argv[8];
  } else if (allocate_type != napi_undefined) {
    napi_throw_type_error(env, NULL, "png-fast: allocate must be a function");
    return NULL;
  }
  tb_png_input in = {0};
  uint32_t width, height, channels, simd;
  bool premultiplied, async;
  size_t plen, alen = 0;
  napi_valuetype alpha_type;
  if (!(in.pixels = tb_bytes_of(env, argv[0], &plen, "pixels"))) return NULL;
  if (napi_get_value_uint32(env, argv[1], &width) != napi_ok || napi_get_value_uint32(env, argv[2], &height) != napi_ok ||
      napi_get_value_uint32(env, argv[3], &channels) != napi_ok || napi_get_value_bool(env, argv[5], &premultiplied) != napi_ok ||
      napi_get_value_bool(env, argv[6], &async) != napi_ok || napi_get_value_uint32(env, argv[7], &simd) != napi_ok) {
    napi_throw_type_error(env, NULL, "png-fast: width, height, channels, simd must be numbers and premultiplied, async booleans");
    return NULL;
  }
  CHECK(env, napi_typeof(env, argv[4], &alpha_type));
  if (alpha_type != napi_null && alpha_type != napi_undefined && !(in.alpha = tb_bytes_of(env, argv[4], &alen, "alpha"))) return NULL;
  const size_t px = (size_t)width * height;
  const char *bad = NULL;
  if (width == 0 || height == 0) bad = "width and height must be at least 1";
  else if (channels != 3 && channels != 4) bad = "channels must be 3 or 4";
  else if (in.alpha && channels != 3) bad = "an alpha plane needs 3-channel pixels";
  else if (plen != px * channels) bad = "pixels has the wrong length for width × height × channels";
  else if (in.alpha && alen != px) bad = "alpha has the wrong length for width × height";
  if (bad) {
    char msg[128];
    snprintf(msg, sizeof msg, "png-fast: %s", bad);
    napi_throw_range_error(env, NULL, msg);
    return NULL;
  }
  in.width = width, in.height = height, in.channels = (int)channels, in.premultiplied = premultiplied, in.simd = simd > TB_SIMD_AVX2 ? TB_SIMD_AVX2 : (int)simd;

  if (!async) {
    tb_png_output out;
    const char *err = tb_png_encode(&in, &out);
    if (err) {
      napi_throw_error(env, NULL, err);
      return NULL;
    }
    napi_value result = NULL;
    napi_status s = deliver(env, allocate, &out, &result, &err);
    free(out.data);
    if (s == napi_pending_exception) return NULL; /* what allocate threw, thrown on */
    if (s != napi_ok) {
      napi_throw_error(env, NULL, err);
      return NULL;
    }
    return result;
  }
  job *j = calloc(1, sizeof *j);
  if (!j) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  j->in = in;
  if (allocate && napi_create_reference(env, allocate, 1, &j->allocate) != napi_ok) {
    free(j);
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  return tb_queue(env, j, argv[0], in.alpha ? argv[4] : NULL);
}

static napi_value simd_level(napi_env env, napi_callback_info info) {
  (void)info;
  napi_value v;
  CHECK(env, napi_create_uint32(env, (uint32_t)tb_simd_level(TB_SIMD_AUTO), &v));
  return v;
}

static napi_value init(napi_env env, napi_value exports) {
  tb_checksum_init();
  tb_deflate_init();
  tb_filter_init();
  napi_value fn;
  CHECK(env, napi_create_function(env, "encode", NAPI_AUTO_LENGTH, encode, NULL, &fn));
  CHECK(env, napi_set_named_property(env, exports, "encode", fn));
  CHECK(env, tb_resize_register(env, exports));
  CHECK(env, napi_create_function(env, "blend", NAPI_AUTO_LENGTH, tb_blend, NULL, &fn));
  CHECK(env, napi_set_named_property(env, exports, "blend", fn));
  tb_raster_register(env, exports);
  CHECK(env, napi_create_function(env, "simdLevel", NAPI_AUTO_LENGTH, simd_level, NULL, &fn));
  CHECK(env, napi_set_named_property(env, exports, "simdLevel", fn));
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
