import { posix } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Memo } from '../../lib/shared-work.ts';
import { localizeStyle } from '../../lib/style-language.ts';
import { withProjection, type Projection } from '../../lib/style-projection.ts';
import type { StyleEntry } from '../../lib/manifest.ts';
import { StoreBadAnswerError, StoreCorruptError } from '../../lib/store-read.ts';
import { archivesOf } from '../archives.ts';
import { HttpError, cacheBudgetBytes, type RouteModule, type ServerContext } from '../context.ts';
import { checkZoom, parseEncodingParam, parseTileCoord, splitTileFile } from '../../lib/tile-coords.ts';
import { BoundedCache } from '../../lib/bounded-cache.ts';
import { FontService } from '../../lib/glyphs/font-stacks.ts';
import { builtKeys, rasterTileJson } from '../styles/raster-tilejson.ts';
import { bakedVariant, checkCarried, queryLanguage } from '../styles/language.ts';
import { queryProjection } from '../styles/projection.ts';
import { rewriteNeutralUrls, sourceTileset, withMltSources, type StyleUrls } from '../../lib/style-urls.ts';
import { servedMaxzoom, tilesetEncodings, type Manifest } from '../../lib/manifest.ts';
import { serverMetrics } from '../metrics.ts';
import { SOURCE_ZOOM_HEADER } from '../overzoom/policy.ts';
import { OnDemandRenderer, onDemandOptions } from '../overzoom/render.ts';
import { Upscaler } from '../overzoom/upscale.ts';
import { decodedTilesOf } from '../static-map/decoded-tiles.ts';
import { appendVary, sendTile, TILE_CONTENT_TYPES, tileBody, type TileBody } from '../tile-response.ts';
import { HttpStatus } from '../../lib/http-status.ts';

/** Bytes in a megabyte. */
const MB = 1024 * 1024;
/** Smallest budget of that cache, so a tiny --cache-mb still keeps sprites and common glyph ranges. */
const MIN_STYLE_FILES_CACHE_BYTES = 4 * MB;
/** Rough per-entry overhead accounted in the small-file cache (key, map slot, ETag). */
const ENTRY_OVERHEAD_BYTES = 128;
/** Content type of JSON documents. */
const JSON_TYPE = 'application/json; charset=utf-8';
/** Content type of glyph PBFs. */
const GLYPHS_TYPE = 'application/x-protobuf';
/** Sprite files: `sprite.json`, `sprite.png`, `sprite@2x.json`, `sprite@2x.png`. */
const SPRITE_FILE = /^sprite(@2x)?\.(json|png)$/;
/** Glyph range files: `{start}-{end}.pbf`. */
const GLYPH_FILE_SUFFIX = '.pbf';
/** The prepared style document's file name in `/styles/{style}/style.json` (also `/styles/{style}.json`: static-server/aliases.ts). */
const STYLE_FILE = 'style.json';
/** The raster TileJSON's file name in `/styles/{style}/rendered.json`. */
export const RASTER_TILEJSON_FILE = 'rendered.json';

/** A prepared style whose vector sources of tilesets with MLT load MLT; 404 when it draws none (naming the encodings of those it draws). */
function mltStyle(id: string, style: StyleUrls, manifest: Manifest): StyleUrls {
  const r = withMltSources(style, (t) => manifest.tilesets[t]?.mlt !== undefined);
  if (r.switched.length > 0) return r.style;
  const drawn = Object.values(style.sources ?? {}).flatMap((s) => sourceTileset(s) ?? []);
  const encodings = Object.fromEntries(drawn.filter((t) => manifest.tilesets[t]).map((t) => [t, tilesetEncodings(manifest.tilesets[t])]));
  throw new HttpError(HttpStatus.NotFound, `style "${id}" draws no tileset with MLT tiles (${Object.entries(encodings).map(([t, e]) => `${t}: ${e.join(', ')}`).join('; ') || 'no tilesets'})`, { encodings });
}

interface TileParams {
  style: string;
  z: string;
  x: string;
  file: string;
}

/**
 * `/styles/{style}/{z}/{x}/{y}[@2x].{png|jpg|webp}` (rendered raster tiles; above the baked maxzoom upscaled
 * or rendered on demand: static-server/overzoom/), `/styles/{style}/rendered.json` (raster TileJSON),
 * `/styles/{style}/style.json` (prepared style with absolute URLs on this server; `/styles/{style}.json` is its alias;
 * `?language=xx`: labels in that language first, styles/language.ts; `?projection=globe`: MapLibre's globe,
 * styles/projection.ts), `rendered.json?language=xx` (a baked variant's),
 * `/styles/{style}/sprite[@2x].{json,png}` and `/fonts/{fontstack}/{start}-{end}.pbf` (combined font stacks).
 */
export const registerStyleRoutes: RouteModule = async (app: FastifyInstance, ctx: ServerContext) => {
  const archives = archivesOf(ctx);
  const upscaler = new Upscaler(archives, decodedTilesOf(ctx));
  // Styles in `render` mode: their browser starts with the first render and stops with this app.
  const rendersOnDemand = Object.values(ctx.manifest.styles).some((e) => e.overzoom === 'render');
  const onDemand = ctx.startRenderHost && rendersOnDemand ? new OnDemandRenderer(ctx, archives, onDemandOptions(ctx), ctx.startRenderHost) : undefined;
  if (onDemand) app.addHook('onClose', () => onDemand.close());
  const styles = new Map(Object.entries(ctx.manifest.styles));
  const cacheBytes = Math.max(MIN_STYLE_FILES_CACHE_BYTES, cacheBudgetBytes(ctx, 'styleFiles'));
  const files = new BoundedCache<TileBody | null>(cacheBytes / 2, (v) => ENTRY_OVERHEAD_BYTES + (v ? v.bytes.byteLength : 0));
  const fonts = ctx.manifest.fonts ? new FontService(ctx.store, ctx.manifest.fonts, cacheBytes / 2, (bytes) => tileBody(bytes)) : undefined;
  const parsedStyles = new Memo<string, StyleUrls>();
  serverMetrics().watchCache('style-files', files.entries);
  if (fonts) {
    serverMetrics().watchCache('glyph-files', fonts.files.entries);
    serverMetrics().watchCache('glyph-stacks', fonts.combined.entries);
  }
  const cacheControl = ctx.cache.data;

  const styleOr404 = (id: string): StyleEntry => {
    const entry = styles.get(id);
    if (!entry) throw new HttpError(HttpStatus.NotFound, `unknown style "${id}"`, { styles: [...styles.keys()] });
    return entry;
  };

  /** A small file of the build with its ETag, or null when it does not exist (cached). */
  const smallFile = (rel: string): Promise<TileBody | null> =>
    files.getOrLoad(`file:${rel}`, async () => {
      const bytes = await ctx.store.readFile(rel);
      return bytes ? tileBody(bytes) : null;
    });

  /** The parsed prepared style of a manifest entry (read once). */
  const parsedStyle = (id: string, entry: StyleEntry): Promise<StyleUrls> =>
    parsedStyles.get(id, async () => {
      const bytes = await ctx.store.readFile(entry.style);
      if (!bytes) throw new StoreBadAnswerError(`style "${id}": ${entry.style} is listed in the manifest but missing`, { transient: false });
      try {
        return JSON.parse(Buffer.from(bytes).toString('utf8')) as StyleUrls;
      } catch (e) {
        throw new StoreCorruptError(`style "${id}": ${entry.style} is not valid JSON (${(e as Error).message})`, e);
      }
    });

  /**
   * The style JSON with URLs on `base` (labels in `language` first when given; vector sources as MLT with
   * `mlt`; in `projection` when given), serialised once per style, base URL, language, encoding and projection.
   */
  const styleDocument = (id: string, entry: StyleEntry, base: string, language?: string, mlt = false, projection?: Projection): Promise<TileBody> =>
    files.getOrLoad(`style:${id}\n${base}\n${language ?? ''}${mlt ? '\nmlt' : ''}\n${projection ?? ''}`, async () => {
      const parsed = await parsedStyle(id, entry);
      const localized = language === undefined ? parsed : localizeStyle(parsed, language);
      const projected = projection === undefined ? localized : withProjection(localized, projection);
      const style = rewriteNeutralUrls(mlt ? mltStyle(id, projected, ctx.manifest) : projected, base);
      return tileBody(Buffer.from(JSON.stringify(style)));
    }) as Promise<TileBody>;

  const sendSmall = (req: FastifyRequest, reply: FastifyReply, body: TileBody, contentType: string, cc: string, vary?: string) =>
    sendTile(req, reply, body, { contentType, gzip: false, cacheControl: cc, vary });

  app.get<{ Params: TileParams }>('/styles/:style/:z/:x/:file', async (req, reply) => {
    const { style: id, z: zText, x: xText, file } = req.params;
    const entry = styleOr404(id);
    const built = builtKeys(entry);
    const parts = splitTileFile(file);
    if (!parts) {
      // Still a coordinate problem when the y part is not an integer (e.g. `1.5.png`): 400.
      parseTileCoord(zText, xText, file.replace(/(@2x)?\.[^.]*$/, ''));
      throw new HttpError(HttpStatus.NotFound, `tile file "${file}": expected {y}.{png|jpg|webp} or {y}@2x.{png|jpg|webp}; built: ${built.join(', ')}`, {
        built,
      });
    }
    const { z, x, y } = parseTileCoord(zText, xText, parts.y);
    const key = `${parts.scale}x.${parts.ext}`;
    const archive = entry.archives[key];
    if (!archive) {
      throw new HttpError(HttpStatus.NotFound, `style "${id}" has no ${key} tiles; built: ${built.join(', ') || 'none'}`, { built });
    }
    checkZoom(z, entry.minzoom, servedMaxzoom(entry), `style "${id}"`);
    const above = z > entry.maxzoom;
    const rendered = above && onDemand !== undefined && entry.overzoom === 'render';
    const tile = rendered ? await onDemand.tile(id, entry, archive, z, x, y) : above ? await upscaler.tile(entry, archive, z, x, y) : await archives.tile(archive.archive, z, x, y);
    if (above && !rendered) reply.header(SOURCE_ZOOM_HEADER, String(entry.maxzoom));
    if (tile === null) {
      reply.header('cache-control', cacheControl);
      return reply.code(HttpStatus.NoContent).send();
    }
    return sendSmall(req, reply, tile, TILE_CONTENT_TYPES[archive.format] ?? 'application/octet-stream', cacheControl);
  });

  app.get<{ Params: { style: string; file: string }; Querystring: { encoding?: unknown } }>('/styles/:style/:file', async (req, reply) => {
    const { style: id, file } = req.params;
    const entry = styleOr404(id);
    if (file === STYLE_FILE) {
      const language = queryLanguage(req.query);
      if (language !== undefined) checkCarried(id, entry, language);
      const mlt = parseEncodingParam(req.query.encoding) === 'mlt';
      const projection = queryProjection(req.query);
      return sendSmall(req, reply, await styleDocument(id, entry, ctx.baseUrl(req), language, mlt, projection), JSON_TYPE, ctx.cache.metadata, ctx.cache.metadataVary);
    }
    if (file === RASTER_TILEJSON_FILE) {
      // `?language=`: the raster tiles of the style's variant baked in that language.
      const language = queryLanguage(req.query);
      const shown = language === undefined ? { id, entry } : bakedVariant(ctx.manifest.styles, id, language);
      reply.header('cache-control', ctx.cache.metadata);
      if (ctx.cache.metadataVary) appendVary(reply, ctx.cache.metadataVary);
      return rasterTileJson(shown.id, shown.entry, ctx.baseUrl(req));
    }
    const m = SPRITE_FILE.exec(file);
    if (!m) {
      throw new HttpError(HttpStatus.NotFound, `no route for ${req.method} ${req.url.split('?')[0]} (style "${id}" serves style.json, rendered.json and sprite[@2x].{json,png})`);
    }
    if (!entry.sprite) throw new HttpError(HttpStatus.NotFound, `style "${id}" has no sprite`);
    const rel = `${entry.sprite}${m[1] ?? ''}.${m[2]}`;
    const body = await smallFile(rel);
    if (!body) throw new HttpError(HttpStatus.NotFound, `style "${id}": sprite file ${posix.basename(rel)} is not in the build`);
    return sendSmall(req, reply, body, m[2] === 'png' ? TILE_CONTENT_TYPES.png : JSON_TYPE, cacheControl);
  });

  app.get<{ Params: { fontstack: string; file: string } }>('/fonts/:fontstack/:file', async (req, reply) => {
    const { fontstack, file } = req.params;
    if (!fonts) throw new HttpError(HttpStatus.NotFound, 'this build has no fonts');
    if (!file.endsWith(GLYPH_FILE_SUFFIX)) {
      throw new HttpError(HttpStatus.NotFound, `no route for ${req.method} ${req.url.split('?')[0]} (glyphs are /fonts/{fontstack}/{start}-{end}.pbf)`);
    }
    const body = await fonts.glyphs(fontstack, file.slice(0, -GLYPH_FILE_SUFFIX.length));
    return sendSmall(req, reply, body, GLYPHS_TYPE, cacheControl);
  });
};
