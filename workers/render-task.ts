/**
 * Piscina task: render a batch of metatile views, in order, in this worker thread's browser.
 * Each worker thread owns one Chromium and one long-lived page (workers/render-browser.ts) and
 * renders many metatiles with it; a batch of neighbouring metatiles reuses the vector tiles they
 * share. Each view's pixels go to its own upload URL while the next view is drawn; the task ends
 * when all have arrived. A hang (timeout per view) or crash closes the browser, and the next task
 * starts a fresh one.
 */
import type { ChromiumHandle } from './chromium-process.ts';
import { BrowserRenderer, RenderContentError, type PageRender, type PageUpload, type PageView } from './render-browser.ts';

/** What every task carries: where the build's asset server and profiles folder are. */
interface BrowserTask {
  /** `http://127.0.0.1:<port>/` of the asset server. */
  baseUrl: string;
  /** The build's createProfiles folder, for a browser this thread starts itself. */
  profiles: string;
  /** Give up (and restart the browser) after this long per view, or on the page at warm-up. */
  timeoutMs: number;
}

/**
 * Input of a warm-up task: attach to `browser` (started by the main thread on the render page) or
 * start this thread's browser, and wait for the page (no render).
 */
export interface WarmUpTask extends BrowserTask {
  warmUp: true;
  browser?: ChromiumHandle;
}

/** Output of a warm-up task: whether the thread took `browser` (false: it already had one). */
export interface WarmUpResult {
  adopted: boolean;
}

/** Input of one render task. */
export interface RenderTask extends BrowserTask {
  /** Prepared style URL on the asset server. */
  styleUrl: string;
  pixelRatio: number;
  /** The views, rendered in order, each with where the page uploads its pixels. */
  views: (PageView & PageUpload)[];
}

/** Output: the canvas size of each view; the page uploaded its pixels to the view's `upload`. */
export type RenderResult = PageRender[];

/** Error kinds a task can fail with (`name` survives the thread boundary in the message prefix). */
export enum RenderFailure {
  Timeout = 'timeout',
  Content = 'content',
  Browser = 'browser',
}

let renderer: BrowserRenderer | undefined;

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${RenderFailure.Timeout}: no image after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Render a batch of views (RenderTask), or only start the browser (WarmUpTask). */
export default async function renderTask(task: RenderTask | WarmUpTask): Promise<RenderResult | WarmUpResult> {
  renderer ??= new BrowserRenderer(task.baseUrl, task.profiles);
  const r = renderer;
  try {
    if ('warmUp' in task) {
      const adopted = task.browser !== undefined && !r.hasBrowser;
      if (adopted) r.adopt(task.browser!);
      await withTimeout(r.warmUp(), task.timeoutMs);
      return { adopted };
    }
    // One page call for the batch; the time allowed is the per-view timeout for each view.
    const out = await withTimeout(r.renderViews(task.styleUrl, task.pixelRatio, task.views), task.timeoutMs * task.views.length);
    await withTimeout(r.flush(), task.timeoutMs);
    return out;
  } catch (e) {
    if (e instanceof RenderContentError) throw new Error(`${RenderFailure.Content}: ${e.message}`);
    // Hang or crash: throw the browser away so the retry starts clean.
    await r.close();
    const msg = e instanceof Error ? e.message : String(e);
    throw new Error(msg.startsWith(RenderFailure.Timeout) ? msg : `${RenderFailure.Browser}: ${msg.split('\n')[0]}`);
  }
}
