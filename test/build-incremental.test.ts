// Incremental builds: which metatiles a changed vector tile re-renders, and byte-identity of an
// incremental rebuild with a fresh --full build of the same inputs.
import { copyFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { currentVersionDir } from '../lib/build-version.ts';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { build } from '../pipeline/build.ts';
import { type Metatile } from '../lib/metatiles.ts';
import { metatilesToRerender, viewSourceTiles } from '../pipeline/render/selection.ts';
import { archiveTiles, copyTile, SAMPLE, sampleConfig, tempDir, writeConfig } from './render-helpers.ts';

const LONG = 400_000;
const GRID = { minzoom: 0, maxzoom: 14, tileSize: 512 };
const meta = (z: number, x: number, y: number, w = 1, h = 1): Pick<Metatile, 'z' | 'area'> => ({ z, area: { x, y, w, h } });
const ids = (ts: { z: number; x: number; y: number }[]) => ts.map((t) => `${t.z}/${t.x}/${t.y}`).sort();

describe('which source tiles a metatile view loads', () => {
  it('a z14 raster tile with a 64 px margin loads the z13 vector tiles under it and its margin', () => {
    // Area x 8520..8521 at z14 = 4260..4260.5 at z13; the margin (¼ tile) reaches 4259.875..4260.625.
    expect(ids(viewSourceTiles(meta(14, 8520, 5800), 64, GRID))).toEqual(['13/4259/2899', '13/4259/2900', '13/4260/2899', '13/4260/2900']);
    // A view edge on a tile boundary takes the tile it touches too (re-rendering rather than missing a change).
    expect(ids(viewSourceTiles(meta(14, 8521, 5801), 0, GRID))).toEqual(['13/4260/2900', '13/4260/2901', '13/4261/2900', '13/4261/2901']);
    // 256 px sources are loaded one zoom deeper: the tile under it and its 8 neighbours (in the margin).
    const t256 = ids(viewSourceTiles(meta(14, 8521, 5801), 64, { ...GRID, tileSize: 256 }));
    expect(t256).toHaveLength(9);
    expect(t256).toContain('14/8521/5801');
  });

  it('overzoom loads the maxzoom parent; below minzoom nothing; columns wrap, rows stop at the poles', () => {
    expect(ids(viewSourceTiles(meta(17, 68172, 46412), 64, GRID))).toEqual(['14/8521/5801']);
    expect(viewSourceTiles(meta(5, 16, 11), 64, { ...GRID, minzoom: 6 })).toEqual([]);
    expect(ids(viewSourceTiles(meta(1, 0, 0, 2, 2), 64, GRID))).toEqual(['0/0/0']);
    expect(ids(viewSourceTiles(meta(3, 0, 0), 64, GRID))).toEqual(['2/0/0', '2/3/0']);
  });

  it('a changed tile re-renders exactly the metatiles whose view or margin includes it', () => {
    const metas = [0, 1, 2, 3, 4, 5].map((i) => ({ ...meta(14, 8516 + i * 2, 5800, 2, 2), x0: 8516 + i * 2, y0: 5800, size: 2, tiles: [] }));
    // 13/4260/2900 is under the metatile at x 8520 and in the margins of its neighbours at 8518 and 8522.
    const dirty = metatilesToRerender(metas, 64, [{ grid: GRID, changed: new Set(['13/4260/2900']) }]);
    expect(dirty.map((m) => m.x0)).toEqual([8518, 8520, 8522]);
    expect(metatilesToRerender(metas, 64, [{ grid: GRID, changed: new Set() }])).toEqual([]);
  });
});

describe.sequential('an incremental rebuild', () => {
  let dir: string;
  let lines: string[];
  const log = vi.spyOn(process.stderr, 'write');

  beforeAll(async () => {
    dir = await tempDir('incremental');
    log.mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
  });
  afterAll(async () => {
    log.mockRestore();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('re-renders only metatiles over changed tiles, copies the rest (MLT: re-encodes only changed tiles), and equals a fresh --full build', async () => {
    const source = join(dir, 'src.mbtiles');
    await copyFile(join(SAMPLE, 'monaco_omt.mbtiles'), source);
    const raw = { ...sampleConfig(join(dir, 'out'), { minzoom: 12, maxzoom: 14, scales: [1], formats: ['png'] }, { metatile: 1, margin: 64, timeoutMs: 120_000 }), tilesets: { openmaptiles: { source, encodings: ['mvt', 'mlt'] } } };
    const { config } = await writeConfig(dir, 'config.json', raw);
    const out = join(dir, 'out');
    lines = [];
    await build(config, { out, workers: 1 });
    expect(lines.join('')).toMatch(/render osm-bright @1x: re-rendered (\d+) of \1 metatiles \(first build\)/);
    const v1 = (await currentVersionDir(out))!;

    // Change a z13 tile (drawn by the z14 raster tiles) and a z14 tile (drawn only beyond z14: nothing to re-render).
    copyTile(source, { z: 13, x: 4264, y: 2987 }, { z: 13, x: 4265, y: 2987 });
    copyTile(source, { z: 14, x: 8529, y: 5975 }, { z: 14, x: 8530, y: 5975 });
    lines = [];
    await build(config, { out, workers: 1 });
    const m = /render osm-bright @1x: re-rendered (\d+) of (\d+) metatiles \(data: 2 source tiles changed\)/.exec(lines.join(''));
    expect(m, lines.join('')).not.toBeNull();
    const [rendered, total] = [Number(m![1]), Number(m![2])];
    expect(rendered).toBeGreaterThan(0);
    expect(rendered).toBeLessThan(total);
    // The MLT archive: at most the 2 changed tiles encoded, every other tile's MLT bytes copied.
    const mlt = /(\d+) MLT tiles \((\d+) encoded, (\d+) copied from the previous build\)/.exec(lines.join(''));
    expect(mlt, lines.join('')).not.toBeNull();
    expect(Number(mlt![2])).toBeLessThanOrEqual(2);
    expect(Number(mlt![3])).toBeGreaterThan(Number(mlt![1]) / 2);
    const v2 = (await currentVersionDir(out))!;
    expect(v2.id).not.toBe(v1.id);

    // A fresh full build of the same inputs, in another folder.
    const full = join(dir, 'full');
    await build(config, { out: full, full: true, workers: 1 });
    const vf = (await currentVersionDir(full))!;
    const mInc = await readManifestOrEmpty(v2.dir);
    const archives = [...Object.values(mInc.tilesets).flatMap((t) => [t.archive, ...(t.mlt ? [t.mlt.archive] : [])]), ...Object.values(mInc.styles).flatMap((s) => Object.values(s.archives).map((a) => a.archive))];
    expect(archives.length).toBe(3);
    for (const a of archives) expect(await archiveTiles(join(v2.dir, a)), a).toEqual(await archiveTiles(join(vf.dir, a)));
    // The incremental archive differs from the first build's where the data changed.
    const style = mInc.styles['osm-bright'].archives['1x.png'].archive;
    expect(await archiveTiles(join(v2.dir, style))).not.toEqual(await archiveTiles(join(v1.dir, style)));

    // No change: nothing is rendered or packed; the archives are the previous version's files.
    lines = [];
    await build(config, { out, workers: 1 });
    expect(lines.join('')).toContain('vector openmaptiles: source unchanged');
    expect(lines.join('')).toContain('vector openmaptiles: MLT archive reused from the previous build');
    expect(lines.join('')).toMatch(/re-rendered 0 of \d+ metatiles \(unchanged/);
    const v3 = (await currentVersionDir(out))!;
    expect((await stat(join(v3.dir, style))).ino).toBe((await stat(join(v2.dir, style))).ino);
    const mltArchive = mInc.tilesets.openmaptiles.mlt!.archive;
    expect((await stat(join(v3.dir, mltArchive))).ino).toBe((await stat(join(v2.dir, mltArchive))).ino);
  }, LONG);
});
