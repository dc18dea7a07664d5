// Bad imagery inputs: a file GDAL cannot open, one it opens but cannot read to the end, an image without
// georeferencing, 16-bit bands, a glob matching nothing. Each build stops with one line naming the
// tileset, the source and the cause, exits non-zero, and the served version stays as it was.
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HRO, LANDSAT } from './fixtures/imagery.ts';
import { CLI, ROOT } from './fixtures/server/helpers.ts';

const run = promisify(execFile);
let dir: string;
let out: string;
let served: string;

/** `tilebake build` of a config whose tileset `ortho` reads `source` (the good one: HRO at z20; the others from z8), 1x only. */
async function build(source: string): Promise<{ code: number; stderr: string }> {
  const config = join(dir, 'config.json');
  await writeFile(config, JSON.stringify({ out, tilesets: { ortho: { source, format: 'jpg', minzoom: source === HRO ? 20 : 8, scales: [1] } } }));
  return new Promise((done) => {
    execFile(process.execPath, [CLI, 'build', '--config', config], { cwd: ROOT, env: { ...process.env, TILEBAKE_QUIET: '1' } }, (err, _stdout, stderr) => {
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stderr });
    });
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-imagery-bad-'));
  out = join(dir, 'out');
  const good = await build(HRO);
  expect(good.code, good.stderr).toBe(0);
  served = await readFile(join(out, 'current.json'), 'utf8');
}, 120_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The inputs, made with GDAL (and one written as text), with what the one line must say. */
async function badInputs(): Promise<{ label: string; file: string; source?: string; expect: RegExp }[]> {
  const noGeo = join(dir, 'no-georeferencing.png');
  // A PNG keeps no georeferencing, and without a .aux.xml (PAM off) none beside it either.
  await run('gdal_translate', ['-q', '--config', 'GDAL_PAM_ENABLED', 'NO', '-of', 'PNG', HRO, noGeo]);
  const text = join(dir, 'notes.tif');
  await writeFile(text, 'not an image at all\n'.repeat(10));
  const truncated = join(dir, 'truncated.tif');
  const bytes = await readFile(LANDSAT);
  await writeFile(truncated, bytes.subarray(0, bytes.length / 3));
  // A COG keeps its directory first: it opens, and the tiles past the cut cannot be read.
  const cog = join(dir, 'landsat-cog.tif');
  await run('gdal_translate', ['-q', '-of', 'COG', LANDSAT, cog]);
  const cut = join(dir, 'truncated-cog.tif');
  await writeFile(cut, (await readFile(cog)).subarray(0, 600_000));
  const sixteen = join(dir, 'sixteen-bit.tif');
  await run('gdal_translate', ['-q', '-ot', 'UInt16', HRO, sixteen]);
  return [
    { label: 'no georeferencing', file: noGeo, expect: /has no georeferencing \(no coordinate system and no geotransform\)/ },
    { label: 'not an image', file: text, expect: /GDAL cannot open it as an image/ },
    { label: 'truncated (its directory lost)', file: truncated, expect: /GDAL cannot open it as an image \(.*TIFFReadDirectory/ },
    { label: 'truncated COG (its tiles lost)', file: cut, expect: /GDAL cannot read it \(.*TIFFReadEncodedTile/ },
    { label: '16-bit bands', file: sixteen, expect: /band 1 holds UInt16 values: expected 8-bit \(Byte\) images/ },
    { label: 'a glob matching nothing', file: join(dir, 'none-*.tif'), expect: /no file matches this pattern/ },
  ];
}

describe('bad imagery inputs', () => {
  it('each stops the build with one line naming the tileset, the source and the cause; the served version is untouched', async () => {
    for (const c of await badInputs()) {
      const r = await build(c.file);
      expect(r.code, c.label).not.toBe(0);
      const lines = r.stderr.trim().split('\n');
      expect(lines, `${c.label}: one line`).toHaveLength(1);
      expect(lines[0], c.label).toContain('tileset "ortho"');
      expect(lines[0], c.label).toContain(c.file);
      expect(lines[0], c.label).toMatch(c.expect);
      expect(await readFile(join(out, 'current.json'), 'utf8'), `${c.label}: current version`).toBe(served);
      expect((await readdir(join(out, 'builds'))).filter((n) => n.startsWith('.incoming')), `${c.label}: nothing half-written`).toEqual([]);
    }
  });
});
