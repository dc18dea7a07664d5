/**
 * Font stacks for MapLibre: the glyph PBF of a comma-separated stack and a 256-codepoint range,
 * each codepoint from the first font of the stack that has it (the build's fonts folder holds one
 * folder of range files per font). Used by the server's /fonts route and the render page's host.
 */
import { posix } from 'node:path';
import { BoundedCache } from '../bounded-cache.ts';
import { HttpError } from '../http-error.ts';
import { HttpStatus } from '../http-status.ts';
import type { Store } from '../storage.ts';
import { combineGlyphs, encodeGlyphs } from './glyph-pbf.ts';

/** Codepoints per glyph PBF file. */
export const GLYPH_RANGE_SIZE = 256;
/** Highest codepoint MapLibre asks glyph PBFs for (the Basic Multilingual Plane). */
export const MAX_GLYPH_CODEPOINT = 0xffff;
/** Most fonts accepted in one comma-separated font stack. */
export const MAX_FONTS_PER_STACK = 16;
/** A file every font folder has: proves a font exists when it lacks the asked range. */
const PROBE_RANGE = `0-${GLYPH_RANGE_SIZE - 1}`;
/** Rough per-entry overhead accounted in the caches (key, map slot, object). */
const ENTRY_OVERHEAD_BYTES = 64;

/** A glyph range `start-end` checked to be 256-aligned: `start` a multiple of 256, `end = start + 255`. */
export function parseGlyphRange(text: string): { start: number; end: number; name: string } {
  const m = /^(\d{1,5})-(\d{1,5})$/.exec(text);
  const start = m ? Number(m[1]) : NaN;
  const end = m ? Number(m[2]) : NaN;
  if (!m || start % GLYPH_RANGE_SIZE !== 0 || end !== start + GLYPH_RANGE_SIZE - 1 || end > MAX_GLYPH_CODEPOINT) {
    throw new HttpError(
      HttpStatus.BadRequest,
      `glyph range "${text}": expected <start>-<start+${GLYPH_RANGE_SIZE - 1}> with start a multiple of ${GLYPH_RANGE_SIZE}, up to ${MAX_GLYPH_CODEPOINT}`,
    );
  }
  return { start, end, name: `${start}-${end}` };
}

/** The font names of a comma-separated stack, each checked to be a plain folder name. */
export function parseFontStack(text: string): string[] {
  const fonts = text.split(',').map((f) => f.trim());
  if (fonts.length > MAX_FONTS_PER_STACK) {
    throw new HttpError(HttpStatus.BadRequest, `font stack: at most ${MAX_FONTS_PER_STACK} fonts, got ${fonts.length}`);
  }
  for (const f of fonts) {
    if (f === '' || f === '.' || f === '..' || /[/\\\0]/.test(f)) {
      throw new HttpError(HttpStatus.BadRequest, `font stack "${text}": font name "${f}" is empty or not a plain name`);
    }
  }
  return fonts;
}

/**
 * Glyph PBFs for font stacks from the build's fonts folder: each codepoint comes from the first
 * font of the stack that has it. Raw files and combined results are cached (bounded); `wrap` turns
 * a combined PBF into what is cached and returned (the server adds its ETag).
 */
export class FontService<T extends { bytes: Uint8Array } = { bytes: Uint8Array }> {
  /** Raw glyph files of single fonts, and combined font stacks (their `entries` are watched by the metrics). */
  readonly files: BoundedCache<Uint8Array | null>;
  readonly combined: BoundedCache<T>;

  constructor(
    private readonly store: Store,
    private readonly dir: string,
    cacheBytes: number,
    private readonly wrap: (bytes: Uint8Array) => T = (bytes) => ({ bytes }) as T,
  ) {
    this.files = new BoundedCache(cacheBytes / 2, (v) => (v ? v.byteLength : 0) + ENTRY_OVERHEAD_BYTES);
    this.combined = new BoundedCache(cacheBytes / 2, (v) => v.bytes.byteLength + ENTRY_OVERHEAD_BYTES);
  }

  /**
   * The glyph PBF (wrapped) for `fontstack` (comma-separated) and `range` (`start-end`).
   * Throws HttpError 400 for a bad range or name, 404 when no font of the stack exists.
   * Fonts that exist but lack this range contribute nothing (an empty stack is valid PBF).
   */
  async glyphs(fontstack: string, range: string): Promise<T> {
    const r = parseGlyphRange(range);
    const fonts = parseFontStack(fontstack);
    const key = `${fonts.join(',')}/${r.name}`;
    return this.combined.getOrLoad(key, async () => {
      const parts = await Promise.all(fonts.map((f) => this.file(f, r.name)));
      const found = parts.filter((p): p is Uint8Array => p !== null);
      if (found.length === 0) {
        const exists = await Promise.all(fonts.map((f) => this.file(f, PROBE_RANGE)));
        if (exists.every((p) => p === null)) {
          throw new HttpError(HttpStatus.NotFound, `font stack "${fonts.join(',')}": none of its fonts is in the build (${fonts.join(', ')})`);
        }
        return this.wrap(encodeGlyphs([{ name: fonts.join(','), range: r.name, glyphs: [] }]));
      }
      if (found.length === 1 && fonts.length === 1) return this.wrap(found[0]!);
      return this.wrap(combineGlyphs(found, fonts.join(','), r.name));
    });
  }

  private file(font: string, range: string): Promise<Uint8Array | null> {
    const rel = posix.join(this.dir, font, `${range}.pbf`);
    return this.files.getOrLoad(rel, async () => (await this.store.readFile(rel)) ?? null);
  }
}
