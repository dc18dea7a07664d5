// Raster tiles above the baked zooms (static-server/overzoom/, `upscale` mode): the deepest baked
// ancestor's quadrant resampled, with the source zoom in a header, cached; TileJSON reports the baked
// and served maxzoom; above maxzoom_served and outside the build's tiles the answers stay as before.
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { request, serveOptions, type RawResponse } from './fixtures/server/helpers.ts';
import { buildStyleOutput, STYLE_ID, type StyleOutput } from './fixtures/styles/output.ts';
import { addGridStyle, GRID_MAXZOOM, GRID_STYLE } from './fixtures/styles/world-grid.ts';

const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };
const SERVED = 6;

let fixture: StyleOutput;
let tiles: Map<string, Buffer>;
let server: RunningServer;

beforeAll(async () => {
  fixture = await buildStyleOutput();
  tiles = await addGridStyle(fixture.out, { maxzoom_served: SERVED });
  server = await startServer(serveOptions(fixture.out), { tokenHashes: [hashToken(TOKEN)] });
}, 120_000);

afterAll(async () => {
  await server?.close();
  if (fixture) await rm(fixture.out, { recursive: true, force: true });
});

function get(path: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return request(`${server.url}${path}`, { headers: { ...AUTH, ...headers } });
}

async function raw(bytes: Buffer): Promise<{ data: Buffer; width: number; channels: number }> {
  const { data, info } = await sharp(bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, channels: info.channels };
}

describe('upscale mode', () => {
  for (const scale of [1, 2] as const) {
    it(`a z${GRID_MAXZOOM + 2} ${scale}x tile is its z${GRID_MAXZOOM} ancestor's quadrant, resampled`, async () => {
      // z5 tile 21/10: ancestor 3/5/2, quadrant column 1, row 2 (of 4) → source pixels from (64, 128), 64 px square at 1x.
      const [z, x, y] = [GRID_MAXZOOM + 2, 21, 10];
      const r = await get(`/styles/${GRID_STYLE}/${z}/${x}/${y}${scale === 2 ? '@2x' : ''}.png`);
      expect(r.status).toBe(200);
      expect(r.headers['content-type']).toBe('image/png');
      expect(r.headers['x-tilebake-source-zoom']).toBe(String(GRID_MAXZOOM));
      expect(r.headers.etag).toMatch(/^"/);
      const got = await raw(r.body);
      const T = 256 * scale;
      expect(got.width).toBe(T);
      const src = await raw(tiles.get(`${scale}x/${GRID_MAXZOOM}/5/2`)!);
      // Each output pixel is the source sampled at its centre: bilinear there matches bicubic wherever the
      // source is smooth (away from the fixture's hard-edged cross, where the kernels differ).
      const at = (sx: number, sy: number, c: number) => src.data[(sy * T + sx) * 3 + c];
      let worst = 0, compared = 0;
      for (let j = 0; j < T; j += 3) {
        for (let i = 0; i < T; i += 3) {
          const u = scale * 64 + (i + 0.5) / 4 - 0.5, v = scale * 128 + (j + 0.5) / 4 - 0.5;
          const u0 = Math.floor(u), v0 = Math.floor(v), fu = u - u0, fv = v - v0;
          for (let c = 0; c < 3; c++) {
            const near = [];
            for (let dy = -1; dy <= 2; dy++) for (let dx = -1; dx <= 2; dx++) near.push(at(u0 + dx, v0 + dy, c));
            if (Math.max(...near) - Math.min(...near) > 12) continue;
            const want = (at(u0, v0, c) * (1 - fu) + at(u0 + 1, v0, c) * fu) * (1 - fv) + (at(u0, v0 + 1, c) * (1 - fu) + at(u0 + 1, v0 + 1, c) * fu) * fv;
            worst = Math.max(worst, Math.abs(got.data[(j * T + i) * 3 + c] - want));
            compared++;
          }
        }
      }
      expect(compared).toBeGreaterThan(T * T / 20);
      expect(worst).toBeLessThanOrEqual(3);
      // The tile is not simply the ancestor or blank: its colours span the quadrant's range.
      const mean = (d: Buffer) => d.reduce((a, b) => a + b, 0) / d.length;
      expect(Math.abs(mean(got.data) - mean(src.data))).toBeLessThan(60);
    });
  }

  it('adjacent upscaled tiles meet without a seam, and a repeat is served from the cache with the same ETag', async () => {
    const z = GRID_MAXZOOM + 1;
    const [a, b] = await Promise.all([get(`/styles/${GRID_STYLE}/${z}/10/5.png`), get(`/styles/${GRID_STYLE}/${z}/11/5.png`)]);
    const [ra, rb] = [await raw(a.body), await raw(b.body)];
    // Last column of the left tile vs first column of the right: both continue the same gradient.
    let worst = 0;
    for (let j = 0; j < 256; j++) for (let c = 0; c < 3; c++) worst = Math.max(worst, Math.abs(ra.data[(j * 256 + 255) * 3 + c] - rb.data[(j * 256) * 3 + c]));
    expect(worst).toBeLessThanOrEqual(40);
    const again = await get(`/styles/${GRID_STYLE}/${z}/10/5.png`);
    expect(again.body.equals(a.body)).toBe(true);
    expect(again.headers.etag).toBe(a.headers.etag);
    expect((await get(`/styles/${GRID_STYLE}/${z}/10/5.png`, { 'if-none-match': String(a.headers.etag) })).status).toBe(304);
  });

  it('JPEG tiles are upscaled as JPEG', async () => {
    const r = await get(`/styles/${STYLE_ID}/10/533/373.jpg`);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('image/jpeg');
    expect(r.headers['x-tilebake-source-zoom']).toBe('8');
    expect((await sharp(r.body).metadata()).format).toBe('jpeg');
  });

  it('above maxzoom_served: 404 naming the served range; outside the build: 204; bad coordinates: 400', async () => {
    const above = await get(`/styles/${GRID_STYLE}/${SERVED + 1}/0/0.png`);
    expect(above.status).toBe(404);
    expect(above.json().error).toContain(`0-${SERVED}`);
    expect((await get(`/styles/${STYLE_ID}/12/0/0.png`)).status).toBe(204);
    expect((await get(`/styles/${STYLE_ID}/21/0/0.png`)).status).toBe(404);
    expect((await get(`/styles/${GRID_STYLE}/5/32/0.png`)).status).toBe(400);
  });

  it('TileJSON reports the baked and the served maxzoom', async () => {
    const grid = (await get(`/styles/${GRID_STYLE}/rendered.json`)).json();
    expect([grid.maxzoom, grid.maxzoom_served]).toEqual([GRID_MAXZOOM, SERVED]);
    const bright = (await get(`/styles/${STYLE_ID}/rendered.json`)).json();
    expect([bright.maxzoom, bright.maxzoom_served]).toEqual([8, 20]);
  });

  it('static maps above the baked zooms follow the same rule', async () => {
    const r = await get(`/styles/${GRID_STYLE}/static/0,0,${SERVED}/64x64.png`);
    expect(r.status).toBe(200);
    expect(r.headers['x-tilebake-source-zoom']).toBe(String(GRID_MAXZOOM));
    expect((await get(`/styles/${GRID_STYLE}/static/0,0,${SERVED + 0.5}/64x64.png`)).status).toBe(400);
  });
});
