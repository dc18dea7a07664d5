// `tilebake export --nginx-conf --keys`: Debian's nginx accepts origin keys (map on $http_origin, else
// the Referer's origin) as `tilebake serve` does; tokens keep working; anything else is 401.
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../static-server/auth.ts';
import { parseKeys } from '../static-server/keys/keys-file.ts';
import { openBuildToExport } from '../pipeline/export/build-source.ts';
import { exportBuild } from '../pipeline/export/index.ts';
import { writeNginxConf } from '../pipeline/export/nginx-conf.ts';
import { gzipTilesetIds } from '../pipeline/export/tiles.ts';
import { buildStyleOutput, STYLE_ID, type StyleOutput } from './fixtures/styles/output.ts';
import { freePort, request, runNginx, type Nginx } from './fixtures/server/helpers.ts';

const TOKEN = randomBytes(18).toString('base64url');
let style: StyleOutput;
let nginx: Nginx;
let url: string;
const tile = `/styles/${STYLE_ID}/0/0/0.png`;

beforeAll(async () => {
  style = await buildStyleOutput();
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  const exportDir = join(style.out, 'export');
  await exportBuild({ out: style.out, to: exportDir, publicUrl: url });
  const { store, manifest } = await openBuildToExport(style.out);
  const keys = parseKeys({ keys: [{ name: 'site', origins: ['https://maps.example.com', 'https://*.example.org', 'http://localhost:*'] }] }, 'keys.json');
  const conf = join(style.out, 'nginx.conf');
  await writeNginxConf(conf, {
    root: exportDir,
    listen: `127.0.0.1:${port}`,
    tokens: [{ token: TOKEN, hash: hashToken(TOKEN), source: 'test' }],
    cors: '*',
    heightUpstream: '127.0.0.1:9',
    gzipTilesets: await gzipTilesetIds(store, manifest.tilesets),
    manifest,
    origins: keys.flatMap((k) => k.origins ?? []),
  });
  nginx = await runNginx(() => `  access_log off;\n  include /etc/nginx/mime.types;\n  include ${conf};`, `${url}/`, 'health', [style.out, exportDir]);
}, 240_000);

afterAll(async () => {
  await nginx?.stop();
  if (style) await rm(style.out, { recursive: true, force: true });
});

describe('nginx with origin keys', () => {
  it('allowed origins (Origin, else Referer) need no token', async () => {
    for (const headers of <Record<string, string>[]>[
      { origin: 'https://maps.example.com' },
      { origin: 'https://maps.example.com:443' },
      { origin: 'https://a.b.example.org' },
      { origin: 'http://localhost:5173' },
      { referer: 'https://maps.example.com/page.html?x=1' },
      { referer: 'https://tiles.example.org/' },
      { authorization: `Bearer ${TOKEN}` },
    ]) {
      const r = await request(`${url}${tile}`, { headers });
      expect(r.status, JSON.stringify(headers)).toBe(200);
      expect(r.headers['content-type']).toBe('image/png');
    }
  });

  it('other origins, look-alike hosts and referers, and wrong tokens get 401', async () => {
    for (const headers of <Record<string, string>[]>[
      {},
      { origin: 'https://evil.example.net' },
      { origin: 'https://example.org' },
      { origin: 'https://maps.example.com.evil.net' },
      { origin: 'http://maps.example.com' },
      { referer: 'https://evil.net/https://maps.example.com/' },
      { referer: 'https://maps.example.community/' },
      { origin: 'https://evil.example.net', referer: 'https://maps.example.com/' },
      { authorization: 'Bearer wrong', origin: 'https://maps.example.com' },
    ]) {
      const r = await request(`${url}${tile}`, { headers });
      expect(r.status, JSON.stringify(headers)).toBe(401);
      expect(r.headers['www-authenticate']).toMatch(/^Bearer realm="tilebake"/);
    }
  });
});
