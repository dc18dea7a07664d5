/**
 * The elevation stage does not redo finished work: an unchanged DEM set keeps its index and tiles
 * (by content, whatever the files' dates), a killed index build resumes from its checkpoint and a
 * killed tile job from its journal, each ending byte-identical to an uninterrupted build.
 */
import { execFile, spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ELEVATION_INDEX_PATH, buildElevation, type ElevationOptions } from '../pipeline/elevation/stage.ts';
import { runTileJob, type TileJob } from '../pipeline/elevation/tiles.ts';
import { Compression, TileType } from '../lib/pmtiles/index.ts';
import { writeSyntheticHgt } from './fixtures/dem/synthetic.ts';

process.env.TILEBAKE_QUIET = '1';
const run = promisify(execFile);
const SAMPLE_HGT = join(import.meta.dirname, '../data/sample/dem/N43E007.hgt');
const CHILD = join(import.meta.dirname, 'fixtures/dem/index-child.ts');
const OPTS: ElevationOptions = {
  precision: 0.1,
  terrain: { id: 'terrain', encoding: 'terrarium', format: 'png', minzoom: 8, maxzoom: 10 },
  contours: { id: 'contours', minzoom: 11, maxzoom: 11, intervals: { 11: [100, 500] } },
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-resume-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('an unchanged DEM set', () => {
  it('keeps the index and the tiles (by content: a newer date alone rebuilds nothing); a changed post rebuilds', async () => {
    const dem = join(dir, 'dem', 'N43E007.hgt');
    await mkdir(join(dir, 'dem'), { recursive: true });
    await copyFile(SAMPLE_HGT, dem);
    const out = join(dir, 'same');
    const first = await buildElevation(out, [{ path: dem }], OPTS);
    expect(first).toMatchObject({ indexKept: false, terrain: { kept: false }, contours: { kept: false } });
    const index = join(out, ELEVATION_INDEX_PATH);
    const before = await stat(index);
    const manifest = JSON.parse(await readFile(join(out, 'manifest.json'), 'utf8'));
    expect(manifest.elevation.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(manifest.elevation.tilesets).toEqual(['terrain', 'contours']);

    // The same bytes downloaded again: new mtime, same content.
    await utimes(dem, new Date(), new Date(Date.now() + 5000));
    const again = await buildElevation(out, [{ path: dem }], OPTS);
    expect(again).toMatchObject({ indexKept: true, chunks: 0, terrain: { kept: true }, contours: { kept: true } });
    expect((await stat(index)).mtimeMs).toBe(before.mtimeMs);
    expect(JSON.parse(await readFile(join(out, 'manifest.json'), 'utf8')).tilesets).toEqual(manifest.tilesets);

    // One post changed: everything is rebuilt.
    const raw = Buffer.from(await readFile(dem));
    raw.writeInt16BE(raw.readInt16BE(2 * (600 * 1201 + 600)) + 7, 2 * (600 * 1201 + 600));
    await writeFile(dem, raw);
    const changed = await buildElevation(out, [{ path: dem }], OPTS);
    expect(changed).toMatchObject({ indexKept: false, terrain: { kept: false }, contours: { kept: false } });
    // Turning contours off drops their manifest entry.
    await buildElevation(out, [{ path: dem }], { ...OPTS, contours: false });
    const m = JSON.parse(await readFile(join(out, 'manifest.json'), 'utf8'));
    expect(Object.keys(m.tilesets)).toEqual(['terrain']);
    expect(m.elevation.tilesets).toEqual(['terrain']);
  });
});

describe('a killed index build', () => {
  it('resumes from its checkpoint and ends byte-identical to an uninterrupted build', async () => {
    const dems = join(dir, 'grid');
    await mkdir(dems, { recursive: true });
    for (let lat = 45; lat < 47; lat++) for (let lon = 10; lon < 12; lon++) await writeSyntheticHgt(dems, lat, lon);
    const glob = join(dems, '*.hgt');
    const clean = join(dir, 'clean');
    await run(process.execPath, ['--import', 'tsx', CHILD, clean, glob, '1024']);

    // Kill -9 once the checkpoint (written after every chunk here) records two chunks.
    const killed = join(dir, 'killed');
    const checkpoint = join(killed, '.work', 'elevation', 'index-checkpoint.json');
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, killed, glob, '1024', '0'], { stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let done = 0;
    while (child.exitCode === null && done < 2) {
      await new Promise((r) => setTimeout(r, 10));
      done = await readFile(checkpoint, 'utf8').then((t) => (JSON.parse(t) as { done: string[] }).done.length, () => 0);
    }
    child.kill('SIGKILL');
    expect(await exited, 'the build finished before it could be killed').toBeNull();
    await expect(stat(join(killed, ELEVATION_INDEX_PATH))).rejects.toThrow(/ENOENT/);

    const resumed = await buildElevation(killed, [{ path: glob }], { precision: 0.1, terrain: false });
    expect(resumed.resumedChunks).toBeGreaterThanOrEqual(2);
    expect(resumed.chunks).toBeGreaterThan(0);
    const [a, b] = await Promise.all([readFile(join(clean, ELEVATION_INDEX_PATH)), readFile(join(killed, ELEVATION_INDEX_PATH))]);
    expect(b.equals(a)).toBe(true);
    await expect(stat(join(killed, '.work', 'elevation'))).rejects.toThrow(/ENOENT/);
  });
});

describe('a killed tile job', () => {
  it('resumes from its journal and writes the same archive', async () => {
    const job = (archive: string, run: TileJob['run']): TileJob => ({
      label: 'test tiles', archive, journal: join(dir, 'tiles.journal'), fingerprint: 'f1',
      boxes: [[7, 43, 8, 44]], minzoom: 6, maxzoom: 10, threads: 1,
      writer: { tileType: TileType.Png, tileCompression: Compression.None },
      run,
    });
    const tile = async (tiles: number[]) => {
      const out = [];
      for (let k = 0; k < tiles.length; k += 3) out.push({ z: tiles[k], x: tiles[k + 1], y: tiles[k + 2], data: Buffer.from(`${tiles[k]}/${tiles[k + 1]}/${tiles[k + 2]}`) });
      return out;
    };
    const clean = await runTileJob({ ...job(join(dir, 'clean.pmtiles'), tile), journal: join(dir, 'clean.journal') });
    let calls = 0;
    const dying: TileJob['run'] = async (tiles) => {
      if (++calls > 3) throw new Error('killed');
      return tile(tiles);
    };
    await expect(runTileJob(job(join(dir, 'resumed.pmtiles'), dying))).rejects.toThrow('killed');
    const resumed = await runTileJob(job(join(dir, 'resumed.pmtiles'), tile));
    expect(resumed.resumedBatches).toBe(3);
    expect(resumed.tiles).toBe(clean.tiles);
    const [a, b] = await Promise.all([readFile(join(dir, 'clean.pmtiles')), readFile(join(dir, 'resumed.pmtiles'))]);
    expect(b.equals(a)).toBe(true);
    // And kept when asked again with the same fingerprint.
    expect((await runTileJob(job(join(dir, 'resumed.pmtiles'), dying))).kept).toBe(true);
  });
});
