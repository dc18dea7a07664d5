import type { FastifyInstance } from 'fastify';
import { servedTileForms, tilesetEncodings, tilesetMaxzoom, type TilesetEntry } from '../../lib/manifest.ts';
import { tileJson } from '../../lib/tilejson.ts';
import { archivesOf } from '../archives.ts';
import { HttpError, type ServerContext } from '../context.ts';
import { checkZoom, parseEncodingParam, parseTileCoord, splitTileFile } from '../../lib/tile-coords.ts';
import { appendVary, prefersMlt, sendTile, TILE_CONTENT_TYPES, type TileSendOptions } from '../tile-response.ts';
import { HttpStatus } from '../../lib/http-status.ts';

/** Suffix of TileJSON requests. */
const JSON_SUFFIX = '.json';

/** One archive of a tileset with what its hot path needs precomputed. */
interface ServedArchive {
  archive: string;
  send: TileSendOptions;
  /** Set once `send.gzip` reflects the archive header. */
  compressionKnown: boolean;
}

/** A manifest tileset: its archive, its MLT archive when it has one, its @2x archive (raster) when it has one. */
interface ServedTileset {
  id: string;
  entry: TilesetEntry;
  main: ServedArchive;
  mlt?: ServedArchive;
  hidpi?: ServedArchive;
}

/** Extension of MLT tiles. */
const MLT_EXT = 'mlt';

/** Route params of a tile request. */
interface TileParams {
  tileset: string;
  z: string;
  x: string;
  file: string;
}

/**
 * `GET /data/{tileset}/{z}/{x}/{y}.{ext}` (vector tilesets as .pbf, and as .mlt when built with MLT;
 * terrain and raster tilesets in their format; raster tilesets with @2x tiles also as `{y}@2x.{ext}`)
 * and `GET /data/{tileset}.json[?encoding=mlt]` (TileJSON) for the manifest's tilesets. A `.pbf`
 * request whose Accept header prefers MLT gets the MLT tile. A tile the archive does not hold, inside
 * the zoom range, is `204` (raster: outside the images); another format, scale or zoom is `404` naming
 * what the tileset serves.
 */
export async function registerVectorRoutes(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  const archives = archivesOf(ctx);
  const tilesets = new Map<string, ServedTileset>();
  const served = (archive: string, ext: string, vary?: string): ServedArchive => ({
    archive,
    send: { contentType: TILE_CONTENT_TYPES[ext] ?? 'application/octet-stream', gzip: false, cacheControl: ctx.cache.data, decompress: (tile) => archives.identity(tile), vary },
    compressionKnown: false,
  });
  for (const [id, entry] of Object.entries(ctx.manifest.tilesets)) {
    // A tileset with MLT answers `.pbf` by the Accept header too: caches must keep both answers apart.
    const vary = entry.mlt ? 'Accept' : undefined;
    tilesets.set(id, {
      id, entry, main: served(entry.archive, entry.format, vary), mlt: entry.mlt && served(entry.mlt.archive, MLT_EXT, vary),
      hidpi: entry.kind === 'raster' && entry.hidpi ? served(entry.hidpi.archive, entry.format) : undefined,
    });
  }

  /** The MLT archive of a tileset, or 404 naming the encodings it has. */
  const mltOr404 = (ts: ServedTileset): ServedArchive => {
    if (!ts.mlt) {
      const encodings = tilesetEncodings(ts.entry);
      throw new HttpError(HttpStatus.NotFound, `tileset "${ts.id}" has no MLT tiles (its encodings: ${encodings.join(', ')}; a tileset gets them with "encodings": ["mvt", "mlt"] in the build config)`, { encodings });
    }
    return ts.mlt;
  };

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
    const asMlt = parts.scale !== 1 ? undefined : parts.ext === MLT_EXT ? mltOr404(ts) : parts.ext === 'pbf' && prefersMlt(req.headers.accept) ? ts.mlt : undefined;
    if (!asMlt && (parts.ext !== ts.entry.format || (parts.scale === 2 && !ts.hidpi))) {
      throw new HttpError(
        HttpStatus.NotFound,
        `tileset "${ts.id}" serves ${servedTileForms(ts.entry)} tiles (asked for ${parts.scale === 2 ? '@2x' : ''}.${parts.ext})`,
      );
    }
    checkZoom(z, ts.entry.minzoom, tilesetMaxzoom(ts.entry, parts.scale), `tileset "${ts.id}"${parts.scale === 2 ? ' at @2x' : ''}`);
    const a = asMlt ?? (parts.scale === 2 ? ts.hidpi! : ts.main);
    const tile = await archives.tile(a.archive, z, x, y);
    if (tile === null) {
      reply.header('cache-control', a.send.cacheControl);
      if (a.send.vary) appendVary(reply, a.send.vary);
      return reply.code(HttpStatus.NoContent).send();
    }
    if (!a.compressionKnown) {
      // Learn the archive's tile compression once (the archive is open by now).
      a.send = { ...a.send, gzip: (await archives.open(a.archive)).gzip };
      a.compressionKnown = true;
    }
    return sendTile(req, reply, tile, a.send);
  });

  app.get<{ Params: { file: string }; Querystring: { encoding?: unknown } }>('/data/:file', async (req, reply) => {
    const { file } = req.params;
    if (!file.endsWith(JSON_SUFFIX)) {
      throw new HttpError(HttpStatus.NotFound, `no route for ${req.method} ${req.url.split('?')[0]} (TileJSON is /data/{tileset}.json)`);
    }
    const ts = tilesetOr404(file.slice(0, -JSON_SUFFIX.length));
    const encoding = parseEncodingParam(req.query.encoding);
    if (encoding === 'mlt') mltOr404(ts);
    reply.header('cache-control', ctx.cache.metadata);
    if (ctx.cache.metadataVary) appendVary(reply, ctx.cache.metadataVary);
    return tileJson(ts.id, ts.entry, ctx.baseUrl(req), { encoding });
  });
}
