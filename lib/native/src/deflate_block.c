/*
 * The deflate block writer (see deflate.c for the tokens): a block gets Huffman codes from its own
 * histogram and is written from its tokens, four at a time into a 64-bit bit buffer, or stored when that
 * would be smaller. The distance code has two symbols of one bit each (a complete code), and every
 * match uses the first.
 */
#include "deflate_int.h"
#include "huffman.h"
#include <stdlib.h>

#define CL_SYMBOLS 19
/* Token histograms kept apart by token index (4 of them), so that repeated tokens do not wait on one counter. */
#define HISTS 4
/*
 * The histogram counts every SAMPLE-th token (a stride prime to the 3 or 4 bytes of a pixel): 1, 3, 5, 7
 * gave 3.62, 3.41, 3.36, 3.33 ms per image and 471.5, 472.6, 473.0, 473.4 KB on the static-map bench.
 */
#define SAMPLE 5
/* Tokens written between checks of the output against its limit: ≤ 21 bits each, TB_DEFLATE_SLACK bytes at most past it. */
#define CHECK_TOKENS 4096

/* The order code-length code lengths are sent in. */
static const uint8_t cl_order[CL_SYMBOLS] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};

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
    tb_put(w, (last && n == 0) ? 1 : 0, 3);
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

/*
 * Write tokens tok[0…n) with their bit strings tbits/tlen: four tokens (≤ 21 bits each) per write when
 * they fit in 56 bits (nearly always: literals take ~6-9), else two and two: the bit writer's serial
 * chain runs once per four tokens. Stops, returning 0, once the output has passed `limit` (checked every
 * CHECK_TOKENS tokens: it writes at most TB_DEFLATE_SLACK bytes past it); 1 when all are written.
 */
static inline __attribute__((always_inline)) int write_tokens(tb_bits *out, const uint16_t *tok, size_t ntokens, const uint32_t *tbits, const uint8_t *tlen, const uint8_t *limit) {
  tb_bits bw = *out, *w = &bw; /* a local copy stays in registers while writing */
  size_t t = 0;
  while (t + 4 <= ntokens) {
    const size_t end = ntokens - t > CHECK_TOKENS ? t + CHECK_TOKENS : ntokens;
    for (; t + 4 <= end; t += 4) {
      const unsigned a = tok[t], b = tok[t + 1], c = tok[t + 2], e = tok[t + 3];
      const unsigned ab = tlen[a] + tlen[b], ce = tlen[c] + tlen[e];
      const uint64_t lo = tbits[a] | (uint64_t)tbits[b] << tlen[a], hi = tbits[c] | (uint64_t)tbits[e] << tlen[c];
      if (ab + ce <= 56) {
        tb_put(w, lo | hi << ab, ab + ce);
      } else {
        tb_put(w, lo, ab);
        tb_put(w, hi, ce);
      }
    }
    if (w->out > limit) return 0;
  }
  for (; t + 2 <= ntokens; t += 2) {
    unsigned a = tok[t], b = tok[t + 1];
    tb_put(w, tbits[a] | (uint64_t)tbits[b] << tlen[a], tlen[a] + tlen[b]);
  }
  if (t < ntokens) tb_put(w, tbits[tok[t]], tlen[tok[t]]);
  *out = bw;
  return 1;
}

#if defined(__GNUC__) && defined(__x86_64__)
/* The same with BMI2's shifts by a register (shlx/shrx: one µop, where shl/shr by %cl take three on Intel); every AVX2 CPU has BMI2 (filter.c checks). */
__attribute__((target("bmi2"))) static int write_tokens_bmi2(tb_bits *w, const uint16_t *tok, size_t ntokens, const uint32_t *tbits, const uint8_t *tlen, const uint8_t *limit) {
  return write_tokens(w, tok, ntokens, tbits, tlen, limit);
}
#endif

int tb_deflate_flush(tb_deflate *d, tb_bits *out, int last) {
  uint32_t hist[HISTS][TOKENS] = {{0}}, freq[LITLEN_SYMBOLS];
  const uint16_t *tok = d->tokens;
  const size_t ntokens = d->ntokens; /* not reloaded after each write (the writes could alias it) */
  size_t t = 0;
  for (; t + HISTS * SAMPLE <= ntokens; t += HISTS * SAMPLE) {
    hist[0][tok[t]]++, hist[1][tok[t + SAMPLE]]++, hist[2][tok[t + 2 * SAMPLE]]++, hist[3][tok[t + 3 * SAMPLE]]++;
  }
  for (; t < ntokens; t += SAMPLE) hist[0][tok[t]]++;
  /* Every symbol at least 1: one that only unsampled tokens hold still has a code (END_OF_BLOCK: just 1). */
  for (int s = 0; s < LITLEN_SYMBOLS; s++) freq[s] = 1;
  for (int v = 0; v < TOKENS; v++) {
    uint32_t c = hist[0][v] + hist[1][v] + hist[2][v] + hist[3][v];
    freq[v < MATCH_TOKEN ? v : tb_len_sym[v - MATCH_TOKEN]] += c * SAMPLE;
  }

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

  /* Sizes of both choices in bits: stored exact, Huffman estimated from the sampled counts. */
  uint64_t bits = 3 + 5 + 5 + 4 + 3 * (uint64_t)hclen;
  for (int i = 0; i < q.n; i++) bits += cl_lens[q.sym[i]] + cl_extra_bits[q.sym[i]];
  for (int s = 0; s < LITLEN_SYMBOLS; s++) bits += (uint64_t)freq[s] * lens[s];
  for (int s = 257; s < LITLEN_SYMBOLS; s++) bits += (uint64_t)freq[s] * (tb_sym_extra[s - 257] + 1);
  uint64_t stored_bits = 8 * ((uint64_t)d->raw + 5 * (d->raw / MAX_STORED + 1)) + 7;
  int status = 0;
  if (stored_bits < bits) {
    status = stored_blocks(out, d, last);
  } else {
    const tb_bits start = *out;
    /* The Huffman block may take no more bytes than the stored ones would (tb_deflate_bound), else it is written stored. */
    const uint8_t *limit = start.out + stored_bits / 8;
    tb_bits bw = *out, *w = &bw;
    tb_put(w, (last ? 1 : 0) | 2 << 1, 3);
    tb_put(w, (uint64_t)(hlit - 257) | (uint64_t)(2 - 1) << 5 | (uint64_t)(hclen - 4) << 10, 14);
    for (int i = 0; i < hclen; i++) tb_put(w, cl_lens[cl_order[i]], 3);
    for (int i = 0; i < q.n; i++) {
      tb_put(w, cl_codes[q.sym[i]], cl_lens[q.sym[i]]);
      if (cl_extra_bits[q.sym[i]]) tb_put(w, q.extra[i], cl_extra_bits[q.sym[i]]);
    }
    uint16_t codes[LITLEN_SYMBOLS];
    tb_huffman_codes(lens, LITLEN_SYMBOLS, codes);
    /* Every token as one bit string; a match is its length code, extra bits and distance code 0 (one 0 bit). */
    uint32_t tbits[TOKENS];
    uint8_t tlen[TOKENS];
    for (int b = 0; b < 256; b++) tbits[b] = codes[b], tlen[b] = lens[b];
    for (int len = MIN_MATCH; len <= MAX_MATCH; len++) {
      int s = tb_len_sym[len];
      tbits[MATCH_TOKEN + len] = codes[s] | (uint32_t)tb_len_extra_val[len] << lens[s];
      tlen[MATCH_TOKEN + len] = (uint8_t)(lens[s] + tb_len_extra[len] + 1);
    }
    int fits;
#if defined(__GNUC__) && defined(__x86_64__)
    if (d->avx2) fits = write_tokens_bmi2(w, tok, ntokens, tbits, tlen, limit);
    else
#endif
      fits = write_tokens(w, tok, ntokens, tbits, tlen, limit);
    if (fits) tb_put(w, codes[END_OF_BLOCK], lens[END_OF_BLOCK]);
    if (fits && w->out <= limit) {
      *out = bw;
    } else { /* the sample misjudged the block: it is written again, stored */
      *out = start;
      status = stored_blocks(out, d, last);
    }
  }
  d->ntokens = d->raw = 0;
  return status;
}
