/**
 * `s3://bucket/prefix`: runs and builds on AWS S3 or any S3-compatible store (Swift's s3api, Ceph,
 * MinIO, R2...) through @aws-sdk/client-s3. Every request is one attempt inside `guardedRead`
 * (lib/store-read.ts), which owns deadlines and retries, so the SDK's own retries are off; failures
 * become StoreErrors whose message names the s3:// URL and the cause, `transient` for an unreachable
 * endpoint, 5xx and throttling, permanent for bad credentials, a missing bucket or access denied.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import type { GetObjectCommandOutput, S3Client, S3ClientConfig, S3ServiceException } from '@aws-sdk/client-s3';
import { produceAtomic } from './atomic.ts';
import { UserError } from './errors.ts';
import { HttpStatus } from './http-status.ts';
import type { ConditionalRead, RangeSource, StoredObject, StoreOptions, WritableStore } from './store-types.ts';
import { DEFAULT_READ_POLICY, guardedRead, HttpStatusError, toStoreError, type ReadListener, type ReadPolicy } from './store-read.ts';

/** Region when neither the environment nor a profile names one (S3-compatible stores mostly ignore it). */
const FALLBACK_REGION = 'us-east-1';
/** Least time a whole-object transfer (upload, download) may take: archives are large. */
const TRANSFER_TIMEOUT_MS = 30 * 60_000;
/** Part size of multipart uploads (S3's minimum is 5 MiB). */
const PART_BYTES = 16 * 1024 * 1024;

/**
 * The AWS SDK, loaded on the first request: it costs ~0.2 CPU s to import, which every command and
 * `serve` process paid whether or not it used S3 (a shard of a folder run, a server of a folder).
 */
let sdkModule: Promise<typeof import('@aws-sdk/client-s3')> | undefined;
function sdk(): Promise<typeof import('@aws-sdk/client-s3')> {
  // The SDK warns on Node 20 that its releases after January 2027 need Node 22, on stderr, in every
  // command that touches S3: the installed version is pinned by package-lock.json and supports Node 20
  // (tilebake's engines). Silenced unless the user set the SDK's own switch.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  return (sdkModule ??= import('@aws-sdk/client-s3'));
}

/** Bucket and key prefix of an `s3://bucket/prefix` location; the prefix is empty or ends with `/`. */
export function parseS3Url(location: string): { bucket: string; prefix: string } {
  const m = /^s3:\/\/([^/]+)\/?(.*)$/i.exec(location);
  // S3's bucket naming rules (3-63 characters of lower-case letters, digits, dots and hyphens).
  if (!m || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(m[1])) {
    throw new UserError(`${location}: expected s3://bucket/prefix with a valid bucket name (3-63 lower-case letters, digits, dots, hyphens)`, { exitCode: 2 });
  }
  const p = m[2].replace(/\/+$/, '');
  return { bucket: m[1], prefix: p === '' ? '' : `${p}/` };
}

/** The endpoint to use: the option, else AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, else AWS's own. */
export function s3EndpointOf(option: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const e = option || env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  if (e !== undefined && !/^https?:\/\/[^/]/i.test(e)) {
    throw new UserError(`--s3-endpoint / AWS_ENDPOINT_URL: expected an http(s):// URL (got "${e}")`, { exitCode: 2 });
  }
  return e;
}

/** The region from the standard AWS chain (AWS_REGION, the profile's config), else us-east-1. */
async function defaultRegion(): Promise<string> {
  try {
    return await new (await sdk()).S3Client({}).config.region();
  } catch {
    return FALLBACK_REGION;
  }
}

/** Advice appended to permanent failures whose cause the user can fix. */
function hintFor(name: string): string {
  if (/InvalidAccessKeyId|SignatureDoesNotMatch|InvalidToken|ExpiredToken|AuthorizationHeaderMalformed/.test(name)) {
    return ' (check the credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or AWS_PROFILE)';
  }
  if (name === 'AccessDenied') return ' (the credentials are not allowed to do this on the bucket)';
  if (name === 'NoSuchBucket') return ' (create the bucket first, or check --s3-endpoint / AWS_ENDPOINT_URL)';
  if (name === 'CredentialsProviderError') return ' (set AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, AWS_PROFILE or an instance role)';
  return '';
}

/** Why a request failed, as a thrown value `guardedRead` classifies (HTTP status decides `transient`). */
function s3Failure(e: unknown): unknown {
  // An S3ServiceException (or another SDK error) carries $metadata; the SDK is loaded by then.
  if ((e as { $metadata?: unknown })?.$metadata !== undefined) {
    const err = e as S3ServiceException;
    const status = err.$metadata?.httpStatusCode;
    // Throttling answers are transient even when a store sends them as 400.
    const throttled = err.$retryable?.throttling === true || /SlowDown|Throttl|RequestLimitExceeded/.test(err.name);
    if (status !== undefined) {
      const text = err.message && err.message !== 'UnknownError' ? `${err.name}: ${err.message}` : err.name;
      return new HttpStatusError(throttled ? HttpStatus.Unavailable : status, `${text} (HTTP ${status})${hintFor(err.name)}`);
    }
  }
  if ((e as Error)?.name === 'CredentialsProviderError') {
    // No cause: the store error's message would show the SDK's text instead of this one.
    return new UserError(`no AWS credentials: ${(e as Error).message}${hintFor('CredentialsProviderError')}`);
  }
  return e;
}

/** HTTP status of an SDK failure (304 and 404 are answers, not failures, for some calls). */
function statusOf(e: unknown): number | undefined {
  return (e as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}

/** The whole body of a GetObject answer. */
async function bodyBytes(res: GetObjectCommandOutput): Promise<Uint8Array> {
  return res.Body ? res.Body.transformToByteArray() : new Uint8Array(0);
}

/** Ranged GETs of one object; each read is one guarded, retried request. */
class S3RangeSource implements RangeSource {
  constructor(private readonly store: S3Store, private readonly relPath: string) {}

  getBytes(offset: number, length: number): Promise<Uint8Array> {
    if (length <= 0) return Promise.resolve(new Uint8Array(0));
    return this.store.request(`${this.key()} bytes ${offset}+${length}`, 'read', async (signal) => {
      try {
        const res = await this.store.getObject(this.relPath, { Range: `bytes=${offset}-${offset + length - 1}` }, signal);
        return await bodyBytes(res);
      } catch (e) {
        // Past the end of the object: nothing to read, as from a file.
        if (statusOf(e) === HttpStatus.RangeNotSatisfiable) return new Uint8Array(0);
        throw e;
      }
    });
  }

  key(): string {
    return this.store.urlOf(this.relPath);
  }

  async close(): Promise<void> {}
}

/** A WritableStore on S3 (or an S3-compatible store) under `s3://bucket/prefix`. */
export class S3Store implements WritableStore {
  readonly location: string;
  readonly bucket: string;
  private readonly clientConfig: S3ClientConfig;
  private clientPromise?: Promise<S3Client>;
  private readonly prefix: string;
  private readonly policy: ReadPolicy;
  private readonly onRead?: ReadListener;

  constructor(location: string, opts: StoreOptions = {}) {
    const { bucket, prefix } = parseS3Url(location);
    this.bucket = bucket;
    this.prefix = prefix;
    this.location = `s3://${bucket}/${prefix}`;
    this.policy = opts.policy ?? DEFAULT_READ_POLICY;
    this.onRead = opts.onRead;
    const endpoint = s3EndpointOf(opts.s3Endpoint);
    this.clientConfig = {
      region: defaultRegion,
      // Custom endpoints (Swift, Ceph, MinIO) address buckets by path, not by DNS name.
      ...(endpoint !== undefined ? { endpoint, forcePathStyle: true } : { followRegionRedirects: true }),
      // guardedRead retries; the SDK's own retries would multiply attempts and ignore the deadline.
      maxAttempts: 1,
      // Checksums only where S3 requires them: stores other than AWS (Swift's s3api) reject the
      // streaming checksum trailers the SDK would add to every upload by default.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    };
  }

  /** The SDK client, made on first use (the SDK is loaded then). */
  client(): Promise<S3Client> {
    return (this.clientPromise ??= sdk().then((m) => new m.S3Client(this.clientConfig)));
  }

  /** The object key of `relPath`. */
  private keyOf(relPath: string): string {
    return this.prefix + relPath.replace(/^\/+/, '');
  }

  /** `s3://bucket/key` of `relPath`, for messages and cache keys. */
  urlOf(relPath: string): string {
    return `s3://${this.bucket}/${this.keyOf(relPath)}`;
  }

  /** A GetObject of `relPath` with extra parameters (Range, IfNoneMatch). */
  async getObject(relPath: string, extra: { Range?: string; IfNoneMatch?: string }, signal: AbortSignal): Promise<GetObjectCommandOutput> {
    const [client, { GetObjectCommand }] = await Promise.all([this.client(), sdk()]);
    return client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.keyOf(relPath), ...extra }), { abortSignal: signal });
  }

  /**
   * Run one request under the store's deadline and retries. Reads use the read policy and report to
   * the listener; whole-object transfers and writes get at least TRANSFER_TIMEOUT_MS.
   */
  request<T>(what: string, kind: 'read' | 'transfer', attempt: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const policy = kind === 'read' ? this.policy : { ...this.policy, timeoutMs: Math.max(this.policy.timeoutMs, TRANSFER_TIMEOUT_MS) };
    return guardedRead(
      () => what,
      policy,
      async (signal) => {
        try {
          return await attempt(signal);
        } catch (e) {
          throw s3Failure(e);
        }
      },
      kind === 'read' ? this.onRead : undefined,
    );
  }

  async readFile(relPath: string): Promise<Uint8Array | undefined> {
    const r = await this.readFileIfChanged(relPath);
    return r === 'unchanged' ? undefined : r?.bytes;
  }

  readFileIfChanged(relPath: string, etag?: string): Promise<ConditionalRead> {
    return this.request(this.urlOf(relPath), 'read', async (signal): Promise<ConditionalRead> => {
      try {
        const res = await this.getObject(relPath, etag ? { IfNoneMatch: etag } : {}, signal);
        return { bytes: await bodyBytes(res), etag: res.ETag };
      } catch (e) {
        const status = statusOf(e);
        if (status === HttpStatus.NotModified) return 'unchanged';
        if (status === HttpStatus.NotFound && (e as Error).name !== 'NoSuchBucket') return undefined;
        throw e;
      }
    });
  }

  async openRange(relPath: string): Promise<RangeSource> {
    return new S3RangeSource(this, relPath);
  }

  async putBytes(relPath: string, bytes: Uint8Array | string): Promise<void> {
    const body = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
    const [client, { PutObjectCommand }] = await Promise.all([this.client(), sdk()]);
    await this.request(this.urlOf(relPath), 'transfer', (signal) =>
      client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.keyOf(relPath), Body: body, ContentLength: body.byteLength }), { abortSignal: signal }),
    );
  }

  async putFile(relPath: string, localPath: string): Promise<StoredObject> {
    const bytes = (await stat(localPath)).size;
    const [client, { Upload }] = await Promise.all([this.client(), import('@aws-sdk/lib-storage')]);
    await this.request(`${this.urlOf(relPath)} (upload of ${localPath})`, 'transfer', async (signal) => {
      // Multipart above one part; a failed upload is aborted, so no parts are left behind.
      const upload = new Upload({
        client,
        params: { Bucket: this.bucket, Key: this.keyOf(relPath), Body: createReadStream(localPath), ContentLength: bytes },
        partSize: PART_BYTES,
        queueSize: 4,
        leavePartsOnError: false,
      });
      signal.addEventListener('abort', () => void upload.abort(), { once: true });
      await upload.done();
    });
    return { path: relPath, bytes };
  }

  async getFile(relPath: string, localPath: string): Promise<boolean> {
    return this.request(`${this.urlOf(relPath)} (download to ${localPath})`, 'transfer', async (signal) => {
      let res: GetObjectCommandOutput;
      try {
        res = await this.getObject(relPath, {}, signal);
      } catch (e) {
        if (statusOf(e) === HttpStatus.NotFound && (e as Error).name !== 'NoSuchBucket') return false;
        throw e;
      }
      await produceAtomic(localPath, (tmp) => pipeline(res.Body as Readable, createWriteStream(tmp), { signal }));
      return true;
    });
  }

  async list(prefix: string): Promise<StoredObject[]> {
    const [client, { paginateListObjectsV2 }] = await Promise.all([this.client(), sdk()]);
    return this.request(`${this.urlOf(prefix)}* (list)`, 'transfer', async (signal) => {
      const out: StoredObject[] = [];
      const pages = paginateListObjectsV2({ client }, { Bucket: this.bucket, Prefix: this.keyOf(prefix) }, { abortSignal: signal });
      for await (const page of pages) {
        for (const o of page.Contents ?? []) {
          if (o.Key !== undefined) out.push({ path: o.Key.slice(this.prefix.length), bytes: o.Size ?? 0 });
        }
      }
      return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    });
  }

  async delete(relPath: string): Promise<void> {
    const [client, { DeleteObjectCommand }] = await Promise.all([this.client(), sdk()]);
    await this.request(this.urlOf(relPath), 'transfer', (signal) =>
      client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.keyOf(relPath) }), { abortSignal: signal }),
    );
  }
}
