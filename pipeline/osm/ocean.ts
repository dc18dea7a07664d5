/**
 * The ocean of the `water` layer from z6 up: inside the extract's tile box the sea built from its own
 * coastline (sea.ts), outside it Natural Earth's 10 m ocean, joined into one polygon so that there is
 * no seam at the box's edge. One shapefile per zoom, clipped to the tiles of that zoom which cover the
 * box (see natural-earth.ts for why); z14's tiles are the box, so z14 is the extract's sea alone.
 */
import { join } from 'node:path';
import type { BBox } from '../../lib/tile-math.ts';
import { loadGdal } from '../elevation/gdal.ts';
import type { WaterPolygon } from './coastline.ts';
import { clipArea, NATURAL_EARTH_DIR, NE_MAXZOOM, SHAPE_SIMPLIFY, type ShapeLayer } from './natural-earth.ts';
import { boxPolygon, clipTo, ofKind, writeShapefile, type Geometry } from './shapes.ts';

/** The deepest zoom generated. */
const MAX_ZOOM = 14;
const OCEAN_COLUMNS = { class: 'string' } as const;

/** The extract's sea polygons as one (multi)polygon, or undefined when there are none. */
async function seaGeometry(polygons: WaterPolygon[]): Promise<Geometry | undefined> {
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
  // a polygon shapefile holds only the polygon parts. Belize's coast did this.
  return ofKind(multi.isValid() ? multi : multi.makeValid(), 'polygon');
}

/** Natural Earth's 10 m ocean over `area`, less the box. */
async function oceanOutside(area: BBox, box: BBox): Promise<Geometry | undefined> {
  const gdal = await loadGdal();
  const ds = gdal.open(join(NATURAL_EARTH_DIR, 'ne_10m_ocean.fgb'));
  try {
    const layer = ds.layers.get(0);
    layer.setSpatialFilter(area[0], area[1], area[2], area[3]);
    const rect = await boxPolygon(area);
    const hole = await boxPolygon(box);
    const parts: Geometry[] = [];
    for (let f = layer.features.next(); f; f = layer.features.next()) {
      const g = f.getGeometry();
      // The rectangle first: GEOS clips the world's ocean to a rectangle quickly, then the rest is small.
      const c = g && (await clipTo(g, rect, 'polygon'));
      const d = c && (await ofKind(await c.differenceAsync(hole), 'polygon'));
      if (d) parts.push(d);
    }
    let all: Geometry | undefined;
    for (const p of parts) all = all ? await all.unionAsync(p) : p;
    return all;
  } finally {
    ds.close();
  }
}

/**
 * Write the ocean shapefiles for the extract's sea `polygons` over `box` into `workDir`; resolves
 * with the tilemaker layers: for `'box'` the layer `ocean` at z14 (for the extract's run, whose box is
 * the tile box), for `'around'` the layers `ocean_z<z>` for z6…13 (for the shapefile runs, shape-runs.ts).
 */
export async function oceanLayers(polygons: WaterPolygon[], box: BBox, workDir: string, which: 'box' | 'around'): Promise<Record<string, ShapeLayer>> {
  const sea = await seaGeometry(polygons);
  const layers: Record<string, ShapeLayer> = {};
  const write = async (name: string, z: number, g: Geometry) => {
    const source = join(workDir, `${name}.shp`);
    await writeShapefile(source, 'polygon', OCEAN_COLUMNS, [{ geometry: g, attributes: { class: 'ocean' } }]);
    layers[name] = { minzoom: z, maxzoom: z, source, write_to: 'water', source_columns: ['class'], ...SHAPE_SIMPLIFY };
  };
  if (which === 'box') {
    if (sea) await write('ocean', MAX_ZOOM, sea);
    return layers;
  }
  const outside = await oceanOutside(clipArea(box, NE_MAXZOOM), box);
  const all = sea && outside ? await sea.unionAsync(outside) : (sea ?? outside);
  for (let z = NE_MAXZOOM; z < MAX_ZOOM && all; z++) {
    const g = await clipTo(all, await boxPolygon(clipArea(box, z)), 'polygon');
    if (g) await write(`ocean_z${z}`, z, g);
  }
  return layers;
}
