/*
 * CRC-32 by slicing eight bytes at a time (tables built once by tb_checksum_init, which binding.c
 * calls when the addon loads) and Adler-32 with SSE2 sums of 16 bytes at a time
 * (plain C elsewhere). Adler-32 runs over all the filtered pixels (megabytes), CRC-32 only over the
 * compressed output.
 */
#include "checksum.h"
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

static uint32_t crc_table[8][256];
static int crc_ready = 0;

void tb_checksum_init(void) {
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

uint32_t tb_crc32(uint32_t crc, const uint8_t *p, size_t n) {
  if (!crc_ready) tb_checksum_init();
  uint32_t c = ~crc;
  while (n >= 8) {
    uint32_t lo = load32le(p) ^ c, hi = load32le(p + 4);
    c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
        crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^ crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return ~c;
}

#define ADLER_MOD 65521u
/* Most bytes summed before s2 could overflow 32 bits (zlib's NMAX), a multiple of 16. */
#define ADLER_NMAX 5552u

uint32_t tb_adler32(uint32_t adler, const uint8_t *p, size_t n) {
  uint32_t s1 = adler & 0xffff, s2 = adler >> 16;
  while (n > 0) {
    size_t chunk = n < ADLER_NMAX ? n : ADLER_NMAX;
    n -= chunk;
#ifdef __SSE2__
    size_t vecs = chunk / 16;
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
