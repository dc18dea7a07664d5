// Vector tilesets from GIS files: GDAL writes Monaco's OSM points (and lines and polygons) as a
// GeoPackage, FlatGeobuf, GeoJSON, CSV, Shapefile and KML (test/fixtures/gis.ts); each becomes a
// PMTiles archive whose z14 tiles hold every named point where it is, with its fields. The config's
// fields, renames, sql layers and zooms are honoured, TileJSON lists the layers, the tiles are those
// ogr2ogr -f MVT writes (dense ones too) and their bytes do not depend on GDAL's thread count, a Shapefile is fingerprinted by all its files, and the tileset is an ordinary
// one for MLT and packs; its search index ("search": true) finds every named point first by its name,
// is reused when no file changed and made again when one did. Only z12–14 are cut (the assertions are about those).
import { appendFile, cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { gunzipSync } from 'node:zlib';
import { basename, join } from 'node:path';
import type { VectorTile } from '@mapbox/vector-tile';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { currentVersionDir } from '../lib/build-version.ts';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { photonFeature } from '../lib/search/photon.ts';
import { SearchIndex } from '../lib/search/query.ts';
import { tileJson } from '../lib/tilejson.ts';
import { pack } from '../export/pack.ts';
import { build } from '../pipeline/build.ts';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { gisSourceFiles, MVT_SETTINGS } from '../pipeline/sources/gis.ts';
import { packVectorTiles, tilesetEntry, type PackOptions } from '../pipeline/vector/stage.ts';
import { encodeMltArchive } from '../pipeline/vector/mlt.ts';
import { gisSources, liechtensteinGpkg, namedPoints, ogr2ogr, placeInTile, pointsNamed, type GisSources, type NamedPoint } from './fixtures/gis.ts';
import { readMbtiles } from './pmtiles-helpers.ts';
import { vectorTile } from './osm-helpers.ts';
import { archiveTiles, writeConfig } from './render-helpers.ts';

const Z = 14;
let dir: string;
let src: GisSources;
/** The GeoPackage's named points (the reference every format is checked against). */
let named: NamedPoint[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tilebake-gis-files-'));
  src = await gisSources();
  named = await namedPoints(src.gpkg, 'points');
}, 120_000);
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Pack `source` (GIS options `gis`) into `<dir>/<name>.pmtiles`. */
async function packGis(source: string, name: string, gis: PackOptions['gis'] = {}): Promise<{ archive: string; r: Awaited<ReturnType<typeof packVectorTiles>> }> {
  const archive = join(dir, `${name}.pmtiles`);
  const r = await packVectorTiles(source, archive, { label: name, workDir: join(dir, `work-${name}`), gis });
  return { archive, r };
}

/** Decoded tiles of one archive, read once each. */
function tileReader(archive: string): (z: number, x: number, y: number) => Promise<VectorTile> {
  const tiles = new Map<string, Promise<VectorTile>>();
  return (z, x, y) => {
    const k = `${z}/${x}/${y}`;
    if (!tiles.has(k)) tiles.set(k, vectorTile(archive, z, x, y));
    return tiles.get(k)!;
  };
}

/** The named points (of `points`) missing from layer `layer` of their z14 tile, with the properties found for the others. */
async function landing(archive: string, layer: string, points: NamedPoint[], nameKey = 'name'): Promise<{ missing: string[]; found: Map<NamedPoint, Record<string, unknown>> }> {
  const tile = tileReader(archive);
  const missing: string[] = [];
  const found = new Map<NamedPoint, Record<string, unknown>>();
  for (const p of points) {
    const at = placeInTile(p.lon, p.lat, Z);
    const t = await tile(Z, at.x, at.y);
    const l = t.layers[layer];
    const hits = nameKey === 'name' ? pointsNamed(l, p.name, at.px, at.py) : pointsNamed(l && renamed(l, nameKey), p.name, at.px, at.py);
    if (hits.length === 0) missing.push(`${p.name} (${p.lon}, ${p.lat})`);
    else found.set(p, hits[0]);
  }
  return { missing, found };
}

/** A layer view whose features' `nameKey` property reads as `name` (KML's "Name"). */
function renamed(l: VectorTile['layers'][string], nameKey: string): VectorTile['layers'][string] {
  return {
    ...l,
    length: l.length,
    feature: (i: number) => {
      const f = l.feature(i);
      return Object.assign(Object.create(Object.getPrototypeOf(f)), f, { properties: { ...f.properties, name: f.properties[nameKey] } });
    },
  } as VectorTile['layers'][string];
}

describe('a GeoPackage', () => {
  it('every named point lands in its z14 tile with its fields; TileJSON lists the layers', async () => {
    expect(named.length).toBeGreaterThan(500);
    const { archive, r } = await packGis(src.gpkg, 'gpkg', { minzoom: 12, maxzoom: Z, layers: { points: {} } });
    const { missing, found } = await landing(archive, 'points', named);
    expect(missing).toEqual([]);
    for (const [p, props] of found) {
      const want = Object.fromEntries(Object.entries(p.fields).filter(([, v]) => v !== null));
      expect(props, p.name).toEqual(want);
    }
    const tj = tileJson('city', tilesetEntry('city', r), 'https://tiles.example');
    expect(tj).toMatchObject({ minzoom: 12, maxzoom: Z, format: 'pbf' });
    expect(tj.vector_layers).toEqual([
      { id: 'points', minzoom: 12, maxzoom: Z, fields: { osm_id: 'String', name: 'String', barrier: 'String', highway: 'String', ref: 'String', address: 'String', is_in: 'String', place: 'String', man_made: 'String', other_tags: 'String' } },
    ]);
    // The map opens over the data, not the world (GDAL's centre is at the lowest zoom).
    expect((tj.center as number[])[2]).toBeGreaterThanOrEqual(12);
  });

  it('honours fields, a rename, a sql layer and a layer\'s zooms', async () => {
    const sql = 'SELECT name, place, geom FROM points WHERE place IS NOT NULL';
    const { archive, r } = await packGis(src.gpkg, 'layers', {
      minzoom: 12,
      maxzoom: Z,
      layers: { pois: { layer: 'points', fields: ['name'], minzoom: 13 }, places: { sql, description: 'Named places' } },
    });
    expect(r.metadata.vector_layers).toEqual([
      { id: 'pois', minzoom: 13, maxzoom: Z, fields: { name: 'String' } },
      { id: 'places', description: 'Named places', minzoom: 12, maxzoom: Z, fields: { name: 'String', place: 'String' } },
    ]);
    const places = await namedPoints(src.gpkg, 'points', sql);
    expect(places.length).toBeGreaterThan(3);
    expect(places.length).toBeLessThan(named.length / 10);
    const { missing, found } = await landing(archive, 'pois', named);
    expect(missing).toEqual([]);
    for (const props of found.values()) expect(Object.keys(props)).toEqual(['name']);
    expect((await landing(archive, 'places', places)).missing).toEqual([]);
    // The sql layer holds its rows only: every point feature of it in the z14 tiles is one of them.
    const tile = tileReader(archive);
    const seen = new Set<string>();
    for (const p of named) {
      const at = placeInTile(p.lon, p.lat, Z);
      const l = (await tile(Z, at.x, at.y)).layers.places;
      for (let i = 0; i < (l?.length ?? 0); i++) seen.add(String(l!.feature(i).properties.name));
    }
    expect([...seen].sort()).toEqual([...new Set(places.map((p) => p.name))].sort());
    // Layer zooms: pois from z13, places from z12; no layer of the source's own names.
    const z12 = placeInTile(places[0].lon, places[0].lat, 12);
    expect(Object.keys((await vectorTile(archive, 12, z12.x, z12.y)).layers)).toEqual(['places']);
    const z13 = placeInTile(places[0].lon, places[0].lat, 13);
    expect(Object.keys((await vectorTile(archive, 13, z13.x, z13.y)).layers).sort()).toEqual(['places', 'pois']);
  });

  it("gives ogr2ogr -f MVT's own tiles, also where a tile is dense (Liechtenstein at z11, ~270 KB gzipped)", async () => {
    const li = await liechtensteinGpkg();
    const { archive } = await packGis(li, 'li', { minzoom: 11, maxzoom: 11 });
    const mbtiles = join(dir, 'li-ogr.mbtiles');
    const dsco = { FORMAT: 'MBTILES', MINZOOM: 11, MAXZOOM: 11, ...MVT_SETTINGS };
    await ogr2ogr(['-f', 'MVT', mbtiles, li, ...Object.entries(dsco).flatMap(([k, v]) => ['-dsco', `${k}=${v}`])]);
    const theirs = readMbtiles(mbtiles);
    expect(Math.max(...theirs.map((t) => t.data.length))).toBeGreaterThan(200_000);
    const reader = await openArchiveFile(archive);
    try {
      for (const t of theirs) expect(gunzipSync((await reader.getTile(t.z, t.x, t.y))!).equals(gunzipSync(t.data)), `${t.z}/${t.x}/${t.y}`).toBe(true);
      expect(reader.header.numAddressedTiles).toBe(theirs.length);
    } finally {
      await reader.close();
    }
  });

  it('gives the same bytes whatever GDAL\'s thread count (points, lines and polygons)', async () => {
    const cut = async (cpus: string) => {
      vi.stubEnv('SLURM_CPUS_PER_TASK', cpus);
      try {
        return (await packGis(src.gpkg, `threads-${cpus}`, { minzoom: 12, maxzoom: Z })).archive;
      } finally {
        vi.unstubAllEnvs();
      }
    };
    const [one, two] = [await cut('1'), await cut('2')];
    expect((await archiveTiles(one)).size).toBeGreaterThan(20);
    expect((await readFile(one)).equals(await readFile(two))).toBe(true);
  });
});

describe('other formats GDAL reads', () => {
  const formats: { key: keyof GisSources; nameKey?: string; fields: string[] }[] = [
    { key: 'fgb', fields: ['osm_id', 'name', 'place', 'man_made'] },
    { key: 'geojson', fields: ['osm_id', 'name', 'place', 'man_made'] },
    { key: 'csv', fields: ['osm_id', 'name', 'place', 'man_made'] },
    { key: 'shp', fields: ['osm_id', 'name', 'place', 'man_made'] },
    { key: 'kml', nameKey: 'Name', fields: ['Name'] },
  ];
  for (const f of formats) {
    it(`${f.key}: every named point lands in its z14 tile`, async () => {
      const { archive, r } = await packGis(src[f.key], f.key, { minzoom: Z, maxzoom: Z });
      const layers = r.metadata.vector_layers as { id: string; fields: Record<string, string> }[];
      expect(layers.map((l) => l.id)).toEqual(['points']);
      expect(Object.keys(layers[0].fields)).toEqual(expect.arrayContaining(f.fields));
      const { missing, found } = await landing(archive, 'points', named, f.nameKey);
      expect(missing).toEqual([]);
      if (f.key !== 'kml') for (const [p, props] of found) expect(String(props.osm_id), p.name).toBe(String(p.fields.osm_id));
    });
  }
});

describe('a GIS tileset in a build', () => {
  it("is fingerprinted by all of a Shapefile's files, reused when none changed, and is an ordinary tileset for MLT and packs", async () => {
    const shpDir = join(dir, 'shp');
    await cp(join(src.shp, '..'), shpDir, { recursive: true });
    const shp = join(shpDir, basename(src.shp));
    expect((await gisSourceFiles(shp)).map((f) => basename(f)).sort()).toEqual(['points.cpg', 'points.dbf', 'points.prj', 'points.shp', 'points.shx']);
    const out = join(dir, 'out');
    const { config } = await writeConfig(dir, 'config.json', { out, tilesets: { pts: { source: shp, minzoom: Z, maxzoom: Z, encodings: ['mvt', 'mlt'], search: true } } });
    const lines: string[] = [];
    const log = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => (lines.push(String(chunk)), true));
    try {
      await build(config, { out, only: 'vector' });
      lines.length = 0;
      await build(config, { out, only: 'vector' });
      expect(lines.join('')).toContain('vector pts: source unchanged, archive reused from the previous build');
      expect(lines.join('')).toContain('search pts: source unchanged, index reused from the previous build');
      // The .prj is part of the source: a change to it (a space) cuts the tiles and makes the index again.
      await appendFile(join(shpDir, 'points.prj'), ' ');
      lines.length = 0;
      await build(config, { out, only: 'vector' });
      expect(lines.join('')).toMatch(/vector pts: GDAL [\d.]+ cut 1 layer \(points\) into \d+ tiles/);
      expect(lines.join('')).toMatch(/search pts: search index of \d+ entries from layer points,/);
    } finally {
      log.mockRestore();
    }
    const version = (await currentVersionDir(out))!;
    const entry = (await readManifestOrEmpty(version.dir)).tilesets.pts;
    expect(entry).toMatchObject({ kind: 'vector', format: 'pbf', minzoom: Z, maxzoom: Z });
    // MLT: the same tiles, encoded by @maplibre/mlt.
    expect(entry.mlt?.tiles).toBe(entry.tiles);
    const mlt = await encodeMltArchive(join(version.dir, entry.archive), join(dir, 'pts.mlt.pmtiles'), { label: 'pts' });
    expect(mlt.tiles).toBe(entry.tiles);
    // A pack for apps over the points' box: every tile of the archive inside it.
    const lons = named.map((p) => p.lon);
    const lats = named.map((p) => p.lat);
    // Its search index ("search": true: the layer's name field): every named point is found first by its name, where it is.
    const index = SearchIndex.open(join(version.dir, entry.search!.index));
    try {
      expect(entry.search!.entries).toBe(named.length);
      const misses: string[] = [];
      for (const p of named) {
        const top = index.search({ q: p.name, limit: 1 })[0]?.entry;
        // Points of one name in one layer are answered once (as Photon dedupes): the first is one of them.
        const there = named.some((o) => o.name === p.name && Math.abs(o.lon - (top?.lon ?? NaN)) < 1e-6 && Math.abs(o.lat - (top?.lat ?? NaN)) < 1e-6);
        if (top?.name !== p.name || !there || top.layer !== 'points') misses.push(`${p.name}: first is ${top?.name} (${top?.lon}, ${top?.lat})`);
      }
      expect(misses).toEqual([]);
      const p = named.find((n) => n.fields.place !== null)!;
      expect(photonFeature(index.search({ q: p.name, limit: 1 })[0], index).properties).toMatchObject({ name: p.name, kind: 'poi', layer: 'points', fid: expect.any(Number) });
      expect(photonFeature(index.search({ q: p.name, limit: 1 })[0], index).properties).not.toHaveProperty('osm_type');
    } finally {
      index.close();
    }
    const packed = await pack({ out, to: join(dir, 'pack'), bbox: [Math.min(...lons), Math.min(...lats), Math.max(...lons), Math.max(...lats)].join(','), format: 'pmtiles', tilesets: ['pts'], styles: [] });
    expect(packed.json?.archives.map((a) => [a.source, a.tiles])).toEqual([['pts', entry.tiles]]);
  });
});
