/**
 * tilebake's native addon (lib/native/: C, SSE2/AVX2 chosen at run time, an N-API module compiled by
 * `make setup` → scripts/build-native.mjs): the PNG encoder (lib/png-fast.ts), the resamplers
 * (lib/resample-fast.ts), and the static maps' overlay rasteriser and blend
 * (static-server/static-map/overlay-raster.ts). Loaded on first use; a clear error when it is not built.
 */
import { existsSync } from 'node:fs';
import { packagePath, packageRequire } from './package-root.ts';

/** The addon's file, built from lib/native/ by scripts/build-native.mjs. */
export const NATIVE_ADDON = packagePath('lib', 'native', 'build', 'Release', 'tilebake_native.node');

/** Instruction sets of the native code, best last (the `simd` options: the output is the same at every level). */
export const SIMD = { none: 1, sse2: 2, avx2: 3 } as const;
export type SimdLevel = keyof typeof SIMD;

export interface Addon {
  /** `src`: an image, or tiles with `grid` = cols, tileSize, left, top (lib/resample-fast.ts's TileGrid). */
  resizeLinear(src: Uint8Array | (Uint8Array | null)[], sw: number, sh: number, channels: 1 | 3, dst: Uint8Array, dw: number, dh: number, xFirst: Int32Array, xIndex: Int32Array, xTable: Int16Array, xTaps: number, yFirst: Int32Array, yIndex: Int32Array, yTable: Int16Array, yTaps: number, simd: number, ...grid: number[]): Promise<void>;
  resizeReduce(src: Uint8Array | (Uint8Array | null)[], sw: number, sh: number, channels: 1 | 3, dst: Uint8Array, dw: number, dh: number, xFirst: Int32Array, xIndex: Int32Array, xTable: Int16Array, xTaps: number, yFirst: Int32Array, yIndex: Int32Array, yTable: Int16Array, yTaps: number, simd: number, ...grid: number[]): Promise<void>;
  encode(pixels: Uint8Array, width: number, height: number, channels: 3 | 4, alpha: Uint8Array | null, premultiplied: boolean, async: boolean, simd: number, allocate?: (bytes: number) => Buffer): Buffer | Promise<Buffer>;
  /** Blend straight RGBA `overlay` (ow×oh at left, top) over premultiplied `rgb` and `alpha` in place. */
  blend(rgb: Uint8Array, alpha: Uint8Array | null, width: number, height: number, overlay: Uint8Array, left: number, top: number, ow: number, oh: number): void;
  /** Overlay operations (static-server/static-map/overlay-ops.ts) drawn onto premultiplied `rgb` and `alpha` in place, within the ow×oh box at (left, top). */
  drawOverlay(rgb: Uint8Array, alpha: Uint8Array | null, width: number, height: number, ops: Float64Array, left: number, top: number, ow: number, oh: number): void;
  simdLevel(): number;
}

let addon: Addon | undefined;

/** The addon (lib/native/), loaded on first use; a clear error when it is not built. */
export function loadNative(): Addon {
  if (!addon) {
    if (!existsSync(NATIVE_ADDON)) throw new Error(`tilebake: the native addon is not built (${NATIVE_ADDON} is missing): run \`make setup\` (it needs a C compiler)`);
    addon = packageRequire(NATIVE_ADDON) as Addon;
  }
  return addon;
}

/** The instruction set the encoder uses on this machine. */
export function simdLevel(): SimdLevel {
  const level = loadNative().simdLevel();
  return (Object.keys(SIMD) as SimdLevel[]).find((k) => SIMD[k] === level)!;
}
