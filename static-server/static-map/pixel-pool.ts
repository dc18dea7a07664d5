/**
 * Reused pixel buffers for composing images. Each image allocates megabytes of short-lived buffers,
 * and V8 answers that much fresh ArrayBuffer memory with a full mark-compact ("external memory
 * pressure"): with 4 images in flight that was about one per image, ~20 % of an image's CPU
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
   * @param maxWaste a free buffer is lent only if its capacity is at most `bytes · (1 + maxWaste)` rounded
   *   up to the granule (for buffers that are kept a while, such as cached images; default: any size).
   */
  constructor(
    private readonly maxFreeBytes: number,
    private readonly granule = GRANULE,
    private readonly maxWaste = Infinity,
  ) {}

  /** A buffer of `bytes` bytes with undefined contents (fill what is read). */
  acquire(bytes: number): Buffer {
    const most = this.capacityFor(bytes * (1 + this.maxWaste));
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const c = this.free[i].length;
      if (c >= bytes && c <= most && (best < 0 || c < this.free[best].length)) best = i;
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
 * The process's pool: 64 MB idle at most, enough for the regions and planes of the images in flight
 * at the default composition concurrency (a 1280×960 image downsized from 1.5× its size: ~10 MB).
 */
export const pixelPool = new PixelPool(64 * 1024 * 1024);

/**
 * The process's pool of encoded static images (static-map/image-cache.ts hands them back): 32 MB idle at
 * most, capacities in 16 KB steps, and a buffer lent only to an image of at least 4/5 of its capacity
 * (a cached image holds its whole buffer: a small one must not keep a large one).
 */
export const encodedPool = new PixelPool(32 * 1024 * 1024, 16 * 1024, 0.25);
