/**
 * One run of tilebake's vector stage on an OSM extract, in its own process (bench/osm/run.ts samples
 * its memory): `node --import tsx bench/osm/stage.ts IN.osm.pbf OUT.pmtiles` prints one JSON line.
 */
import { packVectorTiles } from '../../pipeline/vector.ts';

process.env.TILEBAKE_QUIET = '1';
const [input, output] = process.argv.slice(2);
const t0 = performance.now();
const r = await packVectorTiles(input, output);
const seconds = (performance.now() - t0) / 1000;
console.log(JSON.stringify({ seconds, phases: r.phases, tiles: r.tiles, bytes: r.bytes }));
