// S3Store (lib/s3-store.ts) against a real S3 API: OpenStack Swift with its s3api middleware, started
// by the test (test/fixtures/swift.ts). Reads, writes, listing, ranged and conditional reads, and the
// failures a user meets: wrong credentials, a missing bucket, an unreachable endpoint.
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openWritableStore } from '../lib/object-store.ts';
import { S3Store, parseS3Url, s3EndpointOf } from '../lib/s3-store.ts';
import { openStore } from '../lib/storage.ts';
import { isStoreError, type StoreError } from '../lib/store-read.ts';
import { freePort } from './fixtures/server/helpers.ts';
import { startSwift, SWIFT_HOOK_TIMEOUT_MS, SWIFT_LIST_PAGE, type Swift } from './fixtures/swift.ts';

let swift: Swift;
let tmp: string;
/** The credentials of the process before the test set Swift's. */
const savedEnv = { ...process.env };

/** Run `fn` with the AWS variables of `env` in process.env (the SDK reads the standard chain from it). */
async function withEnv<T>(env: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const before = { ...process.env };
  Object.assign(process.env, env);
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete process.env[k];
  try {
    return await fn();
  } finally {
    for (const k of Object.keys(env)) {
      if (before[k] === undefined) delete process.env[k];
      else process.env[k] = before[k];
    }
  }
}

/** The StoreError `p` rejects with. */
async function storeErrorOf(p: Promise<unknown>): Promise<StoreError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(isStoreError(e), String(e)).toBe(true);
  return e as StoreError;
}

beforeAll(async () => {
  swift = await startSwift('tilebake-s3store');
  Object.assign(process.env, swift.env);
  tmp = await mkdtemp(join(tmpdir(), 'tilebake-s3store-'));
}, SWIFT_HOOK_TIMEOUT_MS);

afterAll(async () => {
  process.env = savedEnv;
  await swift?.stop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('s3:// locations', () => {
  it('parses bucket and prefix, and refuses a bad bucket name or endpoint', () => {
    expect(parseS3Url('s3://b-1.x/runs/r1/')).toEqual({ bucket: 'b-1.x', prefix: 'runs/r1/' });
    expect(parseS3Url('s3://bucket')).toEqual({ bucket: 'bucket', prefix: '' });
    expect(() => parseS3Url('s3://Bad_Bucket/x')).toThrow(/s3:\/\/Bad_Bucket\/x: expected s3:\/\/bucket\/prefix/);
    expect(() => parseS3Url('s3:///x')).toThrow(/valid bucket name/);
    expect(s3EndpointOf(undefined, { AWS_ENDPOINT_URL: 'http://h:1' })).toBe('http://h:1');
    expect(s3EndpointOf(undefined, { AWS_ENDPOINT_URL: 'http://h:1', AWS_ENDPOINT_URL_S3: 'http://s3:2' })).toBe('http://s3:2');
    expect(s3EndpointOf('https://opt', { AWS_ENDPOINT_URL: 'http://h:1' })).toBe('https://opt');
    expect(s3EndpointOf(undefined, {})).toBeUndefined();
    expect(() => s3EndpointOf('ftp://x', {})).toThrow(/--s3-endpoint .*expected an http\(s\):\/\/ URL/);
  });

  it('openWritableStore and openStore return an S3Store for s3://', () => {
    expect(openWritableStore(`s3://${swift.bucket}/a`)).toBeInstanceOf(S3Store);
    expect(openStore(`s3://${swift.bucket}/a`)).toBeInstanceOf(S3Store);
    expect(openStore(`s3://${swift.bucket}/a/`).location).toBe(`s3://${swift.bucket}/a/`);
  });
});

describe('S3Store through Swift', () => {
  it('puts, reads, lists and deletes objects under its prefix', async () => {
    const store = openWritableStore(`s3://${swift.bucket}/runs/r1`);
    const other = openWritableStore(`s3://${swift.bucket}/runs/r10`);
    await store.putBytes('run.json', '{"n":2}');
    await store.putBytes('shards/0/DONE.json', new Uint8Array([1, 2, 3]));
    await store.putBytes('shards/1/a b+c.pmtiles', 'x'.repeat(10));
    await other.putBytes('run.json', 'not mine');
    expect(Buffer.from((await store.readFile('run.json'))!).toString()).toBe('{"n":2}');
    expect(await store.readFile('missing.json')).toBeUndefined();
    expect(await store.list('')).toEqual([
      { path: 'run.json', bytes: 7 },
      { path: 'shards/0/DONE.json', bytes: 3 },
      { path: 'shards/1/a b+c.pmtiles', bytes: 10 },
    ]);
    expect((await store.list('shards/')).map((o) => o.path)).toEqual(['shards/0/DONE.json', 'shards/1/a b+c.pmtiles']);
    expect(await store.list('nothing/')).toEqual([]);
    // A repeated write of the same key replaces it (deterministic keys make retries harmless).
    await store.putBytes('run.json', '{"n":3}');
    expect(Buffer.from((await store.readFile('run.json'))!).toString()).toBe('{"n":3}');
    await store.delete('shards/0/DONE.json');
    await store.delete('shards/0/DONE.json');
    expect(await store.readFile('shards/0/DONE.json')).toBeUndefined();
    expect((await store.list('')).map((o) => o.path)).toEqual(['run.json', 'shards/1/a b+c.pmtiles']);
  });

  it('lists past one page of results', async () => {
    const store = openWritableStore(`s3://${swift.bucket}/many`);
    const names = Array.from({ length: 2 * SWIFT_LIST_PAGE + 10 }, (_, i) => `k/${String(i).padStart(4, '0')}`);
    for (let i = 0; i < names.length; i += 50) await Promise.all(names.slice(i, i + 50).map((n) => store.putBytes(n, n)));
    const listed = await store.list('k/');
    expect(listed.length).toBe(names.length);
    expect(listed.map((o) => o.path)).toEqual(names);
  }, 240_000);

  it('uploads and downloads files, multipart above one part, with no parts left behind', async () => {
    const store = openWritableStore(`s3://${swift.bucket}/files`);
    const big = randomBytes(20 * 1024 * 1024 + 12345);
    const small = randomBytes(1000);
    await writeFile(join(tmp, 'big.bin'), big);
    await writeFile(join(tmp, 'small.bin'), small);
    expect(await store.putFile('a/big.pmtiles', join(tmp, 'big.bin'))).toEqual({ path: 'a/big.pmtiles', bytes: big.length });
    expect(await store.putFile('a/small.pmtiles', join(tmp, 'small.bin'))).toEqual({ path: 'a/small.pmtiles', bytes: 1000 });
    expect(await store.getFile('a/big.pmtiles', join(tmp, 'down/big.bin'))).toBe(true);
    expect((await readFile(join(tmp, 'down/big.bin'))).equals(big)).toBe(true);
    expect(await store.getFile('a/small.pmtiles', join(tmp, 'down/small.bin'))).toBe(true);
    expect((await readFile(join(tmp, 'down/small.bin'))).equals(small)).toBe(true);
    expect(await store.getFile('a/none.pmtiles', join(tmp, 'down/none.bin'))).toBe(false);
    await expect(readFile(join(tmp, 'down/none.bin'))).rejects.toThrow(/ENOENT/);
    const uploads = await swift.client.send(new ListMultipartUploadsCommand({ Bucket: swift.bucket }));
    expect(uploads.Uploads ?? []).toEqual([]);
  }, 180_000);

  it('reads byte ranges in place, with a short read at the end of the object', async () => {
    const store = openWritableStore(`s3://${swift.bucket}/range`);
    const bytes = randomBytes(100_000);
    await store.putBytes('archive.pmtiles', bytes);
    const src = await store.openRange('archive.pmtiles');
    expect(src.key()).toBe(`s3://${swift.bucket}/range/archive.pmtiles`);
    expect(Buffer.from(await src.getBytes(0, 127)).equals(bytes.subarray(0, 127))).toBe(true);
    expect(Buffer.from(await src.getBytes(54_321, 1000)).equals(bytes.subarray(54_321, 55_321))).toBe(true);
    expect(Buffer.from(await src.getBytes(99_990, 100)).equals(bytes.subarray(99_990))).toBe(true);
    expect((await src.getBytes(100_000, 10)).byteLength).toBe(0);
    expect((await src.getBytes(5, 0)).byteLength).toBe(0);
    await src.close();
    // A missing object fails on the first read, permanently, naming the object.
    const gone = await store.openRange('gone.pmtiles');
    const e = await storeErrorOf(gone.getBytes(0, 10));
    expect(e.transient).toBe(false);
    expect(e.message).toContain(`s3://${swift.bucket}/range/gone.pmtiles bytes 0+10: NoSuchKey`);
  });

  it('reads conditionally by ETag', async () => {
    const store = openWritableStore(`s3://${swift.bucket}/cond`);
    await store.putBytes('current.json', 'v1');
    const first = await store.readFileIfChanged('current.json');
    expect(first !== 'unchanged' && first !== undefined && Buffer.from(first.bytes).toString()).toBe('v1');
    const etag = first !== 'unchanged' ? first?.etag : undefined;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(await store.readFileIfChanged('current.json', etag)).toBe('unchanged');
    await store.putBytes('current.json', 'v2');
    const second = await store.readFileIfChanged('current.json', etag);
    expect(second !== 'unchanged' && second !== undefined && Buffer.from(second.bytes).toString()).toBe('v2');
    expect(await store.readFileIfChanged('none.json', etag)).toBeUndefined();
  });

  it('reports every read to the listener', async () => {
    const outcomes: boolean[] = [];
    const store = new S3Store(`s3://${swift.bucket}/cond`, { onRead: (o) => outcomes.push(o.ok) });
    await store.readFile('current.json');
    await (await store.openRange('current.json')).getBytes(0, 1);
    await expect(await store.readFile('missing/x')).toBeUndefined();
    expect(outcomes).toEqual([true, true, true]);
  });
});

describe('S3Store failures', () => {
  it('wrong credentials: a permanent error naming the object and the cause', async () => {
    await withEnv({ AWS_SECRET_ACCESS_KEY: 'not-the-secret' }, async () => {
      const store = openWritableStore(`s3://${swift.bucket}/runs/r1`);
      const e = await storeErrorOf(store.readFile('run.json'));
      expect(e.transient).toBe(false);
      expect(e.kind).toBe('bad-answer');
      expect(e.message).toMatch(new RegExp(`^s3://${swift.bucket}/runs/r1/run.json: SignatureDoesNotMatch: .*\\(HTTP 403\\) \\(check the credentials`));
      const w = await storeErrorOf(store.putBytes('x', 'y'));
      expect(w.transient).toBe(false);
      expect(w.message).toContain('HTTP 403');
    });
    await withEnv({ AWS_ACCESS_KEY_ID: 'nobody:none' }, async () => {
      const e = await storeErrorOf(openWritableStore(`s3://${swift.bucket}/runs/r1`).list(''));
      expect(e.transient).toBe(false);
      expect(e.message).toMatch(/InvalidAccessKeyId|SignatureDoesNotMatch|AccessDenied/);
    });
  });

  it('a missing bucket: a permanent NoSuchBucket error for reads, writes and lists', async () => {
    const store = openWritableStore('s3://tilebake-no-such-bucket/run');
    for (const op of [() => store.readFile('run.json'), () => store.putBytes('run.json', '{}'), () => store.list(''), () => store.getFile('a', join(tmp, 'nb'))]) {
      const e = await storeErrorOf(op());
      expect(e.transient).toBe(false);
      expect(e.message).toMatch(/^s3:\/\/tilebake-no-such-bucket\/run\/\S*.*NoSuchBucket: .*\(HTTP 404\) \(create the bucket first/);
    }
  });

  it('an unreachable endpoint: a transient error, retried within the deadline', async () => {
    const port = await freePort();
    const reads: number[] = [];
    const store = new S3Store(`s3://${swift.bucket}/runs/r1`, {
      s3Endpoint: `http://127.0.0.1:${port}`,
      policy: { timeoutMs: 5000, retries: 2, backoffMs: 10 },
      onRead: (o) => reads.push(o.attempts),
    });
    const e = await storeErrorOf(store.readFile('run.json'));
    expect(e.transient).toBe(true);
    expect(e.message).toContain(`s3://${swift.bucket}/runs/r1/run.json`);
    expect(e.message).toContain('ECONNREFUSED');
    expect(reads).toEqual([3]);
    const w = await storeErrorOf(store.putBytes('run.json', '{}'));
    expect(w.transient).toBe(true);
  });

  it('no credentials at all: a permanent error that says how to give them', async () => {
    await withEnv({ AWS_ACCESS_KEY_ID: undefined, AWS_SECRET_ACCESS_KEY: undefined, AWS_PROFILE: 'tilebake-none', AWS_CONFIG_FILE: join(tmp, 'none'), AWS_SHARED_CREDENTIALS_FILE: join(tmp, 'none'), AWS_EC2_METADATA_DISABLED: 'true' }, async () => {
      const e = await storeErrorOf(openWritableStore(`s3://${swift.bucket}/x`).readFile('run.json'));
      expect(e.transient).toBe(false);
      expect(e.message).toMatch(/^s3:\/\/tilebake-s3store\/x\/run.json: no AWS credentials: .*\(set AWS_ACCESS_KEY_ID/);
    });
  }, 60_000);
});
