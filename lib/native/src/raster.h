/* Static map overlays rasterised without librsvg (raster.c, raster_napi.c). */
#ifndef TILEBAKE_RASTER_H
#define TILEBAKE_RASTER_H
#include <stddef.h>
#include <stdint.h>

typedef struct tb_raster tb_raster;

/* Where a raster draws: an image `width` px wide as premultiplied RGB (3 bytes a pixel) and an alpha
 * plane (NULL: opaque, it stays so), the box's top left pixel at (left, top); the box lies inside it. */
typedef struct {
  uint8_t *rgb, *alpha;
  uint32_t width, left, top;
} tb_raster_target;

/* A w×h box drawn onto `t` (copied; the caller owns the planes). */
tb_raster *tb_raster_new(uint32_t w, uint32_t h, const tb_raster_target *t);
void tb_raster_free(tb_raster *r);
/* Draw one operation from `op` (see raster.c); *used = its length. 0, or −1 for a malformed one or no memory. */
int tb_raster_op(tb_raster *r, const double *op, size_t len, size_t *used);

#ifdef TB_RASTER_NAPI
#include <node_api.h>
/* Adds drawOverlay(rgb, alpha | null, width, height, ops, left, top, ow, oh) to the addon's exports (raster_napi.c). */
void tb_raster_register(napi_env env, napi_value exports);
#endif

#endif
