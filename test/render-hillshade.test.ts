/**
 * A style with a hillshade layer over the build's own terrain tiles (raster-dem source), rendered by
 * MapLibre in headless Chromium: the relief is drawn, and a tile sliced from a metatile matches the
 * same tile rendered alone. Hillshade is drawn in two passes (each DEM tile into a framebuffer of its
 * own, then onto the map); the page's scissor, which limits rasterisation to the part of the canvas
 * that is read, must apply to the map only, not to those framebuffers.
 */
import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { tileIdToZxy } from '../lib/pmtiles/index.ts';
import { lonLatToTile } from '../lib/tile-math.ts';
import { runElevationStage } from '../pipeline/elevation/stage.ts';
import { runRenderStage } from '../pipeline/render/stage.ts';
import { runVectorStage } from '../pipeline/vector/stage.ts';
import { archiveTiles, compare, copyVectorOutput, OSM_BRIGHT, readTile, rgb, SAMPLE, tempDir, writeConfig } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';
const LONG = 300_000;
/** z12 tile over the hills behind Monaco (Beausoleil, La Turbie: ~0–600 m). */
const HILLS = { z: 12, ...lonLatToTile(7.42, 43.745, 12) };

let out: string;
/** Output folders to remove at the end. */
const made: string[] = [];
let reliefStyle: string;

const archive = (dir: string, style: string) => join(dir, 'styles', style, '1x.png.pmtiles');

/** Build config: Monaco's vector tiles, terrain tiles from the SRTM sample, osm-bright with and without hillshade. */
function config(dir: string, styleFile: string, metatile: number, margin: number): Record<string, unknown> {
  const style = { tileset: 'openmaptiles', minzoom: 12, maxzoom: 13, scales: [1], formats: ['png'] };
  return {
    out: dir,
    tilesets: { openmaptiles: join(SAMPLE, 'monaco_omt.mbtiles') },
    styles: { relief: { ...style, style: styleFile }, plain: { ...style, style: OSM_BRIGHT } },
    fonts: join(SAMPLE, 'fonts'),
    render: { metatile, margin, timeoutMs: 120_000 },
    elevation: { sources: [join(SAMPLE, 'dem', 'N43E007.hgt')], terrain: { id: 'terrain', minzoom: 8, maxzoom: 12 } },
  };
}

describe.sequential('render stage: hillshade over the build terrain tiles', () => {
  beforeAll(async () => {
    out = await tempDir('render-hillshade');
    made.push(out);
    // osm-bright (its folder, for the sprite) with a raster-dem source and a hillshade layer under the roads.
    const styleDir = join(out, 'relief-style');
    await cp(join(SAMPLE, 'styles', 'osm-bright'), styleDir, { recursive: true });
    const style = JSON.parse(await readFile(OSM_BRIGHT, 'utf8'));
    style.sources.terrain = { type: 'raster-dem', url: 'mbtiles://terrain', tileSize: 256 };
    const firstRoad = style.layers.findIndex((l: { id: string }) => l.id.startsWith('highway') || l.id.startsWith('road') || l.id.startsWith('tunnel'));
    style.layers.splice(firstRoad, 0, { id: 'hillshade', type: 'hillshade', source: 'terrain', paint: { 'hillshade-exaggeration': 0.6 } });
    reliefStyle = join(styleDir, 'style.json');
    await writeFile(reliefStyle, JSON.stringify(style));
    const { config: c } = await writeConfig(out, 'config.json', config(out, reliefStyle, 2, 64));
    await runVectorStage(c, out);
    await runElevationStage(c, out);
    await runRenderStage(c, out);
  }, LONG);

  afterAll(async () => {
    for (const dir of made) await rm(dir, { recursive: true, force: true });
  });

  test('the relief is drawn: the hills differ from the same style without hillshade', async () => {
    const relief = await rgb(await readTile(archive(out, 'relief'), HILLS.z, HILLS.x, HILLS.y));
    const plain = await rgb(await readTile(archive(out, 'plain'), HILLS.z, HILLS.x, HILLS.y));
    const d = compare(relief.data, plain.data, 10);
    expect(d.mean).toBeGreaterThan(3);
    expect(d.bigFraction).toBeGreaterThan(0.2);
  });

  // Alone and with a 32 px margin: a scissor that also clipped the DEM framebuffers (at the margin)
  // would cut them differently in the two runs (measured: mean |Δ| 28 on the z12 tile, against < 0.01).
  test('tiles sliced from metatiles match the same tiles rendered alone with another margin', async () => {
    const alone = await tempDir('render-hillshade-alone');
    made.push(alone);
    await copyVectorOutput(out, alone);
    const { config: c } = await writeConfig(alone, 'config.json', config(alone, reliefStyle, 1, 32));
    await runRenderStage(c, alone);
    const tiles = await archiveTiles(archive(alone, 'relief'));
    expect(tiles.size).toBeGreaterThanOrEqual(2);
    for (const id of tiles.keys()) {
      const [z, x, y] = tileIdToZxy(Number(id));
      const a = await rgb(await readTile(archive(alone, 'relief'), z, x, y));
      const b = await rgb(await readTile(archive(out, 'relief'), z, x, y));
      const d = compare(a.data, b.data);
      expect(d.mean, `${z}/${x}/${y}`).toBeLessThan(1);
      expect(d.bigFraction, `${z}/${x}/${y}`).toBeLessThan(0.005);
    }
  }, LONG);
});
