/* Overlays blended over static map images (blend.c). */
#ifndef TILEBAKE_BLEND_H
#define TILEBAKE_BLEND_H
#include <node_api.h>

/* blend(rgb, alpha | null, width, height, overlay, left, top, ow, oh): see blend.c. */
napi_value tb_blend(napi_env env, napi_callback_info info);

#endif
