/**
 * The geometry of the search index, done by GEOS through SpatiaLite (Debian's mod_spatialite, loaded into
 * better-sqlite3's SQLite; the libspatialite and GEOS GDAL's SQLite driver uses): a way's or area's
 * representative point (ST_PointOnSurface: on the line, inside the polygon) and bounding box, which
 * settlement areas contain a point (ST_Contains over an R*Tree of the points, each area's prepared
 * geometry reused over the points its box holds), and the point and box of a street made of several
 * ways (ST_Collect). Geometries go in as the GeoJSON osmium (or GDAL) wrote, parsed by SpatiaLite's
 * GeomFromGeoJSON, into a database in memory; nothing here computes geometry itself. (Through GDAL, as
 * GeoJSON sequences ogr2ogr'd into a SpatiaLite file and read back as features, the same work took
 * about twice as long: docs/search.md.)
 */
import Database from 'better-sqlite3';
import { UserError } from '../../lib/errors.ts';

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

/** The tables of geometries a work database holds. */
type Table = 'feat' | 'area' | 'way';
/** The tables of points. */
type PointTable = 'point' | 'gpoint';

const SCHEMA = `
CREATE TABLE feat (ref INTEGER PRIMARY KEY, geom BLOB);
CREATE TABLE area (ref INTEGER PRIMARY KEY, geom BLOB);
CREATE TABLE piece (area INTEGER, geom BLOB, w REAL, s REAL, e REAL, n REAL);
CREATE TABLE way (ref INTEGER, gid INTEGER, geom BLOB);
CREATE TABLE point (ref INTEGER PRIMARY KEY, x REAL, y REAL);
CREATE TABLE gpoint (ref INTEGER PRIMARY KEY, x REAL, y REAL);
CREATE VIRTUAL TABLE point_box USING rtree(id, x0, x1, y0, y1);
CREATE VIRTUAL TABLE gpoint_box USING rtree(id, x0, x1, y0, y1);
`;

/** The insert of each table: the geometry parsed by SpatiaLite from its GeoJSON text. */
const INSERT: Readonly<Record<Table, string>> = {
  feat: 'INSERT INTO feat (ref, geom) VALUES (?, GeomFromGeoJSON(?))',
  area: 'INSERT INTO area (ref, geom) VALUES (?, GeomFromGeoJSON(?))',
  way: 'INSERT INTO way (ref, gid, geom) VALUES (?, ?, GeomFromGeoJSON(?))',
};

/**
 * Point and box rows `[id, x, y, w, s, e, n]` of the geometries `source` selects as `(id, g)`. The CTEs are
 * materialised so that each GEOS call runs once a row (SQLite would otherwise copy the expression into
 * every column that reads it).
 */
const locatedSql = (source: string) =>
  `WITH src AS MATERIALIZED (${source}), pt AS MATERIALIZED (SELECT id, COALESCE(ST_PointOnSurface(g), ST_Centroid(g)) AS p, MbrMinX(g) AS w, MbrMinY(g) AS s, MbrMaxX(g) AS e, MbrMaxY(g) AS n FROM src)
   SELECT id, ST_X(p), ST_Y(p), w, s, e, n FROM pt`;

/** Vertices of an area's pieces at most (ST_Subdivide's limit; RTTOPO's least is 8). */
const PIECE_VERTICES = 128;

/**
 * The areas cut into pieces of at most PIECE_VERTICES vertices (ST_Subdivide), each with its box: SpatiaLite
 * reads an ST_Contains's geometries from their blobs on every call, so a country's border of thousands of
 * vertices tested against every point of the extract costs its size each time; a piece costs little and its
 * box holds fewer points. A small area is its own piece, and so is one GEOS cannot cut.
 */
const PIECES_SQL = `INSERT INTO piece (area, geom, w, s, e, n)
  WITH RECURSIVE cut AS MATERIALIZED (
    SELECT ref, CASE WHEN ST_NPoints(geom) > ${PIECE_VERTICES} THEN COALESCE(ST_Subdivide(geom, ${PIECE_VERTICES}), geom) ELSE geom END AS g FROM area),
  part(ref, g, i) AS (SELECT ref, g, 1 FROM cut UNION ALL SELECT ref, g, i + 1 FROM part WHERE i < ST_NumGeometries(g)),
  one AS MATERIALIZED (SELECT ref, CASE WHEN ST_NumGeometries(g) > 1 THEN ST_GeometryN(g, i) ELSE g END AS g FROM part)
  SELECT ref, g, MbrMinX(g), MbrMinY(g), MbrMaxX(g), MbrMaxY(g) FROM one`;

/** Load SpatiaLite into `db`, or say which Debian package is missing. */
function loadSpatiaLite(db: Database.Database): void {
  try {
    db.loadExtension('mod_spatialite');
  } catch (e) {
    throw new UserError(`SQLite's SpatiaLite extension cannot be loaded (${(e as Error).message.split('\n')[0]}): install Debian's libsqlite3-mod-spatialite (\`make setup\`)`, { cause: e });
  }
}

/** A SpatiaLite database in memory, loaded table by table. */
export class GeometryWork {
  private readonly tables = new Set<Table | PointTable>();
  /** Whether the areas are cut into pieces (once, before the first `containing`). */
  private cut = false;

  private constructor(private readonly db: Database.Database) {}

  /** A new work database. */
  static create(): GeometryWork {
    const db = new Database(':memory:');
    try {
      loadSpatiaLite(db);
      db.exec(SCHEMA);
    } catch (e) {
      db.close();
      throw e;
    }
    return new GeometryWork(db);
  }

  /** Load `rows` (a `ref` number each, `gid` for ways; a geometry as GeoJSON, or its text) into `table`. */
  load(table: Table, rows: Iterable<{ ref: number; gid?: number; geometry: GeoJsonGeometry | string }>): void {
    const insert = this.db.prepare(INSERT[table]);
    this.db.transaction(() => {
      for (const r of rows) {
        const geometry = typeof r.geometry === 'string' ? r.geometry : JSON.stringify(r.geometry);
        if (table === 'way') insert.run(r.ref, r.gid ?? 0, geometry);
        else insert.run(r.ref, geometry);
        this.tables.add(table);
      }
    })();
  }

  /** Load points (a `ref` each) into `table`, with the R*Tree `ST_Contains` looks them up by. */
  loadPoints(table: PointTable, rows: Iterable<{ ref: number; lon: number; lat: number }>): void {
    const point = this.db.prepare(`INSERT INTO ${table} (ref, x, y) VALUES (?, ?, ?)`);
    this.db.transaction(() => {
      for (const r of rows) {
        point.run(r.ref, r.lon, r.lat);
        this.tables.add(table);
      }
      // The R*Tree in one statement (not an insert per point).
      this.db.exec(`INSERT INTO ${table}_box (id, x0, x1, y0, y1) SELECT ref, x, x, y, y FROM ${table}`);
    })();
  }

  /** Points and boxes by id from `locatedSql` rows (rows GEOS could not place are left out). */
  private located(sql: string): Map<number, Located> {
    const out = new Map<number, Located>();
    for (const [id, x, y, w, s, e, n] of this.db.prepare(sql).raw().iterate() as Iterable<number[]>) {
      if (typeof x !== 'number' || typeof y !== 'number') continue;
      out.set(id, { lon: x, lat: y, bbox: [w, s, e, n] });
    }
    return out;
  }

  /** The representative point and box of every feature of `feat`, by ref (a feature GEOS cannot place is left out). */
  featurePoints(): Map<number, Located> {
    if (!this.tables.has('feat')) return new Map();
    return this.located(locatedSql('SELECT ref AS id, geom AS g FROM feat'));
  }

  /** Which areas of `area` contain which points of `points`: [point ref, area ref] pairs. */
  containing(points: PointTable = 'point'): [number, number][] {
    if (!this.tables.has('area') || !this.tables.has(points)) return [];
    if (!this.cut) {
      this.db.exec(PIECES_SQL);
      this.cut = true;
    }
    // Pieces outermost: each piece's geometry is prepared once by SpatiaLite (its cache of the last blobs) and
    // tested against the points its box holds (the R*Tree's boxes are rounded outwards; GEOS decides). A point
    // inside a piece is inside its area; one on a piece's edge (an area's border, or a cut) is tested against
    // the whole area.
    const sql = `SELECT p.ref, s.area, ST_Contains(s.geom, MakePoint(p.x, p.y)) FROM piece s CROSS JOIN ${points}_box b CROSS JOIN ${points} p
      WHERE b.x0 <= s.e AND b.x1 >= s.w AND b.y0 <= s.n AND b.y1 >= s.s AND p.ref = b.id AND ST_Covers(s.geom, MakePoint(p.x, p.y)) = 1`;
    const whole = this.db.prepare(`SELECT ST_Contains(a.geom, MakePoint(p.x, p.y)) FROM area a, ${points} p WHERE a.ref = ? AND p.ref = ?`).pluck();
    const out = new Map<string, [number, number]>();
    const edge = new Map<string, [number, number]>();
    for (const [p, a, inside] of this.db.prepare(sql).raw().iterate() as Iterable<[number, number, number]>) {
      (inside === 1 ? out : edge).set(`${p}:${a}`, [p, a]);
    }
    for (const [k, pair] of edge) if (!out.has(k) && whole.get(pair[1], pair[0]) === 1) out.set(k, pair);
    return [...out.values()];
  }

  /** The point and box of each group of `way` (by gid): ST_PointOnSurface of the ways collected. */
  groupPoints(): Map<number, Located> {
    if (!this.tables.has('way')) return new Map();
    return this.located(locatedSql('SELECT gid AS id, ST_Collect(geom) AS g FROM way GROUP BY gid'));
  }

  /** Close the database. */
  close(): void {
    this.db.close();
  }
}
