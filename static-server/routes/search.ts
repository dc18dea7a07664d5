/**
 * GET /search?q=… and GET /reverse?lat=…&lon=…: geocoding from the build's search indexes
 * (lib/search/), answered in Photon's GeoJSON shape (lib/search/photon.ts), every index of the build
 * asked and the answers merged (by score, by distance). `/v/{build}/search` asks a given version
 * (static-server/versioned.ts). Bad parameters are 400s naming them (static-server/search/params.ts);
 * a build without an index answers 404. Answers are kept by their parameters (static-server/search/answers.ts).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Hit } from '../../lib/search/query.ts';
import { photonAnswer } from '../../lib/search/photon.ts';
import { asStoreError } from '../../lib/store-read.ts';
import type { ServerContext } from '../context.ts';
import { answerKey, searchAnswersOf } from '../search/answers.ts';
import { SearchIndexes, type OpenedIndex } from '../search/indexes.ts';
import { langParam, reverseParams, searchParams } from '../search/params.ts';

type Query = Record<string, string | string[] | undefined>;

/** Register /search and /reverse. */
export async function registerSearchRoutes(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  const indexes = new SearchIndexes(ctx);
  const answers = searchAnswersOf(ctx);
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
  const send = (reply: FastifyReply, body: string) => {
    // A rebuild changes the answers: cached as the documents are (revalidated with versioned URLs).
    reply.header('cache-control', ctx.cache.metadata);
    return reply.type('application/json; charset=utf-8').send(body);
  };

  app.get<{ Querystring: Query }>('/search', async (req, reply) => {
    const q = searchParams(req.query);
    const lang = langParam(req.query);
    const body = await answers.get(answerKey('search', q, lang), async () => {
      const hits = await each((o) => o.index.search(q));
      hits.sort((a, b) => b.hit.score - a.hit.score);
      return JSON.stringify(photonAnswer(hits.slice(0, q.limit), lang));
    });
    return send(reply, body);
  });

  app.get<{ Querystring: Query }>('/reverse', async (req, reply) => {
    const r = reverseParams(req.query);
    const lang = langParam(req.query);
    const body = await answers.get(answerKey('reverse', r, lang), async () => {
      const hits = await each((o) => o.index.reverse(r));
      hits.sort((a, b) => a.hit.distance! - b.hit.distance!);
      return JSON.stringify(photonAnswer(hits.slice(0, r.limit), lang));
    });
    return send(reply, body);
  });

  app.addHook('onClose', async () => {
    await indexes.close();
  });
}
