/**
 * Benchmark (not a test): what the V8 code cache for packages' CommonJS modules (lib/code-cache.mjs)
 * saves a command's start, in alternated rounds of these variants:
 *
 * - `off`: TILEBAKE_CODE_CACHE=off, Node's own loader;
 * - `warm`: a cache folder written by an earlier run (the usual case after the first command);
 * - `cold`: an empty cache folder each run (the first command after an install: it writes the cache).
 *
 * Jobs (`--jobs`): `one`, `tilebake build` of one metatile (the Monaco sample, osm-bright z0, 1x PNG,
 * one render worker: docs/distributed.md "Where a shard's CPU goes"); `shard`, shard 0 of 4 of
 * bench/distributed's job (Liechtenstein, osm-bright + positron, z0–14, 1x + @2x, PNG + JPEG, planned
 * once, `SLURM_CPUS_PER_TASK=1`: one browser); `help`, `tilebake --help`.
 *
 *   node --import tsx bench/code-cache/run.ts [--rounds 6] [--jobs one,shard] [--variants off,warm,cold]
 *
 * CPU seconds: the command's whole process tree from a cpuacct cgroup (bench/command.ts), and Node's
 * share: the tree less Chromium's, which joins a child cgroup through a wrapper (TILEBAKE_CHROMIUM).
 * Needs root and cgroup v1 (as bench/distributed). Tiles are compared with the first run's.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CHROMIUM_PATH } from '../../workers/chromium-process.ts';
import { CPUACCT, cpuacctSeconds, runCommand } from '../command.ts';
import { tileHashes } from '../tile-hashes.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'bin/tilebake.js');
const SAMPLE = join(ROOT, 'data/sample');
const WORK = join(ROOT, 'build', 'bench-code-cache');
const WARM = join(WORK, 'cache-warm');

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '6' },
    jobs: { type: 'string', default: 'one,shard' },
    variants: { type: 'string', default: 'off,warm,cold' },
  },
});
const ROUNDS = Number(values.rounds);
const JOBS = values.jobs!.split(',');
const VARIANTS = values.variants!.split(',');
for (const j of JOBS) if (!['one', 'shard', 'help'].includes(j)) throw new Error(`unknown job ${j}`);
for (const v of VARIANTS) if (!['off', 'warm', 'cold'].includes(v)) throw new Error(`unknown variant ${v}`);

interface Run {
  total: number;
  node: number;
  wall: number;
}

/** The command of a job, and the folder its tiles are written to. */
function job(name: string, scratch: string): { args: string[]; env: Record<string, string>; out?: string } {
  if (name === 'help') return { args: ['--help'], env: {} };
  if (name === 'one') {
    const out = join(WORK, 'one-out');
    rmSync(out, { recursive: true, force: true });
    return { args: ['build', '--config', join(WORK, 'one.json'), '--out', out, '--workers', '1'], env: {}, out };
  }
  rmSync(join(WORK, 'run', 'shards', '0'), { recursive: true, force: true });
  return { args: ['shard', '--run', join(WORK, 'run'), '--index', '0', '--scratch', scratch], env: { SLURM_CPUS_PER_TASK: '1' }, out: join(WORK, 'run', 'shards', '0') };
}

let seq = 0;
async function runOnce(name: string, variant: string): Promise<Run> {
  const id = `${process.pid}-${seq++}`;
  const outer = join(CPUACCT, `tilebake-code-cache-${id}`);
  const inner = join(outer, 'chromium');
  mkdirSync(inner, { recursive: true });
  const scratch = join(WORK, `scratch-${id}`);
  const cold = join(WORK, `cache-cold-${id}`);
  const cache = variant === 'off' ? 'off' : variant === 'warm' ? WARM : cold;
  const j = job(name, scratch);
  const env = { ...process.env, TILEBAKE_QUIET: '1', TILEBAKE_CODE_CACHE: cache, TILEBAKE_CHROMIUM: join(WORK, 'chromium.sh'), TILEBAKE_BENCH_CG: inner, ...j.env };
  const t0 = performance.now();
  await runCommand('/bin/bash', ['-c', `echo $$ > ${outer}/tasks && exec "$0" "$@"`, process.execPath, CLI, ...j.args], env);
  const wall = (performance.now() - t0) / 1000;
  for (let k = 0; k < 100 && readFileSync(join(inner, 'tasks'), 'utf8').trim(); k++) await new Promise((r) => setTimeout(r, 50));
  const chromium = cpuacctSeconds(inner);
  const total = cpuacctSeconds(outer);
  rmdirSync(inner);
  rmdirSync(outer);
  rmSync(scratch, { recursive: true, force: true });
  rmSync(cold, { recursive: true, force: true });
  return { total, node: total - chromium, wall };
}

const median = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function main(): Promise<void> {
  if (!existsSync(CPUACCT)) throw new Error(`${CPUACCT} missing: needs cgroup v1 cpuacct`);
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  writeFileSync(join(WORK, 'chromium.sh'), `#!/bin/bash\n[ -n "$TILEBAKE_BENCH_CG" ] && echo $$ > "$TILEBAKE_BENCH_CG/tasks"\nexec '${CHROMIUM_PATH}' "$@"\n`);
  chmodSync(join(WORK, 'chromium.sh'), 0o755);
  const style = (id: string, maxzoom: number, scales: number[], formats: string[]) => ({ style: join(SAMPLE, 'styles', id, 'style.json'), tileset: 'openmaptiles', minzoom: 0, maxzoom, scales, formats });
  writeFileSync(join(WORK, 'one.json'), JSON.stringify({ out: join(WORK, 'one-out'), tilesets: { openmaptiles: join(SAMPLE, 'monaco_omt.mbtiles') }, styles: { 'osm-bright': style('osm-bright', 0, [1], ['png']) }, fonts: join(SAMPLE, 'fonts'), render: { metatile: 4, margin: 64, workers: 1 } }));
  if (JOBS.includes('shard')) {
    const styles = ['osm-bright', 'positron'];
    writeFileSync(join(WORK, 'shard.json'), JSON.stringify({ out: join(WORK, 'unused'), tilesets: { openmaptiles: join(ROOT, 'data/liechtenstein/liechtenstein_omt.mbtiles') }, styles: Object.fromEntries(styles.map((s) => [s, style(s, 14, [1, 2], ['png', 'jpg'])])), fonts: join(SAMPLE, 'fonts'), render: { metatile: 4, margin: 64 } }));
    await runCommand(process.execPath, [CLI, 'plan', '--config', join(WORK, 'shard.json'), '--run', join(WORK, 'run'), '--shards', '4'], { ...process.env, TILEBAKE_QUIET: '1' });
  }
  // The warm cache: written by one run of every job first (not measured).
  for (const name of JOBS) await runCommand(process.execPath, [CLI, ...job(name, join(WORK, 'scratch-warm')).args], { ...process.env, TILEBAKE_QUIET: '1', TILEBAKE_CODE_CACHE: WARM, ...job(name, '').env });
  rmSync(join(WORK, 'scratch-warm'), { recursive: true, force: true });

  const cases = JOBS.flatMap((j) => VARIANTS.map((v) => `${j}/${v}`));
  const results = new Map<string, Run[]>(cases.map((c) => [c, []]));
  const reference = new Map<string, Map<string, string>>();
  const differ = new Set<string>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of round % 2 === 0 ? cases : [...cases].reverse()) {
      const [name, variant] = c.split('/');
      const load = loadavg()[0].toFixed(1);
      const r = await runOnce(name, variant);
      // A build writes a version folder of its own (builds/<id>/): its tiles are compared.
      const out = name === 'one' ? join(WORK, 'one-out', 'builds', readdirSync(join(WORK, 'one-out', 'builds'))[0]) : name === 'shard' ? join(WORK, 'run', 'shards', '0') : undefined;
      if (out) {
        const tiles = await tileHashes(out);
        const ref = reference.get(name) ?? (reference.set(name, tiles), tiles);
        if (tiles.size === 0 || tiles.size !== ref.size || [...ref].some(([k, h]) => tiles.get(k) !== h)) differ.add(c);
      }
      results.get(c)!.push(r);
      console.log(`round ${round + 1} ${c.padEnd(12)} total ${r.total.toFixed(2)} node ${r.node.toFixed(2)} wall ${r.wall.toFixed(1)} (load ${load})${differ.has(c) ? ' DIFFERENT TILES' : ''}`);
    }
  }
  console.log(`\nmedians over ${ROUNDS} alternated rounds (load now ${loadavg().map((l) => l.toFixed(1)).join(' ')}):`);
  for (const c of cases) {
    const rs = results.get(c)!;
    const [name] = c.split('/');
    const off = results.get(`${name}/off`);
    const vs = off && !c.endsWith('/off') ? `; node − off per round: ${rs.map((r, i) => (r.node - off[i].node).toFixed(2)).join(' ')}` : '';
    console.log(
      `${c.padEnd(12)} total ${median(rs.map((r) => r.total)).toFixed(2)} [${rs.map((r) => r.total.toFixed(2)).join(' ')}]  node ${median(rs.map((r) => r.node)).toFixed(2)} [${rs.map((r) => r.node.toFixed(2)).join(' ')}]  wall ${median(rs.map((r) => r.wall)).toFixed(1)}${vs}${differ.has(c) ? '  tiles DIFFER' : ''}`,
    );
  }
}

await main();
