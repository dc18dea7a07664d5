/**
 * `?language=xx` on style routes: the parameter read and checked (a malformed code is a 400), the
 * languages a style's tiles carry (`style.json?language=` rewrites the style for any of them), and
 * the baked variants of a style (style entries from the same style file with `"language"` set), which
 * answer `rendered.json?language=` and static maps' `?language=`.
 */
import { isLanguageCode, LANGUAGE_CODE_HINT } from '../../lib/languages.ts';
import type { StyleEntry } from '../../lib/manifest.ts';
import { HttpError } from '../../lib/http-error.ts';
import { HttpStatus } from '../../lib/http-status.ts';

/** The query parameter. */
export const LANGUAGE_PARAM = 'language';

/** `?language=` of a query: undefined when absent; a 400 when empty, repeated or malformed. */
export function queryLanguage(query: unknown): string | undefined {
  const raw = (query as Record<string, unknown> | undefined)?.[LANGUAGE_PARAM];
  if (raw === undefined) return undefined;
  if (Array.isArray(raw)) throw new HttpError(HttpStatus.BadRequest, `${LANGUAGE_PARAM}: given ${raw.length} times`);
  if (!isLanguageCode(raw)) throw new HttpError(HttpStatus.BadRequest, `${LANGUAGE_PARAM}: ${JSON.stringify(raw)} is not ${LANGUAGE_CODE_HINT}`);
  return raw;
}

/** A 400 unless style `id`'s tiles carry `language`. */
export function checkCarried(id: string, entry: StyleEntry, language: string): void {
  const carried = entry.languages ?? [];
  if (carried.includes(language)) return;
  const has = carried.length ? `its tiles carry ${carried.join(', ')}` : 'its tiles carry no name:xx fields';
  throw new HttpError(HttpStatus.BadRequest, `style "${id}" has no labels in "${language}" (${has})`, { languages: carried });
}

/** The baked language variants of style `id`, by language: entries with its style file and a `language`. */
export function bakedLanguages(styles: Record<string, StyleEntry>, id: string): Record<string, string> {
  const file = styles[id]?.styleFile;
  const out: Record<string, string> = {};
  if (file === undefined) return out;
  for (const [other, e] of Object.entries(styles).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (e.styleFile === file && e.language !== undefined && !(e.language in out)) out[e.language] = other;
  }
  return out;
}

/**
 * The style whose raster tiles show `language`'s labels: `id` itself when baked in it, else its baked
 * variant; a 400 naming the baked ones when there is none.
 */
export function bakedVariant(styles: Record<string, StyleEntry>, id: string, language: string): { id: string; entry: StyleEntry } {
  const own = styles[id];
  if (own?.language === language) return { id, entry: own };
  const baked = bakedLanguages(styles, id);
  const variant = baked[language];
  if (variant !== undefined) return { id: variant, entry: styles[variant] };
  const list = Object.entries(baked).map(([l, s]) => `${l} (${s})`);
  throw new HttpError(
    HttpStatus.BadRequest,
    `style "${id}" has no raster tiles baked in "${language}"; baked: ${list.join(', ') || 'none'} (a style entry with its style file and "language" bakes one; style.json?language= draws any language its tiles carry)`,
    { baked },
  );
}
