/**
 * The sea step of the OSM source: the extract's coastline (osmium) → water polygons over the
 * tiles' box (coastline.ts) → a WGS84 shapefile tilemaker 2.2 reads into the `water` layer.
 */
import { join } from 'node:path';
import type { BBox } from '../../lib/tile-math.ts';
import { loadGdal } from '../elevation/gdal.ts';
import { assembleChains, parseCoastlineOpl, waterPolygons, type WaterPolygon } from './coastline.ts';
import { runTool } from './tools.ts';

/** What the sea step produced. */
export interface SeaResult {
  /** The shapefile, or undefined when the extract has no sea in the box. */
  shapefile?: string;
  coastlineWays: number;
  polygons: number;
}

/** Write water polygons as a WGS84 polygon shapefile (one feature per polygon). */
export async function writeWaterShapefile(polygons: WaterPolygon[], path: string): Promise<void> {
  const gdal = await loadGdal();
  const ds = gdal.open(path, 'w', 'ESRI Shapefile');
  try {
    const layer = ds.layers.create('water', gdal.SpatialReference.fromEPSG(4326), gdal.wkbPolygon);
    for (const p of polygons) {
      const poly = new gdal.Polygon();
      for (const ring of [p.outer, ...p.holes]) {
        const r = new gdal.LinearRing();
        r.points.add(ring.map(([x, y]) => ({ x, y })));
        poly.rings.add(r);
      }
      const f = new gdal.Feature(layer);
      f.setGeometry(poly);
      layer.features.add(f);
    }
  } finally {
    ds.close();
  }
}

/** Run the sea step for `input` over `box`; files go into `workDir`. */
export async function buildSea(osmium: string, input: string, box: BBox, workDir: string, pidFile: string): Promise<SeaResult> {
  // The coastline ways and the nodes they reference (with their locations), as OPL text.
  const opl = await runTool(osmium, ['tags-filter', '--no-progress', '-f', 'opl', '-o', '-', input, 'w/natural=coastline'], { pidFile });
  const ways = parseCoastlineOpl(opl);
  if (ways.length === 0) return { coastlineWays: 0, polygons: 0 };
  const polygons = waterPolygons(assembleChains(ways), box);
  if (polygons.length === 0) return { coastlineWays: ways.length, polygons: 0 };
  const shapefile = join(workDir, 'sea.shp');
  await writeWaterShapefile(polygons, shapefile);
  return { shapefile, coastlineWays: ways.length, polygons: polygons.length };
}
