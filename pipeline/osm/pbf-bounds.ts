/**
 * Put a bounding box back into an OSM PBF file's header. `osmium apply-changes` writes a header
 * without the extract's bbox; the OSM source takes the tile box from it, so an updated extract
 * without one would change its bounds (and re-render everything) every night. Only the header blob
 * is rewritten; the data blocks are copied byte for byte.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { deflateSync, inflateSync } from 'node:zlib';
import { PbfReader, PbfWriter } from 'pbf';
import type { BBox } from '../../lib/tile-math.ts';
import { decodeHeaderBlock } from './pbf-header.ts';

const LENGTH_PREFIX_BYTES = 4;
const NANO_PER_DEGREE = 1e9;

/** HeaderBlock field 1 (HeaderBBox: left, right, top, bottom in nanodegrees). */
function bboxField(b: BBox): Uint8Array {
  const w = new PbfWriter();
  w.writeMessage(1, (bb: BBox, p: PbfWriter) => {
    p.writeSVarintField(1, Math.round(bb[0] * NANO_PER_DEGREE));
    p.writeSVarintField(2, Math.round(bb[2] * NANO_PER_DEGREE));
    p.writeSVarintField(3, Math.round(bb[3] * NANO_PER_DEGREE));
    p.writeSVarintField(4, Math.round(bb[1] * NANO_PER_DEGREE));
  }, b);
  return w.finish();
}

/** Copy `input` to `output` with `bbox` in its header when the header has none (else a plain copy). */
export async function copyWithHeaderBBox(input: string, output: string, bbox: BBox): Promise<void> {
  const fh = await open(input, 'r');
  let head: Buffer;
  let rest: number;
  try {
    const len = Buffer.alloc(LENGTH_PREFIX_BYTES);
    await fh.read(len, 0, LENGTH_PREFIX_BYTES, 0);
    const headerLength = len.readUInt32BE(0);
    const blobHeader = Buffer.alloc(headerLength);
    await fh.read(blobHeader, 0, headerLength, LENGTH_PREFIX_BYTES);
    const h = new PbfReader(blobHeader).readFields((tag, o, pbf) => {
      if (tag === 1) o.type = pbf.readString();
      else if (tag === 3) o.size = pbf.readVarint();
    }, { type: '', size: 0 });
    if (h.type !== 'OSMHeader') throw new Error(`${input}: first block is "${h.type}", expected "OSMHeader"`);
    const blob = Buffer.alloc(h.size);
    await fh.read(blob, 0, h.size, LENGTH_PREFIX_BYTES + headerLength);
    rest = LENGTH_PREFIX_BYTES + headerLength + h.size;
    const b = new PbfReader(blob).readFields((tag, o, pbf) => {
      if (tag === 1) o.raw = pbf.readBytes();
      else if (tag === 3) o.zlib = pbf.readBytes();
    }, {} as { raw?: Uint8Array; zlib?: Uint8Array });
    const block = b.raw ?? (b.zlib && inflateSync(b.zlib));
    if (!block) throw new Error(`${input}: header blob is neither raw nor zlib`);
    if (decodeHeaderBlock(block).bbox) {
      head = Buffer.alloc(0);
      rest = 0;
    } else {
      const withBBox = Buffer.concat([block, bboxField(bbox)]);
      const nb = new PbfWriter();
      nb.writeVarintField(2, withBBox.length);
      nb.writeBytesField(3, deflateSync(withBBox));
      const newBlob = nb.finish();
      const nh = new PbfWriter();
      nh.writeStringField(1, 'OSMHeader');
      nh.writeVarintField(3, newBlob.length);
      const newHeader = nh.finish();
      const prefix = Buffer.alloc(LENGTH_PREFIX_BYTES);
      prefix.writeUInt32BE(newHeader.length, 0);
      head = Buffer.concat([prefix, newHeader, newBlob]);
    }
  } finally {
    await fh.close();
  }
  const out = createWriteStream(output);
  out.write(head);
  await pipeline(createReadStream(input, { start: rest }), out);
}
