/* Image resampling for static maps (resample.c). */
#ifndef TILEBAKE_RESAMPLE_H
#define TILEBAKE_RESAMPLE_H
#include <stddef.h>
#include <stdint.h>
#include "tiles.h"

/*
 * Bilinear resampling of `src` (its w×h pixels of ch bytes) to dst (dw×dh): output pixel (X, Y) samples
 * source (X + ox) / sx − ½, (Y + oy) / sy − ½ (libvips' affine as vips_resize sets it up for upsizing),
 * edge pixels repeated; weights in 1/4096ths as libvips' bilinear interpolator, rounded once. `simd` caps
 * the instruction set (filter.h's TB_SIMD_*; every level gives the same bytes).
 * Returns 0, or −1 when out of memory.
 */
int tb_resample_linear(const tb_tiles *src, uint8_t *dst, int dw, int dh, double sx, double sy, double ox, double oy, int simd);

#endif
