/**
 * WMTS capabilities: `GET /styles/{style}/wmts.xml` (one style), `GET /data/{tileset}/wmts.xml` (one
 * raster tileset) and `GET /styles/wmts.xml` (every style and raster tileset), RESTful, with tile URLs
 * at the raster tile routes (static-server/styles/wmts-capabilities.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError, type RouteModule, type ServerContext } from '../context.ts';
import { HttpStatus } from '../../lib/http-status.ts';
import { styleLayers, tilesetLayers, wmtsCapabilities, type WmtsLayer } from '../styles/wmts-capabilities.ts';
import { appendVary } from '../tile-response.ts';

/** Content type of the capabilities documents. */
const XML_TYPE = 'application/xml; charset=utf-8';

export const registerWmtsRoutes: RouteModule = async (app: FastifyInstance, ctx: ServerContext) => {
  const styles = Object.entries(ctx.manifest.styles).map(([id, entry]) => ({ id, entry, maxzoom: entry.maxzoom }));
  const rasters = Object.entries(ctx.manifest.tilesets).filter(([, t]) => t.kind === 'raster');
  /** A raster tileset's layer name: its id, or `data/{id}` when a style has that id. */
  const layerName = (id: string) => (ctx.manifest.styles[id] ? `data/${id}` : id);

  const send = (req: FastifyRequest, reply: FastifyReply, layers: (base: string) => WmtsLayer[], getTile: string) => {
    const base = ctx.baseUrl(req);
    reply.header('cache-control', ctx.cache.metadata);
    if (ctx.cache.metadataVary) appendVary(reply, ctx.cache.metadataVary);
    reply.type(XML_TYPE);
    return wmtsCapabilities(layers(base), `${base}${req.url.split('?')[0]}`, `${base}${getTile}`);
  };

  app.get('/styles/wmts.xml', async (req, reply) =>
    send(req, reply, (base) => [...styles.flatMap((s) => styleLayers(s, base)), ...rasters.flatMap(([id, t]) => tilesetLayers(id, t, base, layerName(id)))], '/'),
  );

  app.get<{ Params: { style: string } }>('/styles/:style/wmts.xml', async (req, reply) => {
    const style = styles.find((s) => s.id === req.params.style);
    if (!style) throw new HttpError(HttpStatus.NotFound, `unknown style "${req.params.style}"`, { styles: styles.map((s) => s.id) });
    return send(req, reply, (base) => styleLayers(style, base), '/styles/');
  });

  app.get<{ Params: { tileset: string } }>('/data/:tileset/wmts.xml', async (req, reply) => {
    const found = rasters.find(([id]) => id === req.params.tileset);
    if (!found) {
      const what = ctx.manifest.tilesets[req.params.tileset] ? `tileset "${req.params.tileset}" is not a raster tileset (WMTS lists raster tiles only)` : `unknown raster tileset "${req.params.tileset}"`;
      throw new HttpError(HttpStatus.NotFound, what, { tilesets: rasters.map(([id]) => id) });
    }
    return send(req, reply, (base) => tilesetLayers(found[0], found[1], base), '/data/');
  });
};
