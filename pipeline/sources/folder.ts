import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UserError } from '../../lib/errors.ts';
import type { TileFormat } from '../../lib/manifest.ts';
import { asInputError, checkTileCoord, readHead, compressionOf, matchCompression, parseFormat, type SourceTile, type TileSource } from './common.ts';
import { normaliseMetadata, resolveFormat, type ZoomStats } from './mbtiles.ts';

/** Optional metadata file of a tile folder (tippecanoe `--output-to-directory`, mb-util). */
export const FOLDER_METADATA_FILE = 'metadata.json';
/** A numeric path segment: digits only. */
const NUMERIC = /^\d+$/;
/** A tile file name `<y>.<ext>`. */
const TILE_FILE = /^(\d+)\.([A-Za-z]+)$/;

interface FolderTile {
  z: number;
  x: number;
  y: number;
  file: string;
}

/** Names in a folder, skipping hidden entries (`.DS_Store`, editor files). */
async function visibleEntries(dir: string) {
  return (await readdir(dir, { withFileTypes: true })).filter((d) => !d.name.startsWith('.'));
}

/** Walk `root/z/x/y.ext`; anything else inside a zoom or column folder is rejected. */
async function listTiles(root: string): Promise<{ tiles: FolderTile[]; format: TileFormat | undefined }> {
  const tiles: FolderTile[] = [];
  let ext: string | undefined;
  let format: TileFormat | undefined;
  for (const zd of await visibleEntries(root)) {
    if (!zd.isDirectory()) continue; // metadata.json, README ...
    if (!NUMERIC.test(zd.name)) throw new UserError(`${join(root, zd.name)}: unexpected folder in a z/x/y tile folder (expected a zoom number)`);
    const z = Number(zd.name);
    for (const xd of await visibleEntries(join(root, zd.name))) {
      const xPath = join(root, zd.name, xd.name);
      if (!xd.isDirectory() || !NUMERIC.test(xd.name)) throw new UserError(`${xPath}: unexpected entry (expected a folder named by a tile column)`);
      const x = Number(xd.name);
      for (const yd of await visibleEntries(xPath)) {
        const file = join(xPath, yd.name);
        const m = TILE_FILE.exec(yd.name);
        const f = m ? parseFormat(m[2]) : undefined;
        if (!m || !yd.isFile() || !f) throw new UserError(`${file}: unexpected entry (expected <y>.pbf, <y>.mvt, <y>.png, <y>.jpg or <y>.webp)`);
        if (ext !== undefined && m[2].toLowerCase() !== ext && f !== format) {
          throw new UserError(`${file}: mixed tile formats in one folder (.${ext} and .${m[2]})`);
        }
        ext = m[2].toLowerCase();
        format = f;
        const y = Number(m[1]);
        checkTileCoord(z, x, y, file);
        tiles.push({ z, x, y, file });
      }
    }
  }
  return { tiles, format };
}

/** Per-zoom statistics of listed tiles. */
function statsOf(tiles: FolderTile[]): ZoomStats[] {
  const byZ = new Map<number, ZoomStats>();
  for (const t of tiles) {
    const s = byZ.get(t.z);
    if (!s) byZ.set(t.z, { z: t.z, count: 1, minX: t.x, maxX: t.x, minY: t.y, maxY: t.y });
    else {
      s.count++;
      s.minX = Math.min(s.minX, t.x);
      s.maxX = Math.max(s.maxX, t.x);
      s.minY = Math.min(s.minY, t.y);
      s.maxY = Math.max(s.maxY, t.y);
    }
  }
  return [...byZ.values()].sort((a, b) => a.z - b.z);
}

/** Read the folder's metadata.json when present (MBTiles-style fields). */
async function readFolderMetadata(root: string): Promise<Record<string, unknown>> {
  const p = join(root, FOLDER_METADATA_FILE);
  let text: string;
  try {
    text = await readFile(p, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw asInputError(e, p, 'cannot read');
  }
  try {
    const o = JSON.parse(text) as unknown;
    if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new Error('expected a JSON object');
    return o as Record<string, unknown>;
  } catch (e) {
    throw new UserError(`${p}: not valid metadata JSON (${(e as Error).message})`);
  }
}

/** Open a `z/x/y.pbf` (or .mvt/.png/.jpg/.webp) folder, with optional metadata.json. */
export async function openFolder(root: string): Promise<TileSource> {
  const { tiles, format: extFormat } = await listTiles(root).catch((e) => {
    throw asInputError(e, root, 'cannot read tile folder');
  });
  if (tiles.length === 0) throw new UserError(`${root}: no tiles found (expected files <z>/<x>/<y>.pbf)`);
  tiles.sort((a, b) => a.z - b.z || a.x - b.x || a.y - b.y);
  const fields = await readFolderMetadata(root);
  const first = await readHead(tiles[0].file);
  const format = fields.format !== undefined ? resolveFormat(fields.format, first, join(root, FOLDER_METADATA_FILE)) : (extFormat ?? 'pbf');
  const compression = compressionOf(format, first);
  const metadata = normaliseMetadata(fields, statsOf(tiles), join(root, FOLDER_METADATA_FILE));
  return {
    path: root,
    kind: 'folder',
    format,
    compression,
    metadata,
    count: tiles.length,
    async *tiles(): AsyncIterable<SourceTile> {
      for (const t of tiles) {
        let data: Uint8Array;
        try {
          data = await readFile(t.file);
        } catch (e) {
          throw asInputError(e, t.file, 'cannot read tile');
        }
        yield { z: t.z, x: t.x, y: t.y, data: matchCompression(data, compression, format) };
      }
    },
    async close() {},
  };
}
