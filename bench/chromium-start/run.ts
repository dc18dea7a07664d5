/**
 * Benchmark (not a test): the CPU of one render worker's Chromium, from its start to the end of a small
 * build, for Chromium flag variants in alternated rounds, and whether each variant's tiles are byte for
 * byte those of the first (the code's own flags).
 *
 *   node --import tsx bench/chromium-start/run.ts [--rounds 5] [--minzoom 0] [--maxzoom 0] [--variants base,in-process-gpu]
 *
 * Each run is `tilebake build` of the Monaco sample, osm-bright, z{minzoom}–{maxzoom}, 1x PNG (z0: one
 * metatile, the shard of docs/distributed.md "Where a shard's CPU goes") into a fresh folder, one
 * render worker. `--minzoom 13 --maxzoom 14 --styles osm-bright,positron --scales 1,2` is where the
 * bench job's work is: 8 metatiles, 40 tiles.
 * Chromium is started through a wrapper (TILEBAKE_CHROMIUM) that joins a cpuacct cgroup of its own,
 * nested in the command's cgroup, and edits the flags for the variant: the CPU seconds printed are
 * Chromium's whole process tree (browser, zygotes, GPU, renderers, utilities) and the command's.
 * Needs root and cgroup v1's cpuacct (as bench/distributed). `--scales 1,2 --styles osm-bright,positron
 * --maxzoom 14` makes a larger job for the byte check.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { commandLine, processStat } from '../../lib/process-tree.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../workers/chromium.ts';
import { chromiumKind, cpuSeconds } from './process-kind.ts';
import { CPUACCT, cpuacctSeconds } from '../../test/fixtures/measure.ts';
import { runCommand } from '../command.ts';
import { tileHashes } from '../tile-hashes.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'bin/tilebake.js');
const SAMPLE = join(ROOT, 'data/sample');
const WORK = join(ROOT, 'build', 'bench-chromium-start');

/** A variant: switches added, switches (by prefix) removed, feature names added to --disable-features / --enable-features. */
interface Variant {
  add?: string[];
  remove?: string[];
  disable?: string[];
  enable?: string[];
  /** Start from a copy of a profile (made before the rounds): `blank` as a browser on about:blank leaves it, `render` as a browser leaves it after a build of this job (GPU caches, code cache, HTTP cache). */
  template?: 'blank' | 'render';
  /** Of the template, copy only these paths (relative to the profile folder). */
  only?: string[];
  /** Run in `$WORK/template-render` instead of the profile given (makes the `render` template: a browser's profile after this job). */
  keepProfile?: boolean;
  /** Another Chromium executable than CHROMIUM_PATH. */
  binary?: string;
}

/** The variants measured (their figures: bench/chromium-start/RESULTS.md; what was adopted: docs/render-performance.md). */
const VARIANTS: Record<string, Variant> = {
  base: {},
  // The full browser in its (new) headless mode, the renderer before 2026-12-02 (base is the headless shell).
  'full-browser': { binary: '/usr/lib/chromium/chromium' },
  'in-process-gpu': { add: ['--in-process-gpu'] },
  'no-zygote': { add: ['--no-zygote'] },
  'single-process': { add: ['--single-process'] },
  'single-no-zygote': { add: ['--single-process', '--no-zygote'] },
  'no-site-isolation': { add: ['--disable-site-isolation-trials'], disable: ['IsolateOrigins', 'site-per-process', 'SpareRendererForSitePerProcess'] },
  'no-services': { disable: ['Translate', 'OptimizationGuideModelDownloading', 'OptimizationHintsFetching', 'InterestFeedContentSuggestions', 'CertificateTransparencyComponentUpdater', 'AutofillServerCommunication', 'CalculateNativeWinOcclusion', 'HeavyAdPrivacyMitigations', 'LensOverlay', 'GlobalMediaControls', 'AcceptCHFrame', 'SegmentationPlatform'] },
  'headless-old': { remove: ['--headless'], add: ['--headless=old'] },
  'gpu-compositing-off': { add: ['--disable-gpu-compositing'] },
  'network-in-process': { enable: ['NetworkServiceInProcess'] },
  'audio-in-process': { disable: ['AudioServiceOutOfProcess'] },
  'renderer-limit-1': { add: ['--renderer-process-limit=1'] },
  'no-shader-cache': { add: ['--disable-gpu-shader-disk-cache'] },
  'v8-single-gc': { add: ['--js-flags=--single-threaded-gc'] },
  'no-crash-reporter': { add: ['--disable-crash-reporter'] },
  'v8-no-opt': { add: ['--js-flags=--no-opt --no-maglev'] },
  'v8-no-turbofan': { add: ['--js-flags=--no-turbofan'] },
  'angle-no-warmup': { add: ['--disable-angle-features=warmUpPipelineCacheAtLink'] },
  'template-profile': { template: 'blank' },
  'render-profile': { template: 'render' },
  'gpu-cache': { template: 'render', only: ['Default/GPUCache', 'GPUPersistentCache'] },
  'code-cache': { template: 'render', only: ['Default/Code Cache'] },
  incognito: { add: ['--incognito'] },
  'no-pings': { add: ['--no-pings', '--disable-client-side-phishing-detection', '--disable-domain-reliability', '--disable-notifications', '--disable-print-preview', '--disable-speech-api', '--no-proxy-server'] },
  'no-gpu-raster': { add: ['--disable-gpu-rasterization', '--disable-accelerated-2d-canvas'] },
  'http-cache-off': { add: ['--disk-cache-size=1', '--media-cache-size=1'] },
};

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    minzoom: { type: 'string', default: '0' },
    maxzoom: { type: 'string', default: '0' },
    scales: { type: 'string', default: '1' },
    styles: { type: 'string', default: 'osm-bright' },
    variants: { type: 'string', default: 'base,in-process-gpu' },
  },
});
const ROUNDS = Number(values.rounds);
const names = values.variants!.split(',');
for (const n of names) if (!VARIANTS[n]) throw new Error(`unknown variant ${n} (known: ${Object.keys(VARIANTS).join(', ')})`);

/** `s` quoted for bash. */
const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The wrapper's shell lines that copy the variant's template (or its `only` paths) into the profile folder. */
function copyTemplate(v: Variant): string {
  if (!v.template) return '';
  const from = join(WORK, `template-${v.template}`);
  if (!v.only) return `cp -a ${q(from)}/. "\${a#--user-data-dir=}"/; `;
  return v.only.map((p) => `mkdir -p "\${a#--user-data-dir=}"/${q(p)}/..; cp -a ${q(join(from, p))} "\${a#--user-data-dir=}"/${q(p)}; `).join('');
}

/** A wrapper that joins `$TILEBAKE_BENCH_CG` and starts Chromium with the variant's flags. */
function writeWrapper(path: string, v: Variant): void {
  const remove = (v.remove ?? []).map((r) => `    ${q(r)}) continue ;;`).join('\n');
  writeFileSync(
    path,
    `#!/bin/bash
[ -n "$TILEBAKE_BENCH_CG" ] && echo $$ > "$TILEBAKE_BENCH_CG/tasks"
args=(${(v.add ?? []).map(q).join(' ')})
have_enable=
for a in "$@"; do
  case "$a" in
${remove}
    --user-data-dir=*) ${copyTemplate(v)}${v.keepProfile ? `a=--user-data-dir=${q(join(WORK, 'template-render'))}` : ''} ;;
    --disable-features=*) a="$a${v.disable?.length ? `,${v.disable.join(',')}` : ''}" ;;
    --enable-features=*) have_enable=1; a="$a${v.enable?.length ? `,${v.enable.join(',')}` : ''}" ;;
  esac
  args+=("$a")
done
${v.enable?.length ? `[ -z "$have_enable" ] && args=(--enable-features=${v.enable.join(',')} "\${args[@]}")` : ''}
exec ${q(v.binary ?? CHROMIUM_PATH)} "\${args[@]}"
`,
  );
  chmodSync(path, 0o755);
}

/**
 * Samples the CPU time of every process in cgroup `cg` every 20 ms while it runs (the last sample
 * before a process ends stands for it: its last ≤ 20 ms are missed). `stop()` returns CPU s by kind.
 */
function sampleProcesses(cg: string): { stop(): Map<string, number> } {
  const seen = new Map<number, { kind: string; cpu: number; cmd: string }>();
  const tick = () => {
    for (const pid of readFileSync(join(cg, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number)) {
      const s = processStat(pid);
      const cmd = commandLine(pid);
      if (!s || !cmd) continue;
      const cpu = cpuSeconds(s);
      seen.set(pid, { kind: chromiumKind(cmd), cpu: Math.max(cpu, seen.get(pid)?.cpu ?? 0), cmd });
    }
  };
  const timer = setInterval(tick, 20);
  return {
    stop() {
      clearInterval(timer);
      const out = new Map<string, number>();
      if (process.env.BENCH_DEBUG) for (const [pid, e] of seen) console.log(pid, e.cpu, e.cmd.replace(/\0/g, ' ').slice(0, 400));
      const count = new Map<string, number>();
      for (const { kind: k, cpu } of seen.values()) {
        out.set(k, (out.get(k) ?? 0) + cpu);
        count.set(k, (count.get(k) ?? 0) + 1);
      }
      for (const [k, n] of count) if (n > 1) out.set(`${k}×${n}`, out.get(k)!), out.delete(k);
      return out;
    },
  };
}

async function once(name: string, round: number, maxzoom = Number(values.maxzoom)): Promise<{ chromium: number; total: number; wall: number; tiles: Map<string, string>; byKind: Map<string, number> }> {
  const out = join(WORK, `out-${name}-${round}`);
  const config = join(WORK, 'config.json');
  const style = (id: string) => ({ style: join(SAMPLE, 'styles', id, 'style.json'), tileset: 'openmaptiles', minzoom: Math.min(Number(values.minzoom), maxzoom), maxzoom, scales: values.scales!.split(',').map(Number), formats: ['png'] });
  writeFileSync(config, JSON.stringify({ out, tilesets: { openmaptiles: join(SAMPLE, 'monaco_omt.mbtiles') }, styles: Object.fromEntries(values.styles!.split(',').map((s) => [s, style(s)])), fonts: join(SAMPLE, 'fonts'), render: { metatile: 4, margin: 64, workers: 1 } }));
  const outer = join(CPUACCT, `tilebake-chromium-bench-${process.pid}`);
  const inner = join(outer, 'chromium');
  mkdirSync(inner, { recursive: true });
  const env = { ...process.env, TILEBAKE_QUIET: '1', TILEBAKE_CHROMIUM: join(WORK, `chromium-${name}.sh`), TILEBAKE_BENCH_CG: inner };
  const sampler = sampleProcesses(inner);
  const t0 = performance.now();
  await runCommand('/bin/bash', ['-c', `echo $$ > ${outer}/tasks && exec "$0" "$@"`, process.execPath, CLI, 'build', '--config', config, '--workers', '1'], env);
  const wall = (performance.now() - t0) / 1000;
  // Let the last processes leave the groups (the browser is killed at the build's end).
  for (let i = 0; i < 100 && readFileSync(join(inner, 'tasks'), 'utf8').trim(); i++) await new Promise((r) => setTimeout(r, 50));
  const byKind = sampler.stop();
  const chromium = cpuacctSeconds(inner);
  const total = cpuacctSeconds(outer);
  rmdirSync(inner);
  rmdirSync(outer);
  const tiles = await tileHashes(out, (p) => p.includes('/styles/'));
  rmSync(out, { recursive: true, force: true });
  return { chromium, total, wall, tiles, byKind };
}

/** A profile folder as a browser leaves it: started on about:blank with the build's flags, closed after 4 s. */
async function makeTemplate(dir: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const p = spawn(CHROMIUM_PATH, ['--headless', '--no-sandbox', ...CHROMIUM_ARGS, `--user-data-dir=${dir}`, 'about:blank'], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 4000));
  p.kill('SIGTERM');
  await new Promise((r) => p.once('exit', r));
}

async function main(): Promise<void> {
  if (!existsSync(CPUACCT)) throw new Error(`${CPUACCT} missing: needs cgroup v1 cpuacct`);
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  for (const n of names) writeWrapper(join(WORK, `chromium-${n}.sh`), VARIANTS[n]);
  if (names.some((n) => VARIANTS[n].template === 'blank')) await makeTemplate(join(WORK, 'template-blank'));
  if (names.some((n) => VARIANTS[n].template === 'render')) {
    writeWrapper(join(WORK, 'chromium-keep-profile.sh'), { keepProfile: true });
    await once('keep-profile', 0);
    // The browser was killed: wait for its last writes, then drop its locks.
    await new Promise((r) => setTimeout(r, 1000));
    for (const f of ['SingletonLock', 'SingletonSocket', 'SingletonCookie']) rmSync(join(WORK, 'template-render', f), { force: true });
  }
  const results = new Map<string, { chromium: number[]; total: number[]; wall: number[] }>(names.map((n) => [n, { chromium: [], total: [], wall: [] }]));
  let reference: Map<string, string> | undefined;
  const mismatched = new Set<string>();
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const n of order) {
      const r = await once(n, round);
      const m = results.get(n)!;
      m.chromium.push(r.chromium);
      m.total.push(r.total);
      m.wall.push(r.wall);
      reference ??= r.tiles;
      const same = r.tiles.size === reference.size && [...reference].every(([k, h]) => r.tiles.get(k) === h);
      if (!same) mismatched.add(n);
      console.log(`round ${round + 1} ${n.padEnd(20)} chromium ${r.chromium.toFixed(2)} CPU s, command ${r.total.toFixed(2)} CPU s, ${r.wall.toFixed(1)} s, ${r.tiles.size} tiles${same ? '' : ' DIFFERENT TILES'}; ${[...r.byKind].map(([k, c]) => `${k} ${c.toFixed(2)}`).join(', ')}`);
    }
  }
  const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  console.log(`\nmedians over ${ROUNDS} alternated rounds (load ${(await import('node:os')).loadavg().map((l) => l.toFixed(1)).join(' ')}):`);
  for (const n of names) {
    const m = results.get(n)!;
    console.log(`${n.padEnd(20)} chromium ${median(m.chromium).toFixed(2)} [${m.chromium.map((x) => x.toFixed(2)).join(' ')}]  command ${median(m.total).toFixed(2)}  wall ${median(m.wall).toFixed(1)}  ${mismatched.has(n) ? 'tiles DIFFER' : 'tiles identical'}`);
  }
}

await main();
