/**
 * The ocean of an extract's tiles from z6 (NE_MAXZOOM) up: inside the extract's tile box the sea built
 * from its own coastline (sea.ts), outside it Natural Earth's 10 m ocean, joined into one polygon so
 * that there is no seam at the box's edge, and cut into tiles (cut.ts): the tiles it covers are fills
 * (one canonical tile for the open sea), each coastal one gets its piece, written as its tile's feature
 * (piece-tiles.ts: projected, simplified and rounded as tilemaker would, without a tilemaker run). At
 * zoom z the tiles are those of z that cover the box (z14: the box); at z6, where the world's tiles
 * (world.ts) lie around them, the ocean reaches into their buffers as the world's does.
 *
 * What this costs grows with the coast, not with the box: GEOS cuts the pieces of coastal tiles only,
 * and writes each in its own tile, where tilemaker once clipped the whole sea in every tile of the box.
 */
import { join } from 'node:path';
import type { RawLayer } from '../../lib/mvt.ts';
import { tileRangeForBBox, type BBox } from '../../lib/tile-math.ts';
import { loadGdal } from '../../lib/gdal.ts';
import type { WaterPolygon } from './coastline.ts';
import { clipBox, cutPolygons, TILE_TAG, type CutZoom } from './cut.ts';
import { clipArea, inTileBox, NATURAL_EARTH_DIR, NE_MAXZOOM } from './natural-earth.ts';
import { pieceFeature, pieceLayers } from './piece-tiles.ts';
import { boxPolygon, clipTo, ofKind, type Geometry } from './shapes.ts';

/** The deepest zoom generated. */
const MAX_ZOOM = 14;
const OCEAN = { class: 'ocean' } as const;

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

/** The ocean's tiles: those it covers by zoom (cut.ts `tileIndex`), and the coastal ones' layers (piece-tiles.ts), by `z/x/y`. */
export interface OceanTiles {
  fills: Map<number, Set<number>>;
  tiles: Map<string, RawLayer[]>;
  /** Coastal tiles cut (GEOS) and written. */
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
}

/** The ocean of an extract's tiles: its sea inside the tile box, Natural Earth's around it (out to z6's buffers), as one polygon. */
export async function oceanGeometry(polygons: WaterPolygon[], box: BBox): Promise<Geometry | undefined> {
  const sea = await seaGeometry(polygons);
  const outside = await oceanOutside(worldSeamArea(box), box);
  return sea && outside ? ofKind(await sea.unionAsync(outside), 'polygon') : (sea ?? outside);
}

/** The ocean of the extract's tiles at z6–14 cut into tiles (cut.ts): fills and coastal pieces by zoom (none when there is no ocean). */
export async function oceanCut(job: OceanJob): Promise<Map<number, CutZoom>> {
  const { box } = job;
  const seam = worldSeamArea(box);
  const only = job.only && new Set([...job.only].filter((k) => Number(k.split('/')[0]) >= NE_MAXZOOM));
  if (only?.size === 0) return new Map();
  const all = await oceanGeometry(job.polygons, box);
  if (!all) return new Map();
  const area = (z: number): BBox => (z <= NE_MAXZOOM ? seam : z >= MAX_ZOOM ? box : clipArea(box, z));
  // The tiles of each zoom that cover the box (their ancestors are the tiles that cover it at lower zooms).
  const keep = inTileBox(box, MAX_ZOOM);
  return cutPolygons({ features: [{ geometry: all, attributes: OCEAN }], minzoom: NE_MAXZOOM, maxzoom: MAX_ZOOM, area, only, keep });
}

/** The ocean of the extract's tiles at z6–14 (see the module comment). */
export async function oceanTiles(job: OceanJob): Promise<OceanTiles> {
  const fills = new Map<number, Set<number>>();
  const tiles = new Map<string, RawLayer[]>();
  let pieces = 0;
  for (const [z, c] of await oceanCut(job)) {
    fills.set(z, new Set(c.fills.keys()));
    // One piece per tile (the ocean is one feature), tagged with its tile. GEOS's calls here are
    // synchronous: a few milliseconds each, and gdal-async's synchronous calls wait for its asynchronous ones.
    for (const p of c.pieces) {
      const key = String(p.attributes[TILE_TAG]);
      const [, x, y] = key.split('/').map(Number);
      const f = await pieceFeature(p.geometry, OCEAN, z, x, y);
      if (f) tiles.set(key, pieceLayers('water', [f]));
    }
    pieces += c.pieces.length;
  }
  return { fills, tiles, pieces };
}
