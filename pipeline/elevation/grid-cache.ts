import type { DemGrid } from './grid.ts';

/** Loads one source's heights (a DEM reader in the pipeline, the grid itself in tests). */
export type GridLoader = (key: number) => Promise<DemGrid>;

interface Entry {
  grid: Promise<DemGrid>;
  bytes: number;
  users: number;
}

/**
 * Loaded DEM grids shared by the chunks that need them, bounded in bytes: a grid in use is kept,
 * grids nobody uses are dropped least recently used first once the total passes `maxBytes` (a chunk
 * whose own sources exceed the bound still gets them; the bound is met again when it releases them).
 * Loads are single-flight: two chunks asking for one grid read it once.
 */
export class GridCache {
  private readonly entries = new Map<number, Entry>();
  private total = 0;
  /** Grids read so far (a grid evicted and needed again counts twice). */
  loads = 0;

  constructor(private readonly maxBytes: number, private readonly load: GridLoader) {}

  /** Bytes of the grids held now. */
  get bytes(): number {
    return this.total;
  }

  /** The grid of source `key`, loading it if needed; hold it until `release(key)`. */
  async acquire(key: number): Promise<DemGrid> {
    let e = this.entries.get(key);
    if (e) {
      // Most recently used last.
      this.entries.delete(key);
      this.entries.set(key, e);
    } else {
      this.loads++;
      const entry: Entry = { grid: this.load(key), bytes: 0, users: 0 };
      e = entry;
      this.entries.set(key, entry);
      entry.grid.then(
        (g) => {
          entry.bytes = g.data.byteLength;
          this.total += entry.bytes;
          this.evict();
        },
        () => this.entries.get(key) === entry && this.entries.delete(key),
      );
    }
    e.users++;
    try {
      return await e.grid;
    } catch (err) {
      e.users--;
      throw err;
    }
  }

  /** Stop using source `key`'s grid (it may be dropped). */
  release(key: number): void {
    const e = this.entries.get(key);
    if (!e) return;
    e.users--;
    this.evict();
  }

  private evict(): void {
    for (const [k, e] of this.entries) {
      if (this.total <= this.maxBytes) return;
      if (e.users > 0 || e.bytes === 0) continue;
      this.entries.delete(k);
      this.total -= e.bytes;
    }
  }
}
