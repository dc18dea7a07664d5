import { open, readFile, stat, type FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { UserError } from './errors.ts';

/**
 * Random access to one stored file: a local file (positional reads) or an object on HTTP(S)
 * (Range requests). The PMTiles reader and the elevation index reader only see this.
 */
export interface RangeSource {
  /** Read `length` bytes at `offset`. Fewer bytes come back only at the end of the file. */
  getBytes(offset: number, length: number): Promise<Uint8Array>;
  /** A stable key naming the file (path or URL), for caches and messages. */
  key(): string;
  /** Release the handle. */
  close(): Promise<void>;
}

/** A build output folder, local or on object storage behind an HTTP(S) base URL. */
export interface Store {
  /** Where the store is (folder path or base URL), for messages. */
  readonly location: string;
  /** A whole small file (manifest, style, sprite, glyphs). Undefined when it does not exist. */
  readFile(relPath: string): Promise<Uint8Array | undefined>;
  /** Random access to a large file (archives, indexes). Throws UserError when it does not exist. */
  openRange(relPath: string): Promise<RangeSource>;
}

/** Positional reads on a local file: never loads the whole file. */
export class FileRangeSource implements RangeSource {
  private constructor(private readonly path: string, private readonly fh: FileHandle) {}

  static async open(path: string): Promise<FileRangeSource> {
    try {
      return new FileRangeSource(path, await open(path, 'r'));
    } catch (e) {
      throw new UserError(`${path}: cannot open (${(e as NodeJS.ErrnoException).code ?? String(e)})`, { cause: e });
    }
  }

  async getBytes(offset: number, length: number): Promise<Uint8Array> {
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
    return (await this.fh.stat()).size;
  }

  async close(): Promise<void> {
    await this.fh.close();
  }
}

/** HTTP(S) Range requests against one object URL (nginx, S3, GCS, any static host). */
export class HttpRangeSource implements RangeSource {
  constructor(private readonly url: string) {}

  async getBytes(offset: number, length: number): Promise<Uint8Array> {
    if (length === 0) return new Uint8Array(0);
    const res = await fetch(this.url, { headers: { Range: `bytes=${offset}-${offset + length - 1}` } });
    if (res.status === 416) return new Uint8Array(0);
    if (res.status !== 206 && res.status !== 200) {
      throw new Error(`${this.url}: HTTP ${res.status} for bytes ${offset}-${offset + length - 1}`);
    }
    const body = new Uint8Array(await res.arrayBuffer());
    // A server that ignores Range answers 200 with the whole object: cut out the asked part.
    if (res.status === 200) return body.subarray(offset, offset + length);
    return body;
  }

  key(): string {
    return this.url;
  }

  async close(): Promise<void> {}
}

/** A build folder on the local disk. */
export class LocalStore implements Store {
  readonly location: string;
  constructor(dir: string) {
    this.location = resolve(dir);
  }

  async readFile(relPath: string): Promise<Uint8Array | undefined> {
    try {
      return await readFile(join(this.location, relPath));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  }

  async openRange(relPath: string): Promise<RangeSource> {
    const p = join(this.location, relPath);
    await stat(p).catch((e) => {
      throw new UserError(`${p}: listed in the manifest but missing (${(e as NodeJS.ErrnoException).code})`);
    });
    return FileRangeSource.open(p);
  }
}

/** A build folder published under an HTTP(S) base URL (object storage). */
export class HttpStore implements Store {
  readonly location: string;
  constructor(baseUrl: string) {
    this.location = baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
  }

  private urlOf(relPath: string): string {
    return new URL(relPath.split('/').map(encodeURIComponent).join('/'), this.location).href;
  }

  async readFile(relPath: string): Promise<Uint8Array | undefined> {
    const url = this.urlOf(relPath);
    const res = await fetch(url);
    if (res.status === 404 || res.status === 403) return undefined;
    if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
    return new Uint8Array(await res.arrayBuffer());
  }

  async openRange(relPath: string): Promise<RangeSource> {
    return new HttpRangeSource(this.urlOf(relPath));
  }
}

/** A store for `--out`: an http(s):// base URL or a local folder. */
export function openStore(location: string): Store {
  return /^https?:\/\//i.test(location) ? new HttpStore(location) : new LocalStore(location);
}
