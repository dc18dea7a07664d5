// The storage interfaces, apart from their implementations (lib/storage.ts: folders and HTTP;
// lib/object-store.ts: writable folders; lib/s3-store.ts: S3), so that each implementation module
// depends on this one and none on another's types.
import type { ReadListener, ReadPolicy } from './store-read.ts';

/**
 * Random access to one stored file: a local file (positional reads) or an object on HTTP(S)
 * (Range requests). The PMTiles reader and the elevation index reader only see this.
 */
export interface RangeSource {
  /**
   * Read `length` bytes at `offset`. Fewer bytes come back only at the end of the file. `signal`
   * abandons the read (HTTP sources stop the request; store sources apply their own deadline).
   */
  getBytes(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array>;
  /** A stable key naming the file (path or URL), for caches and messages. */
  key(): string;
  /** Release the handle. */
  close(): Promise<void>;
}

/**
 * A build output folder, local or on object storage behind an HTTP(S) base URL. Every read has a
 * deadline and retries (its ReadPolicy) and fails with a StoreError (lib/store-read.ts).
 */
export interface Store {
  /** Where the store is (folder path or base URL), for messages. */
  readonly location: string;
  /** A whole small file (manifest, style, sprite, glyphs). Undefined when it does not exist. */
  readFile(relPath: string): Promise<Uint8Array | undefined>;
  /** Random access to a large file (archives, indexes). A missing file fails on open (local) or on the first read (HTTP). */
  openRange(relPath: string): Promise<RangeSource>;
  /**
   * A small file unless it is unchanged since the read that returned `etag` (HTTP: a conditional GET
   * with If-None-Match; local: the file's inode, size and mtime). Undefined when it does not exist.
   */
  readFileIfChanged(relPath: string, etag?: string): Promise<ConditionalRead>;
  /**
   * The file's path on this machine when the store is a local folder (a reader that must open a file
   * itself, such as SQLite, uses it; others download the file first). Absent or undefined otherwise.
   */
  localPath?(relPath: string): string | undefined;
}

/** The answer of `Store.readFileIfChanged`. */
export type ConditionalRead = { bytes: Uint8Array; etag?: string } | 'unchanged' | undefined;

/** How a store reads: its deadline and retries, and who hears about each read's outcome. */
export interface StoreOptions {
  policy?: ReadPolicy;
  /** Called once per read (health tracking; the hook for metrics). */
  onRead?: ReadListener;
  /** Endpoint of an S3-compatible store for s3:// locations (--s3-endpoint; default AWS_ENDPOINT_URL, else AWS S3). */
  s3Endpoint?: string;
}

/** One object (file) of a writable store, as `list` reports it. */
export interface StoredObject {
  /** Path relative to the store's root, with `/` separators. */
  path: string;
  bytes: number;
}

/**
 * A place where runs and builds are written and read back: a local or shared folder (NFS, Lustre, EFS)
 * or S3-compatible object storage (`s3://bucket/prefix`). Reads are those of `Store` (deadline,
 * retries, ranged reads); writes are whole objects that readers see complete or not at all (a folder
 * writes a temp file and renames it; S3 has no partial objects). Nothing relies on conditional writes
 * (neither Swift's s3api nor older S3 offer them): callers write deterministic keys, so a repeated
 * write of the same bytes is harmless.
 */
export interface WritableStore extends Store {
  /** Write `bytes` to `relPath`, replacing what was there. */
  putBytes(relPath: string, bytes: Uint8Array | string): Promise<void>;
  /** Upload the local file `localPath` to `relPath`, replacing what was there. */
  putFile(relPath: string, localPath: string): Promise<StoredObject>;
  /** Download `relPath` to the local file `localPath` (written atomically). False when it does not exist. */
  getFile(relPath: string, localPath: string): Promise<boolean>;
  /** Every object whose path starts with `prefix` (a folder prefix ends with `/`), sorted by path. */
  list(prefix: string): Promise<StoredObject[]>;
  /** Remove `relPath`; removing a missing object is not an error. */
  delete(relPath: string): Promise<void>;
}
