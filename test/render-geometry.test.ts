/**
 * Rendered raster tiles put the map's geometry in the right place and the right way up: for coast
 * tiles of the Monaco sample, where the style's water colour is in the rendered PNG is compared with
 * where the `water` polygons of the same z/x/y are in the built vector tile. A real MapLibre render
 * (headless Chromium, no mocks); the comparison would fail if tiles came out flipped vertically or
 * horizontally (e.g. a wrong row order when reading the WebGL drawing buffer) or shifted by a tile.
 */
import { rm, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { VectorTile } from '@mapbox/vector-tile';
import { Color } from '@maplibre/maplibre-gl-style-spec';
import { PbfReader } from 'pbf';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Compression, openArchiveFile } from '../lib/pmtiles/index.ts';
import { runRenderStage } from '../pipeline/render/stage.ts';
import { runVectorStage } from '../pipeline/vector/stage.ts';
import { OSM_BRIGHT, readTile, rgb, sampleConfig, tempDir, writeConfig } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';

/**
 * Coast tiles, one per zoom, where the sea covers roughly half of the tile along a diagonal coast
 * (sea to the south-east), so that mirroring the tile either way or taking a neighbour's data moves
 * most of the water onto land: on the 16×16 grid their data agrees with its own vertical / horizontal
 * mirror image on only 0.49/0.52 (z12), 0.37/0.63 (z13) and 0.50/0.48 (z14) of the samples.
 */
const COAST = [
  { z: 12, x: 2132, y: 1493 },
  { z: 13, x: 4265, y: 2986 },
  { z: 14, x: 8530, y: 5973 },
];
const STYLE = { minzoom: 12, maxzoom: 14, scales: [1], formats: ['png'] };
/** Metatile 4: z12, z13 and z14 over Monaco are one metatile each. */
const RENDER = { metatile: 4, margin: 64, timeoutMs: 120_000 };
const LONG = 300_000;
const TILE_PX = 256;
/** Samples per tile side (cell centres). */
const GRID = 16;
/** Samples closer than this (px) to a water polygon edge are skipped: anti-aliasing and the wave pattern's offset blur the coast. */
const EDGE_PX = 3;
/** Per-channel tolerance for a pixel to count as the water fill colour. */
const COLOUR_TOL = 12;
/** Pixels around a sample (radius) of which one must be water-coloured: the style's wave pattern draws thin lines over the fill. */
const PATTERN_RADIUS = 1;
/**
 * Data and render agree on at least this fraction of the (non-edge) samples. Observed 0.99–1.0 on
 * every tile; the margin leaves room for labels, the maritime boundary line or other features that
 * a style or data update may draw over the sea.
 */
const MIN_AGREEMENT = 0.9;
/**
 * A flipped or shifted tile agrees at least this much less than the right one. Observed: the mirror
 * images agree on 0.33–0.67 and the axis neighbours' data on 0.44–0.58, i.e. at least 0.32 less.
 */
const MIN_GAP = 0.2;
/**
 * One-tile shifts checked: along x and along y. Not the diagonals: a coast running diagonally makes
 * the tile one step along it look alike (13/4264/2987 agrees 0.85 with the render of 13/4265/2986).
 */
const AXIS_SHIFTS: [number, number][] = [
  [-1, 0],
  [1, 0],
  [0, -1],
  [0, 1],
];
/** MVT geometry type of polygons. */
const MVT_POLYGON = 3;

/** A tile's water samples: `water[j * GRID + i]` for column i, row j; `edge` marks samples near a coast line. */
interface WaterGrid {
  water: boolean[];
  edge: boolean[];
}

/** The water layer's polygon rings of one vector tile (those the style's `water` fill draws), in tile units. */
function waterRings(tile: VectorTile): { rings: { x: number; y: number }[][]; extent: number } {
  const layer = tile.layers.water;
  if (!layer) return { rings: [], extent: 1 };
  const rings: { x: number; y: number }[][] = [];
  for (let i = 0; i < layer.length; i++) {
    const f = layer.feature(i);
    if (f.type !== MVT_POLYGON || f.properties.intermittent === 1 || f.properties.brunnel === 'tunnel') continue;
    rings.push(...f.loadGeometry());
  }
  return { rings, extent: layer.extent };
}

/** Sample a tile's water polygons at the centres of the pixels the render is sampled at (even-odd over all rings). */
function dataGrid(tile: VectorTile | undefined): WaterGrid {
  const { rings, extent } = tile ? waterRings(tile) : { rings: [], extent: 1 };
  const scale = extent / TILE_PX;
  const water: boolean[] = [];
  const edge: boolean[] = [];
  for (const [px, py] of samplePixels()) {
    const x = (px + 0.5) * scale;
    const y = (py + 0.5) * scale;
    let inside = false;
    let nearest = Infinity;
    for (const ring of rings) {
      for (let k = 0, l = ring.length - 1; k < ring.length; l = k++) {
        const a = ring[k];
        const b = ring[l];
        if (a.y > y !== b.y > y && x < ((b.x - a.x) * (y - a.y)) / (b.y - a.y) + a.x) inside = !inside;
        nearest = Math.min(nearest, segmentDistance(x, y, a, b));
      }
    }
    water.push(inside);
    edge.push(nearest / scale < EDGE_PX);
  }
  return { water, edge };
}

/** Distance from (x, y) to the segment a–b. */
function segmentDistance(x: number, y: number, a: { x: number; y: number }, b: { x: number; y: number }): number {
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  const len2 = dx * dx + dy * dy;
  const t = len2 === 0 ? 0 : Math.max(0, Math.min(1, ((x - a.x) * dx + (y - a.y) * dy) / len2));
  return Math.hypot(x - (a.x + t * dx), y - (a.y + t * dy));
}

/** Pixel [x, y] of every sample, row by row. */
function samplePixels(): [number, number][] {
  const cell = TILE_PX / GRID;
  const out: [number, number][] = [];
  for (let j = 0; j < GRID; j++) for (let i = 0; i < GRID; i++) out.push([i * cell + cell / 2, j * cell + cell / 2]);
  return out;
}

/** Which samples of a rendered tile show the water colour. */
async function renderedWater(png: Uint8Array, colour: number[]): Promise<boolean[]> {
  const img = await rgb(png);
  expect([img.width, img.height]).toEqual([TILE_PX, TILE_PX]);
  const isWater = (x: number, y: number) => [0, 1, 2].every((c) => Math.abs(img.data[(y * TILE_PX + x) * 3 + c] - colour[c]) <= COLOUR_TOL);
  return samplePixels().map(([px, py]) => {
    for (let dy = -PATTERN_RADIUS; dy <= PATTERN_RADIUS; dy++) for (let dx = -PATTERN_RADIUS; dx <= PATTERN_RADIUS; dx++) if (isWater(px + dx, py + dy)) return true;
    return false;
  });
}

/**
 * Fraction of samples where the render agrees with `data` read through `map` (sample index of the
 * render → sample index of the data: identity, a mirror image), skipping the data's edge samples.
 */
function agreement(render: boolean[], data: WaterGrid, map: (i: number, j: number) => number = (i, j) => j * GRID + i): number {
  let n = 0;
  let same = 0;
  for (let j = 0; j < GRID; j++) {
    for (let i = 0; i < GRID; i++) {
      const d = map(i, j);
      if (data.edge[d]) continue;
      n++;
      if (render[j * GRID + i] === data.water[d]) same++;
    }
  }
  return same / n;
}

const MIRROR_VERTICAL = (i: number, j: number) => (GRID - 1 - j) * GRID + i;
const MIRROR_HORIZONTAL = (i: number, j: number) => j * GRID + (GRID - 1 - i);

let out: string;
let waterColour: number[];
const vectorTiles = new Map<string, VectorTile | undefined>();

/** The style's `water` fill colour as 0–255 RGB (a plain colour in osm-bright). */
function styleWaterColour(style: { layers: { id: string; paint?: Record<string, unknown> }[] }): number[] {
  const fill = style.layers.find((l) => l.id === 'water')?.paint?.['fill-color'];
  const c = typeof fill === 'string' ? Color.parse(fill) : undefined;
  if (!c) throw new Error(`${OSM_BRIGHT}: layer "water" has no plain fill-color (${JSON.stringify(fill)})`);
  return [c.r, c.g, c.b].map((v) => Math.round(v * 255));
}

/** The vector tile z/x/y of the built archive, or undefined outside the data (drawn as no water). */
function vectorTile(z: number, x: number, y: number): VectorTile | undefined {
  return vectorTiles.get(`${z}/${x}/${y}`);
}

describe.sequential('rendered tiles are placed and oriented like their vector data (Monaco, osm-bright)', () => {
  beforeAll(async () => {
    waterColour = styleWaterColour(JSON.parse(await readFile(OSM_BRIGHT, 'utf8')));
    out = await tempDir('render-geometry');
    const { config } = await writeConfig(out, 'config.json', sampleConfig(out, STYLE, RENDER));
    await runVectorStage(config, out);
    await runRenderStage(config, out, { workers: 1 });
    // Every vector tile the test compares with: the coast tiles and their four axis neighbours.
    const archive = await openArchiveFile(join(out, 'data', 'openmaptiles.pmtiles'));
    try {
      for (const t of COAST) {
        for (const [dx, dy] of [[0, 0], ...AXIS_SHIFTS]) {
          const stored = await archive.getTile(t.z, t.x + dx, t.y + dy);
          const bytes = stored && archive.header.tileCompression === Compression.Gzip ? gunzipSync(stored) : stored;
          vectorTiles.set(`${t.z}/${t.x + dx}/${t.y + dy}`, bytes && new VectorTile(new PbfReader(bytes)));
        }
      }
    } finally {
      await archive.close();
    }
  }, LONG);

  afterAll(async () => {
    if (out) await rm(out, { recursive: true, force: true });
  });

  for (const t of COAST) {
    test(`${t.z}/${t.x}/${t.y}: water is where the data has it, not where a flipped or neighbouring tile has it`, async () => {
      const data = dataGrid(vectorTile(t.z, t.x, t.y));
      const seaFraction = data.water.filter(Boolean).length / data.water.length;
      // A coast tile: without both sea and land, a flipped picture could not be told apart.
      expect(seaFraction).toBeGreaterThan(0.25);
      expect(seaFraction).toBeLessThan(0.75);

      const render = await renderedWater(await readTile(join(out, 'styles/osm-bright/1x.png.pmtiles'), t.z, t.x, t.y), waterColour);
      const truth = agreement(render, data);
      expect(truth, 'render vs data').toBeGreaterThanOrEqual(MIN_AGREEMENT);

      const wrong: [string, number][] = [
        ['flipped vertically', agreement(render, data, MIRROR_VERTICAL)],
        ['flipped horizontally', agreement(render, data, MIRROR_HORIZONTAL)],
      ];
      for (const [dx, dy] of AXIS_SHIFTS) wrong.push([`shifted by (${dx}, ${dy}) tiles`, agreement(render, dataGrid(vectorTile(t.z, t.x + dx, t.y + dy)))]);
      for (const [what, a] of wrong) expect(a, `${what}: agreement ${a.toFixed(3)} vs ${truth.toFixed(3)} for the right tile`).toBeLessThanOrEqual(truth - MIN_GAP);
    });
  }
});
