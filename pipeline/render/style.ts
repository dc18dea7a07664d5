import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { validateStyleMin } from '@maplibre/maplibre-gl-style-spec';
import { UserError } from '../../lib/errors.ts';
import { languagesOfLayers } from '../../lib/languages.ts';
import { localizeStyle } from '../../lib/style-language.ts';
import { writeFileAtomic } from '../../lib/atomic.ts';
import { RASTER_TILE_SIZE, type TilesetEntry } from '../../lib/manifest.ts';
import { NEUTRAL_PREFIX } from '../../lib/style-urls.ts';
import { prepareSprite, type SpriteFolder } from './sprite.ts';

/** A style ready to render: its neutral JSON (tilebake:// URLs) and what it needs. */
export interface PreparedStyle {
  id: string;
  /** The prepared style object (neutral URLs). */
  style: Record<string, unknown> & { sources: Record<string, Record<string, unknown>>; layers: Record<string, unknown>[] };
  /** Tileset ids the style's sources use. */
  tilesets: string[];
  /** True when sprites were copied to `<out>/styles/<id>/sprite*`. */
  sprite: boolean;
  /** True when the style uses glyphs (the fonts folder must be copied). */
  glyphs: boolean;
  name?: string;
  /** The label languages its vector tilesets carry (their `name:xx` fields), sorted. */
  languages: string[];
}

type Json = Record<string, unknown>;

/** Turn validator messages `layers[3].paint.x: …` into `layer "roads" (layers[3]).paint.x: …`. */
function describeValidation(style: Json, messages: string[]): string[] {
  const layers = Array.isArray(style.layers) ? (style.layers as Json[]) : [];
  return messages.map((msg) =>
    msg.replace(/^layers\[(\d+)\]/, (all, i: string) => {
      const id = layers[Number(i)]?.id;
      return typeof id === 'string' ? `layer "${id}" (${all})` : all;
    }),
  );
}

/** The name inside `mbtiles://{v3}`, `pmtiles://foo.pmtiles`, `http://host/data/foo.json`. */
function sourceName(url: string): string {
  const noScheme = url.replace(/^[a-z]+:\/\//i, '').replace(/[?#].*$/, '');
  const last = noScheme.split('/').filter(Boolean).pop() ?? '';
  return last.replace(/^\{(.*)\}$/, '$1').replace(/\.(json|pmtiles|mbtiles)$/i, '');
}

/** Pick the tileset a source resolves to, or throw naming the source. */
function resolveSource(
  file: string,
  sourceId: string,
  src: Json,
  tilesets: Record<string, Pick<TilesetEntry, 'kind'>>,
  defaultTileset: string,
): string {
  const type = src.type;
  const url = typeof src.url === 'string' ? src.url : Array.isArray(src.tiles) ? String(src.tiles[0]) : undefined;
  if (!url) throw new UserError(`${file}: sources.${sourceId}: expected "url" or "tiles" (a configured tileset)`);
  const name = sourceName(url);
  if (type === 'vector') {
    if (tilesets[name]?.kind === 'vector') return name;
    if (tilesets[defaultTileset]?.kind === 'vector') return defaultTileset;
    throw new UserError(`${file}: sources.${sourceId}: tileset "${defaultTileset}" (from ${url}) has not been built (run the vector stage)`);
  }
  if (type === 'raster-dem') {
    if (tilesets[name]?.kind === 'terrain') return name;
    const terrain = Object.keys(tilesets).filter((k) => tilesets[k].kind === 'terrain');
    if (terrain.length === 1) return terrain[0];
    throw new UserError(`${file}: sources.${sourceId}: ${url} is not available locally (no terrain tileset "${name}" was built)`);
  }
  if (type === 'raster') {
    if (tilesets[name]?.kind === 'raster') return name;
    const raster = Object.keys(tilesets).filter((k) => tilesets[k].kind === 'raster');
    if (raster.length === 1) return raster[0];
    const built = raster.length ? `the raster tilesets are ${raster.join(', ')}` : 'no raster tileset was built';
    throw new UserError(`${file}: sources.${sourceId}: ${url} is not available locally (no raster tileset "${name}": ${built}; name one as mbtiles://{id}, pmtiles://{id}.pmtiles or …/data/{id}.json)`);
  }
  throw new UserError(`${file}: sources.${sourceId}: ${url} is not available locally (only vector, raster and raster-dem sources of built tilesets can be rendered)`);
}

/**
 * The raster tilesets the raster sources of style `file` resolve to, as prepareStyle resolves them, from
 * the tilesets' kinds alone (before they are built: a distributed run's plan builds these itself). A
 * style that cannot be read or resolved gives none here: preparing it later says what is wrong.
 */
export async function rasterTilesetsOf(file: string, tilesets: Record<string, Pick<TilesetEntry, 'kind'>>): Promise<string[]> {
  let style: Json;
  try {
    style = JSON.parse(await readFile(file, 'utf8')) as Json;
  } catch {
    return [];
  }
  const out = new Set<string>();
  for (const [sid, src] of Object.entries((style.sources ?? {}) as Record<string, Json>)) {
    if (src.type !== 'raster') continue;
    try {
      out.add(resolveSource(file, sid, src, tilesets, ''));
    } catch {
      // Not resolvable: prepareStyle names it.
    }
  }
  return [...out];
}

/** True when a layer shows text (so glyphs are requested). */
function usesGlyphs(style: Json): boolean {
  return ((style.layers as Json[]) ?? []).some((l) => l.type === 'symbol' && (l.layout as Json | undefined)?.['text-field'] !== undefined);
}

/**
 * Load, validate and prepare style `id` from `file`: sources (vector, raster-dem, and raster sources of
 * raster tilesets: imagery, hillshade) → `tilebake://data/<tileset>.json`,
 * sprite → `tilebake://styles/<id>/sprite` (files copied or made from SVG icons into `<out>/styles/<id>/`,
 * pipeline/render/sprite.ts), glyphs →
 * `tilebake://fonts/{fontstack}/{range}.pbf`. Writes `<out>/styles/<id>/style.json`.
 */
export async function prepareStyle(
  id: string,
  file: string,
  outDir: string,
  opts: {
    tilesets: Record<string, TilesetEntry>;
    defaultTileset: string;
    fonts?: string;
    scales: number[];
    /** Bake labels in this language (lib/style-language.ts); `field` names where it was configured, for messages. */
    language?: { code: string; field: string };
    /** The style entry's `"sprite"`: a folder of SVG icons replacing or extending the style's sheet (pipeline/render/sprite.ts); `field` for messages. */
    sprite?: { folder: SpriteFolder; field: string };
  },
): Promise<PreparedStyle> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new UserError(`${file}: cannot read style (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  let style: Json;
  try {
    style = JSON.parse(text) as Json;
  } catch (e) {
    throw new UserError(`${file}: not valid JSON (${(e as Error).message})`);
  }
  const errors = validateStyleMin(style as never).filter((e) => (e as { severity?: string }).severity !== 'warning').map((e) => e.message);
  if (errors.length) throw new UserError(`${file}: invalid style\n  ${describeValidation(style, errors).join('\n  ')}`);

  const styleDir = join(outDir, 'styles', id);
  await mkdir(styleDir, { recursive: true });
  const sources = style.sources as Record<string, Json>;
  const used = new Set<string>();
  for (const [sid, src] of Object.entries(sources)) {
    if (src.type === 'geojson' && typeof src.data !== 'string') continue;
    if (src.type === 'geojson') throw new UserError(`${file}: sources.${sid}: ${String(src.data)} is not available locally (inline the GeoJSON data)`);
    const tileset = resolveSource(file, sid, src, opts.tilesets, opts.defaultTileset);
    used.add(tileset);
    const entry = opts.tilesets[tileset];
    const next: Json = { ...src, url: `${NEUTRAL_PREFIX}data/${tileset}.json` };
    delete next.tiles;
    if (src.type === 'raster-dem' && next.encoding === undefined && entry.encoding) next.encoding = entry.encoding;
    // MapLibre's default raster tile size is 512 CSS px; a raster tileset's tiles are drawn at their own (256).
    if (src.type === 'raster' && next.tileSize === undefined) next.tileSize = entry.tileSize ?? RASTER_TILE_SIZE;
    sources[sid] = next;
  }

  const sprite = await prepareSprite(file, style.sprite, styleDir, { scales: opts.scales, folder: opts.sprite?.folder, field: opts.sprite?.field });
  if (sprite) style.sprite = `${NEUTRAL_PREFIX}styles/${id}/sprite`;

  const glyphs = typeof style.glyphs === 'string' && usesGlyphs(style);
  if (typeof style.glyphs === 'string') {
    if (glyphs && !opts.fonts) throw new UserError(`${file}: glyphs: ${style.glyphs} is not available locally (set "fonts" in the config to a folder of <fontstack>/<range>.pbf)`);
    style.glyphs = `${NEUTRAL_PREFIX}fonts/{fontstack}/{range}.pbf`;
  }

  const languages = [...new Set([...used].flatMap((t) => languagesOfLayers(opts.tilesets[t].vector_layers)))].sort();
  if (opts.language) style = localize(file, style, opts.language, languages, [...used]);

  await writeFileAtomic(join(styleDir, 'style.json'), `${JSON.stringify(style, null, 2)}\n`);
  return {
    id,
    style: style as PreparedStyle['style'],
    tilesets: [...used],
    sprite,
    glyphs,
    name: typeof style.name === 'string' ? style.name : undefined,
    languages,
  };
}

/** `style` with its labels in `language` (lib/style-language.ts), checked: the tiles carry it, and the rewrite is a valid style. */
function localize(file: string, style: Json, language: { code: string; field: string }, carried: string[], tilesets: string[]): Json {
  if (!carried.includes(language.code)) {
    const has = carried.length ? `they carry ${carried.join(', ')}` : 'they carry no name:xx fields';
    throw new UserError(`${language.field}: the tiles of ${tilesets.map((t) => `tileset "${t}"`).join(', ') || 'no vector tileset'} have no name:${language.code} (${has})`);
  }
  const localized = localizeStyle(style, language.code);
  const errors = validateStyleMin(localized as never).filter((e) => (e as { severity?: string }).severity !== 'warning').map((e) => e.message);
  if (errors.length) throw new UserError(`${file}: its labels cannot be read in "${language.code}" (${language.field})\n  ${describeValidation(localized, errors).join('\n  ')}`);
  return localized;
}
