/**
 * MapLibre's projection of a style (`"projection": {"type": "globe"}`, MapLibre GL JS ≥ 5): the server's
 * `style.json?projection=globe` sets it; the render host serves every style in Web Mercator, whatever
 * the style asks, since raster tiles are baked on the Web Mercator grid (MapLibre draws those on a globe).
 */

/** The projections a style may be served in. */
export const PROJECTIONS = ['globe', 'mercator'] as const;
export type Projection = (typeof PROJECTIONS)[number];

/** True for a projection name of PROJECTIONS. */
export function isProjection(value: unknown): value is Projection {
  return (PROJECTIONS as readonly unknown[]).includes(value);
}

/** A copy of `style` drawn in projection `type` (the style's own projection, if any, replaced). */
export function withProjection<T extends Record<string, unknown>>(style: T, type: Projection): T {
  return { ...style, projection: { type } };
}
