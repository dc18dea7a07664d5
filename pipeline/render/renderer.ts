import type { Piscina } from 'piscina';
import { UserError } from '../../lib/errors.ts';
import { logLine } from '../progress.ts';
import { createPool } from '../../workers/pool.ts';
import { createProfiles, killChromium, removeProfiles, renderPageUrl, startChromium, type ChromiumProcess } from '../../workers/chromium-process.ts';
import type { RenderTask, WarmUpResult, WarmUpTask } from '../../workers/render-task.ts';
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
  /** Resolves once warmUp has queued its tasks: renders queue behind them, so workers adopt the browsers. */
  private warmUpQueued: Promise<void> = Promise.resolve();
  /** Browsers this thread started for the workers (warmUp); all are killed by close(). */
  private readonly started: ChromiumProcess[] = [];
  /** The folder every browser of this renderer keeps its profile in; removed by close(). */
  private readonly profiles: Promise<string>;

  constructor(
    private readonly server: AssetServer,
    private readonly opts: MetatileRendererOptions,
  ) {
    this.pool = createPool(TASK_MODULE, opts.workers);
    this.profiles = createProfiles();
    // Reported where it is awaited (warmUp, renderBatch), not as an unhandled rejection.
    this.profiles.catch(() => undefined);
  }

  /**
   * Start one browser per worker from this thread, opened on the render page loading the first style
   * (`first`), while the worker threads are still loading playwright-core; each worker then attaches
   * to one (a warm-up task). Start-up then costs the slower of the two, not their sum, and the first
   * render finds MapLibre and the style loaded. Resolves when every worker is ready; a failure here
   * is left to the first render to report (a worker without a browser starts its own).
   */
  async warmUp(first: { styleUrl: string; pixelRatio: number }): Promise<void> {
    const url = renderPageUrl(this.server.baseUrl, first);
    let submitted!: () => void;
    this.warmUpQueued = new Promise<void>((resolve) => (submitted = resolve));
    // A folder that could not be made fails the first render, which awaits it too.
    const profiles = await this.profiles.catch(() => undefined);
    if (!profiles) {
      submitted();
      return;
    }
    const browsers = await Promise.allSettled(Array.from({ length: this.opts.workers }, () => startChromium(url, { profiles })));
    const tasks: Promise<unknown>[] = [];
    for (const b of browsers) {
      if (b.status === 'rejected') continue;
      const browser = b.value;
      this.started.push(browser);
      const task: WarmUpTask = { baseUrl: this.server.baseUrl, profiles, warmUp: true, timeoutMs: this.opts.timeoutMs, browser: { pid: browser.pid, endpoint: browser.endpoint } };
      tasks.push(
        this.pool.run(task).then((result: WarmUpResult) => {
          // A worker that already had a browser (it ran two warm-ups) leaves this one unused.
          if (!result.adopted) killChromium(browser.pid);
        }),
      );
    }
    submitted();
    await Promise.allSettled(tasks);
  }

  /**
   * Render metatiles `metas` of the style at `styleUrl` in one worker, in order (neighbours share the
   * page's vector tiles), calling `onImage` with each metatile's canvas as soon as its pixels arrive.
   * Metatiles a failed attempt did not deliver are retried on a fresh browser; resolves when every
   * `onImage` has resolved. A metatile that fails `retries + 1` times fails the build, named.
   */
  async renderBatch(styleUrl: string, label: string, metas: Metatile[], pixelRatio: number, onImage: (m: Metatile, image: RawImage) => Promise<void>): Promise<void> {
    const profiles = await this.profiles;
    const delivered = new Set<Metatile>();
    const handling: Promise<void>[] = [];
    let handlingError: unknown;
    const failures: string[] = [];
    let pending = metas;
    for (let attempt = 0; attempt <= this.opts.retries && pending.length > 0; attempt++) {
      let open = true;
      let wrong: string | undefined;
      const uploads = pending.map((m) => {
        // The page uploads the metatile's tiles only: the margin is cropped before the pixels are read.
        const size = canvasSize(m, 0, pixelRatio);
        const bytes = size.width * size.height * CHANNELS;
        return this.server.expectUpload(bytes, (up) => {
          if (!open) return;
          if (up.width !== size.width || up.height !== size.height || up.body.length !== bytes) {
            wrong ??= `the page uploaded a ${up.width}×${up.height} image of ${up.body.length} bytes, expected ${size.width}×${size.height} (${bytes} bytes)`;
            return;
          }
          delivered.add(m);
          handling.push(onImage(m, fromDrawingBuffer(up.body, size.width, size.height)).catch((e) => void (handlingError ??= e)));
        });
      });
      const task: RenderTask = {
        baseUrl: this.server.baseUrl,
        profiles,
        styleUrl,
        pixelRatio,
        views: pending.map((m, i) => ({ ...metatileView(m, this.opts.margin), upload: uploads[i].url, crop: this.opts.margin * pixelRatio })),
        timeoutMs: this.opts.timeoutMs,
      };
      let error: string | undefined;
      try {
        await this.warmUpQueued;
        const signal = AbortSignal.timeout(this.opts.timeoutMs * pending.length + ABORT_GRACE_MS);
        await this.pool.run(task, { signal });
        error = wrong;
      } catch (e) {
        error = e instanceof Error ? e.message : String(e);
      } finally {
        open = false;
        for (const u of uploads) this.server.forgetUpload(u.id);
      }
      // MapLibre does not report every failed request (e.g. glyphs); the asset server saw them all.
      this.checkMissing(label, pending[0]);
      const failed = pending.filter((m) => !delivered.has(m));
      if (failed.length > 0) {
        const m = failed[0];
        // The batch renders in order: the first metatile not delivered is the one that failed.
        const msg = error ?? 'the page uploaded no image';
        failures.push(msg);
        if (attempt < this.opts.retries) logLine(`${label}: metatile ${metatileKey(m)} failed (${msg.split('\n')[0]}); retrying with a fresh browser (${attempt + 1}/${this.opts.retries})`);
      }
      pending = failed;
    }
    await Promise.all(handling);
    if (handlingError !== undefined) throw handlingError;
    if (pending.length > 0) {
      const m = pending[0];
      throw new UserError(`${label}: metatile ${metatileKey(m)} (tiles ${m.tiles.map((t) => `${t.z}/${t.x}/${t.y}`).join(' ')}) failed ${failures.length} times: ${failures[failures.length - 1]}`);
    }
  }

  /** Fail the build when the page asked the asset server for anything it does not have. */
  private checkMissing(label: string, m: Metatile): void {
    if (this.server.missing.size === 0) return;
    throw new UserError(`${label}: metatile ${metatileKey(m)}: the style requested resources that are not available locally: ${[...this.server.missing].join(', ')}`);
  }

  /**
   * Stop the pool, then every browser (a worker's own ones end with its thread: their pipe closes),
   * then remove the profiles folder once no browser uses it.
   */
  async close(): Promise<void> {
    await this.pool.close();
    await this.pool.destroy();
    // Only those still running: a pid that has exited may already be another process's.
    for (const b of this.started) if (b.running) killChromium(b.pid);
    await Promise.all(this.started.map((b) => b.exited));
    const profiles = await this.profiles.catch(() => undefined);
    if (profiles) await removeProfiles(profiles);
  }
}
