/**
 * Label languages: the `name:xx` fields of OpenMapTiles-schema tiles. What a language code looks like,
 * the list an OSM tileset writes by default, and which languages a tileset's tiles carry (its TileJSON
 * `vector_layers` fields). `name:latin` and `name:nonlatin` are scripts, not languages: never listed.
 */

/**
 * The languages OpenMapTiles writes (its openmaptiles.yaml `languages`, July 2026), the default of an
 * OSM tileset's `languages`: ISO 639 codes, some with a script or form after `-` or `_` as OSM tags them.
 */
export const DEFAULT_LANGUAGES: readonly string[] = Object.freeze([
  'af', 'am', 'ar', 'az', 'be', 'bg', 'bn', 'br', 'bs', 'ca', 'co', 'cs', 'cy', 'da', 'de', 'el',
  'en', 'eo', 'es', 'et', 'eu', 'fa', 'fi', 'fr', 'fy', 'ga', 'gd', 'he', 'hi', 'hr', 'hu', 'hy',
  'id', 'is', 'it', 'ja', 'ja-Hira', 'ja-Latn', 'ja_kana', 'ja_rm', 'ka', 'kk', 'kn', 'ko', 'ko-Latn', 'ku',
  'la', 'lb', 'lt', 'lv', 'mk', 'ml', 'mt', 'nl', 'no', 'oc', 'pa', 'pl', 'pnb', 'pt', 'rm', 'ro',
  'ru', 'sk', 'sl', 'sq', 'sr', 'sr-Latn', 'sv', 'ta', 'te', 'th', 'tok', 'tr', 'uk', 'ur', 'vi', 'zh',
  'zh-Hans', 'zh-Hant',
]);

/**
 * A language code as OSM's `name:xx` keys use them: 2–3 lowercase letters (ISO 639), then optional
 * subtags of 2–8 letters or digits after `-` or `_` (`zh-Hant`, `sr-Latn`, `ja_kana`), 35 characters at most.
 */
const LANGUAGE_CODE = /^[a-z]{2,3}(?:[-_][A-Za-z0-9]{2,8}){0,3}$/;

/** What a code must look like, for error messages. */
export const LANGUAGE_CODE_HINT = 'a language code as in name:xx: 2-3 lowercase letters, optionally a script or form after "-" or "_" (de, zh-Hant, ja_kana)';

/** True for a well-formed language code (see LANGUAGE_CODE). */
export function isLanguageCode(code: unknown): code is string {
  return typeof code === 'string' && LANGUAGE_CODE.test(code);
}

/** The field of language `code`: `name:code`. */
export function nameField(code: string): string {
  return `name:${code}`;
}

const NAME_PREFIX = 'name:';

/** The languages whose `name:xx` field a TileJSON `vector_layers` list names in any layer, sorted. */
export function languagesOfLayers(vectorLayers: readonly unknown[] | undefined): string[] {
  const found = new Set<string>();
  for (const layer of vectorLayers ?? []) {
    const fields = (layer as { fields?: unknown } | null)?.fields;
    if (typeof fields !== 'object' || fields === null) continue;
    for (const key of Object.keys(fields)) {
      if (!key.startsWith(NAME_PREFIX)) continue;
      const code = key.slice(NAME_PREFIX.length);
      if (isLanguageCode(code)) found.add(code);
    }
  }
  return [...found].sort();
}
