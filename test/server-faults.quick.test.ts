// Corrupt archives and a corrupt elevation index: the server starts, bad ranges give a JSON 502 that
// names nothing internal, healthy archives keep working, and no file handle is left behind.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readManifestOrEmpty, type Manifest } from '../lib/manifest.ts';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { LocalStore } from '../lib/storage.ts';
import { StoreCorruptError } from '../lib/store-read.ts';
import { buildElevation } from '../pipeline/elevation/stage.ts';
import { Archives } from '../static-server/archives.ts';
import { hashToken } from '../static-server/auth.ts';
import { RETRY_CORRUPT_OPEN_MS } from '../static-server/opened-file.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { monacoEntry, SAMPLE_HGT, writeMonacoArchive } from './fixtures/server/full-output.ts';
import { monacoTiles, request, serveOptions, type RawResponse, type SourceTile } from './fixtures/server/helpers.ts';

process.env.TILEBAKE_QUIET = '1';
const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };
/** Leaf directories of a few entries, so the archive has leaves to corrupt. */
const LEAF_ENTRIES = 4;

/** The corrupt variants: where their bytes are damaged. */
const VARIANTS = ['truncated', 'header', 'root', 'leaf', 'tiles'] as const;
type Variant = (typeof VARIANTS)[number];

let out: string;
let tiles: SourceTile[];
let server: RunningServer;
let logs = '';

/** XOR `count` bytes at `at` with 0xff. */
function flip(buf: Buffer, at: number, count = 8): void {
  for (let i = at; i < at + count && i < buf.length; i++) buf[i] ^= 0xff;
}

/** A copy of the healthy archive damaged as `variant` says. */
async function corrupt(healthy: string, variant: Variant): Promise<Buffer> {
  const bytes = await readFile(healthy);
  const reader = await openArchiveFile(healthy);
  const h = reader.header;
  await reader.close();
  switch (variant) {
    case 'truncated':
      return bytes.subarray(0, h.tileDataOffset + Math.floor((h.tileDataLength ?? 0) / 2));
    case 'header':
      flip(bytes, 8, 16); // root directory offset and length
      break;
    case 'root':
      flip(bytes, h.rootDirectoryOffset + 10);
      break;
    case 'leaf':
      for (let at = h.leafDirectoryOffset + 10; at < h.leafDirectoryOffset + (h.leafDirectoryLength ?? 0); at += 40) flip(bytes, at);
      break;
    case 'tiles':
      for (let at = h.tileDataOffset + 20; at < h.tileDataOffset + (h.tileDataLength ?? 0); at += 400) flip(bytes, at);
      break;
  }
  return bytes;
}

/** Open file descriptors of this process. */
async function openFds(): Promise<number> {
  return (await readdir('/proc/self/fd')).length;
}

function get(path: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return request(`${server.url}${path}`, { headers: { ...AUTH, ...headers } });
}

const tilePath = (ts: string, t: { z: number; x: number; y: number }) => `/data/${ts}/${t.z}/${t.x}/${t.y}.pbf`;

/** A 5xx answer must be the JSON error shape and name nothing of the server's files. */
function expectOpaque5xx(r: RawResponse): void {
  expect(r.status).toBe(502);
  expect(r.headers['content-type']).toMatch(/^application\/json/);
  expect(r.headers['cache-control']).toBe('no-store');
  const body = r.json();
  expect(Object.keys(body).sort()).toEqual(['error', 'status']);
  expect(body.status).toBe(502);
  const text = r.body.toString();
  for (const secret of [out, tmpdir(), '.pmtiles', '.tbei', 'elevation', TOKEN]) expect(text).not.toContain(secret);
}

beforeAll(async () => {
  out = await mkdtemp(join(tmpdir(), 'tilebake-faults-'));
  tiles = monacoTiles();
  await mkdir(join(out, 'data'), { recursive: true });
  const healthy = join(out, 'data/healthy.pmtiles');
  await writeMonacoArchive(healthy, tiles, LEAF_ENTRIES);
  for (const v of VARIANTS) await writeFile(join(out, `data/${v}.pmtiles`), await corrupt(healthy, v));

  await buildElevation(out, [{ path: SAMPLE_HGT }], { precision: 0.1, terrain: false });
  const index = await readFile(join(out, (await readManifestOrEmpty(out)).elevation!.index));
  flip(index, 0, 4);
  await writeFile(join(out, 'corrupt.index'), index);

  const manifest: Manifest = {
    version: 1,
    generatedAt: new Date().toISOString(),
    tilesets: Object.fromEntries(['healthy', ...VARIANTS].map((v) => [v, monacoEntry(`data/${v}.pmtiles`, tiles)])),
    styles: {},
    elevation: { index: 'corrupt.index', sources: [SAMPLE_HGT], bounds: [7, 43, 8, 44], precision: 0.1, bytes: index.length },
  };
  await writeFile(join(out, 'manifest.json'), JSON.stringify(manifest));
  const logStream = new Writable({ write: (c, _e, cb) => ((logs += c.toString()), cb()) });
  server = await startServer(serveOptions(out, { logLevel: 'info' }), { tokenHashes: [hashToken(TOKEN)], logStream });
});

afterAll(async () => {
  await server?.close();
  if (out) await rm(out, { recursive: true, force: true });
});

describe('corrupt archives', () => {
  it('answer JSON 502s naming nothing internal; healthy tiles keep being served bit-exact', async () => {
    const failed = new Map<Variant, number>();
    for (const v of VARIANTS) {
      for (const t of tiles) {
        for (const enc of [{ 'accept-encoding': 'gzip' }, {}] as Record<string, string>[]) {
          const r = await get(tilePath(v, t), enc);
          if (r.status >= 500) {
            expectOpaque5xx(r);
            failed.set(v, (failed.get(v) ?? 0) + 1);
          } else {
            // What is answered is the stored tile (undamaged ones, or damaged tile data sent as stored gzip).
            expect([200, 204], `${v} ${tilePath(v, t)}`).toContain(r.status);
          }
        }
        const good = await get(tilePath('healthy', t), { 'accept-encoding': 'gzip' });
        expect(good.status).toBe(200);
        expect(good.body.equals(t.data)).toBe(true);
      }
    }
    // Every kind of damage is detected somewhere.
    for (const v of VARIANTS) expect(failed.get(v) ?? 0, v).toBeGreaterThan(0);
    // Damaged tile data is caught when it is decompressed for a client without gzip.
    const plain = await Promise.all(tiles.map((t) => get(tilePath('healthy', t))));
    plain.forEach((r, i) => expect(r.body.equals(gunzipSync(tiles[i].data))).toBe(true));
  });

  it('leave no handle behind: a failed open closes its file, and 1,000 requests keep the count flat', async () => {
    // Warm up: sockets, lazily opened archives, negative cache entries.
    for (const v of VARIANTS) await get(tilePath(v, tiles[0]));
    await new Promise((r) => setTimeout(r, 100));
    const before = await openFds();
    for (let i = 0; i < 1000; i++) {
      const v = VARIANTS[i % VARIANTS.length];
      const t = tiles[i % tiles.length];
      const r = await get(tilePath(v, t), i % 2 ? { 'accept-encoding': 'gzip' } : {});
      expect(r.status).toBeLessThan(504);
    }
    await new Promise((r) => setTimeout(r, 100));
    expect(await openFds()).toBeLessThanOrEqual(before + 2);
  });

  it('a corrupt archive is opened again after a pause, and each failed open closes its file', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      const archives = new Archives(new LocalStore(out), 1 << 20);
      const before = await openFds();
      for (let i = 0; i < 50; i++) {
        const err = await archives.tile('data/header.pmtiles', 0, 0, 0).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StoreCorruptError);
        vi.setSystemTime(Date.now() + RETRY_CORRUPT_OPEN_MS + 1);
      }
      expect(await openFds()).toBeLessThanOrEqual(before + 1);
      await archives.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('log one line per failure kind per interval, without stacks', () => {
    const lines = logs.split('\n').filter((l) => l.includes('store read failed'));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThanOrEqual(3);
    expect(logs).not.toMatch(/\n\s+at /);
    expect(logs).not.toContain('"stack"');
  });
});

describe('a corrupt elevation index', () => {
  it('answers /height with a JSON 502 and leaks no handle', async () => {
    const body = JSON.stringify({ shape: [{ lat: 43.7384, lon: 7.4246 }] });
    const first = await request(`${server.url}/height`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body });
    expectOpaque5xx(first);
    const before = await openFds();
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      for (let i = 0; i < 20; i++) {
        vi.setSystemTime(Date.now() + RETRY_CORRUPT_OPEN_MS + 1);
        const r = await request(`${server.url}/height`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body });
        expectOpaque5xx(r);
      }
    } finally {
      vi.useRealTimers();
    }
    expect(await openFds()).toBeLessThanOrEqual(before + 2);
    // The healthy routes still answer.
    expect((await request(`${server.url}/health`)).status).toBe(200);
    expect((await get(tilePath('healthy', tiles[0]))).status).toBe(200);
  });
});
