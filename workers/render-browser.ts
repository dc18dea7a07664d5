import { access, constants } from 'node:fs/promises';
import { chromium, type Browser, type Page } from 'playwright-core';
import { UserError } from '../lib/errors.ts';

/** Debian's Chromium; override with TILEBAKE_CHROMIUM. */
export const CHROMIUM_PATH = process.env.TILEBAKE_CHROMIUM || '/usr/lib/chromium/chromium';

/** Flags measured to work (and to be fast) for headless SwiftShader WebGL on a CPU-only machine. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--use-angle=swiftshader',
  '--enable-unsafe-swiftshader',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-background-timer-throttling',
  '--disable-renderer-backgrounding',
  '--disable-backgrounding-occluded-windows',
  // Nothing leaves the machine: every host but the local asset server fails to resolve.
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
];

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

/** Throw a UserError with the install command when Chromium is not installed. */
export async function assertChromium(path = CHROMIUM_PATH): Promise<void> {
  try {
    await access(path, constants.X_OK);
  } catch {
    throw new UserError(
      `Chromium not found at ${path} (needed to render styles). Install it with \`sudo apt-get install chromium\`, or set TILEBAKE_CHROMIUM to its path.`,
    );
  }
}

/** One Chromium browser with one long-lived page running workers/page/render.html. */
export class BrowserRenderer {
  private browser?: Browser;
  private page?: Page;
  private styleUrl?: string;
  private pixelRatio?: number;

  constructor(private readonly baseUrl: string) {}

  /** Launch the browser and load the page (idempotent). */
  private async open(): Promise<Page> {
    if (this.page && this.browser?.isConnected()) return this.page;
    await this.close();
    await assertChromium();
    this.browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
    const context = await this.browser.newContext({ viewport: { width: 1280, height: 1280 }, deviceScaleFactor: 1 });
    const page = await context.newPage();
    page.on('crash', () => void this.close());
    await page.goto(`${this.baseUrl}page/render.html`);
    await page.waitForFunction(() => (window as unknown as { tilebake?: { ready: boolean } }).tilebake?.ready === true);
    this.page = page;
    this.styleUrl = undefined;
    return page;
  }

  /** Launch the browser and load the page with MapLibre, if not done yet. */
  async warmUp(): Promise<void> {
    await this.open();
  }

  /**
   * Render `view` of `styleUrl` at `pixelRatio`; the page POSTs the drawing buffer's pixels (RGBA,
   * bottom row first, premultiplied: see fromDrawingBuffer in pipeline/render/encode.ts) to
   * `view.upload`, in the background: `flush()` waits for the uploads. Throws RenderContentError
   * when the map reported problems.
   */
  async render(styleUrl: string, pixelRatio: number, view: PageView & PageUpload): Promise<PageRender> {
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
    const r = await page.evaluate(
      (v) => (window as unknown as { tilebake: { render(v: PageView & PageUpload): Promise<{ width: number; height: number; errors: string[] }> } }).tilebake.render(v),
      view,
    );
    if (r.errors.length) throw new RenderContentError([...new Set(r.errors)].join('; '));
    return { width: r.width, height: r.height };
  }

  /** Wait until every image rendered so far has reached its upload URL; throws RenderContentError if one did not. */
  async flush(): Promise<void> {
    if (!this.page) return;
    const errors = await this.page.evaluate(() => (window as unknown as { tilebake: { flush(): Promise<string[]> } }).tilebake.flush());
    if (errors.length) throw new RenderContentError([...new Set(errors)].join('; '));
  }

  /** Close the browser (after a crash or hang, or at the end). */
  async close(): Promise<void> {
    const b = this.browser;
    this.browser = undefined;
    this.page = undefined;
    this.styleUrl = undefined;
    this.pixelRatio = undefined;
    if (b) await b.close().catch(() => undefined);
  }
}
