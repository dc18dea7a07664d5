/*
 * Huffman code lengths by Moffat and Katajainen's in-place algorithm over the symbols sorted by
 * frequency; when the longest code exceeds the limit the frequencies are halved (kept ≥ 1) and the
 * lengths rebuilt, which converges quickly and costs a few percent only on extremely skewed blocks.
 */
#include "huffman.h"
#include <stdlib.h>
#include <string.h>

#define MAX_SYMBOLS 320

typedef struct {
  uint32_t freq;
  uint16_t sym;
} entry;

/*
 * Sort by frequency, then symbol (a total order, so the same result as any sort): LSD radix sort, 8 bits
 * a pass, of the keys freq·512 + sym, as many passes as the largest key has bytes. qsort with a
 * comparison callback was ~4 % of the encoder's time (20 blocks per image, ~290 symbols each).
 */
static void sort_by_freq(entry *e, int m) {
  uint64_t a[MAX_SYMBOLS], b[MAX_SYMBOLS], *src = a, *dst = b, max = 0;
  for (int i = 0; i < m; i++) {
    a[i] = (uint64_t)e[i].freq << 9 | e[i].sym;
    if (a[i] > max) max = a[i];
  }
  for (unsigned shift = 0; shift < 64 && (max >> shift) != 0; shift += 8) {
    uint32_t count[257] = {0};
    for (int i = 0; i < m; i++) count[((src[i] >> shift) & 255) + 1]++;
    for (int d = 0; d < 256; d++) count[d + 1] += count[d];
    for (int i = 0; i < m; i++) dst[count[(src[i] >> shift) & 255]++] = src[i];
    uint64_t *t = src;
    src = dst, dst = t;
  }
  for (int i = 0; i < m; i++) e[i] = (entry){(uint32_t)(src[i] >> 9), (uint16_t)(src[i] & 511)};
}

/* Moffat–Katajainen: A[0..n) ascending frequencies in, code lengths out (n ≥ 2). */
static void minimum_redundancy(uint32_t *A, int n) {
  int root = 0, leaf = 2, next;
  A[0] += A[1];
  for (next = 1; next < n - 1; next++) {
    if (leaf >= n || A[root] < A[leaf]) {
      A[next] = A[root];
      A[root++] = next;
    } else {
      A[next] = A[leaf++];
    }
    if (leaf >= n || (root < next && A[root] < A[leaf])) {
      A[next] += A[root];
      A[root++] = next;
    } else {
      A[next] += A[leaf++];
    }
  }
  A[n - 2] = 0;
  for (next = n - 3; next >= 0; next--) A[next] = A[A[next]] + 1;
  int avbl = 1, used = 0, depth = 0;
  root = n - 2;
  next = n - 1;
  while (avbl > 0) {
    while (root >= 0 && A[root] == (uint32_t)depth) {
      used++;
      root--;
    }
    while (avbl > used) {
      A[next--] = depth;
      avbl--;
    }
    avbl = 2 * used;
    depth++;
    used = 0;
  }
}

void tb_huffman_lengths(const uint32_t *freq, int n, int maxbits, uint8_t *lens) {
  entry e[MAX_SYMBOLS];
  uint32_t A[MAX_SYMBOLS];
  int m = 0;
  memset(lens, 0, (size_t)n);
  for (int s = 0; s < n; s++) {
    if (freq[s]) e[m++] = (entry){freq[s], (uint16_t)s};
  }
  if (m < 2) {
    lens[0] = lens[1] = 1;
    if (m == 1 && e[0].sym > 1) lens[1] = 0, lens[e[0].sym] = 1;
    return;
  }
  /* Halving keeps the order, so one sort serves every round. */
  sort_by_freq(e, m);
  for (;;) {
    for (int i = 0; i < m; i++) A[i] = e[i].freq;
    minimum_redundancy(A, m);
    /* A[0] is the longest (the least frequent symbol's). */
    if ((int)A[0] <= maxbits) break;
    for (int i = 0; i < m; i++) e[i].freq = (e[i].freq >> 1) | 1;
  }
  for (int i = 0; i < m; i++) lens[e[i].sym] = (uint8_t)A[i];
}

void tb_huffman_codes(const uint8_t *lens, int n, uint16_t *codes) {
  uint16_t count[16] = {0}, next[16];
  for (int s = 0; s < n; s++) count[lens[s]]++;
  count[0] = 0;
  uint16_t code = 0;
  for (int b = 1; b < 16; b++) {
    code = (uint16_t)((code + count[b - 1]) << 1);
    next[b] = code;
  }
  for (int s = 0; s < n; s++) {
    int len = lens[s];
    if (!len) {
      codes[s] = 0;
      continue;
    }
    /* deflate sends codes from their last bit: the len-bit code reversed (16 bits swapped, then shifted). */
    uint32_t c = next[len]++;
    c = (c & 0x5555) << 1 | (c >> 1 & 0x5555);
    c = (c & 0x3333) << 2 | (c >> 2 & 0x3333);
    c = (c & 0x0f0f) << 4 | (c >> 4 & 0x0f0f);
    c = (c & 0x00ff) << 8 | c >> 8;
    codes[s] = (uint16_t)(c >> (16 - len));
  }
}
