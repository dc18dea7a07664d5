/**
 * Raster zooms served above the baked ones (up to `servedMaxzoom`, lib/manifest.ts), answered by the
 * style's mode (`upscale`: the deepest baked ancestor resampled; `render`: rendered on demand,
 * static-server/overzoom/render.ts): the header naming the baked zoom used, and the render defaults.
 */

/** Header naming the zoom of the baked tiles an upscaled tile or a static image was made from. */
export const SOURCE_ZOOM_HEADER = 'x-tilebake-source-zoom';

/** Defaults of the `--render-*` options of `serve`. */
export const RENDER_DEFAULTS = {
  /** Disk cache cap, MB (all processes together). */
  cacheMb: 1024,
  /** Renders that may wait for a browser, per process. */
  queue: 16,
  /** Longest a request waits for its render, ms. */
  timeoutMs: 30_000,
  /** Browsers per process. */
  workers: 1,
};
