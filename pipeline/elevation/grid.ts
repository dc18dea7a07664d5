import type { PostLattice } from '../../lib/elevation/format.ts';

/**
 * Where a DEM's posts lie (a lat/lon post grid), known without reading its heights: what the index
 * writer plans layers from.
 */
export interface DemInfo extends PostLattice {
  /** The file as given (for messages and the manifest). */
  file: string;
  /** Footprint [west, south, east, north]. */
  footprint: [number, number, number, number];
}

/**
 * A DEM loaded into memory as a lat/lon post grid (heights in metres, NaN = nodata): what every
 * reader produces (GDAL: SRTM .hgt, GeoTIFF...) and what the index writer merges.
 */
export interface DemGrid extends DemInfo {
  /** Row-major heights, NaN for voids. */
  data: Float32Array;
  /** True when every height is an integer (quantisation is then exact). */
  integer: boolean;
}

/** Seconds of arc per degree. */
const ARCSEC_PER_DEG = 3600;
/** Relative tolerance to treat a step as an exact fraction of a degree. */
const STEP_SNAP_TOLERANCE = 1e-6;

/**
 * Snap a step in degrees to a "nice" lat/lon resolution: 1/N degree when it is one (SRTM 1/1200,
 * 1/3600 ...); else whole arc-seconds for steps of 1″ or more; else 1/N of an arc-second.
 */
export function snapStep(step: number): number {
  const n = Math.round(1 / step);
  if (n > 0 && Math.abs(1 / n - step) <= step * STEP_SNAP_TOLERANCE) return 1 / n;
  const sec = step * ARCSEC_PER_DEG;
  if (sec >= 1) return Math.round(sec) / ARCSEC_PER_DEG;
  return 1 / (ARCSEC_PER_DEG * Math.round(1 / sec));
}

/** Snap a coordinate to the nearest multiple of `step` (computed as k/N when step = 1/N, exactly). */
export function snapToStep(x: number, step: number): number {
  const n = Math.round(1 / step);
  if (Math.abs(1 / n - step) <= step * 1e-12) return Math.round(x * n) / n;
  return Math.round(x / step) * step;
}

/** True when two grids' posts coincide (same steps, origins on each other's lattice). */
export function sameLattice(a: Pick<DemGrid, 'stepLat' | 'stepLon' | 'originLat' | 'originLon'>, b: Pick<DemGrid, 'stepLat' | 'stepLon' | 'originLat' | 'originLon'>): boolean {
  const near = (x: number, y: number) => Math.abs(x - y) <= Math.max(x, y) * STEP_SNAP_TOLERANCE;
  if (!near(a.stepLat, b.stepLat) || !near(a.stepLon, b.stepLon)) return false;
  const offLat = (a.originLat - b.originLat) / a.stepLat, offLon = (a.originLon - b.originLon) / a.stepLon;
  return Math.abs(offLat - Math.round(offLat)) < 1e-3 && Math.abs(offLon - Math.round(offLon)) < 1e-3;
}
