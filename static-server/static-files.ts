import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Memo } from '../lib/shared-work.ts';
import { HttpError } from './context.ts';
import { sendTile, tileBody, type TileBody } from './tile-response.ts';
import { HttpStatus } from '../lib/http-status.ts';
import { contentType, PLAIN_NAME } from '../lib/content-types.ts';

/**
 * The files of one folder (flat: plain names only, nothing below it), each read on first use and
 * kept: they belong to the installation (a page, a library's dist) and do not change while serving.
 */
export class StaticFolder {
  /** Files by name (a missing one reads as null, never a failure: kept too). */
  private readonly files = new Memo<string, TileBody | null>();

  constructor(readonly dir: string) {}

  /** The file `name` with its ETag, or null when the folder has no such file or the name is not plain. */
  get(name: string): Promise<TileBody | null> {
    if (!PLAIN_NAME.test(name)) return Promise.resolve(null);
    return this.files.get(name, () =>
      readFile(join(this.dir, name)).then(
        (bytes) => tileBody(bytes),
        () => null,
      ),
    );
  }

  /** Send file `name` (ETag, If-None-Match → 304, `cacheControl`), or throw a JSON 404 naming `what`. */
  async send(req: FastifyRequest, reply: FastifyReply, name: string, what: string, cacheControl: string): Promise<FastifyReply> {
    const body = await this.get(name);
    if (!body) throw new HttpError(HttpStatus.NotFound, `${what} has no file "${name}"`);
    return sendTile(req, reply, body, { contentType: contentType(name), gzip: false, cacheControl });
  }
}
