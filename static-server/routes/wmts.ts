/**
 * WMTS capabilities: `GET /styles/{style}/wmts.xml` (one style) and `GET /styles/wmts.xml` (every
 * style), RESTful, with tile URLs at the raster tile routes (static-server/styles/wmts-capabilities.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError, type RouteModule, type ServerContext } from '../context.ts';
import { HttpStatus } from '../../lib/http-status.ts';
import { wmtsCapabilities, type WmtsStyle } from '../styles/wmts-capabilities.ts';
import { appendVary } from '../tile-response.ts';

/** Content type of the capabilities documents. */
const XML_TYPE = 'application/xml; charset=utf-8';

export const registerWmtsRoutes: RouteModule = async (app: FastifyInstance, ctx: ServerContext) => {
  const all: WmtsStyle[] = Object.entries(ctx.manifest.styles).map(([id, entry]) => ({ id, entry, maxzoom: entry.maxzoom }));

  const send = (req: FastifyRequest, reply: FastifyReply, styles: WmtsStyle[]) => {
    const base = ctx.baseUrl(req);
    reply.header('cache-control', ctx.cache.metadata);
    if (ctx.cache.metadataVary) appendVary(reply, ctx.cache.metadataVary);
    reply.type(XML_TYPE);
    return wmtsCapabilities(styles, base, `${base}${req.url.split('?')[0]}`);
  };

  app.get('/styles/wmts.xml', async (req, reply) => send(req, reply, all));

  app.get<{ Params: { style: string } }>('/styles/:style/wmts.xml', async (req, reply) => {
    const style = all.find((s) => s.id === req.params.style);
    if (!style) throw new HttpError(HttpStatus.NotFound, `unknown style "${req.params.style}"`, { styles: all.map((s) => s.id) });
    return send(req, reply, [style]);
  });
};
