/**
 * The parts an OSM tileset's tile is made of, as layers to merge (canonical.ts re-encodes them): the
 * fills of polygons that cover the tile (cut.ts), and the world's Natural Earth tile (world.ts) with
 * what the extract has of its own taken out.
 */
import { GEOM_TYPE, MVT_EXTENT, type RawFeature, type RawLayer } from '../../lib/mvt.ts';
import { lonLatToWorld, type BBox } from '../../lib/tile-math.ts';
import { firstPoint } from './canonical.ts';
import { fullTileGeometry } from './fill.ts';
import type { LayerFill } from './natural-earth.ts';

/** The MVT version tilemaker writes. */
const MVT_VERSION = 2;

/** Fill features as layers (one per OMT layer, in the order given): what tilemaker's tile of a covering polygon holds. */
export function fillLayers(fills: readonly LayerFill[]): RawLayer[] {
  const byLayer = new Map<string, RawFeature[]>();
  const geometry = fullTileGeometry(MVT_EXTENT);
  for (const f of fills) {
    const feature: RawFeature = { type: GEOM_TYPE.Polygon, geometry, tags: new Map(Object.entries(f.attributes)) };
    const list = byLayer.get(f.layer);
    if (list) list.push(feature);
    else byLayer.set(f.layer, [feature]);
  }
  return [...byLayer].map(([name, features]) => ({ name, version: MVT_VERSION, extent: MVT_EXTENT, features }));
}

/** What of the world's tile an extract replaces where its tiles cover the world's. */
export interface WorldCut {
  /** The extract's tile box. */
  box: BBox;
  /** Natural Earth places inside the box, `class|name` (natural-earth.ts `placesInside`): the extract has its own. */
  places: ReadonlySet<string>;
  /** Leave out the world's ocean (the extract's sea and the ocean around it take its place at this zoom). */
  ocean: boolean;
}

/**
 * The layers of world tile z/x/y to merge with the extract's tile there: without the Natural Earth places
 * inside the extract's box, and without the ocean when `cut.ocean` says so.
 */
export function worldLayers(layers: RawLayer[], z: number, x: number, y: number, cut: WorldCut): RawLayer[] {
  return layers.map((l) => {
    const n = 2 ** z * l.extent;
    const sw = lonLatToWorld(cut.box[0], cut.box[1]);
    const ne = lonLatToWorld(cut.box[2], cut.box[3]);
    // The box in the tile's coordinates, one unit wider (tilemaker floors positions): a place there is
    // dropped only when its name is one of the places inside the box.
    const [x0, x1, y0, y1] = [sw.x * n - x * l.extent - 1, ne.x * n - x * l.extent + 1, ne.y * n - y * l.extent - 1, sw.y * n - y * l.extent + 1];
    const keep = (f: RawFeature) => {
      if (l.name === 'water') return !(cut.ocean && f.tags.get('class') === 'ocean');
      if (l.name !== 'place' || !cut.places.has(`${f.tags.get('class')}|${f.tags.get('name')}`)) return true;
      const [px, py] = firstPoint(f.geometry);
      return !(px >= x0 && px <= x1 && py >= y0 && py <= y1);
    };
    return { ...l, features: l.features.filter(keep) };
  });
}
