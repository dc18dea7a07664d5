// MLT in a static export: `tilebake export` writes a tileset's MLT tiles beside its MVT tiles as
// `data/{id}/{z}/{x}/{y}.mlt` (the stored bytes), and nginx with the export's configuration serves them
// as `tilebake serve` does: the MLT media type, gzip.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openBuildToExport } from '../export/build-source.ts';
import { exportBuild } from '../export/index.ts';
import { writeNginxConf } from '../export/nginx-conf.ts';
import { gzipTilesetIds } from '../export/tiles.ts';
import type { Manifest } from '../lib/manifest.ts';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { freePort, request } from './fixtures/server/http.ts';
import { runNginx, type Nginx } from './fixtures/server/nginx.ts';
import { MLT_TILESET, sharedMltBuild } from './fixtures/mlt.ts';

let dir: string;
let version: string;
let nginx: Nginx;
let url: string;

beforeAll(async () => {
  const build = await sharedMltBuild();
  version = build.version;
  dir = await mkdtemp(join(tmpdir(), 'tilebake-mlt-export-'));
  const to = join(dir, 'export');
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  await exportBuild({ out: build.out, to, publicUrl: url, only: ['tilesets'] });
  const { store, manifest } = await openBuildToExport(build.out);
  const conf = join(dir, 'export.nginx.conf');
  await writeNginxConf(conf, { root: to, listen: `127.0.0.1:${port}`, tokens: null, cors: '*', heightUpstream: '127.0.0.1:9', gzipTilesets: await gzipTilesetIds(store, manifest.tilesets), manifest });
  nginx = await runNginx(() => `  access_log off;\n  include /etc/nginx/mime.types;\n  include ${conf};`, `${url}/`, 'health', [dir, to]);
}, 600_000);

afterAll(async () => {
  await nginx?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('an export of a tileset with MLT', () => {
  it('holds every MLT tile as data/{id}/{z}/{x}/{y}.mlt, served by nginx as application/vnd.maplibre-tile (gzip)', async () => {
    const manifest = JSON.parse(await readFile(join(version, 'manifest.json'), 'utf8')) as Manifest;
    const mlt = await openArchiveFile(join(version, manifest.tilesets[MLT_TILESET].mlt!.archive));
    try {
      let files = 0;
      for await (const e of mlt.entries()) {
        const stored = await mlt.readRange(e.offset, e.length);
        const path = `data/${MLT_TILESET}/${e.z}/${e.x}/${e.y}.mlt`;
        expect(Buffer.compare(await readFile(join(dir, 'export', path)), stored), path).toBe(0);
        if (files++ % 50 === 0) {
          const r = await request(`${url}/${path}`, { headers: { 'accept-encoding': 'gzip' } });
          expect(r.status).toBe(200);
          expect(r.headers['content-type']).toBe('application/vnd.maplibre-tile');
          expect(r.headers['content-encoding']).toBe('gzip');
          expect(Buffer.compare(r.body, stored)).toBe(0);
        }
      }
      expect(files).toBe(mlt.header.numTileEntries);
    } finally {
      await mlt.close();
    }
  });
});
