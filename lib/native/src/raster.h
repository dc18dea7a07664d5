/* Static map overlays rasterised without librsvg (raster.c, raster_napi.c). */
#ifndef TILEBAKE_RASTER_H
#define TILEBAKE_RASTER_H
#include <stddef.h>
#include <stdint.h>

typedef struct tb_raster tb_raster;

/* A w×h box drawn into `px` (w·h·4 bytes, cleared here; the caller owns it). */
tb_raster *tb_raster_new(uint32_t w, uint32_t h, uint8_t *px);
void tb_raster_free(tb_raster *r);
/* Draw one operation from `op` (see raster.c); *used = its length. 0, or −1 for a malformed one or no memory. */
int tb_raster_op(tb_raster *r, const double *op, size_t len, size_t *used);

#ifdef TB_RASTER_NAPI
#include <node_api.h>
/* Adds rasterOverlay(width, height, ops[, out]) to the addon's exports (raster_napi.c). */
void tb_raster_register(napi_env env, napi_value exports);
#endif

#endif
