// GET /search and /reverse served (in process) over a versioned copy of the server fixture, whose
// tileset carries the search index of the Monaco extract: Photon's GeoJSON shape, filters, `lang`,
// `/v/{build}/search`, a 400 naming each bad parameter, never a 500 whatever `q` holds, a 404 for a
// build without an index, the `search` key scope and rates, the metrics' `search` kind, and a build on
// HTTP object storage (the index downloaded once into the cache, checked against the manifest's sha256).
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newBuildId, publishVersion, versionPath } from '../lib/build-version.ts';
import { haversine } from '../lib/geo-distance.ts';
import { LocalStore } from '../lib/storage.ts';
import { buildApp } from '../static-server/app.ts';
import { contextOver } from '../static-server/new-context.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { buildFullOutput, type FullOutput } from './fixtures/server/full-output.ts';
import { serveOptions, startGatedRangeServer, type GatedRangeServer } from './fixtures/server/helpers.ts';

const ALL = 'search-test-all';
const TILES_ONLY = 'search-test-tiles';
const SEARCH_ONLY = 'search-test-search';

interface Answer {
  type: string;
  features: { type: string; geometry: { type: string; coordinates: [number, number] }; properties: Record<string, unknown> }[];
}

let fx: FullOutput;
let dir: string;
let root: string;
let build: string;
let server: RunningServer;

const get = async (path: string, token = ALL) => fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
const answer = async (path: string, token = ALL) => {
  const res = await get(path, token);
  expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
  return (await res.json()) as Answer;
};

beforeAll(async () => {
  fx = await buildFullOutput();
  dir = await mkdtemp(join(tmpdir(), 'tilebake-search-http-'));
  root = join(dir, 'out');
  build = newBuildId();
  await cp(fx.out, join(root, versionPath(build)), { recursive: true });
  await publishVersion(root, build);
  const keys = join(dir, 'keys.json');
  await writeFile(keys, JSON.stringify({ keys: [
    { name: 'all', secret: ALL },
    { name: 'tiles', secret: TILES_ONLY, scopes: ['tiles'] },
    { name: 'searcher', secret: SEARCH_ONLY, scopes: ['search'], rate: { perSecond: 0.01, burst: 3 } },
  ] }));
  server = await startServer(serveOptions(root, { keysFile: keys, stateDir: join(dir, 'state'), versionPollMs: 0, logLevel: 'silent', versionedUrls: true }));
});

afterAll(async () => {
  await server?.close();
  for (const d of [dir, fx?.out]) if (d) await rm(d, { recursive: true, force: true });
});

describe('GET /search', () => {
  it('answers a FeatureCollection in Photon\'s shape, the settlement first', async () => {
    const res = await get('/search?q=Monte-Carlo&limit=5');
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('cache-control')).toMatch(/no-cache/);
    const a = (await res.json()) as Answer;
    expect(a.type).toBe('FeatureCollection');
    expect(a.features.length).toBeGreaterThan(1);
    const [f] = a.features;
    expect(f).toMatchObject({ type: 'Feature', geometry: { type: 'Point' }, properties: { name: 'Monte-Carlo', kind: 'place', osm_type: 'N', osm_key: 'place', osm_value: 'suburb', city: 'Monaco', country: 'Monaco' } });
    expect(typeof f.properties.osm_id).toBe('number');
    // Photon's extent: [west, north, east, south], around the point.
    const [w, n, e, s] = f.properties.extent as number[];
    const [lon, lat] = f.geometry.coordinates;
    expect(w < lon && lon < e && s < lat && lat < n).toBe(true);
  });

  it('filters by kind and bbox, ranks by distance with near, answers lang', async () => {
    const streets = await answer('/search?q=Boulevard&kind=street&limit=50');
    expect(streets.features.length).toBeGreaterThan(10);
    expect(new Set(streets.features.map((f) => f.properties.kind))).toEqual(new Set(['street']));
    const box = [7.41, 43.725, 7.42, 43.735];
    const inBox = await answer(`/search?q=Boulevard&bbox=${box.join(',')}&limit=20`);
    expect(inBox.features.length).toBeGreaterThan(0);
    for (const f of inBox.features) {
      const [lon, lat] = f.geometry.coordinates;
      expect(lon >= box[0] && lon <= box[2] && lat >= box[1] && lat <= box[3], JSON.stringify(f.properties)).toBe(true);
    }
    // The streets named Boulevard… nearest a point: the first answer with `near` is the nearest of them.
    const near = { lon: 7.4335, lat: 43.7475 };
    const first = (await answer(`/search?q=Boulevard&kind=street&limit=1&near=${near.lon},${near.lat}`)).features[0];
    const nearest = Math.min(...streets.features.map((f) => haversine(near, { lon: f.geometry.coordinates[0], lat: f.geometry.coordinates[1] })));
    expect(haversine(near, { lon: first.geometry.coordinates[0], lat: first.geometry.coordinates[1] })).toBeLessThanOrEqual(nearest + 1);
    // Photon's lat and lon do the same.
    expect((await answer(`/search?q=Boulevard&kind=street&limit=1&lat=${near.lat}&lon=${near.lon}`)).features[0]).toEqual(first);
    const ru = await answer('/search?q=Monaco&kind=place&limit=1&lang=ru');
    expect(ru.features[0].properties.name).toBe('Монако');
    expect((await answer('/search?q=Монако&limit=3')).features.some((f) => f.properties.name === 'Monaco')).toBe(true);
  });

  it('answers /v/{build}/search for good, and a pruned version 404', async () => {
    const res = await get(`/v/${build}/search?q=Monaco`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toMatch(/immutable/);
    expect(await res.json()).toEqual(await answer('/search?q=Monaco'));
    expect((await get('/v/20200101T000000Z-000000/search?q=Monaco')).status).toBe(404);
  });

  it('answers 400 naming the bad parameter, in the error shape', async () => {
    const cases: [string, RegExp][] = [
      ['/search', /^q: required/],
      [`/search?q=${'a'.repeat(201)}`, /^q: longer than 200 characters/],
      ['/search?q=x&near=7.4', /^near: expected lon,lat/],
      ['/search?q=x&bbox=7,43,7,44', /^bbox: expected west,south,east,north/],
      ['/search?q=x&limit=51', /^limit: expected a whole number 1–50/],
      ['/search?q=x&kind=shop', /^kind: expected/],
      ['/search?q=x&lang=x1', /^lang: /],
      ['/search?q=a&q=b', /^q: given 2 times/],
      ['/reverse?lon=7.42', /^lat: required/],
      ['/reverse?lat=43.7&lon=7.42&radius=50', /^radius: expected/],
    ];
    for (const [path, message] of cases) {
      const res = await get(path);
      const body = (await res.json()) as { error: string; status: number };
      expect(res.status, path).toBe(400);
      expect(body.status).toBe(400);
      expect(body.error, path).toMatch(message);
    }
  });

  it('never fails on what q holds (FTS5 syntax, quotes, control characters, any script)', async () => {
    const app = server.apps[0];
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ maxLength: 60 }), fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('"', '*', 'NEAR(a b)', 'a AND', 'x OR y', '-x', 'x:y', '^x', '(x', "'; DROP TABLE entry; --")), async (q) => {
        const r = await app.inject({ method: 'GET', url: `/search?q=${encodeURIComponent(q)}`, headers: { authorization: `Bearer ${ALL}` } });
        expect([200, 400], `${JSON.stringify(q)}: ${r.body}`).toContain(r.statusCode);
      }),
      { numRuns: 300 },
    );
  });
});

describe('GET /reverse', () => {
  it('answers the street at a point with its distance, the settlement around it', async () => {
    // On Boulevard Albert 1er, by the harbour.
    const a = await answer('/reverse?lat=43.73496&lon=7.42143&limit=3');
    expect(a.features.length).toBeGreaterThan(0);
    const f = a.features[0];
    expect(f.properties).toMatchObject({ kind: 'street', city: 'Monaco' });
    expect(f.properties.distance as number).toBeLessThan(30);
    const d = a.features.map((x) => x.properties.distance as number);
    expect([...d].sort((x, y) => x - y)).toEqual(d);
    expect((await answer('/reverse?lat=43.73496&lon=7.42143&kind=address&limit=3')).features.every((x) => x.properties.kind === 'address')).toBe(true);
    expect((await answer('/reverse?lat=0&lon=0')).features).toEqual([]);
  });
});

describe('keys, metrics, a build without an index', () => {
  it('needs the search scope; rates apply', async () => {
    const refused = await get('/search?q=Monaco', TILES_ONLY);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ scope: 'search' });
    expect((await get('/reverse?lat=43.73&lon=7.42', TILES_ONLY)).status).toBe(403);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await get('/search?q=Monaco', SEARCH_ONLY)).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
  });

  it('counts requests as kind "search"', async () => {
    const text = await (await get('/metrics')).text();
    expect(text).toMatch(/^tilebake_http_requests_total\{kind="search",status="200"\} \d+/m);
    expect(text).toMatch(/^tilebake_http_requests_total\{kind="search",status="400"\} \d+/m);
  });

  it('answers 404 saying the build has no index', async () => {
    const store = new LocalStore(fx.out);
    const manifest = JSON.parse(await readFile(join(fx.out, 'manifest.json'), 'utf8'));
    delete manifest.tilesets.openmaptiles.search;
    const app = await buildApp(contextOver(store, manifest, serveOptions(fx.out, { logLevel: 'silent' })), { role: 'tiles', tokenHashes: null });
    try {
      for (const url of ['/search?q=Monaco', '/reverse?lat=43.73&lon=7.42']) {
        const r = await app.inject({ method: 'GET', url });
        expect(r.statusCode).toBe(404);
        expect(r.json()).toEqual({ error: expect.stringMatching(/^this build has no search index/), status: 404 });
      }
    } finally {
      await app.close();
    }
  });
});

describe('a build on object storage (HTTP)', () => {
  let cache: string;
  let gated: GatedRangeServer | undefined;
  let remote: RunningServer | undefined;
  const start = async (folder: string) => {
    gated = await startGatedRangeServer(folder);
    remote = await startServer(serveOptions(gated.url, { auth: false, versionPollMs: 0, logLevel: 'silent', searchCache: cache }));
  };
  const stop = async () => {
    await remote?.close();
    await gated?.close();
  };
  beforeAll(async () => {
    cache = join(dir, 'search-cache');
  });

  it('downloads the index once into the cache, checked, and answers as the local build does', async () => {
    await start(root);
    try {
      const local = await answer('/search?q=Monaco&limit=5');
      const [a, b] = await Promise.all([fetch(`${remote!.url}/search?q=Monaco&limit=5`), fetch(`${remote!.url}/search?q=Monaco&limit=5`)]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(await a.json()).toEqual(local);
      expect(await b.json()).toEqual(local);
      const manifest = JSON.parse(await readFile(join(root, versionPath(build), 'manifest.json'), 'utf8'));
      expect(await readdir(cache)).toEqual([`${manifest.tilesets.openmaptiles.search.sha256}.search.sqlite`]);
    } finally {
      await stop();
    }
  });

  it('refuses a copy whose bytes differ from the manifest\'s sha256: 502, nothing cached', async () => {
    await rm(cache, { recursive: true, force: true });
    const bad = join(dir, 'bad');
    await cp(root, bad, { recursive: true });
    const file = join(bad, versionPath(build), 'data/openmaptiles.search.sqlite');
    const bytes = await readFile(file);
    bytes[bytes.length - 100] ^= 0xff;
    await writeFile(file, bytes);
    await start(bad);
    try {
      const r = await fetch(`${remote!.url}/search?q=Monaco`);
      expect(r.status).toBe(502);
      expect((await readdir(cache)).filter((n) => n.endsWith('.sqlite'))).toEqual([]);
    } finally {
      await stop();
    }
  });
});
