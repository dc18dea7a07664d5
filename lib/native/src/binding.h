/*
 * What the Node-API glue files share (binding.c: the module, its async jobs and the encoder;
 * resize_napi.c: the resamplers' arguments).
 */
#ifndef TILEBAKE_BINDING_H
#define TILEBAKE_BINDING_H
#include <node_api.h>
#include "png_encode.h"
#include "reduce.h"

/* A Node-API call that must succeed, or a thrown error and NULL returned. */
#define CHECK(env, call)                                          \
  do {                                                            \
    if ((call) != napi_ok) {                                      \
      napi_throw_error((env), NULL, "png-fast: " #call " failed"); \
      return NULL;                                                \
    }                                                             \
  } while (0)

/* One call's work on libuv's pool. */
typedef struct {
  napi_async_work work;
  napi_deferred deferred;
  napi_ref refs[2];
  /* The encoder's `allocate` function for its output, or NULL (a new Buffer). */
  napi_ref allocate;
  /* Encode a PNG (in → out), or resample with the caller's taps (rd, its tap arrays owned by the job in `taps`): bilinear or reduce. */
  enum { JOB_ENCODE, JOB_LINEAR, JOB_REDUCE } kind;
  tb_png_input in;
  tb_png_output out;
  tb_reduce rd;
  void *taps;
  /* The resampler's source tile pointers (tb_tiles.tiles). */
  const uint8_t **tiles;
  const char *error;
} job;

/* The elements of a typed array argument of type `want` (*len of them; an empty one: a non-NULL pointer), or NULL (nothing thrown) when it is not one. */
void *tb_typed(napi_env env, napi_value v, napi_typedarray_type want, size_t *len);

/* The bytes of a Uint8Array (or Buffer) argument; NULL with a TypeError thrown otherwise. */
const uint8_t *tb_bytes_of(napi_env env, napi_value v, size_t *len, const char *name);

/* Queue job j (calloc'ed; freed when done) on libuv's pool, keeping `a` and `b` (either may be NULL) alive until it completes; returns its promise. */
napi_value tb_queue(napi_env env, job *j, napi_value a, napi_value b);

/* resizeLinear and resizeReduce on `exports` (resize_napi.c). */
napi_status tb_resize_register(napi_env env, napi_value exports);

#endif
