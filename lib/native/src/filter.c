/*
 * PNG's Sub, Up and Paeth filters of one row at once with the sum of each output's absolute values:
 * AVX2 (32 bytes at a time) when the CPU has it, chosen at run time so that the build needs no
 * -march; SSE2 (16 at a time, every x86-64); plain C for the rest and elsewhere. Paeth's predictor is
 * computed in 16-bit lanes. Average is not tried: on the static-map bench's images it never paid for
 * its time (docs/static-map-speed.md).
 */
#include "filter.h"
#include <stdlib.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

const uint8_t tb_filter_type[TB_FILTERS] = {1 /* Sub */, 2 /* Up */, 4 /* Paeth */};

static int best_level = TB_SIMD_NONE;

void tb_filter_init(void) {
#if defined(__SSE2__)
  best_level = TB_SIMD_SSE2;
#if defined(__GNUC__) && defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) best_level = TB_SIMD_AVX2;
#endif
#endif
}

int tb_simd_level(int cap) { return cap == TB_SIMD_AUTO || cap > best_level ? best_level : cap; }

static inline uint8_t paeth(uint8_t a, uint8_t b, uint8_t c) {
  int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Bytes from `i` on, one at a time. */
static void filter_scalar(const uint8_t *cur, const uint8_t *prev, size_t i, size_t len, int bpp, uint8_t *const out[TB_FILTERS], uint64_t costs[TB_FILTERS]) {
  for (; i < len; i++) {
    uint8_t x = cur[i], a = cur[i - bpp], b = prev[i], c = prev[i - bpp];
    uint8_t r[TB_FILTERS] = {(uint8_t)(x - a), (uint8_t)(x - b), (uint8_t)(x - paeth(a, b, c))};
    for (int f = 0; f < TB_FILTERS; f++) {
      out[f][i] = r[f];
      costs[f] += r[f] < 128 ? r[f] : 256 - r[f];
    }
  }
}

#if defined(__SSE2__)
static inline __m128i abs16(__m128i x) { return _mm_max_epi16(x, _mm_sub_epi16(_mm_setzero_si128(), x)); }
static inline __m128i blend(__m128i mask, __m128i x, __m128i y) { return _mm_or_si128(_mm_and_si128(mask, x), _mm_andnot_si128(mask, y)); }

/* Paeth's predictor of eight 16-bit lanes: a if pa ≤ pb and pa ≤ pc, else b if pb ≤ pc, else c. */
static inline __m128i paeth16(__m128i a, __m128i b, __m128i c) {
  __m128i bc = _mm_sub_epi16(b, c), ac = _mm_sub_epi16(a, c);
  __m128i pa = abs16(bc), pb = abs16(ac), pc = abs16(_mm_add_epi16(bc, ac));
  __m128i not_a = _mm_or_si128(_mm_cmpgt_epi16(pa, pb), _mm_cmpgt_epi16(pa, pc));
  return blend(not_a, blend(_mm_cmpgt_epi16(pb, pc), c, b), a);
}

/* acc + the bytes' absolute values as signed residuals. */
static inline __m128i cost(__m128i acc, __m128i v) {
  __m128i zero = _mm_setzero_si128();
  return _mm_add_epi64(acc, _mm_sad_epu8(_mm_min_epu8(v, _mm_sub_epi8(zero, v)), zero));
}

static inline uint64_t lanes64(__m128i v) {
  uint64_t l[2];
  _mm_storeu_si128((__m128i *)l, v);
  return l[0] + l[1];
}

/* 16 bytes at a time from `i` while they fit; returns where it stopped. */
static size_t filter_sse2(const uint8_t *cur, const uint8_t *prev, size_t i, size_t len, int bpp, uint8_t *const out[TB_FILTERS], uint64_t costs[TB_FILTERS]) {
  __m128i zero = _mm_setzero_si128(), cs = zero, cu = zero, cp = zero;
  for (; i + 16 <= len; i += 16) {
    __m128i x = _mm_loadu_si128((const __m128i *)(cur + i)), a = _mm_loadu_si128((const __m128i *)(cur + i - bpp));
    __m128i b = _mm_loadu_si128((const __m128i *)(prev + i)), c = _mm_loadu_si128((const __m128i *)(prev + i - bpp));
    __m128i lo = paeth16(_mm_unpacklo_epi8(a, zero), _mm_unpacklo_epi8(b, zero), _mm_unpacklo_epi8(c, zero));
    __m128i hi = paeth16(_mm_unpackhi_epi8(a, zero), _mm_unpackhi_epi8(b, zero), _mm_unpackhi_epi8(c, zero));
    __m128i sub = _mm_sub_epi8(x, a), up = _mm_sub_epi8(x, b), pae = _mm_sub_epi8(x, _mm_packus_epi16(lo, hi));
    _mm_storeu_si128((__m128i *)(out[0] + i), sub);
    _mm_storeu_si128((__m128i *)(out[1] + i), up);
    _mm_storeu_si128((__m128i *)(out[2] + i), pae);
    cs = cost(cs, sub), cu = cost(cu, up), cp = cost(cp, pae);
  }
  costs[0] += lanes64(cs), costs[1] += lanes64(cu), costs[2] += lanes64(cp);
  return i;
}
#endif

#if defined(__GNUC__) && defined(__x86_64__)
#define AVX2 __attribute__((target("avx2")))
AVX2 static inline __m256i abs16x(__m256i x) { return _mm256_abs_epi16(x); }
AVX2 static inline __m256i paeth16x(__m256i a, __m256i b, __m256i c) {
  __m256i bc = _mm256_sub_epi16(b, c), ac = _mm256_sub_epi16(a, c);
  __m256i pa = abs16x(bc), pb = abs16x(ac), pc = abs16x(_mm256_add_epi16(bc, ac));
  __m256i not_a = _mm256_or_si256(_mm256_cmpgt_epi16(pa, pb), _mm256_cmpgt_epi16(pa, pc));
  return _mm256_blendv_epi8(a, _mm256_blendv_epi8(b, c, _mm256_cmpgt_epi16(pb, pc)), not_a);
}
AVX2 static inline __m256i costx(__m256i acc, __m256i v) {
  __m256i zero = _mm256_setzero_si256();
  return _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_min_epu8(v, _mm256_sub_epi8(zero, v)), zero));
}
AVX2 static inline uint64_t lanes64x(__m256i v) { return lanes64(_mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1))); }

/* As filter_sse2, 32 bytes at a time (unpack and pack work within 128-bit lanes, so their orders cancel). */
AVX2 static size_t filter_avx2(const uint8_t *cur, const uint8_t *prev, size_t i, size_t len, int bpp, uint8_t *const out[TB_FILTERS], uint64_t costs[TB_FILTERS]) {
  __m256i zero = _mm256_setzero_si256(), cs = zero, cu = zero, cp = zero;
  for (; i + 32 <= len; i += 32) {
    __m256i x = _mm256_loadu_si256((const __m256i *)(cur + i)), a = _mm256_loadu_si256((const __m256i *)(cur + i - bpp));
    __m256i b = _mm256_loadu_si256((const __m256i *)(prev + i)), c = _mm256_loadu_si256((const __m256i *)(prev + i - bpp));
    __m256i lo = paeth16x(_mm256_unpacklo_epi8(a, zero), _mm256_unpacklo_epi8(b, zero), _mm256_unpacklo_epi8(c, zero));
    __m256i hi = paeth16x(_mm256_unpackhi_epi8(a, zero), _mm256_unpackhi_epi8(b, zero), _mm256_unpackhi_epi8(c, zero));
    __m256i sub = _mm256_sub_epi8(x, a), up = _mm256_sub_epi8(x, b), pae = _mm256_sub_epi8(x, _mm256_packus_epi16(lo, hi));
    _mm256_storeu_si256((__m256i *)(out[0] + i), sub);
    _mm256_storeu_si256((__m256i *)(out[1] + i), up);
    _mm256_storeu_si256((__m256i *)(out[2] + i), pae);
    cs = costx(cs, sub), cu = costx(cu, up), cp = costx(cp, pae);
  }
  costs[0] += lanes64x(cs), costs[1] += lanes64x(cu), costs[2] += lanes64x(cp);
  return i;
}
#endif

void tb_filter_row(const uint8_t *cur, const uint8_t *prev, size_t len, int bpp, uint8_t *const out[TB_FILTERS], uint64_t costs[TB_FILTERS], int simd) {
  size_t i = 0;
  costs[0] = costs[1] = costs[2] = 0;
#if defined(__GNUC__) && defined(__x86_64__)
  if (simd >= TB_SIMD_AVX2) i = filter_avx2(cur, prev, i, len, bpp, out, costs);
#endif
#if defined(__SSE2__)
  if (simd >= TB_SIMD_SSE2) i = filter_sse2(cur, prev, i, len, bpp, out, costs);
#endif
  filter_scalar(cur, prev, i, len, bpp, out, costs);
}
