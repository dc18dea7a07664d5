/**
 * Write the bench's composed images as the server hands them to the PNG encoder (premultiplied RGB
 * plane, alpha plane, size) for bench/static-map/encoder-harness.c, which times the encoder in C alone:
 * `<dir>/<i>.rgb`, `<i>.a` (absent when opaque), `<i>.json` ({"w","h"}).
 *
 *   node --import tsx bench/static-map/dump-images.ts [--out BUILD] [--views 60] [--dir /tmp/enc]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { BBox } from '../../lib/tile-math.ts';
import { cameraFor } from '../../static-server/static-map/camera.ts';
import { composeBase } from '../../static-server/static-map/compose.ts';
import { drawOverlay } from '../../static-server/static-map/overlay-raster.ts';
import { overlaySvg } from '../../static-server/static-map/overlay.ts';
import { DEFAULT_STATIC_MAP_LIMITS, parseStaticMapRequest } from '../../static-server/static-map/params.ts';
import { openBench } from './bench-source.ts';
import { buildSample, viewParts, views } from './sample.ts';

const { values: args } = parseArgs({ options: { out: { type: 'string' }, views: { type: 'string', default: '60' }, dir: { type: 'string', default: '/tmp/enc' } } });
const bench = await openBench(args.out ?? buildSample(14));
const source = bench.source();
mkdirSync(args.dir!, { recursive: true });
let i = 0;
for (const v of views(bench.entry.bounds as BBox, Number(args.views))) {
  const { view, size, query } = viewParts(v);
  const req = parseStaticMapRequest(view, size, query, DEFAULT_STATIC_MAP_LIMITS);
  const cam = cameraFor(req, bench.entry.maxzoom);
  const base = await composeBase(cam, source);
  const overlay = overlaySvg(cam, req.paths, req.markers);
  if (overlay) await drawOverlay(base, overlay);
  writeFileSync(`${args.dir}/${i}.rgb`, base.rgb);
  if (base.alpha) writeFileSync(`${args.dir}/${i}.a`, base.alpha);
  writeFileSync(`${args.dir}/${i}.json`, JSON.stringify({ w: base.width, h: base.height }));
  i++;
}
console.log(`${i} images in ${args.dir}`);
