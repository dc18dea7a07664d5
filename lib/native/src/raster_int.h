/* Inside the overlay rasteriser: raster.c draws layers, raster_shapes.c turns operations into them. */
#ifndef TILEBAKE_RASTER_INT_H
#define TILEBAKE_RASTER_INT_H
#include "raster.h"

/* fmin/fmax without NaN rules (no NaN reaches here): inlined instead of libm calls. */
static inline double dmin(double a, double b) { return a < b ? a : b; }
static inline double dmax(double a, double b) { return a > b ? a : b; }

typedef struct {
  double x, y;
} pt_t;
/* What a layer is made of: convex pieces, or a polygon's edges. */
typedef struct {
  int kind; /* 0 capsule, 1 quad, 2 polygon edge p[0]–p[1] going down (p[2].x: +1) or up (−1) */
  double ymin, ymax;
  pt_t p[4];
  double r;
  double crit[4]; /* heights where its span's ends bend */
  int ncrit;
  double ux, uy, len, iux, iuy; /* a capsule's unit direction, length and their inverses (0: none) */
} piece_t;

/* Draw a union of convex pieces (fill = 0) or a nonzero polygon given as edges (fill = 1) in one colour
 * (straight r, g, b 0–255 and opacity 0–1); `pc` is reordered. 0, or −1 without memory. */
int tb_raster_layer(tb_raster *r, piece_t *pc, size_t n, int fill, const double rgba[4]);

#endif
