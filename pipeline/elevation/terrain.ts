import sharp from 'sharp';
import type { ElevationIndex } from '../../lib/elevation/reader.ts';
import { encodeHeightRgb } from '../../lib/elevation/terrain-rgb.ts';
import type { TilesetEntry } from '../../lib/manifest.ts';
import { Compression, PMTilesWriter, TileType } from '../../lib/pmtiles/index.ts';
import { MAX_LATITUDE, tileCountInBBox, tilesInBBox, type BBox } from '../../lib/tile-math.ts';
import type { TerrainConfig } from '../config/elevation.ts';
import { createProgress } from '../progress.ts';

/** Pixels per terrain tile side. */
export const TERRAIN_TILE_SIZE = 256;
/** Tiles rendered concurrently (sharp encodes on libvips threads). */
const TILES_IN_FLIGHT = 4;
/** PNG zlib level for terrain tiles. */
const PNG_COMPRESSION_LEVEL = 6;
const CHANNELS = 3;

/** Lat/lon of every pixel centre of tile z/x/y, row by row. */
export function pixelCentres(z: number, x: number, y: number, size = TERRAIN_TILE_SIZE): { lat: number; lon: number }[] {
  const n = 2 ** z;
  const out: { lat: number; lon: number }[] = new Array(size * size);
  for (let py = 0; py < size; py++) {
    const my = (y + (py + 0.5) / size) / n;
    const lat = (Math.atan(Math.sinh(Math.PI * (1 - 2 * my))) * 180) / Math.PI;
    for (let px = 0; px < size; px++) out[py * size + px] = { lat, lon: ((x + (px + 0.5) / size) / n) * 360 - 180 };
  }
  return out;
}

/** One terrain tile's image bytes, or undefined when no pixel has a height. Pixels without data encode 0 m. */
export async function renderTerrainTile(index: ElevationIndex, cfg: Pick<TerrainConfig, 'encoding' | 'format'>, z: number, x: number, y: number): Promise<Uint8Array | undefined> {
  const { heights } = await index.heights(pixelCentres(z, x, y));
  if (!heights.some((h) => h !== null)) return undefined;
  const rgb = new Uint8Array(heights.length * CHANNELS);
  for (let i = 0; i < heights.length; i++) encodeHeightRgb(cfg.encoding, heights[i] ?? 0, rgb, i * CHANNELS);
  const img = sharp(rgb, { raw: { width: TERRAIN_TILE_SIZE, height: TERRAIN_TILE_SIZE, channels: CHANNELS } });
  // Terrain must be lossless: WebP in lossless mode.
  const out = cfg.format === 'png' ? img.png({ compressionLevel: PNG_COMPRESSION_LEVEL }) : img.webp({ lossless: true });
  return new Uint8Array(await out.toBuffer());
}

/**
 * Write terrain tiles for the index's bounds at minzoom..maxzoom into `archivePath` (PMTiles),
 * returning the manifest entry (without `archive`, which the caller knows relative to the output).
 */
export async function writeTerrainTiles(index: ElevationIndex, cfg: TerrainConfig, archivePath: string, attribution?: string): Promise<Omit<TilesetEntry, 'archive'>> {
  const b = index.meta.bounds;
  const bounds: BBox = [Math.max(-180, b[0]), Math.max(-MAX_LATITUDE, b[1]), Math.min(180, b[2]), Math.min(MAX_LATITUDE, b[3])];
  const center: [number, number, number] = [(bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2, Math.max(cfg.minzoom, Math.min(cfg.maxzoom, 10))];
  const metadata: Record<string, unknown> = { name: cfg.id, format: cfg.format, encoding: cfg.encoding, type: 'baselayer', description: `Terrain-RGB (${cfg.encoding}) from the elevation index` };
  if (attribution) metadata.attribution = attribution;
  const writer = await PMTilesWriter.create(archivePath, {
    tileType: cfg.format === 'png' ? TileType.Png : TileType.Webp,
    tileCompression: Compression.None,
    metadata,
    bounds,
    center,
  });
  const progress = createProgress(`terrain ${cfg.id}`, tileCountInBBox(bounds, cfg.minzoom, cfg.maxzoom));
  let tiles = 0;
  try {
    let batch: { z: number; x: number; y: number }[] = [];
    const flush = async () => {
      const imgs = await Promise.all(batch.map((t) => renderTerrainTile(index, cfg, t.z, t.x, t.y)));
      for (let k = 0; k < batch.length; k++) {
        const img = imgs[k];
        if (img) {
          await writer.addTile(batch[k].z, batch[k].x, batch[k].y, img);
          tiles++;
        }
      }
      progress.tick(batch.length);
      batch = [];
    };
    for (const t of tilesInBBox(bounds, cfg.minzoom, cfg.maxzoom)) {
      batch.push(t);
      if (batch.length >= TILES_IN_FLIGHT) await flush();
    }
    await flush();
    const res = await writer.finish();
    progress.done();
    return {
      kind: 'terrain', format: cfg.format, encoding: cfg.encoding, name: cfg.id, attribution,
      description: metadata.description as string, minzoom: cfg.minzoom, maxzoom: cfg.maxzoom,
      bounds, center, tiles, bytes: res.bytes,
    };
  } catch (e) {
    progress.done();
    await writer.abort();
    throw e;
  }
}
