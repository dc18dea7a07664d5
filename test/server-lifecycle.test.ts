// `tilebake serve` as a process: graceful SIGTERM, cluster workers, the routing listener, terrain tiles.
import { currentVersionDir } from '../lib/build-version.ts';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { CLI, ROOT } from './fixtures/server/sample.ts';
import { buildSample, monacoTiles, request, startGatedRangeServer, startServe, type SourceTile } from './fixtures/server/helpers.ts';

const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };
const ENV = { TILEBAKE_TOKENS: TOKEN };

let out: string;
let tiles: SourceTile[];

function path(t: { z: number; x: number; y: number }): string {
  return `/data/openmaptiles/${t.z}/${t.x}/${t.y}.pbf`;
}

beforeAll(async () => {
  out = await buildSample(['vector', 'elevation']);
  tiles = monacoTiles();
});

afterAll(async () => {
  if (out) await rm(out, { recursive: true, force: true });
});

describe('graceful shutdown', () => {
  it('on SIGTERM stops accepting, finishes the in-flight request and exits 0', async () => {
    // Serve from an HTTP store whose answers the test can hold back: a tile read stays in flight.
    const upstream = await startGatedRangeServer(out);
    const s = await startServe(['--out', upstream.url, '--port', '0', '--host', '127.0.0.1', '--workers', '1'], ENV);
    try {
      const [warm, target] = tiles;
      expect((await request(`${s.url}${path(warm)}`, { headers: AUTH })).status).toBe(200);
      upstream.hold();
      const inFlight = request(`${s.url}${path(target)}`, { headers: { ...AUTH, 'accept-encoding': 'gzip' } });
      inFlight.catch(() => undefined); // asserted below; avoid an unhandled rejection if the test fails early
      await upstream.held();
      s.proc.kill('SIGTERM');
      await s.waitFor('shutting down');
      // A new request is not served once shutdown has begun: refused, reset, or 503 while closing.
      const late = await request(`${s.url}/health`).then(
        (res) => `status ${res.status}`,
        (e: NodeJS.ErrnoException) => String(e.code),
      );
      expect(late).toMatch(/^(ECONNREFUSED|ECONNRESET|status 503)$/);
      upstream.release();
      const r = await inFlight;
      expect(r.status).toBe(200);
      expect(r.headers['content-encoding']).toBe('gzip');
      expect(r.body.equals(target.data)).toBe(true);
      expect(await s.exited).toBe(0);
    } finally {
      s.proc.kill('SIGKILL');
      await upstream.close();
    }
  });

  it('runs one worker per --workers and shuts all of them down on SIGTERM', async () => {
    const s = await startServe(['--out', out, '--port', '0', '--host', '127.0.0.1', '--workers', '2'], ENV);
    try {
      expect(s.output()).toContain('"workers":2');
      const results = await Promise.all(tiles.map((t) => request(`${s.url}${path(t)}`, { headers: { ...AUTH, 'accept-encoding': 'gzip' } })));
      results.forEach((r, i) => {
        expect(r.status).toBe(200);
        expect(r.body.equals(tiles[i].data)).toBe(true);
      });
      s.proc.kill('SIGTERM');
      expect(await s.exited).toBe(0);
      expect(s.output().match(/shutting down: finishing in-flight requests/g)).toHaveLength(2);
    } finally {
      s.proc.kill('SIGKILL');
    }
  });
  it('on SIGTERM while its workers are still starting, stops them once they are up and exits 0', async () => {
    const proc = spawn(process.execPath, [CLI, 'serve', '--out', out, '--port', '0', '--host', '127.0.0.1', '--workers', '2'], {
      cwd: ROOT,
      env: { ...process.env, ...ENV },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    proc.stdout.on('data', (d: Buffer) => (output += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((res) => proc.on('exit', (code) => res(code)));
    try {
      // The primary installs its signal handlers as it forks: signal it as soon as both workers exist.
      const forked = () => {
        try {
          return execFileSync('ps', ['--ppid', String(proc.pid), '-o', 'args='], { encoding: 'utf8' }).split('\n').filter((l) => l.includes('serve')).length;
        } catch {
          return 0; // ps exits 1 while the process has no children
        }
      };
      while (forked() < 2) await new Promise((r) => setTimeout(r, 10));
      expect(output).not.toContain('tilebake listening'); // the workers were not up yet
      proc.kill('SIGTERM');
      const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running after 15 s'), 15_000))]);
      expect(code, output).toBe(0);
      expect(output.match(/shutting down: finishing in-flight requests/g)).toHaveLength(2);
    } finally {
      proc.kill('SIGKILL');
    }
  });
});

describe('cluster supervision', () => {
  it('replaces a worker that dies and keeps serving', async () => {
    const s = await startServe(['--out', out, '--port', '0', '--host', '127.0.0.1', '--workers', '2'], ENV);
    try {
      const workers = () =>
        execFileSync('ps', ['--ppid', String(s.proc.pid), '-o', 'pid=,args='], { encoding: 'utf8' })
          .split('\n')
          .filter((l) => l.includes('tilebake.js serve')) // not tsx's esbuild service
          .map((l) => Number(l.trim().split(/\s+/)[0]));
      const before = workers();
      expect(before).toHaveLength(2);
      process.kill(before[0], 'SIGKILL');
      await s.waitFor('a worker died; starting a new one');
      await s.waitFor('Server listening', 3); // the replacement worker listens too
      const after = workers();
      expect(after).toHaveLength(2);
      expect(after).not.toContain(before[0]);
      for (const t of tiles) {
        const r = await request(`${s.url}${path(t)}`, { headers: { ...AUTH, 'accept-encoding': 'gzip' } });
        expect(r.body.equals(t.data)).toBe(true);
      }
      s.proc.kill('SIGTERM');
      expect(await s.exited).toBe(0);
    } finally {
      s.proc.kill('SIGKILL');
    }
  });
});

describe('routing listener', () => {
  it('--routing-port serves /height and /health only; --port serves everything', async () => {
    const s = await startServe(['--out', out, '--port', '0', '--routing-port', '0', '--host', '127.0.0.1', '--workers', '1'], ENV);
    try {
      expect(s.routingUrl).toBeDefined();
      expect(s.routingUrl).not.toBe(s.url);
      const body = JSON.stringify({ shape: [{ lat: 43.7384, lon: 7.4246 }, { lat: 43.7311, lon: 7.4197 }] });
      const headers = { ...AUTH, 'content-type': 'application/json' };
      for (const base of [s.url, s.routingUrl!]) {
        const h = await request(`${base}/height`, { method: 'POST', headers, body });
        expect(h.status, base).toBe(200);
        const heights = h.json().height as (number | null)[];
        expect(heights).toHaveLength(2);
        heights.forEach((v) => expect(typeof v).toBe('number'));
        expect((await request(`${base}/health`)).status).toBe(200);
      }
      const tile = await request(`${s.routingUrl}${path(tiles[0])}`, { headers: AUTH });
      expect(tile.status).toBe(404);
      expect(tile.json()).toMatchObject({ status: 404 });
      expect((await request(`${s.url}${path(tiles[0])}`, { headers: AUTH })).status).toBe(200);
      const noToken = await request(`${s.routingUrl}/height`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(noToken.status).toBe(401);
      expect(noToken.headers['www-authenticate']).toBe('Bearer realm="tilebake"');
    } finally {
      s.proc.kill('SIGTERM');
      await s.exited;
    }
  });
});

describe('terrain tilesets', () => {
  it('serves terrain tiles in their format, bit-exact, with a TileJSON carrying the encoding', async () => {
    const s = await startServe(['--out', out, '--port', '0', '--host', '127.0.0.1', '--workers', '1'], ENV);
    const archive = await openArchiveFile(join((await currentVersionDir(out))!.dir, 'data/terrain.pmtiles'));
    try {
      let n = 0;
      for await (const e of archive.entries()) {
        const stored = Buffer.from((await archive.getTile(e.z, e.x, e.y))!);
        const r = await request(`${s.url}/data/terrain/${e.z}/${e.x}/${e.y}.png`, { headers: { ...AUTH, 'accept-encoding': 'gzip' } });
        expect(r.status).toBe(200);
        expect(r.headers['content-type']).toBe('image/png');
        expect(r.headers['content-encoding']).toBeUndefined();
        expect(r.body.equals(stored)).toBe(true);
        n++;
      }
      expect(n).toBeGreaterThan(0);
      const wrong = await request(`${s.url}/data/terrain/0/0/0.pbf`, { headers: AUTH });
      expect(wrong.status).toBe(404);
      expect(wrong.json().error).toContain('.png');
      const tj = (await request(`${s.url}/data/terrain.json`, { headers: AUTH })).json();
      // Versioned URLs are the CLI's default (static-server/versioned.ts).
      expect(tj.tiles).toEqual([`${s.url}/v/${(await currentVersionDir(out))!.id}/data/terrain/{z}/{x}/{y}.png`]);
      expect(tj.encoding).toBe('terrarium');
      expect(tj.vector_layers).toBeUndefined();
      expect(tj.tilejson).toBe('3.0.0');
    } finally {
      await archive.close();
      s.proc.kill('SIGTERM');
      await s.exited;
    }
  });
});
