/**
 * Piscina task: render a batch of metatile views, in order, in this worker thread's browser.
 * Each worker thread owns one Chromium and one long-lived page (workers/render-browser.ts) from its
 * start (workers/render-worker.mjs) to its end, and renders many metatiles with it; a batch of
 * neighbouring metatiles reuses the vector tiles they share. Each view's pixels go to its own upload
 * URL while the next view is drawn; the task returns the server's receipt for each, so that the build
 * takes the pixels of exactly the views the task reports. A hang (timeout per view) or crash closes
 * the browser, and the next task starts a fresh one.
 */
import { threadId } from 'node:worker_threads';
import type { UploadReceipt } from '../lib/upload-receipt.ts';
import { BrowserRenderer, type PageUpload, type PageView } from './render-browser.ts';

/** What every render worker thread is started with (Piscina `workerData`). */
export interface RenderWorkerData {
  /** The render page the thread's browser opens first, loading the first style (`?style=…&ratio=…`). */
  pageUrl: string;
  /** URL of this module (render-task.ts, or its compiled copy in dist/) for render-worker.mjs to load. */
  task: string;
}

/** Input of one render task. */
export interface RenderTask {
  /** Prepared style URL on the render host. */
  styleUrl: string;
  pixelRatio: number;
  /** The views, rendered in order, each with where the page uploads its pixels. */
  views: (PageView & PageUpload)[];
  /** Give up (and restart the browser) after this long per view. */
  timeoutMs: number;
}

/** Input of the last task a thread runs: kill its browser (the build is over). */
export interface CloseTask {
  close: true;
}

/** A view rendered and uploaded: its canvas size, the server's receipt for its pixels and the page's milliseconds drawing it. */
export interface RenderedView {
  width: number;
  height: number;
  receipt: UploadReceipt;
  ms: number;
}

/** Output of a task: the views delivered (a prefix of the task's), and why the rest were not. */
export interface RenderResult {
  views: RenderedView[];
  /** Set when not every view was delivered, prefixed with its RenderFailure kind. */
  failure?: string;
  /** This worker thread, and when its browser's page was ready (absolute ms), for start-up figures. */
  thread: number;
  browserReadyAt?: number;
  /** Browsers this thread has started so far (restarts included). */
  browserStarts: number;
  /** Milliseconds the task spent loading its style into the page before drawing (0: already loaded). */
  styleMs: number;
}

/** Error kinds a task can fail with (prefix of `failure`). */
export enum RenderFailure {
  Timeout = 'timeout',
  Content = 'content',
  Browser = 'browser',
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${RenderFailure.Timeout}: no image after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The task function of a render worker thread started with `data`. The browser is started now (the
 * page loads while no task has come yet); a failure to start is reported by the first task, which
 * starts a fresh browser.
 */
export function createRenderTask(data: RenderWorkerData): (task: RenderTask | CloseTask) => Promise<RenderResult> {
  const renderer = new BrowserRenderer(data.pageUrl);
  renderer.open().catch(() => undefined);

  return async function renderTask(task: RenderTask | CloseTask): Promise<RenderResult> {
    let styleMs = 0;
    const result = (views: RenderedView[], failure?: string): RenderResult => ({ views, failure, thread: threadId, browserReadyAt: renderer.readyAt, browserStarts: renderer.starts, styleMs });
    if ('close' in task) {
      // Killed, not left to exit once the thread's end closes its pipe (a graceful exit: ~1 s).
      await renderer.close();
      return result([]);
    }
    try {
      // One page call for the batch; the time allowed is the per-view timeout for each view.
      const drawn = await withTimeout(renderer.renderViews(task.styleUrl, task.pixelRatio, task.views), task.timeoutMs * task.views.length);
      styleMs = drawn.styleMs;
      const uploads = await withTimeout(renderer.flush(), task.timeoutMs);
      const views: RenderedView[] = [];
      // Uploads are in render order, one per view drawn: the views delivered are those up to the first failed upload.
      for (const [i, view] of drawn.views.entries()) {
        const up = uploads[i];
        if (!up || !('receipt' in up)) return result(views, `${RenderFailure.Content}: ${up ? up.error : 'the page uploaded no image'}`);
        views.push({ ...view, receipt: up.receipt });
      }
      return result(views, drawn.failure === undefined ? undefined : `${RenderFailure.Content}: ${drawn.failure}`);
    } catch (e) {
      // Hang or crash: throw the browser away so the retry starts clean.
      await renderer.kill();
      const msg = e instanceof Error ? e.message : String(e);
      return result([], msg.startsWith(RenderFailure.Timeout) ? msg : `${RenderFailure.Browser}: ${msg.split('\n')[0]}`);
    }
  };
}
