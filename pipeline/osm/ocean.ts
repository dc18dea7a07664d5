/**
 * The ocean of an extract's tiles from z6 (NE_MAXZOOM) up: inside the extract's tile box the sea built
 * from its own coastline (sea.ts), outside it Natural Earth's 10 m ocean, joined into one polygon so
 * that there is no seam at the box's edge, and cut into tiles (cut.ts): the tiles it covers are fills
 * (one canonical tile for the open sea), the coastal ones go through tilemaker as their own pieces. At
 * zoom z the tiles are those of z that cover the box (z14: the box); at z6, where the world's tiles
 * (world.ts) lie around them, the ocean reaches into their buffers as the world's does.
 *
 * What this costs grows with the coast, not with the box: GEOS cuts the pieces of coastal tiles only,
 * and tilemaker clips each piece in its own tile (and its neighbours' buffers), where it once clipped the
 * whole sea in every tile of the box.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { tileRangeForBBox, type BBox } from '../../lib/tile-math.ts';
import { loadGdal } from '../elevation/gdal.ts';
import type { WaterPolygon } from './coastline.ts';
import { clipBox, cutPolygons, TILE_TAG } from './cut.ts';
import { clipArea, inTileBox, NATURAL_EARTH_DIR, NE_MAXZOOM, SHAPE_SIMPLIFY, type ShapeLayer } from './natural-earth.ts';
import { runShapeLayers } from './shape-runs.ts';
import { boxPolygon, clipTo, ofKind, writeShapefile, type Geometry } from './shapes.ts';
import { zoomArea } from './natural-earth.ts';

/** The deepest zoom generated. */
const MAX_ZOOM = 14;
const OCEAN = { class: 'ocean' } as const;
const OCEAN_COLUMNS = { class: 'string', [TILE_TAG]: 'string' } as const;

/** The extract's sea polygons as one (multi)polygon, or undefined when there are none. */
export async function seaGeometry(polygons: WaterPolygon[]): Promise<Geometry | undefined> {
  if (polygons.length === 0) return undefined;
  const gdal = await loadGdal();
  const multi = new gdal.MultiPolygon();
  for (const p of polygons) {
    const poly = new gdal.Polygon();
    for (const ring of [p.outer, ...p.holes]) {
      const r = new gdal.LinearRing();
      r.points.add(ring.map(([x, y]) => ({ x, y })));
      poly.rings.add(r);
    }
    multi.children.add(poly);
  }
  // Repairing can leave a collection (a spike of the coastline becomes a line beside the polygon):
  // only the polygon parts are sea. Belize's coast did this.
  return ofKind(multi.isValid() ? multi : await multi.makeValidAsync(), 'polygon');
}

/** Natural Earth's 10 m ocean over `area` (its cells there, joined), less the box. */
async function oceanOutside(area: BBox, box: BBox): Promise<Geometry | undefined> {
  const gdal = await loadGdal();
  const ds = gdal.open(join(NATURAL_EARTH_DIR, 'ne_10m_ocean.fgb'));
  try {
    const layer = ds.layers.get(0);
    layer.setSpatialFilter(area[0], area[1], area[2], area[3]);
    const rect = await boxPolygon(area);
    let all: Geometry | undefined;
    for (let f = layer.features.next(); f; f = layer.features.next()) {
      const g = f.getGeometry();
      const c = g && (await clipTo(g, rect, 'polygon'));
      if (c) all = all ? await all.unionAsync(c) : c;
    }
    return all && ofKind(await all.differenceAsync(await boxPolygon(box)), 'polygon');
  } finally {
    ds.close();
  }
}

/** The area of zoom z6's tiles covering the box, grown by their buffers (the world's tiles lie around them). */
function worldSeamArea(box: BBox): BBox {
  const r = tileRangeForBBox(box, NE_MAXZOOM);
  const nw = clipBox(NE_MAXZOOM, r.minX, r.minY);
  const se = clipBox(NE_MAXZOOM, r.maxX, r.maxY);
  return [nw[0], se[1], se[2], nw[3]];
}

/** The ocean's tiles: those it covers by zoom (cut.ts `tileIndex`), and the coastal ones as tilemaker wrote them (plain MVT, by `z/x/y`). */
export interface OceanTiles {
  fills: Map<number, Set<number>>;
  tiles: Map<string, Uint8Array>;
  /** Coastal tiles cut (GEOS) and written by tilemaker. */
  pieces: number;
}

/** What `oceanTiles` needs. */
export interface OceanJob {
  /** The extract's sea (sea.ts). */
  polygons: WaterPolygon[];
  /** The extract's tile box. */
  box: BBox;
  /** Only these tiles (`z/x/y`), when not all. */
  only?: ReadonlySet<string>;
  tilemaker: string;
  osmium: string;
  workDir: string;
  pidFile: string;
  label: string;
}

/** The ocean of an extract's tiles: its sea inside the tile box, Natural Earth's around it (out to z6's buffers), as one polygon. */
export async function oceanGeometry(polygons: WaterPolygon[], box: BBox): Promise<Geometry | undefined> {
  const sea = await seaGeometry(polygons);
  const outside = await oceanOutside(worldSeamArea(box), box);
  return sea && outside ? ofKind(await sea.unionAsync(outside), 'polygon') : (sea ?? outside);
}

/** The ocean of the extract's tiles at z6–14 (see the module comment). */
export async function oceanTiles(job: OceanJob): Promise<OceanTiles> {
  const { box } = job;
  const seam = worldSeamArea(box);
  const all = await oceanGeometry(job.polygons, box);
  const fills = new Map<number, Set<number>>();
  if (!all) return { fills, tiles: new Map(), pieces: 0 };
  const area = (z: number): BBox => (z <= NE_MAXZOOM ? seam : z >= MAX_ZOOM ? box : clipArea(box, z));
  const only = job.only && new Set([...job.only].filter((k) => Number(k.split('/')[0]) >= NE_MAXZOOM));
  if (only?.size === 0) return { fills, tiles: new Map(), pieces: 0 };
  // The tiles of each zoom that cover the box (their ancestors are the tiles that cover it at lower zooms).
  const keep = inTileBox(box, MAX_ZOOM);
  const cut = await cutPolygons({ features: [{ geometry: all, attributes: OCEAN }], minzoom: NE_MAXZOOM, maxzoom: MAX_ZOOM, area, only, keep });
  await mkdir(job.workDir, { recursive: true });
  const layers: Record<string, ShapeLayer> = {};
  let pieces = 0;
  for (const [z, c] of cut) {
    fills.set(z, new Set(c.fills.keys()));
    if (c.pieces.length === 0) continue;
    const name = `ocean_z${z}`;
    const source = join(job.workDir, `${name}.shp`);
    await writeShapefile(source, 'polygon', OCEAN_COLUMNS, c.pieces);
    layers[name] = { minzoom: z, maxzoom: z, source, write_to: 'water', source_columns: Object.keys(OCEAN_COLUMNS), ...SHAPE_SIMPLIFY };
    pieces += c.pieces.length;
  }
  const tiles = await runShapeLayers({
    tilemaker: job.tilemaker, osmium: job.osmium, box, layers, workDir: job.workDir, pidFile: job.pidFile, label: `${job.label} ocean`,
    runBox: (first) => (first <= NE_MAXZOOM ? seam : zoomArea(box, first)),
  });
  return { fills, tiles, pieces };
}
