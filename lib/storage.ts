import { open, readFile, stat, type FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { UserError } from './errors.ts';
import { HttpStatus } from './http-status.ts';
import { S3Store } from './s3-store.ts';
import { DEFAULT_READ_POLICY, guardedRead, HttpStatusError, StoreBadAnswerError, type ReadListener, type ReadPolicy } from './store-read.ts';
import type { ConditionalRead, RangeSource, Store, StoreOptions } from './store-types.ts';

export type { ConditionalRead, RangeSource, Store, StoreOptions } from './store-types.ts';

/** Positional reads on a local file: never loads the whole file. */
export class FileRangeSource implements RangeSource {
  private constructor(private readonly path: string, private readonly fh: FileHandle, private readonly bytes: number) {}

  static async open(path: string): Promise<FileRangeSource> {
    let fh: FileHandle;
    try {
      fh = await open(path, 'r');
    } catch (e) {
      throw new UserError(`${path}: cannot open (${(e as NodeJS.ErrnoException).code ?? String(e)})`, { cause: e });
    }
    try {
      return new FileRangeSource(path, fh, (await fh.stat()).size);
    } catch (e) {
      await fh.close();
      throw e;
    }
  }

  async getBytes(offset: number, length: number): Promise<Uint8Array> {
    // Clamped to the file: a corrupt length read from a directory must not allocate gigabytes.
    length = Math.max(0, Math.min(length, this.bytes - offset));
    const buf = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await this.fh.read(buf, done, length - done, offset + done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return done === length ? buf : buf.subarray(0, done);
  }

  key(): string {
    return this.path;
  }

  async size(): Promise<number> {
    return this.bytes;
  }

  async close(): Promise<void> {
    await this.fh.close();
  }
}

/** Cancel a response body that will not be read, so its connection is freed. */
export function discard(res: Response): Promise<void> {
  return res.body ? res.body.cancel().catch(() => undefined) : Promise.resolve();
}

/** HTTP(S) Range requests against one object URL (nginx, S3, GCS, any static host); one attempt per call. */
export class HttpRangeSource implements RangeSource {
  constructor(private readonly url: string) {}

  async getBytes(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    if (length === 0) return new Uint8Array(0);
    const res = await fetch(this.url, { headers: { Range: `bytes=${offset}-${offset + length - 1}` }, signal });
    if (res.status === HttpStatus.RangeNotSatisfiable) {
      await discard(res);
      return new Uint8Array(0);
    }
    if (res.status !== HttpStatus.PartialContent && res.status !== HttpStatus.Ok) {
      await discard(res);
      throw new HttpStatusError(res.status, `HTTP ${res.status}`);
    }
    const body = new Uint8Array(await res.arrayBuffer());
    // A server that ignores Range answers 200 with the whole object: cut out the asked part.
    if (res.status === HttpStatus.Ok) return body.subarray(offset, offset + length);
    return body;
  }

  key(): string {
    return this.url;
  }

  async close(): Promise<void> {}
}

/** A RangeSource whose every read goes through the store's deadline, retries and listener. */
class GuardedSource implements RangeSource {
  constructor(private readonly inner: RangeSource, private readonly opts: ResolvedStoreOptions) {}

  getBytes(offset: number, length: number): Promise<Uint8Array> {
    return guardedRead(
      () => `${this.inner.key()} bytes ${offset}+${length}`,
      this.opts.policy,
      (signal) => this.inner.getBytes(offset, length, signal),
      this.opts.onRead,
    );
  }

  key(): string {
    return this.inner.key();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/** StoreOptions with the policy filled in. */
type ResolvedStoreOptions = StoreOptions & { policy: ReadPolicy };

/** The options with the default policy filled in. */
function withPolicy(opts: StoreOptions): ResolvedStoreOptions {
  return { ...opts, policy: opts.policy ?? DEFAULT_READ_POLICY };
}

/** A build folder on the local disk. */
export class LocalStore implements Store {
  readonly location: string;
  private readonly opts: ResolvedStoreOptions;

  constructor(dir: string, opts: StoreOptions = {}) {
    this.location = resolve(dir);
    this.opts = withPolicy(opts);
  }

  readFile(relPath: string): Promise<Uint8Array | undefined> {
    const p = join(this.location, relPath);
    return guardedRead(
      () => p,
      this.opts.policy,
      async () => {
        try {
          return await readFile(p);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
          throw e;
        }
      },
      this.opts.onRead,
    );
  }

  readFileIfChanged(relPath: string, etag?: string): Promise<ConditionalRead> {
    const p = join(this.location, relPath);
    return guardedRead(
      () => p,
      this.opts.policy,
      async () => {
        try {
          const s = await stat(p);
          const tag = `${s.ino}-${s.size}-${s.mtimeMs}`;
          if (tag === etag) return 'unchanged';
          return { bytes: await readFile(p), etag: tag };
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
          throw e;
        }
      },
      this.opts.onRead,
    );
  }

  localPath(relPath: string): string {
    return join(this.location, relPath);
  }

  async openRange(relPath: string): Promise<RangeSource> {
    const p = join(this.location, relPath);
    const source = await guardedRead(
      () => p,
      this.opts.policy,
      async () => {
        try {
          return await FileRangeSource.open(p);
        } catch (e) {
          const code = ((e as Error).cause as NodeJS.ErrnoException | undefined)?.code;
          if (code === 'ENOENT') throw new StoreBadAnswerError(`${p}: listed in the manifest but missing (ENOENT)`, { transient: false });
          throw (e as Error).cause ?? e;
        }
      },
      this.opts.onRead,
      (late) => void late.close(),
    );
    return new GuardedSource(source, this.opts);
  }
}

/** A build folder published under an HTTP(S) base URL (object storage). */
export class HttpStore implements Store {
  readonly location: string;
  private readonly opts: ResolvedStoreOptions;

  constructor(baseUrl: string, opts: StoreOptions = {}) {
    this.location = baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
    this.opts = withPolicy(opts);
  }

  private urlOf(relPath: string): string {
    return new URL(relPath.split('/').map(encodeURIComponent).join('/'), this.location).href;
  }

  async readFile(relPath: string): Promise<Uint8Array | undefined> {
    // Without an ETag the answer is never 'unchanged'.
    const r = await this.readFileIfChanged(relPath);
    return r === 'unchanged' ? undefined : r?.bytes;
  }

  readFileIfChanged(relPath: string, etag?: string): Promise<ConditionalRead> {
    const url = this.urlOf(relPath);
    return guardedRead(
      () => url,
      this.opts.policy,
      async (signal): Promise<ConditionalRead> => {
        const res = await fetch(url, { signal, headers: etag ? { 'if-none-match': etag } : {} });
        if (res.status === HttpStatus.NotModified) {
          await discard(res);
          return 'unchanged';
        }
        if (res.status === HttpStatus.NotFound || res.status === HttpStatus.Forbidden) {
          await discard(res);
          return undefined;
        }
        if (!res.ok) {
          await discard(res);
          throw new HttpStatusError(res.status, `HTTP ${res.status}`);
        }
        return { bytes: new Uint8Array(await res.arrayBuffer()), etag: res.headers.get('etag') ?? undefined };
      },
      this.opts.onRead,
    );
  }

  async openRange(relPath: string): Promise<RangeSource> {
    return new GuardedSource(new HttpRangeSource(this.urlOf(relPath)), this.opts);
  }
}

/** The files under `prefix` of another store (one build version inside a build folder). */
export class SubStore implements Store {
  readonly location: string;

  constructor(private readonly parent: Store, private readonly prefix: string) {
    const p = prefix.replace(/^\/+|\/+$/g, '');
    this.prefix = p === '' ? '' : `${p}/`;
    this.location = parent instanceof LocalStore ? join(parent.location, p) : `${parent.location.replace(/\/?$/, '/')}${this.prefix}`;
  }

  readFile(relPath: string): Promise<Uint8Array | undefined> {
    return this.parent.readFile(this.prefix + relPath);
  }

  openRange(relPath: string): Promise<RangeSource> {
    return this.parent.openRange(this.prefix + relPath);
  }

  readFileIfChanged(relPath: string, etag?: string): Promise<ConditionalRead> {
    return this.parent.readFileIfChanged(this.prefix + relPath, etag);
  }

  localPath(relPath: string): string | undefined {
    return this.parent.localPath?.(this.prefix + relPath);
  }
}

/** A store for `--out`: an http(s):// base URL, s3://bucket/prefix (read with credentials) or a local folder. */
export function openStore(location: string, opts: StoreOptions = {}): Store {
  if (/^s3:\/\//i.test(location)) return new S3Store(location, opts);
  return /^https?:\/\//i.test(location) ? new HttpStore(location, opts) : new LocalStore(location, opts);
}
