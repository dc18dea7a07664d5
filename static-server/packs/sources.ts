/**
 * What a pack is made of: a build's archives by the names packs give them (the tileset id, `{tileset}@2x`
 * for a raster tileset's 512 px tiles, or `styles/{style}[@2x].{format}` as in the HTTP form), and each pack archive's metadata (TileJSON
 * fields, the build, the area's bounds and zooms). `tilebake pack` (export/pack.ts) and `GET /packs/…`
 * (routes/packs.ts) share this, so a pack has the same name and metadata from either.
 */
import { tilesetArchive, tilesetMaxzoom, tilesetScales, type Manifest, type StyleEntry, type TilesetEntry } from '../../lib/manifest.ts';
import { PACK_KEY, type PackOf } from '../../lib/packs/apply.ts';
import { tileJson } from '../../lib/tilejson.ts';
import { centerInBounds, type BBox } from '../../lib/tile-math.ts';
import { TILE_SIZE } from '../../lib/metatiles.ts';
import { rasterTileJson } from '../styles/raster-tilejson.ts';

/** One archive of a build a pack can be cut from. */
export interface PackSource {
  kind: 'tileset' | 'style';
  /** Tileset or style id. */
  id: string;
  /** The archive, relative to the build. */
  archive: string;
  /** Tile format (`pbf`, `png`, `jpg`, `webp`). */
  format: string;
  /** Raster styles and raster tilesets: 1 or 2. */
  scale?: number;
  /** The pack's name: `{tileset}`, `{tileset}@2x` or `styles/{style}[@2x].{format}` (the file is this with `/` as `-` plus `.pmtiles`/`.mbtiles`). */
  name: string;
  tileset?: TilesetEntry;
  style?: StyleEntry;
}

/** What a pack request selects (absent: everything of that kind; with only one kind given, none of the other). */
export interface PackSelection {
  tilesets?: string[];
  styles?: string[];
  scales?: number[];
  formats?: string[];
}

function styleSources(id: string, style: StyleEntry): PackSource[] {
  return Object.values(style.archives)
    .map((a) => ({ kind: 'style' as const, id, archive: a.archive, format: a.format as string, scale: a.scale, name: `styles/${id}${a.scale === 2 ? '@2x' : ''}.${a.format}`, style }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** A tileset's archives: its tiles, and a raster tileset's @2x tiles as `{id}@2x`. */
function tilesetSources(id: string, t: TilesetEntry): PackSource[] {
  if (t.kind !== 'raster') return [{ kind: 'tileset', id, archive: t.archive, format: t.format, name: id, tileset: t }];
  return tilesetScales(t).map((scale) => ({ kind: 'tileset', id, archive: tilesetArchive(t, scale)!, format: t.format, scale, name: scale === 2 ? `${id}@2x` : id, tileset: t }));
}

/** Every archive a pack can be cut from, tilesets first. */
export function allPackSources(m: Manifest): PackSource[] {
  const out: PackSource[] = Object.entries(m.tilesets).flatMap(([id, t]) => tilesetSources(id, t));
  for (const [id, s] of Object.entries(m.styles)) out.push(...styleSources(id, s));
  return out;
}

/** The archive a pack name (`omt`, `styles/osm-bright@2x.png`) stands for, or undefined. */
export function packSourceNamed(m: Manifest, name: string): PackSource | undefined {
  return allPackSources(m).find((s) => s.name === name);
}

/** The file name of a pack archive: its name with `/` as `-`, and the container's extension. */
export function packFileName(s: Pick<PackSource, 'name'>, container: 'pmtiles' | 'mbtiles'): string {
  return `${s.name.replace(/\//g, '-')}.${container}`;
}

/**
 * The archives `sel` picks. Unknown ids, scales or formats are named in `problem` (what the caller
 * turns into its own error), with what there is.
 */
export function selectPackSources(m: Manifest, sel: PackSelection): { sources: PackSource[]; problem?: string } {
  const tilesetIds = Object.keys(m.tilesets);
  const styleIds = Object.keys(m.styles);
  for (const [given, known, what] of [[sel.tilesets, tilesetIds, 'tileset'], [sel.styles, styleIds, 'style']] as const) {
    const unknown = (given ?? []).filter((id) => !known.includes(id));
    if (unknown.length) return { sources: [], problem: `unknown ${what}${unknown.length > 1 ? 's' : ''} ${unknown.map((u) => `"${u}"`).join(', ')} (the build has ${known.length ? known.join(', ') : 'none'})` };
  }
  const both = sel.tilesets === undefined && sel.styles === undefined;
  const tilesets = both ? tilesetIds : (sel.tilesets ?? []);
  const styles = both ? styleIds : (sel.styles ?? []);
  const sources = allPackSources(m).filter(
    (s) =>
      (s.kind === 'tileset' ? tilesets.includes(s.id) : styles.includes(s.id)) &&
      (s.scale === undefined || sel.scales === undefined || sel.scales.includes(s.scale)) &&
      (sel.formats === undefined || s.kind === 'tileset' || sel.formats.includes(s.format)),
  );
  if (sources.length === 0) return { sources, problem: 'nothing to pack: the selection names no archive of the build (see --tilesets, --styles, --scales, --formats)' };
  return { sources };
}

/** The area and zooms of one pack archive, and the build it is of. */
export interface PackExtent {
  build: string | undefined;
  bounds: BBox;
  minzoom: number;
  maxzoom: number;
}

/** The source's zoom range and bounds. */
export function sourceExtent(s: PackSource): { minzoom: number; maxzoom: number; bounds: BBox; center: [number, number, number]; world_maxzoom?: number; region?: BBox } {
  const e = (s.tileset ?? s.style)!;
  const maxzoom = s.tileset ? tilesetMaxzoom(s.tileset, s.scale === 2 ? 2 : 1) : e.maxzoom;
  return { minzoom: e.minzoom, maxzoom, bounds: e.bounds, center: e.center, world_maxzoom: e.world_maxzoom, region: e.region };
}

/**
 * The metadata of a pack archive: the source's TileJSON (lib/tilejson.ts, or the raster TileJSON of
 * a style) without tile URLs, with the pack's bounds, zooms and centre, and `tilebake: { build, source,
 * area }` (`area`: an id of the area asked for, which a delta's older pack must share).
 */
export function packMetadata(s: PackSource, x: PackExtent, area: string): Record<string, unknown> {
  let doc: Record<string, unknown>;
  if (s.tileset) {
    doc = tileJson(s.id, s.tileset, '');
    delete doc.tiles_2x;
    delete doc.maxzoom_2x;
    // A raster tileset's @2x archive: the same tiles at 512 px.
    if (s.scale === 2) doc.tileSize = TILE_SIZE * 2;
  } else {
    doc = rasterTileJson(s.id, s.style!, '');
    for (const k of ['tiles_2x', 'built', 'maxzoom_served', 'overzoom']) delete doc[k];
    doc.description = `Raster tiles of style "${s.id}", ${TILE_SIZE * s.scale!} px (${s.scale}x), ${s.format}`;
    doc.format = s.format;
    doc.tileSize = TILE_SIZE * s.scale!;
  }
  delete doc.tiles;
  const center = centerInBounds(x.bounds, sourceExtent(s).center, x.minzoom, x.maxzoom);
  const of: PackOf = { ...(x.build !== undefined ? { build: x.build } : {}), source: s.name, area };
  return { ...doc, minzoom: x.minzoom, maxzoom: x.maxzoom, bounds: x.bounds, center, [PACK_KEY]: of };
}
