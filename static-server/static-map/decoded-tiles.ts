/**
 * Decoded raster tiles (raw RGBA) for static maps and upscaled tiles: decoding dominates composing an
 * image from tiles already in the tile cache, and nearby views share tiles. An LRU bounded in bytes (a
 * quarter of the tile cache's share of `--cache-mb`), concurrent decodes of one tile shared.
 */
import sharp from 'sharp';
import { ByteLru } from '../../lib/lru.ts';
import { cacheBudgetBytes, type ServerContext } from '../context.ts';
import { serverMetrics } from '../metrics.ts';

/** One decoded tile. */
export interface DecodedTile {
  /** RGBA, `size`×`size`. */
  data: Buffer;
  size: number;
  /** True when some pixel is not opaque. */
  alpha: boolean;
}

/** Whether any pixel of RGBA pixels is not opaque. */
function anyTranslucent(rgba: Buffer): boolean {
  for (let i = 3; i < rgba.length; i += 4) if (rgba[i] !== 255) return true;
  return false;
}

/** Share of the tile cache's budget given to decoded tiles. */
const DECODED_SHARE = 1 / 4;

export class DecodedTiles {
  readonly cache: ByteLru<string, DecodedTile>;
  private readonly pending = new Map<string, Promise<DecodedTile>>();

  constructor(maxBytes: number) {
    this.cache = new ByteLru(maxBytes);
  }

  /** The decoded pixels of encoded `bytes`, cached under `key`. */
  get(key: string, bytes: Uint8Array): Promise<DecodedTile> {
    const hit = this.cache.get(key);
    if (hit) return Promise.resolve(hit);
    let p = this.pending.get(key);
    if (!p) {
      p = (async () => {
        // sRGB: grey tiles get three bands too. An RGBA tile whose pixels are all opaque counts as opaque.
        const { data, info } = await sharp(bytes).toColourspace('srgb').ensureAlpha().raw().toBuffer({ resolveWithObject: true });
        if (info.width !== info.height) throw new Error(`raster tile ${key} is ${info.width}x${info.height} px, not square`);
        if (info.channels !== 4) throw new Error(`raster tile ${key} decoded to ${info.channels} bands, expected RGBA`);
        const tile = { data, size: info.width, alpha: anyTranslucent(data) };
        this.cache.set(key, tile, data.length);
        return tile;
      })();
      p.finally(() => this.pending.delete(key)).catch(() => undefined);
      this.pending.set(key, p);
    }
    return p;
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
