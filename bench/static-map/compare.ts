/**
 * A/B of static-image code: the server's compose path (composeImage, no HTTP) over the
 * bench's views, for several checkouts of tilebake in one process, alternating whole rounds between
 * them so that a shared, loaded machine weighs on each alike. Prints CPU ms per image (process CPU,
 * libvips threads and V8's GC threads included), GC pauses and output bytes per round, and the mean
 * over rounds after the first (warm-up; the images of its other checkouts are compared with the first's
 * byte for byte). `--concurrency` images are composed at once, as the server's
 * limiter allows (TILEBAKE_STATIC_CONCURRENCY, default 2): more in flight make more garbage at once.
 *
 *   git worktree add /tmp/before <rev>   # or: mkdir /tmp/before && git archive <rev> | tar -x -C /tmp/before
 *   node --import tsx bench/static-map/compare.ts [--views 60] [--rounds 5] [--concurrency 2] [--out BUILD] /tmp/before .
 *
 * A checkout needs node_modules (a symlink to this one's will do). Without `--out` the bench's z14
 * build of the sample is used (bench/static-map/sample.ts, built if absent).
 */
import { resolve } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { BBox } from '../../lib/tile-math.ts';
import { buildSample, STYLE, viewParts, views } from './sample.ts';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: { out: { type: 'string' }, views: { type: 'string', default: '60' }, rounds: { type: 'string', default: '5' }, concurrency: { type: 'string', default: '2' } },
});
const N = Number(args.views), ROUNDS = Number(args.rounds), CONC = Number(args.concurrency);
if (positionals.length === 0 || ROUNDS < 2) throw new Error('usage: compare.ts [--views N] [--rounds R>=2] [--concurrency C] [--out BUILD] CHECKOUT...');
const out = args.out ? resolve(args.out) : buildSample(14);

let gcMs = 0, gcCount = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) (gcMs += e.duration), gcCount++;
}).observe({ entryTypes: ['gc'] });
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

interface Variant {
  name: string;
  image(i: number): Promise<Buffer>;
  cpu: number[];
}

/** The compose path of the checkout at `dir`, over the build at `out`. */
async function variant(dir: string): Promise<Variant> {
  const m = (p: string) => import(pathToFileURL(resolve(dir, p)).href);
  const [{ archivesOf }, { styleRasterSource }, { createServerContext }, { cameraFor }, compose, { DecodedTiles }, overlays, params] = await Promise.all(
    ['archives', 'overzoom/upscale', 'serve', 'static-map/camera', 'static-map/compose', 'static-map/decoded-tiles', 'static-map/overlay', 'static-map/params'].map((f) => m(`static-server/${f}.ts`)),
  );
  const ctx = await createServerContext({ out, port: 0, host: '127.0.0.1', auth: false, cors: '', cacheMb: 256, logLevel: 'warn' });
  const entry = ctx.manifest.styles[STYLE];
  const archive = Object.values(entry.archives as Record<string, { scale: number; format: string }>).find((a) => a.scale === 2 && a.format === 'png');
  if (!archive) throw new Error(`${out}: style ${STYLE} has no @2x PNG tiles`);
  const archives = archivesOf(ctx);
  const decoded = new DecodedTiles(64 * 1024 * 1024);
  const requests = views(entry.bounds as BBox, N).map((v) => {
    const { view, size, query } = viewParts(v);
    return params.parseStaticMapRequest(view, size, query, params.DEFAULT_STATIC_MAP_LIMITS);
  });
  return {
    name: dir,
    cpu: [],
    async image(i) {
      const req = requests[i];
      const cam = cameraFor(req, entry.maxzoom);
      const src = styleRasterSource(archives, decoded, entry, archive);
      // Checkouts since the GeoJSON overlays take a list of layers (overlayLayers); earlier ones one SVG.
      const overlay = overlays.overlayLayers ? overlays.overlayLayers(cam, req.paths, req.markers) : overlays.overlaySvg(cam, req.paths, req.markers);
      if (compose.composeImage) return (await compose.composeImage(cam, src, overlay, req.format)).bytes;
      // Checkouts up to aa3559d (the native code): composeBase + encodeImage.
      return compose.encodeImage(await compose.composeBase(cam, src), overlay, req.format);
    },
  };
}

const variants: Variant[] = [];
for (const dir of positionals) variants.push(await variant(dir));
/** The first checkout's images of round 0, which the others' are compared with. */
const firstImages: Buffer[] = [];
for (let round = 0; round < ROUNDS; round++) {
  for (const v of variants) {
    gcMs = gcCount = 0;
    let bytes = 0, same = 0;
    const c = cpuMs();
    for (let i = 0; i < N; i += CONC) {
      const batch = await Promise.all(Array.from({ length: Math.min(CONC, N - i) }, (_, k) => v.image(i + k)));
      batch.forEach((b, k) => {
        bytes += b.length;
        if (round > 0) return;
        if (v === variants[0]) firstImages[i + k] = b;
        else if (b.equals(firstImages[i + k])) same++;
      });
    }
    const ms = (cpuMs() - c) / N;
    if (round > 0) v.cpu.push(ms);
    const identical = round === 0 && v !== variants[0] ? `, ${same} of ${N} images identical to ${variants[0].name}'s` : '';
    console.log(`round ${round} ${v.name}: ${ms.toFixed(1)} CPU ms/image, ${gcCount} GC pauses (${(gcMs / N).toFixed(1)} ms/image wall), ${(bytes / N / 1024).toFixed(1)} KB/image${identical}`);
  }
}
console.log('');
console.log(`| checkout | CPU ms per image (mean of rounds 1-${ROUNDS - 1}, ${CONC} in flight) |`);
console.log('| --- | ---: |');
for (const v of variants) console.log(`| ${v.name} | ${(v.cpu.reduce((a, b) => a + b, 0) / v.cpu.length).toFixed(1)} |`);
process.exit(0);
