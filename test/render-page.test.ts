import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readManifestOrEmpty, type Manifest } from '../lib/manifest.ts';
import { LocalStore } from '../lib/storage.ts';
import { parseConfig } from '../pipeline/config/index.ts';
import { enumerateMetatiles, metatileView } from '../lib/metatiles.ts';
import { prepareStyle } from '../pipeline/render/style.ts';
import { runVectorStage } from '../pipeline/vector/stage.ts';
import { startRenderHost, type RenderHost } from '../workers/render-host/server.ts';
import { RENDER_PAGE_PATH, uploadUrl } from '../lib/upload-receipt.ts';
import { BrowserRenderer, RENDER_PAGE_DIR, type PageView } from '../workers/render-browser.ts';

const ROOT = resolve(import.meta.dirname, '..');
const FONTS = join(ROOT, 'data/sample/fonts');

describe.sequential('render page (one long-lived page, many renders)', () => {
  let out: string;
  let server: RenderHost;
  let renderer: BrowserRenderer;
  let styleUrl: string;
  let view: ReturnType<typeof metatileView>;

  beforeAll(async () => {
    process.env.TILEBAKE_QUIET = '1';
    out = await mkdtemp(join(tmpdir(), 'tilebake-page-'));
    const config = parseConfig(
      {
        out,
        tilesets: { openmaptiles: join(ROOT, 'data/sample/monaco_omt.mbtiles') },
        styles: { 'osm-bright': { style: join(ROOT, 'data/sample/styles/osm-bright/style.json'), minzoom: 14, maxzoom: 14 } },
        fonts: FONTS,
      },
      join(out, 'config.json'),
    );
    await runVectorStage(config, out);
    await cp(FONTS, join(out, 'fonts'), { recursive: true });
    const built = await readManifestOrEmpty(out);
    const tileset = built.tilesets.openmaptiles;
    await prepareStyle('osm-bright', config.styles['osm-bright'].style, out, { tilesets: built.tilesets, defaultTileset: 'openmaptiles', fonts: FONTS, scales: [1, 2] });
    const manifest: Manifest = {
      ...built,
      fonts: 'fonts',
      styles: {
        'osm-bright': { style: 'styles/osm-bright/style.json', sprite: 'styles/osm-bright/sprite', minzoom: 14, maxzoom: 14, bounds: tileset.bounds, center: tileset.center, archives: {} },
      },
    };
    server = await startRenderHost({ store: new LocalStore(out), manifest, pageDir: RENDER_PAGE_DIR, cacheMb: 64 });
    styleUrl = `${server.url}/styles/osm-bright/style.json`;
    renderer = new BrowserRenderer(`${server.url}${RENDER_PAGE_PATH}`);
    const [first] = enumerateMetatiles(tileset.bounds, 14, 14, 2);
    view = metatileView(first, 64);
  });

  afterAll(async () => {
    await renderer?.close();
    await server?.close();
    if (out) await rm(out, { recursive: true, force: true });
  });

  /** Render `views` at `ratio` in one batch; resolves each one's canvas size and the pixels the server received, by receipt. */
  async function renderAll(views: PageView[], ratio: number) {
    const uploads = server.session.uploads;
    const ids = views.map((v) => uploads.expect(v.width * v.height * ratio * ratio * 4));
    const drawn = await renderer.renderViews(styleUrl, ratio, views.map((v, i) => ({ ...v, upload: uploadUrl(server.url, ids[i]) })));
    expect(drawn.failure).toBeUndefined();
    const results = await renderer.flush();
    return drawn.views.map((r, i) => {
      const up = results[i];
      if (!('receipt' in up)) throw new Error(up.error);
      expect(up.receipt.upload).toBe(ids[i]);
      const image = uploads.take(ids[i])!;
      expect(image.body.length).toBe(r.width * r.height * 4);
      return { ...r, data: image.body };
    });
  }

  it('a page switched from 1x to @2x draws icons from sprite@2x, and back', async () => {
    const [a] = await renderAll([view], 1);
    const [b] = await renderAll([view], 2);
    expect(b.width).toBe(a.width * 2);
    // Back to 1x: the same pixels as the first 1x render (nothing of the @2x state is left).
    const [c] = await renderAll([view], 1);
    expect(Buffer.compare(c.data, a.data)).toBe(0);
    expect(server.session.takeFailures()).toEqual([]);
  });

  it('checks the MapLibre internals it uses at start, naming what is missing', async () => {
    const page = (await renderer.open()) as import('playwright-core').Page;
    // A second map of the same style in the page: it passes the check; with internals taken away it
    // fails naming them. A string: vitest would rewrite the dynamic imports of a function.
    const messages = (await page.evaluate(`(async (url) => {
      const maplibregl = await import('/maplibre/maplibre-gl.mjs');
      const { checkInternals } = await import('/page/maplibre-adapter.mjs');
      const container = document.createElement('div');
      container.style.cssText = 'width: 64px; height: 64px; position: absolute; visibility: hidden';
      document.body.appendChild(container);
      const map = new maplibregl.Map({ container, style: url, interactive: false, attributionControl: false, validateStyle: false });
      await new Promise((r) => map.once('style.load', r));
      const check = () => {
        try {
          checkInternals(map, maplibregl.getVersion());
          return 'ok';
        } catch (e) {
          return e.message;
        }
      };
      const before = check();
      map.style._updateSources = undefined;
      map._camera = undefined;
      const after = check();
      map.remove();
      container.remove();
      return [before, after];
    })(${JSON.stringify(styleUrl)})`)) as string[];
    expect(messages[0]).toBe('ok');
    expect(messages[1]).toMatch(/^MapLibre internals changed \(maplibre-gl 6\.17\.0\): /);
    expect(messages[1]).toContain('map._camera.transform.clone');
    expect(messages[1]).toContain('_updateSources');
  });

  // Uploads once went as Blobs over a BroadcastChannel: Chromium keeps a Blob's bytes until every
  // context holding it collects its garbage, its blob storage filled up after ~500 MB on this machine
  // (~125 metatiles of 1024 px: 500 MiB, Chromium's in-memory blob space), and every upload after that
  // failed ("Failed to fetch").
  it('uploads more pixels than Chromium keeps in its blob storage (600 MB in 36 renders) without failing', async () => {
    const ratio = 2;
    // What is tested is the upload of many large canvases, not drawing: the view lies 1° east of the
    // sample's data (open sea, no tiles to load), so each render is the background only, 16 MB all the same.
    const big = { width: 1024, height: 1024, center: [view.center[0] + 1, view.center[1]] as [number, number], zoom: 12 };
    const bytes = big.width * big.height * ratio * ratio * 4;
    const BATCH = 4;
    const RENDERS = 36;
    /** What filled Chromium's blob storage: 500 MiB. */
    const BLOB_STORAGE = 500 * 2 ** 20;
    let received = 0;
    for (let i = 0; i < RENDERS; i += BATCH) {
      const images = await renderAll(Array.from({ length: BATCH }, () => big), ratio);
      received += images.filter((im) => im.data.length === bytes).length;
    }
    expect(received).toBe(RENDERS);
    expect(RENDERS * bytes).toBeGreaterThan(1.1 * BLOB_STORAGE);
    expect(server.session.uploads.open).toBe(0);
  }, 300_000);
});
