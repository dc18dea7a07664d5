/**
 * Benchmark (not a test): an OpenStreetMap extract to a PMTiles archive, z0–14. tilebake's whole vector
 * stage (header, sea, tilemaker, canonical re-encoding, PMTiles packing; bench/osm/stage.ts in its own
 * process) against the bare generator in the same run: Debian's tilemaker with the same profile and
 * config writing MBTiles. The two alternate (A B A B …); the round with the median ratio is reported.
 *
 *   node --import tsx bench/osm/run.ts [--rounds 3] [--input data/liechtenstein/liechtenstein-latest.osm.pbf]
 *
 * Prints the table and writes bench/osm/RESULTS.md. Target: stage ≤ 1.25 × bare generator.
 */
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, totalmem } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { readOsmHeader } from '../../pipeline/osm/pbf-header.ts';
import { PROFILE_PROCESS, runConfig } from '../../pipeline/osm/tilemaker.ts';
import { findTool, TILEMAKER } from '../../pipeline/osm/tools.ts';
import { tileBox } from '../../pipeline/osm/source.ts';
import { runSampled } from '../command.ts';
import { writeResults } from '../results.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, input: { type: 'string' } } });
const ROUNDS = Math.max(1, Number(values.rounds));
const INPUT = resolve(values.input ?? join(ROOT, 'data/liechtenstein/liechtenstein-latest.osm.pbf'));
const WORK = join(ROOT, 'build', 'bench-osm');
const TARGET = 1.25;
const MB = 1024 * 1024;
const MS_PER_S = 1000;

interface Run {
  seconds: number;
  /** tilemaker's share of the stage (the stage only). */
  generatorSeconds?: number;
  peakMb: number;
  tiles: number;
  bytes: number;
}

/** tilebake's vector stage: the whole of packVectorTiles, timed inside its process (no Node start-up). */
async function stage(out: string): Promise<Run> {
  rmSync(out, { force: true });
  const r = await runSampled(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/osm/stage.ts'), INPUT, out]);
  const j = JSON.parse(r.stdout.trim().split('\n').pop()!) as { seconds: number; phases: { name: string; seconds: number }[]; tiles: number; bytes: number };
  return { seconds: j.seconds, generatorSeconds: j.phases.find((p) => p.name === 'tilemaker')?.seconds, peakMb: r.peakMb, tiles: j.tiles, bytes: j.bytes };
}

/** The bare generator: tilemaker with the stage's own config and profile, writing MBTiles. */
async function bare(tilemaker: string, config: string, out: string): Promise<Run> {
  rmSync(out, { force: true });
  const r = await runSampled(tilemaker, ['--input', INPUT, '--output', out, '--config', config, '--process', PROFILE_PROCESS]);
  const db = new Database(out, { readonly: true });
  const tiles = (db.prepare('SELECT COUNT(*) AS n FROM tiles').get() as { n: number }).n;
  db.close();
  return { seconds: r.seconds, peakMb: r.peakMb, tiles, bytes: statSync(out).size };
}


mkdirSync(WORK, { recursive: true });
const tilemaker = await findTool(TILEMAKER);
const header = await readOsmHeader(INPUT);
if (!header.bbox) throw new Error(`${INPUT}: no header bbox (the bench needs one to give tilemaker the stage's config)`);
// Liechtenstein is inland: no sea layer, so the bare run's config is exactly the stage's.
const config = join(WORK, 'tilemaker.json');
writeFileSync(config, JSON.stringify(await runConfig({ box: tileBox(header.bbox) }), null, 2));

const stageRuns: Run[] = [];
const bareRuns: Run[] = [];
for (let i = 0; i < ROUNDS; i++) {
  stageRuns.push(await stage(join(WORK, 'stage.pmtiles')));
  bareRuns.push(await bare(tilemaker, config, join(WORK, 'bare.mbtiles')));
  const s = stageRuns[i];
  const b = bareRuns[i];
  console.log(`round ${i + 1}: stage ${s.seconds.toFixed(2)} s (tilemaker ${s.generatorSeconds?.toFixed(2)} s), bare tilemaker ${b.seconds.toFixed(2)} s`);
}
// On a shared machine the speed drifts between rounds: the ratio is taken within each round (stage and
// bare generator run back to back) and the round with the median ratio is reported.
const ratios = stageRuns.map((r, i) => r.seconds / bareRuns[i].seconds);
const mid = ratios.map((r, i) => [r, i] as const).sort((x, y) => x[0] - y[0])[Math.floor(ROUNDS / 2)][1];
const s = stageRuns[mid];
const b = bareRuns[mid];
const ratio = ratios[mid];
const [cpu] = cpus();
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const table = `| run | time (s) | generator (s) | generator share | peak RSS (MB) | tiles | bytes | ÷ bare tilemaker |
|---|---:|---:|---:|---:|---:|---:|---:|
| tilebake vector stage → PMTiles | ${s.seconds.toFixed(2)} | ${s.generatorSeconds?.toFixed(2) ?? '?'} | ${s.generatorSeconds ? `${Math.round((s.generatorSeconds / s.seconds) * 100)} %` : '?'} | ${Math.round(s.peakMb)} | ${s.tiles} | ${s.bytes} | **${ratio.toFixed(2)}×** (target ≤ ${TARGET}× ${ratio <= TARGET ? '✔' : '✘'}) |
| bare \`tilemaker\` → MBTiles | ${b.seconds.toFixed(2)} | ${b.seconds.toFixed(2)} | 100 % | ${Math.round(b.peakMb)} | ${b.tiles} | ${b.bytes} | 1.00× |`;
const results = `# bench/osm results

${new Date().toISOString().slice(0, 10)}, ${availableParallelism()} cores (${cpu?.model.trim()}), ${Math.round(totalmem() / 1024 ** 3)} GB, load average at the end ${load}.
Input \`${basename(INPUT)}\` (${(statSync(INPUT).size / MB).toFixed(1)} MB), z0–14. ${ROUNDS} round(s), each the stage then the bare generator;
the round with the median ratio is shown. Ratios of the rounds: ${ratios.map((r) => r.toFixed(2)).join(', ')}
(stage ${stageRuns.map((r) => r.seconds.toFixed(1)).join(', ')} s; bare ${bareRuns.map((r) => r.seconds.toFixed(1)).join(', ')} s).
The stage runs in its own Node process and is timed inside it (Node start-up excluded, as in \`tilebake build\`'s stage line);
the bare generator is timed from spawn to exit. Peak RSS = the process and its children (tilemaker, osmium), sampled every 100 ms.

${table}
`;
console.log(`\n${table}`);
writeResults(join(ROOT, 'bench/osm/RESULTS.md'), results);
