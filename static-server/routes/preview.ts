import type { FastifyInstance } from 'fastify';
import { packagePath } from '../../lib/package-root.ts';
import { servedBuild } from '../metrics.ts';
import { bakedLanguages } from '../styles/language.ts';
import { tilesetEncodings } from '../../lib/manifest.ts';
import type { ServerContext } from '../context.ts';
import { StaticFolder } from '../static-files.ts';
import { MAPLIBRE_PREFIX } from './maplibre.ts';

/** The preview page's folder: index.html and its modules, style sheet and icon. */
export const PREVIEW_DIR = packagePath('static-server', 'preview/');
/** Path prefix of the page's assets. */
const PREVIEW_PREFIX = '/preview/';
/** The page itself. */
const PAGE_FILE = 'index.html';
/** The page's files change with an upgrade: browsers revalidate them (ETag) every time. */
const PAGE_CACHE_CONTROL = 'no-cache';

/**
 * True for the paths of the preview page that need no token: `/`, `/preview/{file}` and
 * `/maplibre/{file}` (the page holds no data; everything it shows comes from authenticated routes).
 */
export function isPublicPreviewPath(url: string): boolean {
  return url === '/' || url.startsWith('/?') || url.startsWith(PREVIEW_PREFIX) || url.startsWith(MAPLIBRE_PREFIX);
}

/**
 * `GET /` (the preview page), `GET /preview/{file}` (its assets), both public, and `GET /catalog.json`
 * (behind the token): what the page lists, from the manifest.
 */
export async function registerPreviewRoutes(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  const folder = new StaticFolder(PREVIEW_DIR);
  app.get('/', (req, reply) => folder.send(req, reply, PAGE_FILE, 'the preview page', PAGE_CACHE_CONTROL));
  app.get<{ Params: { file: string } }>(`${PREVIEW_PREFIX}:file`, (req, reply) => folder.send(req, reply, req.params.file, 'the preview page', PAGE_CACHE_CONTROL));
  app.get('/catalog.json', async (req, reply) => {
    reply.header('cache-control', ctx.cache.metadata);
    // The page builds its raster URLs on `baseUrl`, which names the build with versioned URLs.
    return { ...catalogOf(ctx), baseUrl: ctx.baseUrl(req) };
  });
}

/** What the preview page lists: tilesets, styles with their built rasters, elevation, search, the build. */
export function catalogOf(ctx: Pick<ServerContext, 'manifest'>): Record<string, unknown> {
  const m = ctx.manifest;
  return {
    build: servedBuild(m),
    tilesets: Object.entries(m.tilesets).map(([id, t]) => ({
      id,
      kind: t.kind,
      format: t.format,
      encoding: t.encoding,
      // Vector tile encodings served (`mvt`, and `mlt` when built): the page can draw a style from either.
      encodings: tilesetEncodings(t),
      name: t.name ?? id,
      attribution: t.attribution,
      minzoom: t.minzoom,
      maxzoom: t.maxzoom,
      bounds: t.bounds,
      // The extract of a tileset with the world's low zooms: where the page opens.
      region: t.region ?? t.bounds,
      center: t.center,
      vector_layers: t.vector_layers ?? [],
      // Raster tilesets: the tile size, and the deepest zoom of their @2x tiles when built.
      ...(t.tileSize ? { tileSize: t.tileSize } : {}),
      ...(t.kind === 'raster' && t.hidpi ? { maxzoom_2x: t.hidpi.maxzoom } : {}),
    })),
    styles: Object.entries(m.styles).map(([id, s]) => ({
      id,
      name: s.name ?? id,
      attribution: s.attribution,
      minzoom: s.minzoom,
      maxzoom: s.maxzoom,
      bounds: s.bounds,
      region: s.region ?? s.bounds,
      center: s.center,
      rasters: Object.keys(s.archives).sort(),
      // Label languages: the one baked in, those style.json?language= draws, the baked variants by language.
      ...(s.language ? { language: s.language } : {}),
      languages: s.languages ?? [],
      baked: bakedLanguages(m.styles, id),
    })),
    elevation: m.elevation ? { bounds: m.elevation.bounds, precision: m.elevation.precision } : null,
    // GET /search answers: the page shows its search box.
    search: Object.values(m.tilesets).some((t) => t.search !== undefined),
  };
}
