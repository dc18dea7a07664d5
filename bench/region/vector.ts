/**
 * Region benchmark, vector stage (not a test): what the sea, the ocean around an extract and the
 * world's z0–6 cost, against the same extract's vector stage without them, side by side in one run.
 * Belize (a long coast, a barrier reef and cays: mostly sea) and Porto (a coastal city region).
 *
 *   node --import tsx bench/region/vector.ts [--rounds 3] [--world-rounds 2] [--regions belize,porto] [--dir DIR]
 *
 * Each round runs, per region, the whole vector stage (bench/osm/stage.ts in its own process: the
 * extract's tilemaker run, the sea step, the ocean's cut and coastal tiles, the world's tiles from
 * the cache, the merge and the PMTiles writer) and then the same with `--extract-only` (the extract's
 * own tiles, re-encoded and packed the same way: the baseline). The ratio is taken within each round and
 * the round with the median ratio is shown, with its parts. Then `--world-rounds` pairs of a first build
 * (an empty world cache: the world's z0–6 is built) and a build with the cache, of the smaller region.
 * Targets: stage ≤ 1.25 × baseline per region; the world adds ≤ 60 s to a first build.
 * Writes bench/region/RESULTS-vector.md.
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { runSampled } from '../command.ts';
import { writeResults } from '../results.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, 'world-rounds': { type: 'string', default: '2' }, regions: { type: 'string', default: 'belize,porto' }, dir: { type: 'string' } } });
const ROUNDS = Math.max(1, Number(values.rounds));
const WORLD_ROUNDS = Math.max(0, Number(values['world-rounds']));
const FILES: Record<string, string> = { belize: 'belize-2015-08-23.osm.pbf', porto: 'porto-2015-06-06.osm.pbf' };
const REGIONS = values.regions.split(',').map((r) => r.trim()).filter(Boolean);
const WORK = join(ROOT, 'build', 'bench-region-vector');
const WORLD = join(WORK, 'world');
const TARGET_RATIO = 1.25;
const TARGET_WORLD_S = 60;
/** GNU time (Debian's `time` package): the CPU of the stage's process tree. */
const GNU_TIME = '/usr/bin/time';

/** A region's extract: --dir, else the shared sample data beside the checkout (or beside /work/main). */
function extract(region: string): string {
  const name = FILES[region];
  if (!name) throw new Error(`bench/region/vector: unknown region ${region} (expected ${Object.keys(FILES).join(', ')})`);
  const dirs = values.dir ? [resolve(values.dir)] : [join(ROOT, '..', 'shared', 'data', 'regions'), join(ROOT, '..', '..', 'shared', 'data', 'regions')];
  const found = dirs.map((d) => join(d, name)).find((p) => existsSync(p));
  if (!found) throw new Error(`bench/region/vector: ${name} is not in ${dirs.join(' or ')} (pass --dir)`);
  return found;
}

interface Run {
  seconds: number;
  /** CPU seconds (user + system) of the stage's process and the children it waited for (tilemaker, osmium), from GNU time. */
  cpu: number;
  phases: { name: string; seconds: number }[];
  tiles: number;
  bytes: number;
  peakMb: number;
}

const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/** One vector stage in its own process (under GNU time, for its CPU). */
async function stage(region: string, args: string[], cache = WORLD): Promise<Run> {
  const out = join(WORK, `${region}.pmtiles`);
  const times = join(WORK, 'time.txt');
  rmSync(out, { force: true });
  const r = await runSampled(GNU_TIME, ['-f', '%U %S', '-o', times, process.execPath, '--import', 'tsx', join(ROOT, 'bench/osm/stage.ts'), extract(region), out, '--world-cache', cache, ...args]);
  const j = JSON.parse(r.stdout.trim().split('\n').pop()!) as Omit<Run, 'peakMb' | 'cpu'>;
  const [user, sys] = readFileSync(times, 'utf8').trim().split('\n').pop()!.split(' ').map(Number);
  return { ...j, cpu: user + sys, peakMb: r.peakMb };
}

const phase = (r: Run, name: string) => r.phases.filter((p) => p.name === name || p.name.startsWith(`${name} (`)).reduce((s, p) => s + p.seconds, 0);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const f1 = (x: number) => x.toFixed(1);

mkdirSync(WORK, { recursive: true });
const loadStart = load();
// The world, built once before the rounds (timed below in the world rounds).
await stage(REGIONS[REGIONS.length - 1], []);

const rows: string[] = [];
const verdicts: string[] = [];
for (const region of REGIONS) {
  const full: Run[] = [];
  const off: Run[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    full.push(await stage(region, []));
    off.push(await stage(region, ['--extract-only']));
    console.log(`${region} round ${i + 1}: stage ${f1(full[i].seconds)} s (CPU ${f1(full[i].cpu)} s), extract only ${f1(off[i].seconds)} s (CPU ${f1(off[i].cpu)} s) (load ${load()})`);
  }
  const ratios = full.map((r, i) => r.seconds / off[i].seconds);
  const cpuRatios = full.map((r, i) => r.cpu / off[i].cpu);
  const mid = ratios.map((r, i) => [r, i] as const).sort((a, b) => a[0] - b[0])[Math.floor(ROUNDS / 2)][1];
  const [s, b] = [full[mid], off[mid]];
  rows.push(
    `| ${region} | stage | ${f1(s.seconds)} | ${f1(s.cpu)} | ${f1(phase(s, 'tilemaker'))} | ${f1(phase(s, 'sea'))} | ${f1(phase(s, 'ocean'))} | ${f1(phase(s, 'world'))} | ${f1(phase(s, 'pack'))} | ${s.tiles} | ${Math.round(s.peakMb)} | **${ratios[mid].toFixed(2)}×** | ${cpuRatios[mid].toFixed(2)}× |`,
    `| ${region} | extract only | ${f1(b.seconds)} | ${f1(b.cpu)} | ${f1(phase(b, 'tilemaker'))} | | | | ${f1(phase(b, 'pack'))} | ${b.tiles} | ${Math.round(b.peakMb)} | 1.00× | 1.00× |`,
  );
  verdicts.push(`- ${region}: ${ratios[mid].toFixed(2)}× the extract alone (target ≤ ${TARGET_RATIO}×: ${ratios[mid] <= TARGET_RATIO ? 'met' : 'NOT met'}); ratios of the rounds ${ratios.map((r) => r.toFixed(2)).join(', ')}, of their CPU ${cpuRatios.map((r) => r.toFixed(2)).join(', ')} (stage ${full.map((r) => f1(r.seconds)).join(', ')} s; extract only ${off.map((r) => f1(r.seconds)).join(', ')} s).`);
}

// The world's first build: an empty cache against the cache, alternated, on the last region.
const worldRows: string[] = [];
const added: number[] = [];
const region = REGIONS[REGIONS.length - 1];
for (let i = 0; i < WORLD_ROUNDS; i++) {
  const cold = join(WORK, `world-cold-${i}`);
  rmSync(cold, { recursive: true, force: true });
  const first = await stage(region, [], cold);
  const warm = await stage(region, []);
  rmSync(cold, { recursive: true, force: true });
  added.push(first.seconds - warm.seconds);
  worldRows.push(`| ${i + 1} | ${f1(first.seconds)} | ${f1(phase(first, 'world'))} | ${f1(warm.seconds)} | ${f1(first.seconds - warm.seconds)} | ${f1(first.cpu - warm.cpu)} | ${Math.round(first.peakMb)} |`);
  console.log(`world round ${i + 1}: first build ${f1(first.seconds)} s (world ${f1(phase(first, 'world'))} s, CPU ${f1(first.cpu)} s), with the cache ${f1(warm.seconds)} s (CPU ${f1(warm.cpu)} s) (load ${load()})`);
}
if (added.length) verdicts.push(`- The world's z0–6 adds ${f1(median(added))} s to the first build of ${region} (median of ${added.length}; target ≤ ${TARGET_WORLD_S} s: ${median(added) <= TARGET_WORLD_S ? 'met' : 'NOT met'}).`);

const [cpu] = cpus();
const md = `# Region benchmark: the vector stage

\`node --import tsx bench/region/vector.ts --rounds ${ROUNDS} --world-rounds ${WORLD_ROUNDS}\` — ${new Date().toISOString().slice(0, 10)}, ${availableParallelism()} cores (${cpu?.model.trim()}), ${Math.round(totalmem() / 1024 ** 3)} GB.
Load average at the start ${loadStart}, at the end ${load()} (other jobs share the machine: the ratios, taken within a round, are what counts).

Each round: the whole vector stage (bench/osm/stage.ts in its own process, Node start-up excluded), then
the same extract with the sea and Natural Earth left out (\`extractOnly\`: its own tiles, re-encoded and
packed the same way). The round with the median ratio is shown. The parts overlap (the extract's
tilemaker run, the sea and ocean, and the world run at once), so they do not add up to the stage: "extract run"
is tilemaker on the extract; "sea" the coastline's polygons (osmium); "ocean" the sea joined with
Natural Earth's 10 m ocean around the box, cut into tiles and the coastal tiles written (GEOS, lib/mvt.ts);
"world" the world's z0–6 (from the cache); "merge + pack" the canonical re-encoding of every tile and
the PMTiles writer. CPU: user + system seconds of the stage's process and its children (GNU time),
which a loaded machine does not inflate as it does the wall time. Peak RSS: the stage's process and
its children (tilemaker, osmium).

| region | run | stage (s) | CPU (s) | extract run (s) | sea (s) | ocean (s) | world (s) | merge + pack (s) | tiles | peak RSS (MB) | ÷ extract only | CPU ÷ extract only |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}

${WORLD_ROUNDS ? `The world's first build (${region}, an empty world cache against the cache, alternated):

| round | first build (s) | of which the world (s) | with the cache (s) | added (s) | added CPU (s) | peak RSS (MB) |
|---|---:|---:|---:|---:|---:|---:|
${worldRows.join('\n')}
` : ''}
${verdicts.join('\n')}
`;
writeResults(join(import.meta.dirname, 'RESULTS-vector.md'), md);
console.log(md);
