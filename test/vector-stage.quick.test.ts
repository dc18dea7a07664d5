import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { currentVersionDir } from '../lib/build-version.ts';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseManifest } from '../lib/manifest.ts';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { build } from '../pipeline/build.ts';
import { parseConfig } from '../pipeline/config/index.ts';

process.env.TILEBAKE_QUIET = '1';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-vstage-'));
  await copyFile(resolve('data/sample/monaco_omt.mbtiles'), join(dir, 'monaco.mbtiles'));
  await copyFile(resolve('test/fixtures/vector/firenze.pmtiles'), join(dir, 'firenze.pmtiles'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('vector stage in build()', () => {
  it('packs every configured tileset, records each, and drops vector entries no longer configured', async () => {
    const out = join(dir, 'out');
    await mkdir(out);
    // An earlier build had a vector tileset "old" and a terrain tileset: "old" goes, terrain stays.
    const earlier = {
      version: 1,
      generatedAt: '2020-01-01T00:00:00Z',
      styles: {},
      tilesets: {
        old: { archive: 'data/old.pmtiles', kind: 'vector', format: 'pbf', minzoom: 0, maxzoom: 1, bounds: [0, 0, 1, 1], center: [0, 0, 0], tiles: 1, bytes: 1 },
        terrain: { archive: 'data/terrain.pmtiles', kind: 'terrain', format: 'png', encoding: 'terrarium', minzoom: 0, maxzoom: 1, bounds: [0, 0, 1, 1], center: [0, 0, 0], tiles: 1, bytes: 1 },
      },
    };
    await writeFile(join(out, 'manifest.json'), JSON.stringify(earlier));
    const config = parseConfig(
      {
        out: 'ignored',
        tilesets: {
          monaco: { source: 'monaco.mbtiles', attribution: '© override' },
          firenze: 'firenze.pmtiles',
        },
      },
      join(dir, 'config.json'),
    );
    const timings = await build(config, { out, only: 'vector' });
    expect(timings.map((t) => [t.stage, t.tiles])).toEqual([['vector', 23 + 108]]);
    const v = (await currentVersionDir(out))!.dir;
    expect((await readdir(join(v, 'data'))).sort()).toEqual(['firenze.pmtiles', 'monaco.pmtiles']);
    expect(await readdir(join(dir))).not.toContain('ignored');

    const m = parseManifest(await readFile(join(v, 'manifest.json'), 'utf8'), 'manifest');
    expect(Object.keys(m.tilesets).sort()).toEqual(['firenze', 'monaco', 'terrain']);
    expect(m.tilesets.monaco.attribution).toBe('© override');
    expect(m.tilesets.monaco.name).toBe('OpenMapTiles');
    expect(m.tilesets.firenze).toMatchObject({ archive: 'data/firenze.pmtiles', kind: 'vector', format: 'pbf', minzoom: 0, maxzoom: 14, tiles: 108 });
    const f = await openArchiveFile(join(v, 'data', 'firenze.pmtiles'));
    try {
      expect(f.header.numAddressedTiles).toBe(108);
      expect(((await f.metadata()) as { vector_layers: unknown[] }).vector_layers.length).toBeGreaterThan(0);
    } finally {
      await f.close();
    }
  });

  it('refuses "languages" on a tile source (its tiles carry what they were made with), naming the field', async () => {
    const config = parseConfig({ tilesets: { monaco: { source: 'monaco.mbtiles', languages: ['de'] } } }, join(dir, 'config.json'));
    await expect(build(config, { out: join(dir, 'out-languages'), only: 'vector' })).rejects.toThrow(
      `${join(dir, 'config.json')}: $.tilesets.monaco.languages: choosing the name languages applies to .osm.pbf sources only (${join(dir, 'monaco.mbtiles')} is an MBTiles file`,
    );
  });

  it('skips the vector stage when --only names another stage or no tileset is configured', async () => {
    const out = join(dir, 'out-skip');
    const config = parseConfig({ tilesets: { monaco: 'monaco.mbtiles' } }, join(dir, 'config.json'));
    expect(await build(config, { out, only: 'elevation' })).toEqual([]);
    expect((await readdir(out)).sort()).toEqual(['builds', 'current.json']);
    const empty = parseConfig({}, join(dir, 'config.json'));
    expect(await build(empty, { out })).toEqual([]);
    const m = parseManifest(await readFile(join((await currentVersionDir(out))!.dir, 'manifest.json'), 'utf8'), 'manifest');
    expect(m.tilesets).toEqual({});
  });
});
