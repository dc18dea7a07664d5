import type { ConditionalRead, RangeSource, Store } from './storage.ts';

/**
 * A store that reads some paths from another store: a shard's render host reads the run's tileset
 * archives from the run's store (ranged reads, no download) and its own prepared styles, sprites and
 * fonts from node-local scratch.
 */
export class OverlayStore implements Store {
  readonly location: string;

  /** `paths` (exact relative paths) are read from `over`, everything else from `base`. */
  constructor(private readonly base: Store, private readonly over: Store, private readonly paths: ReadonlySet<string>) {
    this.location = base.location;
  }

  private pick(relPath: string): Store {
    return this.paths.has(relPath) ? this.over : this.base;
  }

  readFile(relPath: string): Promise<Uint8Array | undefined> {
    return this.pick(relPath).readFile(relPath);
  }

  openRange(relPath: string): Promise<RangeSource> {
    return this.pick(relPath).openRange(relPath);
  }

  readFileIfChanged(relPath: string, etag?: string): Promise<ConditionalRead> {
    return this.pick(relPath).readFileIfChanged(relPath, etag);
  }
}
