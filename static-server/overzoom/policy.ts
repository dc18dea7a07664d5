/**
 * Raster zooms served above the baked ones: per style, `maxzoom_served` (default 20, never below the
 * baked maxzoom) and the mode that answers them (`upscale`: the deepest baked ancestor resampled;
 * `render`: rendered on demand, static-server/overzoom/render.ts).
 */
import type { StyleEntry } from '../../lib/manifest.ts';

/** Deepest raster zoom served when the style does not say. */
export const DEFAULT_MAXZOOM_SERVED = 20;

/** The deepest zoom a style's raster tiles and static maps are served at. */
export function servedMaxzoom(entry: Pick<StyleEntry, 'maxzoom' | 'maxzoom_served'>): number {
  return Math.max(entry.maxzoom, entry.maxzoom_served ?? DEFAULT_MAXZOOM_SERVED);
}

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
