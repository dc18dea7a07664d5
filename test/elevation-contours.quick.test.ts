/**
 * Contour tiles built from the sample DEM and served like any vector tileset: the isolines are
 * d3-contour's, their vertices lie on the surface `/height` answers, and neighbouring tiles meet on
 * their shared edge.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { VectorTile } from '@mapbox/vector-tile';
import { contours as d3Contours } from 'd3-contour';
import { PbfReader } from 'pbf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolineChains } from '../lib/elevation/marching-squares.ts';
import { ElevationIndex } from '../lib/elevation/reader.ts';
import { FileRangeSource } from '../lib/storage.ts';
import { lonLatToTile, pixelCentreAxes, pixelLat, pixelLon } from '../lib/tile-math.ts';
import { ELEVATION_INDEX_PATH, buildElevation } from '../pipeline/elevation/stage.ts';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { serveOptions } from './fixtures/server/helpers.ts';

process.env.TILEBAKE_QUIET = '1';
const SAMPLE_HGT = join(import.meta.dirname, '../data/sample/dem/N43E007.hgt');
const TOKEN = 'contour-test-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const Z = 13;
const EXTENT = 4096;
/** Mountains in the sample's north-west (Mercantour): a 4 × 3 block of z13 tiles. */
const FIRST = lonLatToTile(7.25, 44, Z);

let dir: string;
let server: RunningServer;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-contours-'));
  await buildElevation(dir, [{ path: SAMPLE_HGT }], {
    precision: 0.1,
    terrain: { id: 'terrain', encoding: 'terrarium', format: 'png', minzoom: 9, maxzoom: 10 },
    contours: { id: 'contours', minzoom: Z, maxzoom: Z, intervals: { [Z]: [20, 100] } },
  });
  const logStream = new Writable({ write: (_c, _e, cb) => cb() });
  server = await startServer(serveOptions(dir, { routingPort: 0 }), { tokenHashes: [hashToken(TOKEN)], logStream });
});
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Line vertices of one contour tile as `{ele, x, y}` in tile units (null: no tile). */
async function tileLines(x: number, y: number): Promise<{ ele: number; level: number; lines: { x: number; y: number }[][] }[] | null> {
  const r = await fetch(`${server.url}/data/contours/${Z}/${x}/${y}.pbf`, { headers: AUTH });
  if (r.status === 204) return null;
  expect(r.status).toBe(200);
  const layer = new VectorTile(new PbfReader(new Uint8Array(await r.arrayBuffer()))).layers.contours;
  expect(layer.extent).toBe(EXTENT);
  return Array.from({ length: layer.length }, (_, i) => {
    const f = layer.feature(i);
    return { ele: f.properties.ele as number, level: f.properties.level as number, lines: f.loadGeometry() };
  });
}

describe('marching squares', () => {
  it('gives exactly the segments d3-contour gives inside the grid, voids included', async () => {
    const idx = await ElevationIndex.open(await FileRangeSource.open(join(dir, ELEVATION_INDEX_PATH)), 64 << 20);
    const { lats, lons } = pixelCentreAxes(12, FIRST.x >> 1, FIRST.y >> 1, 96, 4);
    const w = lons.length, h = lats.length;
    const values = new Float64Array(w * h);
    await idx.sampleGrid(lats, lons, values);
    await idx.close();
    // Voids: a hole and a ragged strip.
    for (let y = 30; y < 38; y++) for (let x = 40; x < 47; x++) values[y * w + x] = NaN;
    for (let y = 0; y < h; y += 3) values[y * w + 70] = NaN;
    const levels = Array.from({ length: 40 }, (_, k) => 500 + 50 * k);
    const ours = isolineChains(values, w, h, levels[0], 50, levels.length);
    const gen = d3Contours().size([w, h]).smooth(false);
    let compared = 0;
    levels.forEach((t, k) => {
      // d3 ring points are edge midpoints in its coordinates (sample (x, y) at (x + 0.5, y + 0.5)).
      const id = ([px, py]: number[]) => (Number.isInteger(px) ? 2 * (Math.floor(py) * w + px - 1) : 2 * ((py - 1) * w + Math.floor(px)) + 1);
      const border = ([px, py]: number[]) => px === 0 || px === w || py === 0 || py === h;
      const theirs = new Set<string>();
      for (const polygon of gen.contour(Array.from(values), t).coordinates) {
        for (const ring of polygon) {
          for (let i = 0; i + 1 < ring.length; i++) if (!border(ring[i]) && !border(ring[i + 1])) theirs.add(`${id(ring[i])}>${id(ring[i + 1])}`);
        }
      }
      const mine = new Set<string>();
      for (const c of ours[k]) for (let i = 0; i + 1 < c.ids.length; i++) mine.add(`${c.ids[i]}>${c.ids[i + 1]}`);
      expect([...mine].sort(), `level ${t}`).toEqual([...theirs].sort());
      compared += mine.size;
    });
    expect(compared).toBeGreaterThan(2000);
  });
});

describe('the contours tileset', () => {
  it('is served like any vector tileset, with a TileJSON naming its layer and fields', async () => {
    const tj = (await (await fetch(`${server.url}/data/contours.json`, { headers: AUTH })).json()) as Record<string, unknown>;
    expect(tj).toMatchObject({ tilejson: '3.0.0', format: 'pbf', minzoom: Z, maxzoom: Z, bounds: [7, 43, 8, 44] });
    expect(tj.tiles).toEqual([`${server.url}/data/contours/{z}/{x}/{y}.pbf`]);
    expect(tj.vector_layers).toEqual([expect.objectContaining({ id: 'contours', fields: { ele: 'Number', level: 'Number' } })]);
    const [lon, lat, zoom] = tj.center as number[];
    expect(lon >= 7 && lon <= 8 && lat >= 43 && lat <= 44 && zoom === Z).toBe(true);
    // Terrain's TileJSON says how big its tiles are (MapLibre assumes 512 otherwise) and how they encode heights.
    const terrain = (await (await fetch(`${server.url}/data/terrain.json`, { headers: AUTH })).json()) as Record<string, unknown>;
    expect(terrain).toMatchObject({ tileSize: 256, encoding: 'terrarium', format: 'png', maxzoom: 10 });
    // Gzipped MVT in the archive, sent as such to clients that accept it.
    const r = await fetch(`${server.url}/data/contours/${Z}/${FIRST.x}/${FIRST.y}.pbf`, { headers: { ...AUTH, 'accept-encoding': 'gzip' } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-encoding')).toBe('gzip');
    // Over the sea there is no line, so no tile.
    const sea = lonLatToTile(7.5, 43.2, Z);
    expect((await fetch(`${server.url}/data/contours/${Z}/${sea.x}/${sea.y}.pbf`, { headers: AUTH })).status).toBe(204);
  });

  it('draws lines whose vertices lie within 2 m of their ele on the surface /height answers; index contours every 100 m', async () => {
    let checked = 0, index = 0;
    for (let dx = 0; dx < 4; dx++) {
      for (let dy = 0; dy < 3; dy++) {
        const x = FIRST.x + dx, y = FIRST.y + dy;
        const features = await tileLines(x, y);
        if (!features) continue;
        const shape: { lat: number; lon: number }[] = [];
        const want: number[] = [];
        for (const f of features) {
          expect(Number.isInteger(f.ele)).toBe(true);
          expect(f.ele % 20).toBe(0);
          expect(f.level).toBe(f.ele % 100 === 0 ? 1 : 0);
          if (f.level) index++;
          for (const line of f.lines) {
            for (const p of line) {
              // Points in the buffer around the tile are drawn by the neighbour.
              if (p.x < 0 || p.x > EXTENT || p.y < 0 || p.y > EXTENT) continue;
              shape.push({ lat: pixelLat(Z, y, EXTENT, p.y - 0.5), lon: pixelLon(Z, x, EXTENT, p.x - 0.5) });
              want.push(f.ele);
            }
          }
        }
        const res = await fetch(`${server.routingUrl}/height`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ shape, height_precision: 2 }) });
        const { height } = (await res.json()) as { height: number[] };
        height.forEach((hgt, i) => expect(Math.abs(hgt - want[i]), `tile ${x}/${y} vertex ${i}`).toBeLessThanOrEqual(2));
        checked += height.length;
      }
    }
    expect(checked).toBeGreaterThan(5000);
    expect(index).toBeGreaterThan(10);
  });

  it('meets the neighbouring tiles at the shared edge: the same crossings, level by level', async () => {
    let shared = 0;
    for (const [ax, ay, bx, by, vertical] of [[0, 0, 1, 0, true], [1, 1, 2, 1, true], [0, 0, 0, 1, false], [2, 1, 2, 2, false]] as const) {
      const a = await tileLines(FIRST.x + ax, FIRST.y + ay), b = await tileLines(FIRST.x + bx, FIRST.y + by);
      // Where each tile's lines sit on the shared edge: x = 4096 in the west/north tile, x = 0 in the other.
      const onEdge = (features: Awaited<ReturnType<typeof tileLines>>, at: number) =>
        (features ?? []).flatMap((f) => f.lines.flat().filter((p) => (vertical ? p.x : p.y) === at && (vertical ? p.y : p.x) >= 0 && (vertical ? p.y : p.x) <= EXTENT).map((p) => `${f.ele}@${vertical ? p.y : p.x}`)).sort();
      const fromA = onEdge(a, EXTENT), fromB = onEdge(b, 0);
      expect(fromA, `${ax},${ay} | ${bx},${by}`).toEqual(fromB);
      shared += fromA.length;
    }
    expect(shared).toBeGreaterThan(40);
  });
});
