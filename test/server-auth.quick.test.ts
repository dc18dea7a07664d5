// Bearer-token auth of the server: in-process for the HTTP cases, the real CLI for startup and logs.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkAuthorization, AuthResult, hashToken, loadTokenHashes, parseTokensFile } from '../static-server/auth.ts';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { buildQuickSample, monacoTiles, request, runServeToExit, startServe, type RawResponse } from './fixtures/server/helpers.ts';

const TOKEN = randomBytes(18).toString('base64url');
const HASHED_TOKEN = randomBytes(18).toString('base64url');
const WRONG = `wrong-${randomBytes(12).toString('base64url')}`;

let out: string;
let dir: string;
let server: RunningServer;
let logs = '';
let tilePath: string;

function expect401(r: RawResponse, invalid: boolean): void {
  expect(r.status).toBe(401);
  expect(r.headers['content-type']).toMatch(/^application\/json/);
  expect(r.json()).toMatchObject({ status: 401 });
  expect(r.headers['www-authenticate']).toBe(invalid ? 'Bearer realm="tilebake", error="invalid_token"' : 'Bearer realm="tilebake"');
}

beforeAll(async () => {
  out = await buildQuickSample();
  dir = await mkdtemp(join(tmpdir(), 'tilebake-auth-'));
  const t = monacoTiles()[0];
  tilePath = `/data/openmaptiles/${t.z}/${t.x}/${t.y}.pbf`;
  const logStream = new PassThrough();
  logStream.on('data', (d: Buffer) => (logs += d.toString()));
  server = await startServer(
    { out, port: 0, host: '127.0.0.1', auth: true, cacheControl: 'public, max-age=86400', cors: '*', cacheMb: 16, logLevel: 'trace' },
    { tokenHashes: [hashToken(TOKEN), createHash('sha256').update(HASHED_TOKEN).digest()], logStream },
  );
});

afterAll(async () => {
  await server?.close();
  for (const d of [out, dir]) if (d) await rm(d, { recursive: true, force: true });
});

describe('bearer auth over HTTP', () => {
  it('401 without a token, with WWW-Authenticate', async () => {
    expect401(await request(`${server.url}${tilePath}`), false);
    expect401(await request(`${server.url}/data/openmaptiles.json`), false);
    expect401(await request(`${server.url}/nope`), false);
    expect401(await request(`${server.url}${tilePath}`, { headers: { authorization: 'Basic dXNlcjpwYXNz' } }), false);
    expect401(await request(`${server.url}${tilePath}`, { headers: { authorization: 'Bearer ' } }), false);
  });

  it('401 with error="invalid_token" for a wrong token, which is not echoed', async () => {
    const r = await request(`${server.url}${tilePath}`, { headers: { authorization: `Bearer ${WRONG}` } });
    expect401(r, true);
    expect(r.body.toString()).not.toContain(WRONG);
    expect(JSON.stringify(r.headers)).not.toContain(WRONG);
    // A prefix or extension of a real token is wrong too.
    expect401(await request(`${server.url}${tilePath}`, { headers: { authorization: `Bearer ${TOKEN.slice(0, -1)}` } }), true);
    expect401(await request(`${server.url}${tilePath}`, { headers: { authorization: `Bearer ${TOKEN}x` } }), true);
  });

  it('accepts a configured token and a token given by its SHA-256 hash', async () => {
    for (const token of [TOKEN, HASHED_TOKEN]) {
      const r = await request(`${server.url}${tilePath}`, { headers: { authorization: `Bearer ${token}`, 'accept-encoding': 'gzip' } });
      expect(r.status).toBe(200);
      expect(r.headers['content-type']).toBe('application/x-protobuf');
    }
    const lower = await request(`${server.url}/data/openmaptiles.json`, { headers: { authorization: `bearer ${TOKEN}` } });
    expect(lower.status).toBe(200);
  });

  it('serves GET /health and CORS preflights without a token', async () => {
    const r = await request(`${server.url}/health`);
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({ status: 'ok', store: 'ok' });
    const pre = await request(`${server.url}${tilePath}`, {
      method: 'OPTIONS',
      headers: { origin: 'https://x.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'Authorization' },
    });
    expect(pre.status).toBe(204);
  });

  it('never writes a token to the logs, even at trace level', async () => {
    await request(`${server.url}${tilePath}`, { headers: { authorization: `Bearer ${WRONG}` } });
    await request(`${server.url}/data/openmaptiles/99/0/0.pbf`, { headers: { authorization: `Bearer ${TOKEN}` } });
    await request(`${server.url}/data/openmaptiles/1/5/0.pbf`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(logs).toContain('request completed');
    expect(logs).not.toContain(TOKEN);
    expect(logs).not.toContain(WRONG);
    expect(logs).not.toContain(HASHED_TOKEN);
  });
});

describe('token configuration', () => {
  it('parses tokens files: comments, blank lines, sha256: hashes', () => {
    const hex = createHash('sha256').update('s3cret').digest('hex');
    const hashes = parseTokensFile(`# tokens\n\nplain-token\n  sha256:${hex.toUpperCase()}  \r\n# sha256:ignored\n`, 'tokens.txt');
    expect(hashes).toHaveLength(2);
    expect(checkAuthorization('Bearer plain-token', hashes)).toBe(AuthResult.Ok);
    expect(checkAuthorization('Bearer s3cret', hashes)).toBe(AuthResult.Ok);
    expect(checkAuthorization('Bearer # tokens', hashes)).toBe(AuthResult.Invalid);
    expect(checkAuthorization(undefined, hashes)).toBe(AuthResult.Missing);
    expect(() => parseTokensFile('ok\nsha256:xyz\n', 'tokens.txt')).toThrow(/tokens\.txt: line 2/);
  });

  it('combines TILEBAKE_TOKENS and --tokens-file; refuses an empty configuration', async () => {
    const file = join(dir, 'tokens.txt');
    await writeFile(file, '# only comments\n\n');
    await expect(loadTokenHashes(undefined, file)).rejects.toThrow(/TILEBAKE_TOKENS=.*--tokens-file/s);
    await expect(loadTokenHashes(' , ', undefined)).rejects.toThrow(/no bearer tokens/);
    await expect(loadTokenHashes(undefined, join(dir, 'missing.txt'))).rejects.toThrow(/missing\.txt/);
    expect(await loadTokenHashes('a, b', file)).toHaveLength(2);
  });
});

describe('tilebake serve (CLI)', () => {
  it('refuses to start without tokens and says how to set one', async () => {
    const { code, output } = await runServeToExit(['--out', out, '--port', '0', '--host', '127.0.0.1', '--workers', '1']);
    expect(code).not.toBe(0);
    expect(output).toContain('TILEBAKE_TOKENS=');
    expect(output).toContain('--tokens-file');
    expect(output).not.toContain('listening');
  });

  it('names a tokens file with a bad line', async () => {
    const file = join(dir, 'bad-tokens.txt');
    await writeFile(file, 'good\nsha256:12\n');
    const { code, output } = await runServeToExit(['--out', out, '--port', '0', '--tokens-file', file, '--workers', '1']);
    expect(code).not.toBe(0);
    expect(output).toContain(`${file}: line 2`);
  });

  it('reads --tokens-file with a sha256: line and TILEBAKE_TOKENS together', async () => {
    const fileToken = randomBytes(12).toString('hex');
    const file = join(dir, 'tokens.txt');
    await writeFile(file, `# hashed\nsha256:${createHash('sha256').update(fileToken).digest('hex')}\n`);
    const envToken = randomBytes(12).toString('hex');
    const s = await startServe(['--out', out, '--port', '0', '--host', '127.0.0.1', '--workers', '1', '--tokens-file', file, '--log-level', 'debug'], {
      TILEBAKE_TOKENS: `unused,${envToken}`,
    });
    try {
      for (const token of [fileToken, envToken]) {
        expect((await request(`${s.url}${tilePath}`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
      }
      expect401(await request(`${s.url}${tilePath}`, { headers: { authorization: `Bearer ${WRONG}` } }), true);
      expect401(await request(`${s.url}${tilePath}`), false);
      expect((await request(`${s.url}/health`)).status).toBe(200);
      expect(s.output()).toContain('request completed');
      expect(s.output()).not.toContain(fileToken);
      expect(s.output()).not.toContain(envToken);
      expect(s.output()).not.toContain(WRONG);
    } finally {
      s.proc.kill('SIGTERM');
      expect(await s.exited).toBe(0);
    }
  });

  it('serves without tokens with --no-auth', async () => {
    const s = await startServe(['--out', out, '--port', '0', '--host', '127.0.0.1', '--workers', '1', '--no-auth']);
    try {
      const r = await request(`${s.url}${tilePath}`, { headers: { 'accept-encoding': 'gzip' } });
      expect(r.status).toBe(200);
      expect(r.headers['content-encoding']).toBe('gzip');
    } finally {
      s.proc.kill('SIGTERM');
      expect(await s.exited).toBe(0);
    }
  });
});
