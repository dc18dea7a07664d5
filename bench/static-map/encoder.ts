/**
 * The PNG encoder alone on the bench's composed images (640×480 @2x views with their path and marker
 * blended, before encoding): lib/png-fast.ts against sharp/libvips at zlib levels 1 and 3, alternated
 * per image, CPU ms per image (process CPU: libvips threads included; one image at a time) and bytes.
 * Every native output is decoded by sharp and compared with the input pixels.
 *
 *   node --import tsx bench/static-map/encoder.ts [--out BUILD] [--views 60] [--rounds 5]
 *
 * Without `--out` the bench's z14 build of the sample (bench/static-map/sample.ts) is used (built if absent).
 */
import sharp from 'sharp';
import { encodePng, encodePngSync } from '../../lib/png-fast.ts';
import type { BBox } from '../../lib/tile-math.ts';
import { cameraFor } from '../../static-server/static-map/camera.ts';
import { composeBase } from '../../static-server/static-map/compose.ts';
import { drawOverlay } from '../../static-server/static-map/overlay-raster.ts';
import { overlaySvg } from '../../static-server/static-map/overlay.ts';
import { DEFAULT_STATIC_MAP_LIMITS, parseStaticMapRequest } from '../../static-server/static-map/params.ts';
import { benchOptions, cpuMs, openBench } from './bench-source.ts';
import { viewParts, views } from './sample.ts';

const { out, views: N, rounds: ROUNDS } = benchOptions();
const bench = await openBench(out);
const entry = bench.entry;
const source = bench.source();

/** The bench's images as RGBA (straight alpha), as every encoder gets them. */
interface Image {
  rgba: Buffer;
  width: number;
  height: number;
}
const images: Image[] = [];
for (const v of views(entry.bounds as BBox, N)) {
  const { view, size, query } = viewParts(v);
  const req = parseStaticMapRequest(view, size, query, DEFAULT_STATIC_MAP_LIMITS);
  const cam = cameraFor(req, entry.maxzoom);
  const base = await composeBase(cam, source);
  const overlay = overlaySvg(cam, req.paths, req.markers);
  if (overlay) await drawOverlay(base, overlay);
  // Straight alpha, interleaved: the encoders' common input.
  const rgba = Buffer.alloc(base.width * base.height * 4, 255);
  for (let k = 0; k < base.width * base.height; k++) {
    const a = base.alpha ? base.alpha[k] : 255;
    for (let c = 0; c < 3; c++) rgba[4 * k + c] = a === 0 || a === 255 ? base.rgb[3 * k + c] : Math.min(255, (base.rgb[3 * k + c] * 255 + (a >> 1)) / a);
    rgba[4 * k + 3] = a;
  }
  images.push({ rgba, width: base.width, height: base.height });
}

const encoders: Record<string, (img: Image) => Promise<Buffer>> = {
  'sharp level 1': (img) => sharp(img.rgba, { raw: { width: img.width, height: img.height, channels: 4 } }).png({ compressionLevel: 1 }).toBuffer(),
  'sharp level 3': (img) => sharp(img.rgba, { raw: { width: img.width, height: img.height, channels: 4 } }).png({ compressionLevel: 3 }).toBuffer(),
  'png-fast (async)': (img) => encodePng(img.rgba, img.width, img.height, 4),
  'png-fast (sync)': async (img) => encodePngSync(img.rgba, img.width, img.height, 4),
};
const cpu: Record<string, number[]> = {};
const bytes: Record<string, number> = {};
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, encode] of Object.entries(encoders)) {
    let b = 0;
    const c = cpuMs();
    for (const img of images) b += (await encode(img)).length;
    if (round > 0) (cpu[name] ??= []).push((cpuMs() - c) / images.length);
    bytes[name] = b / images.length;
  }
}
for (const img of images) {
  const png = await encodePng(img.rgba, img.width, img.height, 4);
  const { data } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  if (!data.equals(img.rgba)) throw new Error('png-fast: decoded pixels differ from the input');
}
console.log(`${images.length} images ${images[0].width}×${images[0].height}, ${ROUNDS - 1} rounds after a warm-up; every png-fast output decodes to its input`);
console.log('| encoder | CPU ms per image (each round) | mean | KB per image |');
console.log('| --- | --- | ---: | ---: |');
for (const name of Object.keys(encoders)) {
  const r = cpu[name];
  console.log(`| ${name} | ${r.map((x) => x.toFixed(1)).join(', ')} | ${(r.reduce((a, x) => a + x, 0) / r.length).toFixed(1)} | ${(bytes[name] / 1024).toFixed(0)} |`);
}
process.exit(0);
