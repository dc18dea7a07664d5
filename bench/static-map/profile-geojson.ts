/**
 * Where the CPU of a POSTed GeoJSON static image goes (bench/static-map/run.ts's POSTed case: 640×480
 * @2x, 100 points with sprite icons and a 500-vertex polygon), beside the URL case's whole image, in one
 * process without HTTP: reading the body and checking the GeoJSON, resolving the icons, the map alone,
 * the layers' SVG text, the map with the polygon's SVG, and with the icons too. CPU of the whole process
 * (libvips threads included); three passes, the last one printed (decoded tiles warm).
 *
 *   node --import tsx bench/static-map/profile-geojson.ts [--out BUILD] [--views 60]
 */
import type { BBox } from '../../lib/tile-math.ts';
import { cameraFor } from '../../static-server/static-map/camera.ts';
import { composeImage } from '../../static-server/static-map/compose.ts';
import { DecodedTiles } from '../../static-server/static-map/decoded-tiles.ts';
import { overlayLayers } from '../../static-server/static-map/overlay.ts';
import { DEFAULT_STATIC_MAP_LIMITS, parseStaticMapRequest } from '../../static-server/static-map/params.ts';
import { spriteIconsOf } from '../../static-server/static-map/sprite-icons.ts';
import { benchOptions, cpuMs, openBench } from './bench-source.ts';
import { geojsonViews, STYLE, viewParts, views } from './sample.ts';

const { out, views: N } = benchOptions();
const bench = await openBench(out);
const { entry, ctx } = bench;
const sprites = spriteIconsOf(ctx);
const sheet = await ctx.store.readFile(`${entry.sprite}@2x.json`);
if (!sheet) throw new Error(`${out}: style ${STYLE} has no @2x sprite`);
const posts = geojsonViews(entry.bounds as BBox, N, Object.keys(JSON.parse(Buffer.from(sheet).toString('utf8'))).slice(0, 20));
const gets = views(entry.bounds as BBox, N);
const src = bench.source(new DecodedTiles(1024 * 1024 * 1024));
const total = new Map<string, number>();
const timed = async <T>(name: string, fn: () => Promise<T> | T): Promise<T> => {
  const c = cpuMs();
  const r = await fn();
  total.set(name, (total.get(name) ?? 0) + cpuMs() - c);
  return r;
};

for (let pass = 0; pass < 3; pass++) {
  total.clear();
  for (let i = 0; i < N; i++) {
    const { view, size, query } = viewParts(gets[i]);
    await timed('URL case: the whole image', () => {
      const g = parseStaticMapRequest(view, size, query, DEFAULT_STATIC_MAP_LIMITS);
      const cam = cameraFor(g, entry.maxzoom);
      return composeImage(cam, src, overlayLayers(cam, g.paths, g.markers), 'png');
    });
    const [v, s] = posts[i].path.split('/');
    const req = await timed('POST: JSON.parse and the GeoJSON checked', () => parseStaticMapRequest(v, s, {}, DEFAULT_STATIC_MAP_LIMITS, JSON.parse(posts[i].body)));
    const icons = await timed('POST: icons resolved (cached after the first)', () => sprites.resolve(STYLE, entry, req.scale, req.markers));
    const cam = cameraFor(req, entry.maxzoom);
    await timed('POST: the map alone', () => composeImage(cam, src, [], 'png'));
    const layers = await timed('POST: the layers (SVG text)', () => overlayLayers(cam, req.paths, req.markers, icons));
    await timed('POST: the map and the polygon', () => composeImage(cam, src, layers.slice(0, 1), 'png'));
    await timed('POST: the map, the polygon and the icons', () => composeImage(cam, src, layers, 'png'));
  }
}
console.log(`CPU ms per image, ${N} views (the last of three passes):`);
for (const [k, ms] of total) console.log(`  ${k.padEnd(46)} ${(ms / N).toFixed(1)}`);
process.exit(0);
