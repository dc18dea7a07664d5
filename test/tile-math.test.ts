import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import {
  isValidTile,
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
