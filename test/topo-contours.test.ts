/**
 * The sample's `topo` style rendered by the render stage over the build's own contour and terrain
 * tilesets: the style resolves `mbtiles://{contours}` to the elevation stage's contour tileset and
 * its contour lines are drawn (the tile differs from the same style without its contour layers).
 */
import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { lonLatToTile, tileBounds } from '../lib/tile-math.ts';
import { runElevationStage } from '../pipeline/elevation/stage.ts';
import { runRenderStage } from '../pipeline/render/stage.ts';
import { runVectorStage } from '../pipeline/vector/stage.ts';
import { compare, readTile, rgb, SAMPLE, tempDir, writeConfig } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';
const LONG = 300_000;
/** z13 tile over the hills behind Monaco (La Turbie, up to ~600 m: 20 m contours every few pixels). */
const Z = 13;
const HILLS = lonLatToTile(7.42, 43.745, Z);

const DEM_CREDIT = 'SRTM elevation (NASA/USGS)';
let out: string;
const archive = (style: string) => join(out, 'styles', style, '1x.png.pmtiles');

describe.sequential('the topo style over the build contours', () => {
  beforeAll(async () => {
    out = await tempDir('topo-contours');
    // The sample's styles (topo takes osm-bright's sprite), and topo without its contour layers.
    await cp(join(SAMPLE, 'styles'), join(out, 'styles-src'), { recursive: true });
    const topo = join(out, 'styles-src', 'topo', 'style.json');
    const style = JSON.parse(await readFile(topo, 'utf8'));
    expect(style.layers.filter((l: { source?: string }) => l.source === 'contours').length).toBeGreaterThanOrEqual(2);
    style.layers = style.layers.filter((l: { source?: string }) => l.source !== 'contours');
    delete style.sources.contours;
    const bare = join(out, 'styles-src', 'topo', 'bare.json');
    await writeFile(bare, JSON.stringify(style));
    const [w, s, e, n] = tileBounds(Z, HILLS.x, HILLS.y);
    const inner = [w + (e - w) / 4, s + (n - s) / 4, e - (e - w) / 4, n - (n - s) / 4];
    const common = { tileset: 'openmaptiles', minzoom: Z, maxzoom: Z, bbox: inner, scales: [1], formats: ['png'] };
    const { config } = await writeConfig(out, 'config.json', {
      out,
      tilesets: { openmaptiles: join(SAMPLE, 'monaco_omt.mbtiles') },
      styles: { topo: { ...common, style: topo }, bare: { ...common, style: bare } },
      fonts: join(SAMPLE, 'fonts'),
      render: { metatile: 1, margin: 32, timeoutMs: 120_000 },
      elevation: {
        sources: [join(SAMPLE, 'dem', 'N43E007.hgt')],
        attribution: DEM_CREDIT,
        terrain: { id: 'terrain', minzoom: 11, maxzoom: 11 },
        // MapLibre draws 512-unit vector tiles: a 256 px raster tile at z13 (map zoom 12) shows z12 contours.
        contours: { id: 'contours', minzoom: Z - 1, maxzoom: Z, intervals: { [Z - 1]: [20, 100] } },
      },
    });
    await runVectorStage(config, out);
    await runElevationStage(config, out);
    await runRenderStage(config, out);
  }, LONG);

  afterAll(async () => {
    if (out) await rm(out, { recursive: true, force: true });
  });

  test('the contour tileset is in the manifest and the rendered tile shows its lines', async () => {
    const m = await readManifestOrEmpty(out);
    expect(m.tilesets.contours).toMatchObject({ kind: 'vector', archive: 'data/contours.pmtiles' });
    const topo = await rgb(await readTile(archive('topo'), Z, HILLS.x, HILLS.y));
    const bare = await rgb(await readTile(archive('bare'), Z, HILLS.x, HILLS.y));
    // Thin antialiased lines every few pixels and their labels: a fifth of the pixels change (0.21 when
    // written), none without the contour layers; a broken source or zoom range leaves the tiles identical.
    const d = compare(topo.data, bare.data, 12);
    expect(d.bigFraction).toBeGreaterThan(0.05);
    expect(d.bigFraction).toBeLessThan(0.6);
  });

  test('the style credits each tileset it draws once: the vector data, then the DEMs of terrain and contours', async () => {
    const m = await readManifestOrEmpty(out);
    expect(m.tilesets.terrain.attribution).toBe(DEM_CREDIT);
    expect(m.tilesets.contours.attribution).toBe(DEM_CREDIT);
    const vector = m.tilesets.openmaptiles.attribution;
    expect(vector).toContain('OpenStreetMap');
    expect(m.styles.topo.attribution).toBe(`${vector} | ${DEM_CREDIT}`);
  });
});
