import type { AddressInfo } from 'node:net';
import type { Manifest } from '../lib/manifest.ts';
import type { Store } from '../lib/storage.ts';
import { buildApp } from './app.ts';
import { archivesOf } from './archives.ts';
import type { ServerContext } from './context.ts';
import { RenderSession } from './render-session.ts';
import { contextOver } from './context-over.ts';

/** Loopback address the render server listens on: only the build's own browsers reach it. */
const LOOPBACK = '127.0.0.1';
/** Memory for cached tiles and style files (the page's vector tiles are shared by the build's browsers), MB. */
const DEFAULT_CACHE_MB = 256;

/** What the render server serves: a build's outputs, as `tilebake serve` reads them. */
export interface RenderServerOptions {
  /** The build folder (or any store) holding the archives, prepared styles, sprites and fonts. */
  store: Store;
  /**
   * Its manifest as the page must see it: the tilesets the styles use, every style being rendered
   * (its prepared style.json and sprite written; `archives` may be empty) and `fonts`.
   */
  manifest: Manifest;
  /** The render page's folder (render.html and its modules). */
  pageDir: string;
  /** Memory for cached tiles and style files, MB (default 256). */
  cacheMb?: number;
}

/** A running render server. */
export interface RenderServer {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  /** Its upload slots and failed requests. */
  session: RenderSession;
  /** Stop listening and close the archives. */
  close(): Promise<void>;
}

/**
 * Serve a build to the render page: the app of `tilebake serve` in its `render` role (no auth,
 * 127.0.0.1 only), which adds the page, maplibre-gl and pixel uploads to the tile, TileJSON,
 * style.json, sprite and glyph routes clients get. Responses are not cached by the browsers.
 */
export async function startRenderServer(opts: RenderServerOptions): Promise<RenderServer> {
  let url = '';
  const session = new RenderSession(opts.pageDir);
  const ctx: ServerContext = {
    ...contextOver(opts.store, opts.manifest, {
      out: opts.store.location,
      port: 0,
      host: LOOPBACK,
      auth: false,
      cacheControl: 'no-store',
      cors: '',
      cacheMb: opts.cacheMb ?? DEFAULT_CACHE_MB,
      logLevel: 'silent',
    }),
    baseUrl: () => url,
    render: session,
  };
  const app = await buildApp(ctx, { role: 'render', tokenHashes: null });
  try {
    // Exclusive: in a cluster worker (serve --workers N renders on demand) a shared port 0 would hand
    // the page's uploads to another worker's render server.
    await app.listen({ port: 0, host: LOOPBACK, exclusive: true });
  } catch (e) {
    await app.close();
    await archivesOf(ctx).close();
    throw e;
  }
  url = `http://${LOOPBACK}:${(app.server.address() as AddressInfo).port}`;
  return {
    url,
    session,
    close: async () => {
      await app.close();
      await archivesOf(ctx).close();
    },
  };
}
