// Property-based fuzzing of the whole app through `inject` (fast-check), bounded in time: random and
// adversarial paths, methods, headers and /height bodies. Properties: never a 5xx; every error is
// the documented JSON; no answer contains the token or a server path; valid requests keep their
// answers. A failure prints fast-check's seed and path; rerun one with FUZZ_SEED=<seed>.
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePolyline } from '../lib/elevation/geo.ts';
import { buildApp } from '../static-server/app.ts';
import { archivesOf } from '../static-server/archives.ts';
import { hashToken } from '../static-server/auth.ts';
import type { ServerContext } from '../static-server/context.ts';
import { createServerContext } from '../static-server/serve.ts';
import { buildFullOutput, VECTOR_TILESET, type FullOutput } from './fixtures/server/full-output.ts';
import { ROOT, serveOptions } from './fixtures/server/helpers.ts';
import { STYLE_ID } from './fixtures/styles/output.ts';

const TOKEN = randomBytes(18).toString('base64url');
/** Time budget of each property (three properties: ~25 s in all, fewer runs on a slow machine). */
const PROPERTY_MS = 8_000;
const MAX_RUNS = 5_000;
const seed = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
const RUN = { numRuns: MAX_RUNS, interruptAfterTimeLimit: PROPERTY_MS, markInterruptAsFailure: false, ...(seed === undefined ? {} : { seed }) };

let fx: FullOutput;
let ctx: ServerContext;
let app: FastifyInstance;
let logs = '';
/** Valid requests and their answers before any fuzzing. */
const baseline: { req: InjectOptions; status: number; etag: unknown; body: Buffer }[] = [];

/** Things no answer may contain: the token, and paths of the server's files. */
const secrets = () => [TOKEN, fx.out, ROOT, `${tmpdir()}/tilebake-`];

/** Run a property within its time budget; on failure throw fast-check's report (seed, path, counterexample). */
async function assertProperty<T>(prop: fc.IAsyncProperty<T>): Promise<void> {
  const result = await fc.check(prop, RUN);
  if (result.failed) throw new Error(`${fc.defaultReportMessage(result)}\nRerun this case with FUZZ_SEED=${result.seed}.`);
  // Even a slow machine must get through a meaningful number of cases.
  expect(result.numRuns).toBeGreaterThan(100);
}

/** Check the properties every answer has. */
function checkAnswer(req: InjectOptions, r: LightMyRequestResponse): void {
  const what = `${req.method} ${String(req.url)}`;
  expect(r.statusCode, what).toBeLessThan(500);
  const text = r.rawPayload.toString('latin1') + JSON.stringify(r.headers);
  for (const s of secrets()) expect(text.includes(s), `${what} leaks ${s}`).toBe(false);
  if (r.statusCode >= 400 && req.method !== 'HEAD') {
    expect(String(r.headers['content-type']), what).toMatch(/^application\/json/);
    const body = r.json() as Record<string, unknown>;
    expect(typeof body.error, what).toBe('string');
    expect(body.status, what).toBe(r.statusCode);
  }
}

const AUTH_HEADERS = fc.oneof(
  fc.constant({ authorization: `Bearer ${TOKEN}` }),
  fc.constant({}),
  fc.constantFrom({ authorization: 'Bearer' }, { authorization: `bearer ${TOKEN}` }, { authorization: `Basic ${TOKEN}` }, { authorization: `Bearer ${TOKEN}x` }),
  fc.string({ maxLength: 40 }).map((s) => ({ authorization: `Bearer ${s}` })),
);

/** Path segments: real names, numbers, traversal in several encodings, unicode, long runs. */
const SEGMENT = fc.oneof(
  fc.constantFrom('data', 'styles', 'fonts', 'height', 'health', VECTOR_TILESET, STYLE_ID, `${VECTOR_TILESET}.json`, `${STYLE_ID}.json`, 'style.json', 'sprite.json', 'sprite@2x.png', 'Noto Sans Regular', '0-255.pbf', '256-511.pbf'),
  fc.constantFrom('..', '.', '%2e%2e', '%2E%2E%2F', '..%2f', '%2f', '%5c', '..%5c', '%00', '%c0%ae%c0%ae', '%25%32%65', '....//', '%', '%zz', '%%', '~', '*', '?'),
  fc.integer({ min: -3, max: 2 ** 31 }).map(String),
  fc.tuple(fc.nat({ max: 40000 }), fc.constantFrom('.pbf', '.png', '.jpg', '@2x.png', '@2x.jpg', '.webp', '', '.json', '@3x.png')).map(([n, e]) => `${n}${e}`),
  fc.string({ maxLength: 12 }).map(encodeURIComponent),
  fc.string({ unit: 'grapheme', maxLength: 8 }).map(encodeURIComponent),
  fc.nat({ max: 400 }).map((n) => 'a'.repeat(n)),
);
const PATH = fc
  .tuple(fc.array(SEGMENT, { minLength: 0, maxLength: 6 }), fc.option(fc.webQueryParameters(), { nil: undefined }), fc.boolean())
  .map(([segs, q, slash]) => `/${segs.join('/')}${slash ? '/' : ''}${q ? `?${q}` : ''}`);
const METHOD = fc.constantFrom('GET', 'GET', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS');
const HEADERS = fc.record(
  {
    'accept-encoding': fc.constantFrom('gzip', 'br', '*', 'gzip;q=0', 'identity', '', 'gzip;q=abc, *;q=0'),
    'if-none-match': fc.oneof(fc.constant('*'), fc.string({ maxLength: 30 })),
    'content-type': fc.constantFrom('application/json', 'application/json; charset=utf-16', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', ''),
    host: fc.constantFrom('example.org', 'a.b:8443', '[::1]:1', ''),
    origin: fc.constantFrom('https://evil.example', 'null'),
  },
  { requiredKeys: [] },
);

/** `v` if it is a finite number, else 0 (`Number(v)` throws for JSON objects such as `{"toString": 1}`). */
const numberOr0 = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
/** /height request bodies: JSON values, near-valid requests with one field wrong, and non-JSON text. */
const POINT = fc.record({ lat: fc.oneof(fc.double({ min: -100, max: 100 }), fc.jsonValue()), lon: fc.oneof(fc.double({ min: -200, max: 200 }), fc.jsonValue()) });
const HEIGHT_REQUEST = fc.record(
  {
    shape: fc.oneof(fc.array(POINT, { maxLength: 20 }), fc.jsonValue()),
    encoded_polyline: fc.oneof(fc.string({ maxLength: 60 }), fc.array(POINT.map((p) => ({ lat: numberOr0(p.lat), lon: numberOr0(p.lon) })), { maxLength: 10 }).map((ps) => encodePolyline(ps.filter((p) => Math.abs(p.lat) <= 90 && Math.abs(p.lon) <= 180)))),
    shape_format: fc.oneof(fc.constantFrom('polyline5', 'polyline6', 'geojson'), fc.jsonValue()),
    resample_distance: fc.oneof(fc.double(), fc.integer(), fc.jsonValue()),
    height_precision: fc.oneof(fc.integer({ min: -2, max: 4 }), fc.jsonValue()),
    range: fc.oneof(fc.boolean(), fc.jsonValue()),
    id: fc.jsonValue({ maxDepth: 8 }),
  },
  { requiredKeys: [] },
);
const HEIGHT_BODY = fc.oneof(
  HEIGHT_REQUEST.map((b) => JSON.stringify(b)),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 200 }),
  fc.nat({ max: 10_000 }).map((n) => `{"shape":[{"lat":43.7,"lon":7.42}],"id":${'['.repeat(n)}${']'.repeat(n)}}`),
  fc.nat({ max: 10_000 }).map((n) => `{"shape":${'{"a":'.repeat(n)}1${'}'.repeat(n)}}`),
);

beforeAll(async () => {
  fx = await buildFullOutput();
  const logStream = new Writable({ write: (c, _e, cb) => ((logs += c.toString()), cb()) });
  ctx = await createServerContext(serveOptions(fx.out, { cacheMb: 8, logLevel: 'warn' }), logStream);
  app = await buildApp(ctx, { role: 'tiles', tokenHashes: [hashToken(TOKEN)] });
  const auth = { authorization: `Bearer ${TOKEN}` };
  const valid: InjectOptions[] = [
    ...fx.tiles.flatMap((t) => [
      { method: 'GET' as const, url: `/data/${VECTOR_TILESET}/${t.z}/${t.x}/${t.y}.pbf`, headers: { ...auth, 'accept-encoding': 'gzip' } },
      { method: 'GET' as const, url: `/data/${VECTOR_TILESET}/${t.z}/${t.x}/${t.y}.pbf`, headers: auth },
    ]),
    ...[...fx.style.tiles.keys()].filter((_, i) => i % 7 === 0).map((k) => {
      const [key, z, x, y] = k.split('/');
      const [scale, format] = key.split('.');
      return { method: 'GET' as const, url: `/styles/${STYLE_ID}/${z}/${x}/${y}${scale === '2x' ? '@2x' : ''}.${format}`, headers: auth };
    }),
    { method: 'GET', url: `/data/${VECTOR_TILESET}.json`, headers: auth },
    { method: 'GET', url: `/styles/${STYLE_ID}/style.json`, headers: auth },
    { method: 'GET', url: `/styles/${STYLE_ID}/sprite@2x.json`, headers: auth },
    { method: 'GET', url: '/fonts/Noto%20Sans%20Regular,Metropolis%20Light/0-255.pbf', headers: auth },
    { method: 'POST', url: '/height', headers: { ...auth, 'content-type': 'application/json' }, payload: JSON.stringify({ range: true, shape: [{ lat: 43.7384, lon: 7.4246 }, { lat: 43.7311, lon: 7.4197 }] }) },
    { method: 'GET', url: '/health' },
  ];
  for (const req of valid) {
    const r = await app.inject(req);
    expect(r.statusCode, String(req.url)).toBe(200);
    baseline.push({ req, status: r.statusCode, etag: r.headers.etag, body: r.rawPayload });
  }
}, 120_000);

afterAll(async () => {
  await app?.close();
  if (ctx) await archivesOf(ctx).close();
  if (fx) await rm(fx.out, { recursive: true, force: true });
});

/** Send a random valid request and compare it with its answer before fuzzing. */
async function checkBaseline(i: number): Promise<void> {
  const b = baseline[i % baseline.length];
  const r = await app.inject(b.req);
  expect(r.statusCode, String(b.req.url)).toBe(b.status);
  expect(r.headers.etag, String(b.req.url)).toEqual(b.etag);
  expect(r.rawPayload.equals(b.body), String(b.req.url)).toBe(true);
}

describe('fuzzing the app', () => {
  it('random methods, paths and headers: no 5xx, JSON errors, no leaks, valid answers unchanged', async () => {
    await assertProperty(
      fc.asyncProperty(METHOD, PATH, AUTH_HEADERS, HEADERS, fc.option(fc.string({ maxLength: 100 }), { nil: undefined }), fc.nat(), async (method, url, auth, headers, payload, pick) => {
        const req: InjectOptions = { method: method as InjectOptions['method'], url, headers: { ...headers, ...auth }, ...(payload !== undefined && method !== 'GET' && method !== 'HEAD' ? { payload } : {}) };
        checkAnswer(req, await app.inject(req));
        await checkBaseline(pick);
      }),
    );
  });

  it('random and adversarial /height requests (POST body and GET ?json=): 200 or a 4xx with error_code, never a 5xx', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    await assertProperty(
      fc.asyncProperty(HEIGHT_BODY, fc.constantFrom('application/json', 'application/json; charset=utf-8', 'application/json; charset=latin1', 'text/plain'), fc.boolean(), fc.nat(), async (body, type, viaGet, pick) => {
        const req: InjectOptions = viaGet
          ? { method: 'GET', url: `/height?json=${encodeURIComponent(body)}`, headers: auth }
          : { method: 'POST', url: '/height', headers: { ...auth, 'content-type': type }, payload: body };
        const r = await app.inject(req);
        checkAnswer(req, r);
        if (r.statusCode !== 200) {
          expect([400, 413], body.slice(0, 80)).toContain(r.statusCode);
          expect(typeof (r.json() as { error_code?: unknown }).error_code).toBe('number');
        }
        await checkBaseline(pick);
      }),
    );
  });

  it('random bytes in tile coordinates and font stacks of real routes', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const routes = fc.constantFrom(`/data/${VECTOR_TILESET}/`, `/styles/${STYLE_ID}/`, '/fonts/');
    await assertProperty(
      fc.asyncProperty(routes, fc.array(fc.oneof(fc.string({ unit: 'binary', maxLength: 10 }), fc.integer().map(String)), { minLength: 1, maxLength: 3 }), fc.nat(), async (prefix, parts, pick) => {
        const req: InjectOptions = { method: 'GET', url: prefix + parts.map(encodeURIComponent).join('/'), headers: auth };
        checkAnswer(req, await app.inject(req));
        await checkBaseline(pick);
      }),
    );
    // Nothing went wrong inside the server either.
    expect(logs).not.toContain('request failed');
  });
});
