/*
 * The PNG encoder alone, in C (no Node), on the bench's composed images written by
 * bench/static-map/dump-images.ts: best of `rounds` per image (wall ms) and KB per image, at a SIMD level
 * (0: the best there is, 1 none, 2 SSE2, 3 AVX2). Build it with the addon's flags:
 *
 *   node --import tsx bench/static-map/dump-images.ts --dir /tmp/enc
 *   cd lib/native/src && gcc -O2 -std=gnu11 -I. ../../../bench/static-map/encoder-harness.c png_encode.c \
 *     deflate.c deflate_block.c filter.c huffman.c checksum.c -o /tmp/encoder-harness
 *   /tmp/encoder-harness /tmp/enc 10 [simd]
 *
 * Used for the encoder's rounds in docs/static-map-speed.md (with perf record on it).
 */
#include "checksum.h"
#include "deflate.h"
#include "filter.h"
#include "png_encode.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_IMAGES 1000

static uint8_t *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  rewind(f);
  uint8_t *b = malloc(*n ? *n : 1);
  if (b && fread(b, 1, *n, f) != *n) free(b), b = NULL;
  fclose(f);
  return b;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DIR [rounds] [simd]\n", argv[0]);
    return 2;
  }
  tb_checksum_init();
  tb_deflate_init();
  tb_filter_init();
  const int rounds = argc > 2 ? atoi(argv[2]) : 10, simd = argc > 3 ? atoi(argv[3]) : 0;
  static uint8_t *rgb[MAX_IMAGES], *alpha[MAX_IMAGES];
  static uint32_t w[MAX_IMAGES], h[MAX_IMAGES];
  int n = 0;
  for (; n < MAX_IMAGES; n++) {
    char p[4096];
    size_t len;
    snprintf(p, sizeof p, "%s/%d.json", argv[1], n);
    char *json = (char *)slurp(p, &len);
    if (!json) break;
    const char *pw = strstr(json, "\"w\":"), *ph = strstr(json, "\"h\":");
    if (!pw || !ph || sscanf(pw + 4, "%u", &w[n]) != 1 || sscanf(ph + 4, "%u", &h[n]) != 1) return fprintf(stderr, "%s: no w, h\n", p), 1;
    free(json);
    snprintf(p, sizeof p, "%s/%d.rgb", argv[1], n);
    if (!(rgb[n] = slurp(p, &len)) || len != (size_t)w[n] * h[n] * 3) return fprintf(stderr, "%s: missing or not w·h·3 bytes\n", p), 1;
    snprintf(p, sizeof p, "%s/%d.a", argv[1], n);
    alpha[n] = slurp(p, &len); /* absent: opaque */
  }
  if (n == 0) return fprintf(stderr, "%s: no images (run dump-images.ts)\n", argv[1]), 1;
  double best = 1e30;
  size_t bytes = 0;
  for (int r = 0; r < rounds; r++) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    bytes = 0;
    for (int i = 0; i < n; i++) {
      tb_png_input in = {rgb[i], alpha[i], w[i], h[i], 3, 1, simd};
      tb_png_output out;
      const char *err = tb_png_encode(&in, &out);
      if (err) return fprintf(stderr, "image %d: %s\n", i, err), 1;
      bytes += out.size;
      free(out.data);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    const double ms = ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6) / n;
    if (ms < best) best = ms;
  }
  printf("%d images: best %.3f ms per image, %.1f KB per image\n", n, best, (double)bytes / n / 1024);
  return 0;
}
