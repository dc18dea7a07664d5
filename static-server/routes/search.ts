/**
 * GET /search?q=… and GET /reverse?lat=…&lon=…: geocoding from the build's search indexes
 * (lib/search/), answered in Photon's GeoJSON shape (lib/search/photon.ts), every index of the build
 * asked and the answers merged (by score, by distance). `/v/{build}/search` asks a given version
 * (static-server/versioned.ts). Bad parameters are 400s naming them (static-server/search/params.ts);
 * a build without an index answers 404.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Hit } from '../../lib/search/query.ts';
import { photonAnswer } from '../../lib/search/photon.ts';
import { asStoreError } from '../../lib/store-read.ts';
import type { ServerContext } from '../context.ts';
import { SearchIndexes, type OpenedIndex } from '../search/indexes.ts';
import { langParam, reverseParams, searchParams } from '../search/params.ts';

type Query = Record<string, string | string[] | undefined>;

/** Register /search and /reverse. */
export async function registerSearchRoutes(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  const indexes = new SearchIndexes(ctx);
  /** Run `ask` on every index; a failing read is a StoreError (502/504). */
  const each = async (ask: (o: OpenedIndex) => Hit[]) => {
    const all = await indexes.get();
    return all.flatMap((o) => {
      try {
        return ask(o).map((hit) => ({ hit, index: o.index }));
      } catch (e) {
        throw asStoreError(ctx.manifest.tilesets[o.tileset].search!.index, e);
      }
    });
  };
  const send = (reply: FastifyReply, body: unknown) => {
    // A rebuild changes the answers: cached as the documents are (revalidated with versioned URLs).
    reply.header('cache-control', ctx.cache.metadata);
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(body));
  };

  app.get<{ Querystring: Query }>('/search', async (req, reply) => {
    const q = searchParams(req.query);
    const lang = langParam(req.query);
    const hits = await each((o) => o.index.search(q));
    hits.sort((a, b) => b.hit.score - a.hit.score);
    return send(reply, photonAnswer(hits.slice(0, q.limit), lang));
  });

  app.get<{ Querystring: Query }>('/reverse', async (req, reply) => {
    const r = reverseParams(req.query);
    const lang = langParam(req.query);
    const hits = await each((o) => o.index.reverse(r));
    hits.sort((a, b) => a.hit.distance! - b.hit.distance!);
    return send(reply, photonAnswer(hits.slice(0, r.limit), lang));
  });

  app.addHook('onClose', async () => {
    await indexes.close();
  });
}
