/**
 * The export's JSON documents, sprites and glyph ranges, taken from the app of `tilebake serve`
 * (static-server/app.ts) through `inject`: TileJSON, style.json URL rewriting and font-stack merging
 * have one implementation, and the exported bytes are the bytes the server sends.
 */
import type { FastifyInstance } from 'fastify';
import { UserError } from '../lib/errors.ts';
import { HttpStatus } from '../lib/http-status.ts';
import { buildApp } from '../static-server/app.ts';
import { archivesOf } from '../static-server/archives.ts';
import { contextOver } from '../static-server/new-context.ts';
import { useVersionedUrls } from '../static-server/versioned.ts';
import { GLYPH_RANGE_SIZE, MAX_GLYPH_CODEPOINT } from '../lib/glyphs/font-stacks.ts';
import type { BuildToExport } from './build-source.ts';
import type { ExportPart } from './plan.ts';

/** One file of the export produced by the server app. */
export interface ServerFile {
  /** Path in the export (also the URL path without the leading `/`), not URL-encoded. */
  path: string;
  bytes: Buffer;
  part: ExportPart;
  /** TileJSON and style.json: switched after every file they point at is in place. */
  document: boolean;
}

/** The font stack MapLibre uses for a symbol layer with text and no `text-font`. */
const DEFAULT_TEXT_FONT = 'Open Sans Regular,Arial Unicode MS Regular';
/** Memory for the app's caches while exporting, MB. */
const EXPORT_CACHE_MB = 64;
/** Sprite files a style may have. */
const SPRITE_FILES = ['sprite.json', 'sprite.png', 'sprite@2x.json', 'sprite@2x.png'];

/** Collect the font stacks in a `text-font` value: literal arrays, inside expressions or legacy stops. */
function collectStacks(value: unknown, into: Set<string>): void {
  if (Array.isArray(value)) {
    if (value.length > 0 && value.every((v) => typeof v === 'string')) {
      // An expression's operator list such as ["get", "font"] cannot be resolved here; the server 404s it.
      into.add(value.map((f: string) => f.trim()).join(','));
      return;
    }
    for (const v of value) collectStacks(v, into);
  } else if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) collectStacks(v, into);
  }
}

/** The font stacks (comma-joined, as MapLibre asks for them) of a style's symbol layers. */
export function fontStacksOf(style: { layers?: unknown }): string[] {
  const stacks = new Set<string>();
  for (const layer of Array.isArray(style.layers) ? style.layers : []) {
    const l = layer as { type?: string; layout?: Record<string, unknown> };
    if (l.type !== 'symbol') continue;
    const font = l.layout?.['text-font'];
    if (font !== undefined) collectStacks(font, stacks);
    else if (l.layout?.['text-field'] !== undefined) stacks.add(DEFAULT_TEXT_FONT);
  }
  return [...stacks].sort();
}

/** A GET through the app: the body on 200, undefined on 404, a UserError naming the URL otherwise. */
async function get(app: FastifyInstance, url: string): Promise<Buffer | undefined> {
  const res = await app.inject({ method: 'GET', url });
  if (res.statusCode === HttpStatus.Ok) return res.rawPayload;
  if (res.statusCode === HttpStatus.NotFound) return undefined;
  throw new UserError(`export: ${url}: the build answers ${res.statusCode} (${res.body.slice(0, 300)})`);
}

/** What `serverFiles` writes and how. */
export interface ServerFilesOptions {
  publicUrl: string;
  /** Hand out URLs of this build version (`/v/{id}/…`, as `tilebake serve` does); undefined: plain URLs. */
  versionId?: string;
  parts: ReadonlySet<ExportPart>;
  /** Told about font stacks none of whose fonts is in the build (skipped). */
  warn(message: string): void;
}

/**
 * Every document, sprite and glyph range of the build, as `tilebake serve --public-url` answers them
 * (URLs in documents under `/v/{id}/` with `versionId`):
 * `data/{tileset}.json`, `styles/{style}/style.json` (and its alias `styles/{style}.json`),
 * `styles/{style}/rendered.json` (raster TileJSON), `styles/{style}/sprite*`,
 * and `fonts/{stack}/{start}-{end}.pbf` for every range of every stack the styles use.
 */
export async function* serverFiles(build: BuildToExport, opts: ServerFilesOptions): AsyncGenerator<ServerFile> {
  // A static export holds the baked tiles only: its TileJSON must not offer the zooms serve upscales.
  const styles = Object.fromEntries(Object.entries(build.manifest.styles).map(([id, e]) => [id, { ...e, maxzoom_served: e.maxzoom }]));
  const ctx = contextOver(build.store, { ...build.manifest, styles }, {
    out: build.store.location,
    port: 0,
    host: '127.0.0.1',
    publicUrl: opts.publicUrl,
    auth: false,
    cors: '',
    cacheMb: EXPORT_CACHE_MB,
    logLevel: 'silent',
    versionedUrls: opts.versionId !== undefined,
  });
  if (opts.versionId !== undefined) useVersionedUrls(ctx, opts.versionId);
  const app = await buildApp(ctx, { role: 'tiles', tokenHashes: null });
  try {
    const { tilesets, styles } = build.manifest;
    if (opts.parts.has('tilesets')) {
      for (const id of Object.keys(tilesets)) {
        const bytes = await get(app, `/data/${encodeURIComponent(id)}.json`);
        if (bytes) yield { path: `data/${id}.json`, bytes, part: 'tilesets', document: true };
      }
    }
    const stacks = new Set<string>();
    for (const id of Object.keys(styles)) {
      const base = `/styles/${encodeURIComponent(id)}`;
      const style = await get(app, `${base}/style.json`);
      if (!style) continue;
      for (const s of fontStacksOf(JSON.parse(style.toString('utf8')) as { layers?: unknown })) stacks.add(s);
      if (!opts.parts.has('styles')) continue;
      yield { path: `styles/${id}/style.json`, bytes: style, part: 'styles', document: true };
      const alias = await get(app, `${base}.json`);
      if (alias) yield { path: `styles/${id}.json`, bytes: alias, part: 'styles', document: true };
      const tileJson = await get(app, `${base}/rendered.json`);
      if (tileJson) yield { path: `styles/${id}/rendered.json`, bytes: tileJson, part: 'styles', document: true };
      if (!styles[id].sprite) continue;
      for (const f of SPRITE_FILES) {
        const bytes = await get(app, `${base}/${f}`);
        if (bytes) yield { path: `styles/${id}/${f}`, bytes, part: 'styles', document: false };
      }
    }
    if (!opts.parts.has('fonts') || !build.manifest.fonts) return;
    for (const stack of [...stacks].sort()) {
      for (let start = 0; start <= MAX_GLYPH_CODEPOINT; start += GLYPH_RANGE_SIZE) {
        const range = `${start}-${start + GLYPH_RANGE_SIZE - 1}`;
        const bytes = await get(app, `/fonts/${encodeURIComponent(stack)}/${range}.pbf`);
        if (!bytes) {
          opts.warn(`font stack "${stack}": none of its fonts is in the build; its glyphs are not exported`);
          break;
        }
        yield { path: `fonts/${stack}/${range}.pbf`, bytes, part: 'fonts', document: false };
      }
    }
  } finally {
    await app.close();
    await archivesOf(ctx).close();
    ctx.health.failures.close();
  }
}
