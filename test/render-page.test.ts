import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { openArchiveFile, type ArchiveReader } from '../lib/pmtiles/index.ts';
import { parseConfig } from '../pipeline/config/index.ts';
import { AssetServer } from '../pipeline/render/asset-server.ts';
import { enumerateMetatiles, metatileView } from '../pipeline/render/metatiles.ts';
import { prepareStyle } from '../pipeline/render/style.ts';
import { runVectorStage } from '../pipeline/vector.ts';
import { BrowserRenderer } from '../workers/render-browser.ts';

const ROOT = resolve(import.meta.dirname, '..');
const FONTS = join(ROOT, 'data/sample/fonts');

describe.sequential('render page (one long-lived page, many renders)', () => {
  let out: string;
  let server: AssetServer;
  let reader: ArchiveReader;
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
    const manifest = await readManifestOrEmpty(out);
    const tileset = manifest.tilesets.openmaptiles;
    const prep = await prepareStyle('osm-bright', config.styles['osm-bright'].style, out, {
      tilesets: manifest.tilesets,
      defaultTileset: 'openmaptiles',
      fonts: FONTS,
      scales: [1, 2],
    });
    server = new AssetServer(FONTS);
    await server.start();
    reader = await openArchiveFile(join(out, tileset.archive));
    server.addTileset('openmaptiles', { entry: tileset, gzip: reader.header.tileCompression === 2, reader });
    styleUrl = server.addStyle('osm-bright', JSON.stringify(prep.style), join(out, 'styles', 'osm-bright'));
    renderer = new BrowserRenderer(server.baseUrl);
    const [first] = enumerateMetatiles(tileset.bounds, 14, 14, 2);
    view = metatileView(first, 64);
  });

  afterAll(async () => {
    await renderer?.close();
    await server?.stop();
    await reader?.close();
    if (out) await rm(out, { recursive: true, force: true });
  });

  /** Render `view` at `ratio`; resolves the canvas size and the drawing-buffer pixels the page uploaded. */
  async function render(ratio: number) {
    let data: Buffer | undefined;
    const upload = server.expectUpload(view.width * view.height * ratio * ratio * 4, (up) => (data = up.body));
    const r = await renderer.render(styleUrl, ratio, { ...view, upload: upload.url });
    await renderer.flush();
    server.forgetUpload(upload.id);
    expect(data?.length).toBe(r.width * r.height * 4);
    return { ...r, data: data! };
  }

  it('a page switched from 1x to @2x draws icons from sprite@2x, and back', async () => {
    const a = await render(1);
    expect(server.served.has('/styles/osm-bright/sprite.png')).toBe(true);
    expect(server.served.has('/styles/osm-bright/sprite@2x.png')).toBe(false);
    const b = await render(2);
    expect(b.width).toBe(a.width * 2);
    expect(server.served.has('/styles/osm-bright/sprite@2x.png')).toBe(true);
    expect(server.served.has('/styles/osm-bright/sprite@2x.json')).toBe(true);
    // Back to 1x: the same pixels as the first 1x render (nothing of the @2x state is left).
    const c = await render(1);
    expect(Buffer.compare(c.data, a.data)).toBe(0);
  });

  // Uploads once went as Blobs over a BroadcastChannel: Chromium keeps a Blob's bytes until every
  // context holding it collects its garbage, its blob storage filled up after ~500 MB on this machine
  // (~125 metatiles of 1024 px), and every upload after that failed ("Failed to fetch").
  it('uploads more pixels than Chromium keeps in its blob storage (800 MB in 48 renders) without failing', async () => {
    const ratio = 2;
    const big = { width: 1024, height: 1024, center: view.center, zoom: 12 };
    const bytes = big.width * big.height * ratio * ratio * 4;
    const BATCH = 4;
    const RENDERS = 48;
    let received = 0;
    for (let i = 0; i < RENDERS; i += BATCH) {
      const uploads = Array.from({ length: BATCH }, () => server.expectUpload(bytes, (up) => (received += up.body.length === bytes ? 1 : 0)));
      await renderer.renderViews(styleUrl, ratio, uploads.map((u) => ({ ...big, upload: u.url })));
      await renderer.flush();
      for (const u of uploads) server.forgetUpload(u.id);
    }
    expect(received).toBe(RENDERS);
    expect(RENDERS * bytes).toBeGreaterThan(800e6);
  }, 300_000);
});
