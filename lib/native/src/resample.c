/*
 * Bilinear upsizing for static maps above the baked zooms, separable: per output row the two source rows
 * it falls between are blended once (vertical weights), then every output pixel blends two of those
 * columns (horizontal weights). The sample positions and 12-bit weights are the caller's (lib/resample-
 * kernel.ts's linearTaps, which the tile mask sums too, so both read the same source pixels); the
 * products are kept whole until the one rounding at the end, so the result is the 2-D bilinear sum with
 * weights wx·wy, as libvips' interpolator computes it. About a fifth of libvips' affine time, which
 * interpolates every output pixel from four source pixels without sharing the vertical blends.
 *
 * With SSE2 or AVX2 (RGB) the vertical blends V (< 2^20) are kept as two 16-bit halves, V = 4096·Vh + Vl,
 * so that both passes are 16-bit multiply-adds (pmaddwd): the horizontal sums H = wp·Ph + wq·Qh and
 * L = wp·Pl + wq·Ql give the same rounded result, (4096·H + L + 2^23) >> 24 = (H + ((L + 2^23) >> 12)) >> 12.
 */
#include "resample.h"
#include <stdlib.h>
#include <string.h>
#include "filter.h"
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#define SHIFT 12
#define ONE (1 << SHIFT)

/*
 * Per output sample along one axis, from the caller's taps (first source sample, row `index` of the
 * 2-tap table): the lower source index and the upper one (edges repeated), and the weights paired as
 * pmaddwd takes them (lower in the low half).
 */
static void axis(int n_src, int n_dst, const int32_t *first, const int32_t *index, const int16_t *table, int *lo, int *hi, int32_t *pairs) {
  for (int X = 0; X < n_dst; X++) {
    const int i = first[X];
    const int16_t *w = table + (size_t)index[X] * 2;
    lo[X] = i < 0 ? 0 : i >= n_src ? n_src - 1 : i;
    hi[X] = i + 1 < 0 ? 0 : i + 1 >= n_src ? n_src - 1 : i + 1;
    pairs[X] = (int32_t)((uint32_t)(uint16_t)w[0] | (uint32_t)(uint16_t)w[1] << 16);
  }
}

/* A pair's lower and upper weights. */
static inline uint32_t w_lo(int32_t pair) { return (uint32_t)pair & 0xffff; }
static inline uint32_t w_hi(int32_t pair) { return (uint32_t)pair >> 16; }

#if defined(__SSE2__)
/* Vertical blend of bytes [0, len) of rows a and b into halves vh, vl; 16 bytes a step, returns where it stopped. */
static size_t blend_sse2(const uint8_t *a, const uint8_t *b, int32_t pair, size_t len, int16_t *vh, int16_t *vl) {
  const __m128i zero = _mm_setzero_si128(), w = _mm_set1_epi32(pair), low = _mm_set1_epi32(ONE - 1);
  size_t i = 0;
  for (; i + 16 <= len; i += 16) {
    const __m128i x = _mm_loadu_si128((const __m128i *)(a + i)), y = _mm_loadu_si128((const __m128i *)(b + i));
    const __m128i lo = _mm_unpacklo_epi8(x, y), hi = _mm_unpackhi_epi8(x, y);
    const __m128i s0 = _mm_madd_epi16(_mm_unpacklo_epi8(lo, zero), w), s1 = _mm_madd_epi16(_mm_unpackhi_epi8(lo, zero), w);
    const __m128i s2 = _mm_madd_epi16(_mm_unpacklo_epi8(hi, zero), w), s3 = _mm_madd_epi16(_mm_unpackhi_epi8(hi, zero), w);
    _mm_storeu_si128((__m128i *)(vh + i), _mm_packs_epi32(_mm_srli_epi32(s0, SHIFT), _mm_srli_epi32(s1, SHIFT)));
    _mm_storeu_si128((__m128i *)(vh + i + 8), _mm_packs_epi32(_mm_srli_epi32(s2, SHIFT), _mm_srli_epi32(s3, SHIFT)));
    _mm_storeu_si128((__m128i *)(vl + i), _mm_packs_epi32(_mm_and_si128(s0, low), _mm_and_si128(s1, low)));
    _mm_storeu_si128((__m128i *)(vl + i + 8), _mm_packs_epi32(_mm_and_si128(s2, low), _mm_and_si128(s3, low)));
  }
  return i;
}

/* One RGB output pixel (r g b and a fourth value) from the halves at p and q with weights (wp, wq). */
static inline __m128i pixel_sse2(const int16_t *vh, const int16_t *vl, size_t p, size_t q, __m128i w) {
  const __m128i h = _mm_madd_epi16(_mm_unpacklo_epi16(_mm_loadl_epi64((const __m128i *)(vh + p)), _mm_loadl_epi64((const __m128i *)(vh + q))), w);
  const __m128i l = _mm_madd_epi16(_mm_unpacklo_epi16(_mm_loadl_epi64((const __m128i *)(vl + p)), _mm_loadl_epi64((const __m128i *)(vl + q))), w);
  return _mm_srai_epi32(_mm_add_epi32(h, _mm_srai_epi32(_mm_add_epi32(l, _mm_set1_epi32(1 << (2 * SHIFT - 1))), SHIFT)), SHIFT);
}

/* The horizontal pass of pixels X … dw − 1 of an RGB row, two packed at a time; returns where it stopped (the last pixel of the row, or two, are left). */
static int horiz_sse2(const int16_t *vh, const int16_t *vl, const int *xl, const int *xh, const int32_t *pairs, int X, int dw, uint8_t *out) {
  for (; X + 2 < dw; X += 2) {
    const __m128i a = pixel_sse2(vh, vl, (size_t)xl[X] * 3, (size_t)xh[X] * 3, _mm_set1_epi32(pairs[X]));
    const __m128i b = pixel_sse2(vh, vl, (size_t)xl[X + 1] * 3, (size_t)xh[X + 1] * 3, _mm_set1_epi32(pairs[X + 1]));
    const __m128i v = _mm_packus_epi16(_mm_packs_epi32(a, b), a);
    /* 4 bytes each (the fourth is the next pixel's first, written again after). */
    const uint32_t p0 = (uint32_t)_mm_cvtsi128_si32(v), p1 = (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(v, 4));
    memcpy(out + (size_t)X * 3, &p0, 4);
    memcpy(out + (size_t)X * 3 + 3, &p1, 4);
  }
  return X;
}
#endif

#if defined(__GNUC__) && defined(__x86_64__)
#define AVX2 __attribute__((target("avx2")))
/* Two RGB pixels (lane 0, lane 1) reading columns p, p + 1 and q, q + 1 of the halves with weight pairs wp, wq. */
__attribute__((target("avx2"), always_inline)) static inline __m256i two_avx2(const int16_t *vh, const int16_t *vl, size_t p, size_t q, int32_t wp, int32_t wq) {
  const __m256i pick = _mm256_setr_epi8(0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11, -1, -1, -1, -1, 0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11, -1, -1, -1, -1);
  const __m256i w = _mm256_setr_m128i(_mm_set1_epi32(wp), _mm_set1_epi32(wq));
  const __m256i h = _mm256_madd_epi16(_mm256_shuffle_epi8(_mm256_loadu2_m128i((const __m128i *)(vh + q), (const __m128i *)(vh + p)), pick), w);
  const __m256i l = _mm256_madd_epi16(_mm256_shuffle_epi8(_mm256_loadu2_m128i((const __m128i *)(vl + q), (const __m128i *)(vl + p)), pick), w);
  return _mm256_srai_epi32(_mm256_add_epi32(h, _mm256_srai_epi32(_mm256_add_epi32(l, _mm256_set1_epi32(1 << (2 * SHIFT - 1))), SHIFT)), SHIFT);
}

/*
 * Four RGB pixels a step where each reads two neighbouring columns (all but the clamped edges): one
 * 16-byte load per pixel and half, (Ph Pg Pb Qr Qg Qb) shuffled into pairs, two pixels per vector.
 * Stops where the row's last 5 bytes begin or a pixel reads one column twice; returns where it stopped.
 */
AVX2 static int horiz_avx2(const int16_t *vh, const int16_t *vl, const int *xl, const int *xh, const int32_t *pairs, int X, int dw, uint8_t *out) {
  /* Bytes of pixels X, X+2, X+1, X+3 (r g b 0 each) to X … X+3 as rgb. */
  const __m128i rgb = _mm_setr_epi8(0, 1, 2, 8, 9, 10, 4, 5, 6, 12, 13, 14, -1, -1, -1, -1);
  for (; X + 6 <= dw; X += 4) {
    if (xh[X] != xl[X] + 1 || xh[X + 1] != xl[X + 1] + 1 || xh[X + 2] != xl[X + 2] + 1 || xh[X + 3] != xl[X + 3] + 1) break;
    const __m256i r0 = two_avx2(vh, vl, (size_t)xl[X] * 3, (size_t)xl[X + 1] * 3, pairs[X], pairs[X + 1]);
    const __m256i r1 = two_avx2(vh, vl, (size_t)xl[X + 2] * 3, (size_t)xl[X + 3] * 3, pairs[X + 2], pairs[X + 3]);
    /* Lane 0: X then X+2, lane 1: X+1 then X+3. */
    const __m256i v = _mm256_packs_epi32(r0, r1);
    _mm_storeu_si128((__m128i *)(out + (size_t)X * 3), _mm_shuffle_epi8(_mm_packus_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)), rgb));
  }
  return X;
}
#endif

/* Vertical blend in plain C, whole (bytes [i, len)). */
static void blend_scalar(const uint8_t *a, const uint8_t *b, uint32_t wa, uint32_t wb, size_t i, size_t len, uint32_t *row) {
  for (; i < len; i++) row[i] = wa * a[i] + wb * b[i];
}

/*
 * Vertical blend of the source columns from c0 … c1 (inclusive) of rows ya and yb with weights wa, wb: per
 * run of columns in one tile column; runs where both rows are missing are 0 and listed in `zero`.
 */
static void blend_rows(const tb_tiles *src, int ya, int yb, uint32_t wa, uint32_t wb, int c0, int c1, int level, const uint8_t *none, uint32_t *row, int16_t *vh, int16_t *vl, tb_zero_runs *zero) {
  const int ch = src->ch;
  (void)level, (void)vh, (void)vl;
  zero->n = 0;
  for (int x = c0, end; x <= c1; x = end) {
    end = tb_tiles_run_end(src, x);
    if (end > c1 + 1) end = c1 + 1;
    const uint8_t *a = tb_tiles_at(src, x, ya, none), *b = tb_tiles_at(src, x, yb, none);
    const size_t at = (size_t)x * ch, len = (size_t)(end - x) * ch;
    if (a == none && b == none) {
      if (level >= TB_SIMD_SSE2) memset(vh + at, 0, len * 2), memset(vl + at, 0, len * 2);
      else memset(row + at, 0, len * 4);
      tb_zero_runs_add(zero, x, end);
      continue;
    }
#if defined(__SSE2__)
    if (level >= TB_SIMD_SSE2) {
      size_t i = blend_sse2(a, b, (int32_t)(wa | wb << 16), len, vh + at, vl + at);
      for (; i < len; i++) {
        const uint32_t v = wa * a[i] + wb * b[i];
        vh[at + i] = (int16_t)(v >> SHIFT), vl[at + i] = (int16_t)(v & (ONE - 1));
      }
      continue;
    }
#endif
    blend_scalar(a, b, wa, wb, 0, len, row + at);
  }
}

/* The horizontal pass of n output pixels (xl, xh, pairs and out offset to the first of them) from the vertical blends (halves vh, vl with SSE2, whole `row` otherwise). */
static void horiz(int level, int ch, const int16_t *vh, const int16_t *vl, const uint32_t *row, const int *xl, const int *xh, const int32_t *pairs, int n, uint8_t *out) {
  int X = 0;
  (void)vh, (void)vl;
#if defined(__SSE2__)
  if (level >= TB_SIMD_SSE2) {
    /* Pixels 0 … lead − 1 (reading a clamped edge) are left to the plain loop when AVX2 starts after them. */
    int lead = 0;
#if defined(__GNUC__) && defined(__x86_64__)
    if (level >= TB_SIMD_AVX2) {
      while (lead < n && xh[lead] != xl[lead] + 1) lead++;
      X = horiz_avx2(vh, vl, xl, xh, pairs, lead, n, out);
      if (X == lead) X = lead = 0;
    }
#endif
    X = horiz_sse2(vh, vl, xl, xh, pairs, X, n, out);
    /* The rest from the halves, as the plain loop below would from the whole. */
    for (int k = 0; k < lead + n - X; k++) {
      const int x = k < lead ? k : X + k - lead;
      for (int c = 0; c < ch; c++) {
        const size_t p = (size_t)xl[x] * ch + c, q = (size_t)xh[x] * ch + c;
        const uint32_t wp = w_lo(pairs[x]), wq = w_hi(pairs[x]);
        const uint32_t h = wp * vh[p] + wq * vh[q], l = wp * vl[p] + wq * vl[q];
        out[x * ch + c] = (uint8_t)((h + ((l + (1u << (2 * SHIFT - 1))) >> SHIFT)) >> SHIFT);
      }
    }
    return;
  }
#endif
  for (; X < n; X++) {
    const uint32_t *p = row + (size_t)xl[X] * ch, *q = row + (size_t)xh[X] * ch;
    const uint64_t wp = w_lo(pairs[X]), wq = w_hi(pairs[X]);
    for (int c = 0; c < ch; c++) out[X * ch + c] = (uint8_t)((wp * p[c] + wq * q[c] + (1u << (2 * SHIFT - 1))) >> (2 * SHIFT));
  }
}

int tb_resample_linear(const tb_reduce *r) {
  const tb_tiles *src = &r->src;
  const int sw = src->w, sh = src->h, ch = src->ch, dw = r->dw, dh = r->dh;
  int *xl = malloc(sizeof(int) * (size_t)dw * 2), *yl = malloc(sizeof(int) * (size_t)dh * 2);
  uint32_t *row = malloc(sizeof(uint32_t) * (size_t)sw * ch);
  int16_t *vh = malloc(sizeof(int16_t) * ((size_t)sw * ch + 8) * 2), *vl = vh + (size_t)sw * ch + 8;
  int32_t *pairs = malloc(sizeof(int32_t) * ((size_t)dw + dh));
  /* What rows of missing tiles read: zeros. */
  uint8_t *none = src->cols * src->rows > 1 ? calloc((size_t)src->tw * ch + 64, 1) : NULL;
  int *runs = malloc(sizeof(int) * (size_t)(src->cols + 1) * 2);
  if (!xl || !yl || !row || !vh || !pairs || !runs || (src->cols * src->rows > 1 && !none)) {
    free(xl), free(yl), free(row), free(vh), free(pairs), free(none), free(runs);
    return -1;
  }
  tb_zero_runs zero = {0, src->cols + 1, runs, runs + src->cols + 1};
  int *xh = xl + dw, *yh = yl + dh;
  int32_t *ypairs = pairs + dw;
  axis(sw, dw, r->xfirst, r->xindex, r->xtable, xl, xh, pairs);
  axis(sh, dh, r->yfirst, r->yindex, r->ytable, yl, yh, ypairs);
  const int level = ch == 3 ? tb_simd_level(r->simd) : TB_SIMD_NONE;
  /* Source columns the output reads (first non-decreasing): only those are blended vertically. */
  const int c0 = xl[0], c1 = xh[dw - 1];
  int done_lo = -1, done_hi = -1;
  int32_t done_w = -1;
  for (int Y = 0; Y < dh; Y++) {
    /* Rows blended as the previous output row's are not blended again. */
    if (yl[Y] != done_lo || yh[Y] != done_hi || ypairs[Y] != done_w) blend_rows(src, yl[Y], yh[Y], w_lo(ypairs[Y]), w_hi(ypairs[Y]), c0, c1, level, none, row, vh, vl, &zero);
    done_lo = yl[Y], done_hi = yh[Y], done_w = ypairs[Y];
    uint8_t *out = r->dst + (size_t)Y * dw * ch;
    /* Output pixels reading only zero columns are 0; the others computed, range by range. */
    int X = 0, k = 0, za, zb;
    while (X < dw) {
      if (!tb_zero_outputs(&zero, &k, xl, xh, X, dw, &za, &zb)) za = zb = dw;
      horiz(level, ch, vh, vl, row, xl + X, xh + X, pairs + X, za - X, out + (size_t)X * ch);
      memset(out + (size_t)za * ch, 0, (size_t)(zb - za) * ch);
      X = zb;
    }
  }
  free(xl), free(yl), free(row), free(vh), free(pairs), free(none), free(runs);
  return 0;
}
