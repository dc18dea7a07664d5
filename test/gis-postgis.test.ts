// Vector tilesets from PostGIS (a real cluster of Debian's postgresql-15-postgis-3, test/fixtures/postgis.ts):
// Monaco's OSM points loaded by GDAL into a table; a `table` layer with `fields` and a `sql` layer cut into
// z12–14 tiles that hold every named point where it is. The password may come from the URL, PGPASSWORD or
// a password file, and shows nowhere (a distributed run's files neither). A rebuild with the same rows reuses the archive and
// the search index ("search": {"fields": ["name"]}); an UPDATE of one row changes only the tiles over it, and the index
// finds every named row first by its name, the renamed one by its new name. A missing table, a query PostGIS rejects, a wrong password, a
// database that does not answer (connect_timeout) or nothing listening: the build stops with one line
// naming the tileset, the URL without its password and the cause, and the served version stays.
import { createServer, type Server, type Socket } from 'node:net';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { currentVersionDir } from '../lib/build-version.ts';
import { readManifestOrEmpty, type TilesetEntry } from '../lib/manifest.ts';
import { SearchIndex } from '../lib/search/query.ts';
import { LocalStore } from '../lib/storage.ts';
import { tileJson } from '../lib/tilejson.ts';
import { build } from '../pipeline/build.ts';
import { plan } from '../pipeline/run/plan.ts';
import { changedTiles, tilesetArchiveRef } from '../pipeline/render/archive.ts';
import { gisSources, namedPoints, placeInTile, pointsNamed, type NamedPoint } from './fixtures/gis.ts';
import { PG_PASSWORD, startPostgis, type Postgis } from './fixtures/postgis.ts';
import { runCli } from './fixtures/cli.ts';
import { vectorTile } from './osm-helpers.ts';
import { writeConfig } from './render-helpers.ts';

const DB = 'gis_postgis';
const Z = 14;
const SQL = 'SELECT name, place, geom FROM shops WHERE place IS NOT NULL';
/** MVT buffer of GDAL's tiles, in tile units of 4096 (pipeline/sources/gis.ts MVT_SETTINGS). */
const BUFFER = 80;

let pg: Postgis;
let dir: string;
let named: NamedPoint[];
/** Everything the builds of this file wrote to stderr. */
let lines: string[] = [];
const log = vi.spyOn(process.stderr, 'write');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-gis-postgis-'));
  log.mockImplementation((chunk: string | Uint8Array) => (lines.push(String(chunk)), true));
  const src = await gisSources();
  pg = await startPostgis();
  await pg.createDatabase(DB);
  await pg.load(DB, src.gpkg, 'points', 'shops');
  named = await namedPoints(src.gpkg, 'points');
}, 300_000);
afterAll(async () => {
  log.mockRestore();
  await pg?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A config of one PostGIS tileset `shops` over `url`, written as `name` in the test folder. */
async function shopsConfig(name: string, url: string, layers: Record<string, unknown>, zooms = { minzoom: 12, maxzoom: Z }, more: Record<string, unknown> = {}) {
  return (await writeConfig(dir, `${name}.json`, { out: join(dir, name), tilesets: { shops: { source: url, ...zooms, layers, ...more } } })).config;
}

/** The tileset entry and version folder of the current build in `out`. */
async function current(out: string): Promise<{ id: string; dir: string; entry: TilesetEntry }> {
  const v = (await currentVersionDir(out))!;
  return { id: v.id!, dir: v.dir, entry: (await readManifestOrEmpty(v.dir)).tilesets.shops };
}

/** The named points (of `points`) missing from layer `layer` of their z14 tile in `archive`; the properties of the others. */
async function landing(archive: string, layer: string, points: NamedPoint[]): Promise<{ missing: string[]; found: Map<NamedPoint, Record<string, unknown>> }> {
  const missing: string[] = [];
  const found = new Map<NamedPoint, Record<string, unknown>>();
  const tiles = new Map<string, Awaited<ReturnType<typeof vectorTile>>>();
  for (const p of points) {
    const at = placeInTile(p.lon, p.lat, Z);
    const k = `${at.x}/${at.y}`;
    if (!tiles.has(k)) tiles.set(k, await vectorTile(archive, Z, at.x, at.y));
    const hits = pointsNamed(tiles.get(k)!.layers[layer], p.name, at.px, at.py);
    if (hits.length) found.set(p, hits[0]);
    else missing.push(p.name);
  }
  return { missing, found };
}

/** `s` as a literal in a RegExp. */
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Every file under `folder`, read as text. */
async function allText(folder: string): Promise<string> {
  const files = (await readdir(folder, { recursive: true, withFileTypes: true })).filter((e) => e.isFile());
  return (await Promise.all(files.map((e) => readFile(join(e.parentPath, e.name), 'latin1')))).join('\n');
}

describe('a PostGIS tileset', () => {
  it('a table with fields and a sql layer: every named point in its z14 tile, with its fields; TileJSON lists the layers; the password nowhere', async () => {
    const config = await shopsConfig('tables', pg.url(DB), { shops: { table: 'public.shops', fields: ['osm_id', 'name', 'place'] }, places: { sql: SQL } });
    lines = [];
    await build(config, { out: config.out, only: 'vector' });
    const { dir: version, entry } = await current(config.out);
    const archive = join(version, entry.archive);
    const { missing, found } = await landing(archive, 'shops', named);
    expect(missing).toEqual([]);
    for (const [p, props] of found) {
      const want = Object.fromEntries(Object.entries(p.fields).filter(([k, v]) => ['osm_id', 'name', 'place'].includes(k) && v !== null));
      expect(props, p.name).toEqual(want);
    }
    const places = named.filter((p) => p.fields.place !== null);
    expect(places.length).toBeGreaterThan(3);
    const inPlaces = await landing(archive, 'places', named);
    expect(inPlaces.missing.sort()).toEqual(named.filter((p) => p.fields.place === null).map((p) => p.name).sort());
    expect(tileJson('shops', entry, 'https://tiles.example').vector_layers).toEqual([
      { id: 'shops', minzoom: 12, maxzoom: Z, fields: { osm_id: 'String', name: 'String', place: 'String' } },
      { id: 'places', minzoom: 12, maxzoom: Z, fields: { name: 'String', place: 'String' } },
    ]);
    expect(lines.join('')).toMatch(/vector shops: GDAL [\d.]+ cut 2 layers \(shops, places\) into \d+ tiles, z12-14/);
    expect(lines.join('')).not.toContain(PG_PASSWORD);
    expect(await allText(config.out)).not.toContain(PG_PASSWORD);
  });

  it('takes the password from PGPASSWORD or a password file (~/.pgpass, here PGPASSFILE)', async () => {
    const url = pg.url(DB, { password: false });
    const layers = { shops: { table: 'shops', fields: ['name'] } };
    const zooms = { minzoom: Z, maxzoom: Z };
    vi.stubEnv('PGPASSWORD', PG_PASSWORD);
    try {
      const c = await shopsConfig('env', url, layers, zooms);
      await build(c, { out: c.out, only: 'vector' });
      expect((await current(c.out)).entry.tiles).toBeGreaterThan(0);
    } finally {
      vi.unstubAllEnvs();
    }
    const pgpass = join(dir, 'pgpass.conf');
    await writeFile(pgpass, `127.0.0.1:${pg.port}:${DB}:tiles:${PG_PASSWORD}\n`);
    await chmod(pgpass, 0o600);
    vi.stubEnv('PGPASSFILE', pgpass);
    try {
      const c = await shopsConfig('pgpass', url, layers, zooms);
      await build(c, { out: c.out, only: 'vector' });
      expect((await current(c.out)).entry.tiles).toBeGreaterThan(0);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('a rebuild with the same rows reuses the archive and the search index; an UPDATE of one row changes only the tiles over it, and the index finds the new name', async () => {
    const config = await shopsConfig('update', pg.url(DB), { shops: { table: 'shops', fields: ['name'] } }, undefined, { search: { fields: ['name'] } });
    await build(config, { out: config.out, only: 'vector' });
    lines = [];
    await build(config, { out: config.out, only: 'vector' });
    expect(lines.join('')).toContain('vector shops: the database gives the same tiles, archive reused from the previous build');
    expect(lines.join('')).toContain('search shops: the database gives the same index, reused from the previous build');
    // (Versions are pruned to two: the second build's is compared with the third's.)
    const v1 = await current(config.out);
    // A point well inside Monaco, renamed.
    const p = named.find((n) => n.lat > 43.735 && n.lat < 43.745 && n.lon > 7.42 && n.lon < 7.425)!;
    expect(p).toBeDefined();
    await pg.psql(DB, `UPDATE shops SET name = 'Renamed by the test' WHERE osm_id = '${p.fields.osm_id}'`);
    try {
      await build(config, { out: config.out, only: 'vector' });
      const v2 = await current(config.out);
      const changed = await changedTiles(tilesetArchiveRef(new LocalStore(v1.dir), v1.entry), tilesetArchiveRef(new LocalStore(v2.dir), v2.entry));
      // The tiles whose buffered extent holds the point, at each zoom.
      const expected = new Set<string>();
      for (let z = 12; z <= Z; z++) {
        const at = placeInTile(p.lon, p.lat, z);
        for (const dx of [-1, 0, 1]) {
          for (const dy of [-1, 0, 1]) {
            const px = at.px - dx * 4096;
            const py = at.py - dy * 4096;
            if (px >= -BUFFER && px <= 4096 + BUFFER && py >= -BUFFER && py <= 4096 + BUFFER) expected.add(`${z}/${at.x + dx}/${at.y + dy}`);
          }
        }
      }
      expect([...changed].sort()).toEqual([...expected].sort());
      // The index of the table's names, read through GDAL's PG driver: every named row first by its name; the renamed one by its new name only.
      expect(lines.join('')).not.toContain(PG_PASSWORD);
      const index = SearchIndex.open(join(v2.dir, v2.entry.search!.index));
      try {
        const at = (e: { lon: number; lat: number } | undefined, q: { lon: number; lat: number }) => !!e && Math.abs(e.lon - q.lon) < 1e-6 && Math.abs(e.lat - q.lat) < 1e-6;
        const misses = named.filter((n) => n !== p).filter((n) => {
          const top = index.search({ q: n.name, limit: 1 })[0]?.entry;
          return top?.name !== n.name || !named.some((o) => o.name === n.name && at(top, o));
        });
        expect(misses.map((n) => n.name)).toEqual([]);
        const renamed = index.search({ q: 'Renamed by the test', limit: 1 })[0]?.entry;
        expect(renamed).toMatchObject({ name: 'Renamed by the test', kind: 'poi', layer: 'shops' });
        expect(at(renamed, p)).toBe(true);
        expect(index.search({ q: p.name, limit: 10 }).some((h) => at(h.entry, p))).toBe(false);
      } finally {
        index.close();
      }
    } finally {
      await pg.psql(DB, `UPDATE shops SET name = '${p.name.replace(/'/g, "''")}' WHERE osm_id = '${p.fields.osm_id}'`);
    }
  });
});

describe('a PostGIS tileset in a distributed run', () => {
  it('plan cuts it once and keeps the password out of the run (run.json, inputs/config.json, the archive)', async () => {
    const config = await shopsConfig('planned', pg.url(DB), { shops: { table: 'shops', fields: ['name'] } }, { minzoom: Z, maxzoom: Z });
    const runDir = join(dir, 'run');
    const r = await plan(config, { run: runDir, shards: 2, scratch: dir });
    const input = r.inputs.find((i) => i.path.startsWith('postgresql://'));
    expect(input?.path).toBe(`postgresql://tiles@127.0.0.1:${pg.port}/${DB}`);
    expect(JSON.parse(await readFile(join(runDir, 'inputs', 'config.json'), 'utf8')).tilesets.shops.source).toBe(input!.path);
    expect(await allText(runDir)).not.toContain(PG_PASSWORD);
  });
});

describe('a PostGIS source the build cannot use', () => {
  let out: string;
  let served: string;
  let silent: Server;
  let silentPort: number;
  /** Its connections (closed with it: a server's close waits for them). */
  const greeted = new Set<Socket>();
  const closeSilent = () =>
    new Promise<void>((ok) => {
      if (!silent?.listening) return ok();
      silent.close(() => ok());
      for (const s of greeted) s.destroy();
    });
  beforeAll(async () => {
    const c = await shopsConfig('served', pg.url(DB), { shops: { table: 'shops', fields: ['name'] } }, { minzoom: Z, maxzoom: Z });
    out = c.out;
    await build(c, { out, only: 'vector' });
    served = (await current(out)).id;
    // Accepts connections and never answers: libpq waits for the server's greeting until connect_timeout.
    silent = createServer((s) => void greeted.add(s));
    await new Promise<void>((ok) => silent.listen(0, '127.0.0.1', ok));
    silentPort = (silent.address() as { port: number }).port;
  });
  afterAll(closeSilent);

  /** Build `layers` over `url` into the served folder: the message of the UserError it fails with. */
  async function failure(url: string, layers: Record<string, unknown>): Promise<string> {
    const c = (await writeConfig(dir, 'bad.json', { out, tilesets: { shops: { source: url, minzoom: Z, maxzoom: Z, layers } } })).config;
    const e = await build(c, { out }).then(() => undefined, (err: Error) => err);
    expect(e?.name).toBe('UserError');
    expect((await current(out)).id).toBe(served);
    expect(e!.message).not.toContain(PG_PASSWORD);
    expect(e!.message.split('\n')).toHaveLength(1);
    return e!.message;
  }

  it('a missing table, a query PostGIS rejects, a wrong password: one line naming the tileset, the URL without password and the cause', async () => {
    const shown = `tileset "shops" (postgresql://tiles@127.0.0.1:${pg.port}/${DB})`;
    expect(await failure(pg.url(DB), { x: { table: 'public.nope' } })).toBe(`${shown}: $.tilesets.shops.layers.x.table: no table "public.nope" with a geometry column (tables with geometry: shops)`);
    expect(await failure(pg.url(DB), { big: { sql: 'SELECT name, geom FROM shops WHERE area > 1000' } })).toMatch(new RegExp(`^${esc(shown)}: \\$\\.tilesets\\.shops\\.layers\\.big\\.sql: PostGIS rejects the query: column "area" does not exist`));
    const wrong = pg.url(DB).replace(PG_PASSWORD, 'not-the-password');
    const msg = await failure(wrong, { shops: { table: 'shops' } });
    expect(msg).toBe(`${shown}: cannot connect to the database: connection to server at "127.0.0.1", port ${pg.port} failed: FATAL: password authentication failed for user "tiles"`);
    expect(msg).not.toContain('not-the-password');
  });

  it('a database that does not answer stops at connect_timeout; nothing listening stops at once', async () => {
    const t0 = performance.now();
    const msg = await failure(`postgresql://tiles:${PG_PASSWORD}@127.0.0.1:${silentPort}/city?connect_timeout=2`, { shops: {} });
    expect(msg).toMatch(new RegExp(`^tileset "shops" \\(postgresql://tiles@127\\.0\\.0\\.1:${silentPort}/city\\?connect_timeout=2\\): the database did not answer within 2 s \\(connect_timeout; set \\?connect_timeout=N in the URL\\): .*timeout expired$`));
    expect(performance.now() - t0).toBeLessThan(30_000);
    await closeSilent();
    expect(await failure(`postgresql://tiles:${PG_PASSWORD}@127.0.0.1:${silentPort}/city`, { shops: {} })).toMatch(/cannot connect to the database: .*Connection refused/);
  });

  it('the CLI prints that one line and exits non-zero, without a stack or the password', async () => {
    const bad = join(dir, 'cli.json');
    await writeFile(bad, JSON.stringify({ out, tilesets: { shops: { source: pg.url(DB), layers: { big: { sql: 'SELECT nope FROM shops' } } } } }));
    const r = await runCli(['build', '--config', bad]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^tilebake: tileset "shops" \(postgresql:\/\/tiles@127\.0\.0\.1:\d+\/gis_postgis\): \$\.tilesets\.shops\.layers\.big\.sql: PostGIS rejects the query: column "nope" does not exist/)]);
    expect(r.stderr).not.toContain(PG_PASSWORD);
    expect((await current(out)).id).toBe(served);
  });
});
