/* Image resampling for static maps (resample.c). */
#ifndef TILEBAKE_RESAMPLE_H
#define TILEBAKE_RESAMPLE_H
#include <stddef.h>
#include <stdint.h>
#include "reduce.h"

/*
 * Bilinear resampling of r->src to r->dst (dw×dh) with the caller's taps, two per output sample
 * (xtaps = ytaps = 2; r->ch unused: src.ch): output pixel (X, Y) blends source columns xfirst[X] and
 * xfirst[X] + 1 (edges repeated) with row xindex[X] of xtable, and likewise for rows; the weights in
 * 1/4096ths, each pair non-negative and summing to at most 4096, xfirst and yfirst non-decreasing; the
 * products are kept whole and rounded once. `simd` caps the instruction set (filter.h's TB_SIMD_*; every
 * level gives the same bytes). Returns 0, or −1 when out of memory.
 */
int tb_resample_linear(const tb_reduce *r);

#endif
