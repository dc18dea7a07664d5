/*
 * Overlay operations as layers for raster.c: fills as polygon edges, strokes as capsules (round joins
 * and caps) and miter quads, discs. Layout of an operation: [kind, r, g, b, opacity, …] with kind 1
 * stroke (width, closed, miter, n, x y…), 2 fill (n, x y…), 3 disc (x, y, radius), in box pixels.
 */
#include "raster_int.h"
#include <math.h>
#include <stdlib.h>

/* A closed polygon (n points) filled by the nonzero rule. */
static int draw_fill(tb_raster *r, const double *xy, size_t n, const double rgba[4]) {
  piece_t *pc = calloc(n, sizeof *pc);
  if (!pc) return -1;
  size_t m = 0;
  for (size_t k = 0; k < n; k++) {
    pt_t a = {xy[2 * k], xy[2 * k + 1]}, b = {xy[2 * ((k + 1) % n)], xy[2 * ((k + 1) % n) + 1]};
    if (a.y == b.y) continue;
    piece_t *e = &pc[m++];
    e->kind = 2, e->p[0] = a, e->p[1] = b, e->p[2].x = b.y > a.y ? 1 : -1;
    e->ymin = dmin(a.y, b.y), e->ymax = dmax(a.y, b.y);
    e->crit[0] = a.y, e->crit[1] = b.y, e->ncrit = 2;
  }
  int rc = tb_raster_layer(r, pc, m, 1, rgba);
  free(pc);
  return rc;
}

static void set_bounds(piece_t *p, int npts, double pad) {
  p->ymin = INFINITY, p->ymax = -INFINITY, p->ncrit = 0;
  for (int k = 0; k < npts; k++) p->ymin = dmin(p->ymin, p->p[k].y - pad), p->ymax = dmax(p->ymax, p->p[k].y + pad);
  if (p->kind == 1) {
    for (int k = 0; k < 4; k++) p->crit[p->ncrit++] = p->p[k].y;
    return;
  }
  double ux = p->p[1].x - p->p[0].x, uy = p->p[1].y - p->p[0].y, len = hypot(ux, uy);
  p->len = len > 1e-12 ? len : 0;
  p->ux = p->len ? ux / len : 0, p->uy = p->len ? uy / len : 0;
  p->iux = fabs(p->ux) > 1e-12 ? 1 / p->ux : 0, p->iuy = fabs(p->uy) > 1e-12 ? 1 / p->uy : 0;
  /* A capsule's outline is smooth (its circles meet its sides tangentially): bands end at its top and bottom. */
  p->crit[p->ncrit++] = p->ymin, p->crit[p->ncrit++] = p->ymax;
}

/*
 * A stroke of width `width` along n points (closed: back to the first). Round joins and caps
 * (`miter` = 0), or mitred joins within SVG's limit 4 (`miter` = 1; capsules under them round the
 * flat joins of curves, which differ from a miter by less than width·angle²).
 */
static int draw_stroke(tb_raster *r, const double *xy, size_t n, int closed, int miter, double width, const double rgba[4]) {
  const double hw = width / 2;
  size_t nseg = closed ? n : n - 1, cap = nseg * 2 + 1;
  piece_t *pc = calloc(cap, sizeof *pc);
  if (!pc) return -1;
  size_t m = 0;
  for (size_t k = 0; k < nseg; k++) {
    piece_t *c = &pc[m++];
    c->kind = 0, c->r = hw;
    c->p[0] = (pt_t){xy[2 * k], xy[2 * k + 1]};
    c->p[1] = (pt_t){xy[2 * ((k + 1) % n)], xy[2 * ((k + 1) % n) + 1]};
    set_bounds(c, 2, hw);
  }
  if (n == 1) {
    pc[0] = (piece_t){.kind = 0, .r = hw, .p = {{xy[0], xy[1]}, {xy[0], xy[1]}}};
    set_bounds(&pc[0], 2, hw), m = 1;
  }
  for (size_t k = 0; miter && k < n && (closed || (k > 0 && k + 1 < n)); k++) {
    const double *v = xy + 2 * k, *a = xy + 2 * ((k + n - 1) % n), *b = xy + 2 * ((k + 1) % n);
    double ux = v[0] - a[0], uy = v[1] - a[1], vx = b[0] - v[0], vy = b[1] - v[1];
    double lu = hypot(ux, uy), lv = hypot(vx, vy);
    if (lu < 1e-9 || lv < 1e-9) continue;
    ux /= lu, uy /= lu, vx /= lv, vy /= lv;
    double crs = ux * vy - uy * vx, dot = ux * vx + uy * vy;
    if (fabs(crs) < 1e-3) continue; /* straight on: nothing outside the capsules worth a quad */
    double side = crs > 0 ? -1 : 1; /* the outer side's normal: (−uy, ux)·side */
    pt_t oa = {v[0] - uy * side * hw, v[1] + ux * side * hw}, ob = {v[0] - vy * side * hw, v[1] + vx * side * hw};
    double cos_half = sqrt((1 + dot) / 2);
    piece_t *q = &pc[m++];
    q->kind = 1;
    if (cos_half > 0.25) { /* miter length / width = 1/sin(θ/2) ≤ 4, θ the angle between the segments */
      double mx = oa.x + ob.x - 2 * v[0], my = oa.y + ob.y - 2 * v[1], ml = hypot(mx, my);
      double reach = hw / cos_half;
      pt_t tip = {v[0] + mx / ml * reach, v[1] + my / ml * reach};
      q->p[0] = (pt_t){v[0], v[1]}, q->p[1] = oa, q->p[2] = tip, q->p[3] = ob;
    } else {
      q->p[0] = (pt_t){v[0], v[1]}, q->p[1] = oa, q->p[2] = ob, q->p[3] = ob;
    }
    set_bounds(q, 4, 0);
  }
  int rc = tb_raster_layer(r, pc, m, 0, rgba);
  free(pc);
  return rc;
}

int tb_raster_op(tb_raster *r, const double *op, size_t len, size_t *used) {
  /* [kind, r, g, b, opacity, ...]: kind 1 stroke (width, closed, miter, n, xy…), 2 fill (n, xy…), 3 disc (x, y, radius). */
  if (len < 6) return -1;
  int kind = (int)op[0];
  const double rgba[4] = {op[1], op[2], op[3], op[4]};
  if (kind == 3) {
    if (len < 8) return -1;
    piece_t c = {.kind = 0, .r = op[7], .p = {{op[5], op[6]}, {op[5], op[6]}}};
    set_bounds(&c, 2, c.r);
    *used = 8;
    return tb_raster_layer(r, &c, 1, 0, rgba);
  }
  size_t at = kind == 1 ? 8 : 5;
  if (len < at + 1) return -1;
  double nd = op[at];
  if (!(nd >= 1) || nd > (double)(len - at - 1) / 2) return -1;
  size_t n = (size_t)nd;
  *used = at + 1 + 2 * n;
  if (kind == 1) return draw_stroke(r, op + at + 1, n, op[6] != 0, op[7] != 0, op[5], rgba);
  if (kind == 2) return n < 3 ? 0 : draw_fill(r, op + at + 1, n, rgba);
  return -1;
}

