/**
 * The elevation index file format (see docs/elevation-index.md). All integers little-endian.
 *
 *   0   8 bytes  magic "TBELEVIX"
 *   8   u16      format version (FORMAT_VERSION)
 *   10  u16      reserved (0)
 *   12  u32      length M of the JSON metadata that follows
 *   16  M bytes  UTF-8 JSON: IndexMeta
 *   ...          per layer, its block directory at layer.directoryOffset: blockRows*blockCols entries
 *   ...          compressed blocks at the offsets the directory gives
 */

/** File signature. */
export const MAGIC = 'TBELEVIX';
/** Current format version; readers reject other major versions. */
export const FORMAT_VERSION = 1;
/** Bytes before the JSON metadata. */
export const PREAMBLE_BYTES = 16;
/** Bytes of one block directory entry. */
export const DIR_ENTRY_BYTES = 20;
/** Default posts per block side (power of two). */
export const DEFAULT_BLOCK_SIZE = 256;

/** Code widths of a block: 0 = no data in the block (no payload), 2 = u16 codes, 4 = u32 codes. */
export enum CodeWidth {
  Empty = 0,
  U16 = 2,
  U32 = 4,
}

/** Block compression. */
export enum BlockCompression {
  /** zlib stream (RFC 1950) of the delta-coded, byte-planed codes. */
  Zlib = 1,
}

/** The nodata code for a code width: the largest unsigned value. */
export function nodataCode(width: CodeWidth): number {
  return width === CodeWidth.U16 ? 0xffff : 0xffffffff;
}

/** Where a grid of posts lies: a lat/lon lattice (of a DEM file, or of an index layer). */
export interface PostLattice {
  /** Latitude of post row 0 (the north edge), degrees. */
  originLat: number;
  /** Longitude of post column 0 (the west edge), degrees. */
  originLon: number;
  /** Degrees between post rows (positive; rows go south). */
  stepLat: number;
  /** Degrees between post columns (positive; columns go east). */
  stepLon: number;
  rows: number;
  cols: number;
}

/** One grid of posts at one resolution: several aligned sources merged, split in square blocks. */
export interface LayerMeta extends PostLattice {
  /** Posts per block side (power of two). */
  blockSize: number;
  blockRows: number;
  blockCols: number;
  /** Absolute file offset of this layer's block directory. */
  directoryOffset: number;
  /** Priority: layers are consulted in the order of `IndexMeta.layers` (first wins). */
  priority: number;
  /** Source files merged into this layer. */
  sources: string[];
}

/** The JSON metadata of an index file. */
export interface IndexMeta {
  /** Quantisation step in metres: height = (base + code) * precision. */
  precision: number;
  /** Layers in lookup order (highest priority first). */
  layers: LayerMeta[];
  /** Footprints [west, south, east, north] of every source: a point outside all of them is outside coverage. */
  coverage: [number, number, number, number][];
  /** Union of `coverage`. */
  bounds: [number, number, number, number];
  /** Free-form: who wrote the file. */
  generator?: string;
  /**
   * sha256 (hex) of what decides the file's content: format, block size, precision and, per input in
   * order, its name, content hash, priority and nodata. Equal fingerprints ⇒ an equal index.
   */
  fingerprint?: string;
  /** The input files as read: size, modification time and content hash (so a rebuild need not rehash unchanged files). */
  inputs?: IndexInput[];
}

/** One input file of an index. */
export interface IndexInput {
  file: string;
  bytes: number;
  mtimeMs: number;
  /** sha256 of the file's bytes, hex. */
  sha256: string;
}

/** One block directory entry. */
export interface DirEntry {
  /** Absolute offset of the compressed payload. */
  offset: number;
  /** Payload length in bytes (0 for an empty block). */
  length: number;
  /** Per-block offset added to every code. */
  base: number;
  width: CodeWidth;
  compression: BlockCompression;
}

/** Serialise the preamble and metadata. */
export function encodeHeader(meta: IndexMeta): Uint8Array {
  const json = Buffer.from(JSON.stringify(meta), 'utf8');
  const out = Buffer.alloc(PREAMBLE_BYTES + json.length);
  out.write(MAGIC, 0, 'latin1');
  out.writeUInt16LE(FORMAT_VERSION, 8);
  out.writeUInt16LE(0, 10);
  out.writeUInt32LE(json.length, 12);
  json.copy(out, PREAMBLE_BYTES);
  return out;
}

/** Parse the preamble; returns the metadata length. Throws with `where` on a foreign or newer file. */
export function decodePreamble(bytes: Uint8Array, where: string): number {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (b.length < PREAMBLE_BYTES || b.toString('latin1', 0, 8) !== MAGIC) {
    throw new Error(`${where}: not a tilebake elevation index (bad magic)`);
  }
  const version = b.readUInt16LE(8);
  if (version !== FORMAT_VERSION) throw new Error(`${where}: elevation index version ${version}, this reader knows ${FORMAT_VERSION}`);
  return b.readUInt32LE(12);
}

/** Parse the JSON metadata. */
export function decodeMeta(bytes: Uint8Array, where: string): IndexMeta {
  const meta = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) as IndexMeta;
  if (typeof meta.precision !== 'number' || !Array.isArray(meta.layers)) throw new Error(`${where}: elevation index metadata is incomplete`);
  return meta;
}

/** Write a directory entry at byte `at` of `view`. */
export function writeDirEntry(view: DataView, at: number, e: DirEntry): void {
  view.setBigUint64(at, BigInt(e.offset), true);
  view.setUint32(at + 8, e.length, true);
  view.setInt32(at + 12, e.base, true);
  view.setUint8(at + 16, e.width);
  view.setUint8(at + 17, e.compression);
  view.setUint16(at + 18, 0, true);
}

/** Read a directory entry at byte `at` of `view`. */
export function readDirEntry(view: DataView, at: number): DirEntry {
  return {
    offset: Number(view.getBigUint64(at, true)),
    length: view.getUint32(at + 8, true),
    base: view.getInt32(at + 12, true),
    width: view.getUint8(at + 16) as CodeWidth,
    compression: view.getUint8(at + 17) as BlockCompression,
  };
}

/** Rows and columns of posts in block (br, bc) of a layer (edge blocks are smaller). */
export function blockDims(layer: LayerMeta, br: number, bc: number): { rows: number; cols: number } {
  return {
    rows: Math.min(layer.blockSize, layer.rows - br * layer.blockSize),
    cols: Math.min(layer.blockSize, layer.cols - bc * layer.blockSize),
  };
}
