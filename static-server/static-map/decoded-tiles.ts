/**
 * Decoded raster tiles for static maps and upscaled tiles: decoding dominates composing an image
 * from tiles already in the tile cache, and nearby views share tiles. An LRU bounded in bytes (a
 * quarter of the tile cache's share of `--cache-mb`), concurrent decodes of one tile shared. Kept as
 * sharp decodes them (sRGB, 8 bits, RGB or RGBA with straight alpha), the form static-map/compose.ts
 * copies into the region it hands to sharp; an RGB tile next to a missing one is also kept with an
 * alpha band added (a region with transparency is RGBA throughout).
 */
import sharp from 'sharp';
import type { ByteLru } from '../../lib/lru.ts';
import { perContextCache } from '../context-cache.ts';
import { BoundedCache } from '../../lib/bounded-cache.ts';

/** One decoded tile: `size`×`size` pixels, `channels` bytes each (RGB, or RGBA with straight alpha). */
export interface DecodedTile {
  data: Buffer;
  channels: 3 | 4;
  size: number;
}

/** Share of the tile cache's budget given to decoded tiles. */
const DECODED_SHARE = 1 / 4;

/** Decode encoded tile bytes (with an alpha band added when `alpha`). */
async function decode(key: string, bytes: Uint8Array, alpha: boolean): Promise<DecodedTile> {
  // sRGB, 8 bits: grey or 16-bit tiles come out as RGB(A) bytes too.
  const s = sharp(bytes).toColourspace('srgb');
  const { data, info } = await (alpha ? s.ensureAlpha() : s).raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
  if (info.width !== info.height) throw new Error(`raster tile ${key} is ${info.width}x${info.height} px, not square`);
  if (info.channels !== 3 && info.channels !== 4) throw new Error(`raster tile ${key} decoded to ${info.channels} bands, expected RGB or RGBA`);
  return { data, channels: info.channels as 3 | 4, size: info.width };
}

export class DecodedTiles {
  private readonly tiles: BoundedCache<DecodedTile>;

  constructor(maxBytes: number) {
    this.tiles = new BoundedCache(maxBytes, (t) => t.data.length);
  }

  /** The LRU (for metrics and tests). */
  get cache(): ByteLru<string, DecodedTile> {
    return this.tiles.entries;
  }

  /** The decoded pixels of encoded `bytes` (RGBA when `alpha`, else as stored), cached under `key`. */
  get(key: string, bytes: Uint8Array, alpha = false): Promise<DecodedTile> {
    return this.tiles.getOrLoad(alpha ? `${key}+alpha` : key, () => decode(key, bytes, alpha));
  }
}

/** The decoded tile cache of a server context (created on first use, next to its Archives). */
export const decodedTilesOf = perContextCache('decoded-tiles', DECODED_SHARE, (bytes) => new DecodedTiles(bytes), (d) => d.cache);
