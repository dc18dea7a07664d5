/**
 * The geometry of the search index, done by GEOS through SpatiaLite in GDAL (gdal-async; Debian's GDAL is
 * built with SpatiaLite): a way's or area's representative point (ST_PointOnSurface: on the line, inside
 * the polygon) and bounding box, which settlement areas contain a point (ST_Contains with SpatiaLite's
 * R*Tree, each area's prepared geometry reused over the points it holds), and the point and box of a
 * street made of several ways (ST_Collect). The features go in as GeoJSON sequences, as osmium exports
 * them, into a SpatiaLite database in the work folder; nothing here computes geometry itself.
 */
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { once } from 'node:events';
import { join } from 'node:path';
import { UserError } from '../../lib/errors.ts';
import { executeSqlAsync, loadGdal } from '../../lib/gdal.ts';

type Gdal = Awaited<ReturnType<typeof loadGdal>>;
type Dataset = import('gdal-async').Dataset;

/** A GeoJSON geometry as osmium writes it. */
export interface GeoJsonGeometry {
  type: string;
  coordinates: unknown;
}

/** A point and, for a way or area, its box [west, south, east, north]. */
export interface Located {
  lon: number;
  lat: number;
  bbox?: [number, number, number, number];
}

/** The tables a work database holds. */
type Table = 'feat' | 'point' | 'area' | 'way' | 'gpoint';

/** Rows written into GDAL per transaction. */
const ROWS_PER_TRANSACTION = '65536';

/** A SpatiaLite database in a work folder, loaded table by table. */
export class GeometryWork {
  private ds: Dataset | undefined;
  private readonly tables = new Set<Table>();

  private constructor(private readonly gdal: Gdal, private readonly dir: string) {}

  /** A new work database in `dir` (which must exist). */
  static async create(dir: string): Promise<GeometryWork> {
    const gdal = await loadGdal();
    // The work database is thrown away: no journal, no syncing.
    gdal.config.set('OGR_SQLITE_SYNCHRONOUS', 'OFF');
    gdal.config.set('OGR_SQLITE_JOURNAL', 'OFF');
    return new GeometryWork(gdal, dir);
  }

  private get file(): string {
    return join(this.dir, 'geometry.sqlite');
  }

  /** Load `rows` (a `ref` number each, `gid` for ways; a geometry as GeoJSON, or its text) into `table`. */
  async load(table: Table, rows: Iterable<{ ref: number; gid?: number; geometry: GeoJsonGeometry | string }>): Promise<void> {
    const seq = join(this.dir, `${table}.geojsonseq`);
    const out = createWriteStream(seq);
    let n = 0;
    for (const r of rows) {
      const geometry = typeof r.geometry === 'string' ? r.geometry : JSON.stringify(r.geometry);
      const line = `{"type":"Feature","properties":{"ref":${r.ref}${r.gid === undefined ? '' : `,"gid":${r.gid}`}},"geometry":${geometry}}\n`;
      if (!out.write(line)) await once(out, 'drain');
      n++;
    }
    out.end();
    await once(out, 'close');
    if (n === 0) {
      await rm(seq, { force: true });
      return;
    }
    this.ds?.close();
    this.ds = undefined;
    const src = await this.gdal.openAsync(seq);
    try {
      const create = this.tables.size === 0 ? ['-f', 'SQLite', '-dsco', 'SPATIALITE=YES', '-dsco', 'INIT_WITH_EPSG=NO'] : ['-update'];
      const dst = await this.gdal.vectorTranslateAsync(this.file, src, [...create, '-nln', table, '-lco', 'GEOMETRY_NAME=geom', '-nlt', 'GEOMETRY', '-gt', ROWS_PER_TRANSACTION]);
      dst.close();
    } finally {
      src.close();
      await rm(seq, { force: true });
    }
    this.tables.add(table);
  }

  private async query(sql: string): Promise<Record<string, unknown>[]> {
    if (!this.ds) {
      this.ds = await this.gdal.openAsync(this.file);
      const check = await executeSqlAsync(this.ds, 'SELECT spatialite_version() AS v');
      const ok = check.features.first()?.fields.get('v');
      if (!ok) throw new UserError("GDAL's SQLite driver has no SpatiaLite: install Debian's libgdal with SpatiaLite (`make setup`)");
    }
    const layer = await executeSqlAsync(this.ds, sql);
    const rows: Record<string, unknown>[] = [];
    for (const f of layer.features) rows.push(f.fields.toObject() as Record<string, unknown>);
    return rows;
  }

  /** Points and boxes by id from rows `{id, x, y, w, s, e, n}` (rows GEOS could not place are left out). */
  private async located(sql: string): Promise<Map<number, Located>> {
    const out = new Map<number, Located>();
    for (const r of await this.query(sql)) {
      if (typeof r.x !== 'number' || typeof r.y !== 'number') continue;
      out.set(r.id as number, { lon: r.x, lat: r.y, bbox: [r.w as number, r.s as number, r.e as number, r.n as number] });
    }
    return out;
  }

  /** The representative point and box of every feature of `feat`, by ref (a feature GEOS cannot place is left out). */
  async featurePoints(): Promise<Map<number, Located>> {
    if (!this.tables.has('feat')) return new Map();
    return this.located('SELECT ref AS id, ST_X(p) AS x, ST_Y(p) AS y, MbrMinX(geom) AS w, MbrMinY(geom) AS s, MbrMaxX(geom) AS e, MbrMaxY(geom) AS n FROM (SELECT ref, geom, COALESCE(ST_PointOnSurface(geom), ST_Centroid(geom)) AS p FROM feat)');
  }

  /** Which areas of `area` contain which points of `points`: [point ref, area ref] pairs. */
  async containing(points: 'point' | 'gpoint' = 'point'): Promise<[number, number][]> {
    if (!this.tables.has('area') || !this.tables.has(points)) return [];
    // Areas outermost: each area's geometry is prepared once by SpatiaLite and tested against the points its box holds.
    const rows = await this.query(
      `SELECT p.ref AS p, a.ref AS a FROM area a JOIN ${points} p ON p.ROWID IN (SELECT ROWID FROM SpatialIndex WHERE f_table_name = '${points}' AND f_geometry_column = 'geom' AND search_frame = a.geom) AND ST_Contains(a.geom, p.geom)`,
    );
    return rows.map((r) => [r.p as number, r.a as number]);
  }

  /** The point and box of each group of `way` (by gid): ST_PointOnSurface of the ways collected. */
  async groupPoints(): Promise<Map<number, Located>> {
    if (!this.tables.has('way')) return new Map();
    return this.located(
      'SELECT gid AS id, ST_X(p) AS x, ST_Y(p) AS y, MbrMinX(c) AS w, MbrMinY(c) AS s, MbrMaxX(c) AS e, MbrMaxY(c) AS n FROM (SELECT gid, c, COALESCE(ST_PointOnSurface(c), ST_Centroid(c)) AS p FROM (SELECT gid, ST_Collect(geom) AS c FROM way GROUP BY gid))',
    );
  }

  /** Close the database and remove it. */
  async close(): Promise<void> {
    this.ds?.close();
    this.ds = undefined;
    await rm(this.file, { force: true });
  }
}
