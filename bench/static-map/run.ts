/**
 * Benchmark: static map images and raster tiles above the baked zooms, under Debian's wrk.
 * 1. 640×480 @2x PNG images of random views over the sample (random centre in the sample's bounds, zoom
 *    12–15.75, a 50-point random-walk path), shuffled list cycled by wrk; images/s and p99, against the
 *    baked @2x tiles served by the same server in the same run (the baseline ratio).
 * 2. Upscaled z16 @2x tiles (baked to z14): cold (each tile once, 16 at a time), then cached under wrk.
 *
 *   node --import tsx bench/static-map/run.ts [--duration 20] [--warmup 5] [--connections 32] [--views 2000] [--out BUILD] [--quick]
 *
 * `--quick` (smoke run): 3 s runs, 8 connections, no warm-up, 200 views, the sample baked to z13 (served to z16).
 * Without `--out` the sample's osm-bright style is built (vector + render, @2x PNG) into bench/results/.
 * Writes bench/static-map/RESULTS.md.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { lonLatToWorld, tileRangeForBBox, worldToLonLat, type BBox } from '../../lib/tile-math.ts';
import { freePort } from '../../test/fixtures/server/helpers.ts';
import { parseWrk, shuffle, stop, type WrkFigures } from '../wrk.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
    views: { type: 'string', default: '2000' },
    out: { type: 'string' },
    quick: { type: 'boolean', default: false },
  },
});
const QUICK = args.quick;
const duration = QUICK ? 3 : Number(args.duration);
const warmup = QUICK ? 0 : Number(args.warmup);
const VIEWS = QUICK ? 200 : Number(args.views);
const CONNECTIONS = QUICK ? 8 : Number(args.connections);
const BAKED_MAXZOOM = QUICK ? 13 : 14;
const UPSCALED_ZOOM = 16;
const PATH_POINTS = 50;
const STYLE = 'osm-bright';
const TOKEN = 'bench-token-not-secret';
const work = join(root, 'bench/results/static-map');
const LUA = join(root, 'bench/serve-vector/tiles.lua');

/** Build the sample's osm-bright at @2x PNG (vector, then render) unless a build was given. */
function build(): string {
  if (args.out) return resolve(args.out);
  const out = join(work, `build-z${BAKED_MAXZOOM}`);
  if (existsSync(join(out, 'current.json')) || existsSync(join(out, 'manifest.json'))) return out;
  const sample = JSON.parse(readFileSync(join(root, 'data/sample/config.json'), 'utf8')) as Record<string, unknown> & { tilesets: Record<string, { source: string }> };
  const abs = (p: string) => join(root, 'data/sample', p);
  const config = {
    out,
    attribution: sample.attribution,
    tilesets: { openmaptiles: { ...sample.tilesets.openmaptiles, source: abs(sample.tilesets.openmaptiles.source) } },
    styles: { [STYLE]: { style: abs(`styles/${STYLE}/style.json`), tileset: 'openmaptiles', minzoom: 0, maxzoom: BAKED_MAXZOOM, maxzoom_served: UPSCALED_ZOOM, scales: [2], formats: ['png'] } },
    fonts: abs('fonts'),
  };
  mkdirSync(work, { recursive: true });
  const file = join(work, 'config.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  for (const only of ['vector', 'render']) {
    execFileSync(process.execPath, [join(root, 'bin/tilebake.js'), 'build', '--config', file, '--only', only], { stdio: 'inherit', env: { ...process.env, TILEBAKE_QUIET: '1' } });
  }
  return out;
}

/** A seeded random number generator (the same views every run). */
function rng(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
}

/** Random 640x480@2x views over `bounds`, each with a 50-point random-walk path inside the view. */
function views(bounds: BBox, n: number): string[] {
  const rnd = rng(7);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const lon = bounds[0] + rnd() * (bounds[2] - bounds[0]);
    const lat = bounds[1] + rnd() * (bounds[3] - bounds[1]);
    const zoom = Math.round((12 + rnd() * 3.75) * 100) / 100;
    const c = lonLatToWorld(lon, lat);
    const span = 200 / (256 * 2 ** zoom);
    let x = c.x, y = c.y;
    const pts: string[] = [];
    for (let k = 0; k < PATH_POINTS; k++) {
      x += (rnd() - 0.5) * span * 0.3;
      y += (rnd() - 0.5) * span * 0.3;
      const p = worldToLonLat(x, y);
      pts.push(`${p.lon.toFixed(6)},${p.lat.toFixed(6)}`);
    }
    out.push(`${lon.toFixed(5)},${lat.toFixed(5)},${zoom}/640x480@2x.png?path=stroke:%23e0245e|width:4|${pts.join('|')}&marker=${lon.toFixed(5)},${lat.toFixed(5)}`);
  }
  return out;
}

async function fetchOk(url: string): Promise<Response> {
  const r = await fetch(url, { headers: { Authorization: `Bearer ${TOKEN}` } });
  if (r.status !== 200) throw new Error(`${url}: HTTP ${r.status} ${await r.text()}`);
  return r;
}

function wrk(base: string, list: string, prefix: string, seconds: number): WrkFigures {
  const out = execFileSync('wrk', ['-t2', `-c${CONNECTIONS}`, `-d${seconds}s`, '--timeout', '10s', '--latency', '-s', LUA, base, '--', list, prefix, TOKEN], { encoding: 'utf8' });
  return parseWrk(out);
}

async function main(): Promise<void> {
  mkdirSync(work, { recursive: true });
  const out = build();
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const proc: ChildProcess = spawn(process.execPath, [join(root, 'bin/tilebake.js'), 'serve', '--out', out, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn', '--version-poll-ms', '0'], {
    env: { ...process.env, TILEBAKE_TOKENS: TOKEN },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    for (let t = Date.now(); ; ) {
      if (proc.exitCode !== null) throw new Error(`serve exited with ${proc.exitCode}`);
      if (await fetch(`${base}/health`).then((r) => r.ok, () => false)) break;
      if (Date.now() - t > 60_000) throw new Error('serve not ready after 60 s');
      await new Promise((r) => setTimeout(r, 250));
    }
    const tj = (await (await fetchOk(`${base}/styles/${STYLE}/rendered.json`)).json()) as { bounds: BBox; maxzoom: number; maxzoom_served: number };
    if (tj.maxzoom_served < UPSCALED_ZOOM) throw new Error(`style serves up to z${tj.maxzoom_served}, the bench needs z${UPSCALED_ZOOM} (maxzoom_served)`);

    // Lists: views, baked @2x tiles at z12-14, upscaled z16 tiles.
    const list = (name: string, lines: string[]) => {
      const f = join(work, name);
      writeFileSync(f, `${lines.join('\n')}\n`);
      return f;
    };
    const viewList = list('views.txt', views(tj.bounds, VIEWS));
    const baked: string[] = [];
    for (let z = tj.maxzoom - 2; z <= tj.maxzoom; z++) {
      const r = tileRangeForBBox(tj.bounds, z);
      for (let y = r.minY; y <= r.maxY; y++) for (let x = r.minX; x <= r.maxX; x++) baked.push(`${z}/${x}/${y}@2x.png`);
    }
    const bakedList = list('baked.txt', shuffle(baked));
    const r16 = tileRangeForBBox(tj.bounds, UPSCALED_ZOOM);
    const up: string[] = [];
    for (let y = r16.minY; y <= r16.maxY; y++) for (let x = r16.minX; x <= r16.maxX; x++) up.push(`${UPSCALED_ZOOM}/${x}/${y}@2x.png`);
    const upTiles = shuffle(up).slice(0, QUICK ? 200 : 2000);
    const upList = list('upscaled.txt', upTiles);

    // Check one image before measuring.
    const sample = await fetchOk(`${base}/styles/${STYLE}/static/${readFileSync(viewList, 'utf8').split('\n')[0]}`);
    const bytes = Buffer.from(await sample.arrayBuffer());
    if (bytes.readUInt32BE(16) !== 1280 || bytes.readUInt32BE(20) !== 960) throw new Error('a 640x480@2x image is not 1280x960 px');

    if (warmup > 0) wrk(base, viewList, `/styles/${STYLE}/static/`, warmup);
    const images = wrk(base, viewList, `/styles/${STYLE}/static/`, duration);
    const tiles = wrk(base, bakedList, `/styles/${STYLE}/`, duration);

    // Upscaled tiles: cold (every tile once, 16 requests in flight), then cached under wrk.
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < upTiles.length) {
          const t = upTiles[next++];
          await (await fetchOk(`${base}/styles/${STYLE}/${t}`)).arrayBuffer();
        }
      }),
    );
    const coldPerS = upTiles.length / ((performance.now() - t0) / 1000);
    const cached = wrk(base, upList, `/styles/${STYLE}/`, duration);

    const rows = [
      ['static 640x480@2x, 50-point path', images],
      [`baked @2x tiles z${tj.maxzoom - 2}-${tj.maxzoom} (baseline)`, tiles],
      [`upscaled z${UPSCALED_ZOOM} @2x tiles, cached`, cached],
    ] as const;
    const lines = [
      '# bench/static-map',
      '',
      `Run ${new Date().toISOString()}${QUICK ? ' (--quick smoke run: not figures to quote)' : ''}; wrk -t2 -c${CONNECTIONS}, ${duration} s per run; ${VIEWS} views; baked to z${tj.maxzoom}.`,
      '',
      '| load | req/s | p50 ms | p99 ms | errors |',
      '| --- | ---: | ---: | ---: | ---: |',
      ...rows.map(([name, f]) => `| ${name} | ${f.rps.toFixed(0)} | ${f.p50.toFixed(1)} | ${f.p99.toFixed(1)} | ${f.errors} |`),
      `| upscaled z${UPSCALED_ZOOM} @2x tiles, cold (each once, 16 in flight) | ${coldPerS.toFixed(0)} | | | 0 |`,
      '',
      `Static images per baked tile served: ${(images.rps / tiles.rps).toFixed(3)}x; upscaled cached vs baked tiles: ${(cached.rps / tiles.rps).toFixed(2)}x; upscaled cold vs cached: ${(coldPerS / cached.rps).toFixed(3)}x.`,
      `Target: >= 200 images/s on 2 cores (${images.rps >= 200 ? 'met' : 'not met'} in this run).`,
      '',
    ];
    console.log(lines.join('\n'));
    writeFileSync(join(root, 'bench/static-map/RESULTS.md'), lines.join('\n'));
  } finally {
    await stop(proc);
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
