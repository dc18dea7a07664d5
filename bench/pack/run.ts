/**
 * Benchmark (not a test): `tilebake pack` rate, and what one night's update adds as a delta.
 *
 *   node --import tsx bench/pack/run.ts [--rounds 5] [--no-belize] [--build 'NAME=DIR=w,s,e,n']... [--no-write]
 *
 * Builds, each made once into build/bench-pack/ with the real CLI (and reused while complete):
 * - Liechtenstein, night by night: the Geofabrik extract of 2019-11-18 (sequence 2434), then
 *   `tilebake update` once per shared daily (2435, 2436, 2437), every version kept; omt z0–14 and
 *   the styles below at 1x and @2x, PNG + JPEG, z0–14, the extract at every zoom (no world tiles).
 * - Belize (unless --no-belize): the shared 2015 extract, omt z0–14 and the styles below at 1x and @2x,
 *   PNG + JPEG, z0–14, with the world (Natural Earth) at z0–6 as a default build has it.
 * The styles are the sample's that need only OSM data (osm-bright, positron, dark-matter); topo also
 * needs a DEM, and no sample DEM covers either country.
 * --build adds any other published build folder with the box to pack.
 *
 * Rate: each build packed whole (its box, every archive, PMTiles), and its @2x archives alone, from the
 * local folder and from OpenStack Swift's S3 API (started as the tests start it, test/fixtures/swift.ts;
 * the build uploaded once), in rounds alternating local / Swift; tiles ÷ wall seconds of `pack()` in
 * this process, the median of the rounds. Delta share: for each night, the bytes of
 * `pack --since <the night before>` ÷ the bytes of the full pack of that night's version, for the
 * country and for a box over Vaduz. Targets: ≥ 20,000 tiles/s from a local build; a typical night's
 * delta ≤ 5 % of the full pack.
 *
 * Prints the tables and rewrites bench/pack/RESULTS.md (unless --no-write): this run at the top, the
 * summary lines of earlier runs under "History".
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify, parseArgs } from 'node:util';
import { BUILDS_DIR, currentVersionDir } from '../../lib/build-version.ts';
import type { Manifest } from '../../lib/manifest.ts';
import { uploadTree } from '../../lib/store-tree.ts';
import { openWritableStore } from '../../lib/object-store.ts';
import { pack, type PackOptions } from '../../export/pack.ts';
import { VADUZ_BOX } from '../../test/fixtures/packs.ts';
import { startSwift } from '../../test/fixtures/swift.ts';
import { fileUrl, LIECHTENSTEIN, replicationFolder } from '../../test/update-helpers.ts';
import { readResults, writeResults } from '../results.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'bin/tilebake.js');
const BENCH = join(ROOT, 'build', 'bench-pack');
const RESULTS = join(ROOT, 'bench', 'pack', 'RESULTS.md');
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    'no-belize': { type: 'boolean', default: false },
    build: { type: 'string', multiple: true, default: [] },
    'no-write': { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(values.rounds);
const STYLES = ['osm-bright', 'positron', 'dark-matter'];
const LIECHTENSTEIN_BOX = '9.47,47.04,9.64,47.28';
const BELIZE = { pbf: '/work/shared/data/regions/belize-2015-08-23.osm.pbf', box: '-89.22,15.89,-86.86,18.5' };
/** The shared dailies after the extract's sequence. */
const NIGHTS = [2435, 2436, 2437];
const WHAT = `omt z0–14, ${STYLES.join(' + ')} 1x + @2x png + jpg z0–14`;

process.env.TILEBAKE_QUIET = '1';
const say = (s: string) => process.stdout.write(`${s}\n`);
const out: string[] = [];
/** A line of the results: printed, and kept for RESULTS.md. */
const line = (s = '') => {
  say(s);
  out.push(s);
};
const exists = (p: string) => stat(p).then(() => true, () => false);
const cli = (args: string[]) => promisify(execFile)(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...process.env, CI: '1' }, maxBuffer: 64 << 20 });
const versions = async (dir: string) => (await readdir(join(dir, BUILDS_DIR))).filter((n) => !n.startsWith('.')).sort();

/** A build config of `source` with omt and every style of STYLES. */
async function writeConfig(path: string, outDir: string, tileset: Record<string, unknown>): Promise<void> {
  const style = (s: string) => ({ style: join(ROOT, 'data/sample/styles', s, 'style.json'), tileset: 'omt', minzoom: 0, maxzoom: 14, scales: [1, 2], formats: ['png', 'jpg'] });
  await writeFile(path, JSON.stringify({ out: outDir, tilesets: { omt: tileset }, styles: Object.fromEntries(STYLES.map((s) => [s, style(s)])), fonts: join(ROOT, 'data/sample/fonts'), render: { metatile: 4, margin: 64 } }, null, 1));
}

/** Belize with every style, made once. */
async function belizeBuild(): Promise<string> {
  const dir = join(BENCH, 'belize-all');
  if (await exists(join(dir, 'current.json'))) return dir;
  const config = join(BENCH, 'belize-all.json');
  await mkdir(BENCH, { recursive: true });
  await writeConfig(config, dir, { source: BELIZE.pbf });
  say(`building ${dir} (once; tens of minutes on 2 cores)`);
  await cli(['build', '--config', config]);
  return dir;
}

/** Liechtenstein at 2434 and after each night: the build folder and the version of each sequence (undefined: the night published none). */
async function nightsBuild(): Promise<{ dir: string; bySeq: Map<number, string | undefined> }> {
  const dir = join(BENCH, 'liechtenstein-nights');
  const record = join(BENCH, 'liechtenstein-nights.json');
  if (await exists(record)) return { dir, bySeq: new Map(Object.entries(JSON.parse(await readFile(record, 'utf8'))).map(([k, v]) => [Number(k), (v as string | null) ?? undefined])) };
  const served = join(BENCH, 'liechtenstein-replication');
  await rm(dir, { recursive: true, force: true });
  await rm(served, { recursive: true, force: true });
  const config = join(BENCH, 'liechtenstein-nights-config.json');
  await mkdir(BENCH, { recursive: true });
  // The extract at every zoom (no world at z0–6: its thousands of tiles outside the country are no part of the packs here).
  await writeConfig(config, dir, { source: LIECHTENSTEIN.extract, replication: fileUrl(served), world_maxzoom: false });
  await replicationFolder(LIECHTENSTEIN, served, NIGHTS[0]);
  say(`building ${dir} at ${LIECHTENSTEIN.sequence}, then one update per night (once)`);
  await cli(['build', '--config', config]);
  const bySeq = new Map<number, string | undefined>([[LIECHTENSTEIN.sequence, (await versions(dir))[0]]]);
  for (const night of NIGHTS) {
    await replicationFolder(LIECHTENSTEIN, served, night);
    const before = await versions(dir);
    await cli(['update', '--config', config, '--keep', String(NIGHTS.length + 1)]);
    const added = (await versions(dir)).filter((v) => !before.includes(v));
    bySeq.set(night, added[0]);
  }
  await writeFile(record, JSON.stringify(Object.fromEntries([...bySeq].map(([k, v]) => [k, v ?? null]))));
  return { dir, bySeq };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function packOnce(o: Omit<PackOptions, 'to' | 'format'>): Promise<{ tiles: number; seconds: number; bytes: number; changed: number; removed: number }> {
  const to = await mkdtemp(join(tmpdir(), 'tilebake-bench-pack-'));
  try {
    const r = await pack({ ...o, to, format: 'pmtiles' });
    const a = r.json!.archives;
    return { tiles: r.tiles, seconds: r.seconds, bytes: a.reduce((n, x) => n + x.bytes, 0), changed: a.reduce((n, x) => n + (x.changed ?? 0), 0), removed: a.reduce((n, x) => n + (x.removed?.length ?? 0), 0) };
  } finally {
    await rm(to, { recursive: true, force: true });
  }
}

const started = new Date();
const startLoad = loadavg()[0];
const nights = await nightsBuild();
const builds: { key: string; name: string; dir: string; bbox: string }[] = [{ key: 'Liechtenstein', name: `Liechtenstein after 2437 (${WHAT}, no world)`, dir: nights.dir, bbox: LIECHTENSTEIN_BOX }];
if (!values['no-belize']) builds.push({ key: 'Belize', name: `Belize (${WHAT})`, dir: await belizeBuild(), bbox: BELIZE.box });
for (const b of values.build) {
  const [name, dir, bbox] = b.split('=');
  if (!name || !dir || !bbox) throw new Error(`--build ${b}: expected NAME=DIR=w,s,e,n`);
  builds.push({ key: name.split(' (')[0], name, dir: resolve(dir), bbox });
}

const rates: { name: string; median: number }[] = [];
const swift = await startSwift('tilebake-bench-pack');
Object.assign(process.env, swift.env);
try {
  line(`${started.toISOString().slice(0, 16).replace('T', ' ')} UTC, ${cpus().length} cores (shared), load average ${startLoad.toFixed(1)} at the start; ${ROUNDS} rounds alternating local / Swift.`);
  line();
  line('## Pack rate');
  line();
  line('| build | archives | source | tiles | MB | tiles/s (median) | rounds (s) |');
  line('|---|---|---|---:|---:|---:|---|');
  for (const [i, b] of builds.entries()) {
    // Upload the build's versions and pointer once.
    const prefix = `b${i}`;
    const store = openWritableStore(`s3://${swift.bucket}/${prefix}`, { s3Endpoint: swift.endpoint });
    for (const id of await versions(b.dir)) await uploadTree(store, join(b.dir, BUILDS_DIR, id), `${BUILDS_DIR}/${id}/`);
    await store.putBytes('current.json', await readFile(join(b.dir, 'current.json')));
    const sources = { local: b.dir, swift: `s3://${swift.bucket}/${prefix}` };
    // The build's styles at @2x, no tileset.
    const manifest = JSON.parse(await readFile(join((await currentVersionDir(b.dir))!.dir, 'manifest.json'), 'utf8')) as Manifest;
    const selections: [string, { styles?: string[]; scales?: number[] }][] = [['all', {}], ['@2x only', { styles: Object.keys(manifest.styles), scales: [2] }]];
    for (const [what, sel] of selections) {
      const runs: Record<string, { tiles: number; seconds: number; bytes: number }[]> = { local: [], swift: [] };
      for (let r = 0; r < ROUNDS; r++) {
        for (const where of r % 2 === 0 ? (['local', 'swift'] as const) : (['swift', 'local'] as const)) {
          runs[where].push(await packOnce({ out: sources[where], bbox: b.bbox, ...sel, store: { s3Endpoint: swift.endpoint } }));
        }
      }
      for (const where of ['local', 'swift'] as const) {
        const x = runs[where];
        const rate = median(x.map((y) => y.tiles / y.seconds));
        if (what === 'all') rates.push({ name: `${b.key} ${where}`, median: rate });
        line(`| ${b.name} | ${what} | ${where === 'local' ? 'local' : 'Swift S3 API'} | ${x[0].tiles} | ${(x[0].bytes / 1e6).toFixed(1)} | **${Math.round(rate).toLocaleString('en-US')}** | ${x.map((y) => y.seconds.toFixed(2)).join(', ')} |`);
      }
    }
  }
  line();
  line(`Load average after the rate rounds: ${loadavg().map((l) => l.toFixed(1)).join(' ')}.`);
  line();
  line('## Delta after each night');
  line();
  line(`Liechtenstein (${WHAT}, the extract at every zoom): each version's full pack and its delta since the version of the night before.`);
  line();
  line('| night (daily) | area | full pack (bytes) | delta (bytes) | share | changed tiles | removed |');
  line('|---|---|---:|---:|---:|---:|---:|');
  const shares: number[] = [];
  let before = nights.bySeq.get(LIECHTENSTEIN.sequence)!;
  for (const night of NIGHTS) {
    const v = nights.bySeq.get(night);
    if (!v) {
      line(`| ${night} | – | – | – | 0 % (no new version: nothing changed) | 0 | 0 |`);
      shares.push(0);
      continue;
    }
    for (const [area, bbox] of [['Liechtenstein', LIECHTENSTEIN_BOX], ['Vaduz box', VADUZ_BOX.join(',')]] as const) {
      const full = await packOnce({ out: nights.dir, bbox, build: v });
      const d = await packOnce({ out: nights.dir, bbox, build: v, since: before });
      const share = (100 * d.bytes) / full.bytes;
      if (area === 'Liechtenstein') shares.push(share);
      line(`| ${night} | ${area} | ${full.bytes.toLocaleString('en-US')} | ${d.bytes.toLocaleString('en-US')} | **${share.toFixed(2)} %** | ${d.changed} | ${d.removed} |`);
    }
    before = v;
  }
  line();
  const rateOf = (n: string) => Math.round(rates.find((x) => x.name === n)?.median ?? NaN).toLocaleString('en-US');
  const summary = `Summary (${started.toISOString().slice(0, 10)}, load ${startLoad.toFixed(1)}, ${ROUNDS} rounds): ${builds.map((b) => `${b.key} ${rateOf(`${b.key} local`)} tiles/s local, ${rateOf(`${b.key} swift`)} from Swift`).join('; ')}; night deltas ${shares.map((s) => `${s.toFixed(2)} %`).join(', ')} of the country's full pack.`;
  line(summary);
  if (!values['no-write']) {
    const previous = /^Summary \(.*$/m.exec(readResults(RESULTS).run)?.[0];
    writeResults(RESULTS, `# bench/pack — pack rate and a night's delta\n\nWritten by \`node --import tsx bench/pack/run.ts ${process.argv.slice(2).map((a) => (/[\s()]/.test(a) ? `'${a}'` : a)).join(' ')}\`.`.trimEnd() + `\n\n${out.join('\n')}\n`, previous ? [`- ${previous}`] : []);
  }
} finally {
  await swift.stop();
}
