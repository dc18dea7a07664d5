import type { FastifyInstance } from 'fastify';
import type { TilesetEntry } from '../../lib/manifest.ts';
import { tileJson } from '../../lib/tilejson.ts';
import { archivesOf } from '../archives.ts';
import { HttpError, type ServerContext } from '../context.ts';
import { checkZoom, parseTileCoord, splitTileFile } from '../../lib/tile-coords.ts';
import { appendVary, sendTile, TILE_CONTENT_TYPES, type TileSendOptions } from '../tile-response.ts';
import { HttpStatus } from '../../lib/http-status.ts';

/** Suffix of TileJSON requests. */
const JSON_SUFFIX = '.json';

/** A manifest tileset with what its hot path needs precomputed. */
interface ServedTileset {
  id: string;
  entry: TilesetEntry;
  send: TileSendOptions;
  /** Set once `send.gzip` reflects the archive header. */
  compressionKnown: boolean;
}

/** Route params of a tile request. */
interface TileParams {
  tileset: string;
  z: string;
  x: string;
  file: string;
}

/**
 * `GET /data/{tileset}/{z}/{x}/{y}.{ext}` (vector tilesets as .pbf, terrain tilesets in their
 * format) and `GET /data/{tileset}.json` (TileJSON) for the manifest's tilesets.
 */
export async function registerVectorRoutes(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  const archives = archivesOf(ctx);
  const tilesets = new Map<string, ServedTileset>();
  for (const [id, entry] of Object.entries(ctx.manifest.tilesets)) {
    tilesets.set(id, {
      id,
      entry,
      send: {
        contentType: TILE_CONTENT_TYPES[entry.format] ?? 'application/octet-stream',
        gzip: false,
        cacheControl: ctx.cache.data,
        decompress: (tile) => archives.identity(tile),
      },
      compressionKnown: false,
    });
  }

  const tilesetOr404 = (id: string): ServedTileset => {
    const ts = tilesets.get(id);
    if (!ts) {
      throw new HttpError(HttpStatus.NotFound, `unknown tileset "${id}"`, { tilesets: [...tilesets.keys()] });
    }
    return ts;
  };

  app.get<{ Params: TileParams }>('/data/:tileset/:z/:x/:file', async (req, reply) => {
    const { tileset, z: zText, x: xText, file } = req.params;
    const ts = tilesetOr404(tileset);
    const parts = splitTileFile(file);
    if (!parts) {
      throw new HttpError(HttpStatus.NotFound, `tile file "${file}": expected {y}.${ts.entry.format}`);
    }
    const { z, x, y } = parseTileCoord(zText, xText, parts.y);
    if (parts.ext !== ts.entry.format || parts.scale !== 1) {
      throw new HttpError(
        HttpStatus.NotFound,
        `tileset "${ts.id}" serves {z}/{x}/{y}.${ts.entry.format} tiles (asked for ${parts.scale === 2 ? '@2x' : ''}.${parts.ext})`,
      );
    }
    checkZoom(z, ts.entry.minzoom, ts.entry.maxzoom, `tileset "${ts.id}"`);
    const tile = await archives.tile(ts.entry.archive, z, x, y);
    if (tile === null) {
      reply.header('cache-control', ts.send.cacheControl);
      return reply.code(HttpStatus.NoContent).send();
    }
    if (!ts.compressionKnown) {
      // Learn the archive's tile compression once (the archive is open by now).
      ts.send = { ...ts.send, gzip: (await archives.open(ts.entry.archive)).gzip };
      ts.compressionKnown = true;
    }
    return sendTile(req, reply, tile, ts.send);
  });

  app.get<{ Params: { file: string } }>('/data/:file', async (req, reply) => {
    const { file } = req.params;
    if (!file.endsWith(JSON_SUFFIX)) {
      throw new HttpError(HttpStatus.NotFound, `no route for ${req.method} ${req.url.split('?')[0]} (TileJSON is /data/{tileset}.json)`);
    }
    const ts = tilesetOr404(file.slice(0, -JSON_SUFFIX.length));
    reply.header('cache-control', ctx.cache.metadata);
    if (ctx.cache.metadataVary) appendVary(reply, ctx.cache.metadataVary);
    return tileJson(ts.id, ts.entry, ctx.baseUrl(req));
  });
}
