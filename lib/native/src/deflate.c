/*
 * Deflate for filtered image rows, after fpng/fpnge's idea: after PNG filtering, flat areas are runs
 * of one byte value, so the only matches looked for are runs (distance 1, found 16 bytes at a time);
 * everything else is a literal. Rows are scanned as they are filtered (while in cache) into a block's
 * tokens and histogram; a block gets Huffman codes from its own histogram and is written from its
 * tokens, two at a time into a 64-bit bit buffer, or stored when that would be smaller. The distance
 * code has two symbols of one bit each (a complete code), and every match uses the first.
 */
#include "deflate.h"
#include "filter.h"
#include "huffman.h"
#include <stdlib.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tilebake's PNG encoder writes words in little-endian byte order"
#endif
#ifdef __SSE2__
#include <immintrin.h>
#endif

#define MIN_MATCH 3
#define MAX_MATCH 258
#define LITLEN_SYMBOLS 286
#define END_OF_BLOCK 256
#define CL_SYMBOLS 19
#define MAX_STORED 65535u

/* A token: a literal byte (0…255), or a match of length len as MATCH_TOKEN + len. */
#define MATCH_TOKEN 256
#define TOKENS (MATCH_TOKEN + MAX_MATCH + 1)
/* Token histograms kept apart by token index (4 of them), so that repeated tokens do not wait on one counter. */
#define HISTS 4

struct tb_deflate {
  uint16_t *tokens;
  size_t ntokens, raw;
  int sse2, avx2;
};

/* Length 3…258 → its symbol (257…285), extra bits and their value. */
static uint16_t len_sym[MAX_MATCH + 1];
static uint8_t len_extra[MAX_MATCH + 1];
static uint8_t len_extra_val[MAX_MATCH + 1];
static const uint8_t sym_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t sym_base[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
/* The order code-length code lengths are sent in. */
static const uint8_t cl_order[CL_SYMBOLS] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};

void tb_deflate_init(void) {
  for (int s = 0; s < 29; s++) {
    int end = s < 28 ? sym_base[s + 1] : MAX_MATCH + 1;
    for (int len = sym_base[s]; len < end; len++) {
      len_sym[len] = (uint16_t)(257 + s);
      len_extra[len] = sym_extra[s];
      len_extra_val[len] = (uint8_t)(len - sym_base[s]);
    }
  }
}

size_t tb_deflate_bound(size_t n) {
  /* Never more than stored blocks: a header and padding of ≤ 6 bytes per 64 KB piece. */
  return n + 6 * (n / MAX_STORED + 1) + 16;
}

/* Append the `n` ≤ 56 low bits of v; writes 8 bytes at the output's end each time (hence 8 of slack), no branch. */
static inline void put(tb_bits *w, uint64_t v, unsigned n) {
  w->buf |= v << w->bits;
  w->bits += n;
  memcpy(w->out, &w->buf, 8); /* little-endian machines: the byte order deflate wants */
  w->out += w->bits >> 3;
  w->buf >>= w->bits & 56;
  w->bits &= 7;
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
 * literals between them copied 16 at a time (counted later, in tb_deflate_flush's tight loop). `data`
 * must be readable 34 bytes past n (never coded). Runs do not continue from the previous call's bytes. With AVX2 (add_avx2) 32 bytes a step.
 */
#if defined(__GNUC__) && defined(__x86_64__)
/* tb_deflate_add's loop 32 bytes a step (AVX2; the same tokens): run starts, literal copies and run lengths. */
__attribute__((target("avx2"))) static size_t add_avx2(const uint8_t *data, size_t n, uint16_t *tok) {
  size_t k = 0;
  tok[k++] = data[0];
  for (size_t i = 1; i < n;) {
    const size_t left = n - i;
    const uint8_t *p = data + i;
    uint32_t m = 0;
    if (left >= MIN_MATCH) {
      const __m256i prev = _mm256_loadu_si256((const __m256i *)(p - 1));
      const __m256i eq = _mm256_and_si256(_mm256_and_si256(_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)p), prev), _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(p + 1)), prev)),
                                          _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(p + 2)), prev));
      m = (uint32_t)_mm256_movemask_epi8(eq);
      /* only runs that fit before the end */
      if (left - (MIN_MATCH - 1) < 32) m &= (1u << (left - (MIN_MATCH - 1))) - 1;
    }
    const size_t lits = m ? (size_t)__builtin_ctz(m) : (left < 32 ? left : 32);
    const __m256i x = _mm256_loadu_si256((const __m256i *)p);
    _mm256_storeu_si256((__m256i *)(tok + k), _mm256_cvtepu8_epi16(_mm256_castsi256_si128(x)));
    _mm256_storeu_si256((__m256i *)(tok + k + 16), _mm256_cvtepu8_epi16(_mm256_extracti128_si256(x, 1)));
    k += lits, i += lits;
    if (!m) continue;
    const size_t max = n - i < MAX_MATCH ? n - i : MAX_MATCH;
    const __m256i v = _mm256_set1_epi8((char)data[i - 1]);
    size_t r = MIN_MATCH;
    while (r < max) {
      const uint32_t e = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(data + i + r)), v));
      if (e != 0xffffffffu) {
        r += (size_t)__builtin_ctz(~e);
        break;
      }
      r += 32;
    }
    if (r > max) r = max;
    tok[k++] = (uint16_t)(MATCH_TOKEN + r);
    i += r;
  }
  return k;
}
#endif

void tb_deflate_add(tb_deflate *d, const uint8_t *data, size_t n) {
  uint16_t *tok = d->tokens + d->ntokens;
  size_t k = 0;
  const int sse2 = d->sse2;
  d->raw += n;
#if defined(__GNUC__) && defined(__x86_64__)
  if (d->avx2) {
    d->ntokens += add_avx2(data, n, tok);
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
  if (d) d->sse2 = simd >= TB_SIMD_SSE2, d->avx2 = simd >= TB_SIMD_AVX2;
  return d;
}

void tb_deflate_free(tb_deflate *d) {
  if (d) free(d->tokens);
  free(d);
}

size_t tb_deflate_pending(const tb_deflate *d) { return d->raw; }

/* Code lengths of the literal/length and distance codes as code-length symbols (with extra bits). */
typedef struct {
  uint8_t sym[LITLEN_SYMBOLS + 2];
  uint8_t extra[LITLEN_SYMBOLS + 2];
  int n;
} cl_seq;

static void cl_push(cl_seq *q, int sym, int extra) {
  q->sym[q->n] = (uint8_t)sym;
  q->extra[q->n++] = (uint8_t)extra;
}

static void code_length_sequence(const uint8_t *lens, int total, cl_seq *q) {
  q->n = 0;
  for (int i = 0; i < total;) {
    int v = lens[i], run = 1;
    while (i + run < total && lens[i + run] == v) run++;
    i += run;
    if (v == 0) {
      for (; run >= 11; run -= run < 138 ? run : 138) cl_push(q, 18, (run < 138 ? run : 138) - 11);
      if (run >= 3) cl_push(q, 17, run - 3), run = 0;
      for (; run > 0; run--) cl_push(q, 0, 0);
    } else {
      cl_push(q, v, 0);
      for (run--; run >= 3; run -= run < 6 ? run : 6) cl_push(q, 16, (run < 6 ? run : 6) - 3);
      for (; run > 0; run--) cl_push(q, v, 0);
    }
  }
}

static const uint8_t cl_extra_bits[CL_SYMBOLS] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3, 7};

/* The block's bytes, decoded from its tokens, as stored blocks of ≤ 64 KB. */
static int stored_blocks(tb_bits *w, const tb_deflate *d, int last) {
  uint8_t *data = malloc(d->raw ? d->raw : 1), *p = data;
  if (!data) return -1;
  for (size_t t = 0; t < d->ntokens; t++) {
    unsigned v = d->tokens[t];
    if (v < MATCH_TOKEN) *p++ = (uint8_t)v;
    else memset(p, p[-1], v - MATCH_TOKEN), p += v - MATCH_TOKEN;
  }
  size_t n = d->raw;
  for (p = data; n > 0;) {
    size_t piece = n < MAX_STORED ? n : MAX_STORED;
    n -= piece;
    put(w, (last && n == 0) ? 1 : 0, 3);
    tb_bits_flush(w);
    uint8_t hdr[4] = {(uint8_t)piece, (uint8_t)(piece >> 8), (uint8_t)~piece, (uint8_t)(~piece >> 8)};
    memcpy(w->out, hdr, 4);
    memcpy(w->out + 4, p, piece);
    w->out += 4 + piece;
    p += piece;
  }
  free(data);
  return 0;
}

int tb_deflate_flush(tb_deflate *d, tb_bits *out, int last) {
  uint32_t hist[HISTS][TOKENS] = {{0}}, freq[LITLEN_SYMBOLS] = {0};
  const uint16_t *tok = d->tokens;
  size_t t = 0;
  for (; t + HISTS <= d->ntokens; t += HISTS) {
    hist[0][tok[t]]++, hist[1][tok[t + 1]]++, hist[2][tok[t + 2]]++, hist[3][tok[t + 3]]++;
  }
  for (; t < d->ntokens; t++) hist[0][tok[t]]++;
  for (int v = 0; v < TOKENS; v++) {
    uint32_t c = hist[0][v] + hist[1][v] + hist[2][v] + hist[3][v];
    freq[v < MATCH_TOKEN ? v : len_sym[v - MATCH_TOKEN]] += c;
  }
  freq[END_OF_BLOCK] = 1;

  uint8_t lens[LITLEN_SYMBOLS], all[LITLEN_SYMBOLS + 2];
  tb_huffman_lengths(freq, LITLEN_SYMBOLS, 15, lens);
  int hlit = LITLEN_SYMBOLS;
  while (hlit > 257 && lens[hlit - 1] == 0) hlit--;
  memcpy(all, lens, (size_t)hlit);
  all[hlit] = all[hlit + 1] = 1; /* the two distance codes */
  cl_seq q;
  code_length_sequence(all, hlit + 2, &q);
  uint32_t cl_freq[CL_SYMBOLS] = {0};
  for (int i = 0; i < q.n; i++) cl_freq[q.sym[i]]++;
  uint8_t cl_lens[CL_SYMBOLS];
  uint16_t cl_codes[CL_SYMBOLS];
  tb_huffman_lengths(cl_freq, CL_SYMBOLS, 7, cl_lens);
  tb_huffman_codes(cl_lens, CL_SYMBOLS, cl_codes);
  int hclen = CL_SYMBOLS;
  while (hclen > 4 && cl_lens[cl_order[hclen - 1]] == 0) hclen--;

  /* Exact sizes of both choices, in bits. */
  uint64_t bits = 3 + 5 + 5 + 4 + 3 * (uint64_t)hclen;
  for (int i = 0; i < q.n; i++) bits += cl_lens[q.sym[i]] + cl_extra_bits[q.sym[i]];
  for (int s = 0; s < LITLEN_SYMBOLS; s++) bits += (uint64_t)freq[s] * lens[s];
  for (int s = 257; s < LITLEN_SYMBOLS; s++) bits += (uint64_t)freq[s] * (sym_extra[s - 257] + 1);
  uint64_t stored_bits = 8 * ((uint64_t)d->raw + 5 * (d->raw / MAX_STORED + 1)) + 7;
  int status = 0;
  if (stored_bits < bits) {
    status = stored_blocks(out, d, last);
  } else {
    tb_bits bw = *out, *w = &bw; /* a local copy stays in registers while writing */
    put(w, (last ? 1 : 0) | 2 << 1, 3);
    put(w, (uint64_t)(hlit - 257) | (uint64_t)(2 - 1) << 5 | (uint64_t)(hclen - 4) << 10, 14);
    for (int i = 0; i < hclen; i++) put(w, cl_lens[cl_order[i]], 3);
    for (int i = 0; i < q.n; i++) {
      put(w, cl_codes[q.sym[i]], cl_lens[q.sym[i]]);
      if (cl_extra_bits[q.sym[i]]) put(w, q.extra[i], cl_extra_bits[q.sym[i]]);
    }
    uint16_t codes[LITLEN_SYMBOLS];
    tb_huffman_codes(lens, LITLEN_SYMBOLS, codes);
    /* Every token as one bit string; a match is its length code, extra bits and distance code 0 (one 0 bit). */
    uint32_t tbits[TOKENS];
    uint8_t tlen[TOKENS];
    for (int b = 0; b < 256; b++) tbits[b] = codes[b], tlen[b] = lens[b];
    for (int len = MIN_MATCH; len <= MAX_MATCH; len++) {
      int s = len_sym[len];
      tbits[MATCH_TOKEN + len] = codes[s] | (uint32_t)len_extra_val[len] << lens[s];
      tlen[MATCH_TOKEN + len] = (uint8_t)(lens[s] + len_extra[len] + 1);
    }
    /*
     * Four tokens (≤ 21 bits each) per write when they fit in 56 bits (nearly always: literals take ~6-9),
     * else two and two: the bit writer's serial chain runs once per four tokens.
     */
    const size_t ntokens = d->ntokens; /* not reloaded after each write (the writes could alias it) */
    for (t = 0; t + 4 <= ntokens; t += 4) {
      const unsigned a = tok[t], b = tok[t + 1], c = tok[t + 2], e = tok[t + 3];
      const unsigned ab = tlen[a] + tlen[b], ce = tlen[c] + tlen[e];
      const uint64_t lo = tbits[a] | (uint64_t)tbits[b] << tlen[a], hi = tbits[c] | (uint64_t)tbits[e] << tlen[c];
      if (ab + ce <= 56) {
        put(w, lo | hi << ab, ab + ce);
      } else {
        put(w, lo, ab);
        put(w, hi, ce);
      }
    }
    for (; t + 2 <= ntokens; t += 2) {
      unsigned a = tok[t], b = tok[t + 1];
      put(w, tbits[a] | (uint64_t)tbits[b] << tlen[a], tlen[a] + tlen[b]);
    }
    if (t < ntokens) put(w, tbits[tok[t]], tlen[tok[t]]);
    put(w, codes[END_OF_BLOCK], lens[END_OF_BLOCK]);
    *out = bw;
  }
  d->ntokens = d->raw = 0;
  return status;
}
