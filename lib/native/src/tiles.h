/*
 * A resampler's source: one image, or a region of a grid of equal tiles read in place (static maps:
 * the decoded tiles under a view, so the region is never stitched into one copy). The resamplers read
 * source rows per segment of columns that lie in one tile column.
 */
#ifndef TILEBAKE_TILES_H
#define TILEBAKE_TILES_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
  /* cols × rows tiles, row-major, each tw × th pixels of ch bytes; NULL: no tile (reads as 0). One image: one tile. */
  const uint8_t *const *tiles;
  int cols, rows, tw, th;
  /* Region pixel (x, y) is pixel (x + ox, y + oy) of the grid; the region is w × h. */
  int ox, oy, w, h, ch;
} tb_tiles;

/* `src` as a grid of one tile (`one` holds its pointer). */
static inline tb_tiles tb_tiles_one(const uint8_t *const *one, int w, int h, int ch) {
  return (tb_tiles){one, 1, 1, w, h, 0, 0, w, h, ch};
}

/* The end (exclusive) of the run of region columns from x that lie in one tile column. */
static inline int tb_tiles_run_end(const tb_tiles *t, int x) {
  const int end = ((x + t->ox) / t->tw + 1) * t->tw - t->ox;
  return end < t->w ? end : t->w;
}

/* Region pixel (x, y), or `none` where the grid has no tile; x and y within the region. */
static inline const uint8_t *tb_tiles_at(const tb_tiles *t, int x, int y, const uint8_t *none) {
  const int gx = x + t->ox, gy = y + t->oy;
  const uint8_t *tile = t->tiles[(size_t)(gy / t->th) * t->cols + gx / t->tw];
  return tile ? tile + ((size_t)(gy % t->th) * t->tw + gx % t->tw) * t->ch : none;
}

/*
 * Where a row reads only missing tiles: region columns [zs[k], ze[k]), k < n, in order. The resamplers
 * leave those columns 0 without computing them (every weight times 0, rounded: 0), and the output
 * samples that read only such columns too (about 40 % of the static-map bench's pixels lie beyond its build).
 */
typedef struct {
  int n, cap;
  int *zs, *ze;
} tb_zero_runs;

static inline void tb_zero_runs_add(tb_zero_runs *z, int s, int e) {
  if (z->n > 0 && z->ze[z->n - 1] == s) z->ze[z->n - 1] = e;
  else if (z->n < z->cap) z->zs[z->n] = s, z->ze[z->n++] = e;
}

/* The first X in [from, to) with v[X] ≥ key (v non-decreasing), or `to`. */
static inline int tb_lower_bound(const int32_t *v, int from, int to, int key) {
  while (from < to) {
    const int mid = from + (to - from) / 2;
    if (v[mid] < key) from = mid + 1;
    else to = mid;
  }
  return from;
}

/*
 * The next output samples [*a, *b), from X on, whose source columns s0[·] … s1[·] (both non-decreasing)
 * all lie in one zero run (runs from *k on; *k moves past it); 0 when there are none.
 */
static inline int tb_zero_outputs(const tb_zero_runs *z, int *k, const int32_t *s0, const int32_t *s1, int X, int dw, int *a, int *b) {
  for (; *k < z->n; ++*k) {
    *a = tb_lower_bound(s0, X, dw, z->zs[*k]);
    *b = tb_lower_bound(s1, *a, dw, z->ze[*k]);
    if (*a < *b) {
      ++*k;
      return 1;
    }
  }
  return 0;
}

#endif
