import { asStoreError, isStoreError, type StoreError } from '../lib/store-read.ts';
import type { RangeSource, Store } from '../lib/storage.ts';

/** A corrupt file is opened again at most this often (it may be replaced in place by a rebuild). */
export const RETRY_CORRUPT_OPEN_MS = 5_000;

/** Anything opened over a RangeSource that must be closed. */
export interface Closable {
  close(): Promise<void>;
}

/**
 * A file of the store opened on first use and kept open (archives, the elevation index). Concurrent
 * first uses share one open. When opening fails, the source is closed (no handle is left behind) and
 * the error is a StoreError; the next use tries again, except that corrupt data is given
 * RETRY_CORRUPT_OPEN_MS before it is read again.
 */
export class OpenedFile<T extends Closable> {
  private pending?: Promise<T>;
  private value?: T;
  private failed?: { error: StoreError; until: number };

  constructor(
    private readonly store: Store,
    readonly path: string,
    private readonly openOn: (source: RangeSource) => Promise<T>,
  ) {}

  /** The opened file when its open has completed (a synchronous look-up for hot paths). */
  get ready(): T | undefined {
    return this.value;
  }

  /** The opened file, opening it on first use. Rejects with a StoreError. */
  get(): Promise<T> {
    if (this.pending) return this.pending;
    if (this.failed && Date.now() < this.failed.until) return Promise.reject(this.failed.error);
    const p = this.open();
    this.pending = p;
    p.then(
      (v) => {
        this.value = v;
        this.failed = undefined;
      },
      (error: StoreError) => {
        this.pending = undefined;
        if (error.kind === 'corrupt') this.failed = { error, until: Date.now() + RETRY_CORRUPT_OPEN_MS };
      },
    );
    return p;
  }

  private async open(): Promise<T> {
    let source: RangeSource;
    try {
      source = await this.store.openRange(this.path);
    } catch (e) {
      throw asStoreError(this.path, e);
    }
    try {
      return await this.openOn(source);
    } catch (e) {
      await source.close().catch(() => undefined);
      throw asStoreError(this.path, e);
    }
  }

  /** Close the file if it was opened (waits for an open in progress). */
  async close(): Promise<void> {
    const p = this.pending;
    this.pending = undefined;
    this.value = undefined;
    if (p) await (await p.catch(() => undefined))?.close();
  }
}
