/**
 * CPU per step of one static image (the bench's 640×480 @2x views with a 50-point path and a marker),
 * calling the compose functions in a loop without HTTP: tile fetch + decode (decoded-tile cache
 * cold), tile lookup ('tiles'; exact views stitch within 'resample', the others read the tiles in place), resample, overlay (SVG text and native operations; drawn: ours for paths and pins straight onto the image, librsvg + blend for labels), encode. CPU time of the whole
 * process (process.cpuUsage, libvips threads included), so a loaded machine skews it less than wall time.
 * A step's figure includes the garbage collections earlier steps caused (GC pauses are printed too):
 * bench/static-map/compare.ts measures a change end to end.
 *
 *   node --import tsx bench/static-map/profile.ts [--out BUILD] [--views 60]
 *
 * Without `--out` the bench's z14 build of the sample (bench/static-map/sample.ts) is used (built if absent).
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { cameraFor } from '../../static-server/static-map/camera.ts';
import { encodeImage, planRegion, regionTiles, resampleRegion } from '../../static-server/static-map/compose.ts';
import { DecodedTiles } from '../../static-server/static-map/decoded-tiles.ts';
import { drawOverlay } from '../../static-server/static-map/overlay-raster.ts';
import { overlaySvg } from '../../static-server/static-map/overlay.ts';
import { DEFAULT_STATIC_MAP_LIMITS, parseStaticMapRequest } from '../../static-server/static-map/params.ts';
import type { BBox } from '../../lib/tile-math.ts';
import { benchOptions, cpuMs, openBench } from './bench-source.ts';
import { viewParts, views } from './sample.ts';

const { out, views: N } = benchOptions();


let gcMs = 0, gcCount = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) (gcMs += e.duration), gcCount++;
}).observe({ entryTypes: ['gc'] });

const bench = await openBench(out);
const entry = bench.entry;
const requests = views(entry.bounds as BBox, N).map((v) => {
  const { view, size, query } = viewParts(v);
  return parseStaticMapRequest(view, size, query, DEFAULT_STATIC_MAP_LIMITS);
});

const steps = ['fetch+decode (cold)', 'tiles', 'resample', 'overlay SVG text', 'overlay draw', 'encode PNG'] as const;
const total = Object.fromEntries(steps.map((s) => [s, 0])) as Record<(typeof steps)[number], number>;
let tiles = 0, rgb = 0, bytes = 0, upscaled = 0;
const warm = new DecodedTiles(1024 * 1024 * 1024);
async function timed<T>(step: (typeof steps)[number], fn: () => Promise<T> | T): Promise<T> {
  const c = cpuMs();
  const r = await fn();
  total[step] += cpuMs() - c;
  return r;
}

for (let pass = 0; pass < 2; pass++) {
  // Pass 0 warms the archive reader, tile cache and JIT; pass 1 is measured.
  for (const s of steps) total[s] = 0;
  tiles = rgb = bytes = upscaled = 0;
  gcMs = gcCount = 0;
  for (const req of requests) {
    const cam = cameraFor(req, entry.maxzoom);
    const cold = new DecodedTiles(1024 * 1024 * 1024);
    const plan = planRegion(cam, bench.source(cold), cam.width, cam.height);
    await timed('fetch+decode (cold)', () => regionTiles(bench.source(cold), plan));
    tiles += cold.cache.size;
    const src = bench.source(warm);
    await regionTiles(src, plan);
    const before = total.tiles;
    const region = await timed('tiles', () => regionTiles(src, plan));
    total['fetch+decode (cold)'] -= total.tiles - before; // the cold pass looked the tiles up too
    const base = await timed('resample', () => resampleRegion(region, plan));
    const svg = await timed('overlay SVG text', () => overlaySvg(cam, req.paths, req.markers));
    if (svg) {
      await timed('overlay draw', () => drawOverlay(base, svg));
    }
    const png = await timed('encode PNG', () => encodeImage(base, undefined, 'png'));
    bytes += png.length;
    if (!base.alpha) rgb++;
    if (plan.f > 1) upscaled++;
  }
}
const sum = steps.reduce((a, s) => a + total[s], 0);
const lines = [
  `${N} views (${upscaled} upscaled above the baked z${entry.maxzoom}, ${rgb} opaque), ${(tiles / N).toFixed(1)} tiles and ${(bytes / N / 1024).toFixed(0)} KB per image.`,
  '',
  '| step | CPU ms per image |',
  '| --- | ---: |',
  ...steps.map((s) => `| ${s} | ${(total[s] / N).toFixed(1)} |`),
  `| **all steps** | **${(sum / N).toFixed(1)}** |`,
  `| all but fetch+decode (decoded tiles cached) | ${((sum - total['fetch+decode (cold)']) / N).toFixed(1)} |`,
  '',
  `GC pauses on the main thread (within the steps above): ${gcCount} in ${N} views, ${(gcMs / N).toFixed(1)} wall ms per image.`,
];
console.log(lines.join('\n'));
process.exit(0);
