/** Shared helpers for the PMTiles tests: real sample tiles and the reference reader. */
import { open, type FileHandle } from 'node:fs/promises';
import Database from 'better-sqlite3';
import { PMTiles, type RangeResponse, type Source } from 'pmtiles';

/** One tile in the XYZ scheme. */
export interface SampleTile {
  z: number;
  x: number;
  y: number;
  data: Uint8Array;
}

/** Every tile of an MBTiles file, rows flipped from TMS to XYZ, bytes as stored (gzip'd MVT). */
export function readMbtiles(path: string): SampleTile[] {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare('SELECT zoom_level AS z, tile_column AS x, tile_row AS y, tile_data AS d FROM tiles').all() as {
      z: number;
      x: number;
      y: number;
      d: Buffer;
    }[];
    return rows.map((r) => ({ z: r.z, x: r.x, y: 2 ** r.z - 1 - r.y, data: new Uint8Array(r.d) }));
  } finally {
    db.close();
  }
}

/** The `pmtiles` package's Source over a local file, with positional reads. */
class NodeFileSource implements Source {
  constructor(private readonly path: string, private readonly fh: FileHandle) {}
  async getBytes(offset: number, length: number): Promise<RangeResponse> {
    const buf = new Uint8Array(length);
    const { bytesRead } = await this.fh.read(buf, 0, length, offset);
    return { data: buf.buffer.slice(0, bytesRead) };
  }
  getKey(): string {
    return this.path;
  }
}

/**
 * The reference reader: the package's PMTiles class. `pm` returns stored tile bytes (its decompress hook is
 * the identity, which it also applies to the metadata); `plain` is the package's defaults, for the metadata.
 */
export async function referenceReader(path: string): Promise<{ pm: PMTiles; plain: PMTiles; close: () => Promise<void> }> {
  const fh = await open(path, 'r');
  const pm = new PMTiles(new NodeFileSource(path, fh), undefined, async (buf) => buf);
  const plain = new PMTiles(new NodeFileSource(path, fh));
  return { pm, plain, close: () => fh.close() };
}

/** Stored bytes of z/x/y through the reference reader, or undefined. */
export async function referenceTile(pm: PMTiles, z: number, x: number, y: number): Promise<Uint8Array | undefined> {
  const r = await pm.getZxy(z, x, y);
  return r && new Uint8Array(r.data);
}

/** Deterministic PRNG (mulberry32) for synthetic archives. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Fisher–Yates shuffle with a seeded PRNG (returns a new array). */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = items.slice();
  const r = rng(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}
