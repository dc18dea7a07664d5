// Units of the GIS tilesets (no GDAL run, no database): PostgreSQL URLs shown without their password
// and given a connect timeout, the config's layers checked with JSON paths, the VRT document, GDAL's
// messages on one line, a GeoPackage told from an MBTiles file by its SQLite application id.
import Database from 'better-sqlite3';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionUrl, connectTimeoutOf, DEFAULT_CONNECT_TIMEOUT_S, isDatabaseUrl, redactDatabaseUrl, withoutPassword } from '../lib/database-url.ts';
import { zoomShowing } from '../lib/tile-math.ts';
import { parseConfig } from '../pipeline/config/index.ts';
import { mvtLayerConf, oneLine, vrtDocument } from '../pipeline/sources/gis-layers.ts';
import { detectInputKind } from '../pipeline/sources/index.ts';

/** The message of the UserError `f` throws. */
function messageOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect((e as Error).name).toBe('UserError');
    return (e as Error).message;
  }
  throw new Error('expected a UserError');
}

describe('a PostgreSQL URL', () => {
  const url = 'postgresql://tiles:s%40cret@db.example:5433/city?sslmode=require';

  it('is recognised by its scheme and shown without its password', () => {
    expect(isDatabaseUrl(url)).toBe(true);
    expect(isDatabaseUrl('postgres://u@h/db')).toBe(true);
    expect(isDatabaseUrl('/data/postgresql.gpkg')).toBe(false);
    expect(redactDatabaseUrl(url)).toBe('postgresql://tiles@db.example:5433/city?sslmode=require');
    expect(redactDatabaseUrl('postgresql://u@h/db?password=pw&sslmode=disable')).toBe('postgresql://u@h/db?sslmode=disable');
    expect(redactDatabaseUrl('postgresql://u@h/db?sslmode=disable&password=pw')).toBe('postgresql://u@h/db?sslmode=disable');
    expect(redactDatabaseUrl('postgresql://h:5432/db')).toBe('postgresql://h:5432/db');
  });

  it('is scrubbed from a message that echoes it, password decoded or not', () => {
    const message = `cannot open ${url}: password s@cret rejected (s%40cret)`;
    const clean = withoutPassword(message, url);
    expect(clean).not.toMatch(/s@cret|s%40cret/);
    expect(clean).toContain('postgresql://tiles@db.example:5433/city');
  });

  it('connects with a short, named timeout unless it sets its own', () => {
    expect(connectionUrl('postgresql://u@h/db')).toBe(`postgresql://u@h/db?connect_timeout=${DEFAULT_CONNECT_TIMEOUT_S}`);
    expect(connectionUrl('postgresql://u@h/db?sslmode=disable')).toBe(`postgresql://u@h/db?sslmode=disable&connect_timeout=${DEFAULT_CONNECT_TIMEOUT_S}`);
    expect(connectionUrl('postgresql://u@h/db?connect_timeout=2')).toBe('postgresql://u@h/db?connect_timeout=2');
    expect(connectTimeoutOf('postgresql://u@h/db?connect_timeout=2')).toBe(2);
  });
});

describe('the config of a GIS tileset', () => {
  const parse = (tilesets: Record<string, unknown>) => parseConfig({ tilesets }, '/cfg/build.json');

  it('keeps a database URL as it is and resolves a file against the config', () => {
    const c = parse({ city: { source: 'city.gpkg', maxzoom: 16, layers: { parcels: {}, trees: { minzoom: 14, fields: ['species'] } } }, shops: { source: 'postgresql://tiles@db/city', layers: { shops: { table: 'public.shops' } } } });
    expect(c.tilesets.city).toMatchObject({ source: resolve('/cfg/city.gpkg'), maxzoom: 16, layers: { trees: { minzoom: 14, fields: ['species'] } } });
    expect(c.tilesets.shops.source).toBe('postgresql://tiles@db/city');
  });

  it('names each problem by its JSON path', () => {
    const msg = messageOf(() =>
      parse({
        a: 'postgresql://u@h/db',
        b: { source: 'postgresql://u@h/db', layers: { x: { layer: 'x' }, y: { table: 't', sql: 'SELECT 1' }, z: { sql: 'SELECT geom FROM t', fields: ['name'] } } },
        c: { source: 'c.gpkg', minzoom: 10, maxzoom: 14, layers: { p: { table: 'p' }, q: { minzoom: 9 }, r: { fields: ['a', 'a'] }, s: { minzoom: 14, maxzoom: 12 } } },
      }),
    );
    expect(msg.split('\n').slice(1)).toEqual([
      '  $.tilesets.a.layers: a PostGIS source lists its layers, each a "table" or a "sql" query (e.g. {"shops": {"table": "public.shops"}})',
      '  $.tilesets.b.layers.x.layer: a PostGIS layer is a "table" or a "sql" query ("layer" names a layer of a file)',
      '  $.tilesets.b.layers.y.sql: a layer comes from one of "layer", "table" or "sql" (got "table" and "sql")',
      '  $.tilesets.b.layers.z.fields: a "sql" layer keeps the columns its query selects (list them in the query)',
      '  $.tilesets.c.layers.p.table: "table" names a PostGIS table; a file\'s layer is chosen with "layer"',
      "  $.tilesets.c.layers.q.minzoom: expected a zoom within the tileset's 10–14",
      '  $.tilesets.c.layers.r.fields[1]: "a" is listed twice',
      '  $.tilesets.c.layers.s.minzoom: expected minzoom <= maxzoom (14 > 12)',
    ]);
    expect(messageOf(() => parse({ c: { source: 'c.gpkg', maxzoom: 23, layers: { p: {} } } }))).toContain('$.tilesets.c.maxzoom: expected a zoom 0–22 for vector tiles cut by GDAL (got 23)');
    // A file without layers: its kind decides (GIS or imagery), when the build opens it.
    expect(parse({ c: { source: 'c.tif', maxzoom: 23 } }).tilesets.c.maxzoom).toBe(23);
  });
});

describe('the VRT document GDAL cuts', () => {
  it('names each layer as in the tiles, escapes what it holds, and assumes WGS 84 only where the source names no CRS', () => {
    const doc = vrtDocument(
      'postgresql://u:p&q@h/db',
      [
        { name: 'big <1>', minzoom: 0, maxzoom: 14, from: { sql: 'SELECT name, geom FROM shops WHERE area > 1000 AND kind = \'a"b\'' }, assumedSrs: false },
        { name: 'trees', minzoom: 14, maxzoom: 14, from: { sql: 'SELECT "species" FROM "trees"', dialect: 'OGRSQL' }, assumedSrs: true },
        { name: 'parcels', minzoom: 0, maxzoom: 14, description: 'Parcels', from: { layer: 'parcels' }, assumedSrs: false },
      ],
      { X_POSSIBLE_NAMES: 'lon' },
    );
    expect(doc).toBe(
      '<OGRVRTDataSource>' +
        '<OGRVRTLayer name="big &lt;1&gt;"><SrcDataSource>postgresql://u:p&amp;q@h/db</SrcDataSource><OpenOptions><OOI key="X_POSSIBLE_NAMES">lon</OOI></OpenOptions><SrcSQL>SELECT name, geom FROM shops WHERE area &gt; 1000 AND kind = &apos;a&quot;b&apos;</SrcSQL></OGRVRTLayer>' +
        '<OGRVRTLayer name="trees"><SrcDataSource>postgresql://u:p&amp;q@h/db</SrcDataSource><OpenOptions><OOI key="X_POSSIBLE_NAMES">lon</OOI></OpenOptions><SrcSQL dialect="OGRSQL">SELECT &quot;species&quot; FROM &quot;trees&quot;</SrcSQL><LayerSRS>EPSG:4326</LayerSRS></OGRVRTLayer>' +
        '<OGRVRTLayer name="parcels"><SrcDataSource>postgresql://u:p&amp;q@h/db</SrcDataSource><OpenOptions><OOI key="X_POSSIBLE_NAMES">lon</OOI></OpenOptions><SrcLayer>parcels</SrcLayer></OGRVRTLayer>' +
        '</OGRVRTDataSource>',
    );
    expect(mvtLayerConf([{ name: 'trees', minzoom: 14, maxzoom: 14, from: { layer: 't' }, assumedSrs: false, description: 'Trees' }])).toEqual({ trees: { minzoom: 14, maxzoom: 14, description: 'Trees' } });
  });

  it("puts GDAL's and PostgreSQL's messages on one line", () => {
    expect(oneLine('ERROR:  column "nam" does not exist\nLINE 1: DECLARE executeSQLCursor CURSOR for SELECT nam FROM shops\n                                                   ^\nHINT:  Perhaps you meant to reference the column "shops.name".\n')).toBe(
      'column "nam" does not exist; HINT: Perhaps you meant to reference the column "shops.name".',
    );
    expect(oneLine('PQconnectdb failed.\nconnection to server at "127.0.0.1", port 5 failed: timeout expired\n')).toBe('connection to server at "127.0.0.1", port 5 failed: timeout expired');
    expect(oneLine('In ExecuteSQL(): sqlite3_prepare_v2(SELECT nope FROM points):\n  no such column: nope')).toBe('In ExecuteSQL(): sqlite3_prepare_v2(SELECT nope FROM points): no such column: nope');
  });

  it("opens a map of the data where it fills a tile (GDAL's centre is at the lowest zoom)", () => {
    // Monaco's points: ~0.1° by 0.24°.
    expect(zoomShowing([7.408, 43.517, 7.5, 43.752], 0, 14)).toBe(10);
    expect(zoomShowing([7.408, 43.517, 7.5, 43.752], 12, 14)).toBe(12);
    expect(zoomShowing([7.42, 43.73, 7.42, 43.73], 0, 14)).toBe(14);
  });
});

describe('a GeoPackage among the inputs', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tilebake-gis-units-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is told from MBTiles by its SQLite application id, whatever its name', async () => {
    const gpkg = join(dir, 'city.mbtiles');
    const db = new Database(gpkg);
    db.pragma(`application_id = ${0x47504b47}`);
    db.exec('CREATE TABLE t (a INTEGER)');
    db.close();
    expect(await detectInputKind(gpkg)).toBe('gis');
    expect(await detectInputKind(resolve('data/sample/monaco_omt.mbtiles'))).toBe('mbtiles');
    expect(await detectInputKind('postgresql://tiles@db/city')).toBe('postgis');
  });
});
