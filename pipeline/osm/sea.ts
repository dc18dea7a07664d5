/**
 * The sea step of the OSM source: the extract's coastline (osmium) → water polygons over the tiles'
 * box (coastline.ts); ocean.ts joins them with Natural Earth's ocean outside the box.
 */
import type { BBox } from '../../lib/tile-math.ts';
import { assembleChains, parseCoastlineOpl, waterPolygons, type WaterPolygon } from './coastline.ts';
import { runTool } from './tools.ts';

/** What the sea step produced. */
export interface SeaResult {
  /** The sea inside the box (none when the extract has no coastline there). */
  polygons: WaterPolygon[];
  coastlineWays: number;
}

/** Run the sea step for `input` over `box`. */
export async function buildSea(osmium: string, input: string, box: BBox, pidFile: string): Promise<SeaResult> {
  // The coastline ways and the nodes they reference (with their locations), as OPL text.
  const opl = await runTool(osmium, ['tags-filter', '--no-progress', '-f', 'opl', '-o', '-', input, 'w/natural=coastline'], { pidFile });
  const ways = parseCoastlineOpl(opl);
  if (ways.length === 0) return { polygons: [], coastlineWays: 0 };
  return { polygons: waterPolygons(assembleChains(ways), box), coastlineWays: ways.length };
}
