/**
 * Bad OSM inputs through the CLI: a truncated extract, a .pbf that is not OSM, a bbox with no data,
 * tilemaker missing. Each is one line on stderr naming the file, field or package, a non-zero exit,
 * and an output folder holding nothing new (an earlier archive stays as it was). Then a build killed
 * with SIGKILL while tilemaker runs: the rerun cleans the work folder (and the orphaned generator) up.
 */
import { currentVersionDir } from '../lib/build-version.ts';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, test } from 'vitest';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { processesWith } from '../lib/process-tree.ts';
import { findTool, OSMIUM } from '../pipeline/osm/tools.ts';
import { runCli, startCli } from './fixtures/cli.ts';
import { MONACO_HEADER_BBOX, MONACO_PBF, osmConfig } from './osm-helpers.ts';
import { tempDir } from './render-helpers.ts';

const LONG = 300_000;
/** What a failed build must leave: the earlier archive, byte for byte, and nothing else. */
const EARLIER = Buffer.from('an earlier archive that a failed build must not touch');

let dir: string;

/** A config in its own folder whose output already holds an earlier archive. */
async function setUp(name: string, source: string, tileset: Record<string, unknown> = {}): Promise<{ config: string; out: string }> {
  const base = join(dir, name);
  const out = join(base, 'out');
  await mkdir(join(out, 'data'), { recursive: true });
  await writeFile(join(out, 'data', 'openmaptiles.pmtiles'), EARLIER);
  const config = join(base, 'config.json');
  await writeFile(config, JSON.stringify(osmConfig(out, source, tileset)));
  return { config, out };
}

/** The output holds only the earlier archive. */
async function expectUntouched(out: string): Promise<void> {
  expect((await readdir(out)).sort()).toEqual(['data']);
  expect(await readdir(join(out, 'data'))).toEqual(['openmaptiles.pmtiles']);
  expect((await readFile(join(out, 'data', 'openmaptiles.pmtiles'))).equals(EARLIER)).toBe(true);
}

/** Expect a failed run: exit code not 0, one line on stderr matching `pattern`. */
function expectOneLineError(r: { code: number | null; stderr: string }, pattern: RegExp): void {
  expect(r.code, r.stderr).not.toBe(0);
  const lines = r.stderr.trim().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^tilebake: /);
  expect(lines[0]).toMatch(pattern);
}

beforeAll(async () => {
  dir = await tempDir('osm-bad');
});

describe('bad OSM inputs', () => {
  test('a truncated extract', async () => {
    const input = join(dir, 'truncated.osm.pbf');
    await writeFile(input, (await readFile(MONACO_PBF)).subarray(0, 200_000));
    const { config, out } = await setUp('truncated', input);
    expectOneLineError(await runCli(['build', '--config', config, '--only', 'vector']), new RegExp(`${input}: not a readable OSM PBF file \\(osmium: .*(EOF|truncated)`, 'i'));
    await expectUntouched(out);
  });

  test('a .pbf that is not OSM (a gzipped vector tile)', async () => {
    const input = join(dir, 'tile.osm.pbf');
    await writeFile(input, gzipSync(Buffer.from([0x1a, 0x02, 0x78, 0x02])));
    const { config, out } = await setUp('not-osm', input);
    expectOneLineError(await runCli(['build', '--config', config, '--only', 'vector']), new RegExp(`${input}: not an OSM PBF file`));
    await expectUntouched(out);
  });

  test('a bbox with no data of the extract in it names the config file and field', async () => {
    const { config, out } = await setUp('empty-bbox', MONACO_PBF, { bbox: [2.3, 48.8, 2.4, 48.9] });
    const r = await runCli(['build', '--config', config, '--only', 'vector']);
    expectOneLineError(r, new RegExp(`${config}: \\$\\.tilesets\\.openmaptiles\\.bbox: .*monaco-latest\\.osm\\.pbf has no OSM data inside \\[2\\.3, 48\\.8, 2\\.4, 48\\.9\\]`));
    await expectUntouched(out);
  }, LONG);

  test('tilemaker missing: the message names the Debian package', async () => {
    // A PATH with osmium but no tilemaker.
    const bin = join(dir, 'bin-without-tilemaker');
    await mkdir(bin);
    const osmium = await findTool(OSMIUM);
    await symlink(osmium, join(bin, 'osmium'));
    const { config, out } = await setUp('no-tilemaker', MONACO_PBF);
    const r = await runCli(['build', '--config', config, '--only', 'vector'], { env: { PATH: bin } });
    expectOneLineError(r, /tilemaker not found on PATH .*install Debian's tilemaker package/);
    await expectUntouched(out);
  });
});

describe('SIGKILL, then rerun', () => {
  test('the rerun removes the killed run\'s work folder and generator, and builds the clipped extract', async () => {
    const base = join(dir, 'killed');
    const out = join(base, 'out');
    await mkdir(base, { recursive: true });
    const config = join(base, 'config.json');
    await writeFile(config, JSON.stringify(osmConfig(out, MONACO_PBF, { bbox: MONACO_HEADER_BBOX })));
    const work = join(out, '.work', 'osm', 'openmaptiles');
    // Kill the build once the extract's tilemaker run has started in the work folder (its config is written).
    const { child, exited: exit } = startCli(['build', '--config', config, '--only', 'vector']);
    let exitCode: number | null | undefined;
    const exited = exit.then((e) => void (exitCode = e.code));
    const started = Date.now();
    while (!existsSync(join(work, 'tiles.mbtiles.json'))) {
      if (exitCode !== undefined) throw new Error(`the build exited (code ${exitCode}) before tilemaker started`);
      if (Date.now() - started > 120_000) throw new Error('tilemaker did not start within 2 minutes');
      await new Promise((ok) => setTimeout(ok, 20));
    }
    child.kill('SIGKILL');
    await exited;
    expect(existsSync(work)).toBe(true);
    expect(existsSync(join(out, 'data', 'openmaptiles.pmtiles'))).toBe(false);

    const r = await runCli(['build', '--config', config, '--only', 'vector']);
    expect(r.code, r.stderr).toBe(0);
    expect(existsSync(join(out, '.work'))).toBe(false);
    expect(processesWith(work)).toEqual([]);
    expect((await readdir(out)).sort()).toEqual(['builds', 'current.json']);
    // The killed run's unfinished version folder is gone; only the published one is left.
    expect(await readdir(join(out, 'builds'))).toHaveLength(1);
    const m = await readManifestOrEmpty((await currentVersionDir(out))!.dir);
    m.tilesets.openmaptiles.region!.forEach((v, i) => expect(v).toBeCloseTo(MONACO_HEADER_BBOX[i], 6));
    expect(m.tilesets.openmaptiles.tiles).toBeGreaterThan(20);
  }, LONG);
});
