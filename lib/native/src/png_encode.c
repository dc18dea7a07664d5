/*
 * PNG encoding: each row is made (copied, or interleaved from an RGB plane and an alpha plane, colour
 * unpremultiplied where alpha is partial) and filtered (filter.c) with the one of Sub, Up and Paeth
 * whose output has the smallest sum of absolute values over a sample of the row (libpng's heuristic:
 * it favours zeros, i.e. long runs). The filtered row goes to deflate.c while in cache, which gathers
 * ~512 KB per block with its own Huffman codes. One IDAT chunk.
 */
#include "png_encode.h"
#include "checksum.h"
#include "deflate.h"
#include "filter.h"
#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tilebake's PNG encoder writes words in little-endian byte order"
#endif

/*
 * Bytes of filtered rows per deflate block: 32 KB to 1 MB gave the same sizes (within 0.3 %) on the
 * bench's images; since Huffman codes come from a sample of the tokens (deflate_block.c) a block's fixed
 * costs count more: 256, 512, 1024 KB gave 2.83, 2.75, 2.67 ms per image and 476.4, 476.2, 476.8 KB.
 */
#define BLOCK_TARGET (512 * 1024)
/* Zero bytes before each row buffer (the "left" pixel, the filter type byte) and after it (vector reads: deflate's reach 34 bytes past a row). */
#define PAD 64
/* Largest filtered image (bytes): one IDAT chunk holds it with room to spare. */
#define MAX_RAW ((size_t)1 << 30)

static inline uint8_t unpremultiplied(uint8_t c, uint8_t a) {
  unsigned v = ((unsigned)c * 255 + (a >> 1)) / a;
  return (uint8_t)(v > 255 ? 255 : v);
}

/* True when every byte of the plane is 255. */
static int all_opaque(const uint8_t *a, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v;
    memcpy(&v, a + i, 8);
    if (v != ~(uint64_t)0) return 0;
  }
  for (; i < n; i++) {
    if (a[i] != 255) return 0;
  }
  return 1;
}

/* Each of the eight bytes of v is 0 or 255 (every bit of a byte equals its neighbour). */
static inline int bytes_all_0_or_255(uint64_t v) { return ((v ^ (v << 1)) & 0xfefefefefefefefeull) == 0; }

/* Divide colour by alpha (premultiplied → straight) in pixel x of an RGBA row where alpha is partial. */
static inline void unpremultiply_pixel(uint8_t *rgba, size_t x) {
  uint8_t a = rgba[4 * x + 3];
  if (a == 0 || a == 255) return;
  for (int c = 0; c < 3; c++) rgba[4 * x + c] = unpremultiplied(rgba[4 * x + c], a);
}

/* Unpremultiply an RGBA row of w pixels from x on; `alpha` is its alpha as a plane, or NULL (read from the row). */
static void unpremultiply_row(uint8_t *rgba, const uint8_t *alpha, size_t x, size_t w) {
  /* 8 pixels' alpha at a time: nearly always all 0 or 255 (partial only along edges). */
  for (; x + 8 <= w; x += 8) {
    uint64_t a = 0;
    if (alpha) memcpy(&a, alpha + x, 8);
    else
      for (int k = 0; k < 8; k++) a |= (uint64_t)rgba[4 * (x + k) + 3] << (8 * k);
    if (bytes_all_0_or_255(a)) continue;
    for (size_t k = x; k < x + 8; k++) unpremultiply_pixel(rgba, k);
  }
  for (; x < w; x++) unpremultiply_pixel(rgba, x);
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
/* RGB plane + alpha plane → RGBA, 4 pixels per shuffle; from pixel 0 while 16 bytes of RGB can be read within the row; returns where it stopped. */
__attribute__((target("ssse3"))) static size_t interleave_ssse3(const uint8_t *rgb, const uint8_t *a, size_t w, uint8_t *dst) {
  const __m128i spread = _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1);
  const __m128i alpha_to_3 = _mm_setr_epi8(-1, -1, -1, 0, -1, -1, -1, 1, -1, -1, -1, 2, -1, -1, -1, 3);
  size_t x = 0;
  for (; x + 6 <= w; x += 4) { /* reads RGB bytes 3x … 3x+15 < 3w */
    __m128i c = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(rgb + 3 * x)), spread);
    uint32_t a4;
    memcpy(&a4, a + x, 4);
    __m128i al = _mm_shuffle_epi8(_mm_cvtsi32_si128((int)a4), alpha_to_3);
    _mm_storeu_si128((__m128i *)(dst + 4 * x), _mm_or_si128(c, al));
  }
  return x;
}

/* The same, 8 pixels a step: RGB bytes 0-11 to lane 0 and 12-23 to lane 1, spread per lane; alpha widened to 32 bits and shifted to the top byte. */
__attribute__((target("avx2"))) static size_t interleave_avx2(const uint8_t *rgb, const uint8_t *a, size_t w, uint8_t *dst) {
  const __m256i spread = _mm256_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1, 4, 5, 6, -1, 7, 8, 9, -1, 10, 11, 12, -1, 13, 14, 15, -1);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 2, 3, 4, 5); /* lane 1 starts at byte 8: its pixels are bytes 12-23 = 4-15 of it */
  size_t x = 0;
  for (; x + 11 <= w; x += 8) { /* reads RGB bytes 3x … 3x+31 < 3w */
    const __m256i c = _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)(rgb + 3 * x)), lanes), spread);
    const __m256i al = _mm256_slli_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(a + x))), 24);
    _mm256_storeu_si256((__m256i *)(dst + 4 * x), _mm256_or_si256(c, al));
  }
  return x;
}

/* unpremultiply_row's scan of an alpha plane 32 pixels a step: only pixels of partial alpha are divided. Returns where it stopped. */
__attribute__((target("avx2"))) static size_t unpremultiply_avx2(uint8_t *rgba, const uint8_t *alpha, size_t w) {
  const __m256i zero = _mm256_setzero_si256(), full = _mm256_set1_epi8(-1);
  size_t x = 0;
  for (; x + 32 <= w; x += 32) {
    const __m256i a = _mm256_loadu_si256((const __m256i *)(alpha + x));
    uint32_t partial = ~(uint32_t)_mm256_movemask_epi8(_mm256_or_si256(_mm256_cmpeq_epi8(a, zero), _mm256_cmpeq_epi8(a, full)));
    for (; partial; partial &= partial - 1) unpremultiply_pixel(rgba, x + (size_t)__builtin_ctz(partial));
  }
  return x;
}
#endif

/* Row y of the image as `bpp`-byte pixels in dst (straight alpha). */
static void make_row(const tb_png_input *in, uint32_t y, int bpp, uint8_t *dst, int simd) {
  size_t w = in->width;
  const uint8_t *src = in->pixels + (size_t)y * w * in->channels;
  const uint8_t *a = in->alpha ? in->alpha + (size_t)y * w : NULL;
  if (a && bpp == 4) {
    size_t x = 0;
#if defined(__GNUC__) && defined(__x86_64__)
    if (simd >= TB_SIMD_AVX2) x = interleave_avx2(src, a, w, dst);
    if (simd >= TB_SIMD_AVX2) x += interleave_ssse3(src + 3 * x, a + x, w - x, dst + 4 * x); /* every AVX2 CPU has SSSE3 */
#else
    (void)simd;
#endif
    /* A pixel's RGB read as 4 bytes (the 4th replaced by alpha); the last pixel alone, as the plane may end there. */
    for (; x + 1 < w; x++) {
      uint32_t v;
      memcpy(&v, src + 3 * x, 4);
      v = (v & 0x00ffffffu) | (uint32_t)a[x] << 24; /* little-endian: bytes R, G, B, A */
      memcpy(dst + 4 * x, &v, 4);
    }
    dst[4 * x] = src[3 * x], dst[4 * x + 1] = src[3 * x + 1], dst[4 * x + 2] = src[3 * x + 2], dst[4 * x + 3] = a[x];
  } else {
    memcpy(dst, src, w * bpp);
  }
  if (in->premultiplied && bpp == 4) {
    size_t x = 0;
#if defined(__GNUC__) && defined(__x86_64__)
    if (a && simd >= TB_SIMD_AVX2) x = unpremultiply_avx2(dst, a, w);
#endif
    unpremultiply_row(dst, a, x, w);
  }
}

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* A chunk's type and data are in place at p + 4; write its length and, after the data, its CRC. Returns the chunk's end. */
static uint8_t *close_chunk(uint8_t *p, uint32_t len) {
  put_be32(p, len);
  put_be32(p + 8 + len, tb_crc32(0, p + 4, 4 + (size_t)len));
  return p + 12 + len;
}

const char *tb_png_encode(const tb_png_input *in, tb_png_output *out) {
  if (in->width == 0 || in->height == 0 || in->width > 0x7fffffffu || in->height > 0x7fffffffu) return "image width and height must be 1 to 2^31-1";
  const int bpp = in->channels == 4 || (in->alpha && !all_opaque(in->alpha, (size_t)in->width * in->height)) ? 4 : 3;
  const int simd = tb_simd_level(in->simd);
  const size_t len = (size_t)in->width * bpp, raw = (len + 1) * in->height;
  if (raw > MAX_RAW) return "image too large (more than 1 GB of pixels)";
  const size_t cap = 8 + 25 + 8 + 2 + raw + 6 * (raw / 65535 + 1) + 22 * (raw / BLOCK_TARGET + 2) + 4 + 12 + 12 + 8 + TB_DEFLATE_SLACK; /* + 8: the bit writer's slack */
  const size_t rowbuf = PAD + len + PAD;
  uint8_t *png = malloc(cap), *rows = calloc(3, rowbuf);
  tb_deflate *deflate = tb_deflate_new(BLOCK_TARGET + len + 1, simd);
  if (!png || !rows || !deflate) {
    free(png), free(rows), tb_deflate_free(deflate);
    return "out of memory";
  }
  uint8_t *prev = rows + PAD, *cur = rows + rowbuf + PAD, *filtered = rows + 2 * rowbuf + PAD;

  static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  memcpy(png, signature, 8);
  uint8_t *p = png + 8;
  memcpy(p + 4, "IHDR", 4);
  put_be32(p + 8, in->width), put_be32(p + 12, in->height);
  p[16] = 8, p[17] = bpp == 4 ? 6 : 2, p[18] = p[19] = p[20] = 0;
  p = close_chunk(p, 13);
  uint8_t *idat = p;
  memcpy(idat + 4, "IDAT", 4);
  idat[8] = 0x78, idat[9] = 0x01; /* zlib: deflate, 32 KB window, "fastest" */
  tb_bits w = {idat + 10, 0, 0};
  uint32_t adler = 1;
  for (uint32_t y = 0; y < in->height; y++) {
    make_row(in, y, bpp, cur, simd);
    uint64_t costs[TB_FILTERS];
    tb_filter_costs(cur, prev, len, bpp, costs, simd);
    int best = 0;
    for (int f = 1; f < TB_FILTERS; f++) {
      if (costs[f] < costs[best]) best = f;
    }
    const int nonzero = tb_filter_apply(cur, prev, len, bpp, best, filtered, simd);
    /* The filter type byte, then the row: what zlib's stream holds. */
    uint8_t *row = filtered - 1;
    row[0] = tb_filter_type[best];
    if (!nonzero) { /* every residual 0 (~14 % of the bench's rows): checksum and tokens without reading them */
      adler = tb_adler32_zeros(tb_adler32(adler, row, 1, simd), len);
      tb_deflate_add_zeros(deflate, row[0], len + 1);
    } else {
      adler = tb_adler32(adler, row, len + 1, simd);
      tb_deflate_add(deflate, row, len + 1);
    }
    if ((tb_deflate_pending(deflate) >= BLOCK_TARGET || y + 1 == in->height) && tb_deflate_flush(deflate, &w, y + 1 == in->height)) {
      free(png), free(rows), tb_deflate_free(deflate);
      return "out of memory";
    }
    uint8_t *t = prev;
    prev = cur, cur = t;
  }
  tb_bits_flush(&w);
  put_be32(w.out, adler);
  p = close_chunk(idat, (uint32_t)(w.out + 4 - (idat + 8)));
  memcpy(p + 4, "IEND", 4);
  p = close_chunk(p, 0);
  free(rows), tb_deflate_free(deflate);
  out->data = png;
  out->size = (size_t)(p - png);
  return NULL;
}
