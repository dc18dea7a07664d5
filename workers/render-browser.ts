import type { Page } from 'playwright-core';
import { packagePath } from '../lib/package-root.ts';
import type { UploadReceipt } from '../lib/upload-receipt.ts';
import { isStartTimeout, killChromium, launchChromium, type LaunchedChromium } from './chromium.ts';

/** The render page's folder (render.html and its modules), served by the render host. */
export const RENDER_PAGE_DIR = packagePath('workers', 'page/');

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
/** Browsers started for one launch when a start times out. */
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

/** The page's viewport in CSS pixels (the render page sizes its map itself; this only needs to exist). */
const VIEWPORT = { width: 1280, height: 1280 };

/**
 * One Chromium browser with one long-lived page running workers/page/render.html, owned by the
 * thread that created this: it starts the browser (workers/chromium.ts), drives it and closes it
 * (close, or its pipe closing when the thread ends).
 */
export class BrowserRenderer {
  private launched?: LaunchedChromium;
  private page?: Page;
  private opening?: Promise<Page>;
  private styleUrl?: string;
  private pixelRatio?: number;
  /** The page the next browser opens: the first loads the style of `?style=…` at once, later ones start plain. */
  private nextPage: string;
  /** When the current browser's page was ready (performance.timeOrigin + performance.now()), once it is. */
  readyAt?: number;
  /** Chromium processes started so far (a hung start's second one and a restart after a crash included). */
  starts = 0;

  /** `pageUrl`: the render page for the first browser (with `?style=…&ratio=…` it loads that style at once). */
  constructor(pageUrl: string) {
    this.nextPage = pageUrl;
  }

  /** Start the browser and wait for the page with MapLibre (idempotent while it runs). */
  open(): Promise<Page> {
    if (this.page && this.launched?.connected) return Promise.resolve(this.page);
    this.opening ??= this.launch().finally(() => (this.opening = undefined));
    return this.opening;
  }

  private async launch(): Promise<Page> {
    if (this.launched) await this.kill();
    const pageUrl = this.nextPage;
    this.nextPage = plainPage(pageUrl);
    try {
      for (let attempt = 1; ; attempt++) {
        this.starts++;
        try {
          this.launched = await launchChromium(VIEWPORT);
          break;
        } catch (e) {
          // Now and then Chromium hangs at start with nothing on stderr (seen twice in five full test
          // runs on a quiet machine): playwright-core kills the hung one at its timeout, and a second one is started.
          if (!isStartTimeout(e) || attempt >= START_ATTEMPTS) throw e;
        }
      }
      const page = this.launched.context.pages()[0] ?? (await this.launched.context.newPage());
      page.on('crash', () => void this.kill());
      await page.goto(pageUrl, { waitUntil: 'commit' });
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

  /** Close the browser at the end, and one a start under way brings up. */
  async close(): Promise<void> {
    await this.kill();
    await this.opening?.catch(() => undefined);
    await this.kill();
  }

  /** Forget the browser and end its processes now (a start under way then fails); resolves once they are gone. */
  async kill(): Promise<void> {
    const launched = this.launched;
    this.launched = undefined;
    this.page = undefined;
    this.styleUrl = undefined;
    this.pixelRatio = undefined;
    this.readyAt = undefined;
    // No graceful close: a hung or crashed browser would make it wait.
    if (launched) await killChromium(launched, false);
  }
}
