import { dirname } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { packagePath, packageRequire } from '../../lib/package-root.ts';
import type { ServerContext } from '../context.ts';
import { StaticFolder } from '../static-files.ts';

/** Path prefix of maplibre-gl's files: `/maplibre/maplibre-gl.mjs` and the modules it loads beside it. */
export const MAPLIBRE_PREFIX = '/maplibre/';

/** maplibre-gl's `dist` folder (the version pinned in package.json). */
const MAPLIBRE_DIST = dirname(packageRequire.resolve('maplibre-gl/dist/maplibre-gl.mjs'));
/** tilebake's own module beside them: the text options the render page creates its map with (workers/page/map-text.mjs). */
const TEXT_OPTIONS = { name: 'tilebake-text.mjs', dir: packagePath('workers', 'page'), file: 'map-text.mjs' };
/** It changes with tilebake, not with maplibre-gl: browsers revalidate it (ETag) every time, as the preview page's files. */
const TEXT_OPTIONS_CACHE_CONTROL = 'no-cache';

/**
 * `GET /maplibre/{file}`: MapLibre GL JS from the installed `maplibre-gl` package (`maplibre-gl.mjs`,
 * the shared and worker modules it imports by relative URL, `maplibre-gl.css`, source maps), for
 * pages this server shows (the preview page); and `GET /maplibre/tilebake-text.mjs`, the text
 * options the render page creates its map with, so that the preview draws labels as the baked tiles.
 */
export async function registerMaplibreRoutes(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  const dist = new StaticFolder(MAPLIBRE_DIST);
  const own = new StaticFolder(TEXT_OPTIONS.dir);
  app.get<{ Params: { file: string } }>(`${MAPLIBRE_PREFIX}:file`, (req, reply) =>
    req.params.file === TEXT_OPTIONS.name
      ? own.send(req, reply, TEXT_OPTIONS.file, 'tilebake', TEXT_OPTIONS_CACHE_CONTROL)
      : dist.send(req, reply, req.params.file, 'maplibre-gl', ctx.cache.data),
  );
}
