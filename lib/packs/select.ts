/**
 * Which tiles of an archive a pack holds: the archive's entries within the area's tile-id ranges (only
 * the leaf directories that can hold such tiles are read), and for a delta the tiles whose bytes differ
 * between two versions' archives, plus the tiles the newer one no longer has.
 */
import { sha256 } from '../hash.ts';
import type { ArchiveReader } from '../pmtiles/index.ts';
import { clipRun, rangesMeet, type TileIdRanges } from '../tile-cover.ts';
import { readInOrder, type ByteRange } from './read.ts';

/** Consecutive tiles `tileId … tileId + runLength - 1` holding the same bytes of the source archive. */
export interface PackPiece {
  tileId: number;
  runLength: number;
  /** Where the bytes are in the source's tile data section. */
  offset: number;
  length: number;
}

/** The tiles of a pack from one archive, in tile-id order. */
export interface PackTiles {
  pieces: PackPiece[];
  /** Tiles (addressed). */
  tiles: number;
  /** Bytes of tile data, each distinct content once (what the archive's tile data section will hold). */
  bytes: number;
}

/** What differs between two versions' tiles of an area. */
export interface PackDelta extends PackTiles {
  /** Tile ids the older version has and the newer one has not, as sorted `[start, end)` runs. */
  removed: [number, number][];
  /** Number of tile ids in `removed`. */
  removedTiles: number;
}

/** Tiles and bytes of pieces, each content (offset) counted once. */
function totals(pieces: readonly PackPiece[]): { tiles: number; bytes: number } {
  const seen = new Set<number>();
  let tiles = 0;
  let bytes = 0;
  for (const p of pieces) {
    tiles += p.runLength;
    if (!seen.has(p.offset)) {
      seen.add(p.offset);
      bytes += p.length;
    }
  }
  return { tiles, bytes };
}

/** The tiles of `reader` within `ranges`. */
export async function selectTiles(reader: ArchiveReader, ranges: TileIdRanges): Promise<PackTiles> {
  const pieces: PackPiece[] = [];
  let hint = 0;
  for await (const e of reader.entries((start, end) => rangesMeet(ranges, start, end))) {
    if (e.length === 0) continue;
    const { parts, next } = clipRun(ranges, e.tileId, e.runLength, hint);
    hint = next;
    for (const [tileId, runLength] of parts) pieces.push({ tileId, runLength, offset: e.offset, length: e.length });
  }
  return { pieces, ...totals(pieces) };
}

/** SHA-256 of each distinct range of `reader` (by offset), read in file order. */
async function hashes(reader: ArchiveReader, ranges: Map<number, number>): Promise<Map<number, string>> {
  const sorted: ByteRange[] = [...ranges].map(([offset, length]) => ({ offset, length })).sort((a, b) => a.offset - b.offset);
  const out = new Map<number, string>();
  let i = 0;
  for await (const bytes of readInOrder(reader, sorted)) out.set(sorted[i++].offset, sha256(bytes, 'base64'));
  return out;
}

/**
 * The tiles of `newer` within the area whose bytes differ from `older`'s (or that `older` lacks),
 * and the tiles `older` has that `newer` lacks. Equal lengths are compared by the bytes' SHA-256,
 * each distinct content of either archive read once.
 */
export async function deltaTiles(older: PackTiles, olderReader: ArchiveReader, newer: PackTiles, newerReader: ArchiveReader): Promise<PackDelta> {
  // Sweep both piece lists by tile id into segments with one piece (or none) of each side.
  type Segment = { start: number; length: number; old?: PackPiece; neu?: PackPiece };
  const segments: Segment[] = [];
  const a = older.pieces;
  const b = newer.pieces;
  let i = 0;
  let j = 0;
  let at = Math.min(a[0]?.tileId ?? Infinity, b[0]?.tileId ?? Infinity);
  while (i < a.length || j < b.length) {
    const pa = a[i];
    const pb = b[j];
    const aStart = pa ? Math.max(pa.tileId, at) : Infinity;
    const bStart = pb ? Math.max(pb.tileId, at) : Infinity;
    const start = Math.min(aStart, bStart);
    const aEnd = pa ? pa.tileId + pa.runLength : Infinity;
    const bEnd = pb ? pb.tileId + pb.runLength : Infinity;
    const inA = pa !== undefined && aStart === start;
    const inB = pb !== undefined && bStart === start;
    // The segment ends where either side's piece ends or the other side's next piece starts.
    const end = Math.min(inA ? aEnd : aStart, inB ? bEnd : bStart);
    segments.push({ start, length: end - start, old: inA ? pa : undefined, neu: inB ? pb : undefined });
    at = end;
    if (pa && aEnd <= at) i++;
    if (pb && bEnd <= at) j++;
  }
  // Contents to compare: equal lengths on both sides.
  const oldRanges = new Map<number, number>();
  const newRanges = new Map<number, number>();
  for (const s of segments) {
    if (s.old && s.neu && s.old.length === s.neu.length) {
      oldRanges.set(s.old.offset, s.old.length);
      newRanges.set(s.neu.offset, s.neu.length);
    }
  }
  const oldHashes = await hashes(olderReader, oldRanges);
  const newHashes = await hashes(newerReader, newRanges);
  const pieces: PackPiece[] = [];
  const removed: [number, number][] = [];
  let removedTiles = 0;
  for (const s of segments) {
    if (s.neu) {
      const same = s.old !== undefined && s.old.length === s.neu.length && oldHashes.get(s.old.offset) === newHashes.get(s.neu.offset);
      if (same) continue;
      const last = pieces[pieces.length - 1];
      if (last && last.offset === s.neu.offset && last.tileId + last.runLength === s.start) last.runLength += s.length;
      else pieces.push({ tileId: s.start, runLength: s.length, offset: s.neu.offset, length: s.neu.length });
    } else if (s.old) {
      const last = removed[removed.length - 1];
      if (last && last[1] === s.start) last[1] += s.length;
      else removed.push([s.start, s.start + s.length]);
      removedTiles += s.length;
    }
  }
  return { pieces, ...totals(pieces), removed, removedTiles };
}
