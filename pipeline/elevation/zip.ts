import { inflateRawSync } from 'node:zlib';

/** One file in a zip archive's central directory. */
export interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  localHeaderOffset: number;
}

const EOCD_SIG = 0x06054b50;
const CEN_SIG = 0x02014b50;
const LOC_SIG = 0x04034b50;
const EOCD_MIN = 22;
/** Compression methods we can extract. */
enum ZipMethod {
  Stored = 0,
  Deflate = 8,
}

/** List a zip archive's entries (no zip64). Throws Error on a malformed archive. */
export function listZip(buf: Uint8Array): ZipEntry[] {
  const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let eocd = -1;
  for (let i = buf.length - EOCD_MIN; i >= Math.max(0, buf.length - EOCD_MIN - 0xffff); i--) {
    if (v.getUint32(i, true) === EOCD_SIG) { eocd = i; break; }
  }
  if (eocd < 0) throw new Error('not a zip archive (no end of central directory)');
  const count = v.getUint16(eocd + 10, true);
  let p = v.getUint32(eocd + 16, true);
  const out: ZipEntry[] = [];
  for (let k = 0; k < count; k++) {
    if (v.getUint32(p, true) !== CEN_SIG) throw new Error('corrupt zip central directory');
    const nameLen = v.getUint16(p + 28, true), extraLen = v.getUint16(p + 30, true), commentLen = v.getUint16(p + 32, true);
    out.push({
      method: v.getUint16(p + 10, true),
      compressedSize: v.getUint32(p + 20, true),
      size: v.getUint32(p + 24, true),
      localHeaderOffset: v.getUint32(p + 42, true),
      name: Buffer.from(buf.buffer, buf.byteOffset + p + 46, nameLen).toString('utf8'),
    });
    p += 46 + nameLen + extraLen + commentLen;
  }
  return out;
}

/** The uncompressed bytes of one entry (stored or deflated). */
export function extractZipEntry(buf: Uint8Array, e: ZipEntry): Uint8Array {
  const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const p = e.localHeaderOffset;
  if (v.getUint32(p, true) !== LOC_SIG) throw new Error(`corrupt zip local header for ${e.name}`);
  const start = p + 30 + v.getUint16(p + 26, true) + v.getUint16(p + 28, true);
  const data = buf.subarray(start, start + e.compressedSize);
  if (e.method === ZipMethod.Stored) return data;
  if (e.method === ZipMethod.Deflate) return inflateRawSync(data);
  throw new Error(`${e.name}: unsupported zip compression method ${e.method}`);
}
