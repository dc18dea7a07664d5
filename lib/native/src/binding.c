/*
 * Node-API binding of the PNG encoder:
 *   encode(pixels, width, height, channels, alpha | null, premultiplied, async, simd) → Buffer | Promise<Buffer>
 *   resizeLinear(src, sw, sh, channels, dst, dw, dh, sx, sy, ox, oy, simd[, cols, tileSize, left, top]) → Promise<void>: bilinear resampling into dst
 *   resizeReduce(src, sw, sh, channels, dst, dw, dh, xFirst, xIndex, xTable, xTaps, yFirst, yIndex, yTable, yTaps, simd[, cols, tileSize, left, top]) → Promise<void>:
 *     downsizing with the caller's taps (per output sample an Int32Array first source sample and row of an
 *     Int16Array table of 12-bit weights; copied here)
 *   `src` of the resamplers is one sw×sh image, or an array of tiles (`cols` a row, tileSize² pixels each,
 *   null: no tile) whose pixels from (left, top) are the sw×sh source, read in place (tiles.h).
 *   blend(rgb, alpha | null, width, height, overlay, left, top, ow, oh): an overlay blended in place (blend.c)
 *   simdLevel() → the instruction set encode uses by default (filter.h's TB_SIMD_*: 1 none, 2 SSE2, 3 AVX2)
 * `simd` caps the instruction set (0: the best there is; tests compare the levels). Async runs on libuv's thread pool (the input buffers are referenced until it completes); sync runs
 * on the calling thread. lib/png-fast.ts validates the arguments for users; they are checked again here.
 */
#include <node_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "blend.h"
#define TB_RASTER_NAPI
#include "raster.h"
#include "checksum.h"
#include "deflate.h"
#include "filter.h"
#include "png_encode.h"
#include "reduce.h"
#include "resample.h"

#define CHECK(env, call)                                          \
  do {                                                            \
    if ((call) != napi_ok) {                                      \
      napi_throw_error((env), NULL, "png-fast: " #call " failed"); \
      return NULL;                                                \
    }                                                             \
  } while (0)

/* Resampling arguments (tb_resample_linear's). */
typedef struct {
  tb_tiles src;
  uint8_t *dst;
  int dw, dh;
  double sx, sy, ox, oy;
  int simd;
} resize_args;

typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  napi_ref refs[2];
  /* Encode a PNG (in → out), or resample: bilinear (rs) or reduce (rd, its tap arrays owned by the job). */
  enum { JOB_ENCODE, JOB_LINEAR, JOB_REDUCE } kind;
  tb_png_input in;
  tb_png_output out;
  resize_args rs;
  tb_reduce rd;
  void *taps;
  /* The resampler's source tile pointers (tb_tiles.tiles). */
  const uint8_t **tiles;
  const char *error;
} job;

/* The bytes of a Uint8Array (or Buffer) argument; NULL with a TypeError thrown otherwise. */
static const uint8_t *bytes_of(napi_env env, napi_value v, size_t *len, const char *name) {
  napi_typedarray_type type;
  void *data = NULL;
  bool is_typed = false;
  if (napi_is_typedarray(env, v, &is_typed) != napi_ok || !is_typed ||
      napi_get_typedarray_info(env, v, &type, len, &data, NULL, NULL) != napi_ok || type != napi_uint8_array) {
    char msg[96];
    snprintf(msg, sizeof msg, "png-fast: %s must be a Uint8Array or Buffer", name);
    napi_throw_type_error(env, NULL, msg);
    return NULL;
  }
  /* An empty array may have no data pointer; the size check that follows rejects it. */
  return data ? data : (const uint8_t *)"";
}

static void execute(napi_env env, void *data) {
  (void)env;
  job *j = data;
  if (j->kind == JOB_ENCODE) j->error = tb_png_encode(&j->in, &j->out);
  else if (j->kind == JOB_REDUCE) j->error = tb_resample_reduce(&j->rd) ? "out of memory" : NULL;
  else if (tb_resample_linear(&j->rs.src, j->rs.dst, j->rs.dw, j->rs.dh, j->rs.sx, j->rs.sy, j->rs.ox, j->rs.oy, j->rs.simd)) j->error = "out of memory";
}

static void complete(napi_env env, napi_status status, void *data) {
  job *j = data;
  napi_value result = NULL;
  if (status == napi_ok && !j->error && j->kind != JOB_ENCODE) {
    napi_get_undefined(env, &result);
  } else if (status == napi_ok && !j->error) {
    void *copy;
    if (napi_create_buffer_copy(env, j->out.size, j->out.data, &copy, &result) != napi_ok) j->error = "out of memory";
  } else if (!j->error) {
    j->error = "encoding was cancelled";
  }
  if (j->error) {
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
  napi_delete_async_work(env, j->work);
  free(j->out.data);
  free(j->taps);
  free(j->tiles);
  free(j);
}

/* Queue job j on libuv's pool, keeping `a` and `b` (either may be NULL) alive until it completes; returns its promise. */
static napi_value queue(napi_env env, job *j, napi_value a, napi_value b) {
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
  size_t argc = 8;
  napi_value argv[8];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 8) {
    napi_throw_type_error(env, NULL, "png-fast: encode takes 8 arguments");
    return NULL;
  }
  tb_png_input in = {0};
  uint32_t width, height, channels, simd;
  bool premultiplied, async;
  size_t plen, alen = 0;
  napi_valuetype alpha_type;
  if (!(in.pixels = bytes_of(env, argv[0], &plen, "pixels"))) return NULL;
  if (napi_get_value_uint32(env, argv[1], &width) != napi_ok || napi_get_value_uint32(env, argv[2], &height) != napi_ok ||
      napi_get_value_uint32(env, argv[3], &channels) != napi_ok || napi_get_value_bool(env, argv[5], &premultiplied) != napi_ok ||
      napi_get_value_bool(env, argv[6], &async) != napi_ok || napi_get_value_uint32(env, argv[7], &simd) != napi_ok) {
    napi_throw_type_error(env, NULL, "png-fast: width, height, channels, simd must be numbers and premultiplied, async booleans");
    return NULL;
  }
  CHECK(env, napi_typeof(env, argv[4], &alpha_type));
  if (alpha_type != napi_null && alpha_type != napi_undefined && !(in.alpha = bytes_of(env, argv[4], &alen, "alpha"))) return NULL;
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
    napi_value result;
    void *copy;
    napi_status s = napi_create_buffer_copy(env, out.size, out.data, &copy, &result);
    free(out.data);
    CHECK(env, s);
    return result;
  }
  job *j = calloc(1, sizeof *j);
  if (!j) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  j->in = in;
  return queue(env, j, argv[0], in.alpha ? argv[4] : NULL);
}

/*
 * A resampler's source (argv[0]: an image or an array of tiles; grid: cols, tileSize, left, top) of sw × sh
 * pixels of ch bytes into t, its tile pointers malloc'ed into *ptrs; false with an error thrown otherwise.
 */
static bool read_source(napi_env env, napi_value v, const napi_value *grid, size_t argc_grid, int sw, int sh, int ch, tb_tiles *t, const uint8_t ***ptrs) {
  bool is_array = false;
  uint32_t n = 1, g[4] = {0};
  const char *bad = NULL;
  if (napi_is_array(env, v, &is_array) != napi_ok) return false;
  if (is_array) {
    if (argc_grid < 4 || napi_get_array_length(env, v, &n) != napi_ok) bad = "an array of tiles needs cols, tileSize, left, top";
    for (int i = 0; i < 4 && !bad; i++)
      if (napi_get_value_uint32(env, grid[i], &g[i]) != napi_ok) bad = "cols, tileSize, left, top must be numbers";
    if (!bad && (!n || !g[0] || !g[1] || n % g[0] || (uint64_t)g[2] + sw > (uint64_t)g[0] * g[1] || (uint64_t)g[3] + sh > (uint64_t)n / g[0] * g[1])) bad = "the region is not inside the tiles";
  }
  if (bad) {
    char msg[128];
    snprintf(msg, sizeof msg, "png-fast: %s", bad);
    napi_throw_range_error(env, NULL, msg);
    return false;
  }
  *ptrs = calloc(n, sizeof **ptrs);
  if (!*ptrs) {
    napi_throw_error(env, NULL, "out of memory");
    return false;
  }
  const size_t want = is_array ? (size_t)g[1] * g[1] * ch : (size_t)sw * sh * ch;
  uint32_t i = 0;
  for (; i < n; i++) {
    napi_value e = v;
    napi_valuetype type = napi_object;
    size_t len;
    if (is_array && (napi_get_element(env, v, i, &e) != napi_ok || napi_typeof(env, e, &type) != napi_ok)) break;
    if (type == napi_null) continue;
    if (!((*ptrs)[i] = bytes_of(env, e, &len, "src"))) break;
    if (len != want) {
      napi_throw_range_error(env, NULL, "png-fast: src or a tile has the wrong length");
      break;
    }
  }
  if (i == n) {
    *t = is_array ? (tb_tiles){*ptrs, (int)g[0], (int)(n / g[0]), (int)g[1], (int)g[1], (int)g[2], (int)g[3], sw, sh, ch} : tb_tiles_one(*ptrs, sw, sh, ch);
    return true;
  }
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (!pending) napi_throw_error(env, NULL, "png-fast: bad src");
  free(*ptrs), *ptrs = NULL;
  return false;
}

/* resizeLinear(src, sw, sh, channels, dst, dw, dh, sx, sy, ox, oy, simd[, grid]): tb_resample_linear on the thread pool. */
static napi_value resize_linear(napi_env env, napi_callback_info info) {
  size_t argc = 16, dlen;
  napi_value argv[16];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  uint32_t n[6], simd;
  double f[4];
  if (argc < 12) {
    napi_throw_type_error(env, NULL, "png-fast: resizeLinear takes 12 arguments (16 with a grid of tiles)");
    return NULL;
  }
  uint8_t *dst = (uint8_t *)bytes_of(env, argv[4], &dlen, "dst");
  if (!dst) return NULL;
  const int idx[6] = {1, 2, 3, 5, 6, 0};
  for (int i = 0; i < 5; i++) CHECK(env, napi_get_value_uint32(env, argv[idx[i]], &n[i]));
  for (int i = 0; i < 4; i++) CHECK(env, napi_get_value_double(env, argv[7 + i], &f[i]));
  CHECK(env, napi_get_value_uint32(env, argv[11], &simd));
  if (!n[0] || !n[1] || !n[3] || !n[4] || (n[2] != 1 && n[2] != 3) || dlen != (size_t)n[3] * n[4] * n[2] || !(f[0] > 0) || !(f[1] > 0)) {
    napi_throw_range_error(env, NULL, "png-fast: resizeLinear: bad sizes");
    return NULL;
  }
  tb_tiles src;
  const uint8_t **ptrs;
  if (!read_source(env, argv[0], argv + 12, argc - 12, (int)n[0], (int)n[1], (int)n[2], &src, &ptrs)) return NULL;
  job *j = calloc(1, sizeof *j);
  if (!j) {
    free(ptrs);
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  j->kind = JOB_LINEAR;
  j->tiles = ptrs;
  j->rs = (resize_args){src, dst, (int)n[3], (int)n[4], f[0], f[1], f[2], f[3], simd > TB_SIMD_AVX2 ? TB_SIMD_AVX2 : (int)simd};
  return queue(env, j, argv[0], argv[4]);
}

/* The elements of an Int32Array (type napi_int32_array) or Int16Array argument; NULL with a TypeError thrown otherwise. */
static const void *elements_of(napi_env env, napi_value v, napi_typedarray_type want, size_t *len, const char *name) {
  napi_typedarray_type type;
  void *data = NULL;
  bool is_typed = false;
  if (napi_is_typedarray(env, v, &is_typed) != napi_ok || !is_typed || napi_get_typedarray_info(env, v, &type, len, &data, NULL, NULL) != napi_ok || type != want) {
    char msg[96];
    snprintf(msg, sizeof msg, "png-fast: %s must be an %s", name, want == napi_int32_array ? "Int32Array" : "Int16Array");
    napi_throw_type_error(env, NULL, msg);
    return NULL;
  }
  return data ? data : (const void *)"";
}

/* One axis of resizeReduce's taps: first samples, rows of the weight table per output sample, the table. */
typedef struct {
  const int32_t *first, *index;
  const int16_t *table;
  size_t n_first, n_index, n_table;
  uint32_t taps;
} axis_taps;

static bool read_axis(napi_env env, const napi_value *argv, axis_taps *a, const char *names[3]) {
  return (a->first = elements_of(env, argv[0], napi_int32_array, &a->n_first, names[0])) && (a->index = elements_of(env, argv[1], napi_int32_array, &a->n_index, names[1])) &&
         (a->table = elements_of(env, argv[2], napi_int16_array, &a->n_table, names[2])) && napi_get_value_uint32(env, argv[3], &a->taps) == napi_ok;
}

/* Whether the axis has `m` output samples and every index names a row of its table. */
static bool axis_ok(const axis_taps *a, size_t m) {
  if (!a->taps || a->taps > 256 || a->n_first != m || a->n_index != m || a->n_table % a->taps) return false;
  for (size_t X = 0; X < m; X++)
    if (a->index[X] < 0 || (size_t)a->index[X] >= a->n_table / a->taps) return false;
  return true;
}

/* A copy of the axis' arrays (m output samples) at `p`, and the address past it. */
static char *copy_axis(const axis_taps *a, size_t m, char *p, const int32_t **first, const int32_t **index, const int16_t **table) {
  memcpy(p, a->first, m * 4), *first = (const int32_t *)p, p += m * 4;
  memcpy(p, a->index, m * 4), *index = (const int32_t *)p, p += m * 4;
  memcpy(p, a->table, a->n_table * 2), *table = (const int16_t *)p;
  return p + (a->n_table * 2 + 3) / 4 * 4;
}

/*
 * resizeReduce(src, sw, sh, channels, dst, dw, dh, xFirst, xIndex, xTable, xTaps, yFirst, yIndex, yTable, yTaps, simd):
 * tb_resample_reduce on the thread pool (the taps are copied).
 */
static napi_value resize_reduce(napi_env env, napi_callback_info info) {
  size_t argc = 20, dlen;
  napi_value argv[20];
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 16) {
    napi_throw_type_error(env, NULL, "png-fast: resizeReduce takes 16 arguments (20 with a grid of tiles)");
    return NULL;
  }
  uint32_t n[6], simd;
  const int idx[6] = {1, 2, 3, 5, 6, 15};
  axis_taps ax, ay;
  uint8_t *dst = (uint8_t *)bytes_of(env, argv[4], &dlen, "dst");
  if (!dst || !read_axis(env, argv + 7, &ax, (const char *[]){"xFirst", "xIndex", "xTable"}) || !read_axis(env, argv + 11, &ay, (const char *[]){"yFirst", "yIndex", "yTable"})) {
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (!pending) napi_throw_type_error(env, NULL, "png-fast: resizeReduce: xTaps and yTaps must be numbers");
    return NULL;
  }
  for (int i = 0; i < 5; i++) CHECK(env, napi_get_value_uint32(env, argv[idx[i]], &n[i]));
  CHECK(env, napi_get_value_uint32(env, argv[idx[5]], &simd));
  /* n: sw, sh, ch, dw, dh. */
  if (!n[0] || !n[1] || !n[3] || !n[4] || (n[2] != 1 && n[2] != 3) || dlen != (size_t)n[3] * n[4] * n[2] || !axis_ok(&ax, n[3]) || !axis_ok(&ay, n[4])) {
    napi_throw_range_error(env, NULL, "png-fast: resizeReduce: bad sizes or taps");
    return NULL;
  }
  tb_tiles src;
  const uint8_t **ptrs;
  if (!read_source(env, argv[0], argv + 16, argc - 16, (int)n[0], (int)n[1], (int)n[2], &src, &ptrs)) return NULL;
  job *j = calloc(1, sizeof *j);
  char *taps = j ? malloc(((size_t)n[3] + n[4]) * 8 + (ax.n_table + ay.n_table) * 2 + 8) : NULL;
  if (!taps) {
    free(j), free(ptrs);
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  j->kind = JOB_REDUCE;
  j->taps = taps;
  j->tiles = ptrs;
  tb_reduce *rd = &j->rd;
  *rd = (tb_reduce){.src = src, .dst = dst, .ch = (int)n[2], .dw = (int)n[3], .dh = (int)n[4], .xrows = (int)(ax.n_table / ax.taps),
                    .yrows = (int)(ay.n_table / ay.taps), .xtaps = (int)ax.taps, .ytaps = (int)ay.taps, .simd = simd > TB_SIMD_AVX2 ? TB_SIMD_AVX2 : (int)simd};
  copy_axis(&ay, n[4], copy_axis(&ax, n[3], taps, &rd->xfirst, &rd->xindex, &rd->xtable), &rd->yfirst, &rd->yindex, &rd->ytable);
  return queue(env, j, argv[0], argv[4]);
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
  CHECK(env, napi_create_function(env, "resizeLinear", NAPI_AUTO_LENGTH, resize_linear, NULL, &fn));
  CHECK(env, napi_set_named_property(env, exports, "resizeLinear", fn));
  CHECK(env, napi_create_function(env, "resizeReduce", NAPI_AUTO_LENGTH, resize_reduce, NULL, &fn));
  CHECK(env, napi_set_named_property(env, exports, "resizeReduce", fn));
  CHECK(env, napi_create_function(env, "blend", NAPI_AUTO_LENGTH, tb_blend, NULL, &fn));
  CHECK(env, napi_set_named_property(env, exports, "blend", fn));
  tb_raster_register(env, exports);
  CHECK(env, napi_create_function(env, "simdLevel", NAPI_AUTO_LENGTH, simd_level, NULL, &fn));
  CHECK(env, napi_set_named_property(env, exports, "simdLevel", fn));
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
