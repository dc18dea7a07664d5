/* Separable downsizing with precomputed taps (reduce.c). */
#ifndef TILEBAKE_REDUCE_H
#define TILEBAKE_REDUCE_H
#include <stddef.h>
#include <stdint.h>
#include "tiles.h"

/*
 * `src` (its w×h pixels of `ch` bytes, 1 or 3; `ch` equal to src.ch) to `dst` (dw×dh): output column X is the sum over t <
 * xtaps of xtable[xindex[X]·xtaps + t] × source column xfirst[X] + t (edges repeated), in 1/4096ths,
 * and likewise for rows; the vertical pass comes first and is rounded and clamped to bytes. The tables
 * have xrows and yrows rows (libvips' reduce: one per phase, so the weights stay in the L1 cache).
 */
typedef struct {
  tb_tiles src;
  uint8_t *dst;
  int ch, dw, dh;
  const int32_t *xfirst, *yfirst, *xindex, *yindex;
  const int16_t *xtable, *ytable;
  int xrows, yrows, xtaps, ytaps;
  /* Instruction set cap (filter.h's TB_SIMD_*; TB_SIMD_AUTO: the best there is). */
  int simd;
} tb_reduce;

/* Returns 0, or −1 when out of memory. */
int tb_resample_reduce(const tb_reduce *r);

#endif
