/**
 * Benchmark: static hosting. For the sample and for Liechtenstein (vector stage): `tilebake export`
 * time and files/s (first export, then an unchanged re-export), and the exported tree served by
 * Debian's nginx with the generated configuration vs `tilebake serve` on the same build, loaded by
 * wrk with the same tile list (every exported vector tile, shuffled; gzip accepted; bearer token),
 * one server at a time in A B A B order.
 *
 *   node --import tsx bench/static/run.ts [--duration 20] [--warmup 5] [--rounds 2] [--connections 64] [--short]
 *
 * `--short` (smoke run): the sample only, 2 s per run, one round. Writes bench/static/RESULTS.md.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { openBuildToExport } from '../../export/build-source.ts';
import { exportBuild } from '../../export/index.ts';
import { writeNginxConf } from '../../export/nginx-conf.ts';
import { gzipTilesetIds } from '../../export/tiles.ts';
import { hashToken } from '../../static-server/auth.ts';
import { writeBenchNginxConf } from '../peers.ts';
import { parseWrk, shuffle, stop } from '../wrk.ts';
import { writeResults } from '../results.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '2' },
    connections: { type: 'string', default: '64' },
    short: { type: 'boolean', default: false },
  },
});
const short = args.short;
const duration = short ? 2 : Number(args.duration);
const warmup = short ? 0 : Number(args.warmup);
const rounds = short ? 1 : Number(args.rounds);
const work = join(root, 'bench/results/static');
const TOKEN = 'bench-token-not-secret';
const TILESET = 'openmaptiles';
const NGINX_PORT = 18781;
const SERVE_PORT = 18782;

interface Dataset {
  name: string;
  mbtiles: string;
}
const DATASETS: Dataset[] = [
  { name: 'sample (Monaco)', mbtiles: join(root, 'data/sample/monaco_omt.mbtiles') },
  ...(short ? [] : [{ name: 'Liechtenstein', mbtiles: join(root, 'data/liechtenstein/liechtenstein_omt.mbtiles') }]),
];

async function waitReady(url: string, proc: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`${url}: exited with ${proc.exitCode}`);
    const ok = await fetch(url, { headers: { Authorization: `Bearer ${TOKEN}` } }).then((r) => r.status === 200, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url}: not ready after 60 s`);
}

function wrk(port: number, list: string, seconds: number): string {
  return execFileSync(
    'wrk',
    ['-t2', `-c${args.connections}`, `-d${seconds}s`, '--latency', '-s', join(root, 'bench/serve-vector/tiles.lua'), `http://127.0.0.1:${port}`, '--', list, '/', TOKEN],
    { encoding: 'utf8' },
  );
}

interface Row {
  dataset: string;
  files: number;
  exportS: number;
  filesPerS: number;
  reexportS: number;
  nginxRps: number;
  serveRps: number;
  nginxP99: number;
  serveP99: number;
}

async function runDataset(d: Dataset, index: number): Promise<Row> {
  const dir = join(work, String(index));
  mkdirSync(dir, { recursive: true });
  const out = join(dir, 'build');
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ out, tilesets: { [TILESET]: d.mbtiles } }));
  execFileSync(process.execPath, [join(root, 'bin/tilebake.js'), 'build', '--config', config, '--only', 'vector'], { stdio: 'inherit', env: { ...process.env, TILEBAKE_QUIET: '1' } });

  const exportDir = join(dir, 'export');
  const publicUrl = `http://127.0.0.1:${NGINX_PORT}`;
  const first = await exportBuild({ out, to: exportDir, publicUrl });
  const again = await exportBuild({ out, to: exportDir, publicUrl });
  const tiles = first.added.filter((p) => p.endsWith('.pbf') && p.startsWith('data/'));
  const list = join(dir, 'tiles.txt');
  writeFileSync(list, `${shuffle(tiles).join('\n')}\n`);

  const { store, manifest } = await openBuildToExport(out);
  const prefix = join(dir, 'nginx');
  mkdirSync(prefix, { recursive: true });
  const conf = join(prefix, 'tilebake.conf');
  await writeNginxConf(conf, {
    root: exportDir,
    listen: `127.0.0.1:${NGINX_PORT}`,
    tokens: [{ token: TOKEN, hash: hashToken(TOKEN), source: 'bench' }],
    cors: '*',
    heightUpstream: `127.0.0.1:${SERVE_PORT + 1}`,
    gzipTilesets: await gzipTilesetIds(store, manifest.tilesets),
    manifest,
    versioned: first.versionId !== undefined,
  });
  const nginxConf = writeBenchNginxConf(prefix, `  include /etc/nginx/mime.types;\n  include ${conf};`);
  const servers = [
    {
      name: 'nginx',
      port: NGINX_PORT,
      start: () => spawn('nginx', ['-p', prefix, '-c', nginxConf, '-g', 'daemon off;'], { stdio: 'ignore' }),
    },
    {
      name: 'serve',
      port: SERVE_PORT,
      start: () =>
        spawn(process.execPath, [join(root, 'bin/tilebake.js'), 'serve', '--out', out, '--port', String(SERVE_PORT), '--host', '127.0.0.1', '--log-level', 'warn'], {
          stdio: 'ignore',
          env: { ...process.env, TILEBAKE_TOKENS: TOKEN },
        }),
    },
  ];
  const results = new Map<string, { rps: number[]; p99: number[] }>();
  for (let r = 0; r < rounds; r++) {
    for (const s of servers) {
      const proc = s.start();
      try {
        await waitReady(`http://127.0.0.1:${s.port}/${tiles[0]}`, proc);
        if (warmup > 0) wrk(s.port, list, warmup);
        const m = parseWrk(wrk(s.port, list, duration));
        if (m.errors > 0) throw new Error(`${s.name}: ${m.errors} errors under load`);
        const acc = results.get(s.name) ?? { rps: [], p99: [] };
        acc.rps.push(m.rps);
        acc.p99.push(m.p99);
        results.set(s.name, acc);
        console.log(`${d.name} round ${r + 1} ${s.name}: ${m.rps.toFixed(0)} req/s, p50 ${m.p50.toFixed(2)} ms, p99 ${m.p99.toFixed(2)} ms`);
      } finally {
        await stop(proc);
      }
    }
  }
  const mean = (a: number[]) => a.reduce((s, v) => s + v, 0) / a.length;
  return {
    dataset: d.name,
    files: first.files,
    exportS: first.elapsedMs / 1000,
    filesPerS: first.files / (first.elapsedMs / 1000),
    reexportS: again.elapsedMs / 1000,
    nginxRps: mean(results.get('nginx')!.rps),
    serveRps: mean(results.get('serve')!.rps),
    nginxP99: mean(results.get('nginx')!.p99),
    serveP99: mean(results.get('serve')!.p99),
  };
}

async function main(): Promise<void> {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  process.env.TILEBAKE_QUIET = '1';
  const rows: Row[] = [];
  for (const [i, d] of DATASETS.entries()) rows.push(await runDataset(d, i));
  const table = [
    '| data | files | export | files/s | unchanged re-export | nginx req/s | serve req/s | nginx / serve | p99 nginx / serve |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.dataset} | ${r.files} | ${r.exportS.toFixed(2)} s | ${r.filesPerS.toFixed(0)} | ${r.reexportS.toFixed(2)} s | ${r.nginxRps.toFixed(0)} | ${r.serveRps.toFixed(0)} | ${(r.nginxRps / r.serveRps).toFixed(2)}x | ${r.nginxP99.toFixed(2)} / ${r.serveP99.toFixed(2)} ms |`,
    ),
  ].join('\n');
  console.log(`\n${table}`);
  const how = `wrk -t2 -c${args.connections}, ${rounds} round(s) of ${duration} s (after ${warmup} s warm-up) per server, A B order; \`tilebake serve\` with its default workers; nginx with \`worker_processes auto\` and the configuration \`tilebake export --nginx-conf\` writes.`;
  writeResults(
    join(root, 'bench/static/RESULTS.md'),
    `# bench/static${short ? ' (smoke run with --short: not a measurement)' : ''}\n\n${table}\n\n${how}\n`,
  );
}

await main();
