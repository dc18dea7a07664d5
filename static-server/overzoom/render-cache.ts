/**
 * The on-disk cache of raster tiles rendered on demand (`overzoom: render`): one file per tile under
 * one folder, with a size cap and least-recently-used eviction.
 *
 * The processes of `serve --workers N` share the folder. A tile is written to a temp file and renamed
 * into place (lib/atomic.ts), so a reader sees a whole tile or none; recency is the file's mtime
 * (touched on a hit), which every process sees. Each process keeps an index of the files it knows (the
 * folder as last scanned plus its own writes) and evicts from it before writing (down to 90 % of the
 * cap), so one process holds the cap exactly. With N processes each one scans the folder again once it has written its 1/N share
 * of the room left at its last scan, so together they stay within the cap (give or take the metatiles
 * being written at that moment).
 */
import { readdir, readFile, rm, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../../lib/atomic.ts';

/** A hit touches a file's mtime at most this often (recency for other processes' scans). */
const TOUCH_EVERY_MS = 60_000;
/** Eviction frees room down to this fraction of the cap. */
const LOW_WATER = 0.9;
/** Temp files (`.name.tmp-…`) older than this are left-overs of a killed process: removed by a scan. */
const STALE_TEMP_MS = 10 * 60_000;

/** One file to cache: its path relative to the cache folder (with `/`) and its bytes. */
export interface CachedFile {
  rel: string;
  data: Uint8Array;
}

/** A file of the index: its size, and when this process last touched its mtime. */
interface Entry {
  bytes: number;
  touched: number;
}

/** Tiles rendered on demand, on disk, within `capBytes`. */
export class RenderCache {
  /** Files by relative path, least recently used first (Map order). */
  private readonly index = new Map<string, Entry>();
  private total = 0;
  /** Bytes this process may write before it scans again (its share of the room at the last scan). */
  private allowance = 0;
  private scanned?: Promise<void>;

  /**
   * `dir`: the cache folder (created on first write). `capBytes`: most bytes of tiles it holds.
   * `processes`: how many processes share it (serve's --workers).
   */
  constructor(
    readonly dir: string,
    readonly capBytes: number,
    private readonly processes = 1,
  ) {}

  /** Bytes of the files this process knows of (after a scan: every file in the folder). */
  get bytes(): number {
    return this.total;
  }

  /** The bytes of `rel`, or undefined when it is not cached (a hit makes it the most recent). */
  async get(rel: string): Promise<Buffer | undefined> {
    await this.ready();
    try {
      const data = await readFile(this.path(rel));
      const now = Date.now();
      const e = this.index.get(rel) ?? this.add(rel, data.length, 0);
      this.index.delete(rel);
      this.index.set(rel, e);
      if (now - e.touched > TOUCH_EVERY_MS) {
        e.touched = now;
        const t = new Date(now);
        utimes(this.path(rel), t, t).catch(() => undefined);
      }
      return data;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      // Evicted by another process.
      this.forget(rel);
      return undefined;
    }
  }

  /**
   * Cache `files` (the tiles of one render), evicting the least recently used first so that the cap
   * holds; files larger than the whole cap together are not cached.
   */
  async putAll(files: CachedFile[]): Promise<void> {
    await this.ready();
    const incoming = files.reduce((n, f) => n + f.data.byteLength, 0);
    if (incoming > this.capBytes) return;
    if (this.processes > 1 && incoming > this.allowance) await this.scan();
    if (this.total + incoming > this.capBytes) {
      // Down to a low-water mark, so that the next renders find room without another scan or eviction.
      await this.evict(this.capBytes * LOW_WATER - incoming);
      this.allowance = Math.max(0, this.capBytes - this.total) / this.processes;
    }
    for (const f of files) {
      await writeFileAtomic(this.path(f.rel), f.data);
      this.forget(f.rel);
      this.add(f.rel, f.data.byteLength, Date.now());
    }
    this.allowance -= incoming;
  }

  /** Scan the folder (once, before the first use). */
  private ready(): Promise<void> {
    this.scanned ??= this.scan();
    return this.scanned;
  }

  /** Rebuild the index from the folder, oldest mtime first, and this process's share of the room left. */
  private async scan(): Promise<void> {
    const found: { rel: string; bytes: number; mtime: number }[] = [];
    const walk = async (dir: string, prefix: string): Promise<void> => {
      const entries = await readdir(dir, { withFileTypes: true }).catch((e: NodeJS.ErrnoException) => {
        if (e.code === 'ENOENT') return [];
        throw e;
      });
      for (const d of entries) {
        const abs = join(dir, d.name);
        if (d.isDirectory()) await walk(abs, `${prefix}${d.name}/`);
        else if (d.isFile()) {
          const s = await stat(abs).catch(() => undefined);
          if (!s) continue;
          if (d.name.startsWith('.')) {
            if (Date.now() - s.mtimeMs > STALE_TEMP_MS) await rm(abs, { force: true });
            continue;
          }
          found.push({ rel: `${prefix}${d.name}`, bytes: s.size, mtime: s.mtimeMs });
        }
      }
    };
    await walk(this.dir, '');
    found.sort((a, b) => a.mtime - b.mtime);
    this.index.clear();
    this.total = 0;
    for (const f of found) this.add(f.rel, f.bytes, f.mtime);
    this.allowance = Math.max(0, this.capBytes - this.total) / this.processes;
  }

  /** Remove the least recently used files until at most `target` bytes remain. */
  private async evict(target: number): Promise<void> {
    for (const [rel] of this.index) {
      if (this.total <= target) return;
      this.forget(rel);
      await rm(this.path(rel), { force: true });
    }
  }

  private add(rel: string, bytes: number, touched: number): Entry {
    const e = { bytes, touched };
    this.index.set(rel, e);
    this.total += bytes;
    return e;
  }

  private forget(rel: string): void {
    const e = this.index.get(rel);
    if (!e) return;
    this.index.delete(rel);
    this.total -= e.bytes;
  }

  private path(rel: string): string {
    return join(this.dir, rel);
  }
}
