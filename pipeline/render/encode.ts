// Slicing and encoding rendered metatiles is shared with `serve`'s on-demand renders.
export * from '../../lib/raster-encode.ts';
