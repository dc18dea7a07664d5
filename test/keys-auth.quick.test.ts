// Keys (static-server/keys/): secret and origin keys from a keys file, scopes, rate limits and quotas
// with 429 and RateLimit headers, usage per key in /metrics and the usage store, reload on change.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthResult } from '../static-server/auth.ts';
import { KeyRing, type Identity } from '../static-server/keys/key-ring.ts';
import { parseKeys } from '../static-server/keys/keys-file.ts';
import { UsageStore } from '../static-server/keys/usage-store.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { cliOk, runCli } from './fixtures/cli.ts';
import { buildQuickSample, monacoTiles, request, type RawResponse } from './fixtures/server/helpers.ts';

const BACKEND = `backend-${randomBytes(16).toString('hex')}`;
const PARTNER = `partner-${randomBytes(16).toString('hex')}`;
const LIMITED = `limited-${randomBytes(16).toString('hex')}`;
const RELOADED = `reloaded-${randomBytes(16).toString('hex')}`;
const SECRETS = [BACKEND, PARTNER, LIMITED, RELOADED];

let out: string;
let dir: string;
let keysPath: string;
let server: RunningServer;
let logs = '';
let tile: string;

function keysDoc(extra: object[] = []): object {
  return {
    keys: [
      { name: 'website', origins: ['https://maps.example.com', 'https://*.example.org', 'http://localhost:*'], rate: { perSecond: 1000, burst: 1000 } },
      { name: 'backend', secret: `sha256:${createHash('sha256').update(BACKEND).digest('hex')}`, scopes: ['tiles', 'height'] },
      { name: 'partner', secret: PARTNER, scopes: ['height'] },
      { name: 'limited', secret: LIMITED, quota: { requests: 3, per: 'day' } },
      ...extra,
    ],
  };
}

/** Replace the keys file the way deploy tools do: write a new file, rename it over the old one. */
async function writeKeys(doc: object): Promise<void> {
  const tmp = `${keysPath}.tmp`;
  await writeFile(tmp, JSON.stringify(doc));
  await rename(tmp, keysPath);
}

function expect401(r: RawResponse): void {
  expect(r.status).toBe(401);
  expect(r.headers['www-authenticate']).toMatch(/^Bearer realm="tilebake"/);
  expect(r.json()).toMatchObject({ status: 401 });
}

beforeAll(async () => {
  out = await buildQuickSample();
  dir = await mkdtemp(join(tmpdir(), 'tilebake-keys-'));
  keysPath = join(dir, 'keys.json');
  await writeKeys(keysDoc());
  const t = monacoTiles()[0];
  tile = `/data/openmaptiles/${t.z}/${t.x}/${t.y}.pbf`;
  const logStream = new PassThrough();
  logStream.on('data', (d: Buffer) => (logs += d.toString()));
  server = await startServer(
    { out, port: 0, host: '127.0.0.1', auth: true, keysFile: keysPath, stateDir: join(dir, 'state'), cors: '*', cacheMb: 16, logLevel: 'debug', versionPollMs: 0 },
    { logStream },
  );
}, 240_000);

afterAll(async () => {
  await server?.close();
  for (const d of [out, dir]) if (d) await rm(d, { recursive: true, force: true });
});

describe('keys file', () => {
  it('errors name the file and the field, never the secret', () => {
    const bad = (raw: unknown) => {
      try {
        parseKeys(raw, 'k.json');
      } catch (e) {
        return (e as Error).message;
      }
      throw new Error('accepted');
    };
    expect(bad({ keys: [{ name: 'a', secret: 'x', origins: ['https://a.example'] }] })).toMatch(/^k\.json: invalid keys file\n {2}keys\[0\]: a key needs either "secret" or "origins"/);
    expect(bad({ keys: [{ name: 'a', origins: ['ftp://a.example'] }] })).toMatch(/k\.json: keys\[0\]\.origins\[0\]: expected an origin/);
    expect(bad({ keys: [{ name: 'a', secret: 'sha256:abc' }] })).toBe('k.json: keys[0].secret: expected sha256:<64 hex digits>');
    expect(bad({ keys: [{ name: 'a', secret: 'x', rate: { perSecond: -1 } }] })).toMatch(/keys\[0\]\.rate\.perSecond/);
    expect(bad({ keys: [{ name: 'a', secret: 'x', quota: { per: 'week', requests: 1 } }] })).toMatch(/keys\[0\]\.quota\.per/);
    expect(bad({ keys: [{ name: 'a', secret: 'x', scope: ['tiles'] }] })).toMatch(/unrecognized key.*"scope"/i);
    const dup = bad({ keys: [{ name: 'a', secret: 'same-secret' }, { name: 'b', secret: 'same-secret' }] });
    expect(dup).toBe('k.json: keys[1].secret: the same secret as another key');
    expect(dup).not.toContain('same-secret"');
  });

  it('a token is identified once per connection, again when the header or the keys change', () => {
    const keys = parseKeys(keysDoc(), 'k.json');
    const ring = new KeyRing(keys);
    const conn = {};
    const as = (token: string) => ({ authorization: `Bearer ${token}` });
    const name = (id: Identity) => (id.ok ? id.key.name : `refused ${id.result}`);
    expect(name(ring.identify(as(LIMITED), conn))).toBe('limited');
    expect(ring.identify(as(LIMITED), conn)).toBe(ring.identify(as(LIMITED), conn));
    expect(name(ring.identify(as(`${LIMITED}x`), conn))).toBe(`refused ${AuthResult.Invalid}`);
    expect(name(ring.identify(as(BACKEND), conn))).toBe('backend');
    expect(name(ring.identify(as(LIMITED), {}))).toBe('limited');
    // Keys reloaded without "backend": the same connection and header are refused from now on.
    ring.replace(keys.filter((k) => k.name !== 'backend'));
    expect(name(ring.identify(as(BACKEND), conn))).toBe(`refused ${AuthResult.Invalid}`);
  });
});

describe('secret and origin keys over HTTP', () => {
  it('an allowed Origin needs no header; CORS names that origin', async () => {
    for (const origin of ['https://maps.example.com', 'https://a.b.example.org', 'http://localhost:5173']) {
      const r = await request(`${server.url}${tile}`, { headers: { origin } });
      expect(r.status, origin).toBe(200);
      expect(r.headers['access-control-allow-origin']).toBe(origin);
      expect(String(r.headers.vary)).toMatch(/Origin/);
    }
  });

  it('an image request without Origin is judged by its Referer', async () => {
    const ok = await request(`${server.url}${tile}`, { headers: { referer: 'https://maps.example.com/city/map.html?x=1' } });
    expect(ok.status).toBe(200);
    expect401(await request(`${server.url}${tile}`, { headers: { referer: 'https://evil.example.net/maps.example.com/' } }));
  });

  it('other origins, the bare wildcard domain, other schemes and ports get 401 with WWW-Authenticate', async () => {
    for (const origin of ['https://evil.example.net', 'https://example.org', 'http://maps.example.com', 'https://maps.example.com:8443', 'null']) {
      const r = await request(`${server.url}${tile}`, { headers: { origin } });
      expect401(r);
      expect(r.headers['access-control-allow-origin']).not.toBe(origin);
    }
    expect401(await request(`${server.url}${tile}`));
  });

  it('secret keys: plain or sha256 in the file; a wrong secret is not excused by an allowed origin', async () => {
    expect((await request(`${server.url}${tile}`, { headers: { authorization: `Bearer ${BACKEND}` } })).status).toBe(200);
    const wrong = await request(`${server.url}${tile}`, { headers: { authorization: 'Bearer nope', origin: 'https://maps.example.com' } });
    expect401(wrong);
    expect(wrong.headers['www-authenticate']).toContain('invalid_token');
  });

  it('scopes: a key without "tiles" gets 403; /metrics needs the "metrics" scope', async () => {
    const r = await request(`${server.url}${tile}`, { headers: { authorization: `Bearer ${PARTNER}` } });
    expect(r.status).toBe(403);
    expect(r.json()).toEqual({ error: 'key "partner" does not have the "tiles" scope', status: 403, scope: 'tiles' });
    expect((await request(`${server.url}/metrics`, { headers: { origin: 'https://maps.example.com' } })).status).toBe(403);
    expect((await request(`${server.url}/metrics`, { headers: { authorization: `Bearer ${BACKEND}` } })).status).toBe(403);
  });

  it('a quota answers 429 with Retry-After and RateLimit headers once used up', async () => {
    const auth = { authorization: `Bearer ${LIMITED}` };
    const seen: RawResponse[] = [];
    for (let i = 0; i < 4; i++) seen.push(await request(`${server.url}${tile}`, { headers: auth }));
    expect(seen.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(seen.map((r) => r.headers['ratelimit-remaining'])).toEqual(['2', '1', '0', '0']);
    expect(seen[0].headers['ratelimit-limit']).toBe('3');
    const last = seen[3];
    const retry = Number(last.headers['retry-after']);
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(86_400);
    expect(Number(last.headers['ratelimit-reset'])).toBe(retry);
    expect(last.json()).toMatchObject({ status: 429, error: 'key "limited": quota of 3 requests per day used up', retryAfter: retry });
  });

  it('a rate limit refills: a burst of 2 at 5/s', async () => {
    const rated = { name: 'rated', origins: ['https://rated.example.com'], rate: { perSecond: 5, burst: 2 } };
    await writeKeys(keysDoc([rated]));
    await expect.poll(async () => (await request(`${server.url}${tile}`, { headers: { origin: 'https://rated.example.com' } })).status, { timeout: 10_000 }).not.toBe(401);
    await new Promise((r) => setTimeout(r, 600));
    const h = { origin: 'https://rated.example.com' };
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push(await request(`${server.url}${tile}`, { headers: h }));
    expect(statuses.map((r) => r.status)).toEqual([200, 200, 429]);
    expect(statuses[2].headers['retry-after']).toBe('1');
    expect(statuses[2].headers['access-control-allow-origin']).toBe('https://rated.example.com');
    await new Promise((r) => setTimeout(r, 450));
    expect((await request(`${server.url}${tile}`, { headers: h })).status).toBe(200);
  });
});

describe('reload and usage', () => {
  it('the keys file reloads on change without dropping a request; a bad file keeps the previous keys', async () => {
    let stop = false;
    const statuses: number[] = [];
    const load = (async () => {
      while (!stop) statuses.push((await request(`${server.url}${tile}`, { headers: { authorization: `Bearer ${BACKEND}` } })).status);
    })();
    await writeKeys(keysDoc([{ name: 'reloaded', secret: RELOADED, scopes: ['tiles', 'metrics'] }]));
    await expect.poll(async () => (await request(`${server.url}${tile}`, { headers: { authorization: `Bearer ${RELOADED}` } })).status, { timeout: 10_000 }).toBe(200);
    await writeFile(keysPath, '{"keys": [ {"name": "broken", "secret": ');
    await new Promise((r) => setTimeout(r, 500));
    expect((await request(`${server.url}${tile}`, { headers: { authorization: `Bearer ${RELOADED}` } })).status).toBe(200);
    expect(logs).toContain('keys file rejected: keeping the previous keys');
    await writeKeys(keysDoc([{ name: 'reloaded', secret: RELOADED, scopes: ['tiles', 'metrics'] }]));
    stop = true;
    await load;
    expect(statuses.length).toBeGreaterThan(5);
    expect(new Set(statuses)).toEqual(new Set([200]));
  });

  it('/metrics counts requests per key name, and the usage store per key and day', async () => {
    const r = await request(`${server.url}/metrics`, { headers: { authorization: `Bearer ${RELOADED}` } });
    expect(r.status).toBe(200);
    const text = r.body.toString();
    const count = (key: string, status: number) =>
      Number(new RegExp(`^tilebake_requests_total\\{key="${key}",kind="vector",status="${status}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
    expect(count('limited', 200)).toBe(3);
    expect(count('limited', 429)).toBe(1);
    expect(count('website', 200)).toBeGreaterThanOrEqual(4);
    expect(count('backend', 200)).toBeGreaterThan(5);
    // Usage rows are flushed about once a second: wait for the store's state (a loaded machine delays the flush), not a fixed time.
    const today = new Date().toISOString().slice(0, 10);
    const report = () => {
      const store = new UsageStore(join(dir, 'state'), true);
      try {
        return store.report(today);
      } finally {
        store.close();
      }
    };
    const flushed = (rows: ReturnType<typeof report>) => rows.find((x) => x.key === 'limited')?.requests === 3 && (rows.find((x) => x.key === 'backend')?.requests ?? 0) > 5;
    let rows = report();
    for (const deadline = Date.now() + 60_000; !flushed(rows) && Date.now() < deadline; rows = report()) await new Promise((res) => setTimeout(res, 250));
    const limited = rows.find((x) => x.key === 'limited')!;
    expect(limited).toMatchObject({ day: today, requests: 3 }); // the refused 4th is not usage
    expect(limited.bytes).toBeGreaterThan(0);
    expect(rows.find((x) => x.key === 'backend')!.requests).toBeGreaterThan(5);
  });

  it('`tilebake usage --since` prints requests, bytes and points per key per day', async () => {
    const today = new Date().toISOString().slice(0, 10);
    const { stdout } = await cliOk(['usage', '--state-dir', join(dir, 'state'), '--since', today], { quiet: false });
    const lines = stdout.trim().split('\n');
    expect(lines[0].split(/\s+/)).toEqual(['day', 'key', 'requests', 'bytes', 'points', 'pack_tiles']);
    const limited = lines.find((l) => l.startsWith(today) && l.split(/\s+/)[1] === 'limited')!.split(/\s+/);
    expect(limited[2]).toBe('3');
    expect(Number(limited[3])).toBeGreaterThan(0);
    expect(lines.some((l) => /^total\s+limited\s+3\s/.test(l))).toBe(true);
    const json = JSON.parse((await cliOk(['usage', '--state-dir', join(dir, 'state'), '--since', today, '--json'], { quiet: false })).stdout) as { key: string }[];
    expect(json.map((r) => r.key)).toContain('backend');
    const bad = await runCli(['usage', '--state-dir', join(dir, 'state'), '--since', 'yesterday'], { quiet: false });
    expect(bad).toMatchObject({ code: 2, stderr: 'tilebake: --since: expected a day as YYYY-MM-DD (got "yesterday")\n' });
  });

  it('no secret appears in any log line or metric', async () => {
    const metrics = (await request(`${server.url}/metrics`, { headers: { authorization: `Bearer ${RELOADED}` } })).body.toString();
    expect(logs.length).toBeGreaterThan(1000); // debug level logs every request, with its headers
    for (const s of SECRETS) {
      expect(logs).not.toContain(s);
      expect(metrics).not.toContain(s);
      expect(logs).not.toContain(createHash('sha256').update(s).digest('hex'));
    }
  });
});
