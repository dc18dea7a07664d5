// The server's tile cache: bounded in bytes, least recently used out first, tiles still exact when evicted.
import { currentVersionDir } from '../lib/build-version.ts';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalStore } from '../lib/storage.ts';
import { Archives, TileLru } from '../static-server/archives.ts';
import { tileBody } from '../static-server/tile-response.ts';
import { buildQuickSample, monacoTiles, type SourceTile } from './fixtures/server/helpers.ts';

const ARCHIVE = 'data/openmaptiles.pmtiles';
let out: string;
/** The build's current version folder (what the server reads). */
let version: string;
let tiles: SourceTile[];

beforeAll(async () => {
  out = await buildQuickSample();
  version = (await currentVersionDir(out))!.dir;
  tiles = monacoTiles();
});

afterAll(async () => {
  if (out) await rm(out, { recursive: true, force: true });
});

describe('TileLru', () => {
  it('stays within its byte budget and evicts the least recently used entry', () => {
    const bodies = tiles.slice(0, 6).map((t) => tileBody(t.data));
    const budget = bodies.slice(0, 3).reduce((n, b) => n + b.bytes.length, 0) + 3 * 400;
    const lru = new TileLru(budget);
    bodies.slice(0, 3).forEach((b, i) => lru.set(`k${i}`, b));
    expect(lru.size).toBe(3);
    expect(lru.get('k0')).toBe(bodies[0]); // k0 becomes the most recent; k1 is now the oldest
    lru.set('k3', bodies[3]);
    expect(lru.bytes).toBeLessThanOrEqual(budget);
    expect(lru.get('k1')).toBeUndefined();
    expect(lru.get('k0')).toBe(bodies[0]);
    for (let i = 0; i < 6; i++) lru.set(`again${i}`, bodies[i]);
    expect(lru.bytes).toBeLessThanOrEqual(budget);
  });

  it('caches "no tile" answers and skips values larger than the whole budget', () => {
    const lru = new TileLru(1000);
    lru.set('missing', null);
    expect(lru.get('missing')).toBeNull();
    const big = tiles.find((t) => t.data.length > 1000)!;
    lru.set('big', tileBody(big.data));
    expect(lru.get('big')).toBeUndefined();
    expect(lru.bytes).toBeLessThanOrEqual(1000);
  });
});

describe('Archives', () => {
  it('returns every tile exactly with a budget far below the archive size', async () => {
    const budget = 100_000;
    const archives = new Archives(new LocalStore(version), budget);
    try {
      for (let round = 0; round < 2; round++) {
        for (const t of tiles) {
          const body = await archives.tile(ARCHIVE, t.z, t.x, t.y);
          expect(body?.bytes.equals(t.data)).toBe(true);
          expect(archives.cache.bytes).toBeLessThanOrEqual(budget);
        }
      }
      expect(archives.cache.size).toBeLessThan(tiles.length);
      expect(await archives.tile(ARCHIVE, 14, 0, 0)).toBeNull();
      const a = await archives.open(ARCHIVE);
      expect(a).toMatchObject({ gzip: true, minzoom: 0, maxzoom: 14 });
    } finally {
      await archives.close();
    }
  });

  it('gives equal tiles equal ETags and different tiles different ones', async () => {
    const archives = new Archives(new LocalStore(version), 10_000_000);
    try {
      const byEtag = new Map<string, Buffer>();
      for (const t of tiles) {
        const body = (await archives.tile(ARCHIVE, t.z, t.x, t.y))!;
        const seen = byEtag.get(body.etag);
        if (seen) expect(seen.equals(body.bytes)).toBe(true);
        byEtag.set(body.etag, body.bytes);
      }
      expect(byEtag.size).toBe(new Set(tiles.map((t) => t.data.toString('base64'))).size);
    } finally {
      await archives.close();
    }
  });

  it('names the archive when it is missing', async () => {
    const archives = new Archives(new LocalStore(version), 1_000_000);
    await expect(archives.tile('data/nope.pmtiles', 0, 0, 0)).rejects.toThrow(/nope\.pmtiles/);
  });
});
