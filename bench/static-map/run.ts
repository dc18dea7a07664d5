/**
 * Benchmark: static map images and raster tiles above the baked zooms, under Debian's wrk.
 * 1. 640×480 @2x PNG images of random views over the sample (random centre in the sample's bounds, zoom
 *    12–15.75, a 50-point random-walk path), shuffled list cycled by wrk; images/s and p99, against the
 *    baked @2x tiles served by the same server in the same run (the baseline ratio). Then the same size
 *    POSTed with a GeoJSON body (100 points with icons of the style's sprite and a 500-vertex polygon,
 *    bench/soak/mixed.lua's POST lines), in the same run.
 * 2. Upscaled z16 @2x tiles (baked to z14): cold (each tile once, 16 at a time), then cached under wrk.
 * 3. z16 @2x tiles rendered on demand (`overzoom: "render"`, bench/static-map/render-mode.ts), from a
 *    second server over a build in render mode: cold (one tile of each of a seeded random sample of
 *    distinct metatiles, 4 in flight, after a warm-up that starts every process's browser), then the
 *    same URLs cached under wrk. Its disk cache is emptied first. The sample has 6 metatiles at z16:
 *    `--renders` above that samples them all; `--render-out` takes a larger build in render mode.
 *
 *   node --import tsx bench/static-map/run.ts [--duration 20] [--warmup 5] [--connections 32] [--views 2000]
 *     [--renders 24] [--out BUILD] [--render-out BUILD] [--quick] [--no-render]
 *
 * `--quick` (smoke run): 3 s runs, 8 connections, no warm-up, 200 views, 4 renders, the sample baked to
 * z13 (served to z16). Without `--out` / `--render-out` the sample's osm-bright style is built (vector +
 * render, @2x PNG) into bench/results/ (`--render-out`: a build whose style has `"overzoom": "render"`).
 * `--no-render` leaves out row 3 (on-demand renders: Chromium on a loaded machine can outlast the
 * render deadline, and then the warm-up fails).
 * Also prints the server's CPU ms per static image (comparable on a loaded machine, unlike images/s);
 * bench/static-map/profile.ts splits an image's CPU into its steps.
 * Writes bench/static-map/RESULTS.md.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { currentVersionDir } from '../../lib/build-version.ts';
import { readManifestOrEmpty } from '../../lib/manifest.ts';
import { tileRangeForBBox, type BBox } from '../../lib/tile-math.ts';
import { treeCpuMs } from '../../test/fixtures/measure.ts';
import { shuffle, stop, type WrkFigures } from '../wrk.ts';
import { measureRender, type RenderFigures } from './render-mode.ts';
import { buildSample, GEOJSON_POINTS, geojsonViews, POLYGON_VERTICES, root, STYLE, UPSCALED_ZOOM, views, work } from './sample.ts';
import { PROCESSES, serve, TOKEN, wrk as wrkRun, wrkPost } from './server.ts';
import { writeResults } from '../results.ts';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
    views: { type: 'string', default: '2000' },
    renders: { type: 'string', default: '24' },
    out: { type: 'string' },
    'render-out': { type: 'string' },
    quick: { type: 'boolean', default: false },
    'no-render': { type: 'boolean', default: false },
  },
});
const QUICK = args.quick;
const duration = QUICK ? 3 : Number(args.duration);
const warmup = QUICK ? 0 : Number(args.warmup);
const VIEWS = QUICK ? 200 : Number(args.views);
const CONNECTIONS = QUICK ? 8 : Number(args.connections);
const BAKED_MAXZOOM = QUICK ? 13 : 14;
/** Cold on-demand renders: metatiles sampled, requests in flight. */
const RENDERS = QUICK ? 4 : Number(args.renders);
const RENDER_CONCURRENCY = 4;

async function fetchOk(url: string): Promise<Response> {
  const get = () => fetch(url, { headers: { Authorization: `Bearer ${TOKEN}` } });
  // Once more on a socket error: a pooled keep-alive connection idle through a wrk run can be closed by
  // the server just as it is reused ("other side closed").
  const r = await get().catch((e: unknown) => (e instanceof TypeError ? get() : Promise.reject(e)));
  if (r.status !== 200) throw new Error(`${url}: HTTP ${r.status} ${await r.text()}`);
  return r;
}

function wrk(base: string, list: string, prefix: string, seconds: number): WrkFigures {
  return wrkRun(base, list, prefix, seconds, CONNECTIONS);
}

/** Write a list file of bench/results/static-map/. */
function list(name: string, lines: string[]): string {
  const f = join(work, name);
  writeFileSync(f, `${lines.join('\n')}\n`);
  return f;
}

/** Row 3: z16 tiles rendered on demand, from a server over a build in render mode. */
async function renderMode(): Promise<RenderFigures> {
  const out = args['render-out'] ? resolve(args['render-out']) : buildSample(BAKED_MAXZOOM, 'render');
  const version = await currentVersionDir(out);
  const entry = version && (await readManifestOrEmpty(version.dir)).styles[STYLE];
  if (!entry?.render || entry.overzoom !== 'render') throw new Error(`${out}: style ${STYLE} is not built with "overzoom": "render"`);
  // Cold means cold: the disk cache of an earlier run of the same build would answer.
  const cache = join(work, 'render-cache');
  rmSync(cache, { recursive: true, force: true });
  const { proc, base, metricsPort } = await serve(out, { extra: ['--render-cache', cache] });
  try {
    return await measureRender({
      base,
      metricsPort,
      pid: proc.pid!,
      processes: PROCESSES,
      token: TOKEN,
      style: STYLE,
      bounds: entry.bounds,
      metatile: entry.render.metatile,
      zoom: UPSCALED_ZOOM,
      sample: RENDERS,
      concurrency: RENDER_CONCURRENCY,
      wrk: (lines, prefix) => wrk(base, list('rendered.txt', lines), prefix, duration),
    });
  } finally {
    await stop(proc);
  }
}

/** Rows 1–2: static images, baked tiles (the baseline) and upscaled z16 tiles, from a server over the upscale build. */
async function upscaleMode() {
  const out = args.out ? resolve(args.out) : buildSample(BAKED_MAXZOOM);
  const { proc, base, metricsPort } = await serve(out);
  try {
    const tj = (await (await fetchOk(`${base}/styles/${STYLE}/rendered.json`)).json()) as { bounds: BBox; maxzoom: number; maxzoom_served: number };
    if (tj.maxzoom_served < UPSCALED_ZOOM) throw new Error(`style serves up to z${tj.maxzoom_served}, the bench needs z${UPSCALED_ZOOM} (maxzoom_served)`);

    // Lists: views, baked @2x tiles at z12-14, upscaled z16 tiles.
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
    // CPU of the server's processes (primary and workers) per image answered, and how many answers were
    // cache hits (wrk may come round to a view again): CPU per image compares across a loaded machine.
    const cacheHits = async () => Number(/tilebake_cache_hits_total\{cache="static-images"\} (\d+)/.exec(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text())?.[1] ?? 0);
    const [cpu0, hits0] = [treeCpuMs(proc.pid!), await cacheHits()];
    const images = wrk(base, viewList, `/styles/${STYLE}/static/`, duration);
    const answered = images.rps * duration;
    const cpuPerImage = (treeCpuMs(proc.pid!) - cpu0) / answered;
    const hits = (await cacheHits()) - hits0;

    // The POSTed GeoJSON case: icons of the style's own sprite.
    const icons = Object.keys((await (await fetchOk(`${base}/styles/${STYLE}/sprite@2x.json`)).json()) as Record<string, unknown>).slice(0, 20);
    const bodies = geojsonViews(tj.bounds, VIEWS, icons);
    const postList = list('geojson.txt', bodies.map((b) => `post /styles/${STYLE}/static/${b.path}\t${b.body}`));
    const first = await fetch(`${base}/styles/${STYLE}/static/${bodies[0].path}`, { method: 'POST', headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/geo+json' }, body: bodies[0].body });
    if (first.status !== 200) throw new Error(`POST of a GeoJSON body: HTTP ${first.status} ${await first.text()}`);
    const bodyBytes = bodies.reduce((n, b) => n + b.body.length, 0) / bodies.length;
    if (warmup > 0) wrkPost(base, postList, warmup, CONNECTIONS);
    const [cpu1, hits1] = [treeCpuMs(proc.pid!), await cacheHits()];
    const posted = wrkPost(base, postList, duration, CONNECTIONS);
    const postedAnswered = posted.rps * duration;
    const cpuPerPosted = (treeCpuMs(proc.pid!) - cpu1) / postedAnswered;
    const postedHits = (await cacheHits()) - hits1;
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

    return { maxzoom: tj.maxzoom, images, tiles, cached, coldPerS, cpuPerImage, answered, hits, posted: { figures: posted, cpu: cpuPerPosted, answered: postedAnswered, hits: postedHits, bodyBytes } };
  } finally {
    await stop(proc);
  }
}

/** Row 3's lines: the cold on-demand renders. */
function renderLines(r: RenderFigures): string[] {
  const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : '–');
  return [
    `On-demand renders (\`overzoom: "render"\`, one browser per server process), cold: ${r.requests} z${UPSCALED_ZOOM} @2x tiles, each of a different metatile (a seeded random sample of the ${r.metatiles} at z${UPSCALED_ZOOM}), ${RENDER_CONCURRENCY} in flight, after a warm-up (browser starts and first renders at z${UPSCALED_ZOOM - 1}: ${(r.warmupMs / 1000).toFixed(1)} s; ${r.browsers} of ${PROCESSES} browsers running after it${r.browsers < PROCESSES ? ', so the cold run includes a browser start' : ''}):`,
    '',
    '| renders | tiles rendered | s | renders/s | tiles/s | p50 ms | p99 ms | 503 | 504 | other errors | server CPU ms per render |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    `| ${r.renders} | ${r.tiles} | ${r.seconds.toFixed(1)} | ${(r.renders / r.seconds).toFixed(2)} | ${(r.tiles / r.seconds).toFixed(1)} | ${ms(r.p50)} | ${ms(r.p99)} | ${r.status503} | ${r.status504} | ${r.otherErrors} | ${r.cpuPerRenderMs.toFixed(0)} |`,
  ];
}

/** CPU ms per composed image from CPU ms per answer, with the cache's answers counted as free. */
function composed(cpuPerAnswer: number, answers: number, hits: number): number {
  return (cpuPerAnswer * answers) / Math.max(1, answers - hits);
}

async function main(): Promise<void> {
  mkdirSync(work, { recursive: true });
  const { maxzoom, images, tiles, cached, coldPerS, cpuPerImage, answered, hits, posted } = await upscaleMode();
  const r = args['no-render'] ? undefined : await renderMode();
  const rows = [
    ['static 640x480@2x, 50-point path', images],
    [`static 640x480@2x POSTed GeoJSON, ${GEOJSON_POINTS} icons + ${POLYGON_VERTICES}-vertex polygon`, posted.figures],
    [`baked @2x tiles z${maxzoom - 2}-${maxzoom} (baseline)`, tiles],
    [`upscaled z${UPSCALED_ZOOM} @2x tiles, cached`, cached],
    ...(r ? [[`rendered z${UPSCALED_ZOOM} @2x tiles, cached (the cold run's ${r.requests} URLs)`, r.cached] as const] : []),
  ] as const;
  const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : '–');
  const lines = [
    '# bench/static-map',
    '',
    `Run ${new Date().toISOString()}${QUICK ? ' (--quick smoke run: not figures to quote)' : ''}; wrk -t2 -c${CONNECTIONS}, ${duration} s per run; ${VIEWS} views; baked to z${maxzoom}; ${PROCESSES} server processes.`,
    '',
    '| load | req/s | p50 ms | p99 ms | errors |',
    '| --- | ---: | ---: | ---: | ---: |',
    ...rows.map(([name, f]) => `| ${name} | ${f.rps.toFixed(0)} | ${ms(f.p50)} | ${ms(f.p99)} | ${f.errors} |`),
    `| upscaled z${UPSCALED_ZOOM} @2x tiles, cold (each once, 16 in flight) | ${coldPerS.toFixed(0)} | | | 0 |`,
    '',
    ...(r ? renderLines(r) : ['On-demand renders: not measured in this run (`--no-render`).']),
    '',
    `Server CPU per static image: ${cpuPerImage.toFixed(1)} ms (all server processes, ${answered.toFixed(0)} images, ${hits} of them from the image cache).`,
    `Server CPU per POSTed GeoJSON image: ${posted.cpu.toFixed(1)} ms (${posted.answered.toFixed(0)} images, ${posted.hits} from the image cache; bodies of ${(posted.bodyBytes / 1024).toFixed(1)} KB on average).`,
    `Per composed image (answers from the image cache taken out, as if they cost nothing): ${composed(cpuPerImage, answered, hits).toFixed(1)} ms for the URL's path, ${composed(posted.cpu, posted.answered, posted.hits).toFixed(1)} ms for the POSTed GeoJSON: ${(composed(posted.cpu, posted.answered, posted.hits) / composed(cpuPerImage, answered, hits)).toFixed(2)}x; images/s ${(posted.figures.rps / images.rps).toFixed(2)}x.`,
    `Static images per baked tile served: ${(images.rps / tiles.rps).toFixed(3)}x; upscaled cached vs baked tiles: ${(cached.rps / tiles.rps).toFixed(2)}x; upscaled cold vs cached: ${(coldPerS / cached.rps).toFixed(3)}x.`,
    ...(r ? [`Rendered cached vs baked tiles: ${(r.cached.rps / tiles.rps).toFixed(2)}x (renders during the cached run: ${r.cachedRenders}); rendered cold tiles/s vs upscaled cold: ${(r.tiles / r.seconds / coldPerS).toFixed(3)}x.`] : []),
    `Target: >= 60 images/s on 2 cores (${images.rps >= 60 ? 'met' : 'not met'} in this run).`,
    '',
  ];
  console.log(lines.join('\n'));
  writeResults(join(root, 'bench/static-map/RESULTS.md'), lines.join('\n'));
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
