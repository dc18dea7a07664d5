import { tileIdToZxy } from 'pmtiles';
import { openArchiveFile } from '../../lib/pmtiles/index.ts';
import { UserError } from '../../lib/errors.ts';
import { asInputError, defaultCenter, formatOfTileType, type SourceMetadata, type SourceTile, type TileSource } from './common.ts';

/** The header's resolution of degrees. */
const HEADER_DEGREE = 1e-7;

/**
 * The header stores degrees to 1e-7: the metadata's own values, where they agree with it, are the exact
 * ones the archive was written with (a rewritten archive keeps the same TileJSON: pipeline/vector/patch.ts).
 */
function exactly<T extends number[]>(meta: unknown, header: T): T {
  const ok = Array.isArray(meta) && meta.length === header.length && meta.every((v, i) => typeof v === 'number' && Math.abs(v - header[i]) <= HEADER_DEGREE);
  return ok ? (meta as T) : header;
}

/** Metadata keys normalised into SourceMetadata fields; others are carried over in `extra`. */
const KNOWN_KEYS = new Set(['name', 'attribution', 'description', 'version', 'bounds', 'center', 'minzoom', 'maxzoom', 'format', 'vector_layers', 'world_maxzoom', 'region']);

/** Open a PMTiles archive given as input; a broken file is a UserError naming it. */
export async function openInputArchive(path: string): Promise<Awaited<ReturnType<typeof openArchiveFile>>> {
  try {
    return await openArchiveFile(path);
  } catch (e) {
    throw asInputError(e, path, 'not a readable PMTiles v3 archive');
  }
}

/** Open an existing PMTiles v3 archive; tiles stream from its directory entries as stored. */
export async function openPmtiles(path: string): Promise<TileSource> {
  const archive = await openInputArchive(path);
  try {
    const h = archive.header;
    const format = formatOfTileType(h.tileType);
    if (!format) throw new UserError(`${path}: header "tileType" ${h.tileType}: expected MVT, PNG, JPEG or WebP tiles`);
    let raw: unknown;
    try {
      raw = await archive.metadata();
    } catch (e) {
      throw asInputError(e, path, 'cannot read the metadata JSON');
    }
    const meta = (typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
    const str = (k: string) => (typeof meta[k] === 'string' ? (meta[k] as string) : undefined);
    const bounds = exactly<[number, number, number, number]>(meta.bounds, [h.minLon, h.minLat, h.maxLon, h.maxLat]);
    const center: [number, number, number] =
      h.centerLon === 0 && h.centerLat === 0 && h.centerZoom === 0 ? defaultCenter(bounds, h.minZoom, h.maxZoom) : exactly<[number, number, number]>(meta.center, [h.centerLon, h.centerLat, h.centerZoom]);
    const extra: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(meta)) if (!KNOWN_KEYS.has(k)) extra[k] = v;
    const metadata: SourceMetadata = {
      name: str('name'),
      attribution: str('attribution'),
      description: str('description'),
      version: str('version'),
      bounds,
      // An OSM tileset's world up to world_maxzoom, its region above (osm/source.ts).
      ...(Number.isInteger(meta.world_maxzoom) && Array.isArray(meta.region) && meta.region.length === 4 && meta.region.every(Number.isFinite)
        ? { world_maxzoom: meta.world_maxzoom as number, region: meta.region as [number, number, number, number] }
        : {}),
      center,
      minzoom: h.minZoom,
      maxzoom: h.maxZoom,
      vector_layers: Array.isArray(meta.vector_layers) ? meta.vector_layers : undefined,
      extra,
    };
    const a = archive;
    return {
      path,
      kind: 'pmtiles',
      format,
      compression: h.tileCompression,
      metadata,
      count: h.numAddressedTiles,
      async *tiles(): AsyncIterable<SourceTile> {
        try {
          for await (const e of a.entries()) {
            const data = await a.readRange(e.offset, e.length);
            if (data.length !== e.length) throw new Error(`tile data truncated at offset ${e.offset}`);
            for (let i = 0; i < e.runLength; i++) {
              const [z, x, y] = i === 0 ? [e.z, e.x, e.y] : tileIdToZxy(e.tileId + i);
              yield { z, x, y, data };
            }
          }
        } catch (e) {
          throw asInputError(e, path, 'corrupt PMTiles archive');
        }
      },
      async close() {
        await a.close();
      },
    };
  } catch (e) {
    await archive.close();
    throw asInputError(e, path, 'not a readable PMTiles v3 archive');
  }
}
