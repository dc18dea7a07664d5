/**
 * The user's GIS data as a tile source: a vector file GDAL reads (GeoPackage, GeoJSON, FlatGeobuf,
 * Shapefile, CSV with coordinate columns, KML, …) or a PostGIS database (`postgresql://…`). Its layers
 * are checked and described as one OGR VRT document (gis-layers.ts), then GDAL's MVT driver
 * (`gdal.vectorTranslate`, in process) reprojects them to Web Mercator, cuts, simplifies and encodes the
 * tiles of every zoom into an MBTiles file in the work folder. GDAL gzips them (its MAX_SIZE, the most bytes
 * a tile may take before features are simplified or dropped, counts the gzipped bytes), but its gzip bytes
 * depend on how many threads it used: the source re-gzips each tile with node:zlib, so that equal tiles
 * are equal bytes on any machine (docs/own-data.md). The tiles stream from that file (sources/mbtiles.ts);
 * the work folder is removed on close and on failure.
 */
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Compression } from 'pmtiles';
import { cpuBudget } from '../../lib/cpus.ts';
import { connectionUrl, connectTimeoutOf, isDatabaseUrl, redactDatabaseUrl, withoutPassword } from '../../lib/database-url.ts';
import { UserError } from '../../lib/errors.ts';
import { logLine, secondsSince } from '../../lib/progress.ts';
import { zoomShowing } from '../../lib/tile-math.ts';
import { gisZoomIssues, type GisLayerConfig } from '../config/gis.ts';
import { loadGdal } from '../../lib/gdal.ts';
import { asInputError, matchCompression, type SourceMetadata, type TileSource } from './common.ts';
import { CSV_OPEN_OPTIONS, mvtLayerConf, oneLine, planLayers, vrtDocument, type GisPlace, type LayerPlan } from './gis-layers.ts';
import { openMbtiles } from './mbtiles.ts';

type Gdal = typeof import('gdal-async');
type Dataset = import('gdal-async').Dataset;

/** Options of a GIS source. */
export interface GisSourceOptions {
  /** Work folder (removed when the source closes). */
  workDir: string;
  /** Prefix of progress lines. */
  label: string;
  /** The tileset, for messages: its id and its JSON path in the config (`$.tilesets.city`, with the config file). */
  tileset?: { id: string; field: string };
  minzoom?: number;
  maxzoom?: number;
  layers?: Record<string, GisLayerConfig>;
}

/**
 * The MVT driver's settings, set explicitly (GDAL's own defaults but two: MAXZOOM, and lines and
 * polygons simplified by one tile unit, 1/4096 of a tile, below the deepest zoom, as tippecanoe does;
 * exact at the deepest, which clients overzoom). Part of a GIS tileset's fingerprint.
 */
export const MVT_SETTINGS = { EXTENT: 4096, BUFFER: 80, SIMPLIFICATION: 1, SIMPLIFICATION_MAX_ZOOM: 0, MAX_SIZE: 500_000, MAX_FEATURES: 200_000 } as const;

/** Version of how a GIS source becomes tiles; bump when the cutting changes (archives are made again). */
export const GIS_VERSION = 'tilebake-gis/1';

/** What a GIS tileset's tiles depend on besides its data: this cutting, GDAL's version, the layers and zooms. */
export async function gisRecipe(t: Pick<GisSourceOptions, 'layers' | 'minzoom' | 'maxzoom'>): Promise<string> {
  const gdal = await loadGdal();
  return `${GIS_VERSION}:gdal ${gdal.version}:${JSON.stringify(MVT_SETTINGS)}:${JSON.stringify([t.minzoom, t.maxzoom, t.layers])}`;
}

/** The source as every message, log line and file shows it (a database URL without its password). */
export function shownSource(source: string): string {
  return isDatabaseUrl(source) ? redactDatabaseUrl(source) : source;
}

/** The last GDAL error on this thread (gdal-async's own exceptions say only "Error opening dataset"). */
function lastGdalError(gdal: Gdal): string | undefined {
  const e = gdal.lastError as { message?: string; level?: number } | null;
  return e?.message ? oneLine(e.message) : undefined;
}

/** Why GDAL cannot open `source`, one line, for a database with the timeout named. */
function openFailure(source: string, why: string | undefined, database: boolean): string {
  const reason = withoutPassword(why ?? 'GDAL cannot open it', source);
  if (database && /timeout expired/i.test(why ?? '')) return `the database did not answer within ${connectTimeoutOf(source)} s (connect_timeout; set ?connect_timeout=N in the URL): ${reason}`;
  if (database) return `cannot connect to the database: ${reason}`;
  return `GDAL cannot open it as vector data: ${reason}`;
}

/**
 * Open `connection` (a path, or a database URL with connect_timeout) for reading its layers, on this
 * thread so that GDAL's reason reaches the message; a CSV again with the coordinate columns named.
 */
export function openVector(gdal: Gdal, connection: string, database: boolean, place: GisPlace, source: string): { ds: Dataset; csv: boolean } {
  gdal.lastError = null;
  let ds: Dataset;
  try {
    ds = database ? gdal.open(connection, 'r', ['PostgreSQL']) : gdal.open(connection);
  } catch {
    throw new UserError(`${place.prefix}: ${openFailure(source, lastGdalError(gdal), database)}`);
  }
  if (ds.driver.description !== 'CSV') return { ds, csv: false };
  ds.close();
  const options = Object.entries(CSV_OPEN_OPTIONS).map(([k, v]) => `${k}=${v}`);
  return { ds: gdal.drivers.get('CSV').open(connection, 'r', options), csv: true };
}

/** What GDAL opens `path` as: vector layers, raster bands, or why it cannot (for detecting a source's kind). */
export async function probeGdal(path: string): Promise<{ layers: number; bands: number; driver: string } | { error: string }> {
  const gdal = await loadGdal();
  let ds: Dataset;
  try {
    ds = await gdal.openAsync(path);
  } catch {
    // Again on this thread, for GDAL's reason.
    gdal.lastError = null;
    try {
      gdal.open(path).close();
    } catch {
      // expected
    }
    return { error: lastGdalError(gdal) ?? 'not a format GDAL reads' };
  }
  try {
    return { layers: ds.layers.count(), bands: ds.bands.count(), driver: ds.driver.description };
  } finally {
    ds.close();
  }
}

/** The files a GIS file source is read from (a Shapefile's .shp, .dbf, .shx, .prj, .cpg …; a GeoPackage's -wal), for its fingerprint. */
export async function gisSourceFiles(path: string): Promise<string[]> {
  const gdal = await loadGdal();
  let files: string[];
  try {
    const ds = await gdal.openAsync(path);
    files = ds.getFileList();
    ds.close();
  } catch {
    return [path];
  }
  const wal = `${path}-wal`;
  if (await stat(wal).then(() => true, () => false)) files.push(wal);
  return files.length ? [...new Set(files)] : [path];
}

/** GDAL's `vector_layers` as TileJSON lists them (no empty descriptions). */
function vectorLayers(layers: unknown[] | undefined): unknown[] {
  return (layers ?? []).map((l) => {
    const { description, ...rest } = l as { description?: string };
    return description ? { ...rest, description } : rest;
  });
}

/** `-dsco` arguments of the MVT driver for `plans`. */
function mvtArgs(plans: LayerPlan[], tmpDb: string): string[] {
  const min = Math.min(...plans.map((p) => p.minzoom));
  const max = Math.max(...plans.map((p) => p.maxzoom));
  const dsco: Record<string, string | number> = {
    FORMAT: 'MBTILES',
    MINZOOM: min,
    MAXZOOM: max,
    ...MVT_SETTINGS,
    // Gzipped (MAX_SIZE counts gzipped bytes: plain tiles would lose features at half the size); re-gzipped as read.
    COMPRESS: 'YES',
    TYPE: 'overlay',
    TEMPORARY_DB: tmpDb,
    CONF: JSON.stringify(mvtLayerConf(plans)),
  };
  return ['-f', 'MVT', ...Object.entries(dsco).flatMap(([k, v]) => ['-dsco', `${k}=${v}`])];
}

/** Cut the layers of `plans` (a VRT document over the source) into `mbtiles` with GDAL's MVT driver. */
async function cutTiles(gdal: Gdal, vrt: string, plans: LayerPlan[], mbtiles: string, workDir: string, place: GisPlace, source: string): Promise<void> {
  const threads = gdal.config.get('GDAL_NUM_THREADS');
  // GDAL's MVT driver threads as many as the machine has cores; this process may use fewer (lib/cpus.ts).
  gdal.config.set('GDAL_NUM_THREADS', String(cpuBudget().cpus));
  try {
    const src = await gdal.openAsync(vrt);
    try {
      const out = await gdal.vectorTranslateAsync(mbtiles, src, mvtArgs(plans, join(workDir, 'mvt-temp.db')));
      out.close();
    } finally {
      src.close();
    }
  } catch (e) {
    const why = withoutPassword(lastGdalError(gdal) ?? oneLine((e as Error).message), source);
    throw new UserError(`${place.prefix}: GDAL could not cut the tiles (${why})`, { cause: e });
  } finally {
    gdal.config.set('GDAL_NUM_THREADS', threads);
  }
}

/** Check the layers of a GIS source, cut them into tiles (see the module comment) and open those as a TileSource. */
export async function openGis(source: string, kind: 'gis' | 'postgis', opts: GisSourceOptions): Promise<TileSource> {
  const database = kind === 'postgis';
  const shown = shownSource(source);
  const place: GisPlace = { prefix: opts.tileset ? `tileset "${opts.tileset.id}" (${shown})` : shown, field: opts.tileset?.field };
  const zoom = gisZoomIssues(opts)[0];
  if (zoom) throw new UserError(`${place.prefix}: ${place.field ? `${place.field}.${zoom.path[0]}: ` : ''}${zoom.message}`);
  const gdal = await loadGdal();
  const connection = database ? connectionUrl(source) : source;
  const t0 = performance.now();
  const { ds, csv } = openVector(gdal, connection, database, place, source);
  let plans: LayerPlan[];
  try {
    plans = planLayers(gdal, ds, { layers: opts.layers, minzoom: opts.minzoom, maxzoom: opts.maxzoom, database, place });
  } catch (e) {
    if (e instanceof UserError) throw new UserError(withoutPassword(e.message, source));
    throw e;
  } finally {
    ds.close();
  }
  const { workDir } = opts;
  await rm(workDir, { recursive: true, force: true });
  await mkdir(workDir, { recursive: true });
  try {
    const mbtiles = join(workDir, 'tiles.mbtiles');
    await cutTiles(gdal, vrtDocument(connection, plans, csv ? CSV_OPEN_OPTIONS : {}), plans, mbtiles, workDir, place, source);
    const seconds = secondsSince(t0);
    let tiles: TileSource;
    try {
      tiles = await openMbtiles(mbtiles);
    } catch (e) {
      throw new UserError(`${place.prefix}: no tiles: the layers ${plans.map((p) => `"${p.name}"`).join(', ')} hold no features at zooms ${Math.min(...plans.map((p) => p.minzoom))}–${Math.max(...plans.map((p) => p.maxzoom))}`, { cause: e });
    }
    const m = tiles.metadata;
    logLine(`${opts.label}: GDAL ${gdal.version} cut ${plans.length} layer${plans.length === 1 ? '' : 's'} (${plans.map((p) => p.name).join(', ')}) into ${tiles.count} tiles, z${m.minzoom}-${m.maxzoom}, in ${seconds.toFixed(1)} s`);
    const metadata: SourceMetadata = {
      bounds: m.bounds,
      // GDAL's centre is at the lowest zoom (the world, for a city's data): a map opens where the data fills it.
      center: [(m.bounds[0] + m.bounds[2]) / 2, (m.bounds[1] + m.bounds[3]) / 2, zoomShowing(m.bounds, m.minzoom, m.maxzoom)],
      minzoom: m.minzoom,
      maxzoom: m.maxzoom,
      vector_layers: vectorLayers(m.vector_layers),
      // GDAL's tilestats (counts and values per attribute) are kept; its name (the work file's) and version are not.
      extra: m.extra.tilestats ? { tilestats: m.extra.tilestats } : {},
    };
    return {
      path: shown,
      kind,
      format: 'pbf',
      compression: Compression.Gzip,
      metadata,
      count: tiles.count,
      phases: [{ name: 'gdal', seconds }],
      async *tiles() {
        try {
          // GDAL's gzip, unpacked and packed again by node:zlib: the same bytes whatever GDAL's thread count.
          for await (const t of tiles.tiles()) yield { ...t, data: matchCompression(matchCompression(t.data, Compression.None, 'pbf'), Compression.Gzip, 'pbf') };
        } catch (e) {
          throw asInputError(e, shown, 'cannot read the tiles GDAL wrote');
        }
      },
      async close() {
        await tiles.close();
        await rm(workDir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await rm(workDir, { recursive: true, force: true });
    throw e;
  }
}
