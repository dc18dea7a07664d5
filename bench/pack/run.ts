/**
 * Benchmark (not a test): `tilebake pack` rate and delta size.
 *
 *   node --import tsx bench/pack/run.ts [--rounds N] [--belize] [--build 'NAME=DIR=w,s,e,n']...
 *
 * Builds: the tests' Liechtenstein build (test/fixtures/packs.ts: v1 at sequence 2434, v2 after the real
 * dailies 2435–2436; omt z0–14, osm-bright z0–12 PNG + JPEG) and, with --belize, a vector-only build of
 * Belize (the shared 2015 extract, omt z0–14; made once into build/bench-pack/); --build adds any
 * other published build folder with the box to pack. Each build is packed
 * whole (its bounds, every archive, PMTiles) from the local folder and from OpenStack Swift's S3 API
 * (started as the tests start it, test/fixtures/swift.ts; the build uploaded once), in alternated
 * rounds; the rate is tiles ÷ wall seconds of `pack()` in this process, the median of the rounds.
 * Delta share: the bytes of `pack --since v1` of v2 ÷ the bytes of the full pack of v2, for the whole
 * country and for a box over Vaduz. Targets: ≥ 20,000 tiles/s from a local build; a night's delta ≤ 5 %.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import { BUILDS_DIR } from '../../lib/build-version.ts';
import { uploadTree } from '../../lib/store-tree.ts';
import { openWritableStore } from '../../lib/object-store.ts';
import { pack, type PackOptions } from '../../export/pack.ts';
import { packsBuild, VADUZ_BOX } from '../../test/fixtures/packs.ts';
import { startSwift } from '../../test/fixtures/swift.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'bin/tilebake.js');
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, belize: { type: 'boolean', default: false }, build: { type: 'string', multiple: true, default: [] } } });
const ROUNDS = Number(values.rounds);
const LIECHTENSTEIN_BOX = '9.47,47.04,9.64,47.28';
const BELIZE = { pbf: '/work/shared/data/regions/belize-2015-08-23.osm.pbf', box: '-89.22,15.89,-86.86,18.5' };

process.env.TILEBAKE_QUIET = '1';

/** A vector-only Belize build (omt z0–14), made once. */
async function belizeBuild(): Promise<string> {
  const out = join(ROOT, 'build', 'bench-pack', 'belize');
  if (await stat(join(out, 'current.json')).then(() => true, () => false)) return out;
  await mkdir(out, { recursive: true });
  const config = join(out, '..', 'belize.json');
  await writeFile(config, JSON.stringify({ out, tilesets: { omt: { source: BELIZE.pbf } } }));
  await promisify(execFile)(process.execPath, [CLI, 'build', '--config', config], { cwd: ROOT, env: { ...process.env, CI: '1' }, maxBuffer: 64 << 20 });
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function packOnce(o: Omit<PackOptions, 'to' | 'format'>): Promise<{ tiles: number; seconds: number; bytes: number }> {
  const to = await mkdtemp(join(tmpdir(), 'tilebake-bench-pack-'));
  try {
    const r = await pack({ ...o, to, format: 'pmtiles' });
    return { tiles: r.tiles, seconds: r.seconds, bytes: r.json!.archives.reduce((n, a) => n + a.bytes, 0) };
  } finally {
    await rm(to, { recursive: true, force: true });
  }
}

const say = (s: string) => process.stdout.write(`${s}\n`);

const liechtenstein = await packsBuild();
const builds: { name: string; dir: string; bbox: string }[] = [{ name: 'Liechtenstein (omt z0–14, osm-bright z0–12 png+jpg)', dir: liechtenstein.dir, bbox: LIECHTENSTEIN_BOX }];
if (values.belize) builds.push({ name: 'Belize (omt z0–14, vector only)', dir: await belizeBuild(), bbox: BELIZE.box });
for (const b of values.build) {
  const [name, dir, bbox] = b.split('=');
  if (!name || !dir || !bbox) throw new Error(`--build ${b}: expected NAME=DIR=w,s,e,n`);
  builds.push({ name, dir: resolve(dir), bbox });
}

const swift = await startSwift('tilebake-bench-pack');
Object.assign(process.env, swift.env);
try {
  say(`load average at start: ${loadavg().map((l) => l.toFixed(1)).join(' ')} (2 cores, shared)`);
  say('');
  say('| build | source | tiles | MB | tiles/s (median of rounds) | rounds (s) |');
  say('|---|---|---:|---:|---:|---|');
  for (const [i, b] of builds.entries()) {
    // Upload the build's versions and pointer once.
    const prefix = `b${i}`;
    const store = openWritableStore(`s3://${swift.bucket}/${prefix}`, { s3Endpoint: swift.endpoint });
    for (const id of (await readdir(join(b.dir, BUILDS_DIR))).filter((n) => !n.startsWith('.'))) await uploadTree(store, join(b.dir, BUILDS_DIR, id), `${BUILDS_DIR}/${id}/`);
    await store.putBytes('current.json', await readFile(join(b.dir, 'current.json')));
    const sources = { local: b.dir, swift: `s3://${swift.bucket}/${prefix}` };
    const runs: Record<string, { tiles: number; seconds: number; bytes: number }[]> = { local: [], swift: [] };
    for (let r = 0; r < ROUNDS; r++) {
      for (const where of r % 2 === 0 ? (['local', 'swift'] as const) : (['swift', 'local'] as const)) {
        runs[where].push(await packOnce({ out: sources[where], bbox: b.bbox, store: { s3Endpoint: swift.endpoint } }));
      }
    }
    for (const where of ['local', 'swift'] as const) {
      const x = runs[where];
      const rate = median(x.map((y) => y.tiles / y.seconds));
      say(`| ${b.name} | ${where} | ${x[0].tiles} | ${(x[0].bytes / 1e6).toFixed(1)} | ${Math.round(rate)} | ${x.map((y) => y.seconds.toFixed(2)).join(', ')} |`);
    }
  }
  say('');
  say(`load average after the rate rounds: ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  say('');
  // Delta share across the nightly update (dailies 2435 + 2436, the fixture's v1 → v2).
  say('| area | full pack of v2 (bytes) | delta since v1 (bytes) | share | changed tiles |');
  say('|---|---:|---:|---:|---:|');
  for (const [name, bbox] of [['Liechtenstein', LIECHTENSTEIN_BOX], ['Vaduz box', VADUZ_BOX.join(',')]] as const) {
    const full = await packOnce({ out: liechtenstein.dir, bbox });
    const to = await mkdtemp(join(tmpdir(), 'tilebake-bench-delta-'));
    try {
      const d = await pack({ out: liechtenstein.dir, bbox, to, format: 'pmtiles', since: liechtenstein.v1 });
      const bytes = d.json!.archives.reduce((n, a) => n + a.bytes, 0);
      const changed = d.json!.archives.reduce((n, a) => n + (a.changed ?? 0), 0);
      say(`| ${name} | ${full.bytes} | ${bytes} | ${((100 * bytes) / full.bytes).toFixed(2)} % | ${changed} |`);
    } finally {
      await rm(to, { recursive: true, force: true });
    }
  }
} finally {
  await swift.stop();
}
