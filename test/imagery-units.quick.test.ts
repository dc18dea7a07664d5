// The raster-tileset rules without GDAL, a build or a server: zooms from the pixel size, where @2x tiles
// are baked, what TileJSON, WMTS and packs say of a raster tileset, and what the server names in a 404.
import { describe, expect, it } from 'vitest';
import { servedTileForms, tilesetArchive, tilesetMaxzoom, tilesetScales, type TilesetEntry } from '../lib/manifest.ts';
import { tileJson } from '../lib/tilejson.ts';
import { parseConfig } from '../pipeline/config/index.ts';
import { imagerySettings } from '../pipeline/imagery/stage.ts';
import { zoomForMercatorPixel, Z0_METRES_PER_PIXEL } from '../pipeline/imagery/sources.ts';
import { extentMetres, warpArgs } from '../pipeline/imagery/warp.ts';
import { allPackSources, packMetadata, sourceExtent } from '../static-server/packs/sources.ts';
import { tilesetLayers } from '../static-server/styles/wmts-capabilities.ts';

const ORTHO: TilesetEntry = {
  archive: 'data/ortho.pmtiles', kind: 'raster', format: 'jpg', tileSize: 256, minzoom: 12, maxzoom: 19, bounds: [7.4, 43.7, 7.45, 43.76], center: [7.42, 43.73, 15],
  tiles: 100, bytes: 1000, hidpi: { archive: 'data/ortho@2x.pmtiles', maxzoom: 18, tiles: 40, bytes: 900 },
};

describe('zooms from the pixel size', () => {
  it('is the zoom whose Web Mercator pixels are just finer than the image', () => {
    // Landsat's 300 m at 24.5° N are 330 Web Mercator metres: z9 (306 m) is the first finer.
    expect(zoomForMercatorPixel(300 / Math.cos((24.5 * Math.PI) / 180))).toBe(9);
    // A pixel exactly z10's: z10, not z11.
    expect(zoomForMercatorPixel(Z0_METRES_PER_PIXEL / 1024)).toBe(10);
    expect(zoomForMercatorPixel(Z0_METRES_PER_PIXEL / 1024 * 0.999)).toBe(11);
    expect(zoomForMercatorPixel(1e7)).toBe(0);
    expect(zoomForMercatorPixel(1e-6)).toBe(24);
  });

  it('bakes @2x to one zoom less than the images are fine for, and only when asked', () => {
    const config = (t: Record<string, unknown>) => parseConfig({ tilesets: { ortho: { source: 'o.tif', ...t } } }, '/cfg/c.json');
    const settings = (t: Record<string, unknown>, nativeZoom: number) => imagerySettings(config(t), config(t).tilesets.ortho, { nativeZoom });
    expect(settings({}, 19)).toMatchObject({ format: 'png', minzoom: 0, maxzoom: 19, hidpiMaxzoom: 18, resampling: 'bilinear' });
    // Baked deeper than the images: @2x still stops where its pixels are the images' own.
    expect(settings({ maxzoom: 21 }, 19)).toMatchObject({ maxzoom: 21, hidpiMaxzoom: 18 });
    expect(settings({ maxzoom: 15 }, 19)).toMatchObject({ maxzoom: 15, hidpiMaxzoom: 15 });
    expect(settings({ scales: [1] }, 19).hidpiMaxzoom).toBeUndefined();
    expect(settings({ minzoom: 19 }, 19).hidpiMaxzoom).toBeUndefined();
    expect(settings({ minzoom: 12 }, 9)).toMatchObject({ minzoom: 12, maxzoom: 12 });
    expect(settings({ resampling: 'nearest', nodata: 0, format: 'webp' }, 9)).toMatchObject({ resampling: 'near', nodata: 0, format: 'webp' });
  });
});

describe('the warp', () => {
  it('covers a zoom\'s tile range in Web Mercator metres, with gdalwarp\'s own arguments', () => {
    const [minX, minY, maxX, maxY] = extentMetres({ z: 1, x0: 0, y0: 0, x1: 0, y1: 0 });
    expect([minX, minY, maxX, maxY].map((v) => Math.round(v))).toEqual([-20037508, 0, 0, 20037508]);
    expect(warpArgs({ resampling: 'bilinear', nodata: 0 }, [1, 2, 3, 4], 256, 512)).toEqual(['-t_srs', 'EPSG:3857', '-te', '1', '2', '3', '4', '-ts', '256', '512', '-r', 'bilinear', '-dstalpha', '-wm', '64', '-srcnodata', '0']);
  });
});

describe('a raster tileset as served', () => {
  it('has two scales, each with its archive and zooms, named in 404s', () => {
    expect(tilesetScales(ORTHO)).toEqual([1, 2]);
    expect([tilesetMaxzoom(ORTHO, 1), tilesetMaxzoom(ORTHO, 2)]).toEqual([19, 18]);
    expect([tilesetArchive(ORTHO, 1), tilesetArchive(ORTHO, 2)]).toEqual(['data/ortho.pmtiles', 'data/ortho@2x.pmtiles']);
    expect(servedTileForms(ORTHO)).toBe('{z}/{x}/{y}.jpg (z12-19) and {z}/{x}/{y}@2x.jpg (z12-18)');
    const { hidpi: _none, ...plain } = ORTHO;
    expect(tilesetScales(plain)).toEqual([1]);
    expect(tilesetArchive({ ...ORTHO, kind: 'terrain' }, 2)).toBeUndefined();
  });

  it('has TileJSON with its tile size and @2x tiles', () => {
    const tj = tileJson('ortho', ORTHO, 'https://t.example');
    expect(tj).toMatchObject({ tiles: ['https://t.example/data/ortho/{z}/{x}/{y}.jpg'], tiles_2x: ['https://t.example/data/ortho/{z}/{x}/{y}@2x.jpg'], maxzoom_2x: 18, tileSize: 256, format: 'jpg' });
    expect(tj.vector_layers).toBeUndefined();
  });

  it('is a WMTS layer per scale (prefixed data/ when a style has its id), other tilesets none', () => {
    const layers = tilesetLayers('ortho', ORTHO, 'https://t.example', 'data/ortho');
    expect(layers.map((l) => [l.identifier, l.scale, l.minzoom, l.maxzoom, l.root])).toEqual([
      ['data/ortho', 1, 12, 19, 'https://t.example/data/ortho/{TileMatrix}/{TileCol}/{TileRow}'],
      ['data/ortho@2x', 2, 12, 18, 'https://t.example/data/ortho/{TileMatrix}/{TileCol}/{TileRow}@2x'],
    ]);
    expect(tilesetLayers('v', { ...ORTHO, kind: 'vector', format: 'pbf' }, 'https://t.example')).toEqual([]);
  });

  it('packs as {id} and {id}@2x, the latter with 512 px tiles to its own maxzoom', () => {
    const sources = allPackSources({ version: 1, generatedAt: '', tilesets: { ortho: ORTHO }, styles: {} });
    expect(sources.map((s) => [s.name, s.archive, s.scale])).toEqual([['ortho', 'data/ortho.pmtiles', 1], ['ortho@2x', 'data/ortho@2x.pmtiles', 2]]);
    expect(sourceExtent(sources[1]).maxzoom).toBe(18);
    const meta = packMetadata(sources[1], { build: 'b', bounds: ORTHO.bounds, minzoom: 12, maxzoom: 18 }, 'area');
    expect(meta).toMatchObject({ tileSize: 512, format: 'jpg', maxzoom: 18 });
    expect(meta.tiles_2x).toBeUndefined();
  });
});
