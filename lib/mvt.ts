/**
 * A Mapbox Vector Tile (MVT 2.1) encoder for line features with numeric attributes, on `pbf`: what
 * the contour tiles need (no maintained MVT writer is among the project's libraries).
 */
import { PbfWriter } from 'pbf';

/** Default tile extent (coordinates run 0..extent across the tile). */
export const MVT_EXTENT = 4096;

/** A line feature: parts as flat `[x0, y0, x1, y1, …]` integer tile coordinates. */
export interface LineFeature {
  lines: number[][];
  properties: Record<string, number>;
}

/** One layer of line features. */
export interface LineLayer {
  name: string;
  features: LineFeature[];
  extent?: number;
}

/** Field numbers of `Tile`, `Layer`, `Feature` and `Value` in vector_tile.proto. */
const enum TileField {
  Layers = 3,
}
const enum LayerField {
  Name = 1,
  Features = 2,
  Keys = 3,
  Values = 4,
  Extent = 5,
  Version = 15,
}
const enum FeatureField {
  Tags = 2,
  Type = 3,
  Geometry = 4,
}
const enum ValueField {
  Double = 3,
  Uint = 5,
  Sint = 6,
}
/** Geometry types and commands. */
const enum Geom {
  LineString = 2,
  MoveTo = 1,
  LineTo = 2,
}
const MVT_VERSION = 2;

const zigzag = (n: number) => (n << 1) ^ (n >> 31);
const command = (id: number, count: number) => (count << 3) | (id & 0x7);

/** The command stream of a (multi)line: MoveTo + LineTo per part, deltas from the previous point. */
function lineGeometry(lines: number[][]): number[] {
  const out: number[] = [];
  let px = 0, py = 0;
  for (const l of lines) {
    const n = l.length / 2;
    if (n < 2) continue;
    out.push(command(Geom.MoveTo, 1), zigzag(l[0] - px), zigzag(l[1] - py));
    out.push(command(Geom.LineTo, n - 1));
    for (let i = 1; i < n; i++) out.push(zigzag(l[2 * i] - l[2 * i - 2]), zigzag(l[2 * i + 1] - l[2 * i - 1]));
    px = l[2 * n - 2];
    py = l[2 * n - 1];
  }
  return out;
}

function writeValue(v: number, pbf: PbfWriter): void {
  if (!Number.isInteger(v)) pbf.writeDoubleField(ValueField.Double, v);
  else if (v >= 0) pbf.writeVarintField(ValueField.Uint, v);
  else pbf.writeSVarintField(ValueField.Sint, v);
}

function writeLayer(layer: LineLayer, pbf: PbfWriter): void {
  pbf.writeVarintField(LayerField.Version, MVT_VERSION);
  pbf.writeStringField(LayerField.Name, layer.name);
  const keys = new Map<string, number>();
  const values = new Map<number, number>();
  const tagsOf = (props: Record<string, number>) => {
    const tags: number[] = [];
    for (const [k, v] of Object.entries(props)) {
      if (!keys.has(k)) keys.set(k, keys.size);
      if (!values.has(v)) values.set(v, values.size);
      tags.push(keys.get(k)!, values.get(v)!);
    }
    return tags;
  };
  for (const f of layer.features) {
    const geometry = lineGeometry(f.lines);
    if (geometry.length === 0) continue;
    const tags = tagsOf(f.properties);
    pbf.writeMessage(LayerField.Features, (_: unknown, p: PbfWriter) => {
      p.writePackedVarint(FeatureField.Tags, tags);
      p.writeVarintField(FeatureField.Type, Geom.LineString);
      p.writePackedVarint(FeatureField.Geometry, geometry);
    }, null);
  }
  for (const k of keys.keys()) pbf.writeStringField(LayerField.Keys, k);
  for (const v of values.keys()) pbf.writeMessage(LayerField.Values, writeValue, v);
  pbf.writeVarintField(LayerField.Extent, layer.extent ?? MVT_EXTENT);
}

/** Encode layers of line features as an (uncompressed) MVT. Empty layers are left out. */
export function encodeLineTile(layers: LineLayer[]): Uint8Array {
  const pbf = new PbfWriter();
  for (const l of layers) if (l.features.length) pbf.writeMessage(TileField.Layers, writeLayer, l);
  return pbf.finish();
}
