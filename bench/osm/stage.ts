/**
 * One run of tilebake's vector stage on an OSM extract, in its own process (bench/osm/run.ts and
 * bench/region/vector.ts sample its memory): prints one JSON line (seconds, CPU with the children it waited for, phases, tiles, bytes).
 *
 *   node --import tsx bench/osm/stage.ts IN.osm.pbf OUT.pmtiles [--extract-only] [--world-maxzoom N|false] [--world-cache DIR]
 *
 * `--extract-only`: the extract's own tiles, without the sea and Natural Earth (the baseline of what
 * those cost); `--world-cache DIR`: where the world's z0–6 is cached (default: beside OUT, `.work/world`).
 */
import { parseArgs } from 'node:util';
import { WORLD_CACHE_ENV } from '../../pipeline/osm/world.ts';
import { packVectorTiles } from '../../pipeline/vector/stage.ts';
import { ownCpuSeconds } from '../../test/fixtures/measure.ts';

process.env.TILEBAKE_QUIET = '1';
const { values, positionals } = parseArgs({ allowPositionals: true, options: { 'extract-only': { type: 'boolean', default: false }, 'world-maxzoom': { type: 'string' }, 'world-cache': { type: 'string' } } });
const [input, output] = positionals;
if (values['world-cache']) process.env[WORLD_CACHE_ENV] = values['world-cache'];
const wm = values['world-maxzoom'];
const t0 = performance.now();
const r = await packVectorTiles(input, output, { extractOnly: values['extract-only'], ...(wm !== undefined ? { worldMaxzoom: wm === 'false' ? false : Number(wm) } : {}) });
const seconds = (performance.now() - t0) / 1000;
console.log(JSON.stringify({ seconds, cpu: ownCpuSeconds(), phases: r.phases, tiles: r.tiles, bytes: r.bytes }));
