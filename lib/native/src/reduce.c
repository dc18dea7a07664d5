/*
 * Separable downsizing with precomputed taps (lanczos3 between the baked zooms of static maps): the
 * vertical pass first, rounded and clamped to bytes, then the horizontal one, as libvips' reduce does.
 * The taps (first source sample and 12-bit weights per output sample, truncated as libvips makes them, so
 * that the bytes are sharp's) come from the caller (lib/resample-kernel.ts, which the tile mask uses too). Inner loops multiply-add
 * 16-bit pairs (pmaddwd): the vertical pass across x (32 bytes a step with AVX2, 16 with SSE2), the
 * horizontal one 4 taps of an RGB pixel or 16 of a one-band pixel a step (AVX2; plain C otherwise).
 * Every level gives the same bytes: the arithmetic is the same integer sums.
 */
#include "reduce.h"
#include <stdlib.h>
#include <string.h>
#include "filter.h"
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#define SHIFT 12
#define HALF (1 << (SHIFT - 1))

static inline uint8_t clamp_byte(int32_t v) { return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)v; }

/* Vertical pass of bytes [i, len) in plain C: rows[t] weighted by w[t]. */
static void vert_scalar(const uint8_t *const *rows, const int16_t *w, int taps, size_t i, size_t len, uint8_t *out) {
  for (; i < len; i++) {
    int32_t s = HALF;
    for (int t = 0; t < taps; t++) s += w[t] * rows[t][i];
    out[i] = clamp_byte(s >> SHIFT);
  }
}

/*
 * The vertical loop, written once for both instruction sets (VEC the vector type, W its width in bytes,
 * P the prefix of its helpers): rows paired (a, b) and their bytes interleaved, so that pmaddwd gives
 * a·wa + b·wb per byte; unpacks and packs work within 128-bit lanes in AVX2, so their orders cancel.
 * From byte i while W bytes fit; returns where it stopped.
 */
#define VERT_LOOP(P, VEC, W)                                                                           \
  const VEC zero = P##set1(0), half = P##set1(HALF);                                                   \
  for (; i + W <= len; i += W) {                                                                       \
    VEC s0 = half, s1 = half, s2 = half, s3 = half;                                                    \
    for (int p = 0; p < npairs; p++) {                                                                 \
      const VEC w = P##set1(pairs[p]), a = P##load(rows[2 * p] + i), b = P##load(rows[2 * p + 1] + i); \
      const VEC lo = P##lo8(a, b), hi = P##hi8(a, b);                                                  \
      s0 = P##madd(s0, P##lo8(lo, zero), w), s1 = P##madd(s1, P##hi8(lo, zero), w);                    \
      s2 = P##madd(s2, P##lo8(hi, zero), w), s3 = P##madd(s3, P##hi8(hi, zero), w);                    \
    }                                                                                                  \
    P##store(out + i, P##pack(s0, s1, s2, s3));                                                        \
  }                                                                                                    \
  return i

#if defined(__SSE2__)
typedef __m128i v128;
static inline v128 s_set1(int32_t v) { return _mm_set1_epi32(v); }
static inline v128 s_load(const uint8_t *p) { return _mm_loadu_si128((const v128 *)p); }
static inline void s_store(uint8_t *p, v128 v) { _mm_storeu_si128((v128 *)p, v); }
static inline v128 s_lo8(v128 a, v128 b) { return _mm_unpacklo_epi8(a, b); }
static inline v128 s_hi8(v128 a, v128 b) { return _mm_unpackhi_epi8(a, b); }
static inline v128 s_madd(v128 acc, v128 x, v128 w) { return _mm_add_epi32(acc, _mm_madd_epi16(x, w)); }
/* Four vectors of sums to bytes: shifted, rounded down (½ was added first), clamped. */
static inline v128 s_pack(v128 a, v128 b, v128 c, v128 d) {
  return _mm_packus_epi16(_mm_packs_epi32(_mm_srai_epi32(a, SHIFT), _mm_srai_epi32(b, SHIFT)), _mm_packs_epi32(_mm_srai_epi32(c, SHIFT), _mm_srai_epi32(d, SHIFT)));
}

static size_t vert_sse2(const uint8_t *const *rows, const int32_t *pairs, int npairs, size_t i, size_t len, uint8_t *out) { VERT_LOOP(s_, v128, 16); }
#endif

#if defined(__GNUC__) && defined(__x86_64__)
#define AVX2 __attribute__((target("avx2")))
typedef __m256i v256;
AVX2 static inline v256 x_set1(int32_t v) { return _mm256_set1_epi32(v); }
AVX2 static inline v256 x_load(const uint8_t *p) { return _mm256_loadu_si256((const v256 *)p); }
AVX2 static inline void x_store(uint8_t *p, v256 v) { _mm256_storeu_si256((v256 *)p, v); }
AVX2 static inline v256 x_lo8(v256 a, v256 b) { return _mm256_unpacklo_epi8(a, b); }
AVX2 static inline v256 x_hi8(v256 a, v256 b) { return _mm256_unpackhi_epi8(a, b); }
AVX2 static inline v256 x_madd(v256 acc, v256 x, v256 w) { return _mm256_add_epi32(acc, _mm256_madd_epi16(x, w)); }
AVX2 static inline v256 x_pack(v256 a, v256 b, v256 c, v256 d) {
  return _mm256_packus_epi16(_mm256_packs_epi32(_mm256_srai_epi32(a, SHIFT), _mm256_srai_epi32(b, SHIFT)), _mm256_packs_epi32(_mm256_srai_epi32(c, SHIFT), _mm256_srai_epi32(d, SHIFT)));
}

AVX2 static size_t vert_avx2(const uint8_t *const *rows, const int32_t *pairs, int npairs, size_t i, size_t len, uint8_t *out) { VERT_LOOP(x_, v256, 32); }

/*
 * RGB: per output pixel, 4 taps a step. 16 bytes from the first tap's pixel go to both lanes; lane 0
 * picks taps 0 and 1 as 16-bit pairs (r0 r1 g0 g1 b0 b1 0 0), lane 1 taps 2 and 3, and pmaddwd with
 * (w0 w1)… | (w2 w3)… sums them. `w` holds 8 int32 per step. Unrolled for a constant `steps`.
 */
#define INLINE_AVX2 __attribute__((target("avx2"), always_inline)) static inline
INLINE_AVX2 __m256i sum3(const uint8_t *p, const int32_t *w, const int steps) {
  const __m256i pick = _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1, 6, -1, 9, -1, 7, -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);
  __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int k = 0; k < steps; k++) {
    const __m256i px = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(p + 12 * k)));
    s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_shuffle_epi8(px, pick), _mm256_loadu_si256((const __m256i *)(w + 8 * k))));
  }
  return s;
}

/* Both lanes of a and of b added: lane 0 a's sums, lane 1 b's, plus ½. */
INLINE_AVX2 __m256i lanes2(__m256i a, __m256i b) {
  return _mm256_add_epi32(_mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31)), _mm256_set1_epi32(HALF));
}

/* Four output pixels a step, rounded and packed together and stored as 12 bytes. */
INLINE_AVX2 void horiz3_n(const uint8_t *row, const int32_t *first, const int32_t *index, const int32_t *wv, const int steps, int dw, uint8_t *out) {
  /* Bytes A0-3 C0-3 B0-3 D0-3 (r g b 0 each) to A B C D as rgb. */
  const __m128i rgb = _mm_setr_epi8(0, 1, 2, 8, 9, 10, 4, 5, 6, 12, 13, 14, -1, -1, -1, -1);
  for (int X = 0; X < dw; X += 4) {
    const int b = X + 1 < dw ? X + 1 : dw - 1, c = X + 2 < dw ? X + 2 : dw - 1, d = X + 3 < dw ? X + 3 : dw - 1;
    const __m256i ab = lanes2(sum3(row + first[X] * 3, wv + index[X] * steps * 8, steps), sum3(row + first[b] * 3, wv + index[b] * steps * 8, steps));
    const __m256i cd = lanes2(sum3(row + first[c] * 3, wv + index[c] * steps * 8, steps), sum3(row + first[d] * 3, wv + index[d] * steps * 8, steps));
    /* Lane 0: A then C, lane 1: B then D. */
    const __m256i p = _mm256_packs_epi32(_mm256_srai_epi32(ab, SHIFT), _mm256_srai_epi32(cd, SHIFT));
    const __m128i v = _mm_shuffle_epi8(_mm_packus_epi16(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1)), rgb);
    /* 16 bytes stored while they stay in the row (the 4 past the 4 pixels are written again next). */
    if (X + 6 <= dw) {
      _mm_storeu_si128((__m128i *)(out + X * 3), v);
    } else {
      uint8_t last[16];
      _mm_storeu_si128((__m128i *)last, v);
      memcpy(out + X * 3, last, (size_t)(dw - X) * 3);
    }
  }
}

AVX2 static void horiz3_avx2(const uint8_t *row, const int32_t *first, const int32_t *index, const int32_t *wv, int steps, int dw, uint8_t *out) {
  switch (steps) {
    case 2: horiz3_n(row, first, index, wv, 2, dw, out); break;
    case 3: horiz3_n(row, first, index, wv, 3, dw, out); break;
    case 4: horiz3_n(row, first, index, wv, 4, dw, out); break;
    case 5: horiz3_n(row, first, index, wv, 5, dw, out); break;
    default: horiz3_n(row, first, index, wv, steps, dw, out);
  }
}

/* One band: 16 taps a step, bytes widened to 16 bits and multiplied with 16 weights. */
AVX2 static void horiz1_avx2(const uint8_t *row, const int32_t *first, const int32_t *index, const int16_t *wv, int steps, int dw, uint8_t *out) {
  for (int X = 0; X < dw; X++) {
    const uint8_t *p = row + first[X];
    const int16_t *w = wv + (size_t)index[X] * steps * 16;
    __m256i s = _mm256_setzero_si256();
    for (int k = 0; k < steps; k++) {
      const __m256i px = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(p + 16 * k)));
      s = _mm256_add_epi32(s, _mm256_madd_epi16(px, _mm256_loadu_si256((const __m256i *)(w + 16 * k))));
    }
    __m128i v = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4e));
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0xb1));
    out[X] = clamp_byte((_mm_cvtsi128_si32(v) + HALF) >> SHIFT);
  }
}
#endif

/* Horizontal pass in plain C. */
static void horiz_scalar(const uint8_t *row, int ch, const int32_t *first, const int32_t *index, const int16_t *w, int taps, int dw, uint8_t *out) {
  for (int X = 0; X < dw; X++) {
    const uint8_t *p = row + (size_t)first[X] * ch;
    const int16_t *wx = w + (size_t)index[X] * taps;
    for (int c = 0; c < ch; c++) {
      int32_t s = HALF;
      for (int t = 0; t < taps; t++) s += wx[t] * p[t * ch + c];
      out[X * ch + c] = clamp_byte(s >> SHIFT);
    }
  }
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The horizontal pass of n output samples (first, index and out offset to the first of them). */
static void horiz(int level, int ch, const uint8_t *row, const int32_t *first, const int32_t *index, const void *hw, int steps, const int16_t *xtable, int xt, int n, uint8_t *out) {
  if (n <= 0) return;
#if defined(__GNUC__) && defined(__x86_64__)
  if (level >= TB_SIMD_AVX2 && ch == 3) {
    horiz3_avx2(row, first, index, hw, steps, n, out);
    return;
  }
  if (level >= TB_SIMD_AVX2) {
    horiz1_avx2(row, first, index, hw, steps, n, out);
    return;
  }
#else
  (void)level, (void)hw, (void)steps;
#endif
  horiz_scalar(row, ch, first, index, xtable, xt, n, out);
}

/* Vertical pass of `len` bytes (rows from one tile column) into out: SIMD steps, the last one ending at len (it may redo bytes), then plain C for what is left. */
static void vert_run(int level, const uint8_t *const *rows, const int32_t *pairs, int npairs, const int16_t *yw, int yt, size_t len, uint8_t *out) {
  size_t i = 0;
#if defined(__GNUC__) && defined(__x86_64__)
  if (level >= TB_SIMD_AVX2 && len >= 32) {
    i = vert_avx2(rows, pairs, npairs, 0, len, out);
    if (i < len) i = vert_avx2(rows, pairs, npairs, len - 32, len, out);
  }
#endif
#if defined(__SSE2__)
  if (level >= TB_SIMD_SSE2 && len >= 16) {
    i = vert_sse2(rows, pairs, npairs, i, len, out);
    if (i < len) i = vert_sse2(rows, pairs, npairs, len - 16, len, out);
  }
#endif
  vert_scalar(rows, yw, yt, i, len, out);
}

int tb_resample_reduce(const tb_reduce *r) {
  const int ch = r->ch, sw = r->src.w, sh = r->src.h, dw = r->dw, dh = r->dh, xt = r->xtaps, yt = r->ytaps;
  int level = tb_simd_level(r->simd);
  /* Taps per horizontal step of the AVX2 loops; the weights past xt are 0. */
  const int per_step = ch == 3 ? 4 : 16, steps = (xt + per_step - 1) / per_step;
  if (ch != 3 && ch != 1) level = TB_SIMD_NONE;
  /* Source columns lo … hi (edges repeated outside 0 … sw−1) are blended vertically into `row`. */
  int lo = r->xfirst[0], hi = r->xfirst[0];
  for (int X = 1; X < dw; X++) lo = r->xfirst[X] < lo ? r->xfirst[X] : lo, hi = r->xfirst[X] > hi ? r->xfirst[X] : hi;
  hi += (level >= TB_SIMD_AVX2 ? steps * per_step : xt) - 1;
  const int c0 = clampi(lo, 0, sw - 1), c1 = clampi(hi, 0, sw - 1);
  const int ypairs = (yt + 1) / 2;
  uint8_t *row = calloc((size_t)(hi - lo + 1) * ch + 64, 1);
  /* first: each output sample's first tap in `row`; s0, s1: its clamped first and last source columns. */
  int32_t *first = malloc(sizeof(int32_t) * (size_t)dw * 3), *s0 = first + dw, *s1 = s0 + dw;
  int *runs = malloc(sizeof(int) * (size_t)(r->src.cols + 1) * 2);
  int32_t *pairs = malloc(sizeof(int32_t) * (size_t)ypairs);
  int16_t *yw = malloc(sizeof(int16_t) * (size_t)(2 * ypairs));
  const uint8_t **rows = malloc(sizeof(uint8_t *) * (size_t)(2 * ypairs));
  void *hw = level >= TB_SIMD_AVX2 ? calloc((size_t)r->xrows * steps, 32) : NULL;
  /* What rows of missing tiles read: zeros. */
  uint8_t *none = r->src.cols * r->src.rows > 1 ? calloc((size_t)r->src.tw * ch + 64, 1) : NULL;
  if (!row || !first || !runs || !pairs || !yw || !rows || (level >= TB_SIMD_AVX2 && !hw) || (r->src.cols * r->src.rows > 1 && !none)) {
    free(row), free(first), free(runs), free(pairs), free(yw), free(rows), free(hw), free(none);
    return -1;
  }
  for (int X = 0; X < dw; X++) first[X] = r->xfirst[X] - lo, s0[X] = clampi(r->xfirst[X], 0, sw - 1), s1[X] = clampi(r->xfirst[X] + xt - 1, 0, sw - 1);
  tb_zero_runs zero = {0, r->src.cols + 1, runs, runs + r->src.cols + 1};
#if defined(__GNUC__) && defined(__x86_64__)
  /* The horizontal weights laid out for the AVX2 loops. */
  for (int X = 0; X < r->xrows && hw; X++) {
    const int16_t *w = r->xtable + (size_t)X * xt;
    for (int t = 0; t < xt; t++) {
      if (ch == 1) {
        ((int16_t *)hw)[(size_t)X * steps * 16 + t] = w[t];
      } else {
        /* Step t/4, lane (t%4)/2: its 4 int32 each hold the pair (w[t & ~1], w[t | 1]). */
        int16_t *lane = (int16_t *)hw + ((size_t)X * steps * 8 + (size_t)(t / 4) * 8 + (size_t)((t % 4) / 2) * 4) * 2;
        for (int k = 0; k < 4; k++) lane[2 * k + (t & 1)] = w[t];
      }
    }
  }
#endif
  const size_t len = (size_t)(c1 - c0 + 1) * ch;
  uint8_t *mid = row + (size_t)(c0 - lo) * ch;
  for (int Y = 0; Y < dh; Y++) {
    for (int t = 0; t < 2 * ypairs; t++) yw[t] = t < yt ? r->ytable[(size_t)r->yindex[Y] * yt + t] : 0;
    for (int p = 0; p < ypairs; p++) pairs[p] = (int32_t)((uint32_t)(uint16_t)yw[2 * p] | (uint32_t)(uint16_t)yw[2 * p + 1] << 16);
    /* Per run of columns in one tile column, from each source row's tile; 0 where all are missing. */
    zero.n = 0;
    for (int x = c0, end; x <= c1; x = end) {
      end = tb_tiles_run_end(&r->src, x);
      if (end > c1 + 1) end = c1 + 1;
      int missing = 1;
      for (int t = 0; t < 2 * ypairs; t++) {
        rows[t] = tb_tiles_at(&r->src, x, clampi(r->yfirst[Y] + (t < yt ? t : yt - 1), 0, sh - 1), none);
        missing &= rows[t] == none;
      }
      if (missing) memset(mid + (size_t)(x - c0) * ch, 0, (size_t)(end - x) * ch), tb_zero_runs_add(&zero, x, end);
      else vert_run(level, rows, pairs, ypairs, yw, yt, (size_t)(end - x) * ch, mid + (size_t)(x - c0) * ch);
    }
    /* Edge pixels repeated. */
    for (int c = lo; c < c0; c++) memcpy(row + (size_t)(c - lo) * ch, mid, (size_t)ch);
    for (int c = c1 + 1; c <= hi; c++) memcpy(row + (size_t)(c - lo) * ch, mid + len - ch, (size_t)ch);
    uint8_t *out = r->dst + (size_t)Y * dw * ch;
    /* Output samples reading only zero columns are 0; the others computed, range by range. */
    int X = 0, k = 0, a, b;
    while (X < dw) {
      const int zeros = tb_zero_outputs(&zero, &k, s0, s1, X, dw, &a, &b);
      if (!zeros) a = b = dw;
      horiz(level, ch, row, first + X, r->xindex + X, hw, steps, r->xtable, xt, a - X, out + (size_t)X * ch);
      memset(out + (size_t)a * ch, 0, (size_t)(b - a) * ch);
      X = b;
    }
  }
  free(row), free(first), free(runs), free(pairs), free(yw), free(rows), free(hw), free(none);
  return 0;
}
