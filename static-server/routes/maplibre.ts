import { dirname } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { packageRequire } from '../../lib/package-root.ts';
import type { ServerContext } from '../context.ts';
import { StaticFolder } from '../static-files.ts';

/** Path prefix of maplibre-gl's files: `/maplibre/maplibre-gl.mjs` and the modules it loads beside it. */
export const MAPLIBRE_PREFIX = '/maplibre/';

/** maplibre-gl's `dist` folder (the version pinned in package.json). */
const MAPLIBRE_DIST = dirname(packageRequire.resolve('maplibre-gl/dist/maplibre-gl.mjs'));

/**
 * `GET /maplibre/{file}`: MapLibre GL JS from the installed `maplibre-gl` package (`maplibre-gl.mjs`,
 * the shared and worker modules it imports by relative URL, `maplibre-gl.css`, source maps), for
 * pages this server shows: the render page, a preview page.
 */
export async function registerMaplibreRoutes(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  const dist = new StaticFolder(MAPLIBRE_DIST);
  app.get<{ Params: { file: string } }>(`${MAPLIBRE_PREFIX}:file`, (req, reply) => dist.send(req, reply, req.params.file, 'maplibre-gl', ctx.cache.data));
}
