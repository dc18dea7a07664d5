/**
 * Measurement (not a test): what an OSM tileset's `languages` cost in archive bytes. Each extract's
 * vector stage (packVectorTiles, z0–14) with no `name:xx` at all, with the five languages the profile
 * wrote before `languages` existed (en, de, fr, it, es) and with the default, OpenMapTiles' 80
 * (lib/languages.ts). Bytes do not depend on load: one run each.
 *
 *   node --import tsx bench/languages/run.ts [--input a.osm.pbf …]
 *
 * Default inputs: Liechtenstein (data/liechtenstein) and Belize (/work/shared/data/regions, when there).
 * Prints the table and writes bench/languages/RESULTS.md.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_LANGUAGES } from '../../lib/languages.ts';
import { packVectorTiles } from '../../pipeline/vector/stage.ts';
import { writeResults } from '../results.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const DEFAULT_INPUTS = [join(ROOT, 'data/liechtenstein/liechtenstein-latest.osm.pbf'), '/work/shared/data/regions/belize-2015-08-23.osm.pbf'];
const { values } = parseArgs({ options: { input: { type: 'string', multiple: true } } });
const inputs = (values.input ?? DEFAULT_INPUTS).map((p) => resolve(p)).filter(existsSync);
const WORK = join(ROOT, 'build', 'bench-languages');
const LISTS: [string, readonly string[]][] = [
  ['none', []],
  ['en, de, fr, it, es (before)', ['en', 'de', 'fr', 'it', 'es']],
  [`OpenMapTiles' ${DEFAULT_LANGUAGES.length} (default)`, DEFAULT_LANGUAGES],
];
const KB = 1024;

process.env.TILEBAKE_QUIET = '1';
mkdirSync(WORK, { recursive: true });
const rows: string[] = [];
for (const input of inputs) {
  let none = 0;
  for (const [label, languages] of LISTS) {
    const out = join(WORK, `${basename(input, '.osm.pbf')}-${languages.length}.pmtiles`);
    rmSync(out, { force: true });
    const r = await packVectorTiles(input, out, { languages });
    if (languages.length === 0) none = r.bytes;
    rows.push(`| ${basename(input)} | ${label} | ${r.tiles.toLocaleString('en')} | ${Math.round(r.bytes / KB).toLocaleString('en')} KiB | ${(r.bytes / none).toFixed(3)}× |`);
    console.log(rows[rows.length - 1]);
    rmSync(out, { force: true });
  }
}
const table = ['| extract | `languages` | tiles | archive | vs none |', '|---|---|---|---|---|', ...rows].join('\n');
const text = `# Archive size by \`languages\` (bench/languages/run.ts)

Measured ${new Date().toISOString().slice(0, 10)}: the vector stage (z0–14, gzip MVT in PMTiles) of each
extract with no \`name:xx\`, the five languages written before \`languages\` existed, and the default list.
\`name\`, \`name_en\`, \`name_de\`, \`name_int\`, \`name:latin\` and \`name:nonlatin\` are written in every case.

${table}
`;
writeResults(join(import.meta.dirname, 'RESULTS.md'), text);
console.log(`\n${table}`);
