/**
 * The resampling step alone on the bench's views (640×480 @2x, their stitched regions): sharp/libvips
 * (lanczos3 `reduce` between the baked zooms, bilinear above: what compose.ts used before) against the
 * native resamplers (lib/resample-fast.ts; into a reused buffer, as compose.ts's pixel pool), RGB plane
 * only, one image at a time, alternated per round.
 * CPU ms per image (process CPU: libvips threads included), down and up views apart; the downsized
 * bytes of both are compared (the native reduce gives sharp's bytes exactly).
 *
 *   node --import tsx bench/static-map/resampler.ts [--out BUILD] [--views 60] [--rounds 5]
 *
 * Without `--out` the bench's z14 build of the sample (bench/static-map/sample.ts) is used (built if absent).
 */
import sharp from 'sharp';
import { resizeLanczos3, resizeLinear } from '../../lib/resample-fast.ts';
import type { BBox } from '../../lib/tile-math.ts';
import { cameraFor } from '../../static-server/static-map/camera.ts';
import { planRegion, resampling, stitchRegion } from '../../static-server/static-map/compose.ts';
import { DEFAULT_STATIC_MAP_LIMITS, parseStaticMapRequest } from '../../static-server/static-map/params.ts';
import { benchOptions, cpuMs, openBench } from './bench-source.ts';
import { viewParts, views } from './sample.ts';

const { out, views: N, rounds: ROUNDS } = benchOptions();
const bench = await openBench(out);
const entry = bench.entry;
const source = bench.source();

/** One view's stitched RGB and how it is resampled. */
interface Job {
  rgb: Buffer;
  width: number;
  height: number;
  down: boolean;
  r: ReturnType<typeof resampling>;
}
const jobs: Job[] = [];
for (const v of views(entry.bounds as BBox, N)) {
  const { view, size, query } = viewParts(v);
  const cam = cameraFor(parseStaticMapRequest(view, size, query, DEFAULT_STATIC_MAP_LIMITS), entry.maxzoom);
  const plan = planRegion(cam, source, cam.width, cam.height);
  if (plan.exact) continue;
  const region = await stitchRegion(source, plan);
  jobs.push({ rgb: Buffer.from(region.rgb), width: region.width, height: region.height, down: plan.f < 1, r: resampling(region, plan) });
}

const viaSharp = (j: Job) =>
  sharp(j.rgb, { raw: { width: j.width, height: j.height, channels: 3 } })
    .resize(j.r.sw, j.r.sh, { fit: 'fill', kernel: j.down ? 'lanczos3' : 'linear' })
    .extract({ left: j.r.left, top: j.r.top, width: j.r.x.m, height: j.r.y.m })
    .raw()
    .toBuffer();
// Into one reused buffer, as compose.ts resamples into its pixel pool (sharp allocates its outputs).
const scratch = Buffer.alloc(Math.max(...jobs.map((j) => j.r.x.m * j.r.y.m * 3)));
const native = async (j: Job) => {
  const dst = scratch.subarray(0, j.r.x.m * j.r.y.m * 3);
  await (j.down ? resizeLanczos3 : resizeLinear)(j.rgb, j.width, j.height, 3, dst, j.r.x.m, j.r.y.m, j.r.x, j.r.y);
  return dst;
};
const variants = { 'sharp/libvips': viaSharp, native };

let differing = 0;
for (const j of jobs.filter((j) => j.down)) {
  const [a, b] = [await viaSharp(j), await native(j)];
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) differing++;
}
const cpu: Record<string, number[]> = {};
for (let round = 0; round < ROUNDS; round++) {
  const order = Object.entries(variants);
  if (round % 2) order.reverse();
  for (const [name, run] of order) {
    for (const down of [true, false]) {
      const some = jobs.filter((j) => j.down === down);
      const c = cpuMs();
      for (const j of some) await run(j);
      (cpu[`${name} ${down ? 'down (lanczos3)' : 'up (bilinear)'}`] ??= []).push((cpuMs() - c) / some.length);
    }
  }
}
const down = jobs.filter((j) => j.down);
console.log(`${jobs.length} resampled views of ${N} (${down.length} down, ${jobs.length - down.length} up); bytes differing between sharp and native downsizing: ${differing}; load ${(await import('node:os')).loadavg()[0].toFixed(1)}`);
console.log('| resampler | CPU ms per image (each round) | mean |\n| --- | --- | ---: |');
for (const [name, ms] of Object.entries(cpu).sort()) console.log(`| ${name} | ${ms.map((m) => m.toFixed(1)).join(', ')} | ${(ms.reduce((a, b) => a + b, 0) / ms.length).toFixed(1)} |`);
process.exit(0);
