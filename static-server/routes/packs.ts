/**
 * `GET /packs/{tileset}.pmtiles?bbox=w,s,e,n[&minzoom=…&maxzoom=…][&since={build}]` and
 * `GET /packs/styles/{style}[@2x].{format}.pmtiles?bbox=…`: a region of the served build version as
 * one PMTiles archive, made while it is sent. The archive is laid out from the build's directories
 * first (static-server/packs/plan.ts), so its size is known (Content-Length) and a pack over the
 * server's `--max-pack-tiles` or the key's pack-tile quota is refused before anything is sent, with the
 * estimate; then the tile bytes are read and sent in order, nothing kept but the directory. A request
 * runs on the version it came in on to its end (static-server/follow.ts), so a pack is wholly of one
 * version; `/v/{build}/packs/…` asks for a given version (cached for a year). `?since=` sends a delta.
 * `.mbtiles` is refused: SQLite cannot be written as a stream.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { openVersion } from '../../lib/build-version.ts';
import { isUserError, UserError } from '../../lib/errors.ts';
import type { Area } from '../../lib/tile-cover.ts';
import { HttpStatus } from '../../lib/http-status.ts';
import { areaOfBBox, parseBBox } from '../../lib/packs/area.ts';
import { coalesce, planPmtiles, pmtilesBytes } from '../../lib/packs/pmtiles-pack.ts';
import { HttpError, type ServerContext } from '../context.ts';
import { reservePackTiles } from '../keys/gate.ts';
import { notePackTiles } from '../keys/usage.ts';
import { PackInputError, packWriterOptions, planPack, type PackPlan, type PackVersion } from '../packs/plan.ts';
import { allPackSources, packFileName, packSourceNamed } from '../packs/sources.ts';
import { appendVary } from '../tile-response.ts';

/** Default of `--max-pack-tiles`. */
export const DEFAULT_MAX_PACK_TILES = 200_000;
/** Bytes sent per write. */
export const SEND_CHUNK_BYTES = 256 * 1024;
/** The PMTiles media type. */
const PMTILES_TYPE = 'application/vnd.pmtiles';

interface PackQuery {
  bbox?: string;
  minzoom?: string;
  maxzoom?: string;
  since?: string;
}

/** A whole zoom from a query parameter, or a 400 naming it. */
function zoomParam(v: string | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (v.trim() === '' || !Number.isInteger(n) || n < 0 || n > 26) throw new HttpError(HttpStatus.BadRequest, `${name}: expected a whole zoom 0–26 (got "${v}")`);
  return n;
}

/** The area of `bbox=`, or a 400. */
function areaParam(bbox: string | undefined): Area {
  if (bbox === undefined) throw new HttpError(HttpStatus.BadRequest, 'bbox: required (west,south,east,north in degrees)');
  try {
    return areaOfBBox(parseBBox(bbox, 'bbox'));
  } catch (e) {
    throw new HttpError(HttpStatus.BadRequest, (e as Error).message);
  }
}

/** Register the pack routes. */
export async function registerPackRoutes(app: FastifyInstance, ctx: ServerContext): Promise<void> {
  const max = ctx.options.maxPackTiles ?? DEFAULT_MAX_PACK_TILES;
  if (!(Number.isInteger(max) && max >= 1)) throw new UserError(`--max-pack-tiles: expected a whole number of tiles >= 1 (got ${max})`, { exitCode: 2 });
  const names = () => allPackSources(ctx.manifest).map((s) => `/packs/${s.name}.pmtiles`);

  const answer = async (req: FastifyRequest<{ Querystring: PackQuery }>, reply: FastifyReply, name: string): Promise<FastifyReply> => {
    if (name.endsWith('.mbtiles')) {
      throw new HttpError(HttpStatus.BadRequest, `an MBTiles file is an SQLite database, which cannot be sent while it is made: ask for /packs/${name.slice(0, -'.mbtiles'.length)}.pmtiles (or make MBTiles with \`tilebake pack --format mbtiles\`)`);
    }
    if (!name.endsWith('.pmtiles')) throw new HttpError(HttpStatus.NotFound, `pack "${name}": expected {name}.pmtiles`, { packs: names() });
    const source = packSourceNamed(ctx.manifest, name.slice(0, -'.pmtiles'.length));
    if (!source) throw new HttpError(HttpStatus.NotFound, `no pack named "${name}" in this build`, { packs: names() });
    const q = req.query;
    const area = areaParam(q.bbox);
    const minzoom = zoomParam(q.minzoom, 'minzoom');
    const maxzoom = zoomParam(q.maxzoom, 'maxzoom');
    if (minzoom !== undefined && maxzoom !== undefined && minzoom > maxzoom) throw new HttpError(HttpStatus.BadRequest, `minzoom ${minzoom} is above maxzoom ${maxzoom}`);
    const version: PackVersion = { store: ctx.store, manifest: ctx.manifest, build: ctx.build };
    let older: PackVersion | undefined;
    if (q.since !== undefined) {
      if (!ctx.root) throw new HttpError(HttpStatus.NotFound, 'since: this server serves one version only');
      if (q.since === version.build) throw new HttpError(HttpStatus.BadRequest, `since: ${q.since} is the version served; a delta needs an older one`);
      const o = await openVersion(ctx.root, q.since, 'since').catch((e: unknown) => {
        // Not kept (the message names the kept versions): gone.
        throw isUserError(e) ? new HttpError(HttpStatus.NotFound, e.message) : e;
      });
      older = { ...o, build: q.since };
    }
    let plan: PackPlan;
    try {
      plan = await planPack(version, source, { area, minzoom, maxzoom, names: { area: 'bbox', minzoom: 'minzoom', maxzoom: 'maxzoom', since: 'since' } }, older);
    } catch (e) {
      throw e instanceof PackInputError ? new HttpError(HttpStatus.BadRequest, e.message) : e;
    }
    let sending = false;
    try {
      const layout = planPmtiles(plan.content, packWriterOptions(plan));
      const estimate = { tiles: plan.content.tiles, bytes: layout.result.bytes };
      if (estimate.tiles > max) {
        throw new HttpError(HttpStatus.BadRequest, `a pack of ${estimate.tiles} tiles is over this server's limit of ${max} (--max-pack-tiles): ask for a smaller area or fewer zooms`, { estimate, limit: max });
      }
      const refused = await reservePackTiles(req, estimate.tiles, estimate);
      if (refused) throw refused;
      notePackTiles(req, estimate.tiles);
      const file = packFileName({ name: `${source.name}${plan.delta ? `-since-${plan.delta.since}` : ''}` }, 'pmtiles');
      reply
        .header('content-type', PMTILES_TYPE)
        .header('content-length', String(layout.result.bytes))
        .header('content-disposition', `attachment; filename="${file}"`)
        .header('cache-control', ctx.cache.metadata)
        .header('x-tilebake-build', plan.extent.build ?? '')
        .header('x-tilebake-pack-tiles', String(estimate.tiles));
      if (ctx.cache.metadataVary) appendVary(reply, ctx.cache.metadataVary);
      const stream = Readable.from(coalesce(pmtilesBytes(layout, plan.reader), SEND_CHUNK_BYTES), { objectMode: false });
      const done = () => void plan.close();
      stream.once('close', done);
      sending = true;
      return reply.send(stream);
    } finally {
      if (!sending) await plan.close();
    }
  };

  app.get<{ Params: { file: string }; Querystring: PackQuery }>('/packs/:file', (req, reply) => answer(req, reply, req.params.file));
  app.get<{ Params: { file: string }; Querystring: PackQuery }>('/packs/styles/:file', (req, reply) => answer(req, reply, `styles/${req.params.file}`));
}
