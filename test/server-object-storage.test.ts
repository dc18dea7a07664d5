// Object-storage mode: `tilebake serve --out http://…/` against Debian's nginx serving a build folder.
import { currentVersionDir } from '../lib/build-version.ts';
import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { monacoTiles, request, runServeToExit, serveSampleFromNginx, type Nginx, type NginxServe, type ServeProcess, type SourceTile } from './fixtures/server/helpers.ts';

const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };
const ARCHIVE = 'data/openmaptiles.pmtiles';

let setup: NginxServe;
let out: string;
let nginx: Nginx;
let server: ServeProcess;
let tiles: SourceTile[];

function path(t: { z: number; x: number; y: number }): string {
  return `/data/openmaptiles/${t.z}/${t.x}/${t.y}.pbf`;
}

/** nginx access-log lines for the archive: `status "range" bytes uri`. */
async function archiveRequests(): Promise<{ status: number; range: string; bytes: number }[]> {
  return (await nginx.accessLog())
    .split('\n')
    .filter((l) => l.endsWith(`/${ARCHIVE}`))
    .map((l) => {
      const m = /^(\d+) "([^"]*)" (\d+) /.exec(l)!;
      return { status: Number(m[1]), range: m[2], bytes: Number(m[3]) };
    });
}

beforeAll(async () => {
  tiles = monacoTiles();
  setup = await serveSampleFromNginx(TOKEN);
  ({ out, nginx, server } = setup);
});

afterAll(async () => {
  await setup?.close();
});

describe('serving from object storage (nginx, HTTP Range)', () => {
  it('serves every tile bit-exact, reading the archive only with Range requests', async () => {
    for (const t of tiles) {
      const gz = await request(`${server.url}${path(t)}`, { headers: { ...AUTH, 'accept-encoding': 'gzip' } });
      expect(gz.status, path(t)).toBe(200);
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(gz.body.equals(t.data), path(t)).toBe(true);
      const plain = await request(`${server.url}${path(t)}`, { headers: AUTH });
      expect(plain.body.equals(gunzipSync(t.data))).toBe(true);
    }
    const reqs = await archiveRequests();
    expect(reqs.length).toBeGreaterThan(0);
    const size = (await stat(join((await currentVersionDir(out))!.dir, ARCHIVE))).size;
    for (const r of reqs) {
      expect(r.status).toBe(206);
      expect(r.range).toMatch(/^bytes=\d+-\d+$/);
      expect(r.bytes).toBeLessThan(size);
    }
    // Header + root directory once, then one read per distinct tile (directories are cached).
    expect(reqs.length).toBeLessThanOrEqual(tiles.length + 2);
  });

  it('answers repeated requests from the cache without new reads', async () => {
    const before = (await archiveRequests()).length;
    for (const t of tiles) {
      const r = await request(`${server.url}${path(t)}`, { headers: { ...AUTH, 'accept-encoding': 'gzip' } });
      expect(r.body.equals(t.data)).toBe(true);
    }
    expect((await archiveRequests()).length).toBe(before);
  });

  it('serves the TileJSON, 204 for a missing tile and 404 outside the zoom range', async () => {
    const tj = (await request(`${server.url}/data/openmaptiles.json`, { headers: AUTH })).json();
    // Versioned URLs (on by default): the tile URLs name the published build.
    expect(tj.tiles).toEqual([expect.stringMatching(new RegExp(`^${server.url}/v/[\\w.-]+/data/openmaptiles/\\{z\\}/\\{x\\}/\\{y\\}\\.pbf$`))]);
    expect(tj.vector_layers.length).toBeGreaterThan(0);
    expect((await request(`${server.url}/data/openmaptiles/14/0/0.pbf`, { headers: AUTH })).status).toBe(204);
    expect((await request(`${server.url}/data/openmaptiles/15/0/0.pbf`, { headers: AUTH })).status).toBe(404);
  });

  it('refuses to start when the URL has no manifest', async () => {
    const bad = await runServeToExit(['--out', `${nginx.url}missing/`, '--port', '0', '--workers', '1'], { TILEBAKE_TOKENS: TOKEN });
    expect(bad.code).not.toBe(0);
    expect(bad.output).toContain(`${nginx.url}missing/current.json: not found, and no manifest.json either`);
  });
});
