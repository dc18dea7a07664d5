/*
 * PNG's Sub, Up and Paeth filters in two passes over a row: the three filters' costs (sums of absolute
 * residuals, libpng's heuristic) over a sample of the row's 32-byte blocks, then the cheapest filter
 * over the whole row. AVX2 (32 bytes at a time) when the CPU has it, chosen at run time so that the
 * build needs no -march; SSE2 (16 at a time, every x86-64); plain C for the rest and elsewhere: the
 * same bytes at each. Paeth's predictor is computed on bytes (s_paeth8: half the work of 16-bit lanes;
 * checked against the plain one on all 2^24 triples). Average is not tried: on the static-map bench's
 * images it never paid for its time (docs/static-map-speed.md).
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
  /* The AVX2 level also uses BMI1, BMI2 and POPCNT (deflate.c, deflate_block.c): every AVX2 CPU has them. */
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("popcnt")) best_level = TB_SIMD_AVX2;
#endif
#endif
}

int tb_simd_level(int cap) { return cap == TB_SIMD_AUTO || cap > best_level ? best_level : cap; }

static inline uint8_t paeth(uint8_t a, uint8_t b, uint8_t c) {
  int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/*
 * The sampled cost pass: each filter's cost over the row's blocks of 32 bytes j·32·TB_COST_STRIDE …
 * +32 that lie whole in the row, W bytes a step (W = 32 or 16: the same bytes at every instruction set);
 * returns where the first such block that does not fit starts (the caller does it byte by byte). Steps
 * where the row and the one above are 0 (transparent areas: ~40 % of the bench's pixels) cost 0.
 */
#define COST_LOOP(P, VEC, W)                                                                            \
  VEC cs = P##zero(), cu = cs, cp = cs;                                                                 \
  size_t i = 0;                                                                                         \
  for (; i + 32 <= len; i += 32 * TB_COST_STRIDE) {                                                     \
    for (size_t j = i; j < i + 32; j += W) {                                                            \
      VEC x = P##load(cur + j), a = P##load(cur + j - bpp), b = P##load(prev + j), c = P##load(prev + j - bpp); \
      if (P##none(x, a, b, c)) continue;                                                                \
      cs = P##cost(cs, P##sub(x, a)), cu = P##cost(cu, P##sub(x, b)), cp = P##cost(cp, P##sub(x, P##paeth8(a, b, c))); \
    }                                                                                                   \
  }                                                                                                     \
  costs[0] += P##sum(cs), costs[1] += P##sum(cu), costs[2] += P##sum(cp);                               \
  return i

/* Filter f of the row W bytes a step while W fit; *any |= every residual. Returns where it stopped. */
#define APPLY_LOOP(P, VEC, W, RESIDUAL)                                                                 \
  VEC acc = P##zero();                                                                                  \
  size_t i = 0;                                                                                         \
  for (; i + W <= len; i += W) {                                                                        \
    VEC x = P##load(cur + i), a = P##load(cur + i - bpp), b = P##load(prev + i), c = P##load(prev + i - bpp); \
    (void)a, (void)b, (void)c;                                                                          \
    VEC r = RESIDUAL;                                                                                   \
    P##store(out + i, r), acc = P##or(acc, r);                                                          \
  }                                                                                                     \
  *any |= !P##zeros(acc);                                                                               \
  return i

#if defined(__SSE2__)
typedef __m128i v128;
static inline v128 s_zero(void) { return _mm_setzero_si128(); }
static inline v128 s_load(const uint8_t *p) { return _mm_loadu_si128((const v128 *)p); }
static inline void s_store(uint8_t *p, v128 v) { _mm_storeu_si128((v128 *)p, v); }
static inline v128 s_sub(v128 x, v128 y) { return _mm_sub_epi8(x, y); }
static inline v128 blend(v128 mask, v128 x, v128 y) { return _mm_or_si128(_mm_and_si128(mask, x), _mm_andnot_si128(mask, y)); }
/*
 * Paeth's predictor on bytes, without widening (fpnge's way): pa = |b − c|, pb = |a − c| and
 * pc = |(b − c) + (a − c)|, which is pa + pb when both differences have one sign (saturated at 255: only
 * compared with pa, pb ≤ 255, so the order is kept) and |pa − pb| otherwise (a zero difference gives
 * the same either way). Ties as PNG's: a if pa ≤ pb and pa ≤ pc, else b if pb ≤ pc, else c.
 */
static inline v128 s_paeth8(v128 a, v128 b, v128 c) {
  const v128 zero = _mm_setzero_si128();
  const v128 cb = _mm_subs_epu8(c, b), ca = _mm_subs_epu8(c, a);
  const v128 pa = _mm_or_si128(_mm_subs_epu8(b, c), cb), pb = _mm_or_si128(_mm_subs_epu8(a, c), ca);
  /* b ≥ c and a ≥ c as masks; they differ where the signs do. */
  const v128 flip = _mm_xor_si128(_mm_cmpeq_epi8(cb, zero), _mm_cmpeq_epi8(ca, zero));
  const v128 pc = blend(flip, _mm_sub_epi8(_mm_max_epu8(pa, pb), _mm_min_epu8(pa, pb)), _mm_adds_epu8(pa, pb));
  const v128 a_ok = _mm_and_si128(_mm_cmpeq_epi8(_mm_min_epu8(pa, pb), pa), _mm_cmpeq_epi8(_mm_min_epu8(pa, pc), pa));
  const v128 b_ok = _mm_cmpeq_epi8(_mm_min_epu8(pb, pc), pb);
  return blend(a_ok, a, blend(b_ok, b, c));
}
static inline int s_none(v128 x, v128 a, v128 b, v128 c) { return _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_or_si128(_mm_or_si128(x, a), _mm_or_si128(b, c)), _mm_setzero_si128())) == 0xffff; }
static inline v128 s_cost(v128 acc, v128 v) { return _mm_add_epi64(acc, _mm_sad_epu8(_mm_min_epu8(v, _mm_sub_epi8(_mm_setzero_si128(), v)), _mm_setzero_si128())); }
static inline uint64_t s_sum(v128 v) {
  uint64_t l[2];
  _mm_storeu_si128((v128 *)l, v);
  return l[0] + l[1];
}

static inline v128 s_or(v128 x, v128 y) { return _mm_or_si128(x, y); }
static inline int s_zeros(v128 v) { return _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_setzero_si128())) == 0xffff; }
static inline v128 s_paeth_res(v128 x, v128 a, v128 b, v128 c) { return s_none(x, a, b, c) ? x : _mm_sub_epi8(x, s_paeth8(a, b, c)); }
static size_t costs_sse2(const uint8_t *cur, const uint8_t *prev, size_t len, int bpp, uint64_t costs[TB_FILTERS]) { COST_LOOP(s_, v128, 16); }
static size_t apply_sse2(const uint8_t *cur, const uint8_t *prev, size_t len, int bpp, int f, uint8_t *out, int *any) {
  if (f == 0) { APPLY_LOOP(s_, v128, 16, s_sub(x, a)); }
  if (f == 1) { APPLY_LOOP(s_, v128, 16, s_sub(x, b)); }
  APPLY_LOOP(s_, v128, 16, s_paeth_res(x, a, b, c));
}
#endif

#if defined(__GNUC__) && defined(__x86_64__)
#define AVX2 __attribute__((target("avx2")))
typedef __m256i v256;
AVX2 static inline v256 x_zero(void) { return _mm256_setzero_si256(); }
AVX2 static inline v256 x_load(const uint8_t *p) { return _mm256_loadu_si256((const v256 *)p); }
AVX2 static inline void x_store(uint8_t *p, v256 v) { _mm256_storeu_si256((v256 *)p, v); }
AVX2 static inline v256 x_sub(v256 x, v256 y) { return _mm256_sub_epi8(x, y); }
AVX2 static inline v256 x_paeth8(v256 a, v256 b, v256 c) {
  const v256 zero = _mm256_setzero_si256();
  const v256 cb = _mm256_subs_epu8(c, b), ca = _mm256_subs_epu8(c, a);
  const v256 pa = _mm256_or_si256(_mm256_subs_epu8(b, c), cb), pb = _mm256_or_si256(_mm256_subs_epu8(a, c), ca);
  const v256 flip = _mm256_xor_si256(_mm256_cmpeq_epi8(cb, zero), _mm256_cmpeq_epi8(ca, zero));
  const v256 pc = _mm256_blendv_epi8(_mm256_adds_epu8(pa, pb), _mm256_sub_epi8(_mm256_max_epu8(pa, pb), _mm256_min_epu8(pa, pb)), flip);
  const v256 a_ok = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_min_epu8(pa, pb), pa), _mm256_cmpeq_epi8(_mm256_min_epu8(pa, pc), pa));
  const v256 b_ok = _mm256_cmpeq_epi8(_mm256_min_epu8(pb, pc), pb);
  return _mm256_blendv_epi8(_mm256_blendv_epi8(c, b, b_ok), a, a_ok);
}
AVX2 static inline int x_none(v256 x, v256 a, v256 b, v256 c) { const v256 o = _mm256_or_si256(_mm256_or_si256(x, a), _mm256_or_si256(b, c)); return _mm256_testz_si256(o, o); }
AVX2 static inline v256 x_cost(v256 acc, v256 v) { return _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_min_epu8(v, _mm256_sub_epi8(_mm256_setzero_si256(), v)), _mm256_setzero_si256())); }
AVX2 static inline uint64_t x_sum(v256 v) { return s_sum(_mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1))); }

AVX2 static inline v256 x_or(v256 x, v256 y) { return _mm256_or_si256(x, y); }
AVX2 static inline int x_zeros(v256 v) { return _mm256_testz_si256(v, v); }
AVX2 static inline v256 x_paeth_res(v256 x, v256 a, v256 b, v256 c) { return x_none(x, a, b, c) ? x : _mm256_sub_epi8(x, x_paeth8(a, b, c)); }
AVX2 static size_t costs_avx2(const uint8_t *cur, const uint8_t *prev, size_t len, int bpp, uint64_t costs[TB_FILTERS]) { COST_LOOP(x_, v256, 32); }
AVX2 static size_t apply_avx2(const uint8_t *cur, const uint8_t *prev, size_t len, int bpp, int f, uint8_t *out, int *any) {
  if (f == 0) { APPLY_LOOP(x_, v256, 32, x_sub(x, a)); }
  if (f == 1) { APPLY_LOOP(x_, v256, 32, x_sub(x, b)); }
  APPLY_LOOP(x_, v256, 32, x_paeth_res(x, a, b, c));
}
#endif

void tb_filter_costs(const uint8_t *cur, const uint8_t *prev, size_t len, int bpp, uint64_t costs[TB_FILTERS], int simd) {
  size_t i = len;
  (void)simd;
  costs[0] = costs[1] = costs[2] = 0;
#if defined(__GNUC__) && defined(__x86_64__)
  if (simd >= TB_SIMD_AVX2) i = costs_avx2(cur, prev, len, bpp, costs);
  else
#endif
#if defined(__SSE2__)
  if (simd >= TB_SIMD_SSE2) i = costs_sse2(cur, prev, len, bpp, costs);
  else
#endif
    i = 0;
  /* The rest byte by byte: the sampled blocks (SIMD: the last, not whole one) from i on. */
  for (; i < len; i += 32 * TB_COST_STRIDE) {
    const size_t end = i + 32 < len ? i + 32 : len;
    for (size_t k = i; k < end; k++) {
      uint8_t x = cur[k], a = cur[k - bpp], b = prev[k], c = prev[k - bpp];
      uint8_t r[TB_FILTERS] = {(uint8_t)(x - a), (uint8_t)(x - b), (uint8_t)(x - paeth(a, b, c))};
      for (int f = 0; f < TB_FILTERS; f++) costs[f] += r[f] < 128 ? r[f] : 256 - r[f];
    }
  }
}

int tb_filter_apply(const uint8_t *cur, const uint8_t *prev, size_t len, int bpp, int f, uint8_t *out, int simd) {
  size_t i = 0;
  int any = 0;
  (void)simd;
#if defined(__GNUC__) && defined(__x86_64__)
  if (simd >= TB_SIMD_AVX2) i = apply_avx2(cur, prev, len, bpp, f, out, &any);
#endif
#if defined(__SSE2__)
  if (simd >= TB_SIMD_SSE2) {
    const size_t done = i;
    i = done + apply_sse2(cur + done, prev + done, len - done, bpp, f, out + done, &any);
  }
#endif
  for (; i < len; i++) {
    uint8_t x = cur[i], a = cur[i - bpp], b = prev[i], c = prev[i - bpp];
    out[i] = (uint8_t)(f == 0 ? x - a : f == 1 ? x - b : x - paeth(a, b, c));
    any |= out[i] != 0;
  }
  return any;
}
