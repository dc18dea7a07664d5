/**
 * Benchmark (not a test): MLT beside MVT on OpenStreetMap extracts (Liechtenstein, Belize), each built
 * by `tilebake build` with `"encodings": ["mvt", "mlt"]` into build/bench-mlt/<region>/ (kept: the later
 * steps reuse it with --reuse). For each region:
 * - the vector stage with MLT (`--rounds` full builds): the MLT step's share of the stage, and the
 *   encoder's CPU per encoded tile (from the build's own log lines); target: encoding adds ≤ 25 %;
 * - bytes per zoom over the archive's distinct tiles: MVT + gzip, MLT, MLT + gzip (both gzipped here
 *   at zlib's default level); target: MLT + gzip ≤ 0.85 × MVT + gzip over the whole archive;
 * - decoding every tile in headless Chromium with the decoders MapLibre GL JS uses (@mapbox/vector-tile
 *   with its features' geometry and properties loaded, @maplibre/mlt's decodeTile and getFeatures, as
 *   maplibre-gl's worker does), MVT and MLT alternated, median of `--decode-rounds`;
 * - /data req/s of `tilebake serve` for .pbf and .mlt (wrk, every tile in shuffled order, gzip),
 *   alternated, mean of `--rounds`.
 *
 *   node --import tsx bench/mlt/run.ts [--regions liechtenstein,belize] [--rounds 2] [--duration 10] [--reuse]
 *
 * Prints the tables and writes bench/mlt/RESULTS.md.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { gunzipSync, gzipSync } from 'node:zlib';
import { build as esbuild } from 'esbuild';
import { chromium } from 'playwright-core';
import { currentVersionDir } from '../../lib/build-version.ts';
import type { Manifest } from '../../lib/manifest.ts';
import { openArchiveFile, tileIdToZxy } from '../../lib/pmtiles/index.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../workers/chromium.ts';
import { parseWrk, shuffle, stop } from '../wrk.ts';
import { writeResults } from '../results.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const REGIONS: Record<string, string> = {
  liechtenstein: join(ROOT, 'data/liechtenstein/liechtenstein-latest.osm.pbf'),
  belize: '/work/shared/data/regions/belize-2015-08-23.osm.pbf',
};
const { values: args } = parseArgs({
  options: {
    regions: { type: 'string', default: 'liechtenstein,belize' },
    rounds: { type: 'string', default: '2' },
    'decode-rounds': { type: 'string', default: '5' },
    duration: { type: 'string', default: '10' },
    reuse: { type: 'boolean', default: false },
  },
});
const ROUNDS = Math.max(1, Number(args.rounds));
const WORK = join(ROOT, 'build', 'bench-mlt');
const CLI = join(ROOT, 'bin/tilebake.js');
const TILESET = 't';
const SIZE_TARGET = 0.85;
const STAGE_TARGET = 0.25;
const PORT = 18741;

const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const mean = (a: number[]) => a.reduce((s, v) => s + v, 0) / a.length;

/** One full build's figures, from its log. */
interface BuildRun {
  stageSeconds: number;
  mltSeconds: number;
  encoded: number;
  encodeCpuSeconds: number;
}

/** `tilebake build --full` of the region; its vector stage and MLT step from the log lines. */
async function buildOnce(dir: string, source: string): Promise<BuildRun> {
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ out: join(dir, 'out'), tilesets: { [TILESET]: { source, encodings: ['mvt', 'mlt'] } } }, null, 2));
  const log = await new Promise<string>((ok, fail) => {
    const p = spawn(process.execPath, [CLI, 'build', '--config', config, '--full', '--keep', '1'], { env: { ...process.env, CI: '1' }, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('exit', (code) => (code === 0 ? ok(err) : fail(new Error(`build failed (${code}):\n${err}`))));
  });
  const stage = /stage vector: \d+ tiles in ([\d.]+) s/.exec(log);
  const mlt = /MLT tiles \((\d+) encoded, \d+ copied from the previous build\), \d+ bytes in ([\d.]+) s \(encoder CPU ([\d.]+) s\)/.exec(log);
  if (!stage || !mlt) throw new Error(`unexpected build log:\n${log}`);
  return { stageSeconds: Number(stage[1]), mltSeconds: Number(mlt[2]), encoded: Number(mlt[1]), encodeCpuSeconds: Number(mlt[3]) };
}

/** Per zoom: distinct tiles and their bytes. */
interface ZoomBytes {
  tiles: number;
  mvtGz: number;
  mlt: number;
  mltGz: number;
}

/** The version's MVT and MLT archives: bytes per zoom, and every distinct tile's uncompressed bytes (for decoding). */
async function archiveBytes(version: string): Promise<{ zooms: Map<number, ZoomBytes>; mvt: Uint8Array[]; mlt: Uint8Array[] }> {
  const m = JSON.parse(readFileSync(join(version, 'manifest.json'), 'utf8')) as Manifest;
  const entry = m.tilesets[TILESET];
  const a = await openArchiveFile(join(version, entry.archive));
  const b = await openArchiveFile(join(version, entry.mlt!.archive));
  const zooms = new Map<number, ZoomBytes>();
  const mvt: Uint8Array[] = [];
  const mlt: Uint8Array[] = [];
  const seen = new Set<number>();
  try {
    for await (const e of a.entries()) {
      if (seen.has(e.offset)) continue;
      seen.add(e.offset);
      const rawMvt = gunzipSync(await a.readRange(e.offset, e.length));
      const rawMlt = gunzipSync((await b.getTile(e.z, e.x, e.y))!);
      const z = zooms.get(e.z) ?? { tiles: 0, mvtGz: 0, mlt: 0, mltGz: 0 };
      z.tiles++;
      z.mvtGz += gzipSync(rawMvt).length;
      z.mlt += rawMlt.length;
      z.mltGz += gzipSync(rawMlt).length;
      zooms.set(e.z, z);
      mvt.push(rawMvt);
      mlt.push(rawMlt);
    }
  } finally {
    await a.close();
    await b.close();
  }
  return { zooms, mvt, mlt };
}

/** The decoders maplibre-gl uses, bundled for the page (esbuild: @maplibre/mlt's files import without extensions). */
async function decoderBundle(): Promise<string> {
  const entry = `
    import { VectorTile } from '@mapbox/vector-tile';
    import { PbfReader } from 'pbf';
    import { decodeTile } from '@maplibre/mlt';
    // As maplibre-gl's worker reads a tile: every feature's geometry and properties of every layer.
    window.decodeMvt = (bytes) => { const t = new VectorTile(new PbfReader(bytes)); let n = 0;
      for (const l of Object.values(t.layers)) for (let i = 0; i < l.length; i++) { const f = l.feature(i); n += f.loadGeometry().length + Object.keys(f.properties).length; } return n; };
    window.decodeMlt = (bytes) => { let n = 0;
      for (const t of decodeTile(bytes)) for (const f of t.getFeatures()) n += f.geometry.coordinates.length + Object.keys(f.properties).length; return n; };`;
  const r = await esbuild({ stdin: { contents: entry, resolveDir: ROOT }, bundle: true, format: 'iife', write: false, minify: true, logLevel: 'silent' });
  return r.outputFiles[0].text;
}

/** Median milliseconds to decode every tile with each decoder in Chromium, alternating MVT and MLT. */
async function decodeTimes(mvt: Uint8Array[], mlt: Uint8Array[], rounds: number): Promise<{ mvtMs: number; mltMs: number }> {
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
  try {
    const page = await browser.newPage();
    await page.setContent('<!doctype html><html><body></body></html>');
    await page.addScriptTag({ content: await decoderBundle() });
    const send = async (name: string, tiles: Uint8Array[]) => {
      await page.evaluate((n) => ((window as unknown as Record<string, Uint8Array[]>)[n] = []), name);
      for (let i = 0; i < tiles.length; i += 200) {
        const chunk = tiles.slice(i, i + 200).map((t) => Buffer.from(t).toString('base64'));
        await page.evaluate(([n, c]) => {
          const list = (window as unknown as Record<string, Uint8Array[]>)[n as string];
          for (const s of c as string[]) list.push(Uint8Array.from(atob(s), (ch) => ch.charCodeAt(0)));
        }, [name, chunk] as const);
      }
    };
    await send('mvtTiles', mvt);
    await send('mltTiles', mlt);
    const time = (which: 'Mvt' | 'Mlt') =>
      page.evaluate((w) => {
        const g = window as unknown as Record<string, unknown>;
        const tiles = g[`${w.toLowerCase()}Tiles`] as Uint8Array[];
        const decode = g[`decode${w}`] as (b: Uint8Array) => number;
        const t0 = performance.now();
        let n = 0;
        for (const t of tiles) n += decode(t);
        if (n === 0) throw new Error('nothing decoded');
        return performance.now() - t0;
      }, which);
    await time('Mvt');
    await time('Mlt'); // warm-up: JIT
    const a: number[] = [];
    const b: number[] = [];
    for (let r = 0; r < rounds; r++) {
      a.push(await time('Mvt'));
      b.push(await time('Mlt'));
    }
    return { mvtMs: median(a), mltMs: median(b) };
  } finally {
    await browser.close();
  }
}

/** `tilebake serve` req/s for .pbf and .mlt over every tile (wrk, shuffled), alternated; mean of the rounds. */
async function requestRates(dir: string, version: string, seconds: number): Promise<{ pbf: number; mlt: number }> {
  const m = JSON.parse(readFileSync(join(version, 'manifest.json'), 'utf8')) as Manifest;
  const a = await openArchiveFile(join(version, m.tilesets[TILESET].archive));
  const paths: string[] = [];
  for await (const e of a.entries()) for (let k = 0; k < Math.min(e.runLength, 4); k++) paths.push(tileIdToZxy(e.tileId + k).join('/'));
  await a.close();
  const lists: Record<string, string> = {};
  for (const ext of ['pbf', 'mlt']) {
    lists[ext] = join(dir, `tiles.${ext}.txt`);
    writeFileSync(lists[ext], `${shuffle([...paths]).map((p) => `${p}.${ext}`).join('\n')}\n`);
  }
  const server = spawn(process.execPath, [CLI, 'serve', '-o', join(dir, 'out'), '--port', String(PORT), '--host', '127.0.0.1', '--no-auth', '--workers', '1'], { stdio: 'ignore', env: { ...process.env, CI: '1' } });
  try {
    for (let i = 0; ; i++) {
      const ok = await fetch(`http://127.0.0.1:${PORT}/health`).then((r) => r.ok, () => false);
      if (ok) break;
      if (i > 600) throw new Error('tilebake serve did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
    const wrk = (ext: string, s: number) =>
      parseWrk(execFileSync('wrk', ['-t2', '-c32', `-d${s}s`, '--latency', '-s', join(ROOT, 'bench/serve-vector/tiles.lua'), `http://127.0.0.1:${PORT}`, '--', lists[ext], `/data/${TILESET}/`], { encoding: 'utf8' }));
    wrk('pbf', 2);
    wrk('mlt', 2);
    const rates: Record<string, number[]> = { pbf: [], mlt: [] };
    for (let r = 0; r < ROUNDS; r++) {
      for (const ext of ['pbf', 'mlt']) {
        const f = wrk(ext, seconds);
        if (f.errors > 0) throw new Error(`wrk: ${f.errors} errors on .${ext}`);
        rates[ext].push(f.rps);
      }
    }
    return { pbf: mean(rates.pbf), mlt: mean(rates.mlt) };
  } finally {
    await stop(server);
  }
}

const kb = (n: number) => (n / 1024).toFixed(1);
const lines: string[] = [];
const out = (s = '') => {
  console.log(s);
  lines.push(s);
};

const startLoad = loadavg()[0];
for (const region of args.regions!.split(',')) {
  const source = REGIONS[region];
  if (!source) throw new Error(`--regions: unknown region ${region} (one of ${Object.keys(REGIONS).join(', ')})`);
  const dir = join(WORK, region);
  mkdirSync(dir, { recursive: true });
  const builds: BuildRun[] = [];
  const cached = join(dir, 'builds.json');
  if (args.reuse) builds.push(...(JSON.parse(readFileSync(cached, 'utf8')) as BuildRun[]));
  else {
    for (let r = 0; r < ROUNDS; r++) builds.push(await buildOnce(dir, source));
    writeFileSync(cached, JSON.stringify(builds, null, 2));
  }
  const version = (await currentVersionDir(join(dir, 'out')))!.dir;
  const { zooms, mvt, mlt } = await archiveBytes(version);
  out(`## ${region} (${source.split('/').pop()})`);
  out();
  out('| zoom | distinct tiles | MVT + gzip kB | MLT kB | MLT + gzip kB | MLT + gzip / MVT + gzip |');
  out('| ---: | ---: | ---: | ---: | ---: | ---: |');
  const total: ZoomBytes = { tiles: 0, mvtGz: 0, mlt: 0, mltGz: 0 };
  for (const [z, b] of [...zooms].sort(([a], [c]) => a - c)) {
    out(`| ${z} | ${b.tiles} | ${kb(b.mvtGz)} | ${kb(b.mlt)} | ${kb(b.mltGz)} | ${(b.mltGz / b.mvtGz).toFixed(2)} |`);
    for (const k of Object.keys(total) as (keyof ZoomBytes)[]) total[k] += b[k];
  }
  const sizeRatio = total.mltGz / total.mvtGz;
  out(`| all | ${total.tiles} | ${kb(total.mvtGz)} | ${kb(total.mlt)} | ${kb(total.mltGz)} | **${sizeRatio.toFixed(2)}** (target ≤ ${SIZE_TARGET}: ${sizeRatio <= SIZE_TARGET ? 'met' : 'not met'}) |`);
  out();
  const share = median(builds.map((b) => b.mltSeconds / (b.stageSeconds - b.mltSeconds)));
  const cpuPerTile = median(builds.map((b) => (b.encodeCpuSeconds * 1000) / Math.max(1, b.encoded)));
  out(`Vector stage (${builds.length} full builds, median): MLT step ${median(builds.map((b) => b.mltSeconds)).toFixed(1)} s of ${median(builds.map((b) => b.stageSeconds)).toFixed(1)} s: encoding adds **${(share * 100).toFixed(0)} %** to the rest of the stage (target ≤ ${STAGE_TARGET * 100} %: ${share <= STAGE_TARGET ? 'met' : 'not met'}); encoder CPU ${cpuPerTile.toFixed(1)} ms per encoded tile (${builds[0].encoded} tiles).`);
  const d = await decodeTimes(mvt, mlt, Number(args['decode-rounds']));
  out(`Decoding all ${mvt.length} distinct tiles in Chromium (median of ${args['decode-rounds']}, alternated): MVT ${d.mvtMs.toFixed(0)} ms, MLT ${d.mltMs.toFixed(0)} ms: MLT / MVT = **${(d.mltMs / d.mvtMs).toFixed(2)}**.`);
  const r = await requestRates(dir, version, Number(args.duration));
  out(`/data req/s (tilebake serve --workers 1, wrk -t2 -c32, ${args.duration} s × ${ROUNDS}, alternated): .pbf ${r.pbf.toFixed(0)}, .mlt ${r.mlt.toFixed(0)}: .mlt / .pbf = **${(r.mlt / r.pbf).toFixed(2)}**.`);
  out();
}
const cpu = cpus();
const header = `# MLT beside MVT (bench/mlt)\n\n${new Date().toISOString().slice(0, 10)}, ${cpu.length} cores (${cpu[0]?.model.trim()}), load average ${startLoad.toFixed(1)} at the start, ${loadavg()[0].toFixed(1)} at the end (a shared machine: times are comparable only within a row's alternated rounds). Encoder: @maplibre/mlt encodeTile (its plain encoding: no dictionaries, FSST, FastPFOR or delta-coded vertices).\n\n`;
writeResults(join(ROOT, 'bench/mlt/RESULTS.md'), header + lines.join('\n') + '\n');
