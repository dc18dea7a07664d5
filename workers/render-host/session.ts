import type { UploadReceipt } from '../../lib/upload-receipt.ts';
import { HttpError } from '../../lib/http-error.ts';
import { HttpStatus } from '../../lib/http-status.ts';

export type { UploadReceipt } from '../../lib/upload-receipt.ts';

/** The pixels a render page uploaded, with the size it reported. */
export interface UploadedImage {
  body: Buffer;
  width: number;
  height: number;
}

/** A request of the render page that failed: the build fails naming it. */
export interface FailedRequest {
  /** The URL the page asked for (for a refused external URL, that URL). */
  url: string;
  status: number;
  error: string;
}

/**
 * Slots for the pixels of renders in flight. The build opens one slot per view it asks a page to
 * draw (`expect`), the page POSTs the pixels to the slot's URL (`receive`, answered with a receipt),
 * and the build takes them once the render task has returned the receipt (`take`). Uploads nobody
 * expects, a second upload to a slot and bodies over the slot's size are refused.
 */
export class PixelUploads {
  private readonly slots = new Map<string, { maxBytes: number; image?: UploadedImage; onArrive?: (image: UploadedImage) => void }>();
  private next = 0;

  /**
   * Open a slot for one upload of at most `maxBytes`; returns its id. `onArrive` hears of the upload as
   * it arrives (the build may start on the pixels; it still takes them by the task's receipt).
   */
  expect(maxBytes: number, onArrive?: (image: UploadedImage) => void): string {
    const id = String(++this.next);
    this.slots.set(id, { maxBytes, image: undefined, onArrive });
    return id;
  }

  /** The most bytes upload `id` may have; throws 404 when no upload `id` is expected (or it has arrived). */
  limit(id: string): number {
    const slot = this.slots.get(id);
    if (!slot || slot.image) throw new HttpError(HttpStatus.NotFound, `no upload ${id} is expected`);
    return slot.maxBytes;
  }

  /** Keep the body of upload `id`; throws 404 (not expected) or 413 (over its size). */
  receive(id: string, body: Buffer, width: number, height: number): UploadReceipt {
    const max = this.limit(id);
    if (body.length > max) throw new HttpError(HttpStatus.PayloadTooLarge, `upload ${id} is larger than ${max} bytes`);
    const slot = this.slots.get(id)!;
    slot.image = { body, width, height };
    slot.onArrive?.(slot.image);
    return { upload: id, bytes: body.length, width, height };
  }

  /** The image of upload `id` (undefined when none arrived); the slot is closed. */
  take(id: string): UploadedImage | undefined {
    const image = this.slots.get(id)?.image;
    this.slots.delete(id);
    return image;
  }

  /** Slots open (for tests: every slot is taken once its render is over). */
  get open(): number {
    return this.slots.size;
  }
}

/**
 * What the render host keeps for the build: the render page's folder, the
 * pixel upload slots, and the record of the page's failed requests (MapLibre does not report every
 * failed request, e.g. glyphs; the server sees them all).
 */
export class RenderSession {
  readonly uploads = new PixelUploads();
  private readonly failed = new Map<string, FailedRequest>();

  /** `pageDir`: the folder of the render page (render.html and its modules). */
  constructor(readonly pageDir: string) {}

  /** Record a failed request of the page (each URL once). */
  requestFailed(f: FailedRequest): void {
    if (!this.failed.has(f.url)) this.failed.set(f.url, f);
  }

  /** The failed requests recorded since the last call. */
  takeFailures(): FailedRequest[] {
    const out = [...this.failed.values()];
    this.failed.clear();
    return out;
  }
}
