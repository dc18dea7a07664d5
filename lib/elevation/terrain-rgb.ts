/** How heights are packed into RGB pixels of terrain tiles. */
export type TerrainEncoding = 'terrarium' | 'mapbox';

/** Largest 24-bit value. */
const MAX_24 = 0xffffff;
/** Terrarium: h = R*256 + G + B/256 - 32768. */
const TERRARIUM_OFFSET = 32768;
const TERRARIUM_SCALE = 256;
/** Mapbox terrain-RGB: h = -10000 + (R*65536 + G*256 + B) * 0.1. */
const MAPBOX_OFFSET = 10000;
const MAPBOX_SCALE = 10;

/** Height step each encoding can represent, in metres (rounding error is at most half of it). */
export const ENCODING_STEP: Record<TerrainEncoding, number> = { terrarium: 1 / TERRARIUM_SCALE, mapbox: 1 / MAPBOX_SCALE };

/** Write height `h` (metres) as RGB at `out[i..i+2]`, rounded to the encoding's step and clamped. */
export function encodeHeightRgb(encoding: TerrainEncoding, h: number, out: Uint8Array, i: number): void {
  let v = encoding === 'terrarium' ? Math.round((h + TERRARIUM_OFFSET) * TERRARIUM_SCALE) : Math.round((h + MAPBOX_OFFSET) * MAPBOX_SCALE);
  v = v < 0 ? 0 : v > MAX_24 ? MAX_24 : v;
  out[i] = v >> 16;
  out[i + 1] = (v >> 8) & 0xff;
  out[i + 2] = v & 0xff;
}

/** Height in metres of an RGB pixel. */
export function decodeHeightRgb(encoding: TerrainEncoding, r: number, g: number, b: number): number {
  if (encoding === 'terrarium') return r * 256 + g + b / TERRARIUM_SCALE - TERRARIUM_OFFSET;
  return -MAPBOX_OFFSET + (r * 65536 + g * 256 + b) / MAPBOX_SCALE;
}
