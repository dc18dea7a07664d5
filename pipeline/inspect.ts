import { Compression, TileType } from 'pmtiles';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { asInputError } from './sources/common.ts';
import { detectInputKind } from './sources/index.ts';
import { openInputArchive } from './sources/pmtiles.ts';
import { UserError } from '../lib/errors.ts';

/** Tile statistics of one zoom level. */
export interface ZoomCount {
  zoom: number;
  /** Addressed tiles (run lengths expanded). */
  tiles: number;
  /** Directory entries. */
  entries: number;
}

/** Everything `tilebake inspect` reports about an archive. */
export interface InspectReport {
  file: string;
  header: Record<string, unknown>;
  zooms: ZoomCount[];
  totalTiles: number;
  metadata: unknown;
}

/** The Hilbert tile id of the first tile of zoom `z`. */
function firstTileId(z: number): number {
  return (4 ** z - 1) / 3;
}

const KIB = 1024;
const MIB = KIB * KIB;

/** Bytes as `1.2 MiB`. */
function humanBytes(n: number): string {
  if (n >= MIB) return `${(n / MIB).toFixed(1)} MiB`;
  if (n >= KIB) return `${(n / KIB).toFixed(1)} KiB`;
  return `${n} B`;
}

/** Header with enums spelled out. */
function describeHeader(h: Awaited<ReturnType<typeof openArchiveFile>>['header']): Record<string, unknown> {
  const { etag: _etag, ...rest } = h as typeof h & { etag?: string };
  return {
    ...rest,
    internalCompression: Compression[h.internalCompression] ?? h.internalCompression,
    tileCompression: Compression[h.tileCompression] ?? h.tileCompression,
    tileType: TileType[h.tileType] ?? h.tileType,
  };
}

/** Read header, per-zoom tile counts (walking every directory entry) and metadata of a PMTiles archive. */
export async function inspectArchive(path: string): Promise<InspectReport> {
  if ((await detectInputKind(path)) !== 'pmtiles') throw new UserError(`${path}: not a PMTiles archive (inspect reads PMTiles v3 files)`);
  const archive = await openInputArchive(path);
  try {
    const byZoom = new Map<number, ZoomCount>();
    const count = (zoom: number) => {
      let c = byZoom.get(zoom);
      if (!c) byZoom.set(zoom, (c = { zoom, tiles: 0, entries: 0 }));
      return c;
    };
    for await (const e of archive.entries()) {
      count(e.z).entries++;
      // Tile ids continue from one zoom to the next, so a run may cross into the following zooms.
      let id = e.tileId;
      let left = e.runLength;
      for (let z = e.z; left > 0; z++) {
        const take = Math.min(left, firstTileId(z + 1) - id);
        count(z).tiles += take;
        left -= take;
        id += take;
      }
    }
    const zooms = [...byZoom.values()].sort((a, b) => a.zoom - b.zoom);
    return {
      file: path,
      header: describeHeader(archive.header),
      zooms,
      totalTiles: zooms.reduce((n, z) => n + z.tiles, 0),
      metadata: await archive.metadata(),
    };
  } catch (e) {
    throw asInputError(e, path, 'corrupt PMTiles archive');
  } finally {
    await archive.close();
  }
}

/** The human-readable report. */
export function formatReport(r: InspectReport): string {
  const lines: string[] = [`${r.file}`, '', 'header:'];
  const h = r.header;
  const width = Math.max(...Object.keys(h).map((k) => k.length));
  for (const [k, v] of Object.entries(h)) lines.push(`  ${k.padEnd(width)}  ${String(v)}`);
  const dataLen = typeof h.tileDataLength === 'number' ? ` (${humanBytes(h.tileDataLength)} of tile data)` : '';
  lines.push('', `tiles per zoom: ${r.totalTiles} in total${dataLen}`);
  for (const z of r.zooms) lines.push(`  z${String(z.zoom).padEnd(3)} ${String(z.tiles).padStart(10)} tiles  ${String(z.entries).padStart(10)} entries`);
  lines.push('', 'metadata:', JSON.stringify(r.metadata, null, 2));
  return `${lines.join('\n')}\n`;
}

/** `tilebake inspect ARCHIVE [--json]`: print the report to stdout. */
export async function inspect(path: string, opts: { json?: boolean } = {}): Promise<InspectReport> {
  const r = await inspectArchive(path);
  process.stdout.write(opts.json ? `${JSON.stringify(r, null, 2)}\n` : formatReport(r));
  return r;
}
