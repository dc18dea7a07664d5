/**
 * CPU per step of one static image (the bench's 640×480 @2x views with a 50-point path and a marker),
 * calling the compose functions in a loop without HTTP. sharp runs resampling, the overlay and the
 * encoder in one pipeline, so the steps are told apart by running the pipeline cumulatively: tile
 * fetch + decode (decoded-tile cache cold), stitch (tiles copied into the region), resample (the view
 * as raw pixels), + encode (PNG, no overlay), + overlay (the whole image). CPU time of the whole process
 * (process.cpuUsage, libvips threads included), so a loaded machine skews it less than wall time.
 * bench/static-map/compare.ts measures a change end to end.
 *
 *   node --import tsx bench/static-map/profile.ts [--out BUILD] [--views 60]
 *
 * Without `--out` the bench's z14 build of the sample (bench/static-map/sample.ts) is used (built if absent).
 */
import type { BBox } from '../../lib/tile-math.ts';
import { cameraFor } from '../../static-server/static-map/camera.ts';
import { composeImage, planRegion, regionView, stitchRegion } from '../../static-server/static-map/compose.ts';
import { DecodedTiles } from '../../static-server/static-map/decoded-tiles.ts';
import { overlayLayers } from '../../static-server/static-map/overlay.ts';
import { DEFAULT_STATIC_MAP_LIMITS, parseStaticMapRequest } from '../../static-server/static-map/params.ts';
import { benchOptions, cpuMs, openBench } from './bench-source.ts';
import { viewParts, views } from './sample.ts';

const { out, views: N } = benchOptions();
const bench = await openBench(out);
const entry = bench.entry;
const requests = views(entry.bounds as BBox, N).map((v) => {
  const { view, size, query } = viewParts(v);
  return parseStaticMapRequest(view, size, query, DEFAULT_STATIC_MAP_LIMITS);
});

const steps = ['fetch+decode (cold)', 'stitch', 'resample', 'encode PNG', 'overlay'] as const;
const total = Object.fromEntries(steps.map((s) => [s, 0])) as Record<(typeof steps)[number], number>;
let tiles = 0, rgba = 0, bytes = 0, upscaled = 0;
const warm = new DecodedTiles(1024 * 1024 * 1024);
async function cpu<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const c = cpuMs();
  const r = await fn();
  return [r, cpuMs() - c];
}

for (let pass = 0; pass < 2; pass++) {
  // Pass 0 warms the archive reader, tile cache and JIT; pass 1 is measured.
  for (const s of steps) total[s] = 0;
  tiles = rgba = bytes = upscaled = 0;
  for (const req of requests) {
    const cam = cameraFor(req, entry.maxzoom);
    const cold = new DecodedTiles(1024 * 1024 * 1024);
    const plan = planRegion(cam, bench.source(cold), cam.width, cam.height);
    const [, coldMs] = await cpu(() => stitchRegion(bench.source(cold), plan));
    tiles += cold.cache.size;
    const src = bench.source(warm);
    await stitchRegion(src, plan);
    const [region, stitchMs] = await cpu(() => stitchRegion(src, plan));
    total['fetch+decode (cold)'] += coldMs - stitchMs;
    total.stitch += stitchMs;
    const [, resampleMs] = await cpu(() => regionView(region, plan).raw().toBuffer());
    const [, encodeMs] = await cpu(() => composeImage(cam, src, [], 'png'));
    const [png, allMs] = await cpu(() => composeImage(cam, src, overlayLayers(cam, req.paths, req.markers), 'png'));
    total.resample += resampleMs;
    total['encode PNG'] += encodeMs - stitchMs - resampleMs;
    total.overlay += allMs - encodeMs;
    bytes += png.bytes.length;
    if (region.channels === 4) rgba++;
    if (plan.f > 1) upscaled++;
  }
}
const sum = steps.reduce((a, s) => a + total[s], 0);
const lines = [
  `${N} views (${upscaled} upscaled above the baked z${entry.maxzoom}, ${rgba} reaching beyond the data: RGBA), ${(tiles / N).toFixed(1)} tiles and ${(bytes / N / 1024).toFixed(0)} KB per image.`,
  '',
  '| step | CPU ms per image |',
  '| --- | ---: |',
  ...steps.map((s) => `| ${s} | ${(total[s] / N).toFixed(1)} |`),
  `| **all steps** | **${(sum / N).toFixed(1)}** |`,
  `| all but fetch+decode (decoded tiles cached) | ${((sum - total['fetch+decode (cold)']) / N).toFixed(1)} |`,
];
console.log(lines.join('\n'));
process.exit(0);
