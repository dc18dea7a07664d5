import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { killChromium, renderPageUrl, startChromium, type ChromiumHandle } from './chromium-process.ts';

/**
 * playwright-core, loaded with require: it is CommonJS (7 MB of bundles), and importing it as an ES
 * module through the tsx loader costs each worker thread's start-up more (measured in a worker with
 * tsx, 3 runs: 337-357 ms and 391-411 CPU-ms with require, 407-452 ms and 515-614 CPU-ms with import).
 */
const { chromium } = createRequire(import.meta.url)('playwright-core') as typeof import('playwright-core');

/** What the page is asked to draw: CSS size, centre and MapLibre zoom. */
export interface PageView {
  width: number;
  height: number;
  center: [number, number];
  zoom: number;
}

/** Where the page sends the pixels of a render: a POST URL of the asset server (AssetServer.expectUpload). */
export interface PageUpload {
  upload: string;
  /** Device pixels cut from every side of the canvas before the upload (the metatile's margin). */
  crop?: number;
}

/** A rendered view: size of the canvas in device pixels (its pixels went to the upload URL). */
export interface PageRender {
  width: number;
  height: number;
}

/** Thrown when the page reported errors (failed requests, unloaded sources): not worth a browser restart. */
export class RenderContentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RenderContentError';
  }
}

/** How often the page checks whether render.js has set `window.tilebake` (pageReady). */
const READY_POLL_MS = 5;

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

/** One Chromium browser with one long-lived page running workers/page/render.html. */
export class BrowserRenderer {
  private browser?: Browser;
  /** The browser process (started here, with `exited`, or adopted), killed by close(). */
  private handle?: ChromiumHandle & { exited?: Promise<void> };
  private page?: Page;
  private styleUrl?: string;
  private pixelRatio?: number;

  /** `profiles`: a createProfiles folder for the browsers this renderer starts (default: their own). */
  constructor(
    private readonly baseUrl: string,
    private readonly profiles?: string,
  ) {}

  /**
   * Use a browser another thread started on the render page (startChromium with renderPageUrl) for the
   * next open(), instead of starting one. This renderer kills it on close().
   */
  adopt(handle: ChromiumHandle): void {
    if (this.handle) throw new Error('adopt: this renderer already has a browser');
    this.handle = handle;
  }

  /** True when a browser is running (or adopted) for this renderer. */
  get hasBrowser(): boolean {
    return this.handle !== undefined;
  }

  /** Start the browser (or attach to the adopted one) and wait for the page (idempotent). */
  private async open(): Promise<Page> {
    if (this.page && this.browser?.isConnected()) return this.page;
    if (this.browser) await this.close();
    try {
      this.handle ??= await startChromium(renderPageUrl(this.baseUrl), { profiles: this.profiles });
      const browser = await chromium.connectOverCDP(this.handle.endpoint);
      this.browser = browser;
      const context = browser.contexts()[0];
      if (!context) throw new Error('Chromium has no default browser context');
      // The start page: opened by the browser itself, and normally there by the time we attach.
      const page = context.pages()[0] ?? (await context.waitForEvent('page'));
      page.on('crash', () => void this.close());
      await pageReady(page);
      this.page = page;
      this.styleUrl = undefined;
      return page;
    } catch (e) {
      await this.close();
      throw e;
    }
  }

  /** Start (or attach to) the browser and wait for the page with MapLibre, if not done yet. */
  async warmUp(): Promise<void> {
    await this.open();
  }

  /**
   * Render `views` of `styleUrl` at `pixelRatio`, in order, in one call to the page (each view's tiles
   * start loading while the previous view's pixels are read). The page POSTs each drawing buffer's
   * pixels (RGBA, bottom row first, premultiplied: see fromDrawingBuffer in
   * pipeline/render/encode.ts) to the view's `upload` URL in the background: `flush()` waits for the
   * uploads. Throws RenderContentError when the map reported problems (the views before the failed
   * one were rendered and uploaded).
   */
  async renderViews(styleUrl: string, pixelRatio: number, views: (PageView & PageUpload)[]): Promise<PageRender[]> {
    const page = await this.open();
    if (this.styleUrl !== styleUrl || this.pixelRatio !== pixelRatio) {
      const errors = await page.evaluate(
        ([s, r]) => (window as unknown as { tilebake: { init(s: string, r: number): Promise<string[]> } }).tilebake.init(s, r),
        [styleUrl, pixelRatio] as [string, number],
      );
      if (errors.length) throw new RenderContentError(`loading the style ${styleUrl}: ${errors.join('; ')}`);
      this.styleUrl = styleUrl;
      this.pixelRatio = pixelRatio;
    }
    const results = await page.evaluate(
      (v) => (window as unknown as { tilebake: { renderViews(v: (PageView & PageUpload)[]): Promise<{ width: number; height: number; errors: string[] }[]> } }).tilebake.renderViews(v),
      views,
    );
    const failed = results.find((r) => r.errors.length > 0);
    if (failed) throw new RenderContentError([...new Set(failed.errors)].join('; '));
    return results.map((r) => ({ width: r.width, height: r.height }));
  }

  /** Render one view (renderViews with one view). */
  async render(styleUrl: string, pixelRatio: number, view: PageView & PageUpload): Promise<PageRender> {
    return (await this.renderViews(styleUrl, pixelRatio, [view]))[0];
  }

  /** Wait until every image rendered so far has reached its upload URL; throws RenderContentError if one did not. */
  async flush(): Promise<void> {
    if (!this.page) return;
    const errors = await this.page.evaluate(() => (window as unknown as { tilebake: { flush(): Promise<string[]> } }).tilebake.flush());
    if (errors.length) throw new RenderContentError([...new Set(errors)].join('; '));
  }

  /** Close the browser (after a crash or hang, or at the end): disconnect and kill its processes. */
  async close(): Promise<void> {
    const b = this.browser;
    const h = this.handle;
    this.browser = undefined;
    this.handle = undefined;
    this.page = undefined;
    this.styleUrl = undefined;
    this.pixelRatio = undefined;
    if (h) killChromium(h.pid);
    if (b) await b.close().catch(() => undefined);
    await h?.exited;
  }
}
