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

/** Each encoding's packing: value = round((h + offset) · scale) as 24-bit big-endian RGB. */
const PACKING: Record<TerrainEncoding, { offset: number; scale: number }> = {
  terrarium: { offset: TERRARIUM_OFFSET, scale: TERRARIUM_SCALE },
  mapbox: { offset: MAPBOX_OFFSET, scale: MAPBOX_SCALE },
};

/** Write height `h` (metres) as RGB at `out[i..i+2]`, rounded to the encoding's step and clamped. */
export function encodeHeightRgb(encoding: TerrainEncoding, h: number, out: Uint8Array, i: number): void {
  const { offset, scale } = PACKING[encoding];
  let v = Math.round((h + offset) * scale);
  v = v < 0 ? 0 : v > MAX_24 ? MAX_24 : v;
  out[i] = v >> 16;
  out[i + 1] = (v >> 8) & 0xff;
  out[i + 2] = v & 0xff;
}

/** `encodeHeightRgb` for every height of `heights` into `out` (3 bytes each); NaN (no data) encodes 0 m. */
export function encodeHeightsRgb(encoding: TerrainEncoding, heights: Float64Array, out: Uint8Array): void {
  const { offset, scale } = PACKING[encoding];
  for (let i = 0, j = 0; i < heights.length; i++, j += 3) {
    const h = heights[i];
    let v = Math.round(((h === h ? h : 0) + offset) * scale);
    v = v < 0 ? 0 : v > MAX_24 ? MAX_24 : v;
    out[j] = v >> 16;
    out[j + 1] = (v >> 8) & 0xff;
    out[j + 2] = v & 0xff;
  }
}

/** Height in metres of an RGB pixel. */
export function decodeHeightRgb(encoding: TerrainEncoding, r: number, g: number, b: number): number {
  if (encoding === 'terrarium') return r * 256 + g + b / TERRARIUM_SCALE - TERRARIUM_OFFSET;
  return -MAPBOX_OFFSET + (r * 65536 + g * 256 + b) / MAPBOX_SCALE;
}
