/**
 * Benchmark (not a test): does a shard's CPU time grow when shards share the cores? The bench job of
 * bench/distributed (Liechtenstein, osm-bright + positron, z0–14, 1x + @2x, PNG + JPEG, 4 shards) is
 * planned once; then its shards run in alternated rounds, per mode:
 *
 * - `serial`: one shard at a time;
 * - `pair`: two at a time (0 + 1, then 2 + 3), as bench/distributed's Slurm array (`%2`);
 * - `hog`: one at a time beside `stress-ng --cpu 1` (contention with anything, not another shard);
 * - `pinned`: two at a time, each bound to one core (`taskset -c 0` / `-c 1`);
 * - `alone-pinned`: one at a time, bound to core 0 (the other core idle);
 * - `build`: the one-machine `tilebake build` of the whole job (one browser on the machine's cores),
 *   measured alike, for the comparison by process kind and thread;
 *
 * each with one of the Chromium variants below (`--variants base,ini1`: every mode × variant).
 *
 *   node --import tsx bench/distributed/contention.ts [--rounds 3] [--modes serial,pair,hog] [--variants base]
 *
 * A shard is `tilebake shard --run RUN --index i` with `SLURM_CPUS_PER_TASK=1` (bench/distributed's
 * `-c 1`: one browser; the tests' Slurm sets no affinity, so the shard's threads see both cores). CPU
 * seconds: the shard's whole process tree from a cpuacct cgroup of its own, Chromium's from a child
 * cgroup its wrapper joins (needs root and cgroup v1, as bench/distributed). By process kind and thread
 * name: every thread's /proc/<pid>/task/<tid>/stat sampled every 100 ms (the last sample stands for a
 * thread: a thread's last ≤ 100 ms are missed). The shards' tiles are compared with the first run's.
 * Figures and what they rule out: docs/distributed.md "Two shards at a time on two cores".
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, readdirSync, realpathSync, rmSync, rmdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { commandLine } from '../../lib/process-tree.ts';
import { CHROMIUM_PATH } from '../../workers/chromium.ts';
import { chromiumKind } from '../chromium-start/process-kind.ts';
import { CPUACCT, cpuacctSeconds } from '../../test/fixtures/measure.ts';
import { runCommand } from '../command.ts';
import { tileHashes } from '../tile-hashes.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'bin/tilebake.js');
const SAMPLE = join(ROOT, 'data/sample');
const WORK = join(ROOT, 'build', 'bench-contention');
const RUN = join(WORK, 'run');
const HZ = 100;

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    modes: { type: 'string', default: 'serial,pair,hog' },
    variants: { type: 'string', default: 'base' },
    maxzoom: { type: 'string', default: '14' },
    shards: { type: 'string', default: '4' },
    styles: { type: 'string', default: 'osm-bright,positron' },
    /** Only these shard indexes (e.g. `0,1`): a shorter round. */
    only: { type: 'string' },
    threads: { type: 'string', default: '12' },
  },
});
const ROUNDS = Number(values.rounds);
const MODES = values.modes!.split(',');
const SHARDS = Number(values.shards);
const INDEXES = values.only ? values.only.split(',').map(Number) : Array.from({ length: SHARDS }, (_, i) => i);

/** A Chromium variant: switches added, and a SwiftShader.ini (`[Processor] ThreadCount`) in the browser's working folder. */
interface Variant {
  add?: string[];
  swiftshaderThreads?: number;
}
const VARIANTS: Record<string, Variant> = {
  base: {},
  ini1: { swiftshaderThreads: 1 },
  raster1: { add: ['--num-raster-threads=1'] },
  'v8-single-gc': { add: ['--js-flags=--single-threaded-gc'] },
  'v8-single': { add: ['--js-flags=--single-threaded'] },
  one: { swiftshaderThreads: 1, add: ['--num-raster-threads=1', '--js-flags=--single-threaded-gc'] },
};
for (const m of MODES) if (!['build', 'serial', 'pair', 'hog', 'pinned', 'alone-pinned'].includes(m)) throw new Error(`unknown mode ${m}`);
const NAMES = values.variants!.split(',');
for (const n of NAMES) if (!VARIANTS[n]) throw new Error(`unknown variant ${n} (known: ${Object.keys(VARIANTS).join(', ')})`);

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * SwiftShader reads `SwiftShader.ini` from the working folder its GPU process has while ANGLE loads it:
 * ANGLE switches to the executable's folder (/proc/self/exe) for that. A folder of hard links to
 * Chromium's files (same filesystem) plus that file gives a Chromium with its own ini, leaving the
 * system's alone.
 */
function chromiumWithIni(name: string, threads: number): string {
  const from = dirname(realpathSync(CHROMIUM_PATH));
  const dir = join(WORK, `chromium-dir-${name}`);
  mkdirSync(dir, { recursive: true });
  for (const e of readdirSync(from)) {
    const src = join(from, e);
    if (statSync(src).isDirectory()) symlinkSync(src, join(dir, e));
    else linkSync(src, join(dir, e));
  }
  writeFileSync(join(dir, 'SwiftShader.ini'), `[Processor]\nThreadCount=${threads}\n`);
  return join(dir, basename(realpathSync(CHROMIUM_PATH)));
}

function writeWrapper(name: string): string {
  const v = VARIANTS[name];
  const exe = v.swiftshaderThreads ? chromiumWithIni(name, v.swiftshaderThreads) : CHROMIUM_PATH;
  const path = join(WORK, `chromium-${name}.sh`);
  writeFileSync(path, `#!/bin/bash\n[ -n "$TILEBAKE_BENCH_CG" ] && echo $$ > "$TILEBAKE_BENCH_CG/tasks"\nexec ${q(exe)} ${(v.add ?? []).map(q).join(' ')} "$@"\n`);
  chmodSync(path, 0o755);
  return path;
}

/** Thread name with digits folded (`ThreadPoolForeg` and `Thread<03>` group with their siblings). */
const threadGroup = (comm: string) => comm.replace(/\d+/g, '#');

/** CPU s per process kind and per kind/thread name, and the threads each kind had at most at once. */
interface Breakdown {
  kinds: Map<string, number>;
  threads: Map<string, number>;
  threadCount: Map<string, number>;
}

/** Samples every thread of the processes in cgroups `cgs` every 100 ms while they run. */
function sampleThreads(cgs: string[]): { stop(): Breakdown } {
  const seen = new Map<string, { kind: string; name: string; cpu: number }>();
  const kindOf = new Map<number, string>();
  const threadCount = new Map<string, number>();
  const tick = () => {
    const pids: number[] = [];
    for (const cg of cgs) {
      try {
        pids.push(...readFileSync(join(cg, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number));
      } catch {
        // Removed already.
      }
    }
    const counts = new Map<string, number>();
    for (const pid of pids) {
      // Read each time: a renderer forked by the zygote shows the zygote's command line at first.
      const cmd = commandLine(pid);
      const kind = cmd ? (cmd.includes('chromium') ? chromiumKind(cmd) : cmd.split('\0')[0].replace(/^.*\//, '')) : kindOf.get(pid);
      if (!kind) continue;
      kindOf.set(pid, kind);
      let tids: string[];
      try {
        tids = readdirSync(`/proc/${pid}/task`);
      } catch {
        continue;
      }
      counts.set(kind, (counts.get(kind) ?? 0) + tids.length);
      const named = new Map<string, number>();
      for (const tid of tids) {
        let stat: string;
        try {
          stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        } catch {
          continue;
        }
        const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const cpu = (Number(f[11]) + Number(f[12])) / HZ;
        named.set(`${kind}:${threadGroup(name)}`, (named.get(`${kind}:${threadGroup(name)}`) ?? 0) + 1);
        const key = `${pid}/${tid}`;
        const prev = seen.get(key);
        seen.set(key, { kind, name: threadGroup(name), cpu: Math.max(cpu, prev?.cpu ?? 0) });
      }
      for (const [k, n] of named) counts.set(k, Math.max(n, counts.get(k) ?? 0));
    }
    for (const [k, n] of counts) threadCount.set(k, Math.max(n, threadCount.get(k) ?? 0));
  };
  const timer = setInterval(tick, 100);
  return {
    stop() {
      clearInterval(timer);
      const kinds = new Map<string, number>();
      const threads = new Map<string, number>();
      for (const { kind, name, cpu } of seen.values()) {
        kinds.set(kind, (kinds.get(kind) ?? 0) + cpu);
        threads.set(`${kind}:${name}`, (threads.get(`${kind}:${name}`) ?? 0) + cpu);
      }
      return { kinds, threads, threadCount };
    },
  };
}

interface ShardRun extends Breakdown {
  total: number;
  chromium: number;
  wall: number;
}

let seq = 0;
/** Shard `i` (or, for i = -1, the one-machine build of the whole job) in cgroups of its own. */
async function runShard(i: number, variant: string, cpu?: number): Promise<ShardRun> {
  if (i >= 0) rmSync(join(RUN, 'shards', String(i)), { recursive: true, force: true });
  else rmSync(join(WORK, 'one'), { recursive: true, force: true });
  const id = `${process.pid}-${seq++}`;
  const outer = join(CPUACCT, `tilebake-contention-${id}`);
  const inner = join(outer, 'chromium');
  mkdirSync(inner, { recursive: true });
  const scratch = join(WORK, `scratch-${id}`);
  const env = { ...process.env, TILEBAKE_QUIET: '1', ...(i >= 0 ? { SLURM_CPUS_PER_TASK: '1' } : {}), TILEBAKE_CHROMIUM: join(WORK, `chromium-${variant}.sh`), TILEBAKE_BENCH_CG: inner };
  const sampler = sampleThreads([outer, inner]);
  const t0 = performance.now();
  const pin = cpu === undefined ? '' : `taskset -c ${cpu} `;
  await runCommand('/bin/bash', ['-c', `echo $$ > ${outer}/tasks && exec ${pin}"$0" "$@"`, process.execPath, CLI, ...(i >= 0 ? ['shard', '--run', RUN, '--index', String(i), '--scratch', scratch] : ['build', '--config', join(WORK, 'config.json')])], env);
  const wall = (performance.now() - t0) / 1000;
  for (let k = 0; k < 100 && readFileSync(join(inner, 'tasks'), 'utf8').trim(); k++) await new Promise((r) => setTimeout(r, 50));
  const b = sampler.stop();
  const chromium = cpuacctSeconds(inner);
  const total = cpuacctSeconds(outer);
  rmdirSync(inner);
  rmdirSync(outer);
  rmSync(scratch, { recursive: true, force: true });
  return { ...b, total, chromium, wall };
}

function startHog(): ChildProcess {
  return spawn('stress-ng', ['--cpu', '1', '--quiet'], { stdio: 'ignore' });
}

async function stopHog(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null) return;
  const gone = new Promise((r) => p.once('exit', r));
  p.kill('SIGTERM');
  await gone;
}

const pressure = () => {
  try {
    return /avg10=([\d.]+)/.exec(readFileSync('/proc/pressure/cpu', 'utf8'))?.[1] ?? '?';
  } catch {
    return '?';
  }
};

/** Runs a mode's shards; results by shard index. */
async function runMode(mode: string, variant: string): Promise<Map<number, ShardRun>> {
  const out = new Map<number, ShardRun>();
  if (mode === 'build') {
    out.set(-1, await runShard(-1, variant));
  } else if (mode === 'serial' || mode === 'hog' || mode === 'alone-pinned') {
    const hog = mode === 'hog' ? startHog() : undefined;
    try {
      for (const i of INDEXES) out.set(i, await runShard(i, variant, mode === 'alone-pinned' ? 0 : undefined));
    } finally {
      if (hog) await stopHog(hog);
    }
  } else {
    for (let k = 0; k < INDEXES.length; k += 2) {
      const pair = INDEXES.slice(k, k + 2);
      const rs = await Promise.all(pair.map((i, j) => runShard(i, variant, mode === 'pinned' ? j : undefined)));
      pair.forEach((i, j) => out.set(i, rs[j]));
    }
  }
  return out;
}

const sum = (m: Map<number, ShardRun>, f: (r: ShardRun) => number) => [...m.values()].reduce((n, r) => n + f(r), 0);
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

async function main(): Promise<void> {
  if (!existsSync(CPUACCT)) throw new Error(`${CPUACCT} missing: needs cgroup v1 cpuacct`);
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  for (const n of NAMES) writeWrapper(n);
  const styles = values.styles!.split(',');
  const style = (id: string) => ({ style: join(SAMPLE, 'styles', id, 'style.json'), tileset: 'openmaptiles', minzoom: 0, maxzoom: Number(values.maxzoom), scales: [1, 2], formats: ['png', 'jpg'] });
  const config = join(WORK, 'config.json');
  writeFileSync(config, JSON.stringify({ out: join(WORK, 'one'), tilesets: { openmaptiles: join(ROOT, 'data/liechtenstein/liechtenstein_omt.mbtiles') }, styles: Object.fromEntries(styles.map((s) => [s, style(s)])), fonts: join(SAMPLE, 'fonts'), render: { metatile: 4, margin: 64 } }));
  await runCommand(process.execPath, [CLI, 'plan', '--config', config, '--run', RUN, '--shards', String(SHARDS)], { ...process.env, TILEBAKE_QUIET: '1' });

  try {
    await measure();
  } finally {
    // The hard-linked Chromium folders would keep an upgraded Chromium's old files alive.
    for (const n of NAMES) rmSync(join(WORK, `chromium-dir-${n}`), { recursive: true, force: true });
  }
}

async function measure(): Promise<void> {
  const cases = MODES.flatMap((m) => NAMES.map((v) => `${m}/${v}`));
  const results = new Map<string, Map<number, ShardRun>[]>(cases.map((c) => [c, []]));
  const reference = new Map<number, Map<string, string>>();
  const differ = new Set<string>();
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? cases : [...cases].reverse();
    for (const c of order) {
      const [mode, variant] = c.split('/');
      const load = `load ${loadavg()[0].toFixed(1)}, cpu pressure ${pressure()}%`;
      const r = await runMode(mode, variant);
      for (const [i, sr] of r) {
        if (i < 0) continue;
        const tiles = await tileHashes(join(RUN, 'shards', String(i)));
        const ref = reference.get(i) ?? (reference.set(i, tiles), tiles);
        if (tiles.size !== ref.size || [...ref].some(([k, h]) => tiles.get(k) !== h)) differ.add(c);
        void sr;
      }
      results.get(c)!.push(r);
      const kinds = new Map<string, number>();
      for (const sr of r.values()) for (const [k, v] of sr.kinds) kinds.set(k, (kinds.get(k) ?? 0) + v);
      console.log(
        `round ${round + 1} ${c.padEnd(20)} total ${sum(r, (x) => x.total).toFixed(1)} chromium ${sum(r, (x) => x.chromium).toFixed(1)} wall ${sum(r, (x) => x.wall).toFixed(0)} (${load}); ` +
          `per shard ${[...r].map(([i, x]) => `${i}:${x.total.toFixed(1)}`).join(' ')}; ${[...kinds].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')}${differ.has(c) ? ' DIFFERENT TILES' : ''}`,
      );
    }
  }
  console.log(`\nmedians over ${ROUNDS} alternated rounds, CPU s of shards ${INDEXES.join(',')} (load now ${loadavg().map((l) => l.toFixed(1)).join(' ')}):`);
  for (const c of cases) {
    const rs = results.get(c)!;
    const kindNames = [...new Set(rs.flatMap((r) => [...r.values()].flatMap((x) => [...x.kinds.keys()])))];
    const kind = (k: string) => median(rs.map((r) => sum(r, (x) => x.kinds.get(k) ?? 0)));
    console.log(
      `${c.padEnd(20)} total ${median(rs.map((r) => sum(r, (x) => x.total))).toFixed(1)} [${rs.map((r) => sum(r, (x) => x.total).toFixed(1)).join(' ')}]  chromium ${median(rs.map((r) => sum(r, (x) => x.chromium))).toFixed(1)}  ` +
        `${kindNames.sort((a, b) => kind(b) - kind(a)).map((k) => `${k} ${kind(k).toFixed(2)}`).join(', ')}  ${differ.has(c) ? 'tiles DIFFER' : 'tiles identical'}`,
    );
  }
  console.log(`\nby thread (kind:name, digits folded), medians of the sum over a case's shards; the ${values.threads} largest:`);
  const threadMedian = (c: string, key: string) => median(results.get(c)!.map((r) => sum(r, (x) => x.threads.get(key) ?? 0)));
  const keys = [...new Set(cases.flatMap((c) => results.get(c)!.flatMap((r) => [...r.values()].flatMap((x) => [...x.threads.keys()]))))];
  const most = (k: string) => Math.max(...cases.map((c) => threadMedian(c, k)));
  keys.sort((a, b) => most(b) - most(a));
  console.log(`${'thread'.padEnd(40)} ${cases.map((c) => c.padStart(16)).join(' ')}`);
  for (const k of keys.slice(0, Number(values.threads))) console.log(`${k.padEnd(40)} ${cases.map((c) => threadMedian(c, k).toFixed(2).padStart(16)).join(' ')}`);
  console.log('\nthreads per process kind, and of each name with more than one (most at once, shard 0, first round):');
  for (const c of cases) {
    const r = results.get(c)![0].get(c.startsWith('build/') ? -1 : INDEXES[0])!;
    console.log(`${c.padEnd(20)} ${[...r.threadCount].filter(([k, n]) => !k.includes(':') || n > 1).map(([k, n]) => `${k} ${n}`).join(', ')}`);
  }
}

await main();
