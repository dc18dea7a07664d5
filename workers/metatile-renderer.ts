/**
 * Metatiles to pixels with a Piscina pool of browsers: the build bakes with it (pipeline/render/stage.ts),
 * `serve` renders above the baked zooms with it (static-server/overzoom/render.ts), both with a render host (render-host/server.ts).
 */
import type { Piscina } from 'piscina';
import { UserError } from '../lib/errors.ts';
import { moduleUrl } from '../lib/package-root.ts';
import { canvasSize, metatileKey, metatileView, type Metatile } from '../lib/metatiles.ts';
import { CHANNELS, fromDrawingBuffer, type RawImage } from '../lib/raster-encode.ts';
import { RENDER_PAGE_PATH, uploadUrl } from '../lib/upload-receipt.ts';
import { createPool } from './pool.ts';
import type { RenderHost } from './render-host/server.ts';
import type { CloseTask, RenderResult, RenderTask, RenderWorkerData } from './render-task.ts';

/** The render pool's worker module: plain JavaScript that starts the thread's browser first, then loads the task module. */
const WORKER_MODULE = moduleUrl('workers/render-worker.mjs');
/** The task module the worker module loads: render-task.ts, or its compiled copy. */
const TASK_MODULE = moduleUrl('workers/render-task.ts');
/** Extra time the main thread grants a task beyond its own timeout before aborting the thread. */
const ABORT_GRACE_MS = 15_000;
/** How long a thread may take to kill its browser at the end before the thread is ended anyway. */
const CLOSE_TIMEOUT_MS = 10_000;
const MS_PER_S = 1000;

/** Settings of a MetatileRenderer. */
export interface MetatileRendererOptions {
  workers: number;
  margin: number;
  timeoutMs: number;
  retries: number;
  /** Where retries are reported (default: nowhere). */
  log?: (line: string) => void;
}

/** Where a batch's time went in its browser: loading the style into the page, and drawing each metatile delivered. */
export interface BatchTimes {
  styleSeconds: number;
  drawn: { metatile: Metatile; seconds: number }[];
}

/** The style the browsers open the render page with: they start loading it at once. */
export interface FirstStyle {
  styleUrl: string;
  pixelRatio: number;
}

/** URL of the render page on `server`, loading `first` as soon as it opens. */
function renderPageUrl(server: RenderHost, first: FirstStyle): string {
  const url = new URL(RENDER_PAGE_PATH, server.url);
  url.searchParams.set('style', first.styleUrl);
  url.searchParams.set('ratio', String(first.pixelRatio));
  return url.href;
}

/**
 * Renders metatiles with a Piscina pool of browsers. Each worker thread starts its own Chromium as
 * soon as the thread starts (on the render page of `server`, loading the first style), drives it and
 * kills it. A task renders a batch of metatiles and returns the upload receipt of each one it
 * delivered; their pixels are taken from the server's upload slots by receipt. A metatile not
 * delivered (crash, hang, load error) is retried `retries` times on a restarted browser; then the
 * build fails naming the metatile. A request of the page the server could not answer fails the build
 * at once, naming the URL.
 */
export class MetatileRenderer {
  /** When each thread's browser was first up (absolute ms), by thread id. */
  private readonly readyAt = new Map<number, number>();
  /** Browsers each thread has started so far (its last result's count), by thread id. */
  private readonly starts = new Map<number, number>();

  private constructor(
    private readonly server: RenderHost,
    private readonly pool: Piscina,
    private readonly opts: MetatileRendererOptions,
  ) {}

  /** Start the pool: up to `opts.workers` threads, started as batches come, each starting its browser on `server`'s render page with `first`. */
  static async start(server: RenderHost, first: FirstStyle, opts: MetatileRendererOptions): Promise<MetatileRenderer> {
    const workerData: RenderWorkerData = { pageUrl: renderPageUrl(server, first), task: TASK_MODULE };
    // Lazy: a thread (and its browser) starts when a task needs it; a job of fewer batches than workers starts fewer browsers.
    const pool = createPool(WORKER_MODULE, opts.workers, { workerData, background: true, lazy: true });
    return new MetatileRenderer(server, pool, opts);
  }

  /** Threads (browsers) the pool may start. */
  get workers(): number {
    return this.opts.workers;
  }

  /** Browsers started by the threads that have rendered (restarts after a hang or crash included). */
  get browserStarts(): number {
    return [...this.starts.values()].reduce((a, b) => a + b, 0);
  }

  /** When the browsers of every thread that has rendered were up (absolute ms), or undefined before any result. */
  get browsersReadyAt(): number | undefined {
    return this.readyAt.size > 0 ? Math.max(...this.readyAt.values()) : undefined;
  }

  /**
   * Render metatiles `metas` of the style at `styleUrl` in one worker, in order (neighbours share the
   * page's vector tiles), and hand each metatile's canvas to `onImage` as its upload arrives, with
   * `delivered`, which resolves once the task's result says whether that upload is the metatile's
   * (true: keep it; false: drop it, the metatile is retried or the build fails). Metatiles a failed
   * attempt did not deliver are retried on a fresh browser; a metatile that fails `retries + 1` times
   * fails the build, named. Resolves once every metatile is delivered, with `encoded`, which resolves
   * once every `onImage` has: the caller may ask for the next batch while these are encoded; and
   * `times`, the page's time loading the style and drawing each metatile (for the build's log).
   */
  async renderBatch(styleUrl: string, label: string, metas: Metatile[], pixelRatio: number, onImage: (m: Metatile, image: RawImage, delivered: Promise<boolean>) => Promise<void>): Promise<{ encoded: Promise<void>; times: BatchTimes }> {
    const uploads = this.server.session.uploads;
    const handling: Promise<void>[] = [];
    /** Uploads already handed to `onImage` as they arrived. */
    const started = new Set<string>();
    let handlingError: unknown;
    const failures: string[] = [];
    let pending = metas;
    const times: BatchTimes = { styleSeconds: 0, drawn: [] };
    for (let attempt = 0; attempt <= this.opts.retries && pending.length > 0; attempt++) {
      // The page uploads the metatile's tiles only: the margin is cropped before the pixels are read.
      const slots = pending.map((m) => {
        const size = canvasSize(m, 0, pixelRatio);
        const bytes = size.width * size.height * CHANNELS;
        let confirm: (ok: boolean) => void = () => undefined;
        const delivered = new Promise<boolean>((res) => (confirm = res));
        // Pixels of the expected size are handed on as they arrive, so that converting and encoding
        // them overlaps the rest of the task; what is kept is decided by the task's receipts below.
        const id = uploads.expect(bytes, (image) => {
          if (image.width !== size.width || image.height !== size.height || image.body.length !== bytes) return;
          started.add(id);
          // After the upload's receipt is sent: the page is not kept waiting on the conversion.
          const next = new Promise<void>((res) => setImmediate(res));
          handling.push(next.then(() => onImage(m, fromDrawingBuffer(image.body, size.width, size.height), delivered)).catch((e) => void (handlingError ??= e)));
        });
        return { m, size, bytes, id, confirm };
      });
      const task: RenderTask = {
        styleUrl,
        pixelRatio,
        views: slots.map((s) => ({ ...metatileView(s.m, this.opts.margin), upload: uploadUrl(this.server.url, s.id), crop: this.opts.margin * pixelRatio })),
        timeoutMs: this.opts.timeoutMs,
      };
      let result: RenderResult | undefined;
      let error: string | undefined;
      try {
        const signal = AbortSignal.timeout(this.opts.timeoutMs * pending.length + ABORT_GRACE_MS);
        result = (await this.pool.run(task, { signal })) as RenderResult;
      } catch (e) {
        error = e instanceof Error ? e.message : String(e);
      }
      // Every slot is closed here: the pixels of the views the result names, the others dropped.
      const images = slots.map((s) => uploads.take(s.id));
      // MapLibre does not report every failed request (e.g. glyphs); the server saw them all.
      this.checkFailedRequests(label, pending[0]);
      if (result?.browserReadyAt !== undefined && !this.readyAt.has(result.thread)) this.readyAt.set(result.thread, result.browserReadyAt);
      if (result) this.starts.set(result.thread, Math.max(result.browserStarts, this.starts.get(result.thread) ?? 0));
      times.styleSeconds += (result?.styleMs ?? 0) / MS_PER_S;
      const delivered = new Set<number>();
      for (const [i, view] of (result?.views ?? []).entries()) {
        const s = slots[i];
        const image = images[i];
        if (!s || !image || view.receipt.upload !== s.id) break;
        if (image.width !== s.size.width || image.height !== s.size.height || image.body.length !== s.bytes) {
          error = `the page uploaded a ${image.width}×${image.height} image of ${image.body.length} bytes, expected ${s.size.width}×${s.size.height} (${s.bytes} bytes)`;
          break;
        }
        delivered.add(i);
        times.drawn.push({ metatile: s.m, seconds: view.ms / MS_PER_S });
        s.confirm(true);
        if (!started.has(s.id)) handling.push(onImage(s.m, fromDrawingBuffer(image.body, s.size.width, s.size.height), Promise.resolve(true)).catch((e) => void (handlingError ??= e)));
      }
      for (const s of slots) s.confirm(false);
      const failed = pending.filter((_, i) => !delivered.has(i));
      if (failed.length > 0) {
        // The batch renders in order: the first metatile not delivered is the one that failed.
        const msg = error ?? result?.failure ?? 'the page uploaded no image';
        failures.push(msg);
        if (attempt < this.opts.retries) this.opts.log?.(`${label}: metatile ${metatileKey(failed[0])} failed (${msg.split('\n')[0]}); retrying with a fresh browser (${attempt + 1}/${this.opts.retries})`);
      }
      pending = failed;
    }
    const encoded = Promise.all(handling).then(() => {
      if (handlingError !== undefined) throw handlingError;
    });
    if (pending.length > 0) {
      await encoded.catch(() => undefined);
      const m = pending[0];
      throw new UserError(`${label}: metatile ${metatileKey(m)} (tiles ${m.tiles.map((t) => `${t.z}/${t.x}/${t.y}`).join(' ')}) failed ${failures.length} times: ${failures[failures.length - 1]}`);
    }
    // Awaited by the caller later: not an unhandled rejection meanwhile.
    encoded.catch(() => undefined);
    return { encoded, times };
  }

  /** Fail the build when the page asked the server for anything it could not answer. */
  private checkFailedRequests(label: string, m: Metatile): void {
    const failed = this.server.session.takeFailures();
    if (failed.length === 0) return;
    throw new UserError(`${label}: metatile ${metatileKey(m)}: the style requested resources that are not available locally: ${failed.map((f) => `${f.url} (HTTP ${f.status}: ${f.error})`).join(', ')}`);
  }

  /**
   * Stop the pool: each thread kills its browser (a close task per thread: all are idle once every
   * batch is over, so each takes one), then the threads end; a browser left running exits when its
   * thread's pipe closes.
   */
  async close(): Promise<void> {
    const close: CloseTask = { close: true };
    // One per thread started (threads never started have no browser; a close task must not start one).
    await Promise.allSettled(Array.from({ length: this.pool.threads.length }, () => this.pool.run(close, { signal: AbortSignal.timeout(CLOSE_TIMEOUT_MS) })));
    await this.pool.close();
    await this.pool.destroy();
  }
}
