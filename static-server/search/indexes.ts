/**
 * The search indexes of the build version a context serves (one per tileset that has one), opened on
 * first use and kept open until the version is closed; a failed open is tried again by the next request.
 */
import { HttpStatus } from '../../lib/http-status.ts';
import { SearchIndex } from '../../lib/search/query.ts';
import { asStoreError } from '../../lib/store-read.ts';
import { HttpError, type ServerContext } from '../context.ts';
import { localIndexFile } from './local-file.ts';

/** One tileset's opened index. */
export interface OpenedIndex {
  tileset: string;
  index: SearchIndex;
}

/** The indexes of one context's build. */
export class SearchIndexes {
  private opening: Promise<OpenedIndex[]> | undefined;
  private opened: OpenedIndex[] | undefined;
  private closed = false;

  constructor(private readonly ctx: Pick<ServerContext, 'store' | 'manifest' | 'options'>) {}

  /** The tilesets with an index. */
  get tilesets(): string[] {
    return Object.entries(this.ctx.manifest.tilesets).filter(([, t]) => t.search).map(([id]) => id);
  }

  /** The opened indexes (a 404 when the build has none; StoreErrors when one cannot be read). */
  get(): OpenedIndex[] | Promise<OpenedIndex[]> {
    if (this.opened) return this.opened;
    if (this.tilesets.length === 0) {
      throw new HttpError(HttpStatus.NotFound, 'this build has no search index (an OpenStreetMap tileset builds one unless its "search" is false: docs/search.md)');
    }
    this.opening ??= this.open().then(
      (all) => {
        if (this.closed) {
          for (const o of all) o.index.close();
          return all;
        }
        this.opened = all;
        return all;
      },
      (e: unknown) => {
        this.opening = undefined;
        throw e;
      },
    );
    return this.opening;
  }

  private async open(): Promise<OpenedIndex[]> {
    const out: OpenedIndex[] = [];
    try {
      for (const tileset of this.tilesets) {
        const entry = this.ctx.manifest.tilesets[tileset].search!;
        const path = await localIndexFile(this.ctx.store, entry, this.ctx.options.searchCache);
        try {
          out.push({ tileset, index: SearchIndex.open(path, entry.index) });
        } catch (e) {
          throw asStoreError(entry.index, e);
        }
      }
      return out;
    } catch (e) {
      for (const o of out) o.index.close();
      throw e;
    }
  }

  /** Close the indexes (the version is retired). */
  async close(): Promise<void> {
    this.closed = true;
    const all = this.opened ?? (await this.opening?.catch(() => undefined));
    this.opened = undefined;
    for (const o of all ?? []) o.index.close();
  }
}
