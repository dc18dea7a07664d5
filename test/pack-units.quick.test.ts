// The parts of packs that need no build: which tiles an area covers (against tile-math's box ranges and
// an independent polygon clip), agg_tiles_hash against values Martin's `mbtiles` tool printed, the
// area's input errors, and a planned PMTiles archive against PMTilesWriter's.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { areaFromGeoJson, parseBBox } from '../lib/packs/area.ts';
import { AggTilesHash, aggTilesHashOfDb } from '../lib/packs/mbtiles.ts';
import { Compression, PMTilesWriter, TileType, tileIdToZxy, zxyToTileId } from '../lib/pmtiles/index.ts';
import { PlannedArchive } from '../lib/pmtiles/planned.ts';
import { coverArea, type Area, type TileIdRanges } from '../lib/tile-cover.ts';
import { lonLatToWorld, tileRangeForBBox, type BBox } from '../lib/tile-math.ts';

/** Every tile id of the ranges, as `z/x/y`. */
function tilesOf(r: TileIdRanges): Set<string> {
  const out = new Set<string>();
  for (let i = 0; i < r.starts.length; i++) for (let id = r.starts[i]; id < r.ends[i]; id++) out.add(tileIdToZxy(id).join('/'));
  return out;
}

/** Area of polygon `pts` clipped to the rectangle (Sutherland–Hodgman against each edge, then the shoelace). */
function clippedArea(pts: [number, number][], x0: number, y0: number, x1: number, y1: number): number {
  let poly = pts;
  const edges: [(p: [number, number]) => boolean, (a: [number, number], b: [number, number]) => [number, number]][] = [
    [(p) => p[0] >= x0, (a, b) => [x0, a[1] + ((b[1] - a[1]) * (x0 - a[0])) / (b[0] - a[0])]],
    [(p) => p[0] <= x1, (a, b) => [x1, a[1] + ((b[1] - a[1]) * (x1 - a[0])) / (b[0] - a[0])]],
    [(p) => p[1] >= y0, (a, b) => [a[0] + ((b[0] - a[0]) * (y0 - a[1])) / (b[1] - a[1]), y0]],
    [(p) => p[1] <= y1, (a, b) => [a[0] + ((b[0] - a[0]) * (y1 - a[1])) / (b[1] - a[1]), y1]],
  ];
  for (const [inside, cut] of edges) {
    const out: [number, number][] = [];
    for (let i = 0; i < poly.length; i++) {
      const a = poly[i];
      const b = poly[(i + 1) % poly.length];
      if (inside(b)) {
        if (!inside(a)) out.push(cut(a, b));
        out.push(b);
      } else if (inside(a)) out.push(cut(a, b));
    }
    poly = out;
    if (poly.length === 0) return 0;
  }
  let s = 0;
  for (let i = 0; i < poly.length; i++) s += poly[i][0] * poly[(i + 1) % poly.length][1] - poly[(i + 1) % poly.length][0] * poly[i][1];
  return Math.abs(s) / 2;
}

describe('the tiles of an area', () => {
  it('a box covers exactly the tiles tile-math gives for it, every zoom', () => {
    fc.assert(
      fc.property(fc.double({ min: -179, max: 178, noNaN: true }), fc.double({ min: -80, max: 79, noNaN: true }), fc.double({ min: 0.001, max: 1, noNaN: true }), fc.double({ min: 0.001, max: 1, noNaN: true }), (w, s, dw, dh) => {
        const box: BBox = [w, s, w + dw, s + dh];
        const got = tilesOf(coverArea({ bbox: box }, 0, 12));
        const want = new Set<string>();
        for (let z = 0; z <= 12; z++) {
          const r = tileRangeForBBox(box, z);
          for (let x = r.minX; x <= r.maxX; x++) for (let y = r.minY; y <= r.maxY; y++) want.add(`${z}/${x}/${y}`);
        }
        expect(got).toEqual(want);
      }),
      { numRuns: 40 },
    );
  });

  it('a polygon with a hole covers the tiles its inside meets (checked by clipping it to each tile), no others', () => {
    // A concave outline around Liechtenstein and a hole in it, in degrees.
    const outer: [number, number][] = [[9.47, 47.05], [9.64, 47.06], [9.55, 47.12], [9.63, 47.27], [9.49, 47.2]];
    const hole: [number, number][] = [[9.5, 47.15], [9.54, 47.15], [9.54, 47.18], [9.5, 47.18]];
    const area = areaFromGeoJson(JSON.stringify({ type: 'Polygon', coordinates: [[...outer, outer[0]], [...hole, hole[0]]] }), 'test');
    const w = (ring: [number, number][]) => ring.map(([lon, lat]) => [lonLatToWorld(lon, lat).x, lonLatToWorld(lon, lat).y] as [number, number]);
    const [wo, wh] = [w(outer), w(hole)];
    const minzoom = 8;
    const maxzoom = 14;
    const got = tilesOf(coverArea(area, minzoom, maxzoom));
    let checked = 0;
    for (let z = minzoom; z <= maxzoom; z++) {
      const r = tileRangeForBBox(area.bbox, z);
      const n = 2 ** z;
      for (let x = r.minX - 1; x <= r.maxX + 1; x++) {
        for (let y = r.minY - 1; y <= r.maxY + 1; y++) {
          const a = clippedArea(wo, x / n, y / n, (x + 1) / n, (y + 1) / n) - clippedArea(wh, x / n, y / n, (x + 1) / n, (y + 1) / n);
          const tileArea = 1 / n / n;
          if (a > 1e-9 * tileArea) expect(got.has(`${z}/${x}/${y}`), `${z}/${x}/${y} meets the polygon`).toBe(true);
          else if (a <= 0) expect(got.has(`${z}/${x}/${y}`), `${z}/${x}/${y} is outside`).toBe(false);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(300);
    // The hole's inside is left out at z14: its centre tile.
    const c = lonLatToWorld(9.52, 47.165);
    expect(got.has(`14/${Math.floor(c.x * 2 ** 14)}/${Math.floor(c.y * 2 ** 14)}`)).toBe(false);
  });

  it('a tile wholly inside adds its descendants as one range per zoom; the ranges are sorted and disjoint', () => {
    const r = coverArea({ bbox: [-180, -85, 180, 85] }, 0, 6);
    // The whole world: one range per zoom, which touch, so they merge into one.
    expect(r.starts.length).toBe(1);
    expect(r.tiles).toBe((4 ** 7 - 1) / 3);
    const box = coverArea({ bbox: [9.47, 47.04, 9.64, 47.28] }, 5, 14);
    for (let i = 1; i < box.starts.length; i++) expect(box.starts[i]).toBeGreaterThan(box.ends[i - 1]);
    expect(box.tiles).toBe(tilesOf(box).size);
  });
});

describe('agg_tiles_hash (Martin\'s definition)', () => {
  /** An in-memory flat MBTiles with `rows`. */
  function flat(rows: [number, number, number, Buffer | null][]): Database.Database {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB)');
    const put = db.prepare('INSERT INTO tiles VALUES (?, ?, ?, ?)');
    for (const r of rows) put.run(...r);
    return db;
  }
  const emptyGzip = Buffer.from('1f8b080000000000000303000000000000000000', 'hex');

  it('matches what `mbtiles` printed for the same tiles (its e2e snapshots), NULL tile_data included', () => {
    // maplibre/martin e2e-tests/tests/snapshots/mbtiles_diff__cutting_a_bin_diff.snap: a patch of two rows.
    expect(aggTilesHashOfDb(flat([[4, 4, 4, emptyGzip], [0, 0, 0, null]]))).toBe('9FDA1E9908727A8C2ACB295210355E56');
    // …/mbtiles_inspect__validate_accepts_zoomed_world_cities.snap: one tile at 6/38/44.
    expect(aggTilesHashOfDb(flat([[6, 38, 44, emptyGzip]]))).toBe('AC15E26A1FCF82FDB6D0E8F43EE37821');
    // No tiles: the MD5 of nothing.
    expect(aggTilesHashOfDb(flat([]))).toBe('D41D8CD98F00B204E9800998ECF8427E');
  });

  it('orders by zoom, column, row as numbers (10 after 9)', () => {
    const a = new AggTilesHash();
    for (const [z, x, y] of [[1, 9, 0], [1, 10, 0]] as const) a.add(z, x, y, emptyGzip);
    expect(aggTilesHashOfDb(flat([[1, 10, 0, emptyGzip], [1, 9, 0, emptyGzip]]))).toBe(a.hex());
  });
});

describe('the area from the user', () => {
  it('names the flag, the file and the field of bad input', () => {
    expect(() => parseBBox('9.5,47.1,9.4,47.2', '--bbox')).toThrow('--bbox: expected west,south,east,north in degrees with west < east and south < north (got "9.5,47.1,9.4,47.2")');
    expect(() => parseBBox('9.5,47.1,,47.2', 'bbox')).toThrow(/^bbox: expected/);
    expect(() => areaFromGeoJson('{"type": "Point", "coordinates": [9, 47]}', 'area.geojson')).toThrow('area.geojson: $: expected a Polygon or MultiPolygon (or a Feature or FeatureCollection of them), got "Point"');
    expect(() => areaFromGeoJson('{"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [[[9, 47], [10, 47]]]}}]}', 'a.json')).toThrow(
      'a.json: $.features[0].geometry.coordinates[0]: expected a linear ring of at least 4 [lon, lat] positions',
    );
    expect(() => areaFromGeoJson('{"type": "Polygon", "coordinates": [[[9, 47], [190, 47], [10, 48], [9, 47]]]}', 'b.json')).toThrow('b.json: $.coordinates[0]: position [190, 47] is outside -180…180, -90…90');
    expect(() => areaFromGeoJson('{', 'c.json')).toThrow(/^c\.json: not valid JSON/);
  });
});

describe('a planned archive', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tilebake-planned-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is byte for byte the archive PMTilesWriter writes from the same tiles (one offset per distinct content)', async () => {
    // Contents at offsets of a pretend source; some tiles share content, with runs and gaps.
    const contents = [Buffer.from('sea'), Buffer.from('land-a'), Buffer.from('land-b'), Buffer.from('x'.repeat(5000))];
    const offsets = [0, 3, 9, 15];
    const tiles: [number, number][] = [];
    const area: Area = { bbox: [9, 46, 10, 48] };
    const r = coverArea(area, 0, 10);
    let k = 0;
    for (let i = 0; i < r.starts.length; i++) for (let id = r.starts[i]; id < r.ends[i]; id++) if (k++ % 7 !== 3) tiles.push([id, (id * 13) % 5 === 0 ? 0 : id % 4]);
    const opts = { tileType: TileType.Mvt, tileCompression: Compression.Gzip, metadata: { name: 'x', tilebake: { build: 'b' } }, bounds: area.bbox, center: [9.5, 47, 3] as [number, number, number] };
    const plan = new PlannedArchive();
    // Added in runs of equal content, as an archive's directory has them.
    for (let i = 0; i < tiles.length; ) {
      let j = i + 1;
      while (j < tiles.length && tiles[j][0] === tiles[j - 1][0] + 1 && tiles[j][1] === tiles[i][1]) j++;
      plan.add(tiles[i][0], j - i, offsets[tiles[i][1]], contents[tiles[i][1]].length);
      i = j;
    }
    const layout = plan.layout(opts);
    const body = Buffer.concat([...layout.parts, ...[...layout.contents()].map((c) => contents[offsets.indexOf(c.sourceOffset)])]);
    const w = await PMTilesWriter.create(join(dir, 'writer.pmtiles'), opts);
    for (const [id, c] of [...tiles].reverse()) await w.addTileId(id, contents[c]);
    await w.finish();
    expect(body.equals(await readFile(join(dir, 'writer.pmtiles')))).toBe(true);
    expect(layout.result.addressedTiles).toBe(tiles.length);
    expect(zxyToTileId(0, 0, 0)).toBe(0);
  });
});
