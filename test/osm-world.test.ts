/**
 * The whole world at z0–6 for any OSM extract (pipeline/osm/world.ts): Monaco's build has Natural
 * Earth's water and borders over other continents, the open ocean as one tile, and a TileJSON that says
 * where its tiles are; `world_maxzoom` below 6 keeps the world to those zooms, with the cached world's
 * tiles as they are (the cache is not built again).
 */
import { rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { currentVersionDir } from '../lib/build-version.ts';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { lonLatToTile, tileRangeForBBox } from '../lib/tile-math.ts';
import { WORLD } from '../pipeline/osm/natural-earth.ts';
import { packVectorTiles } from '../pipeline/vector/stage.ts';
import { tileJson } from '../lib/tilejson.ts';
import { buildMonacoVector, MONACO_HEADER_BBOX, MONACO_PBF, vectorTile, worldArchive } from './osm-helpers.ts';
import { archiveTiles, readTile, tempDir } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';
const LONG = 600_000;

/** The layers of a tile with at least one feature. */
const layersOf = async (archive: string, z: number, x: number, y: number) => Object.keys((await vectorTile(archive, z, x, y)).layers).sort();

describe.sequential('the whole world at z0–6 (Monaco built from its extract)', () => {
  let out: string;
  let archive: string;
  let world: string;
  beforeAll(async () => {
    world = await worldArchive();
    ({ out, archive } = await buildMonacoVector('osm-world'));
  }, LONG);
  afterAll(async () => {
    if (out) await rm(out, { recursive: true, force: true });
  });

  test('z0–6 tiles far from the extract carry water and boundary: 2/0/1 over North America, 6/57/39 over south-east Australia', async () => {
    for (const [z, x, y] of [
      [2, 0, 1],
      [6, 57, 39],
    ]) {
      expect(await layersOf(archive, z, x, y), `${z}/${x}/${y}`).toEqual(expect.arrayContaining(['water', 'boundary']));
    }
    // North America at z2: the US and Canada, their border, the Great Lakes.
    const t = await vectorTile(archive, 2, 0, 1);
    const props = (layer: string) => Array.from({ length: t.layers[layer].length }, (_, i) => t.layers[layer].feature(i).properties);
    expect(props('place')).toContainEqual(expect.objectContaining({ class: 'country', iso_a2: 'CA' }));
    expect(props('water').filter((p) => p.class === 'lake').length).toBeGreaterThan(10);
    expect(props('boundary')).toContainEqual(expect.objectContaining({ admin_level: 2 }));
  });

  test('the open ocean is one tile for all: 6/55/39 south of Australia is the same bytes as the mid-Pacific and the South Atlantic', async () => {
    expect(await layersOf(archive, 6, 55, 39)).toEqual(['water']);
    const bytes = async (lon: number, lat: number) => {
      const { x, y } = lonLatToTile(lon, lat, 6);
      return Buffer.from(await readTile(archive, 6, x, y));
    };
    const bight = Buffer.from(await readTile(archive, 6, 55, 39));
    expect((await bytes(-140, 0)).equals(bight)).toBe(true);
    expect((await bytes(-20, -30)).equals(bight)).toBe(true);
    // Stored once: the archive holds far fewer distinct tiles than tiles.
    const r = await openArchiveFile(archive);
    expect(Number(r.header.numTileContents)).toBeLessThan(Number(r.header.numAddressedTiles) * 0.75);
    await r.close();
  });

  test("outside the extract the world's tiles are the cached world's; over it, the extract's own data is merged in", async () => {
    const ours = await archiveTiles(archive);
    const cached = await archiveTiles(world);
    const over = (z: number) => tileRangeForBBox(MONACO_HEADER_BBOX, z);
    let copied = 0;
    for (const [id, hash] of cached) {
      const { tileIdToZxy } = await import('pmtiles');
      const [z, x, y] = tileIdToZxy(Number(id));
      const r = over(z);
      if (x >= r.minX && x <= r.maxX && y >= r.minY && y <= r.maxY) {
        // Monaco's own country label is in its tiles from z2, not in the world's.
        if (z >= 2) expect(ours.get(id), `${z}/${x}/${y}`).not.toBe(hash);
        continue;
      }
      expect(ours.get(id), `${z}/${x}/${y}`).toBe(hash);
      copied++;
    }
    expect(copied).toBeGreaterThan(5000);
  });

  test('the TileJSON says so: bounds the world, zooms 0–14; the manifest names the extract as the region above z6', async () => {
    const v = (await currentVersionDir(out))!.dir;
    const e = (await readManifestOrEmpty(v)).tilesets.openmaptiles;
    expect(e).toMatchObject({ minzoom: 0, maxzoom: 14, world_maxzoom: 6, bounds: WORLD });
    e.region!.forEach((c, i) => expect(c).toBeCloseTo(MONACO_HEADER_BBOX[i], 5));
    const doc = tileJson('openmaptiles', e, 'http://localhost');
    expect(doc).toMatchObject({ minzoom: 0, maxzoom: 14, bounds: WORLD });
    // The centre stays on the extract.
    expect((doc.center as number[])[0]).toBeCloseTo(7.43, 1);
    const r = await openArchiveFile(join(v, e.archive));
    expect([r.header.minLon, r.header.maxLon, r.header.minZoom, r.header.maxZoom]).toEqual([-180, 180, 0, 14]);
    expect(await r.metadata()).toMatchObject({ world_maxzoom: 6, bounds: WORLD });
    await r.close();
  });

  test('world_maxzoom 2: the world at z0–2, only the tiles over the extract from z3; the cached world is not built again', async () => {
    const before = (await stat(world)).mtimeMs;
    const dir = await tempDir('osm-world-z2');
    try {
      const r = await packVectorTiles(MONACO_PBF, join(dir, 'monaco.pmtiles'), { worldMaxzoom: 2 });
      expect(r.metadata).toMatchObject({ world_maxzoom: 2, bounds: WORLD });
      const tiles = await archiveTiles(join(dir, 'monaco.pmtiles'));
      const { tileIdToZxy } = await import('pmtiles');
      const byZoom = new Map<number, number>();
      for (const id of tiles.keys()) {
        const [z] = tileIdToZxy(Number(id));
        byZoom.set(z, (byZoom.get(z) ?? 0) + 1);
      }
      const cached = await archiveTiles(world);
      const worldAt = (z: number) => [...cached.keys()].filter((id) => tileIdToZxy(Number(id))[0] === z).length;
      for (const z of [0, 1, 2]) expect(byZoom.get(z), `z${z}`).toBe(worldAt(z));
      for (const z of [3, 4, 5, 6]) expect(byZoom.get(z), `z${z}`).toBe(1);
      expect((await stat(world)).mtimeMs).toBe(before);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, LONG);
});
