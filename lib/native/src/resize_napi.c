/*
 * Node-API glue of the resamplers (resample.c: bilinear, reduce.c: lanczos3 downsizing), both taking
 * the caller's taps (lib/resample-fast.ts passes lib/resample-kernel.ts's, which the tile mask uses too):
 *   resizeLinear | resizeReduce(src, sw, sh, channels, dst, dw, dh, xFirst, xIndex, xTable, xTaps, yFirst, yIndex, yTable, yTaps, simd[, cols, tileSize, left, top])
 *     → Promise<void>: per output sample an Int32Array first source sample and row of an Int16Array table of
 *     12-bit weights (copied here); bilinear takes 2 taps a sample.
 *   `src` is one sw×sh image, or an array of tiles (`cols` a row, tileSize² pixels each, null: no tile)
 *   whose pixels from (left, top) are the sw×sh source, read in place (tiles.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "binding.h"
#include "filter.h"

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
    if (!((*ptrs)[i] = tb_bytes_of(env, e, &len, "src"))) break;
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

/* The elements of an Int32Array (type napi_int32_array) or Int16Array argument; NULL with a TypeError thrown otherwise. */
static const void *elements_of(napi_env env, napi_value v, napi_typedarray_type want, size_t *len, const char *name) {
  const void *data = tb_typed(env, v, want, len);
  if (!data) {
    char msg[96];
    snprintf(msg, sizeof msg, "png-fast: %s must be an %s", name, want == napi_int32_array ? "Int32Array" : "Int16Array");
    napi_throw_type_error(env, NULL, msg);
  }
  return data;
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

/*
 * Whether the axis has `m` output samples, its first samples non-decreasing (the resamplers find the
 * source columns read from the ends) and within ±2^30, and every index names a row of its table; for
 * bilinear (`linear`) two taps a sample, its weights non-negative and summing to at most 4096 (so that
 * the sums stay in the halves resample.c keeps).
 */
static bool axis_ok(const axis_taps *a, size_t m, bool linear) {
  if (!a->taps || a->taps > 256 || a->n_first != m || a->n_index != m || a->n_table % a->taps || (linear && a->taps != 2)) return false;
  for (size_t X = 0; X < m; X++) {
    if (a->index[X] < 0 || (size_t)a->index[X] >= a->n_table / a->taps || a->first[X] < -(1 << 30) || a->first[X] > 1 << 30 || (X && a->first[X] < a->first[X - 1])) return false;
  }
  for (size_t k = 0; linear && k < a->n_table; k += 2) {
    if (a->table[k] < 0 || a->table[k + 1] < 0 || a->table[k] + a->table[k + 1] > 4096) return false;
  }
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
 * resizeLinear / resizeReduce(src, sw, sh, channels, dst, dw, dh, xFirst, xIndex, xTable, xTaps, yFirst, yIndex, yTable, yTaps, simd[, grid]):
 * tb_resample_linear or tb_resample_reduce (the callback's data: the job kind) on the thread pool, the taps copied.
 */
static napi_value resize(napi_env env, napi_callback_info info) {
  size_t argc = 20, dlen;
  napi_value argv[20];
  void *kind;
  CHECK(env, napi_get_cb_info(env, info, &argc, argv, NULL, &kind));
  const bool linear = (intptr_t)kind == JOB_LINEAR;
  const char *name = linear ? "resizeLinear" : "resizeReduce";
  char msg[128];
  if (argc < 16) {
    snprintf(msg, sizeof msg, "png-fast: %s takes 16 arguments (20 with a grid of tiles)", name);
    napi_throw_type_error(env, NULL, msg);
    return NULL;
  }
  uint32_t n[6], simd;
  const int idx[6] = {1, 2, 3, 5, 6, 15};
  axis_taps ax, ay;
  uint8_t *dst = (uint8_t *)tb_bytes_of(env, argv[4], &dlen, "dst");
  if (!dst || !read_axis(env, argv + 7, &ax, (const char *[]){"xFirst", "xIndex", "xTable"}) || !read_axis(env, argv + 11, &ay, (const char *[]){"yFirst", "yIndex", "yTable"})) {
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    snprintf(msg, sizeof msg, "png-fast: %s: xTaps and yTaps must be numbers", name);
    if (!pending) napi_throw_type_error(env, NULL, msg);
    return NULL;
  }
  for (int i = 0; i < 5; i++) CHECK(env, napi_get_value_uint32(env, argv[idx[i]], &n[i]));
  CHECK(env, napi_get_value_uint32(env, argv[idx[5]], &simd));
  /* n: sw, sh, ch, dw, dh. */
  if (!n[0] || !n[1] || !n[3] || !n[4] || (n[2] != 1 && n[2] != 3) || dlen != (size_t)n[3] * n[4] * n[2] || !axis_ok(&ax, n[3], linear) || !axis_ok(&ay, n[4], linear)) {
    snprintf(msg, sizeof msg, "png-fast: %s: bad sizes or taps", name);
    napi_throw_range_error(env, NULL, msg);
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
  j->kind = linear ? JOB_LINEAR : JOB_REDUCE;
  j->taps = taps;
  j->tiles = ptrs;
  tb_reduce *rd = &j->rd;
  *rd = (tb_reduce){.src = src, .dst = dst, .ch = (int)n[2], .dw = (int)n[3], .dh = (int)n[4], .xrows = (int)(ax.n_table / ax.taps),
                    .yrows = (int)(ay.n_table / ay.taps), .xtaps = (int)ax.taps, .ytaps = (int)ay.taps, .simd = simd > TB_SIMD_AVX2 ? TB_SIMD_AVX2 : (int)simd};
  copy_axis(&ay, n[4], copy_axis(&ax, n[3], taps, &rd->xfirst, &rd->xindex, &rd->xtable), &rd->yfirst, &rd->yindex, &rd->ytable);
  return tb_queue(env, j, argv[0], argv[4]);
}

napi_status tb_resize_register(napi_env env, napi_value exports) {
  napi_value fn;
  napi_status s;
  if ((s = napi_create_function(env, "resizeLinear", NAPI_AUTO_LENGTH, resize, (void *)(intptr_t)JOB_LINEAR, &fn)) != napi_ok ||
      (s = napi_set_named_property(env, exports, "resizeLinear", fn)) != napi_ok ||
      (s = napi_create_function(env, "resizeReduce", NAPI_AUTO_LENGTH, resize, (void *)(intptr_t)JOB_REDUCE, &fn)) != napi_ok)
    return s;
  return napi_set_named_property(env, exports, "resizeReduce", fn);
}
