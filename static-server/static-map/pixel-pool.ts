/**
 * Reused buffers for the regions static images are composed from (compose.ts). Each image needs
 * megabytes of short-lived pixels, and V8 answers that much fresh ArrayBuffer memory with full
 * mark-compacts ("external memory pressure"): without the pool one every ~3.5 images of the bench
 * (docs/static-map-speed.md). Buffers handed back with `release` are lent out again instead.
 * A buffer never released is simply garbage-collected; releasing one the pool did not lend, or
 * twice, does nothing.
 */

/** Capacities of pixel buffers are rounded up to this (so nearby sizes share buffers). */
const GRANULE = 256 * 1024;

export class PixelPool {
  private readonly free: Buffer[] = [];
  /** Buffers lent out, by the view handed out, to their full-capacity buffer. */
  private readonly lent = new WeakMap<Buffer, Buffer>();
  private freeBytes = 0;

  /**
   * @param maxFreeBytes most bytes kept while not lent out.
   * @param granule capacities are rounded up to a multiple of this.
   */
  constructor(
    private readonly maxFreeBytes: number,
    private readonly granule = GRANULE,
  ) {}

  /** A buffer of `bytes` bytes with undefined contents (fill what is read). */
  acquire(bytes: number): Buffer {
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const c = this.free[i].length;
      if (c >= bytes && (best < 0 || c < this.free[best].length)) best = i;
    }
    let whole: Buffer;
    if (best >= 0) {
      whole = this.free[best];
      this.free.splice(best, 1);
      this.freeBytes -= whole.length;
    } else {
      whole = Buffer.allocUnsafeSlow(this.capacityFor(bytes));
    }
    const view = whole.subarray(0, bytes);
    this.lent.set(view, whole);
    return view;
  }

  /** `bytes` rounded up to the granule (at least one). */
  private capacityFor(bytes: number): number {
    return Math.max(1, Math.ceil(bytes / this.granule)) * this.granule;
  }

  /** Hand back a buffer from `acquire` once nothing reads it any more (null and foreign buffers are ignored). */
  release(buf: Buffer | null | undefined): void {
    const whole = buf && this.lent.get(buf);
    if (!whole) return;
    this.lent.delete(buf);
    this.free.push(whole);
    this.freeBytes += whole.length;
    // Over the bound: drop the oldest (least recently returned) buffers.
    while (this.freeBytes > this.maxFreeBytes && this.free.length > 0) this.freeBytes -= this.free.shift()!.length;
  }

  /** Bytes kept for reuse (for tests). */
  get idleBytes(): number {
    return this.freeBytes;
  }
}

/**
 * The process's pool: 64 MB idle at most, enough for the regions of the images in flight at the
 * default composition concurrency (a 1280×960 image downsized from 1.5× its size: ~11 MB of RGBA).
 */
export const pixelPool = new PixelPool(64 * 1024 * 1024);
