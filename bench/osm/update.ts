/**
 * Benchmark (not a test): what the world's z0–6 adds to a nightly update's vector stage. Liechtenstein's
 * Geofabrik extract of 2019-11-18 (sequence 2434) and its real daily 2435 (test/fixtures/osm-replication):
 * the vector stage of the update (only the tiles the change can change generated, the others copied from
 * the previous archive: pipeline/vector/patch.ts) with the world (`world_maxzoom` 6, the default: 5,461
 * tiles more to copy, the changed low-zoom tiles merged with the cached world's) and without it
 * (`world_maxzoom: false`), alternated. The world cache is built before the rounds.
 *
 *   node --import tsx bench/osm/update.ts [--rounds 5]
 *
 * Target: the world adds ≤ 1 s. Writes bench/osm/RESULTS-update.md.
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parseConfig } from '../../pipeline/config/index.ts';
import { runVectorStage } from '../../pipeline/vector/stage.ts';
import { fixtureFile, LIECHTENSTEIN, referenceExtract } from '../../test/update-helpers.ts';
import { writeResults } from '../results.ts';

process.env.TILEBAKE_QUIET = '1';
const ROOT = resolve(import.meta.dirname, '..', '..');
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' } } });
const ROUNDS = Math.max(1, Number(values.rounds));
const WORK = join(ROOT, 'build', 'bench-osm-update');
const TARGET_S = 1;
const MS_PER_S = 1000;
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const CLOCK_TICKS = 100;
/** CPU seconds of this process and the children it has waited for (tilemaker, osmium): /proc/self/stat's utime, stime, cutime, cstime. */
const cpuSeconds = () => readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ').slice(11, 15).reduce((a, b) => a + Number(b), 0) / CLOCK_TICKS;

const config = (source: string, world: 6 | false) =>
  parseConfig({ out: WORK, tilesets: { omt: { source, world_maxzoom: world } } }, join(WORK, 'bench.json'));

rmSync(WORK, { recursive: true, force: true });
mkdirSync(WORK, { recursive: true });
process.env.TILEBAKE_WORLD_CACHE = join(WORK, 'world');
const loadStart = load();
const before = LIECHTENSTEIN.extract;
const after = await referenceExtract(LIECHTENSTEIN, 2434, 2435, join(WORK, '2435.osm.pbf'));
const changes = [fixtureFile(LIECHTENSTEIN, 2435, 'osc.gz')];
const variants = [6, false] as const;
// The previous versions (full builds of 2434), one per variant; the first builds the world cache.
for (const w of variants) await runVectorStage(config(before, w), join(WORK, `prev-${w}`));

const times = new Map<6 | false, number[]>(variants.map((w) => [w, []]));
const cpuTimes = new Map<6 | false, number[]>(variants.map((w) => [w, []]));
const tiles = new Map<6 | false, number>();
for (let i = 0; i < ROUNDS; i++) {
  for (const w of variants) {
    const out = join(WORK, `night-${w}`);
    rmSync(out, { recursive: true, force: true });
    const [t0, c0] = [performance.now(), cpuSeconds()];
    const r = await runVectorStage(config(after, w), out, { previous: join(WORK, `prev-${w}`), workDir: join(WORK, `.work-${w}`), patches: { omt: { previous: before, changes } } });
    times.get(w)!.push((performance.now() - t0) / MS_PER_S);
    cpuTimes.get(w)!.push(cpuSeconds() - c0);
    tiles.set(w, r.tiles);
  }
  console.log(`round ${i + 1}: with the world ${times.get(6)![i].toFixed(2)} s (CPU ${cpuTimes.get(6)![i].toFixed(2)} s), without ${times.get(false)![i].toFixed(2)} s (CPU ${cpuTimes.get(false)![i].toFixed(2)} s) (load ${load()})`);
}
const added = times.get(6)!.map((t, i) => t - times.get(false)![i]);
const addedCpu = cpuTimes.get(6)!.map((t, i) => t - cpuTimes.get(false)![i]);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const [cpu] = cpus();
const md = `# bench/osm: what the world adds to a nightly update

\`node --import tsx bench/osm/update.ts --rounds ${ROUNDS}\` — ${new Date().toISOString().slice(0, 10)}, ${availableParallelism()} cores (${cpu?.model.trim()}),
load average at the start ${loadStart}, at the end ${load()}.

The vector stage of the update of Liechtenstein (2019-11-18, sequence 2434) with the real daily 2435:
only the tiles the change can change generated, the others copied from the previous archive. With the
world (\`world_maxzoom\` 6, the default) and without (\`world_maxzoom: false\`), alternated within each round.

| | with the world | without | the world adds |
|---|---:|---:|---:|
| rounds (s) | ${times.get(6)!.map((t) => t.toFixed(2)).join(', ')} | ${times.get(false)!.map((t) => t.toFixed(2)).join(', ')} | ${added.map((t) => t.toFixed(2)).join(', ')} |
| median (s) | ${median(times.get(6)!).toFixed(2)} | ${median(times.get(false)!).toFixed(2)} | **${median(added).toFixed(2)}** |
| CPU, rounds (s) | ${cpuTimes.get(6)!.map((t) => t.toFixed(2)).join(', ')} | ${cpuTimes.get(false)!.map((t) => t.toFixed(2)).join(', ')} | ${addedCpu.map((t) => t.toFixed(2)).join(', ')} |
| CPU, median (s) | ${median(cpuTimes.get(6)!).toFixed(2)} | ${median(cpuTimes.get(false)!).toFixed(2)} | **${median(addedCpu).toFixed(2)}** |
| tiles in the archive | ${tiles.get(6)} | ${tiles.get(false)} | |

CPU: user + system seconds of this process and the children it waited for (tilemaker, osmium), which
a loaded machine does not inflate as it does the wall time.

The world adds ${median(added).toFixed(2)} s wall, ${median(addedCpu).toFixed(2)} CPU s to a nightly update (medians of ${ROUNDS} rounds; target ≤ ${TARGET_S} s: ${median(added) <= TARGET_S ? 'met' : 'NOT met'} by the wall time, ${median(addedCpu) <= TARGET_S ? 'met' : 'NOT met'} by the CPU).
`;
writeResults(join(import.meta.dirname, 'RESULTS-update.md'), md);
console.log(md);
