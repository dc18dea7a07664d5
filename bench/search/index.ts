/**
 * One search index build (pipeline/search/build.ts) in its own process, for bench/search/run.ts:
 * prints one JSON line (seconds inside the process, CPU of the process and the osmium runs it waited
 * for, entries, bytes).
 *
 *   node --import tsx bench/search/index.ts IN.osm.pbf OUT.sqlite
 */
import { dirname, join } from 'node:path';
import { DEFAULT_LANGUAGES } from '../../lib/languages.ts';
import { buildSearchIndex } from '../../pipeline/search/build.ts';
import { ownCpuSeconds } from '../../test/fixtures/measure.ts';

process.env.TILEBAKE_QUIET = '1';
const [input, output] = process.argv.slice(2);
const t0 = performance.now();
const r = await buildSearchIndex(input, output, { languages: DEFAULT_LANGUAGES, workDir: join(dirname(output), '.work-search'), label: 'bench' });
console.log(JSON.stringify({ seconds: (performance.now() - t0) / 1000, cpu: ownCpuSeconds(), entries: r.entries, bytes: r.bytes, steps: r.steps }));
