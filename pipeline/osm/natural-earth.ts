/**
 * Natural Earth at low zooms, as OpenMapTiles has it: oceans, lakes, rivers, glaciers and ice shelves,
 * urban areas, country and state boundaries, country label points and populated places for z0–6 of
 * the whole world (world.ts builds their tiles once per Natural Earth version), and the 10 m ocean
 * outside an extract from z6 on (ocean.ts). The tables live in data/naturalearth/ (FlatGeobuf, see its
 * README).
 *
 * tilemaker 2.2 indexes a shapefile polygon on every tile of its bounding box at its base zoom and
 * clips the whole polygon for each of them, so polygons are cut into tiles first (cut.ts) and written
 * as one shapefile per OMT layer and zoom, which tilemaker runs of a few zooms each turn into tiles
 * (shape-runs.ts).
 */
import { join } from 'node:path';
import { packagePath } from '../../lib/package-root.ts';
import { MAX_LATITUDE, tileBounds, tileRangeForBBox, type BBox } from '../../lib/tile-math.ts';
import { loadGdal } from '../../lib/gdal.ts';
import { cutPolygons, TILE_TAG, type CutFeature, type CutZoom } from './cut.ts';
import { writeShapefile, type Geometry, type Shape, type ShapeAttributes, type ShapeKind } from './shapes.ts';

/** Where the Natural Earth tables are. */
export const NATURAL_EARTH_DIR = packagePath('data', 'naturalearth');
/** The highest zoom whose layers (other than the extract's own places) come from Natural Earth. */
export const NE_MAXZOOM = 6;

/** Degrees a clip area is shrunk by so that tilemaker does not count the tiles beyond its edges. */
const AREA_INSET = 1e-7;

/** The OpenMapTiles layers Natural Earth fills, with the shapefile columns each is written with. */
export const NE_COLUMNS = {
  water: { class: 'string' },
  waterway: { class: 'string', name: 'string' },
  landcover: { class: 'string', subclass: 'string' },
  landuse: { class: 'string' },
  boundary: { admin: 'integer', disputed: 'integer', maritime: 'integer', adm0_l: 'string', adm0_r: 'string' },
  place: { class: 'string', name: 'string', rank: 'integer', capital: 'integer', iso_a2: 'string' },
} as const satisfies Record<string, Record<string, 'string' | 'integer'>>;
export type NeLayer = keyof typeof NE_COLUMNS;
/** TileJSON fields (vector_layers) that only Natural Earth's layers may write (the extract's run does not list them). */
export const NE_FIELDS: Record<string, Record<string, string>> = { boundary: { adm0_l: 'String', adm0_r: 'String' }, place: { iso_a2: 'String' } };

/** One Natural Earth table and what it gives: its features' attributes at zoom z, or undefined to leave one out. */
export interface NeTable {
  file: string;
  layer: NeLayer;
  kind: ShapeKind;
  minzoom: number;
  maxzoom: number;
  attributes: (p: Record<string, unknown>, z: number) => ShapeAttributes | undefined;
  /** Only features outside the extract's tile box (the extract has its own inside). */
  outsideOnly?: boolean;
}

const ocean = () => ({ class: 'ocean' });
const lake = () => ({ class: 'lake' });
const glacier = () => ({ class: 'ice', subclass: 'glacier' });
const num = (v: unknown, fallback: number) => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);
/** The zoom from which OpenMapTiles' country borders carry `adm0_l`/`adm0_r` (its z0–4 borders have none). */
export const ADM0_SIDES_MINZOOM = 5;

/**
 * Country borders: OpenMapTiles' `disputed` is NE's "Disputed (please verify)" feature class; from z4
 * (the 10 m lines) "Lease limit" lines are left out, as OpenMapTiles does. From ADM0_SIDES_MINZOOM,
 * `adm0_l`/`adm0_r` are the NE country codes (adm0_a3, e.g. LIE, CHE) left and right of the line as
 * digitised, the codes OpenMapTiles writes there (from NE 10 m countries).
 */
function admin0(p: Record<string, unknown>, z: number): ShapeAttributes | undefined {
  const cla = String(p.featurecla ?? '');
  if (z >= 4 && cla === 'Lease limit') return undefined;
  const attributes: ShapeAttributes = { admin: 2, disputed: cla.startsWith('Disputed') ? 1 : 0, maritime: 0 };
  if (z >= ADM0_SIDES_MINZOOM) Object.assign(attributes, { adm0_l: String(p.adm0_a3_l ?? ''), adm0_r: String(p.adm0_a3_r ?? '') });
  return attributes;
}
const admin1 = () => ({ admin: 4, disputed: 0, maritime: 0 });

/**
 * OpenMapTiles' country rank: LEAST(6, CEIL((scalerank + labelrank) / 2)) over NE 10 m countries, whose
 * scalerank is 0 for countries (the 110 m table here has labelrank only, see data/naturalearth/README.md).
 */
export const countryRank = (labelrank: number) => Math.min(6, Math.max(1, Math.ceil(labelrank / 2)));

let ranks: Promise<string> | undefined;
/** `countryRank` of every country of the label points table by ISO code, as "AT:2,CH:2,…" (read once). */
export function countryRanks(): Promise<string> {
  ranks ??= (async () => {
    const out: string[] = [];
    for await (const [p] of readTable('ne_110m_admin_0_label_points')) if (typeof p.iso_a2 === 'string') out.push(`${p.iso_a2}:${countryRank(num(p.labelrank, 12))}`);
    return out.join(',');
  })();
  return ranks;
}

/** Country labels from the zoom OpenMapTiles shows them (rank ≤ z + 1), with `iso_a2` and `rank`. */
function country(p: Record<string, unknown>, z: number): ShapeAttributes | undefined {
  const rank = countryRank(num(p.labelrank, 12));
  if (rank > z + 1 || typeof p.name !== 'string' || !p.name) return undefined;
  return { class: 'country', name: p.name, rank, capital: 0, iso_a2: String(p.iso_a2 ?? '') };
}
/** Populated places from the zoom NE gives them (`min_zoom`), capitals as OpenMapTiles' `capital`. */
function city(p: Record<string, unknown>, z: number): ShapeAttributes | undefined {
  if (num(p.min_zoom, 99) > z || typeof p.name !== 'string' || !p.name) return undefined;
  const cla = String(p.featurecla ?? '');
  const capital = cla.startsWith('Admin-0 capital') ? 2 : cla.startsWith('Admin-1 capital') ? 4 : 0;
  return { class: 'city', name: p.name, rank: Math.min(10, Math.max(1, num(p.scalerank, 9) + 1)), capital };
}

/** Rivers from the zoom before NE's own `min_zoom` (OpenMapTiles takes the 110 m rivers at z3, the 50 m ones from z4). */
function river(p: Record<string, unknown>, z: number): ShapeAttributes | undefined {
  if (num(p.min_zoom, 99) > z + 1) return undefined;
  return { class: 'river', name: typeof p.name === 'string' ? p.name : '' };
}

/** What comes from Natural Earth at which zoom (OpenMapTiles' water, waterway, landcover, landuse, boundary, place layers). */
export const NE_TABLES: NeTable[] = [
  { file: 'ne_110m_ocean', layer: 'water', kind: 'polygon', minzoom: 0, maxzoom: 1, attributes: ocean },
  { file: 'ne_110m_lakes', layer: 'water', kind: 'polygon', minzoom: 0, maxzoom: 1, attributes: lake },
  { file: 'ne_50m_ocean', layer: 'water', kind: 'polygon', minzoom: 2, maxzoom: 4, attributes: ocean },
  { file: 'ne_50m_lakes', layer: 'water', kind: 'polygon', minzoom: 2, maxzoom: 3, attributes: lake },
  { file: 'ne_10m_lakes', layer: 'water', kind: 'polygon', minzoom: 4, maxzoom: 5, attributes: lake },
  { file: 'ne_10m_ocean', layer: 'water', kind: 'polygon', minzoom: 5, maxzoom: 6, attributes: ocean },
  { file: 'ne_50m_rivers_lake_centerlines', layer: 'waterway', kind: 'line', minzoom: 3, maxzoom: 5, attributes: river },
  { file: 'ne_110m_glaciated_areas', layer: 'landcover', kind: 'polygon', minzoom: 0, maxzoom: 1, attributes: glacier },
  { file: 'ne_50m_glaciated_areas', layer: 'landcover', kind: 'polygon', minzoom: 2, maxzoom: 4, attributes: glacier },
  { file: 'ne_10m_glaciated_areas', layer: 'landcover', kind: 'polygon', minzoom: 5, maxzoom: 6, attributes: glacier },
  { file: 'ne_10m_antarctic_ice_shelves_polys', layer: 'landcover', kind: 'polygon', minzoom: 2, maxzoom: 6, attributes: () => ({ class: 'ice', subclass: 'ice_shelf' }) },
  { file: 'ne_50m_urban_areas', layer: 'landuse', kind: 'polygon', minzoom: 4, maxzoom: 5, attributes: (p, z) => (z === 4 && num(p.scalerank, 99) > 2 ? undefined : { class: 'residential' }) },
  { file: 'ne_110m_admin_0_boundary_lines_land', layer: 'boundary', kind: 'line', minzoom: 0, maxzoom: 0, attributes: admin0 },
  { file: 'ne_50m_admin_0_boundary_lines_land', layer: 'boundary', kind: 'line', minzoom: 1, maxzoom: 3, attributes: admin0 },
  { file: 'ne_10m_admin_0_boundary_lines_land', layer: 'boundary', kind: 'line', minzoom: 4, maxzoom: 6, attributes: admin0 },
  { file: 'ne_50m_admin_1_states_provinces_lines', layer: 'boundary', kind: 'line', minzoom: 1, maxzoom: 6, attributes: admin1 },
  { file: 'ne_110m_admin_0_label_points', layer: 'place', kind: 'point', minzoom: 0, maxzoom: 6, attributes: country, outsideOnly: true },
  { file: 'ne_50m_populated_places_simple', layer: 'place', kind: 'point', minzoom: 0, maxzoom: 6, attributes: city, outsideOnly: true },
];

/** The box (lon/lat) of the tiles at zoom z that cover `box` (a tile merely touching its edge does not). */
export function zoomArea(box: BBox, z: number): BBox {
  const r = tileRangeForBBox(box, z);
  const nw = tileBounds(z, r.minX, r.minY);
  const se = tileBounds(z, r.maxX, r.maxY);
  return [nw[0], se[1], se[2], nw[3]];
}

/**
 * Which tiles an extract's tiles are: those covering its tile box at each zoom (tilemaker also writes
 * tiles beyond it where the extract's ways run on, and the ocean's runs' boxes are wider).
 */
export function inTileBox(box: BBox, maxzoom = 14): (z: number, x: number, y: number) => boolean {
  const ranges = Array.from({ length: maxzoom + 1 }, (_, z) => tileRangeForBBox(box, z));
  return (z, x, y) => {
    const r = ranges[z];
    return r !== undefined && x >= r.minX && x <= r.maxX && y >= r.minY && y <= r.maxY;
  };
}

/** The clip area of zoom z: `zoomArea` shrunk by AREA_INSET. */
export function clipArea(box: BBox, z: number): BBox {
  const [w, s, e, n] = zoomArea(box, z);
  return [w + AREA_INSET, s + AREA_INSET, e - AREA_INSET, n - AREA_INSET];
}

/** A tilemaker layer read from a shapefile, written into an OMT layer at one zoom. */
export interface ShapeLayer {
  minzoom: number;
  maxzoom: number;
  source: string;
  write_to: string;
  source_columns?: string[];
  simplify_below?: number;
  simplify_level?: number;
  simplify_ratio?: number;
}

/** Simplification of shapefile polygons and lines, as the profile's own layers. */
export const SHAPE_SIMPLIFY = { simplify_below: 13, simplify_level: 0.0001, simplify_ratio: 2 };

/** Features of one table whose bounding boxes meet `area` (all without one), as [properties, geometry]. */
export async function* readTable(file: string, area?: BBox): AsyncGenerator<[Record<string, unknown>, Geometry]> {
  const gdal = await loadGdal();
  const ds = gdal.open(join(NATURAL_EARTH_DIR, `${file}.fgb`));
  try {
    const layer = ds.layers.get(0);
    if (area) layer.setSpatialFilter(area[0], area[1], area[2], area[3]);
    for (let f = layer.features.next(); f; f = layer.features.next()) {
      const g = f.getGeometry();
      if (g) yield [f.fields.toObject() as Record<string, unknown>, g];
    }
  } finally {
    ds.close();
  }
}

const inside = (x: number, y: number, b: BBox) => x >= b[0] && x <= b[2] && y >= b[1] && y <= b[3];

/** The world as tiles see it: the Web Mercator square. */
export const WORLD: BBox = [-180, -MAX_LATITUDE, 180, MAX_LATITUDE];

/** Tables cut into cells (scripts/naturalearth-cells.mjs): their features are one polygon, joined again per tile. */
const CELL_TABLES = new Set(['ne_10m_ocean']);

/** One OMT layer's fill in a tile: the attributes of a polygon covering the tile (cut.ts). */
export interface LayerFill {
  layer: string;
  attributes: ShapeAttributes;
}

/** Fills by zoom, then by tile index (cut.ts `tileIndex`). */
export type FillsByZoom = Map<number, Map<number, LayerFill[]>>;

/** Add the fills of one cut to `fills`. */
export function addFills(fills: FillsByZoom, layer: string, cut: Map<number, CutZoom>): void {
  for (const [z, c] of cut) {
    let byTile = fills.get(z);
    if (!byTile) fills.set(z, (byTile = new Map()));
    for (const [i, list] of c.fills) {
      const have = byTile.get(i) ?? [];
      have.push(...list.map((attributes) => ({ layer, attributes })));
      byTile.set(i, have);
    }
  }
}

/**
 * Natural Earth for the whole world at z0–NE_MAXZOOM, ready for tilemaker: polygons cut into tiles
 * (cut.ts: pieces into one shapefile per OMT layer and zoom, fills aside), lines and points whole, one
 * shapefile per OMT layer and zoom (`ne_<layer>_z<z>`) in `workDir`. Resolves with the tilemaker layers
 * and the fills.
 */
export async function naturalEarthWorld(workDir: string): Promise<{ layers: Record<string, ShapeLayer>; fills: FillsByZoom }> {
  const shapes = new Map<string, { layer: NeLayer; z: number; kind: ShapeKind; shapes: Shape[] }>();
  const fills: FillsByZoom = new Map();
  const add = (layer: NeLayer, z: number, kind: ShapeKind, list: Shape[]) => {
    const name = `ne_${layer}_z${z}`;
    const have = shapes.get(name);
    if (have) have.shapes.push(...list);
    else shapes.set(name, { layer, z, kind, shapes: [...list] });
  };
  for (const t of NE_TABLES) {
    if (t.kind !== 'polygon') {
      for (let z = t.minzoom; z <= Math.min(t.maxzoom, NE_MAXZOOM); z++) {
        const list: Shape[] = [];
        for await (const [p, g] of readTable(t.file)) {
          const attributes = t.attributes(p, z);
          if (attributes) list.push({ geometry: g, attributes });
        }
        add(t.layer, z, t.kind, list);
      }
      continue;
    }
    const rows: [Record<string, unknown>, Geometry][] = [];
    for await (const row of readTable(t.file)) rows.push(row);
    const featuresAt = (z: number): CutFeature[] =>
      rows.flatMap(([p, geometry]) => {
        const attributes = t.attributes(p, z);
        return attributes ? [{ geometry, attributes, ...(CELL_TABLES.has(t.file) ? { group: t.file } : {}) }] : [];
      });
    const last = Math.min(t.maxzoom, NE_MAXZOOM);
    // Zooms whose features carry the same attributes are cut together (a piece of zoom z comes from its parent's).
    for (let z = t.minzoom; z <= last; ) {
      const features = featuresAt(z);
      const sig = JSON.stringify(features.map((f) => f.attributes));
      let to = z;
      while (to < last && JSON.stringify(featuresAt(to + 1).map((f) => f.attributes)) === sig) to++;
      const cut = await cutPolygons({ features, minzoom: z, maxzoom: to, area: () => WORLD });
      for (const [cz, c] of cut) add(t.layer, cz, 'polygon', c.pieces);
      addFills(fills, t.layer, cut);
      z = to + 1;
    }
  }
  const layers: Record<string, ShapeLayer> = {};
  for (const [name, { layer, z, kind, shapes: list }] of [...shapes].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (list.length === 0) continue;
    const source = join(workDir, `${name}.shp`);
    const columns = kind === 'polygon' ? { ...NE_COLUMNS[layer], [TILE_TAG]: 'string' as const } : NE_COLUMNS[layer];
    await writeShapefile(source, kind, columns, list);
    layers[name] = { minzoom: z, maxzoom: z, source, write_to: layer, source_columns: Object.keys(columns), ...(kind === 'point' ? {} : SHAPE_SIMPLIFY) };
  }
  return { layers, fills };
}

/**
 * The Natural Earth label points inside `box` (the tables whose points are shown outside the extract
 * only: the extract has its own places there), as `class|name`: a tile's Natural Earth place with such a
 * name inside the box is left out when the extract's tiles are merged with the world's (world.ts).
 */
export async function placesInside(box: BBox): Promise<Set<string>> {
  const out = new Set<string>();
  for (const t of NE_TABLES) {
    if (!t.outsideOnly) continue;
    for await (const [p, g] of readTable(t.file, box)) {
      const pt = g as import('gdal-async').Point;
      if (!inside(pt.x, pt.y, box)) continue;
      for (let z = t.minzoom; z <= t.maxzoom; z++) {
        const a = t.attributes(p, z);
        if (a) out.add(`${a.class}|${a.name}`);
      }
    }
  }
  return out;
}
