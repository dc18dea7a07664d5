/**
 * Benchmark: serving vector tiles. tilebake vs tileserver-gl-light (same MBTiles) vs nginx (the same
 * tiles as static gzip files), one server at a time in A B A B order, loaded by Debian's wrk with a Lua
 * script cycling through every tile in shuffled order (keep-alive, 64 connections, gzip accepted).
 *
 *   node --import tsx bench/serve-vector/run.ts [--duration 20] [--warmup 5] [--rounds 2] [--mbtiles F]
 *     [--servers tilebake,tilebake-keys-local,…] [--quick] [--baseline DIR]
 *
 * With keys on (docs/keys.md): `tilebake-keys-local` serves with a keys file holding an origin key and
 * the rate-limited secret key wrk uses (its rate is high enough that nothing is refused, so every
 * request takes from the bucket: the cost measured is the limiter's), decided by the cluster primary;
 * `tilebake-keys-redis` does the same with `--limits redis://…` (a redis-server started here).
 * Targets against today's auth (`tilebake`): ≤ 10 % slower with local limits, ≤ 25 % with Redis.
 * `--quick`: 1 round of 1 s warm-up + 3 s, tilebake rows only (proves the harness works).
 * `--baseline DIR`: a checkout of another commit (with node_modules); each tilebake row is also run
 * from it as `<row>@base`, right after its own row in every round (an A/B of two commits in one run).
 *
 * Prints req/s, p50/p99 latency, the server's CPU time per request (its process tree, plus redis-server for
 * the Redis row: steadier than req/s on a shared machine) and the ratios; writes bench/serve-vector/RESULTS.md.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { ensurePeers, writeBenchNginxConf } from '../peers.ts';
import { treeCpuMs } from '../../test/fixtures/measure.ts';
import { parseWrk, shuffle, stop } from '../wrk.ts';
import { writeResults } from '../results.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '20' },
    warmup: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '2' },
    connections: { type: 'string', default: '64' },
    mbtiles: { type: 'string', default: join(root, 'data/liechtenstein/liechtenstein_omt.mbtiles') },
    servers: { type: 'string' },
    baseline: { type: 'string' },
    quick: { type: 'boolean', default: false },
  },
});
if (args.quick) Object.assign(args, { duration: '3', warmup: '1', rounds: '1', servers: args.servers ?? 'tilebake,tilebake-keys-local,tilebake-keys-redis' });
const REDIS_PORT = 18773;
const work = join(root, 'bench/results/serve-vector');
const TOKEN = 'bench-token-not-secret';
const TILESET = 'bench';

interface Server {
  name: string;
  port: number;
  prefix: string;
  token?: string;
  start(): ChildProcess;
}

interface Run {
  server: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU time of the server's processes (and of redis-server for its rows) per request, µs. */
  cpuUs: number;
}

/** Every tile of the MBTiles as XYZ, with its stored (gzip) bytes. */
function readTiles(file: string): { z: number; x: number; y: number; data: Buffer }[] {
  const db = new Database(file, { readonly: true });
  const rows = db.prepare('SELECT zoom_level z, tile_column x, tile_row y, tile_data data FROM tiles').all() as {
    z: number;
    x: number;
    y: number;
    data: Buffer;
  }[];
  db.close();
  return rows.map((r) => ({ ...r, y: (1 << r.z) - 1 - r.y }));
}

async function waitReady(url: string, token: string | undefined, proc: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`${url}: server exited with ${proc.exitCode}`);
    try {
      const res = await fetch(url, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
      if (res.status === 200) return;
    } catch {
      /* not yet listening */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url}: not ready after 60 s`);
}

/** Check that a server returns the stored bytes for a sample of tiles before measuring it. */
async function verify(s: Server, tiles: { z: number; x: number; y: number; data: Buffer }[]): Promise<void> {
  for (const t of tiles.slice(0, 20)) {
    const res = await fetch(`http://127.0.0.1:${s.port}${s.prefix}${t.z}/${t.x}/${t.y}.pbf`, {
      headers: { 'Accept-Encoding': 'gzip', ...(s.token ? { Authorization: `Bearer ${s.token}` } : {}) },
    });
    // fetch decompresses gzip transparently: compare with the gunzipped stored bytes.
    const body = Buffer.from(await res.arrayBuffer());
    const { gunzipSync } = await import('node:zlib');
    if (res.status !== 200 || !body.equals(gunzipSync(t.data))) {
      throw new Error(`${s.name}: tile ${t.z}/${t.x}/${t.y} wrong (HTTP ${res.status}, ${body.length} bytes)`);
    }
  }
}

function wrk(s: Server, list: string, seconds: number): string {
  const conns = Number(args.connections);
  return execFileSync(
    'wrk',
    ['-t2', `-c${conns}`, `-d${seconds}s`, '--latency', '-s', join(root, 'bench/serve-vector/tiles.lua'), `http://127.0.0.1:${s.port}`, '--', list, s.prefix, s.token ?? ''],
    { encoding: 'utf8' },
  );
}

async function main(): Promise<void> {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const selected = args.servers?.split(',').map((s) => s.trim());
  const peers = selected && !selected.includes('tileserver-gl-light') ? { tileserverGl: '' } : ensurePeers();
  const mbtiles = resolve(args.mbtiles);
  const tiles = readTiles(mbtiles);

  // tilebake: pack the MBTiles.
  const out = join(work, 'tilebake');
  const config = join(work, 'config.json');
  writeFileSync(config, JSON.stringify({ out, tilesets: { [TILESET]: mbtiles } }));
  execFileSync(process.execPath, [join(root, 'bin/tilebake.js'), 'build', '--config', config, '--only', 'vector'], {
    stdio: 'inherit',
    env: { ...process.env, TILEBAKE_QUIET: '1' },
  });

  // nginx: the same stored gzip bytes as static files.
  const staticRoot = join(work, 'static');
  for (const t of tiles) {
    const p = join(staticRoot, 'data', TILESET, String(t.z), String(t.x), `${t.y}.pbf`);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, t.data);
  }
  const nginxPrefix = join(work, 'nginx');
  const nginxPort = 18771;
  const nginxConf = writeBenchNginxConf(
    nginxPrefix,
    `  server {
    listen 127.0.0.1:${nginxPort};
    root ${staticRoot};
    location /data/ {
      types { } default_type application/x-protobuf;
      add_header Content-Encoding gzip;
      add_header Cache-Control "public, max-age=86400";
    }
  }`,
  );

  // tileserver-gl-light: the same MBTiles.
  const tsglConfig = join(work, 'tileserver-gl.json');
  writeFileSync(
    tsglConfig,
    JSON.stringify({ options: { paths: { root: dirname(mbtiles), mbtiles: dirname(mbtiles) } }, styles: {}, data: { [TILESET]: { mbtiles: mbtiles.split('/').pop() } } }),
  );

  const list = join(work, 'tiles.txt');
  writeFileSync(list, `${shuffle(tiles.map((t) => `${t.z}/${t.x}/${t.y}.pbf`)).join('\n')}\n`);

  // Keys on: an origin key, and the secret key wrk sends, rate-limited (never refusing at these rates).
  const keysFile = join(work, 'keys.json');
  writeFileSync(
    keysFile,
    JSON.stringify({
      keys: [
        { name: 'website', origins: ['https://maps.example.com', 'https://*.example.org'], rate: { perSecond: 50, burst: 100 } },
        { name: 'bench', secret: TOKEN, rate: { perSecond: 10_000_000, burst: 10_000_000 } },
      ],
    }),
  );
  const tilebake = (name: string, port: number, extra: string[], env: Record<string, string> = {}, from = root): Server => ({
    name,
    port,
    prefix: `/data/${TILESET}/`,
    token: TOKEN,
    start: () =>
      spawn(process.execPath, [join(from, 'bin/tilebake.js'), 'serve', '--out', out, '--port', String(port), '--host', '127.0.0.1', '--log-level', 'warn', ...extra], {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'ignore', 'inherit'],
      }),
  });
  let redis: ChildProcess | undefined;
  const redisArgs = ['--limits', `redis://127.0.0.1:${REDIS_PORT}`];
  const tilebakeRows = (from: string, suffix: string): Server[] => [
    tilebake(`tilebake${suffix}`, 18770, [], { TILEBAKE_TOKENS: TOKEN }, from),
    tilebake(`tilebake-keys-local${suffix}`, 18774, ['--keys', keysFile, '--state-dir', join(work, `state-local${suffix}`)], {}, from),
    {
      ...tilebake(`tilebake-keys-redis${suffix}`, 18775, ['--keys', keysFile, '--state-dir', join(work, `state-redis${suffix}`), ...redisArgs], {}, from),
      start() {
        redis ??= spawn('/usr/bin/redis-server', ['--port', String(REDIS_PORT), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', work], { stdio: 'ignore' });
        return tilebake(`tilebake-keys-redis${suffix}`, 18775, ['--keys', keysFile, '--state-dir', join(work, `state-redis${suffix}`), ...redisArgs], {}, from).start();
      },
    },
  ];
  const ours = tilebakeRows(root, '');
  const base = args.baseline ? tilebakeRows(resolve(args.baseline), '@base') : [];
  const all: Server[] = [
    // With --baseline, each tilebake row is followed by the same row from the baseline checkout.
    ...ours.flatMap((s, i) => (base[i] ? [s, base[i]] : [s])),
    {
      name: 'tileserver-gl-light',
      port: 18772,
      prefix: `/data/${TILESET}/`,
      start: () => spawn(peers.tileserverGl, ['--port', '18772', '--bind', '127.0.0.1', '--config', tsglConfig, '--silent'], { stdio: 'ignore' }),
    },
    {
      name: 'nginx',
      port: nginxPort,
      prefix: `/data/${TILESET}/`,
      start: () => spawn('/usr/sbin/nginx', ['-p', nginxPrefix, '-c', nginxConf, '-g', 'daemon off;'], { stdio: 'ignore' }),
    },
  ];
  const servers = selected ? all.filter((s) => selected.includes(s.name.replace(/@base$/, ''))) : all;

  const runs: Run[] = [];
  const duration = Number(args.duration);
  const warmup = Number(args.warmup);
  console.log(`${tiles.length} tiles from ${mbtiles}; wrk -t2 -c${args.connections}, ${warmup} s warm-up + ${duration} s, ${args.rounds} rounds (A B C A B C)`);
  for (let round = 1; round <= Number(args.rounds); round++) {
    for (const s of servers) {
      const proc = s.start();
      try {
        const t0 = tiles[0];
        await waitReady(`http://127.0.0.1:${s.port}${s.prefix}${t0.z}/${t0.x}/${t0.y}.pbf`, s.token, proc);
        await verify(s, tiles);
        wrk(s, list, warmup);
        // CPU per request does not depend on what else runs on the machine as much as req/s does.
        const cpu = () => treeCpuMs(proc.pid!) + (s.name.includes('redis') && redis ? treeCpuMs(redis.pid!) : 0);
        const cpu0 = cpu();
        const out = wrk(s, list, duration);
        const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
        const r = { server: s.name, ...parseWrk(out), cpuUs: ((cpu() - cpu0) * 1000) / requests };
        runs.push(r);
        console.log(`round ${round} ${s.name.padEnd(20)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  ${r.cpuUs.toFixed(1)} µs CPU/req  errors ${r.errors}  load ${loadavg()[0].toFixed(1)}`);
      } finally {
        await stop(proc);
      }
    }
  }

  const mean = (name: string, k: 'rps' | 'p50' | 'p99' | 'cpuUs') => {
    const rs = runs.filter((r) => r.server === name);
    return rs.reduce((s, r) => s + r[k], 0) / rs.length;
  };
  if (redis) await stop(redis);
  const has = (name: string) => servers.some((s) => s.name === name);
  const tb = has('tilebake') ? mean('tilebake', 'rps') : NaN;
  const rows = servers.map((s) => `| ${s.name} | ${mean(s.name, 'rps').toFixed(0)} | ${mean(s.name, 'p50').toFixed(2)} | ${mean(s.name, 'p99').toFixed(2)} | ${mean(s.name, 'cpuUs').toFixed(1)} | ${(tb / mean(s.name, 'rps')).toFixed(2)}× |`);
  const cpu = execFileSync('sh', ['-c', "nproc; grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], { encoding: 'utf8' }).trim().split('\n');
  const md = `# bench/serve-vector results

${new Date().toISOString().slice(0, 10)}, ${cpu[0]} cores (${cpu[1]?.trim()}), wrk -t2 -c${args.connections} keep-alive, Accept-Encoding: gzip,
${tiles.length} tiles of \`${mbtiles.replace(`${root}/`, '')}\` in shuffled order, ${warmup} s warm-up + ${duration} s per run,
${args.rounds} rounds in A B C order; mean of the rounds. wrk runs on the same 2 cores as the server.

| server | req/s | p50 ms | p99 ms | server CPU µs/req | tilebake ÷ this |
|---|---:|---:|---:|---:|---:|
${rows.join('\n')}
${keysTable(servers.map((s) => s.name), mean)}${abTable(servers.map((s) => s.name), runs)}`;
  // A quick run, or one of some servers only, does not replace the recorded results.
  if (!args.quick && !selected && !args.baseline) writeResults(join(root, 'bench/serve-vector/RESULTS.md'), md);
  console.log(`\n${md}`);
}

/** With --baseline: each row against the same row of the baseline checkout, per round and overall. */
function abTable(names: string[], runs: Run[]): string {
  const rows = names
    .filter((n) => names.includes(`${n}@base`))
    .map((n) => {
      const a = runs.filter((r) => r.server === n).map((r) => r.rps);
      const b = runs.filter((r) => r.server === `${n}@base`).map((r) => r.rps);
      const ca = runs.filter((r) => r.server === n).map((r) => r.cpuUs);
      const cb = runs.filter((r) => r.server === `${n}@base`).map((r) => r.cpuUs);
      const pct = (x: number, y: number) => `${((x / y - 1) * 100).toFixed(1)} %`;
      const sum = (xs: number[]) => xs.reduce((s, x) => s + x, 0);
      const perRound = a.map((x, i) => `${pct(x, b[i])} / ${pct(ca[i], cb[i])}`).join(', ');
      return `| ${n} | ${(sum(a) / a.length).toFixed(0)} | ${(sum(b) / b.length).toFixed(0)} | ${pct(sum(a), sum(b))} | ${(sum(ca) / ca.length).toFixed(1)} | ${(sum(cb) / cb.length).toFixed(1)} | ${pct(sum(ca), sum(cb))} | ${perRound} |`;
    });
  if (rows.length === 0) return '';
  return `\nThis checkout vs the baseline (${args.baseline}): req/s, and server CPU µs per request:\n\n| server | req/s | baseline | change | CPU µs/req | baseline | change | per round (req/s / CPU) |\n|---|---:|---:|---:|---:|---:|---:|---|\n${rows.join('\n')}\n`;
}

/** Keys on vs today's auth: req/s and p99 ratios against the targets (when both were measured). */
function keysTable(names: string[], mean: (name: string, k: 'rps' | 'p50' | 'p99' | 'cpuUs') => number): string {
  if (!names.includes('tilebake')) return '';
  const targets: Record<string, number> = { 'tilebake-keys-local': 0.1, 'tilebake-keys-redis': 0.25 };
  const rows = names
    .filter((n) => n in targets)
    .map((n) => {
      const slower = 1 - mean(n, 'rps') / mean('tilebake', 'rps');
      const verdict = slower <= targets[n] ? 'within' : 'over';
      return `| ${n} | ${(slower * 100).toFixed(1)} % | ${(mean(n, 'p99') / mean('tilebake', 'p99')).toFixed(2)}× | ≤ ${targets[n] * 100} % (${verdict}) |`;
    });
  if (rows.length === 0) return '';
  return `\nKeys on (origin key + rate-limited secret key; limits decided by the cluster primary, or in Redis) vs today's bearer tokens:\n\n| server | req/s slower | p99 ÷ today's | target |\n|---|---:|---:|---|\n${rows.join('\n')}\n`;
}

await main();
