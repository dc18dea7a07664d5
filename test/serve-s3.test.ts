// `tilebake serve --out s3://bucket/prefix`: a build folder copied to Swift (s3api) is served with
// credentials from the standard AWS chain, byte for byte as `serve` serves the folder; bad credentials,
// a missing bucket and an unreachable endpoint stop it with one clear line, never a stack.
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentVersionDir, publishVersionToStore } from '../lib/build-version.ts';
import { openWritableStore } from '../lib/object-store.ts';
import { buildSample, freePort, monacoTiles, request, runServeToExit, startServe, type ServeProcess } from './fixtures/server/helpers.ts';
import { startSwift, SWIFT_HOOK_TIMEOUT_MS, type Swift } from './fixtures/swift.ts';

const TOKEN = randomBytes(18).toString('base64url');
const AUTH = { authorization: `Bearer ${TOKEN}` };
const PREFIX = 'published/sample';

let swift: Swift;
let out: string;
let fromFolder: ServeProcess;
let fromS3: ServeProcess;
let published: { id: string; dir: string };

/** serve's arguments on a free loopback port, one worker. */
const serveArgs = (outArg: string, ...more: string[]) => ['--out', outArg, '--port', '0', '--host', '127.0.0.1', '--workers', '1', '--routing-port', '0', ...more];

beforeAll(async () => {
  [swift, out] = await Promise.all([startSwift('tilebake-serve'), buildSample(['vector', 'elevation'])]);
  // The test's own reads and writes take the credentials from the standard chain, as the CLI does.
  const { AWS_ENDPOINT_URL: _endpoint, ...credentials } = swift.env;
  Object.assign(process.env, credentials);
  // Published as `tilebake publish` publishes: builds/<id>/ first, current.json last.
  published = (await currentVersionDir(out)) as { id: string; dir: string };
  await publishVersionToStore(openWritableStore(`s3://${swift.bucket}/${PREFIX}`, { s3Endpoint: swift.endpoint }), published.id, published.dir);
  // Credentials from the environment; the endpoint from --s3-endpoint (AWS_ENDPOINT_URL is not set).
  [fromFolder, fromS3] = await Promise.all([
    startServe(serveArgs(out), { TILEBAKE_TOKENS: TOKEN }),
    startServe(serveArgs(`s3://${swift.bucket}/${PREFIX}`, '--s3-endpoint', swift.endpoint, '--version-poll-ms', '500'), { TILEBAKE_TOKENS: TOKEN, ...credentials, AWS_ENDPOINT_URL: undefined }),
  ]);
}, SWIFT_HOOK_TIMEOUT_MS + 120_000);

afterAll(async () => {
  for (const s of [fromFolder, fromS3]) {
    if (!s) continue;
    s.proc.kill('SIGTERM');
    await s.exited;
  }
  await swift?.stop();
  if (out) await rm(out, { recursive: true, force: true });
});

describe('serve --out s3://… (Swift s3api)', () => {
  it('published a versioned build', async () => {
    const listed = (await openWritableStore(`s3://${swift.bucket}/${PREFIX}`, { s3Endpoint: swift.endpoint }).list('')).map((o) => o.path);
    expect(listed).toContain('current.json');
    expect(listed).toContain(`builds/${published.id}/manifest.json`);
    expect(listed.some((f) => f.endsWith('.pmtiles'))).toBe(true);
  });

  it('serves every vector tile and the TileJSON byte-identical to serving the folder', async () => {
    const tiles = monacoTiles();
    expect(tiles.length).toBeGreaterThan(10);
    for (const t of tiles) {
      const path = `/data/openmaptiles/${t.z}/${t.x}/${t.y}.pbf`;
      const [a, b] = await Promise.all([fromFolder, fromS3].map((s) => request(`${s.url}${path}`, { headers: { ...AUTH, 'accept-encoding': 'gzip' } })));
      expect(b.status, path).toBe(200);
      expect(b.body.equals(a.body), path).toBe(true);
      expect(b.body.equals(t.data), path).toBe(true);
    }
    const tj = await Promise.all([fromFolder, fromS3].map(async (s) => (await request(`${s.url}/data/openmaptiles.json`, { headers: AUTH })).json()));
    expect(tj[1].vector_layers).toEqual(tj[0].vector_layers);
    // Versioned URLs (on by default): the tile URLs name the build the bucket's current.json points at.
    expect(tj[1].tiles[0]).toBe(`${fromS3.url}/v/${published.id}/data/openmaptiles/{z}/{x}/{y}.pbf`);
  });

  it('serves terrain tiles and heights (elevation index by ranged reads) as the folder does', async () => {
    for (const path of ['/data/terrain/0/0/0.png', '/data/terrain/8/133/93.png', '/data/contours/12/2132/1493.pbf']) {
      const [a, b] = await Promise.all([fromFolder, fromS3].map((s) => request(`${s.url}${path}`, { headers: AUTH })));
      expect(a.status, path).toBe(200);
      expect(b.status, path).toBe(200);
      expect(b.body.equals(a.body), path).toBe(true);
    }
    const body = JSON.stringify({ shape: [{ lat: 43.7384, lon: 7.4246 }, { lat: 43.7311, lon: 7.4197 }, { lat: 43.75, lon: 7.44 }], range: true });
    const [a, b] = await Promise.all(
      [fromFolder, fromS3].map(async (s) => {
        const res = await fetch(`${s.routingUrl}/height`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body });
        return { status: res.status, json: await res.json() };
      }),
    );
    expect(b.status).toBe(200);
    expect(b).toEqual(a);
    expect((b.json as { range_height: number[][] }).range_height.length).toBe(3);
  });

  it('reports the store as healthy', async () => {
    const res = await request(`${fromS3.url}/health`);
    expect(res.status).toBe(200);
  });

  it('follows a version published to the bucket (conditional GETs of current.json)', async () => {
    const store = openWritableStore(`s3://${swift.bucket}/${PREFIX}`, { s3Endpoint: swift.endpoint });
    const next = `${published.id.slice(0, -6)}ffffff`;
    await publishVersionToStore(store, next, published.dir);
    await fromS3.waitFor(`"build":"${next}"`);
    expect(fromS3.output()).toMatch(new RegExp(`"build":"${next}","previous":"${published.id}".*serving build version`));
    const t = monacoTiles()[0];
    const res = await request(`${fromS3.url}/data/openmaptiles/${t.z}/${t.x}/${t.y}.pbf`, { headers: { ...AUTH, 'accept-encoding': 'gzip' } });
    expect(res.body.equals(t.data)).toBe(true);
  });
});

describe('serve --out s3://… refuses to start with one clear line', () => {
  /** Run serve against Swift with `env` on top of its credentials; expect a failure without a stack trace. */
  async function refused(outArg: string, env: Record<string, string | undefined>, extra: string[] = []) {
    const r = await runServeToExit(serveArgs(outArg, '--store-timeout-ms', '4000', ...extra), { TILEBAKE_TOKENS: TOKEN, ...swift.env, ...env });
    expect(r.code).not.toBe(0);
    expect(r.output).not.toMatch(/\n\s+at /);
    return r.output;
  }

  it('wrong credentials', async () => {
    const output = await refused(`s3://${swift.bucket}/${PREFIX}`, { AWS_SECRET_ACCESS_KEY: 'wrong' });
    expect(output).toContain(`tilebake: s3://${swift.bucket}/${PREFIX}/current.json: SignatureDoesNotMatch`);
    expect(output).toContain('(HTTP 403) (check the credentials');
  });

  it('a missing bucket', async () => {
    const output = await refused(`s3://tilebake-missing/${PREFIX}`, {});
    expect(output).toContain(`tilebake: s3://tilebake-missing/${PREFIX}/current.json: NoSuchBucket`);
  });

  it('an unreachable endpoint', async () => {
    const port = await freePort();
    const output = await refused(`s3://${swift.bucket}/${PREFIX}`, {}, ['--s3-endpoint', `http://127.0.0.1:${port}`]);
    expect(output).toContain(`tilebake: s3://${swift.bucket}/${PREFIX}/current.json: `);
    expect(output).toContain('ECONNREFUSED');
  });

  it('a prefix with nothing published', async () => {
    const output = await refused(`s3://${swift.bucket}/nothing-here`, {});
    expect(output).toContain(`s3://${swift.bucket}/nothing-here/current.json: not found, and no manifest.json either`);
  });
});
