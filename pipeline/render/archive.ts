import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { packageRequire } from '../../lib/package-root.ts';
import { Compression, openArchiveFile, openStoreArchive, PMTilesWriter, summarizeArchiveFile, tileIdToZxy, TileType, type ArchiveReader, type ArchiveSummary } from '../../lib/pmtiles/index.ts';
import type { Store } from '../../lib/storage.ts';
import type { RasterFormat } from '../../lib/raster-encode.ts';
import type { RenderJournal } from './journal.ts';

/** Metadata key holding the render fingerprint (and shard) of an archive. */
export const RENDER_METADATA_KEY = 'tilebake:render';

/** What identifies a render: equal fingerprints ⇒ equal tiles. */
export interface RenderIdentity {
  fingerprint: string;
  /**
   * The fingerprint without the tileset archives (style, sprites, fonts, settings, renderer): when only
   * this matches, an incremental build re-renders the metatiles whose vector tiles changed.
   */
  style?: string;
  /** Set for partial archives of a sharded build. */
  shard?: { index: number; count: number };
}

/** PMTiles tile type of a raster format. */
export const TILE_TYPES: Record<RasterFormat, TileType> = { png: TileType.Png, jpg: TileType.Jpeg, webp: TileType.Webp };

const MAPLIBRE_VERSION = (packageRequire('maplibre-gl/package.json') as { version: string }).version;
/**
 * Version of how tilebake turns a style into tiles (metatile grid, render page, pixel read-out).
 * Bump it when a change can alter tiles or metatile keys: archives and journals of older versions
 * are then rebuilt instead of resumed. 2: metatile grid starts at the bbox. 3: glyph stacks merged per
 * code point (the render page loads glyphs from the server clients use).
 */
const RENDER_VERSION = 'tilebake-render/3';

/** Hash of files' names (relative to `dir`) and contents. */
async function hashFiles(dir: string, paths: string[]): Promise<string> {
  const h = createHash('sha256');
  for (const p of paths.sort()) {
    h.update(relative(dir, p));
    h.update(await readFile(p).catch(() => Buffer.alloc(0)));
  }
  return h.digest('hex');
}

/** Bytes hashed at each end of a tileset archive (header, root directory, metadata; tail of the data). */
const ARCHIVE_SAMPLE_BYTES = 16_384;

/** A tileset archive a render reads: from the build folder, or from a run's store by ranged reads (shards). */
export interface TilesetArchiveRef {
  store: Store;
  /** Path inside the store. */
  path: string;
  /** Its size (the manifest's `bytes`). */
  bytes: number;
}

/** The ref of a built tileset's archive (its manifest entry) in `store`. */
export function tilesetArchiveRef(store: Store, tileset: { archive: string; bytes: number }): TilesetArchiveRef {
  return { store, path: tileset.archive, bytes: tileset.bytes };
}

/** Open a tileset archive where its ref says (ranged reads through its store). */
export function openTilesetArchive(a: TilesetArchiveRef): Promise<ArchiveReader> {
  return openStoreArchive(a.store, a.path);
}

/** A machine-independent identity of an archive: size plus a hash of its first and last bytes (two ranged reads). */
async function archiveIdentity(a: TilesetArchiveRef): Promise<string> {
  const src = await a.store.openRange(a.path);
  try {
    const n = Math.min(a.bytes, ARCHIVE_SAMPLE_BYTES);
    const [head, tail] = await Promise.all([src.getBytes(0, n), src.getBytes(a.bytes - n, n)]);
    return createHash('sha256').update(String(a.bytes)).update(head).update(tail).digest('hex');
  } finally {
    await src.close();
  }
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => [])) {
    if (e.isFile()) out.push(join(e.parentPath, e.name));
  }
  return out;
}

/**
 * A fingerprint of everything that decides a style × scale × format's tiles: prepared style,
 * sprites, fonts (names and sizes), the tileset archives (size, first and last bytes), zooms, bbox, metatile,
 * margin, encoder settings and the MapLibre version.
 */
export async function renderFingerprint(parts: {
  style: unknown;
  spriteDir: string;
  fontsDir?: string;
  tilesetArchives: TilesetArchiveRef[];
  settings: Record<string, unknown>;
}): Promise<string> {
  return (await renderFingerprints(parts)).fingerprint;
}

/** `renderFingerprint` and the same without the tileset archives (`style`: what the pixels depend on besides data). */
export async function renderFingerprints(parts: Parameters<typeof renderFingerprint>[0]): Promise<{ fingerprint: string; style: string }> {
  const style = await styleFingerprint(parts);
  const h = createHash('sha256').update(style);
  for (const a of parts.tilesetArchives) h.update(await archiveIdentity(a));
  return { fingerprint: h.digest('hex'), style };
}

async function styleFingerprint(parts: Parameters<typeof renderFingerprint>[0]): Promise<string> {
  const h = createHash('sha256');
  h.update(JSON.stringify(parts.style));
  h.update(JSON.stringify(parts.settings));
  h.update(MAPLIBRE_VERSION);
  h.update(RENDER_VERSION);
  h.update(await hashFiles(parts.spriteDir, (await listFiles(parts.spriteDir)).filter((p) => /\/sprite[^/]*$/.test(p))));
  if (parts.fontsDir) {
    for (const f of (await listFiles(parts.fontsDir)).sort()) h.update(`${relative(parts.fontsDir, f)}:${(await stat(f)).size}`);
  }
  return h.digest('hex');
}

/** Every tile of an archive in tile-id order with where its bytes are (runs expanded). */
async function* tileLocations(r: ArchiveReader): AsyncGenerator<{ tileId: number; offset: number; length: number }> {
  for await (const e of r.entries()) {
    for (let k = 0; k < e.runLength; k++) yield { tileId: e.tileId + k, offset: e.offset, length: e.length };
  }
}

/** Comparisons of two stored tiles remembered (the sea: one pair of locations for thousands of tiles). */
const COMPARED_MEMO = 65_536;

/**
 * The tiles (`z/x/y`) added, removed or changed between two archives of a tileset, read through their
 * stores (the previous version's folder, this build's folder or a run's store). Both archives are
 * walked in tile-id order side by side, so that memory holds the changed tiles only, not every tile.
 */
export async function changedTiles(before: TilesetArchiveRef, after: TilesetArchiveRef): Promise<Set<string>> {
  const ra = await openTilesetArchive(before);
  const rb = await openTilesetArchive(after).catch(async (e: unknown) => {
    await ra.close();
    throw e;
  });
  const out = new Set<string>();
  const add = (tileId: number) => out.add(tileIdToZxy(tileId).join('/'));
  /** `offsetA:offsetB` → equal bytes. */
  const memo = new Map<string, boolean>();
  const same = async (a: { offset: number; length: number }, b: { offset: number; length: number }) => {
    if (a.length !== b.length) return false;
    const k = `${a.offset}:${b.offset}`;
    let eq = memo.get(k);
    if (eq === undefined) {
      const [x, y] = await Promise.all([ra.readRange(a.offset, a.length), rb.readRange(b.offset, b.length)]);
      eq = Buffer.from(x.buffer, x.byteOffset, x.length).equals(y);
      if (memo.size >= COMPARED_MEMO) memo.clear();
      memo.set(k, eq);
    }
    return eq;
  };
  try {
    const ia = tileLocations(ra);
    const ib = tileLocations(rb);
    let a = await ia.next();
    let b = await ib.next();
    while (!a.done || !b.done) {
      if (b.done || (!a.done && a.value.tileId < b.value.tileId)) {
        add(a.value!.tileId);
        a = await ia.next();
      } else if (a.done || b.value.tileId < a.value.tileId) {
        add(b.value.tileId);
        b = await ib.next();
      } else {
        if (!(await same(a.value, b.value))) add(a.value.tileId);
        a = await ia.next();
        b = await ib.next();
      }
    }
  } finally {
    await Promise.all([ra.close(), rb.close()]);
  }
  return out;
}

/** The render identity stored in an archive's metadata, or undefined (no archive, or not ours). */
export async function readIdentity(path: string): Promise<(RenderIdentity & ArchiveSummary) | undefined> {
  const summary = await summarizeArchiveFile(path);
  const id = summary?.metadata[RENDER_METADATA_KEY] as RenderIdentity | undefined;
  if (!summary || !id || typeof id.fingerprint !== 'string') return undefined;
  return { ...id, ...summary };
}

/** Tiles copied byte for byte from a previous build's archive. */
export interface CopiedTiles {
  archive: string;
  tiles: Iterable<{ z: number; x: number; y: number }>;
}

/**
 * Write the archive `path` from a journal's records (first record per metatile wins) and, for an
 * incremental build, the unchanged tiles copied from the previous archive (stored bytes, not re-encoded).
 */
export async function archiveFromJournal(
  journal: RenderJournal,
  path: string,
  opts: { format: RasterFormat; metadata: Record<string, unknown>; identity: RenderIdentity; bounds: [number, number, number, number]; center: [number, number, number]; copy?: CopiedTiles },
): Promise<{ tiles: number; bytes: number }> {
  const w = await PMTilesWriter.create(path, {
    tileType: TILE_TYPES[opts.format],
    tileCompression: Compression.None,
    metadata: { ...opts.metadata, [RENDER_METADATA_KEY]: opts.identity },
    bounds: opts.bounds,
    center: opts.center,
  });
  try {
    for await (const rec of journal.records()) {
      for (const t of rec.tiles) await w.addTile(t.z, t.x, t.y, t.data);
    }
    if (opts.copy) {
      const prev = await openArchiveFile(opts.copy.archive);
      try {
        for (const t of opts.copy.tiles) {
          const data = await prev.getTile(t.z, t.x, t.y);
          if (!data) throw new Error(`${opts.copy.archive}: tile ${t.z}/${t.x}/${t.y} is missing (cannot reuse the previous render)`);
          await w.addTile(t.z, t.x, t.y, data);
        }
      } finally {
        await prev.close();
      }
    }
    const res = await w.finish();
    return { tiles: res.addressedTiles, bytes: res.bytes };
  } catch (e) {
    await w.abort();
    throw e;
  }
}
