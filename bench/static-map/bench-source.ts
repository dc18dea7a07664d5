/**
 * What the in-process static-map benches (profile.ts, profile-geojson.ts, overlay-renderers.ts) share: their options,
 * the CPU clock, the build's server context, the bench style's @2x PNG archive and a raster source over it.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { archivesOf } from '../../static-server/archives.ts';
import { styleRasterSource } from '../../static-server/overzoom/upscale.ts';
import { createServerContext } from '../../static-server/serve.ts';
import type { RasterSource } from '../../static-server/static-map/compose.ts';
import { DecodedTiles } from '../../static-server/static-map/decoded-tiles.ts';
import { buildSample, STYLE } from './sample.ts';

/** `--out BUILD` (default: the bench's z14 build of the sample, built if absent), `--views N` (60), `--rounds R` (5). */
export function benchOptions(): { out: string; views: number; rounds: number } {
  const { values } = parseArgs({ options: { out: { type: 'string' }, views: { type: 'string', default: '60' }, rounds: { type: 'string', default: '5' } } });
  return { out: values.out ? resolve(values.out) : buildSample(14), views: Number(values.views), rounds: Number(values.rounds) };
}

/** CPU ms of this process so far (user + system, all threads: libvips', libuv's and V8's included). */
export function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** The bench style of the build at `out`, and raster sources over its @2x PNG tiles (decoded tiles kept in `decoded`). */
export async function openBench(out: string) {
  const ctx = await createServerContext({ out, port: 0, host: '127.0.0.1', auth: false, cors: '', cacheMb: 256, logLevel: 'warn' });
  const entry = ctx.manifest.styles[STYLE];
  const archive = Object.values(entry.archives).find((a) => a.scale === 2 && a.format === 'png');
  if (!archive) throw new Error(`${out}: style ${STYLE} has no @2x PNG tiles`);
  const archives = archivesOf(ctx);
  return { ctx, entry, source: (decoded: DecodedTiles = new DecodedTiles(256 * 1024 * 1024)): RasterSource => styleRasterSource(archives, decoded, entry, archive) };
}
