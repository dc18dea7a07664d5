/**
 * Benchmark (not a test): scheduled rebuilds. The Liechtenstein MBTiles with both sample styles, z0–14,
 * 1x and 2x, PNG and JPEG: a full build (--full); the same source with two z14 tiles changed, rebuilt
 * incrementally; a no-change rebuild. Then, with `tilebake serve --workers 2` under wrk, one more
 * rebuild: the time from the build's end to every worker serving the new version, and wrk's errors.
 *
 *   node --import tsx bench/rebuild/run.ts [--maxzoom 14] [--styles osm-bright,positron] [--workers N]
 *
 * Prints the table and writes bench/rebuild/RESULTS.md. Targets: incremental ≤ 0.25 × full for the
 * two-tile change, no-change ≤ 0.1 × full, switch ≤ 5 s, 0 failed requests during the switch.
 */
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { writeResults } from '../results.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CLI = join(ROOT, 'bin/tilebake.js');
const SAMPLE = join(ROOT, 'data/sample');
const { values } = parseArgs({ options: { maxzoom: { type: 'string', default: '14' }, styles: { type: 'string', default: 'osm-bright,positron' }, workers: { type: 'string' }, 'change-zoom': { type: 'string', default: '14' } } });
const MAXZOOM = Number(values.maxzoom);
/** Zoom of the two changed vector tiles (z14 vector tiles are drawn by raster zooms ≥ 15; z13 ones by z14). */
const CHANGE_ZOOM = Number(values['change-zoom']);
/** Vaduz, for the tile wrk requests. */
const VADUZ = { lon: 9.52, lat: 47.14 };
const STYLES = values.styles.split(',').filter(Boolean);
const WORK = join(ROOT, 'build', 'bench-rebuild');
const MS_PER_S = 1000;
const WRK_SECONDS = 20;

/** Run `tilebake build`; returns wall seconds and the "re-rendered X of Y" lines. */
function buildOnce(config: string, extra: string[] = []): Promise<{ seconds: number; rerendered: string[] }> {
  const t0 = performance.now();
  const args = [CLI, 'build', '--config', config, ...extra, ...(values.workers ? ['--workers', values.workers] : [])];
  return new Promise((res, rej) => {
    execFile(process.execPath, args, { cwd: ROOT, env: { ...process.env, CI: '1' }, maxBuffer: 64 * 1024 * 1024 }, (err, _out, stderr) => {
      if (err) return rej(new Error(`build failed: ${stderr}`));
      res({ seconds: (performance.now() - t0) / MS_PER_S, rerendered: stderr.split('\n').filter((l) => l.includes('re-rendered')) });
    });
  });
}

/** Metatiles re-rendered in total, from the build's lines. */
function rendered(lines: string[]): string {
  let n = 0;
  let of = 0;
  for (const l of lines) {
    const m = /re-rendered (\d+) of (\d+)/.exec(l);
    if (m) {
      n += Number(m[1]);
      of += Number(m[2]);
    }
  }
  return `${n} of ${of}`;
}

/** Point two tiles of CHANGE_ZOOM (the middle ones) at other tiles' bytes: a small, valid data change. */
function changeTwoTiles(file: string): void {
  const db = new Database(file);
  try {
    const z = CHANGE_ZOOM;
    const rows = db.prepare('SELECT tile_column AS x, tile_row AS row, tile_id AS id FROM map WHERE zoom_level = ? ORDER BY tile_column, tile_row').all(z) as { x: number; row: number; id: string }[];
    const others = db.prepare('SELECT DISTINCT tile_id AS id FROM map WHERE zoom_level IN (?, ?) LIMIT 16').all(z, z + 1) as { id: string }[];
    const set = db.prepare('UPDATE map SET tile_id = ? WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?');
    const mid = Math.floor(rows.length / 2);
    for (const r of rows.slice(mid, mid + 2)) {
      const other = others.find((o) => o.id !== r.id);
      if (!other) throw new Error(`no other tile to copy at z${z}`);
      set.run(other.id, z, r.x, r.row);
    }
  } finally {
    db.close();
  }
}

/** Serve the output with 2 workers under wrk; rebuild; time until both workers switched. */
async function switchUnderLoad(config: string, out: string): Promise<{ switchSeconds: number; non2xx: number; socketErrors: string; requests: number }> {
  const serve = spawn(process.execPath, [CLI, 'serve', '--out', out, '--port', '0', '--host', '127.0.0.1', '--workers', '2', '--no-auth', '--log-level', 'info'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const waitFor = (text: string, count: number) =>
    new Promise<void>((res) => {
      const check = () => (log.split(text).length - 1 >= count ? res() : setTimeout(check, 20));
      check();
    });
  serve.stdout.on('data', (d: Buffer) => (log += d.toString()));
  serve.stderr.on('data', (d: Buffer) => (log += d.toString()));
  try {
    await waitFor('tilebake listening', 1);
    const url = (JSON.parse(log.split('\n').find((l) => l.includes('tilebake listening'))!) as { url: string }).url;
    const z = Math.min(MAXZOOM, 10);
    const x = Math.floor(((VADUZ.lon + 180) / 360) * 2 ** z);
    const lat = (VADUZ.lat * Math.PI) / 180;
    const y = Math.floor(((1 - Math.log(Math.tan(lat) + 1 / Math.cos(lat)) / Math.PI) / 2) * 2 ** z);
    const wrk = spawn('wrk', ['-t2', '-c32', `-d${WRK_SECONDS}s`, `${url}/styles/${STYLES[0]}/${z}/${x}/${y}.png`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let wrkOut = '';
    wrk.stdout.on('data', (d: Buffer) => (wrkOut += d.toString()));
    const wrkDone = new Promise((r) => wrk.once('exit', r));
    await new Promise((r) => setTimeout(r, 2000));
    await buildOnce(config);
    const ended = performance.now();
    await waitFor('serving build version', 2);
    const switchSeconds = (performance.now() - ended) / MS_PER_S;
    await wrkDone;
    const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(wrkOut)?.[1] ?? 0);
    const socketErrors = /Socket errors: (.*)/.exec(wrkOut)?.[1] ?? 'none';
    const requests = Number(/(\d+) requests in/.exec(wrkOut)?.[1] ?? 0);
    return { switchSeconds, non2xx, socketErrors, requests };
  } finally {
    serve.kill('SIGTERM');
    await new Promise((r) => serve.once('exit', r));
  }
}

async function main(): Promise<void> {
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(WORK, { recursive: true });
  const source = join(WORK, 'liechtenstein.mbtiles');
  copyFileSync(join(ROOT, 'data/liechtenstein/liechtenstein_omt.mbtiles'), source);
  const out = join(WORK, 'out');
  const style = (id: string) => ({ style: join(SAMPLE, 'styles', id, 'style.json'), tileset: 'openmaptiles', minzoom: 0, maxzoom: MAXZOOM, scales: [1, 2], formats: ['png', 'jpg'] });
  const config = join(WORK, 'config.json');
  writeFileSync(config, JSON.stringify({ out, tilesets: { openmaptiles: source }, styles: Object.fromEntries(STYLES.map((s) => [s, style(s)])), fonts: join(SAMPLE, 'fonts'), render: { metatile: 4, margin: 64 } }, null, 2));

  const full = await buildOnce(config, ['--full']);
  changeTwoTiles(source);
  const inc = await buildOnce(config);
  const none = await buildOnce(config);
  const sw = await switchUnderLoad(config, out);

  const ratio = (a: number) => (a / full.seconds).toFixed(3);
  const rows = [
    ['full build (--full)', full.seconds.toFixed(1), rendered(full.rerendered), '1', ''],
    [`two z${CHANGE_ZOOM} tiles changed`, inc.seconds.toFixed(1), rendered(inc.rerendered), ratio(inc.seconds), '≤ 0.25'],
    ['no change', none.seconds.toFixed(1), rendered(none.rerendered), ratio(none.seconds), '≤ 0.1'],
  ];
  const table = [
    '| rebuild | seconds | metatiles rendered | × full | target |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
    '',
    `| switch under wrk (2 workers, ${WRK_SECONDS} s) | value | target |`,
    '|---|---|---|',
    `| build end → both workers serve the new version | ${sw.switchSeconds.toFixed(2)} s | ≤ 5 s |`,
    `| non-2xx responses (of ${sw.requests}) | ${sw.non2xx} | 0 |`,
    `| socket errors | ${sw.socketErrors} | none |`,
  ].join('\n');
  const machine = `${cpus()[0]?.model ?? 'unknown CPU'}, ${availableParallelism()} cores`;
  const text = `# bench/rebuild\n\nLiechtenstein MBTiles, styles ${STYLES.join(', ')}, z0–${MAXZOOM}, 1x and 2x, PNG and JPEG; ${machine}.\n\n${table}\n`;
  process.stdout.write(`${text}\n`);
  const fullJob = MAXZOOM === 14 && STYLES.length === 2;
  writeResults(join(import.meta.dirname, !fullJob ? 'RESULTS-reduced.md' : CHANGE_ZOOM === 14 ? 'RESULTS.md' : `RESULTS-change-z${CHANGE_ZOOM}.md`), text);
}

await main();
