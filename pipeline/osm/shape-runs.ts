/**
 * tilemaker runs for the shapefile layers of one zoom each (Natural Earth's world, world.ts): tilemaker 2.2
 * clips shapefiles to its box and indexes them at its base zoom, so a layer for zoom z is cheap in a
 * run whose base zoom is a little above z and whose box is the tiles of zoom z it covers, and ruinous
 * in the extract's run (base zoom 14). Zooms are grouped GROUP at a time; the runs read an empty OSM
 * file. A polygon cut into tiles (cut.ts) reaches its neighbours' buffers too: each tile keeps only the
 * pieces cut for it (`ownFeatures`).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BBox } from '../../lib/tile-math.ts';
import { gunzipIfGzipped } from '../../lib/gzip.ts';
import { decodeTile, encodeTile, type RawLayer } from '../../lib/mvt.ts';
import { TILE_TAG } from './cut.ts';
import { openMbtiles } from '../sources/mbtiles.ts';
import type { ShapeLayer } from './natural-earth.ts';
import { zoomArea } from './natural-earth.ts';
import { runTilemaker } from './tilemaker.ts';
import { runTool } from './tools.ts';

/** Zooms per run: a layer of zoom z is indexed on 4^(base − z) tiles per tile of z. */
const GROUP = 3;

/** What the runs need. */
export interface ShapeRunsJob {
  tilemaker: string;
  osmium: string;
  /** The extract's tile box. */
  box: BBox;
  layers: Record<string, ShapeLayer>;
  /** tilemaker's box for the run of zooms first…last (default: the tiles of zoom `first` covering `box`). */
  runBox?: (first: number, last: number) => BBox;
  workDir: string;
  pidFile: string;
  label: string;
}

/** The layers of tile `key` without the pieces cut for other tiles (cut.ts), and without empty layers. */
export function ownFeatures(layers: RawLayer[], key: string): RawLayer[] {
  return layers
    .map((l) => ({ ...l, features: l.features.filter((f) => { const t = f.tags.get(TILE_TAG); return t === undefined || t === '' || t === key; }) }))
    .filter((l) => l.features.length > 0);
}

/** Run tilemaker over the layers; resolves with the tiles that have features of their own, by `z/x/y` (plain MVT). */
export async function runShapeLayers(job: ShapeRunsJob): Promise<Map<string, Uint8Array>> {
  const tiles = new Map<string, Uint8Array>();
  const entries = Object.entries(job.layers);
  if (entries.length === 0) return tiles;
  const emptyOpl = join(job.workDir, 'empty.opl');
  const emptyPbf = join(job.workDir, 'empty.osm.pbf');
  await writeFile(emptyOpl, '');
  await runTool(job.osmium, ['cat', '--no-progress', '-F', 'opl', '-f', 'pbf', '-O', '-o', emptyPbf, emptyOpl], { pidFile: job.pidFile });
  const maxZoom = Math.max(...entries.map(([, l]) => l.maxzoom));
  for (let first = 0; first <= maxZoom; first += GROUP) {
    const last = Math.min(first + GROUP - 1, maxZoom);
    const layers = Object.fromEntries(entries.filter(([, l]) => l.minzoom >= first && l.maxzoom <= last));
    if (Object.keys(layers).length === 0) continue;
    const output = join(job.workDir, `shapes-z${first}-${last}.mbtiles`);
    const box = job.runBox?.(first, last) ?? zoomArea(job.box, first);
    await runTilemaker(job.tilemaker, { input: emptyPbf, output, box, shapeLayers: layers, zooms: [first, last], languages: [], workDir: job.workDir, pidFile: job.pidFile, label: `${job.label} z${first}-${last}` });
    let source;
    try {
      source = await openMbtiles(output);
    } catch {
      continue; // nothing fell into a tile
    }
    try {
      for await (const t of source.tiles()) {
        // Tiles of a run's box that only the layers of other zooms, or others' pieces, reached are empty.
        const key = `${t.z}/${t.x}/${t.y}`;
        const layers = ownFeatures(decodeTile(gunzipIfGzipped(t.data)), key);
        if (layers.length > 0) tiles.set(key, encodeTile(layers));
      }
    } finally {
      await source.close();
    }
  }
  return tiles;
}
