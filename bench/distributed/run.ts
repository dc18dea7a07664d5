/**
 * Benchmark (not a test): a distributed build against a one-machine build of the same config, in the
 * same run. Liechtenstein, both sample styles (osm-bright, positron), z0–14, 1x and @2x, PNG and JPEG:
 * `tilebake build` vs `tilebake plan` + 4 shards (two at a time, one CPU each) on a local one-node
 * Slurm cluster (test/fixtures/slurm.ts, deploy/slurm/submit.sh) + `tilebake publish`.
 *
 *   node --import tsx bench/distributed/run.ts [--quick] [--maxzoom 14] [--shards 4] [--parallel 2]
 *
 * Prints (targets in brackets): the shards' total CPU seconds ÷ the one-machine build's (≤ 1.15),
 * publish time ÷ build time (≤ 0.1), slowest shard ÷ mean shard (≤ 1.2), and projections for a
 * country, a continent and the planet on N 2-core nodes from the measured render rate. `--quick`:
 * z0–11, one style. Writes bench/distributed/RESULTS.md (not with --quick). CPU seconds are user+sys of
 * each command's whole process tree, from a cpuacct cgroup per command (bash `times` where none can be
 * made: it misses Chromium's zygote-forked processes).
 */
import { chmodSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { tileCountInBBox } from '../../lib/tile-math.ts';
import { startSlurm } from '../../test/fixtures/slurm.ts';
import { CPUACCT } from '../../test/fixtures/measure.ts';
import { runCommand } from '../command.ts';
import { writeResults } from '../results.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'bin/tilebake.js');
const SAMPLE = join(ROOT, 'data/sample');
const { values } = parseArgs({ options: { quick: { type: 'boolean', default: false }, maxzoom: { type: 'string' }, shards: { type: 'string', default: '4' }, parallel: { type: 'string', default: '2' } } });
const QUICK = values.quick!;
const MAXZOOM = Number(values.maxzoom ?? (QUICK ? 11 : 14));
const SHARDS = Number(values.shards);
const STYLES = QUICK ? ['osm-bright'] : ['osm-bright', 'positron'];
const WORK = join(ROOT, 'build', 'bench-distributed');
const NODES = [10, 100, 1000];
/** Areas for the projections (west, south, east, north). */
const AREAS: [string, [number, number, number, number]][] = [
  ['country (Germany)', [5.87, 47.27, 15.04, 55.06]],
  ['continent (Europe)', [-25, 34, 45, 72]],
  ['planet', [-180, -85.05, 180, 85.05]],
];

interface Measured {
  wall: number;
  cpu: number;
}

/**
 * A wrapper that runs the CLI and appends "<name> <wall s> <cpu s>" to `log`. CPU seconds come from a
 * cpuacct cgroup of the command's own when one can be made (root, cgroup v1): that counts Chromium's
 * zygote-forked GPU and renderer processes, which rusage of waited-for children misses (bash `times`,
 * the fallback, counted a third of the one-machine build's CPU: bench/distributed/RESULTS.md).
 */
function writeTimer(path: string, log: string): void {
  writeFileSync(
    path,
    `#!/bin/bash
t0=$(date +%s.%N)
cg="${CPUACCT}/tilebake-bench-$$"
if mkdir "$cg" 2>/dev/null && echo $$ > "$cg/tasks" 2>/dev/null; then :; else cg=; fi
"${process.execPath}" "${CLI}" "$@"
rc=$?
t1=$(date +%s.%N)
if [ -n "$cg" ]; then
  cpu=$(echo "scale=3; $(cat "$cg/cpuacct.usage") / 1000000000" | bc)
  echo $$ > "${CPUACCT}/tasks"
  # Leftover processes (none expected) keep the group; it is removed when they are gone.
  rmdir "$cg" 2>/dev/null || true
else
  # \`times\` in this shell (not in a pipe's subshell, which has no children): its second line is the children's user and sys.
  times > "${log}.$$"
  cpu=$(tail -n 1 "${log}.$$" | awk '{ for (i = 1; i <= 2; i++) { split($i, a, /m|s/); s += a[1] * 60 + a[2] } } END { print s }')
  rm -f "${log}.$$"
fi
echo "$1\${SLURM_ARRAY_TASK_ID:+-$SLURM_ARRAY_TASK_ID} $(echo "$t1 - $t0" | bc) $cpu" >> "${log}"
exit $rc
`,
  );
  chmodSync(path, 0o755);
}

function readTimes(log: string): Map<string, Measured> {
  const out = new Map<string, Measured>();
  for (const line of readFileSync(log, 'utf8').trim().split('\n')) {
    const [name, wall, cpu] = line.split(' ');
    out.set(name, { wall: Number(wall), cpu: Number(cpu) });
  }
  return out;
}

async function main(): Promise<void> {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(join(WORK, 'logs'), { recursive: true });
  const style = (id: string) => ({ style: join(SAMPLE, 'styles', id, 'style.json'), tileset: 'openmaptiles', minzoom: 0, maxzoom: MAXZOOM, scales: [1, 2], formats: ['png', 'jpg'] });
  const config = join(WORK, 'config.json');
  const source = join(ROOT, 'data/liechtenstein/liechtenstein_omt.mbtiles');
  writeFileSync(config, JSON.stringify({ out: join(WORK, 'one'), tilesets: { openmaptiles: source }, styles: Object.fromEntries(STYLES.map((s) => [s, style(s)])), fonts: join(SAMPLE, 'fonts'), render: { metatile: 4, margin: 64 } }, null, 2));
  const timer = join(WORK, 'tilebake-timed.sh');
  const times = join(WORK, 'times.txt');
  writeTimer(timer, times);
  const env = { ...process.env, TILEBAKE_QUIET: '1' };

  console.log(`one-machine build: ${STYLES.join(', ')}, z0-${MAXZOOM}, 1x+2x, png+jpg`);
  await runCommand(timer, ['build', '--config', config], env);
  const slurm = await startSlurm();
  try {
    const runDir = join(WORK, 'run');
    console.log(`plan + ${SHARDS} shards (${values.parallel} at a time, one CPU each) on Slurm + publish`);
    await runCommand(timer, ['plan', '--config', config, '--run', runDir, '--shards', String(SHARDS)], env);
    await runCommand('/bin/bash', [join(ROOT, 'deploy/slurm/submit.sh'), '--run', runDir, '--out', join(WORK, 'out'), '--parallel', values.parallel!, '--wait', '--', '-c', '1', '-o', join(WORK, 'logs', 'slurm-%A_%a.out')], {
      ...slurm.env,
      ...env,
      // No TILEBAKE_WORKERS: a shard sizes its render pool from what Slurm gave it (-c 1: one browser).
      TILEBAKE: timer,
    });
  } finally {
    await slurm.stop();
  }
  const t = readTimes(times);
  const build = t.get('build')!;
  const shards = [...t.entries()].filter(([k]) => k.startsWith('shard-')).map(([, v]) => v);
  const publish = t.get('publish')!;
  const plan = t.get('plan')!;
  const shardCpu = shards.reduce((n, s) => n + s.cpu, 0);
  const mean = shards.reduce((n, s) => n + s.wall, 0) / shards.length;
  const slowest = Math.max(...shards.map((s) => s.wall));
  const bounds = (JSON.parse(readFileSync(join(WORK, 'run', 'base', 'manifest.json'), 'utf8')) as { tilesets: { openmaptiles: { bounds: [number, number, number, number] } } }).tilesets.openmaptiles.bounds;
  const tiles = tileCountInBBox(bounds, 0, MAXZOOM) * STYLES.length * 2; // × scales (each tile encoded as PNG and JPEG)
  // A shard used one CPU; a 2-core node runs two: tiles per node-second.
  const perNodeSecond = (tiles / shardCpu) * 2;
  const rows = [
    ['shards\' CPU s ÷ one-machine CPU s', `${shardCpu.toFixed(0)} / ${build.cpu.toFixed(0)} = ${(shardCpu / build.cpu).toFixed(2)}`, '≤ 1.15'],
    ['publish time ÷ build time', `${publish.wall.toFixed(1)} / ${build.wall.toFixed(1)} = ${(publish.wall / build.wall).toFixed(3)}`, '≤ 0.1'],
    ['slowest shard ÷ mean shard', `${slowest.toFixed(1)} / ${mean.toFixed(1)} = ${(slowest / mean).toFixed(2)}`, '≤ 1.2'],
    ['plan time ÷ build time', `${plan.wall.toFixed(1)} / ${build.wall.toFixed(1)} = ${(plan.wall / build.wall).toFixed(3)}`, ''],
  ];
  const table = ['| measure | value | target |', '|---|---|---|', ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
  const proj = [
    `| area, z0-14, ${STYLES.length} style(s) × 1x+2x | tiles | ${NODES.map((n) => `${n} nodes`).join(' | ')} |`,
    `|---|---|${NODES.map(() => '---').join('|')}|`,
    ...AREAS.map(([name, bbox]) => {
      const n = tileCountInBBox(bbox, 0, 14) * STYLES.length * 2;
      return `| ${name} | ${(n / 1e6).toFixed(1)} M | ${NODES.map((k) => `${(n / perNodeSecond / k / 3600).toFixed(1)} h`).join(' | ')} |`;
    }),
  ].join('\n');
  const text = `${table}\n\nMeasured rate: ${perNodeSecond.toFixed(1)} tiles per 2-core node-second (${tiles} tiles, ${shardCpu.toFixed(0)} shard CPU s).\nProjections (render only, shards perfectly balanced; every tile of the bbox, sea included):\n\n${proj}\n`;
  console.log(`\n${text}`);
  if (QUICK) console.log('--quick: a few dozen tiles, so every shard\'s start-up (Node, Chromium, style preparation) dominates the ratios; only the full run measures them.');
  console.log(`shard logs: ${readdirSync(join(WORK, 'logs')).length} files in ${join(WORK, 'logs')}`);
  if (!QUICK) writeResults(join(import.meta.dirname, 'RESULTS.md'), `# bench/distributed\n\n${new Date().toISOString().slice(0, 10)}, ${STYLES.join(' + ')}, Liechtenstein z0-${MAXZOOM}, ${SHARDS} shards ${values.parallel} at a time on a shared 2-core machine (indicative only).\n\n${text}`);
}

await main();
