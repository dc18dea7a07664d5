/* A fast PNG encoder for 8-bit RGB and RGBA images (png_encode.c). */
#ifndef TILEBAKE_PNG_ENCODE_H
#define TILEBAKE_PNG_ENCODE_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
  /* Rows top first: `channels` (3 or 4) interleaved bytes per pixel, or with `alpha` the RGB plane. */
  const uint8_t *pixels;
  /* A separate alpha plane (one byte per pixel; `channels` must be 3), or NULL. */
  const uint8_t *alpha;
  uint32_t width, height;
  int channels;
  /* Colour premultiplied by alpha: divided back (PNG stores straight alpha) while filtering. */
  int premultiplied;
  /* Most advanced instruction set to use (filter.h's TB_SIMD_*; TB_SIMD_AUTO: the best there is). */
  int simd;
} tb_png_input;

typedef struct {
  uint8_t *data; /* malloc'd; the caller frees it */
  size_t size;
} tb_png_output;

/*
 * Encode `in` as a PNG: colour type 6 (RGBA) for 4 channels or an alpha plane with a pixel below 255,
 * else 2 (RGB). Returns NULL, or a message (nothing allocated) when the image is too large or memory
 * runs out. Thread-safe: nothing is shared between calls.
 */
const char *tb_png_encode(const tb_png_input *in, tb_png_output *out);

#endif
