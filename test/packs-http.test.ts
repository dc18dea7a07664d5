// GET /packs/… (issue 41) over the shared Liechtenstein build (fixtures/packs.ts: v1 at sequence 2434, v2
// after the real dailies 2435–2436), behind keys: the "packs" scope, the pack-tile quota, --max-pack-tiles,
// ?since, .mbtiles, /v/{build}/packs/…, and a version published while a pack streams. The same packs made by
// the CLI are in packs.test.ts. One build, one server, no browser.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PMTiles } from 'pmtiles';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishVersion } from '../lib/build-version.ts';
import { openArchiveFile, tileIdToZxy } from '../lib/pmtiles/index.ts';
import type { BBox } from '../lib/tile-math.ts';
import { pack } from '../export/pack.ts';
import { SEND_CHUNK_BYTES } from '../static-server/routes/packs.ts';
import { ADMIN, APP, APP_QUOTA, MAX_PACK_TILES, packOk as ok, packsBuild, pmtilesTiles, servePacksCopy, TILES_ONLY, VADUZ_BOX, type PacksBuild, type PacksServer } from './fixtures/packs.ts';
import { NodeFileSource } from './fixtures/pmtiles-file-source.ts';
import { heldGet } from './fixtures/server/slow-get.ts';
import { tempDir } from './render-helpers.ts';

const BOX = VADUZ_BOX.join(',');
/** A strip over Vaduz from the country's south to its north edge: 96 omt tiles, ~1.8 MB. */
const STREAM_BOX: BBox = [9.5, 47.04, 9.56, 47.28];

describe.sequential('GET /packs/… of the Liechtenstein build (2434, then the dailies 2435–2436)', () => {
  let b: PacksBuild;
  let dir: string;
  let s: PacksServer;
  /** The served copy (v1 until a test publishes v2). */
  let srvOut: string;
  let server: PacksServer['server'];
  const get = (path: string, secret = ADMIN) => s.get(path, secret);

  beforeAll(async () => {
    b = await packsBuild();
    dir = await tempDir('packs-http');
    s = await servePacksCopy(b, dir);
    ({ srvOut, server } = s);
    // The CLI's packs the server's answers are compared with: of v1 (served now), and of v2 in full and
    // since v1 (from the CLI copy, whose current version is v2).
    await ok(['pack', '--out', srvOut, '--to', join(dir, 'v1-pmtiles'), '--bbox', BOX]);
    await ok(['pack', '--out', s.cliOut, '--to', join(dir, 'pmtiles-full2'), '--bbox', BOX]);
    await ok(['pack', '--out', s.cliOut, '--to', join(dir, 'pmtiles-delta'), '--bbox', BOX, '--since', b.v1]);
  });
  afterAll(async () => {
    await s?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('HTTP: the "packs" scope, the pack-tile quota and --max-pack-tiles refuse before sending, with the estimate; .mbtiles is a 400', async () => {
    const path = `/packs/omt.pmtiles?bbox=${BOX}`;
    const noScope = await get(path, TILES_ONLY);
    expect(noScope.status).toBe(403);
    expect(noScope.json()).toMatchObject({ status: 403, error: 'key "tiles-only" does not have the "packs" scope' });
    // The whole box at z0–14 is 48 tiles: twice fits in the app's 100, a third time not.
    const first = await get(path, APP);
    expect(first.status).toBe(200);
    const tiles = Number(first.headers['x-tilebake-pack-tiles']);
    expect(tiles).toBeGreaterThan(APP_QUOTA / 3);
    expect(tiles).toBeLessThanOrEqual(APP_QUOTA / 2);
    expect((await get(path, APP)).status).toBe(200);
    const over = await get(path, APP);
    expect(over.status).toBe(429);
    expect(over.json()).toMatchObject({ status: 429, estimate: { tiles }, remaining: APP_QUOTA - 2 * tiles });
    expect(over.json().error).toContain(`a pack of ${tiles} tiles is more than the ${APP_QUOTA - 2 * tiles} left of its quota of ${APP_QUOTA} pack tiles per day`);
    // Smaller packs still fit in what is left.
    expect((await get(`/packs/omt.pmtiles?bbox=${BOX}&maxzoom=2`, APP)).status).toBe(200);
    // The whole country is over the server's limit.
    const big = await get('/packs/omt.pmtiles?bbox=9.47,47.04,9.64,47.28');
    expect(big.status).toBe(400);
    const e = big.json();
    expect(e).toMatchObject({ status: 400, limit: MAX_PACK_TILES });
    expect(e.estimate.tiles).toBeGreaterThan(MAX_PACK_TILES);
    expect(e.estimate.bytes).toBeGreaterThan(0);
    expect(e.error).toContain(`a pack of ${e.estimate.tiles} tiles is over this server's limit of ${MAX_PACK_TILES} (--max-pack-tiles)`);
    const mb = await get(`/packs/omt.mbtiles?bbox=${BOX}`);
    expect(mb.status).toBe(400);
    expect(mb.json().error).toContain('ask for /packs/omt.pmtiles');
    expect((await get('/packs/omt.pmtiles?bbox=1,2,3')).json()).toMatchObject({ status: 400, error: expect.stringContaining('bbox: expected west,south,east,north') });
  });

  it('HTTP: a pack streamed while a new version is published is wholly of the version it began on (published after the first bytes, before the end)', async () => {
    // 96 vector tiles, 1.8 MB; the tile 2436 changed, 14/8626/5753, lies past 1.2 MB.
    const box = STREAM_BOX.join(',');
    const packs = await Promise.all(
      [b.v1, b.v2].map(async (build) => {
        const to = join(dir, `stream-${build}`);
        await pack({ out: srvOut, to, bbox: box, tilesets: ['omt'], build, format: 'pmtiles' });
        return { path: join(to, 'omt.pmtiles'), tiles: await pmtilesTiles(join(to, 'omt.pmtiles')) };
      }),
    );
    const [p1, p2] = packs;
    const changed = [...p1.tiles.keys()].filter((k) => !p1.tiles.get(k)!.equals(p2.tiles.get(k)!));
    expect(changed).toContain('14/8626/5753');
    // Where the last tile that differs between the versions starts in the pack.
    const a = await openArchiveFile(p1.path);
    let lastChanged = 0;
    try {
      for await (const e of a.entries()) {
        for (let t = 0; t < e.runLength; t++) if (changed.includes(tileIdToZxy(e.tileId + t).join('/'))) lastChanged = Math.max(lastChanged, Number(a.header.tileDataOffset) + e.offset);
      }
    } finally {
      await a.close();
    }
    const held = await heldGet(`${server.url}/packs/omt.pmtiles?bbox=${box}`, [`Authorization: Bearer ${ADMIN}`]);
    expect(held.status).toBe(200);
    expect(held.headers['x-tilebake-build']).toBe(b.v1);
    const length = Number(held.headers['content-length']);
    // Held after the first bytes: what the server can have sent or read ahead since (its chunk in the
    // socket, one in the response stream, one being gathered; the client's window is a few kB) ends
    // before that tile, so it is read only once the client reads on.
    expect(held.firstBytes).toBeGreaterThan(0);
    expect(held.firstBytes + 3 * SEND_CHUNK_BYTES + 64 * 1024).toBeLessThan(lastChanged);
    await publishVersion(srvOut, b.v2);
    let switched = false;
    for (let i = 0; i < 100 && !switched; i++) {
      switched = (await get(`/packs/omt.pmtiles?bbox=${BOX}&maxzoom=0`)).headers['x-tilebake-build'] === b.v2;
      if (!switched) await new Promise((w) => setTimeout(w, 100));
    }
    expect(switched, 'the server serves v2 while the pack is held').toBe(true);
    const body = await held.rest();
    expect(body.length).toBe(length);
    expect(held.firstBytes).toBeLessThan(length);
    // Wholly v1: byte for byte v1's pack (so its metadata's build and every tile), not v2's.
    const streamed = join(dir, 'streamed.pmtiles');
    await writeFile(streamed, body);
    expect(((await new PMTiles(new NodeFileSource(streamed)).getMetadata()) as { tilebake: { build: string } }).tilebake.build).toBe(b.v1);
    const tiles = await pmtilesTiles(streamed);
    for (const k of changed) {
      expect(tiles.get(k)!.equals(p1.tiles.get(k)!), `${k} as in v1`).toBe(true);
      expect(tiles.get(k)!.equals(p2.tiles.get(k)!), `${k} not as in v2`).toBe(false);
    }
    expect(body.equals(await readFile(p1.path))).toBe(true);
  });

  it('HTTP: a pack is the CLI\'s pack byte for byte; /v/{build}/packs/… is immutable; ?since streams the delta', async () => {
    const cliPack = (f: string) => readFile(join(dir, 'v1-pmtiles', f));
    expect((await get(`/v/${b.v1}/packs/styles/osm-bright.png.pmtiles?bbox=${BOX}`)).body.equals(await cliPack('styles-osm-bright.png.pmtiles'))).toBe(true);
    // Now v2 is served; v1 stays reachable by its versioned URL, byte for byte the CLI's pack of v1.
    const v = await get(`/v/${b.v1}/packs/omt.pmtiles?bbox=${BOX}`);
    expect(v.status).toBe(200);
    expect(v.headers['cache-control']).toContain('immutable');
    expect(v.body.equals(await cliPack('omt.pmtiles'))).toBe(true);
    const cur = await get(`/packs/omt.pmtiles?bbox=${BOX}`);
    expect(cur.headers['x-tilebake-build']).toBe(b.v2);
    expect(cur.body.equals(await readFile(join(dir, 'pmtiles-full2', 'omt.pmtiles')))).toBe(true);
    const d = await get(`/packs/omt.pmtiles?bbox=${BOX}&since=${b.v1}`);
    expect(d.status).toBe(200);
    expect(d.body.equals(await readFile(join(dir, 'pmtiles-delta', 'omt.pmtiles')))).toBe(true);
    const gone = await get(`/packs/omt.pmtiles?bbox=${BOX}&since=20190101T000000Z-000000`);
    expect(gone.status).toBe(404);
    expect(gone.json().error).toContain(`kept: ${b.v1}, ${b.v2}`);
  });
});
