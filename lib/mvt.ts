/**
 * The project's Mapbox Vector Tile (MVT 2.1) codec on `pbf` (no maintained MVT writer is among its
 * libraries): decode a tile into layers with each feature's geometry kept as its encoded command
 * stream, and encode layers back, tags sorted by key and key/value tables in first-use order, so that
 * equal layers give equal bytes. The OSM source re-encodes tilemaker's tiles with it; the contour
 * tiles are written with it (`encodeLineTile`), and the OSM source's fill rings (`partsGeometry`).
 */
import { PbfReader, PbfWriter } from 'pbf';

/** Default tile extent (coordinates run 0..extent across the tile). */
export const MVT_EXTENT = 4096;

/** A tag value as MVT stores it. */
export type TagValue = string | number | boolean;

/** One feature, geometry kept as its encoded command stream. */
export interface RawFeature {
  id?: number;
  type: number;
  /** The packed geometry field's bytes (MVT commands, zigzag deltas). */
  geometry: Uint8Array;
  tags: Map<string, TagValue>;
  /** True for number values stored as 32-bit floats (kept as such when not integral). */
  floatKeys?: Set<string>;
}

export interface RawLayer {
  name: string;
  version: number;
  extent: number;
  features: RawFeature[];
}

interface Value {
  v: TagValue;
  float: boolean;
}

function readValue(pbf: PbfReader, end: number): Value {
  const out: Value = { v: '', float: false };
  pbf.readFields(
    (tag, o, p) => {
      if (tag === 1) o.v = p.readString();
      else if (tag === 2) {
        o.v = p.readFloat();
        o.float = true;
      } else if (tag === 3) o.v = p.readDouble();
      else if (tag === 4) o.v = p.readVarint(true);
      else if (tag === 5) o.v = p.readVarint();
      else if (tag === 6) o.v = p.readSVarint();
      else if (tag === 7) o.v = p.readBoolean();
    },
    out,
    end,
  );
  return out;
}

/** Decode an (uncompressed) MVT tile into layers. */
export function decodeTile(data: Uint8Array): RawLayer[] {
  const pbf = new PbfReader(data);
  const layers: RawLayer[] = [];
  pbf.readFields((tag, ls, p) => {
    if (tag !== 3) return;
    const end = p.readVarint() + p.pos;
    const keys: string[] = [];
    const values: Value[] = [];
    const raw: { id?: number; type: number; geometry: Uint8Array; tags: number[] }[] = [];
    const layer: RawLayer = { name: '', version: 1, extent: 4096, features: [] };
    p.readFields(
      (t, l, q) => {
        if (t === 1) l.name = q.readString();
        else if (t === 2) {
          const f: { id?: number; type: number; geometry: Uint8Array; tags: number[] } = { type: 0, geometry: new Uint8Array(0), tags: [] };
          q.readFields(
            (ft, ff, r) => {
              if (ft === 1) ff.id = r.readVarint();
              else if (ft === 2) r.readPackedVarint(ff.tags);
              else if (ft === 3) ff.type = r.readVarint();
              else if (ft === 4) {
                if (r.type !== 2) throw new Error(`layer "${layer.name}": geometry is not a packed field`);
                ff.geometry = r.readBytes();
              }
            },
            f,
            q.readVarint() + q.pos,
          );
          raw.push(f);
        } else if (t === 3) keys.push(q.readString());
        else if (t === 4) values.push(readValue(q, q.readVarint() + q.pos));
        else if (t === 5) l.extent = q.readVarint();
        else if (t === 15) l.version = q.readVarint();
      },
      layer,
      end,
    );
    for (const f of raw) {
      const tags = new Map<string, TagValue>();
      let floatKeys: Set<string> | undefined;
      for (let i = 0; i + 1 < f.tags.length; i += 2) {
        const key = keys[f.tags[i]];
        const value = values[f.tags[i + 1]];
        if (key === undefined || value === undefined) throw new Error(`layer "${layer.name}": tag index out of range`);
        tags.set(key, value.v);
        if (value.float) (floatKeys ??= new Set()).add(key);
      }
      layer.features.push({ id: f.id, type: f.type, geometry: f.geometry, tags, floatKeys });
    }
    ls.push(layer);
  }, layers);
  return layers;
}

/** Canonical form of a value: integral numbers as integers, other numbers as float (32-bit) or double. */
export function valueKey(v: TagValue, float: boolean): string {
  if (typeof v === 'string') return `s${v}`;
  if (typeof v === 'boolean') return `b${v ? 1 : 0}`;
  if (Number.isInteger(v)) return `i${v}`;
  return `${float ? 'f' : 'd'}${v}`;
}

function writeValue(key: string, pbf: PbfWriter): void {
  const kind = key[0];
  const s = key.slice(1);
  if (kind === 's') pbf.writeStringField(1, s);
  else if (kind === 'b') pbf.writeBooleanField(7, s === '1');
  else if (kind === 'f') pbf.writeFloatField(2, Number(s));
  else if (kind === 'd') pbf.writeDoubleField(3, Number(s));
  else {
    const n = Number(s);
    if (n >= 0) pbf.writeVarintField(5, n);
    else pbf.writeSVarintField(6, n);
  }
}

/** Encode layers as an (uncompressed) MVT tile; tags are written sorted by key, tables in first-use order. */
export function encodeTile(layers: RawLayer[]): Uint8Array {
  const pbf = new PbfWriter();
  for (const layer of layers) {
    pbf.writeMessage(
      3,
      (l: RawLayer, p: PbfWriter) => {
        p.writeVarintField(15, l.version);
        p.writeStringField(1, l.name);
        const keyIndex = new Map<string, number>();
        const valueIndex = new Map<string, number>();
        const encoded = l.features.map((f) => {
          const tags: number[] = [];
          for (const k of [...f.tags.keys()].sort()) {
            const vk = valueKey(f.tags.get(k)!, f.floatKeys?.has(k) ?? false);
            if (!keyIndex.has(k)) keyIndex.set(k, keyIndex.size);
            if (!valueIndex.has(vk)) valueIndex.set(vk, valueIndex.size);
            tags.push(keyIndex.get(k)!, valueIndex.get(vk)!);
          }
          return { f, tags };
        });
        for (const { f, tags } of encoded) {
          p.writeMessage(
            2,
            (x: { f: RawFeature; tags: number[] }, q: PbfWriter) => {
              if (x.f.id !== undefined) q.writeVarintField(1, x.f.id);
              q.writePackedVarint(2, x.tags);
              q.writeVarintField(3, x.f.type);
              q.writeBytesField(4, x.f.geometry);
            },
            { f, tags },
          );
        }
        for (const k of keyIndex.keys()) p.writeStringField(3, k);
        for (const vk of valueIndex.keys()) p.writeMessage(4, writeValue, vk);
        p.writeVarintField(5, l.extent);
      },
      layer,
    );
  }
  return pbf.finish();
}


/** Feature geometry types (the spec's GeomType). */
export const GEOM_TYPE = { Point: 1, LineString: 2, Polygon: 3 } as const;
/** Geometry command ids (the spec's MoveTo, LineTo, ClosePath). */
export const GEOM_COMMAND = { MoveTo: 1, LineTo: 2, ClosePath: 7 } as const;
const MVT_VERSION = 2;

const zigzag = (n: number) => (n << 1) ^ (n >> 31);
const command = (id: number, count: number) => (count << 3) | (id & 0x7);

/**
 * The command stream of a (multi)line, or with `close` of polygon rings (closing point not repeated):
 * MoveTo + LineTo (+ ClosePath) per part, deltas from the previous point; parts of fewer than 2
 * points are left out (empty without any).
 */
export function partsGeometry(parts: number[][], close = false): Uint8Array {
  const pbf = new PbfWriter();
  let px = 0, py = 0;
  for (const l of parts) {
    const n = l.length / 2;
    if (n < 2) continue;
    pbf.writeVarint(command(GEOM_COMMAND.MoveTo, 1));
    pbf.writeVarint(zigzag(l[0] - px));
    pbf.writeVarint(zigzag(l[1] - py));
    pbf.writeVarint(command(GEOM_COMMAND.LineTo, n - 1));
    for (let i = 1; i < n; i++) {
      pbf.writeVarint(zigzag(l[2 * i] - l[2 * i - 2]));
      pbf.writeVarint(zigzag(l[2 * i + 1] - l[2 * i - 1]));
    }
    if (close) pbf.writeVarint(command(GEOM_COMMAND.ClosePath, 1));
    px = l[2 * n - 2];
    py = l[2 * n - 1];
  }
  return pbf.finish();
}

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

/** Encode layers of line features as an (uncompressed) MVT. Features without a line and empty layers are left out. */
export function encodeLineTile(layers: LineLayer[]): Uint8Array {
  const raw: RawLayer[] = [];
  for (const l of layers) {
    const features: RawFeature[] = [];
    for (const f of l.features) {
      const geometry = partsGeometry(f.lines);
      if (geometry.length > 0) features.push({ type: GEOM_TYPE.LineString, geometry, tags: new Map(Object.entries(f.properties)) });
    }
    if (features.length > 0) raw.push({ name: l.name, version: MVT_VERSION, extent: l.extent ?? MVT_EXTENT, features });
  }
  return encodeTile(raw);
}
