/**
 * The OSM PBF file header: recognise an `.osm.pbf` by its first bytes and read the bounding box its
 * header block declares (https://wiki.openstreetmap.org/wiki/PBF_Format), without reading the data.
 */
import { open } from 'node:fs/promises';
import { inflateSync } from 'node:zlib';
import { PbfReader } from 'pbf';
import type { OsmDataState } from '../../lib/manifest.ts';
import type { BBox } from '../../lib/tile-math.ts';

/** Bytes 4..14 of every OSM PBF file: BlobHeader field 1 (type), length 9, "OSMHeader". */
const OSM_HEADER_TYPE = Buffer.concat([Buffer.from([0x0a, 0x09]), Buffer.from('OSMHeader', 'latin1')]);
/** The BlobHeader length prefix (big-endian uint32). */
const LENGTH_PREFIX_BYTES = 4;
/** The format's limits: a BlobHeader under 64 KiB, a header blob under 32 MiB. */
const MAX_BLOB_HEADER_BYTES = 64 * 1024;
const MAX_BLOB_BYTES = 32 * 1024 * 1024;
/** HeaderBBox coordinates are in nanodegrees (divided, not multiplied by 1e-9: 7448637000 → 7.448637 exactly). */
const NANO_PER_DEGREE = 1e9;

/** True when `head` (the first 15+ bytes of a file) starts like an OSM PBF file. */
export function isOsmPbfHead(head: Uint8Array): boolean {
  if (head.length < LENGTH_PREFIX_BYTES + OSM_HEADER_TYPE.length) return false;
  return Buffer.from(head.buffer, head.byteOffset + LENGTH_PREFIX_BYTES, OSM_HEADER_TYPE.length).equals(OSM_HEADER_TYPE);
}

/** What the header block says. */
export interface OsmHeader {
  /** `[w, s, e, n]` when the header carries a bounding box. */
  bbox?: BBox;
  requiredFeatures: string[];
  writingProgram?: string;
  /** The replication state the data shows (osmosis_replication_*), when the extract records it. */
  replication?: ReplicationHeader;
}

/** An extract's place in a replication stream (HeaderBlock fields 32–34). */
export interface ReplicationHeader {
  sequence?: number;
  /** ISO time of the sequence's state. */
  timestamp?: string;
  baseUrl?: string;
}

const MS_PER_S = 1000;

/** Decode a HeaderBlock message. */
export function decodeHeaderBlock(block: Uint8Array): OsmHeader {
  const out: OsmHeader = { requiredFeatures: [] };
  new PbfReader(block).readFields((tag, o, pbf) => {
    if (tag === 1) {
      const b = { left: 0, right: 0, top: 0, bottom: 0 };
      pbf.readMessage((t, r, p) => {
        if (t === 1) r.left = p.readSVarint();
        else if (t === 2) r.right = p.readSVarint();
        else if (t === 3) r.top = p.readSVarint();
        else if (t === 4) r.bottom = p.readSVarint();
      }, b);
      o.bbox = [b.left / NANO_PER_DEGREE, b.bottom / NANO_PER_DEGREE, b.right / NANO_PER_DEGREE, b.top / NANO_PER_DEGREE];
    } else if (tag === 4) o.requiredFeatures.push(pbf.readString());
    else if (tag === 16) o.writingProgram = pbf.readString();
    else if (tag === 32) (o.replication ??= {}).timestamp = new Date(pbf.readVarint(true) * MS_PER_S).toISOString().replace('.000Z', 'Z');
    else if (tag === 33) (o.replication ??= {}).sequence = pbf.readVarint(true);
    else if (tag === 34) (o.replication ??= {}).baseUrl = pbf.readString();
  }, out);
  return out;
}

/** Read exactly `length` bytes at `position`, or throw naming what was expected. */
async function readAt(fh: Awaited<ReturnType<typeof open>>, length: number, position: number, what: string): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  const { bytesRead } = await fh.read(buf, 0, length, position);
  if (bytesRead !== length) throw new Error(`truncated ${what} (file ends at byte ${position + bytesRead}, expected ${position + length})`);
  return buf;
}

/** Read the header block of an OSM PBF file (no bbox when its compression is not zlib); throws a plain Error describing what is wrong. */
export async function readOsmHeader(path: string): Promise<OsmHeader> {
  const fh = await open(path, 'r');
  try {
    const headerLength = (await readAt(fh, LENGTH_PREFIX_BYTES, 0, 'blob header length')).readUInt32BE(0);
    if (headerLength === 0 || headerLength > MAX_BLOB_HEADER_BYTES) throw new Error(`bad blob header length ${headerLength}`);
    const blobHeader = await readAt(fh, headerLength, LENGTH_PREFIX_BYTES, 'blob header');
    const h = new PbfReader(blobHeader).readFields((tag, o, pbf) => {
      if (tag === 1) o.type = pbf.readString();
      else if (tag === 3) o.size = pbf.readVarint();
    }, { type: '', size: 0 });
    if (h.type !== 'OSMHeader') throw new Error(`first block is "${h.type}", expected "OSMHeader"`);
    if (h.size <= 0 || h.size > MAX_BLOB_BYTES) throw new Error(`bad header blob size ${h.size}`);
    const blob = await readAt(fh, h.size, LENGTH_PREFIX_BYTES + headerLength, 'header blob');
    const b = new PbfReader(blob).readFields((tag, o, pbf) => {
      if (tag === 1) o.raw = pbf.readBytes();
      else if (tag === 3) o.zlib = pbf.readBytes();
      else if (tag >= 4) o.other = tag;
    }, {} as { raw?: Uint8Array; zlib?: Uint8Array; other?: number });
    if (b.raw) return decodeHeaderBlock(b.raw);
    if (b.zlib) return decodeHeaderBlock(inflateSync(b.zlib));
    // lz4/zstd headers are valid but not decoded here: the caller falls back to the data's extent.
    if (b.other) return { requiredFeatures: [] };
    throw new Error('empty header blob');
  } finally {
    await fh.close();
  }
}

/**
 * The manifest's `osm` record for a tileset source: the replication state its header shows, and the
 * replication folder (`configured`, else the header's). Undefined for other inputs and for an extract
 * whose header records neither.
 */
export async function osmDataState(path: string, configured?: string): Promise<OsmDataState | undefined> {
  let header: OsmHeader;
  try {
    header = await readOsmHeader(path);
  } catch {
    return undefined; // not an OSM extract (the vector stage has read it already)
  }
  const r = header.replication ?? {};
  const state: OsmDataState = { sequence: r.sequence, timestamp: r.timestamp, replication: configured ?? r.baseUrl };
  return Object.values(state).some((v) => v !== undefined) ? JSON.parse(JSON.stringify(state)) as OsmDataState : undefined;
}
