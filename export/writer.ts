/**
 * Writes an export incrementally and safely. New and changed files go to a staging folder inside the
 * export (same file system, so moving them is a rename); nothing visible changes until every file is
 * staged. Then: data files (tiles, sprites, glyphs) are moved into place, then the documents pointing
 * at them (TileJSON, style.json), then files no longer in the build are deleted, then the listing is
 * written. Equal bytes are stored once and hard-linked (copied where links are not possible).
 * `addVersion` adds the versioned copy `v/{id}/…` of the whole export (links, no new bytes).
 */
import { copyFile, link, mkdir, readdir, rename, rm, rmdir, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { writeFileAtomic } from '../lib/atomic.ts';
import { Memo } from '../lib/shared-work.ts';
import { versionedFilePath, versionOfPath } from '../lib/versioned-url.ts';
import { COMMITTING_FILE, formatListing, LISTING_FILE, type Listed } from './listing.ts';

/** Staging folder inside the export (removed at the end; a killed export's is removed by the next). */
export const STAGING_DIR = '.tilebake-staging';
/** File operations in flight at once. */
const CONCURRENCY = 32;

/** One file handed to the writer; `bytes` may be left out when the same hash was handed over before. */
export interface WriterFile {
  path: string;
  hash: string;
  bytes?: Uint8Array;
  /** TileJSON and style.json: switched after the data files. */
  document?: boolean;
}

/** What an export changed and what it holds. */
export interface ExportReport {
  /** Paths written that were not there before. */
  added: string[];
  /** Paths whose bytes changed. */
  updated: string[];
  /** Paths deleted (no longer in the build). */
  removed: string[];
  unchanged: number;
  /** Files in the export after this run, and their total size as files. */
  files: number;
  bytes: number;
  /** Distinct contents among them, and their total size (disk use when hard links work). */
  uniqueFiles: number;
  uniqueBytes: number;
  /** Files this run created as hard links to equal bytes, and copies made where linking failed. */
  linked: number;
  copied: number;
}

/** Where bytes with a given hash already are: a staged file (once written) or a file of the previous export. */
interface Known {
  path: string;
  ready: Promise<void>;
}

export class ExportWriter {
  private readonly staging: string;
  private readonly next = new Map<string, Listed>();
  private readonly known = new Map<string, Known>();
  /** Size of the bytes of each hash seen. */
  private readonly sizes = new Map<string, number>();
  private readonly dirs = new Memo<string, unknown>();
  private readonly inflight = new Set<Promise<void>>();
  private readonly documents: string[] = [];
  private readonly changed: string[] = [];
  private failure: unknown;
  private readonly report: ExportReport = {
    added: [],
    updated: [],
    removed: [],
    unchanged: 0,
    files: 0,
    bytes: 0,
    uniqueFiles: 0,
    uniqueBytes: 0,
    linked: 0,
    copied: 0,
  };

  /**
   * `previous`: the files of the export already in `root`; `keep`: whether a previous file this run
   * does not produce stays (a part not exported, an older version kept); the others are deleted.
   */
  constructor(
    private readonly root: string,
    private readonly previous: ReadonlyMap<string, Listed>,
    private readonly keep: (path: string) => boolean,
  ) {
    this.staging = join(root, STAGING_DIR);
    for (const [path, f] of previous) {
      this.known.set(f.hash, { path: join(root, path), ready: Promise.resolve() });
      this.sizes.set(f.hash, f.size);
    }
  }

  /** Remove a staging folder left by a killed export and start a fresh one. */
  async open(): Promise<void> {
    await rm(this.staging, { recursive: true, force: true });
    await mkdir(this.staging, { recursive: true });
  }

  /** Add one file of the build (waits only when too many file operations are in flight). */
  async add(f: WriterFile): Promise<void> {
    if (this.failure) throw this.failure;
    if (f.bytes) this.sizes.set(f.hash, f.bytes.length);
    const size = this.sizes.get(f.hash) ?? 0;
    if (this.next.has(f.path)) throw new Error(`export: ${f.path} produced twice`);
    this.next.set(f.path, { hash: f.hash, size });
    const before = this.previous.get(f.path);
    if (before?.hash === f.hash) {
      this.report.unchanged++;
      return;
    }
    (before ? this.report.updated : this.report.added).push(f.path);
    (f.document ? this.documents : this.changed).push(f.path);
    const staged = join(this.staging, f.path);
    const source = this.known.get(f.hash);
    let op: Promise<void>;
    if (source) {
      op = source.ready.then(() => this.linkOrCopy(source.path, staged));
    } else {
      if (!f.bytes) throw new Error(`export: ${f.path}: bytes of ${f.hash} were never given`);
      const bytes = f.bytes;
      op = this.dir(staged).then(() => writeFile(staged, bytes));
      this.known.set(f.hash, { path: staged, ready: op.catch(() => undefined) });
    }
    const tracked: Promise<void> = op.then(
      () => void this.inflight.delete(tracked),
      (e: unknown) => {
        this.inflight.delete(tracked);
        this.failure ??= e;
      },
    );
    this.inflight.add(tracked);
    if (this.inflight.size >= CONCURRENCY) await Promise.race(this.inflight);
  }

  /**
   * After every file of the build was added: add `v/{id}/path` for every unversioned path the export
   * holds after this run (what `/path` answers while `id` is current), linked to the same bytes.
   */
  async addVersion(id: string): Promise<void> {
    const files = new Map(this.next);
    for (const [p, f] of this.previous) if (!files.has(p) && this.keep(p)) files.set(p, f);
    for (const [p, f] of files) if (versionOfPath(p) === undefined) await this.add({ path: versionedFilePath(id, p), hash: f.hash });
  }

  private async linkOrCopy(from: string, to: string): Promise<void> {
    await this.dir(to);
    try {
      await link(from, to);
      this.report.linked++;
    } catch {
      await copyFile(from, to);
      this.report.copied++;
    }
  }

  /** Create the parent folder of `file` once. */
  private dir(file: string): Promise<unknown> {
    const d = dirname(file);
    return this.dirs.get(d, () => mkdir(d, { recursive: true }));
  }

  /** Run `op` over `items`, CONCURRENCY at a time. */
  private static async each<T>(items: readonly T[], op: (item: T) => Promise<unknown>): Promise<void> {
    let i = 0;
    const lane = async () => {
      while (i < items.length) await op(items[i++]);
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, items.length) }, lane));
  }

  /** Staged everything: switch files into place, delete what left the build, write the listing. */
  async commit(): Promise<ExportReport> {
    await Promise.all(this.inflight);
    if (this.failure) throw this.failure;
    const keep = (path: string) => !this.next.has(path) && this.keep(path);
    const removed = [...this.previous.keys()].filter((p) => !this.next.has(p) && !this.keep(p)).sort();
    await writeFileAtomic(join(this.root, COMMITTING_FILE), [...this.changed, ...this.documents].join('\n'));
    const place = (path: string) => this.dir(join(this.root, path)).then(() => rename(join(this.staging, path), join(this.root, path)));
    await ExportWriter.each(this.changed, place);
    await ExportWriter.each(this.documents, place);
    await ExportWriter.each(removed, (p) => unlink(join(this.root, p)).catch(() => undefined));
    await pruneEmptyDirs(this.root, removed);
    const listing = new Map(this.next);
    for (const [p, f] of this.previous) if (keep(p)) listing.set(p, f);
    await writeFileAtomic(join(this.root, LISTING_FILE), formatListing(listing));
    await rm(join(this.root, COMMITTING_FILE), { force: true });
    await rm(this.staging, { recursive: true, force: true });
    const unique = new Map<string, number>();
    for (const f of listing.values()) unique.set(f.hash, f.size);
    Object.assign(this.report, {
      removed,
      files: listing.size,
      bytes: [...listing.values()].reduce((s, f) => s + f.size, 0),
      uniqueFiles: unique.size,
      uniqueBytes: [...unique.values()].reduce((s, n) => s + n, 0),
    });
    return this.report;
  }

  /** Give up: remove the staging folder (the previous export is untouched). */
  async abort(): Promise<void> {
    await Promise.allSettled(this.inflight);
    await rm(this.staging, { recursive: true, force: true });
  }
}

/** Remove the folders of deleted files that are now empty, deepest first. */
async function pruneEmptyDirs(root: string, removed: readonly string[]): Promise<void> {
  const dirs = new Set<string>();
  for (const p of removed) for (let d = dirname(p); d !== '.' && d !== ''; d = dirname(d)) dirs.add(d);
  for (const d of [...dirs].sort((a, b) => b.length - a.length)) {
    const full = join(root, d);
    if ((await readdir(full).catch(() => ['?'])).length === 0) await rmdir(full).catch(() => undefined);
  }
}
