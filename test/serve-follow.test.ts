// Versioned publish and `tilebake serve` following it: rebuilds under load (zero failed requests,
// every cluster worker switches), SIGHUP, object storage (conditional GET), a killed build, pruning.
import { existsSync } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentVersionDir, pruneVersions, writeLease } from '../lib/build-version.ts';
import { cliOk, startCli, type CliResult } from './fixtures/cli.ts';
import { MONACO_MBTILES, monacoTiles, request, startNginx, startServe, type SourceTile } from './fixtures/server/helpers.ts';

const LONG = 240_000;
let dir: string;
let tiles: SourceTile[];

/** Replace tile `t`'s bytes in the MBTiles at `file` (XYZ coordinates). */
function setTile(file: string, t: { z: number; x: number; y: number }, data: Buffer): void {
  // The sample's MBTiles stores tiles deduplicated: a `map` of addresses onto `images`.
  const db = new Database(file);
  try {
    const id = `changed-${t.z}-${t.x}-${t.y}-${Date.now()}`;
    db.prepare('INSERT INTO images (tile_id, tile_data) VALUES (?, ?)').run(id, data);
    const r = db.prepare('UPDATE map SET tile_id = ? WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?').run(id, t.z, t.x, 2 ** t.z - 1 - t.y);
    expect(r.changes).toBe(1);
  } finally {
    db.close();
  }
}

/** A vector-only config over a copy of the Monaco MBTiles, in its own folder. */
async function project(name: string): Promise<{ config: string; out: string; source: string }> {
  const base = join(dir, name);
  const source = join(base, 'src.mbtiles');
  const out = join(base, 'out');
  await mkdir(base, { recursive: true });
  // nginx's workers (an unprivileged user when tests run as root) must reach the output folder.
  await chmod(dir, 0o755);
  await chmod(base, 0o755);
  await copyFile(MONACO_MBTILES, source);
  const config = join(base, 'config.json');
  await writeFile(config, JSON.stringify({ out, tilesets: { openmaptiles: source } }));
  return { config, out, source };
}

function buildCli(config: string, ...args: string[]): Promise<CliResult> {
  return cliOk(['build', '--config', config, ...args], { quiet: false, env: { CI: '1' } });
}

const path = (t: { z: number; x: number; y: number }) => `/data/openmaptiles/${t.z}/${t.x}/${t.y}.pbf`;
const GZIP = { 'accept-encoding': 'gzip' };

/** Concurrent request loops over every tile until `stop()`; counts answers that are not 200 and socket errors. */
function load(base: string, loops: number): { stop(): Promise<{ ok: number; failed: string[] }> } {
  let running = true;
  let ok = 0;
  const failed: string[] = [];
  const loop = async (i: number) => {
    for (let k = i; running; k++) {
      const t = tiles[k % tiles.length];
      try {
        const r = await request(`${base}${path(t)}`, { headers: GZIP });
        if (r.status === 200) ok++;
        else failed.push(`${r.status} ${path(t)}`);
      } catch (e) {
        failed.push(`${(e as NodeJS.ErrnoException).code ?? String(e)} ${path(t)}`);
      }
    }
  };
  const all = Promise.all(Array.from({ length: loops }, (_, i) => loop(i)));
  return {
    stop: async () => {
      running = false;
      await all;
      return { ok, failed };
    },
  };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-follow-'));
  tiles = monacoTiles();
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('serve follows the current build version', () => {
  it('a rebuild under load: zero failed requests, every worker switches, only the changed tile gets a new ETag', async () => {
    const p = await project('load');
    await buildCli(p.config);
    const first = (await currentVersionDir(p.out))!;
    // Polled every 300 ms: the 5 s bound on the switch below leaves room for a loaded machine.
    const s = await startServe(['--out', p.out, '--port', '0', '--host', '127.0.0.1', '--workers', '2', '--no-auth', '--version-poll-ms', '300']);
    try {
      const [changed, same] = [tiles.find((t) => t.z === 14)!, tiles.find((t) => t.z === 13)!];
      const before = await request(`${s.url}${path(changed)}`, { headers: GZIP });
      const sameBefore = await request(`${s.url}${path(same)}`, { headers: GZIP });
      expect(before.body.equals(changed.data)).toBe(true);
      const l = load(s.url, 16);
      const replacement = tiles.find((t) => t.z === 14 && t !== changed)!.data;
      setTile(p.source, changed, replacement);
      await buildCli(p.config);
      const published = Date.now();
      await s.waitFor('serving build version', 2); // one line per cluster worker
      const switchMs = Date.now() - published;
      await new Promise((r) => setTimeout(r, 300));
      const { ok, failed } = await l.stop();
      expect(failed).toEqual([]);
      expect(ok).toBeGreaterThan(50);
      expect(switchMs).toBeLessThan(5000);
      // Both workers serve the new version: every answer has the new bytes.
      for (let i = 0; i < 6; i++) {
        const r = await request(`${s.url}${path(changed)}`, { headers: GZIP });
        expect(r.body.equals(replacement)).toBe(true);
        expect(r.headers.etag).not.toBe(before.headers.etag);
        const u = await request(`${s.url}${path(same)}`, { headers: GZIP });
        expect(u.headers.etag).toBe(sameBefore.headers.etag);
      }
      const second = (await currentVersionDir(p.out))!;
      expect(second.id).not.toBe(first.id);
      // Each worker dropped the old version from its lease once its requests were done.
      await new Promise((r) => setTimeout(r, 500));
      const leases = await Promise.all((await readdir(join(p.out, 'leases'))).map(async (f) => JSON.parse(await readFile(join(p.out, 'leases', f), 'utf8')) as { builds: string[] }));
      expect(leases.map((x) => x.builds)).toEqual([[second.id], [second.id]]);
    } finally {
      s.proc.kill('SIGTERM');
      await s.exited;
    }
    // A stopped server removes its leases.
    expect(await readdir(join(p.out, 'leases'))).toEqual([]);
  }, LONG);

  it('with polling off, SIGHUP makes every worker check at once', async () => {
    const p = await project('sighup');
    await buildCli(p.config);
    const s = await startServe(['--out', p.out, '--port', '0', '--host', '127.0.0.1', '--workers', '2', '--no-auth', '--version-poll-ms', '0']);
    try {
      const t = tiles.find((x) => x.z === 14)!;
      const replacement = tiles.find((x) => x.z === 14 && x !== t)!.data;
      setTile(p.source, t, replacement);
      await buildCli(p.config);
      await new Promise((r) => setTimeout(r, 1500));
      expect((await request(`${s.url}${path(t)}`, { headers: GZIP })).body.equals(t.data)).toBe(true);
      s.proc.kill('SIGHUP');
      await s.waitFor('serving build version', 2);
      expect((await request(`${s.url}${path(t)}`, { headers: GZIP })).body.equals(replacement)).toBe(true);
    } finally {
      s.proc.kill('SIGTERM');
      await s.exited;
    }
  }, LONG);

  it('from object storage: polls current.json with a conditional GET and switches', async () => {
    const p = await project('http');
    await buildCli(p.config);
    const nginx = await startNginx(p.out);
    const s = await startServe(['--out', nginx.url, '--port', '0', '--host', '127.0.0.1', '--workers', '1', '--no-auth', '--version-poll-ms', '300']);
    try {
      await new Promise((r) => setTimeout(r, 1200));
      // Unchanged pointer: nginx answers the polls with 304.
      expect(await nginx.accessLog()).toMatch(/304 .*current\.json/);
      const t = tiles.find((x) => x.z === 14)!;
      const replacement = tiles.find((x) => x.z === 14 && x !== t)!.data;
      setTile(p.source, t, replacement);
      await buildCli(p.config);
      await s.waitFor('serving build version');
      expect((await request(`${s.url}${path(t)}`, { headers: GZIP })).body.equals(replacement)).toBe(true);
    } finally {
      s.proc.kill('SIGTERM');
      await s.exited;
      await nginx.stop();
    }
  }, LONG);

  it('a build killed with SIGKILL leaves the current version serving; the next build cleans up after it', async () => {
    const p = await project('killed');
    await buildCli(p.config);
    const current = await readFile(join(p.out, 'current.json'), 'utf8');
    const s = await startServe(['--out', p.out, '--port', '0', '--host', '127.0.0.1', '--workers', '1', '--no-auth']);
    try {
      const t = tiles.find((x) => x.z === 14)!;
      setTile(p.source, t, tiles.find((x) => x.z === 14 && x !== t)!.data);
      const { child, exited } = startCli(['build', '--config', p.config], { quiet: false });
      const builds = join(p.out, 'builds');
      while (!(await readdir(builds)).some((n) => n.startsWith('.incoming-'))) await new Promise((r) => setTimeout(r, 5));
      child.kill('SIGKILL');
      await exited;
      expect(await readFile(join(p.out, 'current.json'), 'utf8')).toBe(current);
      await new Promise((r) => setTimeout(r, 1500));
      const r = await request(`${s.url}${path(t)}`, { headers: GZIP });
      expect(r.status).toBe(200);
      expect(r.body.equals(t.data)).toBe(true);
      await buildCli(p.config);
      expect((await readdir(builds)).filter((n) => n.startsWith('.'))).toEqual([]);
    } finally {
      s.proc.kill('SIGTERM');
      await s.exited;
    }
  }, LONG);
});

describe('pruning', () => {
  it('keeps the newest N and the current version, and versions a live server holds; removes dead leases', async () => {
    const p = await project('prune');
    for (let i = 0; i < 4; i++) await buildCli(p.config, '--keep', '10');
    const ids = (await readdir(join(p.out, 'builds'))).sort();
    expect(ids).toHaveLength(4);
    // A live process (this one) holds the oldest; a dead one held the second.
    await writeLease(p.out, [ids[0]]);
    await writeFile(join(p.out, 'leases', 'gone.json'), JSON.stringify({ pid: 2 ** 22 + 12345, host: (await import('node:os')).hostname(), builds: [ids[1]] }));
    expect(await pruneVersions(p.out, 1)).toEqual([ids[1], ids[2]]);
    expect((await readdir(join(p.out, 'builds'))).sort()).toEqual([ids[0], ids[3]]);
    expect(existsSync(join(p.out, 'leases', 'gone.json'))).toBe(false);
    await writeLease(p.out, []);
    expect(await pruneVersions(p.out, 1)).toEqual([ids[0]]);
    expect((await currentVersionDir(p.out))!.id).toBe(ids[3]);
  }, LONG);
});
