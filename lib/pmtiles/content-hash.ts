/**
 * The writer's dedup table: 96 bits of a tile's SHA-256 → content index, in an open-addressing hash
 * table over typed arrays (16 bytes a slot, no per-entry objects), so a planet's worth of unique tiles
 * costs tens of bytes each instead of a JS Map's ~150 (and no 2^24-key limit).
 */
import { hash } from 'node:crypto';

/** A content hash as three 32-bit words (96 bits: collisions are negligible even for 10^9 tiles). */
export type ContentHash = [number, number, number];

/** Initial slot count (power of two). */
const INITIAL_SLOTS = 1 << 12;
/** Grow when this share of the slots is used. */
const MAX_LOAD = 0.7;

/** The dedup key of `data`: the first 96 bits of its SHA-256. */
export function contentHash(data: Uint8Array): ContentHash {
  const d = hash('sha256', data, 'buffer');
  return [d.readUInt32LE(0), d.readUInt32LE(4), d.readUInt32LE(8)];
}

/** Hash → content index; the first content stored under a hash stays. */
export class ContentHashTable {
  private a = new Uint32Array(INITIAL_SLOTS);
  private b = new Uint32Array(INITIAL_SLOTS);
  private c = new Uint32Array(INITIAL_SLOTS);
  /** Content index + 1; 0 marks an empty slot. */
  private v = new Uint32Array(INITIAL_SLOTS);
  private used = 0;

  /** Number of stored hashes. */
  get size(): number {
    return this.used;
  }

  /** Slot holding `h`, or the empty slot where it would go (linear probing). */
  private slotOf(h: ContentHash): number {
    const mask = this.v.length - 1;
    let i = h[0] & mask;
    while (this.v[i] !== 0 && (this.a[i] !== h[0] || this.b[i] !== h[1] || this.c[i] !== h[2])) i = (i + 1) & mask;
    return i;
  }

  /** The content index stored for `h`, or -1. */
  get(h: ContentHash): number {
    return this.v[this.slotOf(h)] - 1;
  }

  /** Store `content` under `h` unless `h` is already present. */
  set(h: ContentHash, content: number): void {
    if ((this.used + 1) / this.v.length > MAX_LOAD) this.grow();
    const i = this.slotOf(h);
    if (this.v[i] !== 0) return;
    this.a[i] = h[0];
    this.b[i] = h[1];
    this.c[i] = h[2];
    this.v[i] = content + 1;
    this.used++;
  }

  private grow(): void {
    const { a, b, c, v } = this;
    const slots = v.length * 2;
    this.a = new Uint32Array(slots);
    this.b = new Uint32Array(slots);
    this.c = new Uint32Array(slots);
    this.v = new Uint32Array(slots);
    this.used = 0;
    for (let i = 0; i < v.length; i++) if (v[i] !== 0) this.set([a[i], b[i], c[i]], v[i] - 1);
  }

  /** Forget every hash and release the memory (not needed once the archive is laid out). */
  clear(): void {
    this.a = new Uint32Array(INITIAL_SLOTS);
    this.b = new Uint32Array(INITIAL_SLOTS);
    this.c = new Uint32Array(INITIAL_SLOTS);
    this.v = new Uint32Array(INITIAL_SLOTS);
    this.used = 0;
  }
}
