import type { Browser, Page } from 'playwright-core';
import { packagePath, packageRequire } from '../lib/package-root.ts';
import type { UploadReceipt } from '../lib/upload-receipt.ts';
import { ChromiumStartTimeout, chromiumCommand, killChromium, watchChromium, type ChromiumProcess, type SpawnedChromium } from './chromium-process.ts';
import { spawnChromium } from './chromium-spawn.mjs';

/** The render page's folder (render.html and its modules), served by the render host. */
export const RENDER_PAGE_DIR = packagePath('workers', 'page/');

/**
 * playwright-core, loaded on first use (a browser's start), with require: it is CommonJS (7 MB of
 * bundles), and importing it as an ES module through the tsx loader costs each worker thread's
 * start-up more (measured in a worker with tsx, 3 runs: 337-357 ms and 391-411 CPU-ms with require,
 * 407-452 ms and 515-614 CPU-ms with import). Loaded while the thread's browser starts, not before.
 */
let playwright: typeof import('playwright-core') | undefined;
function playwrightChromium(): (typeof import('playwright-core'))['chromium'] {
  playwright ??= packageRequire('playwright-core') as typeof import('playwright-core');
  return playwright.chromium;
}

/** What the page is asked to draw: CSS size, centre and MapLibre zoom. */
export interface PageView {
  width: number;
  height: number;
  center: [number, number];
  zoom: number;
}

/** Where the page sends the pixels of a render: an upload URL of the render host. */
export interface PageUpload {
  upload: string;
  /** Device pixels cut from every side of the canvas before the upload (the metatile's margin). */
  crop?: number;
}

/** A rendered view: size of the canvas in device pixels (its pixels went to the upload URL), and its drawing time. */
export interface PageRender {
  width: number;
  height: number;
  /** Milliseconds the page took to draw and read it (render.js `render`). */
  ms: number;
}

/** What renderViews drew: the views rendered in order, and why it stopped early if it did. */
export interface PageRenders {
  views: PageRender[];
  /** The map's problems with the view after the last one rendered (failed requests, unloaded sources). */
  failure?: string;
  /** Milliseconds spent loading the style into the page first (0: it was loaded already). */
  styleMs: number;
}

/** The outcome of one upload (flush): the server's receipt, or why it failed. */
export type PageUploadResult = { receipt: UploadReceipt } | { error: string };

/** How often the page checks whether render.js has set `window.tilebake` (pageReady). */
const READY_POLL_MS = 5;
/** Browsers spawned for one launch when a start times out (ChromiumStartTimeout). */
const START_ATTEMPTS = 2;

/** The render page's API (render.js `window.tilebake`). */
interface RenderPageApi {
  init(styleUrl: string, pixelRatio: number): Promise<string[]>;
  renderViews(views: (PageView & PageUpload)[]): Promise<{ width: number; height: number; errors: string[]; ms: number }[]>;
  flush(): Promise<PageUploadResult[]>;
}

/**
 * Wait until the render page has set `window.tilebake` (ready). A plain evaluate that polls in the
 * page: page.waitForFunction first injects Playwright's own script into the page (measured: ~30 ms
 * against ~2 ms, when the page is already up), on the start-up path. Retried if the start page's
 * navigation replaces the context it ran in; the caller's timeout bounds the wait.
 */
async function pageReady(page: Page): Promise<void> {
  for (;;) {
    try {
      // A string: tsx would wrap a named function in a helper (__name) the page does not have.
      await page.evaluate(`new Promise((resolve) => (function check() { window.tilebake?.ready === true ? resolve() : setTimeout(check, ${READY_POLL_MS}); })())`);
      return;
    } catch (e) {
      if (!/Execution context was destroyed|navigat/i.test(e instanceof Error ? e.message : String(e))) throw e;
    }
  }
}

/** The render page's URL without the style it preloads (`?style=…`), for browsers started later. */
function plainPage(pageUrl: string): string {
  const u = new URL(pageUrl);
  u.search = '';
  return u.href;
}

/**
 * One Chromium browser with one long-lived page running workers/page/render.html, owned by the
 * thread that created this: it starts the browser, drives it and kills it (close, or its pipe
 * closing when the thread ends).
 */
export class BrowserRenderer {
  private browser?: Browser;
  private process?: ChromiumProcess;
  private page?: Page;
  private opening?: Promise<Page>;
  private styleUrl?: string;
  private pixelRatio?: number;
  /** When the current browser's page was ready (performance.timeOrigin + performance.now()), once it is. */
  readyAt?: number;
  /** Chromium processes started so far (a hung start's second one and a restart after a crash included). */
  starts = 0;

  /**
   * `pageUrl`: the render page for the first browser (with `?style=…&ratio=…` it loads that style at
   * once); later ones open it without the style. `profiles`: a createProfiles folder for the
   * browsers' profiles. `spawned`: the first browser, already spawned on `pageUrl` (the worker
   * thread does so before it loads TypeScript: workers/render-worker.mjs).
   */
  constructor(
    private readonly pageUrl: string,
    private readonly profiles: string,
    private spawned?: SpawnedChromium,
  ) {}

  /** Start the browser and wait for the page with MapLibre (idempotent while it runs). */
  open(): Promise<Page> {
    if (this.page && this.browser?.isConnected()) return Promise.resolve(this.page);
    this.opening ??= this.launch().finally(() => (this.opening = undefined));
    return this.opening;
  }

  private async launch(): Promise<Page> {
    if (this.browser || this.process) await this.kill();
    try {
      const spawn = () => spawnChromium(chromiumCommand(plainPage(this.pageUrl)), this.profiles);
      this.starts++;
      let started = watchChromium(this.spawned ?? spawn());
      this.spawned = undefined;
      // playwright-core loads (the first time) while the browser starts.
      const chromium = playwrightChromium();
      for (let attempt = 1; ; attempt++) {
        try {
          this.process = await started;
          break;
        } catch (e) {
          // Now and then Chromium hangs at start with nothing on stderr (seen twice in five full test
          // runs on a quiet machine): the hung one is killed and a second one started.
          if (!(e instanceof ChromiumStartTimeout) || attempt >= START_ATTEMPTS) throw e;
          this.starts++;
          started = watchChromium(spawn());
        }
      }
      const browser = await chromium.connectOverCDP(this.process.endpoint);
      this.browser = browser;
      const context = browser.contexts()[0];
      if (!context) throw new Error('Chromium has no default browser context');
      // The start page: opened by the browser itself, and normally there by the time we attach.
      const page = context.pages()[0] ?? (await context.waitForEvent('page'));
      page.on('crash', () => void this.kill());
      await pageReady(page);
      this.page = page;
      this.styleUrl = undefined;
      this.readyAt = performance.timeOrigin + performance.now();
      return page;
    } catch (e) {
      await this.kill();
      throw e;
    }
  }

  /**
   * Render `views` of `styleUrl` at `pixelRatio`, in order, in one call to the page (each view's tiles
   * start loading while the previous view's pixels are read). The page POSTs each drawing buffer's
   * pixels (RGBA, bottom row first, premultiplied: see fromDrawingBuffer in
   * lib/raster-encode.ts) to the view's `upload` URL in the background: `flush()` waits for the
   * uploads. Stops at the first view the map reported problems with (`failure`).
   */
  async renderViews(styleUrl: string, pixelRatio: number, views: (PageView & PageUpload)[]): Promise<PageRenders> {
    const page = await this.open();
    let styleMs = 0;
    if (this.styleUrl !== styleUrl || this.pixelRatio !== pixelRatio) {
      const t0 = performance.now();
      const errors = await page.evaluate(([s, r]) => (window as unknown as { tilebake: RenderPageApi }).tilebake.init(s, r), [styleUrl, pixelRatio] as [string, number]);
      styleMs = performance.now() - t0;
      if (errors.length) return { views: [], failure: `loading the style ${styleUrl}: ${[...new Set(errors)].join('; ')}`, styleMs };
      this.styleUrl = styleUrl;
      this.pixelRatio = pixelRatio;
    }
    const results = await page.evaluate((v) => (window as unknown as { tilebake: RenderPageApi }).tilebake.renderViews(v), views);
    const failed = results.find((r) => r.errors.length > 0);
    return {
      views: results.filter((r) => r.errors.length === 0).map((r) => ({ width: r.width, height: r.height, ms: r.ms })),
      failure: failed ? [...new Set(failed.errors)].join('; ') : undefined,
      styleMs,
    };
  }

  /** Wait until every image rendered since the last flush has reached its upload URL; their outcomes, in render order. */
  async flush(): Promise<PageUploadResult[]> {
    if (!this.page) return [];
    return this.page.evaluate(() => (window as unknown as { tilebake: RenderPageApi }).tilebake.flush());
  }

  /** Close the browser at the end: kill it, and one a start under way brings up. */
  async close(): Promise<void> {
    await this.kill();
    await this.opening?.catch(() => undefined);
    await this.kill();
  }

  /** Disconnect and kill the browser's processes now (a start under way then fails); resolves once they have exited. */
  async kill(): Promise<void> {
    const b = this.browser;
    const p = this.process;
    this.browser = undefined;
    this.process = undefined;
    this.page = undefined;
    this.styleUrl = undefined;
    this.pixelRatio = undefined;
    this.readyAt = undefined;
    if (p) killChromium(p.pid);
    if (b) await b.close().catch(() => undefined);
    await p?.exited;
  }
}
