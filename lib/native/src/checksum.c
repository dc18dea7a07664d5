/*
 * CRC-32 by slicing eight bytes at a time (tables built once by tb_checksum_init, which binding.c
 * calls when the addon loads) and Adler-32 with AVX2 sums of 32 bytes at a time, or SSE2 of 16
 * (plain C elsewhere). Adler-32 runs over all the filtered pixels (megabytes), CRC-32 only over the
 * compressed output.
 */
#include "checksum.h"
#include <string.h>
#include "filter.h"
#ifdef __SSE2__
#include <immintrin.h>
#endif

static uint32_t crc_table[8][256];
static int crc_ready = 0, crc_pclmul = 0;

void tb_checksum_init(void) {
#if defined(__GNUC__) && defined(__x86_64__)
  __builtin_cpu_init();
  crc_pclmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
    crc_table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++) {
    for (int t = 1; t < 8; t++) crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
  }
  crc_ready = 1;
}

static inline uint32_t load32le(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t crc32_table(uint32_t crc, const uint8_t *p, size_t n);

#if defined(__GNUC__) && defined(__x86_64__)
/* x0·k (its low half by k's low, its high half by k's high, carry-less) plus `data`: one 128-bit fold. */
__attribute__((target("pclmul,sse4.1"))) static inline __m128i fold(__m128i x, __m128i k, __m128i data) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), data);
}

/*
 * CRC-32 of n ≥ 64 bytes by carry-less multiplication (Intel's folding, as zlib's and Chromium's
 * crc32_simd: 4 × 128 bits folded per 64 bytes, then into one 128-bit value R). The folds keep the
 * message's remainder, so the CRC is the table CRC (no pre-/post-inversion) of R followed by the last
 * n mod 16 bytes; the constants are x^(4·128±32) and x^(128±32) mod P, bit-reflected.
 */
__attribute__((target("pclmul,sse4.1"))) static uint32_t crc32_pclmul(uint32_t crc, const uint8_t *p, size_t n) {
  const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4), k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
  __m128i x0 = _mm_loadu_si128((const __m128i *)p), x1 = _mm_loadu_si128((const __m128i *)(p + 16));
  __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32)), x3 = _mm_loadu_si128((const __m128i *)(p + 48));
  x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)~crc));
  p += 64, n -= 64;
  for (; n >= 64; p += 64, n -= 64) {
    x0 = fold(x0, k1k2, _mm_loadu_si128((const __m128i *)p));
    x1 = fold(x1, k1k2, _mm_loadu_si128((const __m128i *)(p + 16)));
    x2 = fold(x2, k1k2, _mm_loadu_si128((const __m128i *)(p + 32)));
    x3 = fold(x3, k1k2, _mm_loadu_si128((const __m128i *)(p + 48)));
  }
  x0 = fold(fold(fold(x0, k3k4, x1), k3k4, x2), k3k4, x3);
  for (; n >= 16; p += 16, n -= 16) x0 = fold(x0, k3k4, _mm_loadu_si128((const __m128i *)p));
  uint8_t r[16];
  _mm_storeu_si128((__m128i *)r, x0);
  return ~crc32_table(crc32_table(0, r, 16), p, n);
}
#endif

uint32_t tb_crc32(uint32_t crc, const uint8_t *p, size_t n) {
  if (!crc_ready) tb_checksum_init();
#if defined(__GNUC__) && defined(__x86_64__)
  if (n >= 64 && crc_pclmul) return crc32_pclmul(crc, p, n);
#endif
  return ~crc32_table(~crc, p, n);
}

/* The table CRC of n bytes continuing the register value c (no inversions). */
static uint32_t crc32_table(uint32_t c, const uint8_t *p, size_t n) {
  while (n >= 8) {
    uint32_t lo = load32le(p) ^ c, hi = load32le(p + 4);
    c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
        crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^ crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return c;
}

#define ADLER_MOD 65521u
/* Most bytes summed before s2 could overflow 32 bits (zlib's NMAX), a multiple of 16. */
#define ADLER_NMAX 5552u

#if defined(__GNUC__) && defined(__x86_64__)
static inline uint64_t lanes_sum64(__m128i v) {
  uint64_t l[2];
  _mm_storeu_si128((__m128i *)l, v);
  return l[0] + l[1];
}

/*
 * 32 bytes a step (AVX2): s1's byte sums by vpsadbw, the weighted sums Σ(32−i)·bi by vpmaddubsw (≤ 255·63,
 * no saturation) and vpmaddwd; returns the bytes summed (a multiple of 32, at most n) with s1, s2 updated.
 */
__attribute__((target("avx2"))) static size_t adler_avx2(uint32_t *s1, uint32_t *s2, const uint8_t *p, size_t n) {
  const size_t vecs = n / 32;
  if (vecs == 0) return 0;
  const __m256i zero = _mm256_setzero_si256(), ones = _mm256_set1_epi16(1);
  const __m256i w = _mm256_setr_epi8(32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1);
  __m256i sum = zero, prefix = zero, weighted = zero;
  for (size_t v = 0; v < vecs; v++, p += 32) {
    const __m256i b = _mm256_loadu_si256((const __m256i *)p);
    prefix = _mm256_add_epi64(prefix, sum);
    sum = _mm256_add_epi64(sum, _mm256_sad_epu8(b, zero));
    weighted = _mm256_add_epi32(weighted, _mm256_madd_epi16(_mm256_maddubs_epi16(b, w), ones));
  }
  const uint64_t bytes = lanes_sum64(_mm_add_epi64(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1)));
  const uint64_t pre = lanes_sum64(_mm_add_epi64(_mm256_castsi256_si128(prefix), _mm256_extracti128_si256(prefix, 1)));
  const __m128i w4 = _mm_add_epi32(_mm256_castsi256_si128(weighted), _mm256_extracti128_si256(weighted, 1));
  const uint64_t wsum = lanes_sum64(_mm_add_epi64(_mm_unpacklo_epi32(w4, _mm_setzero_si128()), _mm_unpackhi_epi32(w4, _mm_setzero_si128())));
  const uint64_t t2 = (uint64_t)*s2 + 32ull * vecs * *s1 + 32ull * pre + wsum;
  *s1 = (uint32_t)((*s1 + bytes) % ADLER_MOD);
  *s2 = (uint32_t)(t2 % ADLER_MOD);
  return vecs * 32;
}
#endif

uint32_t tb_adler32(uint32_t adler, const uint8_t *p, size_t n, int simd) {
  uint32_t s1 = adler & 0xffff, s2 = adler >> 16;
#if defined(__GNUC__) && defined(__x86_64__)
  const int avx2 = simd >= TB_SIMD_AVX2;
#endif
  while (n > 0) {
    size_t chunk = n < ADLER_NMAX ? n : ADLER_NMAX;
    n -= chunk;
#if defined(__GNUC__) && defined(__x86_64__)
    if (avx2) {
      const size_t done = adler_avx2(&s1, &s2, p, chunk);
      p += done, chunk -= done;
    }
#endif
#ifdef __SSE2__
    size_t vecs = simd >= TB_SIMD_SSE2 ? chunk / 16 : 0;
    if (vecs > 0) {
      /* Per 16 bytes b0..b15: s1 += Σb, s2 += 16·s1 + Σ(16−i)·bi. `prefix` sums s1's byte sums before each vector. */
      const __m128i zero = _mm_setzero_si128();
      const __m128i w_lo = _mm_setr_epi16(16, 15, 14, 13, 12, 11, 10, 9), w_hi = _mm_setr_epi16(8, 7, 6, 5, 4, 3, 2, 1);
      __m128i sum = zero, prefix = zero, weighted = zero;
      for (size_t v = 0; v < vecs; v++, p += 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)p);
        prefix = _mm_add_epi32(prefix, sum);
        sum = _mm_add_epi32(sum, _mm_sad_epu8(b, zero));
        weighted = _mm_add_epi32(weighted, _mm_madd_epi16(_mm_unpacklo_epi8(b, zero), w_lo));
        weighted = _mm_add_epi32(weighted, _mm_madd_epi16(_mm_unpackhi_epi8(b, zero), w_hi));
      }
      uint32_t lanes[4];
      _mm_storeu_si128((__m128i *)lanes, sum);
      uint64_t bytes = (uint64_t)lanes[0] + lanes[2];
      _mm_storeu_si128((__m128i *)lanes, prefix);
      uint64_t pre = (uint64_t)lanes[0] + lanes[2];
      _mm_storeu_si128((__m128i *)lanes, weighted);
      uint64_t wsum = (uint64_t)lanes[0] + lanes[1] + lanes[2] + lanes[3];
      uint64_t t2 = (uint64_t)s2 + 16ull * vecs * s1 + 16ull * pre + wsum;
      s1 = (uint32_t)((s1 + bytes) % ADLER_MOD);
      s2 = (uint32_t)(t2 % ADLER_MOD);
      chunk -= vecs * 16;
    }
#endif
    while (chunk--) {
      s1 += *p++;
      s2 += s1;
    }
    s1 %= ADLER_MOD;
    s2 %= ADLER_MOD;
  }
  return s2 << 16 | s1;
}

uint32_t tb_adler32_zeros(uint32_t adler, size_t n) {
  const uint64_t s1 = adler & 0xffff, s2 = adler >> 16;
  return (uint32_t)((s2 + (n % ADLER_MOD) * s1) % ADLER_MOD) << 16 | (uint32_t)s1;
}
