// Limits enforced before work, every 4xx in the documented JSON shape (fastify's and Node's own
// included), and the cache headers of authenticated and open servers.
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { rm } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePolyline } from '../lib/elevation/geo.ts';
import { hashToken } from '../static-server/auth.ts';
import { MAX_HEADER_BYTES } from '../static-server/errors.ts';
import { MAX_JSON_DEPTH } from '../static-server/json-body.ts';
import { startServer, startupWarnings, type RunningServer } from '../static-server/serve.ts';
import { buildFullOutput, VECTOR_TILESET, type FullOutput } from './fixtures/server/full-output.ts';
import { request, serveOptions, startServe, type RawResponse } from './fixtures/server/helpers.ts';
import { STYLE_ID } from './fixtures/styles/output.ts';

const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };
const JSON_TYPE = 'application/json';
const SHAPE = [{ lat: 43.7384, lon: 7.4246 }, { lat: 43.7311, lon: 7.4197 }];

let fx: FullOutput;
let server: RunningServer;
let logs = '';

function post(body: string, type = JSON_TYPE, base = server.url): Promise<RawResponse> {
  return request(`${base}/height`, { method: 'POST', headers: { ...AUTH, 'content-type': type }, body });
}

/** The documented error shape: JSON `{"error": string, "status": N, ...}` with the HTTP status. */
function expectJsonError(r: RawResponse, status: number, code?: number): Record<string, unknown> {
  expect(r.status).toBe(status);
  expect(r.headers['content-type']).toMatch(/^application\/json/);
  const body = r.json();
  expect(body.status).toBe(status);
  expect(typeof body.error).toBe('string');
  expect(body).not.toHaveProperty('statusCode');
  expect(body).not.toHaveProperty('message');
  if (code !== undefined) expect(body.error_code).toBe(code);
  return body;
}

/** Send raw bytes on a new connection; resolves with everything the server wrote before closing. */
function raw(text: string): Promise<string> {
  const { port } = new URL(server.url);
  return new Promise((res, rej) => {
    const sock = connect(Number(port), '127.0.0.1', () => sock.end(text));
    let got = '';
    sock.on('data', (d: Buffer) => (got += d.toString()));
    sock.on('close', () => res(got));
    sock.on('error', rej);
  });
}

/** Status line and JSON body of a raw HTTP answer. */
function parseRaw(answer: string): { status: number; type: string | undefined; body: Record<string, unknown> } {
  const [head, body] = answer.split('\r\n\r\n');
  const status = Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]);
  const type = /^content-type: (.*)$/im.exec(head)?.[1];
  return { status, type, body: JSON.parse(body) as Record<string, unknown> };
}

beforeAll(async () => {
  fx = await buildFullOutput();
  const logStream = new Writable({ write: (c, _e, cb) => ((logs += c.toString()), cb()) });
  server = await startServer(serveOptions(fx.out, { logLevel: 'info' }), { tokenHashes: [hashToken(TOKEN)], logStream });
});

afterAll(async () => {
  await server?.close();
  if (fx) await rm(fx.out, { recursive: true, force: true });
});

describe('JSON bodies', () => {
  it('refuses a deeply nested id (5,000 levels in 10 KB) with a 400, without a log line', async () => {
    const nested = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    const r = await post(`{"shape":${JSON.stringify(SHAPE)},"id":${nested}}`);
    const body = expectJsonError(r, 400, 100);
    expect(body.error).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels`);
    const q = encodeURIComponent(`{"shape":${JSON.stringify(SHAPE)},"id":${'['.repeat(100)}${']'.repeat(100)}}`);
    expectJsonError(await request(`${server.url}/height?json=${q}`, { headers: AUTH }), 400, 100);
    expect(logs).not.toContain('request failed');
    expect(logs).not.toMatch(/\n\s+at /);
  });

  it('echoes an id nested within the limit; brackets inside strings do not count', async () => {
    const id = { a: [[[[{ b: '[[[[[[[[[[[[' + '{'.repeat(200) }]]]] };
    const r = await post(JSON.stringify({ shape: SHAPE, id }));
    expect(r.status).toBe(200);
    expect(r.json().id).toEqual(id);
  });

  it('refuses charsets other than UTF-8 instead of misreading them', async () => {
    const body = JSON.stringify({ shape: SHAPE });
    for (const charset of ['utf-16', 'latin1', 'ISO-8859-1']) {
      const r = await post(body, `application/json; charset=${charset}`);
      expect(expectJsonError(r, 400, 100).error).toContain(`charset "${charset.toLowerCase()}" is not supported`);
    }
    for (const charset of ['utf-8', 'UTF-8', '"utf-8"']) {
      expect((await post(body, `application/json; charset=${charset}`)).status).toBe(200);
    }
  });

  it('applies the point limit while decoding a polyline: an 8 MB one is refused without reading it all', async () => {
    // 4 million (0, 0) points and then a bad character: the limit trips long before the bad character is reached.
    const huge = `${'??'.repeat(4_000_000)}!`;
    const r = await post(JSON.stringify({ encoded_polyline: huge }));
    expect(expectJsonError(r, 400, 314).error).toContain('more than 100000');
    const shape = Array.from({ length: 100_001 }, () => SHAPE[0]);
    expectJsonError(await post(JSON.stringify({ shape, resample_distance: 1000 })), 400, 314);
    // A valid line within the limit still answers.
    const ok = await post(JSON.stringify({ encoded_polyline: encodePolyline(SHAPE) }));
    expect(ok.status).toBe(200);
  });

  it('answers fastify\'s own 415 in the same shape', async () => {
    const r = await request(`${server.url}/data/${VECTOR_TILESET}.json`, { method: 'OPTIONS', headers: { 'content-type': 'text/xml' }, body: '<x/>' });
    expectJsonError(r, 415);
  });
});

describe('Node\'s HTTP parser errors', () => {
  it('431 for headers over the limit, 400 for a malformed request, both JSON', async () => {
    const big = parseRaw(await raw(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(MAX_HEADER_BYTES + 10)}\r\n\r\n`));
    expect(big.status).toBe(431);
    expect(big.type).toMatch(/^application\/json/);
    expect(big.body).toEqual({ error: `request headers larger than ${MAX_HEADER_BYTES} bytes`, status: 431 });
    const bad = parseRaw(await raw('GARBAGE\r\n\r\n'));
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: 'malformed HTTP request', status: 400 });
  });
});

describe('cache headers', () => {
  const tile = () => fx.tiles[0];
  const tilePath = () => `/data/${VECTOR_TILESET}/${tile().z}/${tile().x}/${tile().y}.pbf`;

  it('authenticated answers are private by default; documents built from Host vary by Host; errors are not stored', async () => {
    const t = await request(`${server.url}${tilePath()}`, { headers: AUTH });
    expect(t.headers['cache-control']).toBe('private, max-age=86400');
    for (const doc of [`/data/${VECTOR_TILESET}.json`, `/styles/${STYLE_ID}/rendered.json`, `/styles/${STYLE_ID}.json`, `/styles/${STYLE_ID}/style.json`]) {
      const r = await request(`${server.url}${doc}`, { headers: AUTH });
      expect(r.status, doc).toBe(200);
      expect(r.headers['cache-control'], doc).toBe('private, max-age=300');
      expect(String(r.headers.vary), doc).toMatch(/\bHost\b/);
    }
    const h = await request(`${server.url}/height?json=${encodeURIComponent(JSON.stringify({ shape: SHAPE }))}`, { headers: AUTH });
    expect(h.headers['cache-control']).toBe('private, max-age=86400');
    for (const r of [await request(`${server.url}${tilePath()}`), await request(`${server.url}/data/nope.json`, { headers: AUTH })]) {
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.headers['cache-control']).toBe('no-store');
    }
    expect((await request(`${server.url}/health`)).headers['cache-control']).toBe('no-store');
  });

  it('public only when configured or without auth; no Vary: Host with --public-url', async () => {
    const configured = await startServer(serveOptions(fx.out, { cacheControl: 'public, max-age=60', publicUrl: 'https://maps.example.org' }), { tokenHashes: [hashToken(TOKEN)] });
    const open = await startServer(serveOptions(fx.out, { auth: false }), { tokenHashes: null });
    try {
      const c = await request(`${configured.url}${tilePath()}`, { headers: AUTH });
      expect(c.headers['cache-control']).toBe('public, max-age=60');
      const cj = await request(`${configured.url}/data/${VECTOR_TILESET}.json`, { headers: AUTH });
      expect(cj.headers['cache-control']).toBe('public, max-age=300');
      expect(String(cj.headers.vary ?? '')).not.toMatch(/\bHost\b/);
      const o = await request(`${open.url}${tilePath()}`);
      expect(o.status).toBe(200);
      expect(o.headers['cache-control']).toBe('public, max-age=86400');
      expect((await request(`${open.url}/styles/${STYLE_ID}/style.json`)).headers['cache-control']).toBe('public, max-age=300');
    } finally {
      await configured.close();
      await open.close();
    }
  });

  it('warns at start-up about --no-auth and about public caching of authenticated answers', async () => {
    const base = serveOptions(fx.out);
    expect(startupWarnings(base)).toEqual([]);
    expect(startupWarnings({ ...base, cacheControl: 'public, max-age=60' })).toEqual([expect.stringContaining('a shared cache (CDN, proxy) may store token-protected answers')]);
    expect(startupWarnings({ ...base, auth: false, cacheControl: 'public, max-age=60' })).toEqual([expect.stringContaining('serving without authentication (--no-auth)')]);
    // And the CLI prints it.
    const s = await startServe(['--out', fx.out, '--port', '0', '--host', '127.0.0.1', '--workers', '1', '--no-auth']);
    try {
      expect(s.output()).toContain('serving without authentication (--no-auth)');
    } finally {
      s.proc.kill('SIGTERM');
      await s.exited;
    }
  });
});
