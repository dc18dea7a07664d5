// GIS files the build cannot use: a file GDAL cannot open (broken GeoJSON, a damaged GeoPackage), an
// image without georeferencing, a CSV without coordinates, a layer, a field or a query that does not exist,
// a search field or layer that does not exist.
// Each stops the build with one line naming the tileset, the source and the cause (the CLI: that line
// and exit 1, no stack); the served version stays as it was. (PostGIS's: test/gis-postgis.test.ts.)
import { open, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { currentVersionDir } from '../lib/build-version.ts';
import { build } from '../pipeline/build.ts';
import { gisSources, type GisSources } from './fixtures/gis.ts';
import { runCli } from './fixtures/cli.ts';
import { tempDir, writeConfig } from './render-helpers.ts';

const Z = 14;
let dir: string;
let out: string;
let src: GisSources;
let served: string;
const log = vi.spyOn(process.stderr, 'write');

/** A raw config of tileset `city` over `source` (more tileset fields in `more`). */
const raw = (source: string, more: Record<string, unknown> = {}) => ({ out, tilesets: { city: { source, minzoom: Z, maxzoom: Z, ...more } } });

beforeAll(async () => {
  dir = await tempDir('gis-bad-input');
  out = join(dir, 'out');
  src = await gisSources();
  log.mockImplementation(() => true);
  const { config } = await writeConfig(dir, 'good.json', raw(src.gpkg, { layers: { points: { fields: ['name'] } } }));
  await build(config, { out, only: 'vector' });
  served = (await currentVersionDir(out))!.id!;
}, 120_000);
afterAll(async () => {
  log.mockRestore();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Build `config` into the served folder: the one-line message of the UserError it fails with. */
async function failure(config: Record<string, unknown>): Promise<string> {
  const c = (await writeConfig(dir, 'bad.json', config)).config;
  const e = await build(c, { out }).then(() => undefined, (err: Error) => err);
  expect(e?.name, String(e?.stack)).toBe('UserError');
  expect(e!.message.split('\n')).toHaveLength(1);
  expect((await currentVersionDir(out))!.id).toBe(served);
  return e!.message;
}

describe('a GIS file the build cannot use', () => {
  it('a file GDAL cannot open: broken GeoJSON, a damaged GeoPackage', async () => {
    const broken = join(dir, 'broken.geojson');
    await writeFile(broken, '{"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": ');
    expect(await failure(raw(broken))).toMatch(new RegExp(`^tileset "city": ${broken}: unknown input \\(expected .*; GDAL: .+\\)$`));
    // The GeoPackage's first 4 KiB: SQLite's header with the GeoPackage id, and nothing of its tables.
    const damaged = join(dir, 'damaged.gpkg');
    const fh = await open(src.gpkg, 'r');
    const head = Buffer.alloc(4096);
    await fh.read(head, 0, head.length, 0);
    await fh.close();
    await writeFile(damaged, head);
    expect(await failure(raw(damaged))).toMatch(new RegExp(`^tileset "city" \\(${damaged}\\): GDAL cannot open it as vector data: .+`));
  });

  it('an image without georeferencing (the imagery stage\'s), and a CSV without coordinate columns', async () => {
    const png = join(dir, 'scan.png');
    await sharp({ create: { width: 64, height: 64, channels: 3, background: '#808080' } }).png().toFile(png);
    expect(await failure(raw(png, { minzoom: undefined, maxzoom: undefined }))).toMatch(/^tileset "city".*has no georeferencing/);
    const csv = join(dir, 'table.csv');
    await writeFile(csv, 'name,height\nOak,12\nPine,20\n');
    expect(await failure(raw(csv))).toBe(`tileset "city" (${csv}): no layer with a geometry: a CSV needs longitude/latitude columns (e.g. "lon" and "lat") or a WKT column ("wkt") (its layers: table)`);
  });

  it('a layer, a field or a query that does not exist: named by its JSON path', async () => {
    const shown = `tileset "city" (${src.gpkg})`;
    expect(await failure(raw(src.gpkg, { layers: { parcels: {} } }))).toBe(`${shown}: $.tilesets.city.layers.parcels.layer: no layer "parcels" in the source (its layers: points, lines, multipolygons)`);
    expect(await failure(raw(src.gpkg, { layers: { trees: { layer: 'points', fields: ['name', 'species'] } } }))).toBe(
      `${shown}: $.tilesets.city.layers.trees.fields[1]: no field "species" in layer "points" (its fields: osm_id, name, barrier, highway, ref, address, is_in, place, man_made, other_tags)`,
    );
    expect(await failure(raw(src.gpkg, { layers: { big: { sql: 'SELECT name, geom FROM parcels WHERE area > 1000' } } }))).toMatch(
      new RegExp(`^${shown.replace(/[.()]/g, '\\$&')}: \\$\\.tilesets\\.city\\.layers\\.big\\.sql: GDAL rejects the query: .*no such table: parcels`),
    );
    // Layers of a source that is no GIS file.
    const mbtiles = resolve(import.meta.dirname, '..', 'data/sample/monaco_omt.mbtiles');
    expect(await failure(raw(mbtiles, { minzoom: undefined, maxzoom: undefined, layers: { x: {} } }))).toBe(`tileset "city": $.tilesets.city.layers: applies to GIS files and PostGIS databases only (${mbtiles} is an MBTiles file: its tiles are served as they are)`);
  });

  it('a search field or layer that is not there: named by its JSON path, with the layer', async () => {
    const shown = `tileset "city" (${src.gpkg})`;
    const layers = { points: { fields: ['name'] } };
    expect(await failure(raw(src.gpkg, { layers, search: { fields: ['name', 'nom'] } }))).toBe(
      `${shown}: $.tilesets.city.search.fields[1]: no field "nom" in layer "points" (its fields: osm_id, name, barrier, highway, ref, address, is_in, place, man_made, other_tags)`,
    );
    expect(await failure(raw(src.gpkg, { layers, search: { fields: ['name'], layers: ['shops'] } }))).toBe(`${shown}: $.tilesets.city.search.layers[0]: no layer "shops" in the tiles (their layers: points)`);
  });

  it('the CLI prints the one line and exits 1, without a stack', async () => {
    const bad = join(dir, 'cli.json');
    await writeFile(bad, JSON.stringify(raw(src.gpkg, { layers: { points: { fields: ['nom'] } } })));
    const r = await runCli(['build', '--config', bad]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([`tilebake: tileset "city" (${src.gpkg}): $.tilesets.city.layers.points.fields[0]: no field "nom" in layer "points" (its fields: osm_id, name, barrier, highway, ref, address, is_in, place, man_made, other_tags)`]);
    expect((await currentVersionDir(out))!.id).toBe(served);
  });
});
