import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import {
  centerInBounds,
  isValidTile,
  pixelCentreAxes,
  tileRunsForBoxes,
  tilesInRuns,
  zoomForPostSpacing,
  lonLatToTile,
  MAX_LATITUDE,
  tileBounds,
  tileCountInBBox,
  tileRangeForBBox,
  tilesInBBox,
  type BBox,
} from '../lib/tile-math.ts';

/** Monaco's bounds from the sample MBTiles metadata. */
function monacoBounds(): BBox {
  const db = new Database('data/sample/monaco_omt.mbtiles', { readonly: true });
  const row = db.prepare("SELECT value FROM metadata WHERE name = 'bounds'").get() as { value: string };
  db.close();
  return row.value.split(',').map(Number) as BBox;
}

describe('lonLatToTile', () => {
  it('finds known tiles', () => {
    expect(lonLatToTile(0, 0, 0)).toEqual({ x: 0, y: 0 });
    expect(lonLatToTile(-0.0001, 0.0001, 1)).toEqual({ x: 0, y: 0 });
    expect(lonLatToTile(0.0001, -0.0001, 1)).toEqual({ x: 1, y: 1 });
    // 7.42 E, 43.7315 N (Monaco) at z14: x = ⌊(lon+180)/360·2^z⌋, y = ⌊(1 − asinh(tan φ)/π)/2·2^z⌋ (computed with Python).
    expect(lonLatToTile(7.42, 43.7315, 14)).toEqual({ x: 8529, y: 5974 });
  });

  it('clamps outside the Mercator square', () => {
    expect(lonLatToTile(180, 90, 3)).toEqual({ x: 7, y: 0 });
    expect(lonLatToTile(-200, -90, 3)).toEqual({ x: 0, y: 7 });
  });
});

describe('tileBounds', () => {
  it('gives the world at z0 and quarters at z1', () => {
    const [w, s, e, n] = tileBounds(0, 0, 0);
    expect([w, e]).toEqual([-180, 180]);
    expect(n).toBeCloseTo(MAX_LATITUDE, 9);
    expect(s).toBeCloseTo(-MAX_LATITUDE, 9);
    expect(tileBounds(1, 1, 0)).toEqual([0, 0, 180, n]);
  });

  it('contains the point it was found from', () => {
    const [w, s, e, n] = tileBounds(14, 8529, 5974);
    expect(w).toBeLessThanOrEqual(7.42);
    expect(e).toBeGreaterThan(7.42);
    expect(s).toBeLessThanOrEqual(43.7315);
    expect(n).toBeGreaterThan(43.7315);
  });
});

describe('tileRangeForBBox / tilesInBBox / tileCountInBBox', () => {
  it('a tile’s own bounds give exactly that tile (edges do not pull in neighbours)', () => {
    for (const [z, x, y] of [
      [5, 16, 11],
      [14, 8529, 5974],
      [3, 0, 7],
    ]) {
      expect(tileRangeForBBox(tileBounds(z, x, y), z)).toEqual({ minX: x, minY: y, maxX: x, maxY: y });
    }
  });

  it('the world at z2 is 4×4 tiles', () => {
    expect(tileRangeForBBox([-180, -90, 180, 90], 2)).toEqual({ minX: 0, minY: 0, maxX: 3, maxY: 3 });
    expect(tileCountInBBox([-180, -90, 180, 90], 0, 3)).toBe(1 + 4 + 16 + 64);
  });

  it('Monaco: agrees with the sample MBTiles tile set at every zoom', () => {
    const bbox = monacoBounds();
    const db = new Database('data/sample/monaco_omt.mbtiles', { readonly: true });
    const rows = db.prepare('SELECT zoom_level AS z, tile_column AS x, tile_row AS y FROM tiles').all() as TileRow[];
    db.close();
    type TileRow = { z: number; x: number; y: number };
    const sample = rows.map((r) => `${r.z}/${r.x}/${2 ** r.z - 1 - r.y}`).sort();
    const ours = [...tilesInBBox(bbox, 0, 14)].map((t) => `${t.z}/${t.x}/${t.y}`).sort();
    expect(ours).toEqual(sample);
    expect(tileCountInBBox(bbox, 0, 14)).toBe(sample.length);
  });

  it('a degenerate (point) bbox still covers one tile per zoom', () => {
    expect(tileCountInBBox([7.42, 43.73, 7.42, 43.73], 0, 10)).toBe(11);
  });

  it('rejects an inverted bbox', () => {
    expect(() => tileRangeForBBox([10, 0, 5, 1], 3)).toThrow(/west ≤ east/);
  });
});

describe('isValidTile', () => {
  it('accepts tiles on the grid and rejects the rest', () => {
    expect(isValidTile(0, 0, 0)).toBe(true);
    expect(isValidTile(3, 7, 7)).toBe(true);
    expect(isValidTile(3, 8, 0)).toBe(false);
    expect(isValidTile(3, 0, -1)).toBe(false);
    expect(isValidTile(1.5, 0, 0)).toBe(false);
    expect(isValidTile(-1, 0, 0)).toBe(false);
    expect(isValidTile(27, 0, 0)).toBe(false);
    expect(isValidTile(2, Number.NaN, 0)).toBe(false);
  });
});

describe('tileRunsForBoxes', () => {
  it('two distant 1° cells give only their own tiles, merged per row, at every zoom', () => {
    const boxes: BBox[] = [[-77, 40, -76, 41], [6, 43, 7, 44]];
    for (const z of [0, 3, 8, 11]) {
      const runs = tileRunsForBoxes(boxes, z);
      const want = new Set<string>();
      for (const b of boxes) for (const t of tilesInBBox(b, z, z)) want.add(`${t.x}/${t.y}`);
      const got = runs.flatMap((r) => Array.from({ length: r.maxX - r.minX + 1 }, (_, k) => `${r.minX + k}/${r.y}`));
      expect(new Set(got)).toEqual(want);
      expect(got.length).toBe(want.size);
      expect(tilesInRuns(runs)).toBe(want.size);
      // Sorted by row then column, never overlapping or touching.
      for (let i = 1; i < runs.length; i++) {
        const a = runs[i - 1], b = runs[i];
        expect(a.y < b.y || (a.y === b.y && a.maxX + 1 < b.minX)).toBe(true);
      }
    }
    // Their union bbox holds over a hundred times as many tiles at z11 (15,328 against 117).
    expect(tileCountInBBox([-77, 40, 7, 44], 11, 11)).toBeGreaterThan(100 * tilesInRuns(tileRunsForBoxes(boxes, 11)));
  });

  it('merges overlapping and adjacent boxes', () => {
    const runs = tileRunsForBoxes([[0, 0, 1, 1], [0.5, 0, 2, 1], [2, 0, 3, 1]], 8);
    expect(new Set(runs.map((r) => r.y)).size).toBe(runs.length);
  });
});

describe('centerInBounds', () => {
  it('keeps a center inside the bounds and moves one outside to the middle, zoom clamped', () => {
    const b: BBox = [7.409205, 43.72335, 7.448637, 43.75169];
    expect(centerInBounds(b, [7.42, 43.73, 14], 0, 14)).toEqual([7.42, 43.73, 14]);
    // The sample MBTiles' own center (7.4, 43.7) lies outside its bounds.
    expect(centerInBounds(b, [7.4, 43.7, 1], 0, 14)).toEqual([(b[0] + b[2]) / 2, (b[1] + b[3]) / 2, 1]);
    expect(centerInBounds(b, [7.42, 43.73, 20], 0, 14)[2]).toBe(14);
    expect(centerInBounds(b, undefined, 2, 12)).toEqual([(b[0] + b[2]) / 2, (b[1] + b[3]) / 2, 7]);
  });
});

describe('pixelCentreAxes', () => {
  it('neighbouring tiles share their buffered overlap exactly', () => {
    const a = pixelCentreAxes(12, 2130, 1470, 64, 5), b = pixelCentreAxes(12, 2131, 1471, 64, 5);
    // Columns 64.. of tile x are columns 0.. of tile x+1 (buffer 5 on both).
    for (let i = 0; i < 10; i++) expect(b.lons[i]).toBe(a.lons[64 + i]);
    for (let i = 0; i < 10; i++) expect(b.lats[i]).toBe(a.lats[64 + i]);
    // Pixel centres sit inside the tile: the first is half a pixel in.
    const [w, , , n] = tileBounds(12, 2130, 1470);
    const plain = pixelCentreAxes(12, 2130, 1470, 256);
    expect(plain.lons[0] - w).toBeCloseTo(360 / 2 ** 12 / 512, 12);
    expect(plain.lats[0]).toBeLessThan(n);
  });
});

describe('zoomForPostSpacing', () => {
  it('gives the zoom whose pixels are just finer than the posts', () => {
    // SRTM3 (3″): z11 pixels are 2.47″ of longitude, z10 ones 4.9″.
    expect(zoomForPostSpacing(1 / 1200, 1 / 1200, 43.5, 256)).toBe(11);
    // SRTM1 (1″): z12 pixels are 1.24″, so z13.
    expect(zoomForPostSpacing(1 / 3600, 1 / 3600, 43.5, 256)).toBe(13);
    // 512 px tiles need one zoom less for the same pixels.
    expect(zoomForPostSpacing(1 / 1200, 1 / 1200, 43.5, 512)).toBe(10);
    // A latitude step spans more longitude degrees away from the equator: a coarse latitude step does not raise the zoom.
    expect(zoomForPostSpacing(1 / 1200, 1 / 600, 60, 256)).toBe(11);
    // EU-DEM's 25 km test grid (809″).
    expect(zoomForPostSpacing(809 / 3600, 809 / 3600, 50, 256)).toBe(3);
  });
});
