import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import type { TilesetEntry } from '../../lib/manifest.ts';

/** The neutral URL prefix of prepared styles; replaced by the server's base URL. */
export const NEUTRAL_PREFIX = 'tilebake://';

/** Reads stored tile bytes (as in the archive: gzip for MVT). */
export interface TileReader {
  getTile(z: number, x: number, y: number): Promise<Uint8Array | undefined> | Uint8Array | undefined;
}

/** A tileset the page may load: its manifest entry, compression of stored tiles and a reader. */
export interface LocalTileset {
  entry: TilesetEntry;
  gzip: boolean;
  reader: TileReader;
}

const PAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'workers', 'page');
const MAPLIBRE_DIR = dirname(createRequire(import.meta.url).resolve('maplibre-gl/dist/maplibre-gl.mjs'));

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.map': 'application/json',
  '.css': 'text/css',
  '.json': 'application/json',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.webp': 'image/webp',
  '.pbf': 'application/x-protobuf',
};

enum Status {
  Ok = 200,
  NoContent = 204,
  NotFound = 404,
  PayloadTooLarge = 413,
  ServerError = 500,
}

/** The pixels of a canvas a render page uploaded, with the canvas size it reported. */
export interface UploadedImage {
  body: Buffer;
  width: number;
  height: number;
}

/** An image upload the server waits for: at most `maxBytes`; handed to `onBody` once received. */
interface Upload {
  maxBytes: number;
  onBody: (image: UploadedImage) => void;
  received: boolean;
}

function typeOf(path: string): string {
  const m = /\.[a-z0-9]+$/i.exec(path);
  return (m && TYPES[m[0].toLowerCase()]) || 'application/octet-stream';
}

/** Join `rel` under `root`, refusing `..` escapes. */
function safeJoin(root: string, rel: string): string | undefined {
  const p = normalize(join(root, rel));
  return p === root || p.startsWith(root.endsWith(sep) ? root : root + sep) ? p : undefined;
}

/**
 * The local HTTP server the render page loads everything from (127.0.0.1 only): the page,
 * maplibre-gl's files, prepared styles, sprites, glyphs, TileJSON and tiles of built archives.
 * Any request it cannot answer is recorded in `missing` (and answered 404) so the build can name it.
 */
export class AssetServer {
  /** URLs that were requested but are not available locally. */
  readonly missing = new Set<string>();
  /** Style and sprite paths served so far (diagnostics and tests; tiles and glyphs are not listed). */
  readonly served = new Set<string>();
  private readonly styles = new Map<string, { json: string; dir: string }>();
  private readonly tilesets = new Map<string, LocalTileset>();
  private readonly uploads = new Map<string, Upload>();
  private nextUpload = 0;
  private server?: Server;
  private base = '';

  constructor(private readonly fontsDir?: string) {}

  /** `http://127.0.0.1:<port>/` once started. */
  get baseUrl(): string {
    return this.base;
  }

  /** Start listening on 127.0.0.1 (port 0: any free port). */
  async start(port = 0): Promise<string> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((e) => this.send(res, Status.ServerError, String(e), 'text/plain'));
    });
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, '127.0.0.1', () => resolve());
    });
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/`;
    return this.base;
  }

  /** Stop the server. */
  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /** Serve the prepared (neutral) style JSON of `id`; sprites are read from `dir`. Returns its local URL. */
  addStyle(id: string, neutralJson: string, dir: string): string {
    this.styles.set(id, { json: neutralJson, dir });
    return `${this.base}styles/${encodeURIComponent(id)}/style.json`;
  }

  /** Serve a tileset as `/data/<id>.json` and `/data/<id>/{z}/{x}/{y}.<format>`. */
  addTileset(id: string, tileset: LocalTileset): void {
    this.tilesets.set(id, tileset);
  }

  /**
   * Accept one image upload (POST `<url>?width=&height=`, at most `maxBytes`) from a render page,
   * handed to `onBody` when it arrives; returns its id and URL. The page sends a metatile's pixels
   * straight here, no base64 through the DevTools protocol.
   */
  expectUpload(maxBytes: number, onBody: (image: UploadedImage) => void): { id: string; url: string } {
    const id = String(++this.nextUpload);
    this.uploads.set(id, { maxBytes, onBody, received: false });
    return { id, url: `${this.base}__upload/${id}` };
  }

  /** Stop accepting upload `id` (received or not). */
  forgetUpload(id: string): void {
    this.uploads.delete(id);
  }

  /** Forget what was recorded as missing. */
  clearMissing(): void {
    this.missing.clear();
  }

  private send(res: ServerResponse, status: number, body: string | Uint8Array, type: string, headers: Record<string, string> = {}): void {
    res.writeHead(status, { 'Content-Type': type, 'Access-Control-Allow-Origin': '*', 'Cache-Control': 'no-store', ...headers });
    res.end(body);
  }

  private notFound(res: ServerResponse, url: string): void {
    this.missing.add(url);
    this.send(res, Status.NotFound, JSON.stringify({ error: `not available locally: ${url}`, status: Status.NotFound }), 'application/json');
  }

  private async file(res: ServerResponse, url: string, path: string | undefined): Promise<void> {
    if (!path) return this.notFound(res, url);
    let body: Buffer;
    try {
      body = await readFile(path);
    } catch {
      return this.notFound(res, url);
    }
    this.send(res, Status.Ok, body, typeOf(path));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', this.base);
    const path = decodeURIComponent(u.pathname);
    const full = `${this.base}${path.slice(1)}${u.search}`;
    if (path === '/favicon.ico') return this.send(res, Status.NoContent, '', 'text/plain');
    if (path === '/__blocked') return this.notFound(res, u.searchParams.get('url') ?? full);
    if (path.startsWith('/__upload/')) return this.upload(req, res, path.slice('/__upload/'.length), u.searchParams);
    if (path.startsWith('/page/')) return this.file(res, full, safeJoin(PAGE_DIR, path.slice('/page/'.length)));
    if (path.startsWith('/maplibre/')) return this.file(res, full, safeJoin(MAPLIBRE_DIR, path.slice('/maplibre/'.length)));
    if (path.startsWith('/fonts/') && this.fontsDir) return this.glyphs(res, full, path.slice('/fonts/'.length));
    let m = /^\/styles\/([^/]+)\/(style\.json|sprite(?:@2x)?\.(?:json|png))$/.exec(path);
    if (m) {
      const style = this.styles.get(m[1]);
      if (!style) return this.notFound(res, full);
      this.served.add(path);
      if (m[2] === 'style.json') return this.send(res, Status.Ok, style.json.split(NEUTRAL_PREFIX).join(this.base), TYPES['.json']);
      return this.file(res, full, join(style.dir, m[2]));
    }
    m = /^\/data\/([^/]+)\.json$/.exec(path);
    if (m) return this.tileJson(res, full, m[1]);
    m = /^\/data\/([^/]+)\/(\d+)\/(\d+)\/(\d+)\.([a-z]+)$/.exec(path);
    if (m) return this.tile(res, full, m[1], Number(m[2]), Number(m[3]), Number(m[4]), m[5]);
    return this.notFound(res, full);
  }

  /** `POST /__upload/<id>?width=&height=`: hand the body of an expected upload over. */
  private async upload(req: IncomingMessage, res: ServerResponse, id: string, params: URLSearchParams): Promise<void> {
    const u = this.uploads.get(id);
    const fail = (status: number, error: string) => this.send(res, status, JSON.stringify({ error, status }), TYPES['.json']);
    if (req.method !== 'POST' || !u || u.received) return fail(Status.NotFound, `no upload ${id} is expected`);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > u.maxBytes) return fail(Status.PayloadTooLarge, `upload ${id} is larger than ${u.maxBytes} bytes`);
      chunks.push(chunk);
    }
    u.received = true;
    this.send(res, Status.NoContent, '', 'text/plain');
    u.onBody({ body: Buffer.concat(chunks, size), width: Number(params.get('width')), height: Number(params.get('height')) });
  }

  /** `/fonts/<stack>/<range>.pbf`: the first font of a comma-separated stack that has the range. */
  private async glyphs(res: ServerResponse, url: string, rest: string): Promise<void> {
    const slash = rest.lastIndexOf('/');
    const fonts = rest.slice(0, slash).split(',').map((f) => f.trim());
    const range = rest.slice(slash + 1);
    for (const font of fonts) {
      const p = safeJoin(this.fontsDir!, join(font, range));
      if (!p) continue;
      try {
        return this.send(res, Status.Ok, await readFile(p), TYPES['.pbf']);
      } catch {
        // try the next font of the stack
      }
    }
    return this.notFound(res, url);
  }

  private tileJson(res: ServerResponse, url: string, id: string): void {
    const t = this.tilesets.get(id);
    if (!t) return this.notFound(res, url);
    const e = t.entry;
    const doc = {
      tilejson: '3.0.0',
      name: e.name ?? id,
      attribution: e.attribution,
      scheme: 'xyz',
      tiles: [`${this.base}data/${encodeURIComponent(id)}/{z}/{x}/{y}.${e.format}`],
      minzoom: e.minzoom,
      maxzoom: e.maxzoom,
      bounds: e.bounds,
      center: e.center,
      vector_layers: e.vector_layers,
      encoding: e.encoding,
    };
    this.send(res, Status.Ok, JSON.stringify(doc), TYPES['.json']);
  }

  private async tile(res: ServerResponse, url: string, id: string, z: number, x: number, y: number, ext: string): Promise<void> {
    const t = this.tilesets.get(id);
    if (!t || ext !== t.entry.format) return this.notFound(res, url);
    const bytes = await t.reader.getTile(z, x, y);
    // A tile the archive does not hold is empty (sparse archives), not an error.
    if (!bytes || bytes.length === 0) return this.send(res, Status.NoContent, '', typeOf(`.${ext}`));
    this.send(res, Status.Ok, bytes, typeOf(`.${ext}`), t.gzip ? { 'Content-Encoding': 'gzip' } : {});
  }
}
