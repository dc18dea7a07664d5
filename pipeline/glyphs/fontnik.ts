/**
 * Mapbox's glyph generator, node-fontnik (FreeType + sdf-glyph-foundry; its Linux x64 build is
 * shipped inside the npm package): the SDF glyph PBFs MapLibre GL reads, at MapLibre's parameters
 * (24 px, a 3 px buffer, radius 8, cutoff 0.25, fixed in fontnik).
 */
import { packageRequire } from '../../lib/package-root.ts';

/** A face of a font file as fontnik reads it: names and the code points it maps. */
export interface FontFace {
  family_name: string;
  style_name?: string;
  points: number[];
}

interface Fontnik {
  load(font: Buffer, done: (err: Error | null, faces: FontFace[]) => void): void;
  range(opts: { font: Buffer; start: number; end: number }, done: (err: Error | null, pbf: Buffer) => void): void;
}

const fontnik = packageRequire('fontnik') as Fontnik;

/** The fontnik version (part of the glyph cache key: another version may draw other bitmaps). */
export const FONTNIK_VERSION = (packageRequire('fontnik/package.json') as { version: string }).version;

/** The faces of a font file (TrueType, OpenType, or a collection). */
export function loadFont(font: Buffer): Promise<FontFace[]> {
  return new Promise((resolve, reject) => fontnik.load(font, (err, faces) => (err ? reject(err) : resolve(faces))));
}

/** The glyph PBF of `font`'s code points `start`..`end` (one font stack named after the font). */
export function glyphRange(font: Buffer, start: number, end: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => fontnik.range({ font, start, end }, (err, pbf) => (err ? reject(err) : resolve(pbf))));
}
