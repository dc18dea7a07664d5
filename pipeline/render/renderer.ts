import type { Piscina } from 'piscina';
import { UserError } from '../../lib/errors.ts';
import { logLine } from '../progress.ts';
import { createPool } from '../../workers/pool.ts';
import type { RenderResult, RenderTask, WarmUpTask } from '../../workers/render-task.ts';
import type { AssetServer } from './asset-server.ts';
import { CHANNELS, fromDrawingBuffer, type RawImage } from './encode.ts';
import { canvasSize, metatileKey, metatileView, type Metatile } from './metatiles.ts';

/** The render task module run by the pool's worker threads. */
const TASK_MODULE = new URL('../../workers/render-task.ts', import.meta.url).href;
/** Extra time the main thread grants a task beyond its own timeout before aborting the thread. */
const ABORT_GRACE_MS = 15_000;

/** Settings of a MetatileRenderer. */
export interface MetatileRendererOptions {
  workers: number;
  margin: number;
  timeoutMs: number;
  retries: number;
}

/**
 * Renders metatiles with a Piscina pool of browsers: each worker thread owns one Chromium and one
 * page. A failed metatile (crash, hang, load error) is retried `retries` times on a restarted
 * browser; then the build fails naming the metatile. A request for something not available locally
 * fails at once, naming the URL.
 */
export class MetatileRenderer {
  private readonly pool: Piscina;

  constructor(
    private readonly server: AssetServer,
    private readonly opts: MetatileRendererOptions,
  ) {
    this.pool = createPool(TASK_MODULE, opts.workers);
  }

  /**
   * Start every worker's browser and load its page, all at once (one warm-up task per worker), so
   * that start-up overlaps the preparation of the styles instead of delaying the first metatile.
   * Resolves when every browser is ready; a failure here is left to the first render to report.
   */
  async warmUp(): Promise<void> {
    const task: WarmUpTask = { baseUrl: this.server.baseUrl, warmUp: true, timeoutMs: this.opts.timeoutMs };
    await Promise.allSettled(Array.from({ length: this.opts.workers }, () => this.pool.run(task)));
  }

  /** Render metatile `m` of the style at `styleUrl`; resolves the RGBA pixels of the whole canvas. */
  async render(styleUrl: string, label: string, m: Metatile, pixelRatio: number): Promise<RawImage> {
    const view = metatileView(m, this.opts.margin);
    const size = canvasSize(m, this.opts.margin, pixelRatio);
    const failures: string[] = [];
    for (let attempt = 0; attempt <= this.opts.retries; attempt++) {
      const upload = this.server.expectUpload(size.width * size.height * CHANNELS);
      const task: RenderTask = { baseUrl: this.server.baseUrl, styleUrl, pixelRatio, view: { ...view, upload: upload.url }, timeoutMs: this.opts.timeoutMs };
      try {
        const signal = AbortSignal.timeout(this.opts.timeoutMs + ABORT_GRACE_MS);
        const r = (await this.pool.run(task, { signal })) as RenderResult;
        const data = this.server.takeUpload(upload.id);
        // MapLibre does not report every failed request (e.g. glyphs); the asset server saw them all.
        this.checkMissing(label, m);
        if (r.width !== size.width || r.height !== size.height) throw new Error(`content: canvas is ${r.width}×${r.height}, expected ${size.width}×${size.height}`);
        if (!data || data.length !== r.width * r.height * CHANNELS) throw new Error(`content: the page uploaded ${data?.length ?? 0} bytes, expected ${r.width * r.height * CHANNELS}`);
        return fromDrawingBuffer(data, r.width, r.height);
      } catch (e) {
        this.server.takeUpload(upload.id);
        const msg = e instanceof Error ? e.message : String(e);
        failures.push(msg);
        this.checkMissing(label, m);
        if (attempt < this.opts.retries) logLine(`${label}: metatile ${metatileKey(m)} failed (${msg.split('\n')[0]}); retrying with a fresh browser (${attempt + 1}/${this.opts.retries})`);
      }
    }
    throw new UserError(
      `${label}: metatile ${metatileKey(m)} (tiles ${m.tiles.map((t) => `${t.z}/${t.x}/${t.y}`).join(' ')}) failed ${failures.length} times: ${failures[failures.length - 1]}`,
    );
  }

  /** Fail the build when the page asked the asset server for anything it does not have. */
  private checkMissing(label: string, m: Metatile): void {
    if (this.server.missing.size === 0) return;
    throw new UserError(`${label}: metatile ${metatileKey(m)}: the style requested resources that are not available locally: ${[...this.server.missing].join(', ')}`);
  }

  /** Close every worker's browser, then the pool. */
  async close(): Promise<void> {
    await this.pool.close();
    await this.pool.destroy();
  }
}
