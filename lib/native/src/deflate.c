/*
 * Deflate for filtered image rows, after fpng/fpnge's idea: after PNG filtering, flat areas are runs
 * of one byte value, so the only matches looked for are runs (distance 1, found 32 or 16 bytes at a
 * time); everything else is a literal. Rows are scanned as they are filtered (while in cache) into a
 * block's tokens; deflate_block.c writes a block from them.
 */
#include "deflate_int.h"
#include "filter.h"
#include <stdlib.h>
#ifdef __SSE2__
#include <immintrin.h>
#endif

uint16_t tb_len_sym[MAX_MATCH + 1];
uint8_t tb_len_extra[MAX_MATCH + 1];
uint8_t tb_len_extra_val[MAX_MATCH + 1];
const uint8_t tb_sym_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t sym_base[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};

void tb_deflate_init(void) {
  for (int s = 0; s < 29; s++) {
    int end = s < 28 ? sym_base[s + 1] : MAX_MATCH + 1;
    for (int len = sym_base[s]; len < end; len++) {
      tb_len_sym[len] = (uint16_t)(257 + s);
      tb_len_extra[len] = tb_sym_extra[s];
      tb_len_extra_val[len] = (uint8_t)(len - sym_base[s]);
    }
  }
}

size_t tb_deflate_bound(size_t n) {
  /* Never more than stored blocks: a header and padding of ≤ 6 bytes per 64 KB piece. */
  return n + 6 * (n / MAX_STORED + 1) + 16;
}

void tb_bits_flush(tb_bits *w) {
  if (w->bits > 0) *w->out++ = (uint8_t)w->buf;
  w->buf = 0;
  w->bits = 0;
}

/* How many bytes from p[0] equal `v`, at most `max` (p readable 16 bytes past max). */
static inline size_t run_length(const uint8_t *p, uint8_t v, size_t max, int sse2) {
  size_t r = 0;
#ifdef __SSE2__
  if (sse2) {
    const __m128i b = _mm_set1_epi8((char)v);
    while (r < max) {
      unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + r)), b));
      if (m != 0xffff) {
        r += (size_t)__builtin_ctz(~m);
        break;
      }
      r += 16;
    }
    return r < max ? r : max;
  }
#endif
  while (r < max && p[r] == v) r++;
  return r;
}

/*
 * Bit k set when a run starts at p[k] (k < 16): p[k] = p[k+1] = p[k+2] = p[k−1], so that p[k…] is a
 * match at distance 1 of length ≥ MIN_MATCH. Reads p[−1] … p[17].
 */
static inline unsigned run_starts(const uint8_t *p, int sse2) {
#ifdef __SSE2__
  if (sse2) {
    __m128i prev = _mm_loadu_si128((const __m128i *)(p - 1)), x0 = _mm_loadu_si128((const __m128i *)p);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 1)), x2 = _mm_loadu_si128((const __m128i *)(p + 2));
    __m128i eq = _mm_and_si128(_mm_and_si128(_mm_cmpeq_epi8(x0, prev), _mm_cmpeq_epi8(x1, prev)), _mm_cmpeq_epi8(x2, prev));
    return (unsigned)_mm_movemask_epi8(eq);
  }
#endif
  unsigned m = 0;
  for (int k = 0; k < 16; k++) m |= (unsigned)(p[k] == p[k - 1] && p[k + 1] == p[k - 1] && p[k + 2] == p[k - 1]) << k;
  return m;
}

/*
 * Append the tokens of `n` bytes to the block: literals, except that a run of at least MIN_MATCH bytes
 * equal to the byte before is a match (≤ 258 long). Run starts are found 16 bytes at a time and the
 * literals between them copied 16 at a time (counted later, in tb_deflate_flush). `data` must be
 * readable from 1 byte before (AVX2) to 34 bytes past n (never coded). Runs do not continue from the
 * previous call's bytes. With AVX2, add_avx2 (the same tokens).
 */
#if defined(__GNUC__) && defined(__x86_64__)
/* 64 bits of a mask array from bit 64·w (little-endian: two 32-bit words). */
static inline uint64_t mask64(const uint32_t *m, size_t w) {
  uint64_t v;
  memcpy(&v, m + 2 * w, 8);
  return v;
}

/* Append the positions base + k of the bits k of m to arr[*count…] (two without a branch: arr has room for two more). */
__attribute__((target("bmi,popcnt"))) static inline void bit_positions(uint64_t m, uint32_t base, uint32_t *arr, size_t *count) {
  uint32_t *p = arr + *count;
  const size_t c = (size_t)__builtin_popcountll(m);
  p[0] = base + (uint32_t)_tzcnt_u64(m), m &= m - 1;
  p[1] = base + (uint32_t)_tzcnt_u64(m), m &= m - 1;
  for (size_t i = 2; m; i++, m &= m - 1) p[i] = base + (uint32_t)__builtin_ctzll(m);
  *count += c;
}

/* Copy the literals data[from…to) to tok as tokens: 32 a step, the first unconditionally (tok and data have room); returns their count. */
__attribute__((target("avx2"))) static inline size_t copy_literals(const uint8_t *data, size_t from, size_t to, uint16_t *tok) {
  for (size_t q = from;;) {
    const __m256i x = _mm256_loadu_si256((const __m256i *)(data + q));
    _mm256_storeu_si256((__m256i *)(tok + (q - from)), _mm256_cvtepu8_epi16(_mm256_castsi256_si128(x)));
    _mm256_storeu_si256((__m256i *)(tok + (q - from) + 16), _mm256_cvtepu8_epi16(_mm256_extracti128_si256(x, 1)));
    if ((q += 32) >= to) break;
  }
  return to - from;
}

/*
 * tb_deflate_add with AVX2 (the same tokens) from masks, so that no serial chain runs from one run to
 * the next: bit k of `eq` is data[k] = data[k − 1] (one compare per 32 bytes; 0 for k = 0 and k ≥ n). The
 * tokens are the stretches of set bits: one of ≥ 3 bits is a run from its first byte to its end (split
 * at 258 as the plain scan does: a rest of 1 or 2 bytes are literals), every other byte is a literal.
 * Per 64-bit word, bit-parallel: the stretches' first bits with two more after them (`begin`), and their
 * ends from adding `begin` to eq (the carry runs through each such stretch to the bit after it, and on
 * into the next word). Their positions are listed (`begins`, `ends`), then the tokens are written from
 * the lists. Was one pass finding each run's start and end with vector compares at the current position
 * (~33 cycles of latency per run), then a walk from mask bit to mask bit (one serial chain per run).
 */
__attribute__((target("avx2,bmi,bmi2,popcnt"))) static size_t add_avx2(const uint8_t *data, size_t n, uint16_t *tok, uint32_t *eq, uint32_t *begins, uint32_t *ends) {
  const size_t steps = n / 32 + 1; /* 32·steps > n: bit n is computed; reads up to data[n + 31] */
  for (size_t j = 0; j < steps; j++) {
    const uint8_t *p = data + 32 * j;
    eq[j] = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)p), _mm256_loadu_si256((const __m256i *)(p - 1))));
  }
  eq[steps] = eq[steps + 1] = eq[steps + 2] = 0; /* whole 64-bit words, and one more */
  eq[n >> 5] &= (1u << (n & 31)) - 1;            /* bits from n on: 0 */
  eq[0] &= ~1u;                                  /* byte 0 is a literal */
  size_t runs = 0, nends = 0;
  uint64_t before = 0;
  unsigned char carry = 0;
  for (size_t w = 0, words = (steps + 1) / 2; w < words; w++) {
    const uint64_t e = mask64(eq, w), next = mask64(eq, w + 1);
    const uint64_t begin = e & (e >> 1 | next << 63) & (e >> 2 | next << 62) & ~(e << 1 | before >> 63);
    unsigned long long sum;
    carry = _addcarry_u64(carry, e, begin, &sum);
    before = e;
    const uint64_t end = sum & ~e;
    if (!(begin | end)) continue;
    bit_positions(begin, (uint32_t)(64 * w), begins, &runs);
    bit_positions(end, (uint32_t)(64 * w), ends, &nends);
  }
  size_t k = 0, lit = 0; /* the literals from lit on are not written yet */
  for (size_t r = 0; r < runs; r++) {
    const size_t s = begins[r], end = ends[r];
    k += copy_literals(data, lit, s, tok + k);
    size_t len = end - s;
    for (; len > MAX_MATCH; len -= MAX_MATCH) tok[k++] = MATCH_TOKEN + MAX_MATCH;
    if (len >= MIN_MATCH) tok[k++] = (uint16_t)(MATCH_TOKEN + len);
    else for (; len > 0; len--) tok[k++] = data[s];
    lit = end;
  }
  return k + copy_literals(data, lit, n, tok + k);
}
#endif

void tb_deflate_add(tb_deflate *d, const uint8_t *data, size_t n) {
  uint16_t *tok = d->tokens + d->ntokens;
  size_t k = 0;
  const int sse2 = d->sse2;
  d->raw += n;
#if defined(__GNUC__) && defined(__x86_64__)
  if (d->avx2) {
    d->ntokens += add_avx2(data, n, tok, d->eq, d->begins, d->ends);
    return;
  }
#endif
  tok[k++] = data[0];
  for (size_t i = 1; i < n;) {
    size_t left = n - i;
    unsigned m = 0;
    if (left >= MIN_MATCH) {
      m = run_starts(data + i, sse2);
      /* only runs that fit before the end */
      if (left - (MIN_MATCH - 1) < 16) m &= (1u << (left - (MIN_MATCH - 1))) - 1;
    }
    size_t lits = m ? (size_t)__builtin_ctz(m) : (left < 16 ? left : 16);
#ifdef __SSE2__
    if (sse2) {
      __m128i x = _mm_loadu_si128((const __m128i *)(data + i)), zero = _mm_setzero_si128();
      _mm_storeu_si128((__m128i *)(tok + k), _mm_unpacklo_epi8(x, zero));
      _mm_storeu_si128((__m128i *)(tok + k + 8), _mm_unpackhi_epi8(x, zero));
    } else
#endif
      for (size_t j = 0; j < lits; j++) tok[k + j] = data[i + j];
    k += lits, i += lits;
    if (!m) continue;
    size_t max = n - i < MAX_MATCH ? n - i : MAX_MATCH;
    size_t r = MIN_MATCH + run_length(data + i + MIN_MATCH, data[i - 1], max - MIN_MATCH, sse2);
    tok[k++] = (uint16_t)(MATCH_TOKEN + r);
    i += r;
  }
  d->ntokens += k;
}

/*
 * The tokens tb_deflate_add finds in `first` then n − 1 zeros: `first`, and a 0 literal too when `first`
 * is not 0 (no run can start there); then runs of ≤ 258 while at least MIN_MATCH bytes are left, each
 * taking all it can; the last one or two bytes as literals.
 */
void tb_deflate_add_zeros(tb_deflate *d, uint8_t first, size_t n) {
  uint16_t *tok = d->tokens + d->ntokens;
  size_t k = 0, i = 1;
  d->raw += n;
  tok[k++] = first;
  if (first != 0 && i < n) tok[k++] = 0, i++;
  for (; n - i >= MIN_MATCH; k++) {
    const size_t r = n - i < MAX_MATCH ? n - i : MAX_MATCH;
    tok[k] = (uint16_t)(MATCH_TOKEN + r);
    i += r;
  }
  for (; i < n; i++) tok[k++] = 0;
  d->ntokens += k;
}

tb_deflate *tb_deflate_new(size_t block_bytes, int simd) {
  tb_deflate *d = calloc(1, sizeof *d);
  /* A token per byte at most, and 32 of slack for the literal copies. */
  if (d && !(d->tokens = malloc((block_bytes + 32) * sizeof d->tokens[0]))) free(d), d = NULL;
  /* add_avx2's mask of a row (≤ block_bytes: a bit per byte and three words more) and its runs' positions (≤ one per 4 bytes, and two more). */
  if (d && simd >= TB_SIMD_AVX2 && (!(d->eq = malloc((block_bytes / 32 + 4) * sizeof d->eq[0])) || !(d->begins = malloc((block_bytes / 4 + 4) * sizeof d->begins[0])) || !(d->ends = malloc((block_bytes / 4 + 4) * sizeof d->ends[0])))) tb_deflate_free(d), d = NULL;
  if (d) d->sse2 = simd >= TB_SIMD_SSE2, d->avx2 = simd >= TB_SIMD_AVX2;
  return d;
}

void tb_deflate_free(tb_deflate *d) {
  if (d) free(d->tokens), free(d->eq), free(d->begins), free(d->ends);
  free(d);
}

size_t tb_deflate_pending(const tb_deflate *d) { return d->raw; }

