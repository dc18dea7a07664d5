// `tilebake export` served by Debian's nginx with the generated configuration: every exported file
// (every tile, document, sprite and glyph range) byte-identical to `tilebake serve`, auth, gzip
// negotiation both ways, /height proxied; incremental exports; a SIGKILLed export.
import { randomBytes } from 'node:crypto';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { exportBuild } from '../export/index.ts';
import { LISTING_FILE, parseListing } from '../export/listing.ts';
import { writeNginxConf } from '../export/nginx-conf.ts';
import { gzipTilesetIds } from '../export/tiles.ts';
import { STAGING_DIR } from '../export/writer.ts';
import { openBuildToExport } from '../export/build-source.ts';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { buildFullOutput, VECTOR_TILESET, writeMonacoArchive, type FullOutput } from './fixtures/server/full-output.ts';
import { startCli } from './fixtures/cli.ts';
import { freePort, request, runNginx, startGatedRangeServer, type Nginx, type SourceTile } from './fixtures/server/helpers.ts';

const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };
const GZIP = { ...AUTH, 'accept-encoding': 'gzip' };

let build: FullOutput;
let exportDir: string;
let nginx: Nginx;
let server: RunningServer;
let publicUrl: string;
let confFile: string;

/** Every addressed, non-empty tile URL path of the build's archives. */
async function tilePaths(): Promise<string[]> {
  const manifest = JSON.parse(await readFile(join(build.out, 'manifest.json'), 'utf8'));
  const archives: { archive: string; prefix: string; suffix: string }[] = [
    ...Object.entries(manifest.tilesets).map(([id, t]: [string, any]) => ({ archive: t.archive, prefix: `data/${id}`, suffix: `.${t.format}` })),
    ...Object.entries(manifest.styles).flatMap(([id, s]: [string, any]) =>
      Object.values(s.archives).map((a: any) => ({ archive: a.archive, prefix: `styles/${id}`, suffix: `${a.scale === 2 ? '@2x' : ''}.${a.format}` })),
    ),
  ];
  const paths: string[] = [];
  for (const a of archives) {
    const reader = await openArchiveFile(join(build.out, a.archive));
    for await (const e of reader.entries()) {
      expect(e.runLength).toBe(1);
      if (e.length > 0) paths.push(`${a.prefix}/${e.z}/${e.x}/${e.y}${a.suffix}`);
    }
    await reader.close();
  }
  return paths;
}

/** The paths listed in an export folder's listing. */
async function listing(dir: string) {
  return parseListing(await readFile(join(dir, LISTING_FILE), 'utf8'), dir);
}

/** Every file under `dir` (relative paths), skipping the staging folder. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .filter((p) => !p.startsWith(STAGING_DIR));
}

/** URL of an export path (spaces and commas of font stacks encoded as a browser would). */
const urlOf = (base: string, path: string) => `${base}/${path.split('/').map(encodeURIComponent).join('/')}`;

beforeAll(async () => {
  build = await buildFullOutput();
  exportDir = join(tmpdir(), `tilebake-export-${randomBytes(4).toString('hex')}`);
  const port = await freePort();
  publicUrl = `http://127.0.0.1:${port}`;
  server = await startServer(
    { out: build.out, port: 0, host: '127.0.0.1', routingPort: 0, publicUrl, auth: true, cors: '*', cacheMb: 32, logLevel: 'silent' },
    { tokenHashes: [hashToken(TOKEN)] },
  );
  await exportBuild({ out: build.out, to: exportDir, publicUrl });
  const { store, manifest } = await openBuildToExport(build.out);
  confFile = join(exportDir, '..', `${exportDir.split('/').pop()}.nginx.conf`);
  await writeNginxConf(confFile, {
    root: exportDir,
    listen: `127.0.0.1:${port}`,
    tokens: [{ token: TOKEN, hash: hashToken(TOKEN), source: 'test' }],
    cors: '*',
    heightUpstream: new URL(server.routingUrl!).host,
    gzipTilesets: await gzipTilesetIds(store, manifest.tilesets),
    manifest,
  });
  nginx = await runNginx(() => `  access_log off;\n  include /etc/nginx/mime.types;\n  include ${confFile};`, `${publicUrl}/`, 'health', [exportDir]);
}, 120_000);

afterAll(async () => {
  await nginx?.stop();
  await server?.close();
  await rm(exportDir, { recursive: true, force: true });
  await rm(confFile, { force: true });
  await rm(`${confFile}.tokens`, { force: true });
  if (build) await rm(build.out, { recursive: true, force: true });
});

describe('an export served by nginx with the generated configuration', () => {
  it('serves every exported file with the bytes and headers of tilebake serve, and exports every non-empty tile', async () => {
    const files = [...(await listing(exportDir)).keys()];
    const tiles = await tilePaths();
    expect(tiles.length).toBe(build.tiles.filter((t) => t.data.length > 0).length + build.style.tiles.size);
    for (const t of tiles) expect(files).toContain(t);
    expect(files).toContain('data/openmaptiles.json');
    expect(files).toContain('styles/osm-bright/style.json');
    expect(files).toContain('styles/osm-bright.json');
    expect(files).toContain('styles/osm-bright/rendered.json');
    expect(files).toContain('styles/osm-bright/sprite@2x.png');
    expect(files.some((f) => f.startsWith('fonts/Noto Sans Regular/'))).toBe(true);
    for (const path of files) {
      const [fromServe, fromNginx] = await Promise.all([request(urlOf(server.url, path), { headers: GZIP }), request(urlOf(publicUrl, path), { headers: GZIP })]);
      expect([path, fromServe.status]).toEqual([path, 200]);
      expect([path, fromNginx.status]).toEqual([path, 200]);
      if (/^styles\/[^/]+\/rendered\.json$/.test(path)) {
        // A static export has only the baked tiles: its raster TileJSON does not offer the zooms serve upscales.
        const [exported, served] = [fromNginx.json(), fromServe.json()];
        expect(exported.maxzoom_served, path).toBe(exported.maxzoom);
        expect(served.maxzoom_served, path).toBeGreaterThan(served.maxzoom);
        expect([exported.overzoom, served.overzoom], path).toEqual([undefined, 'upscale']);
        const { maxzoom_served: _e, description: _de, ...exportedRest } = exported;
        const { maxzoom_served: _s, description: _ds, overzoom: _o, ...servedRest } = served;
        expect(exportedRest, path).toEqual(servedRest);
      } else expect(fromNginx.body.equals(fromServe.body), path).toBe(true);
      for (const h of ['content-type', 'content-encoding', 'cache-control', 'access-control-allow-origin']) {
        expect([path, h, fromNginx.headers[h]]).toEqual([path, h, fromServe.headers[h]]);
      }
    }
    // Documents point at the export's public URL.
    const tileJson = JSON.parse(await readFile(join(exportDir, 'data/openmaptiles.json'), 'utf8'));
    expect(tileJson.tiles).toEqual([`${publicUrl}/data/openmaptiles/{z}/{x}/{y}.pbf`]);
  }, 60_000);

  it('stores equal bytes once, hard-linked', async () => {
    const l = await listing(exportDir);
    const byHash = new Map<string, string[]>();
    for (const [p, f] of l) byHash.set(f.hash, [...(byHash.get(f.hash) ?? []), p]);
    const shared = [...byHash.values()].filter((ps) => ps.length > 1);
    for (const ps of shared) {
      const inodes = new Set(await Promise.all(ps.map(async (p) => (await stat(join(exportDir, p))).ino)));
      expect(inodes.size).toBe(1);
    }
  });

  it('negotiates gzip both ways for vector tiles, and answers If-None-Match with 304', async () => {
    const path = build.tiles.map((t) => `data/${VECTOR_TILESET}/${t.z}/${t.x}/${t.y}.pbf`)[0];
    const stored = build.tiles[0].data;
    const gz = await request(urlOf(publicUrl, path), { headers: GZIP });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gz.body.equals(stored)).toBe(true);
    for (const headers of [AUTH, { ...AUTH, 'accept-encoding': 'gzip;q=0, identity' }]) {
      const [plain, fromServe] = await Promise.all([request(urlOf(publicUrl, path), { headers }), request(urlOf(server.url, path), { headers })]);
      expect(plain.status).toBe(200);
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(plain.headers['content-type']).toBe('application/x-protobuf');
      expect(plain.body.equals(gunzipSync(stored))).toBe(true);
      expect(plain.body.equals(fromServe.body)).toBe(true);
      expect(plain.headers.etag).not.toBe(gz.headers.etag);
    }
    const again = await request(urlOf(publicUrl, path), { headers: { ...GZIP, 'if-none-match': String(gz.headers.etag) } });
    expect(again.status).toBe(304);
  });

  it('enforces bearer auth like the server: no token, wrong token, right token; preflight and /health open', async () => {
    const path = urlOf(publicUrl, 'data/openmaptiles.json');
    const none = await request(path);
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer realm="tilebake"');
    expect(none.json()).toEqual((await request(urlOf(server.url, 'data/openmaptiles.json'))).json());
    for (const authorization of [`Bearer ${TOKEN}x`, 'Basic Zm9vOmJhcg==', `Bearer ${TOKEN.slice(1)}`]) {
      const wrong = await request(path, { headers: { authorization } });
      expect(wrong.status).toBe(401);
      const fromServe = await request(urlOf(server.url, 'data/openmaptiles.json'), { headers: { authorization } });
      expect(wrong.json()).toEqual(fromServe.json());
      expect(wrong.headers['www-authenticate']).toBe(fromServe.headers['www-authenticate']);
    }
    expect((await request(path, { headers: { authorization: `bearer   ${TOKEN}` } })).status).toBe(200);
    const preflight = await request(path, { method: 'OPTIONS', headers: { origin: 'http://example.test', 'access-control-request-headers': 'authorization' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-headers']).toMatch(/Authorization/);
    expect((await request(`${publicUrl}/health`)).status).toBe(200);
  });

  it('answers missing tiles and other paths with a JSON 404, and hides the listing', async () => {
    for (const p of ['data/openmaptiles/14/0/0.pbf', 'styles/osm-bright/8/0/0.png', LISTING_FILE, 'manifest.json', 'nothing']) {
      const res = await request(urlOf(publicUrl, p), { headers: AUTH });
      expect([p, res.status]).toEqual([p, 404]);
      expect(res.json()).toMatchObject({ status: 404 });
    }
  });

  it('proxies POST /height to the tilebake serve routing listener', async () => {
    const body = JSON.stringify({ shape: [{ lat: 43.7384, lon: 7.4246 }] });
    const headers = { ...AUTH, 'content-type': 'application/json' };
    const [viaNginx, direct] = await Promise.all([
      request(`${publicUrl}/height`, { method: 'POST', headers, body }),
      request(`${server.routingUrl}/height`, { method: 'POST', headers, body }),
    ]);
    expect(viaNginx.status).toBe(200);
    expect(viaNginx.json()).toEqual(direct.json());
    expect((await request(`${publicUrl}/height`, { method: 'POST', body })).status).toBe(401);
  });
});

describe('incremental export', () => {
  /** Rewrite the build's vector archive with `tiles`. */
  const rewriteVector = (tiles: SourceTile[]) => writeMonacoArchive(join(build.out, `data/${VECTOR_TILESET}.pmtiles`), tiles);

  it('writes only changed files, deletes removed ones, keeps the rest untouched, and nginx serves the new state', async () => {
    const before = await listing(exportDir);
    const [changed, removed, ...rest] = build.tiles;
    const inodeBefore = (await stat(join(exportDir, `data/${VECTOR_TILESET}/${rest[0].z}/${rest[0].x}/${rest[0].y}.pbf`))).ino;
    const newData = gzipSync(Buffer.from('a changed tile'));
    await rewriteVector([{ ...changed, data: newData }, ...rest]);
    const r = await exportBuild({ out: build.out, to: exportDir, publicUrl });
    const pathOf = (t: SourceTile) => `data/${VECTOR_TILESET}/${t.z}/${t.x}/${t.y}.pbf`;
    expect(r.updated).toEqual([pathOf(changed)]);
    expect(r.removed).toEqual([pathOf(removed)]);
    expect(r.added).toEqual([]);
    expect(r.unchanged).toBe(before.size - 2);
    expect((await stat(join(exportDir, pathOf(rest[0])))).ino).toBe(inodeBefore);
    expect((await request(urlOf(publicUrl, pathOf(changed)), { headers: GZIP })).body.equals(newData)).toBe(true);
    expect((await request(urlOf(publicUrl, pathOf(removed)), { headers: GZIP })).status).toBe(404);
    expect((await filesUnder(exportDir)).sort()).toEqual([LISTING_FILE, ...(await listing(exportDir)).keys()].sort());
    // A second run over the same build changes nothing.
    const again = await exportBuild({ out: build.out, to: exportDir, publicUrl });
    expect([again.added.length, again.updated.length, again.removed.length]).toEqual([0, 0, 0]);
  });

  it('a SIGKILLed export leaves the previous export intact; the next export completes it', async () => {
    const before = await listing(exportDir);
    const snapshot = new Map<string, Buffer>();
    for (const p of before.keys()) snapshot.set(p, await readFile(join(exportDir, p)));
    // Change every vector tile, so tiles are staged before the raster archives are read.
    const tiles = build.tiles.slice(2).map((t, i) => ({ ...t, data: gzipSync(Buffer.from(`tile ${i}`)) }));
    await writeMonacoArchive(join(build.out, `data/${VECTOR_TILESET}.pmtiles`), tiles);
    const upstream = await startGatedRangeServer(build.out);
    try {
      // Hold the first read of a raster archive: the vector tiles are staged by then.
      upstream.holdOn((path) => path.endsWith('.png.pmtiles'));
      const { child, exited } = startCli(['export', '--out', upstream.url, '--to', exportDir, '--public-url', publicUrl]);
      let output = '';
      child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
      await Promise.race([upstream.held(), exited.then(() => Promise.reject(new Error(`export exited early: ${output}`)))]);
      // The export cannot get past the held read; let its in-flight writes of vector tiles land, then kill it.
      const stagedTiles = join(exportDir, STAGING_DIR, 'data', VECTOR_TILESET);
      while ((await readdir(stagedTiles, { recursive: true }).catch(() => [])).length < tiles.length) await new Promise((r) => setTimeout(r, 20));
      child.kill('SIGKILL');
      await exited;
    } finally {
      await upstream.close();
    }
    // Every file of the previous export is there with its bytes; nothing else appeared; the listing is the same.
    for (const [p, bytes] of snapshot) expect((await readFile(join(exportDir, p))).equals(bytes), p).toBe(true);
    const present = (await filesUnder(exportDir)).filter((p) => !p.startsWith('.tilebake-export.lock'));
    expect(present.sort()).toEqual([LISTING_FILE, ...snapshot.keys()].sort());
    expect(await listing(exportDir)).toEqual(before);

    const r = await exportBuild({ out: build.out, to: exportDir, publicUrl });
    expect(r.updated.length).toBe(tiles.length);
    await expect(stat(join(exportDir, STAGING_DIR))).rejects.toThrow();
    const t = tiles[0];
    const res = await request(urlOf(publicUrl, `data/${VECTOR_TILESET}/${t.z}/${t.x}/${t.y}.pbf`), { headers: GZIP });
    expect(res.body.equals(t.data)).toBe(true);
  }, 60_000);
});
