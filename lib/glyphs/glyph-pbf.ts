import { PbfReader, PbfWriter } from 'pbf';

/**
 * The glyph PBF format of MapLibre / Mapbox GL (mapbox/glyph-pbf-composite, `glyphs.proto`):
 * `glyphs { stacks { name, range, glyphs { id, bitmap, width, height, left, top, advance } } }`.
 */

/** Field numbers of `message glyphs`. */
const enum GlyphsField {
  Stacks = 1,
}

/** Field numbers of `message fontstack`. */
const enum StackField {
  Name = 1,
  Range = 2,
  Glyphs = 3,
}

/** Field numbers of `message glyph`. */
const enum GlyphField {
  Id = 1,
  Bitmap = 2,
  Width = 3,
  Height = 4,
  Left = 5,
  Top = 6,
  Advance = 7,
}

/** One glyph: its SDF bitmap (with a 3 px border) and metrics. */
export interface Glyph {
  id: number;
  bitmap?: Uint8Array;
  width: number;
  height: number;
  left: number;
  top: number;
  advance: number;
}

/** One font stack in a glyph PBF: `name` is the stack, `range` like `0-255`. */
export interface GlyphStack {
  name: string;
  range: string;
  glyphs: Glyph[];
}

function readGlyph(tag: number, g: Glyph, pbf: PbfReader): void {
  if (tag === GlyphField.Id) g.id = pbf.readVarint();
  else if (tag === GlyphField.Bitmap) g.bitmap = pbf.readBytes();
  else if (tag === GlyphField.Width) g.width = pbf.readVarint();
  else if (tag === GlyphField.Height) g.height = pbf.readVarint();
  else if (tag === GlyphField.Left) g.left = pbf.readSVarint();
  else if (tag === GlyphField.Top) g.top = pbf.readSVarint();
  else if (tag === GlyphField.Advance) g.advance = pbf.readVarint();
}

function readStack(tag: number, s: GlyphStack, pbf: PbfReader): void {
  if (tag === StackField.Name) s.name = pbf.readString();
  else if (tag === StackField.Range) s.range = pbf.readString();
  else if (tag === StackField.Glyphs) {
    s.glyphs.push(pbf.readMessage(readGlyph, { id: 0, width: 0, height: 0, left: 0, top: 0, advance: 0 }));
  }
}

function readStacks(tag: number, out: GlyphStack[], pbf: PbfReader): void {
  if (tag === GlyphsField.Stacks) out.push(pbf.readMessage(readStack, { name: '', range: '', glyphs: [] }));
}

/** Decode a glyph PBF into its font stacks (usually one). */
export function decodeGlyphs(bytes: Uint8Array): GlyphStack[] {
  return new PbfReader(bytes).readFields(readStacks, []);
}

function writeGlyph(g: Glyph, pbf: PbfWriter): void {
  pbf.writeVarintField(GlyphField.Id, g.id);
  if (g.bitmap && g.bitmap.length > 0) pbf.writeBytesField(GlyphField.Bitmap, g.bitmap);
  pbf.writeVarintField(GlyphField.Width, g.width);
  pbf.writeVarintField(GlyphField.Height, g.height);
  pbf.writeSVarintField(GlyphField.Left, g.left);
  pbf.writeSVarintField(GlyphField.Top, g.top);
  pbf.writeVarintField(GlyphField.Advance, g.advance);
}

function writeStack(s: GlyphStack, pbf: PbfWriter): void {
  pbf.writeStringField(StackField.Name, s.name);
  pbf.writeStringField(StackField.Range, s.range);
  for (const g of s.glyphs) pbf.writeMessage(StackField.Glyphs, writeGlyph, g);
}

/** Encode font stacks as a glyph PBF. */
export function encodeGlyphs(stacks: GlyphStack[]): Uint8Array {
  const pbf = new PbfWriter();
  for (const s of stacks) pbf.writeMessage(GlyphsField.Stacks, writeStack, s);
  return pbf.finish();
}

/**
 * Combine the glyph PBFs of the fonts of one stack, in stack order: each codepoint comes from the
 * first font that has it. `parts` holds the fonts' files for this range (missing fonts left out).
 */
export function combineGlyphs(parts: Uint8Array[], name: string, range: string): Uint8Array {
  const byId = new Map<number, Glyph>();
  for (const part of parts) {
    for (const stack of decodeGlyphs(part)) {
      for (const g of stack.glyphs) if (!byId.has(g.id)) byId.set(g.id, g);
    }
  }
  const glyphs = [...byId.values()].sort((a, b) => a.id - b.id);
  return encodeGlyphs([{ name, range, glyphs }]);
}
