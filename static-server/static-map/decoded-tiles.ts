/**
 * Decoded raster tiles for static maps and upscaled tiles: decoding dominates composing an image
 * from tiles already in the tile cache, and nearby views share tiles. An LRU bounded in bytes (a
 * quarter of the tile cache's share of `--cache-mb`), concurrent decodes of one tile shared. Kept as
 * premultiplied RGB and an alpha plane, the form static-map/compose.ts works in.
 */
import sharp from 'sharp';
import type { ByteLru } from '../../lib/lru.ts';
import { cacheBudgetBytes, type ServerContext } from '../context.ts';
import { serverMetrics } from '../metrics.ts';
import { BoundedCache } from '../../lib/bounded-cache.ts';

/** One decoded tile: RGB premultiplied by alpha, and the alpha plane unless every pixel is opaque. */
export interface DecodedTile {
  /** `size`×`size` RGB, premultiplied. */
  rgb: Buffer;
  /** `size`×`size` alpha, or null when every pixel is opaque. */
  alpha: Buffer | null;
  size: number;
}

/** Split RGBA into premultiplied RGB and an alpha plane (null when every pixel is opaque). */
function splitAlpha(rgba: Buffer): Pick<DecodedTile, 'rgb' | 'alpha'> {
  const px = rgba.length / 4;
  const rgb = Buffer.allocUnsafe(px * 3), alpha = Buffer.allocUnsafe(px);
  let opaque = true;
  for (let i = 0, j = 0, k = 0; k < px; i += 4, j += 3, k++) {
    const a = rgba[i + 3];
    alpha[k] = a;
    if (a !== 255) opaque = false;
    rgb[j] = (rgba[i] * a + 127) / 255;
    rgb[j + 1] = (rgba[i + 1] * a + 127) / 255;
    rgb[j + 2] = (rgba[i + 2] * a + 127) / 255;
  }
  return { rgb, alpha: opaque ? null : alpha };
}

/** Share of the tile cache's budget given to decoded tiles. */
const DECODED_SHARE = 1 / 4;

/** Decode encoded tile bytes into the compose form. */
async function decode(key: string, bytes: Uint8Array): Promise<DecodedTile> {
  // sRGB, 8 bits: grey or 16-bit tiles come out as RGB(A) bytes too. An RGBA tile whose pixels are all opaque counts as opaque.
  const { data, info } = await sharp(bytes).toColourspace('srgb').raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
  if (info.width !== info.height) throw new Error(`raster tile ${key} is ${info.width}x${info.height} px, not square`);
  if (info.channels !== 3 && info.channels !== 4) throw new Error(`raster tile ${key} decoded to ${info.channels} bands, expected RGB or RGBA`);
  return { ...(info.channels === 3 ? { rgb: data, alpha: null } : splitAlpha(data)), size: info.width };
}

export class DecodedTiles {
  private readonly tiles: BoundedCache<DecodedTile>;

  constructor(maxBytes: number) {
    this.tiles = new BoundedCache(maxBytes, (t) => t.rgb.length + (t.alpha?.length ?? 0));
  }

  /** The LRU (for metrics and tests). */
  get cache(): ByteLru<string, DecodedTile> {
    return this.tiles.entries;
  }

  /** The decoded pixels of encoded `bytes`, cached under `key`. */
  get(key: string, bytes: Uint8Array): Promise<DecodedTile> {
    return this.tiles.getOrLoad(key, () => decode(key, bytes));
  }
}

const byContext = new WeakMap<ServerContext, DecodedTiles>();

/** The decoded tile cache of a server context (created on first use, next to its Archives). */
export function decodedTilesOf(ctx: ServerContext): DecodedTiles {
  let d = byContext.get(ctx);
  if (!d) {
    d = new DecodedTiles(Math.floor(cacheBudgetBytes(ctx, 'tiles') * DECODED_SHARE));
    serverMetrics().watchCache('decoded-tiles', d.cache);
    byContext.set(ctx, d);
  }
  return d;
}
