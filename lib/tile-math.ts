/**
 * Web Mercator (EPSG:3857) XYZ tile math: pure functions, no I/O.
 * Tiles use the XYZ scheme (y = 0 at the north edge), bounding boxes are `[west, south, east, north]` in degrees.
 */

/** `[west, south, east, north]` in degrees (WGS84). */
export type BBox = [number, number, number, number];

/** One tile address in the XYZ scheme. */
export interface TileCoord {
  z: number;
  x: number;
  y: number;
}

/** Inclusive column/row range of the tiles covering a bbox at one zoom. */
export interface TileRange {
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
}

/** Deepest zoom a PMTiles v3 tile id can address (ids stay below 2^53). */
export const MAX_ZOOM = 26;
/** Latitude limit of Web Mercator: the square world spans ±this many degrees. */
export const MAX_LATITUDE = 85.0511287798066;
/** Tolerance (in tile units) so a bbox edge lying on a tile edge does not pull in the neighbour tile. */
const EDGE_EPSILON = 1e-9;

function clamp(v: number, lo: number, hi: number): number {
  return v < lo ? lo : v > hi ? hi : v;
}

/** Fractional tile column of `lon` at zoom `z` (0 … 2^z). */
function fracX(lon: number, z: number): number {
  return ((clamp(lon, -180, 180) + 180) / 360) * 2 ** z;
}

/** Fractional tile row of `lat` at zoom `z` (0 at the north edge … 2^z at the south edge). */
function fracY(lat: number, z: number): number {
  const phi = (clamp(lat, -MAX_LATITUDE, MAX_LATITUDE) * Math.PI) / 180;
  return ((1 - Math.log(Math.tan(phi) + 1 / Math.cos(phi)) / Math.PI) / 2) * 2 ** z;
}

/** Web Mercator world coordinates of `lon`/`lat`: x and y in 0 … 1 from the north-west corner (latitude clamped). */
export function lonLatToWorld(lon: number, lat: number): { x: number; y: number } {
  return { x: fracX(lon, 0), y: fracY(lat, 0) };
}

/** `lon`/`lat` of world coordinates (the inverse of `lonLatToWorld`). */
export function worldToLonLat(x: number, y: number): { lon: number; lat: number } {
  return { lon: x * 360 - 180, lat: (Math.atan(Math.sinh(Math.PI * (1 - 2 * y))) * 180) / Math.PI };
}

/** The tile containing `lon`/`lat` at zoom `z`; coordinates outside the Mercator square are clamped onto it. */
export function lonLatToTile(lon: number, lat: number, z: number): { x: number; y: number } {
  const n = 2 ** z;
  return {
    x: clamp(Math.floor(fracX(lon, z)), 0, n - 1),
    y: clamp(Math.floor(fracY(lat, z)), 0, n - 1),
  };
}

/** Longitude of the west edge of column `x` at zoom `z`. */
function tileLon(x: number, z: number): number {
  return (x / 2 ** z) * 360 - 180;
}

/** Latitude of the north edge of row `y` at zoom `z`. */
function tileLat(y: number, z: number): number {
  return (Math.atan(Math.sinh(Math.PI * (1 - (2 * y) / 2 ** z))) * 180) / Math.PI;
}

/** Bounds of tile z/x/y as `[west, south, east, north]` in degrees. */
export function tileBounds(z: number, x: number, y: number): BBox {
  return [tileLon(x, z), tileLat(y + 1, z), tileLon(x + 1, z), tileLat(y, z)];
}

/** Half the Web Mercator square's side in EPSG:3857 metres (π × the WGS84 semi-major axis). */
export const MERCATOR_HALF_WORLD_M = Math.PI * 6378137;

/**
 * GDAL geotransform `[west, pixel width, 0, north, 0, -pixel height]` in EPSG:3857 metres of tile
 * z/x/y at `size` px, grown by `buffer` px on every side: the grid `pixelCentreAxes` samples.
 */
export function tileMercatorGeoTransform(z: number, x: number, y: number, size: number, buffer = 0): [number, number, number, number, number, number] {
  const pixel = (2 * MERCATOR_HALF_WORLD_M) / (size * 2 ** z);
  return [-MERCATOR_HALF_WORLD_M + (x * size - buffer) * pixel, pixel, 0, MERCATOR_HALF_WORLD_M - (y * size - buffer) * pixel, 0, -pixel];
}

/** Ground metres per EPSG:3857 metre at the middle latitude of tile row `y` (zoom `z`): cos(latitude). */
export function mercatorGroundScale(z: number, y: number): number {
  const lat = tileLat(y + 0.5, z);
  return Math.cos((lat * Math.PI) / 180);
}

/** The row of tile row `y` at zoom `z` counted from the other edge: XYZ ↔ TMS (MBTiles' tile_row); its own inverse. */
export function flipRow(z: number, y: number): number {
  return 2 ** z - 1 - y;
}

/** True for an integer tile address inside the zoom's grid (0 ≤ x, y < 2^z, 0 ≤ z ≤ MAX_ZOOM). */
export function isValidTile(z: number, x: number, y: number): boolean {
  if (!Number.isInteger(z) || !Number.isInteger(x) || !Number.isInteger(y)) return false;
  if (z < 0 || z > MAX_ZOOM) return false;
  const n = 2 ** z;
  return x >= 0 && y >= 0 && x < n && y < n;
}

/**
 * Inclusive tile range covering `bbox` at zoom `z` (clamped to the Mercator square).
 * An edge lying exactly on a tile boundary does not include the tile beyond it.
 */
export function tileRangeForBBox(bbox: BBox, z: number): TileRange {
  const [west, south, east, north] = bbox;
  if (!(west <= east) || !(south <= north)) {
    throw new RangeError(`bbox [${bbox.join(', ')}] must be [west, south, east, north] with west ≤ east and south ≤ north`);
  }
  const n = 2 ** z;
  const minX = clamp(Math.floor(fracX(west, z) + EDGE_EPSILON), 0, n - 1);
  const minY = clamp(Math.floor(fracY(north, z) + EDGE_EPSILON), 0, n - 1);
  const maxX = clamp(Math.ceil(fracX(east, z) - EDGE_EPSILON) - 1, minX, n - 1);
  const maxY = clamp(Math.ceil(fracY(south, z) - EDGE_EPSILON) - 1, minY, n - 1);
  return { minX, minY, maxX, maxY };
}

/** Every tile covering `bbox` from `minZoom` to `maxZoom` (inclusive), zoom by zoom, row-major within a zoom. */
export function* tilesInBBox(bbox: BBox, minZoom: number, maxZoom: number): Generator<TileCoord> {
  for (let z = minZoom; z <= maxZoom; z++) {
    const r = tileRangeForBBox(bbox, z);
    for (let y = r.minY; y <= r.maxY; y++) {
      for (let x = r.minX; x <= r.maxX; x++) yield { z, x, y };
    }
  }
}

/** Number of tiles `tilesInBBox(bbox, minZoom, maxZoom)` yields, computed without enumerating them. */
export function tileCountInBBox(bbox: BBox, minZoom: number, maxZoom: number): number {
  let count = 0;
  for (let z = minZoom; z <= maxZoom; z++) {
    const r = tileRangeForBBox(bbox, z);
    count += (r.maxX - r.minX + 1) * (r.maxY - r.minY + 1);
  }
  return count;
}

/** One row of tiles at a zoom: columns `minX..maxX` (inclusive) of row `y`. */
export interface TileRun {
  y: number;
  minX: number;
  maxX: number;
}

/**
 * The tiles at zoom `z` that intersect any of `boxes`, as runs merged per row (sorted by row, then
 * column; no two runs overlap or touch). Tiles outside every box are never listed.
 */
export function tileRunsForBoxes(boxes: readonly BBox[], z: number): TileRun[] {
  const rows = new Map<number, [number, number][]>();
  for (const b of boxes) {
    const r = tileRangeForBBox(b, z);
    for (let y = r.minY; y <= r.maxY; y++) {
      let list = rows.get(y);
      if (!list) rows.set(y, (list = []));
      list.push([r.minX, r.maxX]);
    }
  }
  const out: TileRun[] = [];
  for (const y of [...rows.keys()].sort((a, b) => a - b)) {
    const spans = rows.get(y)!.sort((a, b) => a[0] - b[0]);
    let [lo, hi] = spans[0];
    for (let i = 1; i < spans.length; i++) {
      if (spans[i][0] <= hi + 1) hi = Math.max(hi, spans[i][1]);
      else {
        out.push({ y, minX: lo, maxX: hi });
        [lo, hi] = spans[i];
      }
    }
    out.push({ y, minX: lo, maxX: hi });
  }
  return out;
}

/** Number of tiles in `runs`. */
export function tilesInRuns(runs: readonly TileRun[]): number {
  return runs.reduce((n, r) => n + r.maxX - r.minX + 1, 0);
}

/** Inside `[w, s, e, n]`, edges included. */
function inBounds(bounds: BBox, lon: number, lat: number): boolean {
  return lon >= bounds[0] && lon <= bounds[2] && lat >= bounds[1] && lat <= bounds[3];
}

/** The deepest zoom in `minzoom..maxzoom` at which `bounds` fit in one tile: where a map of that data opens. */
export function zoomShowing(bounds: BBox, minzoom: number, maxzoom: number): number {
  const sw = lonLatToWorld(bounds[0], bounds[1]);
  const ne = lonLatToWorld(bounds[2], bounds[3]);
  const span = Math.max(ne.x - sw.x, sw.y - ne.y);
  return clamp(span > 0 ? Math.floor(-Math.log2(span)) : maxzoom, minzoom, maxzoom);
}

/**
 * A TileJSON `center` that lies inside `bounds` with a zoom in `minzoom..maxzoom` (TileJSON 3.0.0
 * requires both): `center` itself when it does, else the middle of the bounds, keeping `center`'s
 * zoom (clamped) or, without one, the zoom halfway between min and max.
 */
export function centerInBounds(bounds: BBox, center: readonly number[] | undefined, minzoom: number, maxzoom: number): [number, number, number] {
  const zoom = center && Number.isFinite(center[2]) ? center[2] : Math.floor((minzoom + maxzoom) / 2);
  const z = clamp(zoom, minzoom, maxzoom);
  if (center && Number.isFinite(center[0]) && Number.isFinite(center[1]) && inBounds(bounds, center[0], center[1])) return [center[0], center[1], z];
  return [(bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2, z];
}

/**
 * Longitude of pixel column `i` of tile column `x` (zoom `z`, `size` px tiles, counted from `buffer`
 * px west of the tile): the pixel's centre for a whole `i`, linear in between. Computed from the
 * global pixel index, so neighbouring tiles agree on shared pixels exactly.
 */
export function pixelLon(z: number, x: number, size: number, i: number, buffer = 0): number {
  return ((x * size + i - buffer + 0.5) / (size * 2 ** z)) * 360 - 180;
}

/** Latitude of pixel row `j` of tile row `y` (as `pixelLon`; Mercator in between). */
export function pixelLat(z: number, y: number, size: number, j: number, buffer = 0): number {
  const v = (y * size + j - buffer + 0.5) / (size * 2 ** z);
  return (Math.atan(Math.sinh(Math.PI * (1 - 2 * v))) * 180) / Math.PI;
}

/**
 * Latitudes of the pixel-centre rows and longitudes of the pixel-centre columns of tile z/x/y at
 * `size` px, extended by `buffer` px on every side (row/column 0 is `buffer` px outside the tile).
 */
export function pixelCentreAxes(z: number, x: number, y: number, size: number, buffer = 0): { lats: Float64Array; lons: Float64Array } {
  const n = size + 2 * buffer;
  const lats = new Float64Array(n), lons = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    lats[i] = pixelLat(z, y, size, i, buffer);
    lons[i] = pixelLon(z, x, size, i, buffer);
  }
  return { lats, lons };
}

/**
 * The zoom whose pixels (`tileSize` px tiles) are just finer than posts `stepLon` × `stepLat` degrees
 * apart at latitude `lat`: a Mercator pixel spans the same degrees of longitude everywhere, and a
 * latitude step spans `stepLat / cos(lat)` of them.
 */
export function zoomForPostSpacing(stepLon: number, stepLat: number, lat: number, tileSize: number): number {
  const spacing = Math.min(stepLon, stepLat / Math.cos((clamp(lat, -MAX_LATITUDE, MAX_LATITUDE) * Math.PI) / 180));
  return clamp(Math.ceil(Math.log2(360 / (tileSize * spacing)) - EDGE_EPSILON), 0, MAX_ZOOM);
}
