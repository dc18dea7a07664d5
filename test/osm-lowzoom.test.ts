/**
 * The world at low zooms and the sea beyond the extract: Monaco built from its OSM extract against
 * the official OpenMapTiles tiles of Monaco (whose z0–5 come from Natural Earth, as ours now do):
 * layers and water area at z0–5, boundary attributes, the sea off Cap d'Ail and east of Larvotto at
 * z12–13 (outside the extract's box), and osm-bright rendering z2 (the whole world) and z4 as a map of the world.
 */
import Database from 'better-sqlite3';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { VectorTile } from '@mapbox/vector-tile';
import { Color } from '@maplibre/maplibre-gl-style-spec';
import { beforeAll, describe, expect, test } from 'vitest';
import { currentVersionDir } from '../lib/build-version.ts';
import { lonLatToTile, tileBounds } from '../lib/tile-math.ts';
import { pointInRing, type Point } from '../pipeline/osm/coastline.ts';
import { runRenderStage } from '../pipeline/render/stage.ts';
import { tileBox } from '../pipeline/osm/source.ts';
import { buildMonacoVector, mbtilesTile, MONACO_HEADER_BBOX, MONACO_PBF, osmConfig, vectorTile } from './osm-helpers.ts';
import { OSM_BRIGHT, readTile, rgb, SAMPLE, writeConfig } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';
const LONG = 400_000;
const OFFICIAL = join(SAMPLE, 'monaco_omt.mbtiles');
/** Samples per tile side for water area. */
const GRID = 48;
/** Points in the sea outside the extract's tile box: off Cap d'Ail (west) and east of Larvotto. */
const CAP_DAIL: Point = [7.395, 43.716];
const EAST_OF_LARVOTTO: Point = [7.46, 43.745];

let out: string;
let archive: string;
const db = () => new Database(OFFICIAL, { readonly: true });

/** The official tile z/x/y (XYZ), decoded, or undefined. */
const officialTile = (z: number, x: number, y: number) => mbtilesTile(OFFICIAL, z, x, y);

/** Every official tile's address at z0–maxZoom. */
function officialTiles(minZoom: number, maxZoom: number): { z: number; x: number; y: number }[] {
  const d = db();
  try {
    const rows = d.prepare('SELECT zoom_level z, tile_column x, tile_row r FROM tiles WHERE zoom_level BETWEEN ? AND ?').all(minZoom, maxZoom) as { z: number; x: number; r: number }[];
    return rows.map(({ z, x, r }) => ({ z, x, y: 2 ** z - 1 - r }));
  } finally {
    d.close();
  }
}

/** The ocean rings of a tile, in tile coordinates. */
function oceanRings(t: VectorTile | undefined): Point[][] {
  const l = t?.layers.water;
  const rings: Point[][] = [];
  if (l) for (let i = 0; i < l.length; i++) if (l.feature(i).properties.class === 'ocean') rings.push(...l.feature(i).loadGeometry().map((r) => r.map((p): Point => [p.x, p.y])));
  return rings;
}
const inRings = (rings: Point[][], p: Point) => rings.reduce((inside, r) => (pointInRing(p, r) ? !inside : inside), false);

/** Share of the tile covered by ocean (GRID × GRID samples). */
function oceanShare(t: VectorTile | undefined): number {
  const rings = oceanRings(t);
  const extent = t?.layers.water?.extent ?? 4096;
  let n = 0;
  for (let i = 0; i < GRID; i++) for (let j = 0; j < GRID; j++) if (inRings(rings, [((i + 0.5) * extent) / GRID, ((j + 0.5) * extent) / GRID])) n++;
  return n / (GRID * GRID);
}

/** True when the point lies in the ocean of the z tile holding it (`tile` reads that tile). */
async function isOcean(p: Point, z: number, tile: (z: number, x: number, y: number) => Promise<VectorTile | undefined>): Promise<boolean> {
  const { x, y } = lonLatToTile(p[0], p[1], z);
  const [w, s, e, n] = tileBounds(z, x, y);
  const t = await tile(z, x, y);
  const extent = t?.layers.water?.extent ?? 4096;
  // Linear within a z12+ tile is close enough to Mercator for a point test.
  return inRings(oceanRings(t), [((p[0] - w) / (e - w)) * extent, ((n - p[1]) / (n - s)) * extent]);
}

/** A boundary feature's schema attributes, as a string. */
function boundaryKeys(t: VectorTile | undefined): Set<string> {
  const l = t?.layers.boundary;
  const keys = new Set<string>();
  if (l) for (let i = 0; i < l.length; i++) {
    const p = l.feature(i).properties;
    keys.add(JSON.stringify({ admin_level: p.admin_level, disputed: p.disputed, maritime: p.maritime }));
  }
  return keys;
}

describe.sequential('Monaco: the world at low zooms, the sea beyond the extract', () => {
  beforeAll(async () => {
    ({ out, archive } = await buildMonacoVector('osm-lowzoom'));
  }, LONG);

  test('z0–5: water, rivers, land cover and boundaries where the official tiles have them, with the same ocean area', async () => {
    const tiles = officialTiles(0, 5);
    expect(tiles).toHaveLength(6);
    for (const { z, x, y } of tiles) {
      const official = officialTile(z, x, y)!;
      const ours = await vectorTile(archive, z, x, y);
      const where = `${z}/${x}/${y}`;
      for (const layer of ['water', 'waterway', 'boundary', 'landcover', 'landuse']) {
        if (official.layers[layer]) expect(ours.layers[layer], `${where} ${layer}`).toBeDefined();
      }
      expect(Math.abs(oceanShare(ours) - oceanShare(official)), `${where} ocean area`).toBeLessThan(0.02);
      // Natural Earth's lakes and glaciers: most of what the official tiles have.
      const count = (t: VectorTile, layer: string, cls: string) => {
        const l = t.layers[layer];
        let n = 0;
        if (l) for (let i = 0; i < l.length; i++) if (l.feature(i).properties.class === cls) n++;
        return n;
      };
      if (count(official, 'water', 'lake') > 10) expect(count(ours, 'water', 'lake'), `${where} lakes`).toBeGreaterThan(count(official, 'water', 'lake') * 0.7);
    }
    // The world's oceans at z0: about 61 % of the Web Mercator square.
    expect(oceanShare(await vectorTile(archive, 0, 0, 0))).toBeGreaterThan(0.55);
  });

  test('boundaries at z0–4 carry admin_level, disputed and maritime as the official tiles do', async () => {
    for (const { z, x, y } of officialTiles(0, 4)) {
      const official = boundaryKeys(officialTile(z, x, y));
      const ours = boundaryKeys(await vectorTile(archive, z, x, y));
      // Country borders with the official values (disputed ones included); every value we write is one of theirs.
      expect([...ours].filter((k) => JSON.parse(k).admin_level === 2).sort(), `${z}/${x}/${y}`).toEqual([...official].filter((k) => JSON.parse(k).admin_level === 2).sort());
      for (const k of ours) expect(official.has(k), `${z}/${x}/${y} ${k}`).toBe(true);
    }
    // At z5–6 the Monaco–France border is a land border (drawn thin or dashed by the styles), never maritime.
    for (const z of [5, 6]) {
      const { x, y } = lonLatToTile(7.42, 43.73, z);
      for (const k of boundaryKeys(await vectorTile(archive, z, x, y))) expect(JSON.parse(k)).toMatchObject({ maritime: 0 });
    }
  });

  test("z12–13: the sea outside the extract's box comes from Natural Earth, with no gap at the box's edge", async () => {
    const box = tileBox(MONACO_HEADER_BBOX);
    for (const p of [CAP_DAIL, EAST_OF_LARVOTTO]) {
      // Outside the extract's tile box, water in the official tiles, water in ours.
      expect(p[0] < box[0] || p[0] > box[2] || p[1] < box[1] || p[1] > box[3]).toBe(true);
      for (const z of [12, 13]) {
        expect(await isOcean(p, z, async (z, x, y) => officialTile(z, x, y)), `official ${p} z${z}`).toBe(true);
        expect(await isOcean(p, z, (z, x, y) => vectorTile(archive, z, x, y)), `ours ${p} z${z}`).toBe(true);
      }
    }
    for (const { z, x, y } of officialTiles(6, 13)) {
      const d = Math.abs(oceanShare(await vectorTile(archive, z, x, y)) - oceanShare(officialTile(z, x, y)));
      expect(d, `${z}/${x}/${y} ocean area`).toBeLessThan(z >= 11 ? 0.07 : 0.03);
    }
    // Along the box's west edge at z13 (the tile straddles it) the two coasts meet with a jog where
    // Natural Earth's and OSM's coastlines differ, but where both sides are sea the edge is sea too.
    const { x, y } = lonLatToTile(box[0], 43.72, 13);
    const rings = oceanRings(await vectorTile(archive, 13, x, y));
    const [w, , e] = tileBounds(13, x, y);
    const edge = ((box[0] - w) / (e - w)) * 4096;
    let seaRows = 0;
    for (let j = 0; j < 256; j++) {
      const py = ((j + 0.5) * 4096) / 256;
      if (!inRings(rings, [edge - 8, py]) || !inRings(rings, [edge + 8, py])) continue;
      seaRows++;
      for (const dx of [-1, -0.25, 0, 0.25, 1]) expect(inRings(rings, [edge + dx, py]), `row ${j} at the edge ${dx}`).toBe(true);
    }
    expect(seaRows).toBeGreaterThan(64);
  });

  test('osm-bright renders z2 (the whole world) and z4 as a map of the world: ocean and land in plausible shares, over other continents too', async () => {
    // z2 at its default bbox (the world, up to the tileset's world_maxzoom); z4 over Monaco only (one metatile).
    const at = (z: number, bbox?: number[]) => ({ style: OSM_BRIGHT, tileset: 'openmaptiles', minzoom: z, maxzoom: z, scales: [1], formats: ['png'], ...(bbox ? { bbox } : {}) });
    const styles = { 'osm-bright': at(2), 'osm-bright-z4': at(4, [7.4, 43.7, 7.5, 43.8]) };
    const { config } = await writeConfig(out, 'render.json', osmConfig(out, MONACO_PBF, {}, { styles, fonts: join(SAMPLE, 'fonts'), render: { metatile: 4, margin: 64, timeoutMs: 120_000 } }));
    const v = (await currentVersionDir(out))!.dir;
    // The render stage fails on any error MapLibre reports.
    await runRenderStage(config, v, { workers: 1 });
    const layers = JSON.parse(await readFile(OSM_BRIGHT, 'utf8')).layers as { id: string; paint: Record<string, string> }[];
    const colour = (id: string, key: string) => {
      const c = Color.parse(layers.find((l) => l.id === id)!.paint[key])!;
      return [c.r, c.g, c.b].map((v) => Math.round(v * 255));
    };
    const water = colour('water', 'fill-color');
    const land = colour('background', 'background-color');
    // Ocean shares of the vector tiles: 2/2/1 (Europe to India) 22 %, 2/0/1 (North America) and 4/8/5 (western Europe) 24 %.
    for (const [style, z, x, y] of [
      ['osm-bright', 2, 2, 1],
      ['osm-bright', 2, 0, 1],
      ['osm-bright-z4', 4, 8, 5],
    ] as const) {
      const png = await readTile(join(v, 'styles', style, '1x.png.pmtiles'), z, x, y);
      await writeFile(join(out, `osm-bright-${z}-${x}-${y}.png`), png);
      const px = await rgb(png);
      let nearWater = 0;
      let nearLand = 0;
      const near = (i: number, c: number[], tol: number) => c.every((v, k) => Math.abs(px.data[i + k] - v) <= tol);
      for (let i = 0; i < px.data.length; i += 3) {
        if (near(i, water, 12)) nearWater++;
        else if (near(i, land, 12)) nearLand++;
      }
      const n = px.width * px.height;
      const ocean = oceanShare(await vectorTile(archive, z, x, y));
      expect(ocean, `${z}/${x}/${y} has ocean`).toBeGreaterThan(0.1);
      expect(Math.abs(nearWater / n - ocean), `${z}/${x}/${y} water-coloured share vs ocean area ${ocean}`).toBeLessThan(0.08);
      // Most of the land is land-coloured (labels, borders, lakes and ice take the rest).
      expect(nearLand / n, `${z}/${x}/${y} land-coloured share`).toBeGreaterThan((1 - ocean) * 0.6);
    }
  }, LONG);
});
