// The search index of GIS tilesets, its pure parts (no tiles, no database): the config's "search" forms
// for GIS data, which fields and layers are searched (a field or layer that is not there: one line naming
// the tileset, layer and field), a feature's names from its fields, the entries (keys, streets with their
// lines), and the answer's shape for a GIS entry (its layer and FID, no osm_type/osm_id), through a real
// index file written by lib/search/write.ts and queried by lib/search/query.ts. End to end on real data:
// test/gis-files.test.ts (a Shapefile), test/gis-postgis.test.ts (PostGIS), test/gis-bad-input.test.ts.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { photonFeature } from '../lib/search/photon.ts';
import { SearchIndex } from '../lib/search/query.ts';
import { writeIndexFile } from '../lib/search/write.ts';
import { parseConfig } from '../pipeline/config/index.ts';
import { writeEntries } from '../pipeline/search/build.ts';
import { featureNames, gisEntries, searchedLayers, searchFieldsOf } from '../pipeline/search/gis.ts';
import { searchIndexFor } from '../pipeline/search/tileset.ts';

const place = { prefix: 'tileset "city" (city.gpkg)', field: '$.tilesets.city.search' };
const config = (search: unknown, source = 'city.gpkg', more: Record<string, unknown> = {}) => parseConfig({ tilesets: { city: { source, search, ...more } } }, '/cfg/config.json');
/** The message of what `f` throws. */
const thrown = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return (e as Error).message;
  }
  return undefined;
};

describe('the config of a GIS tileset\'s search index', () => {
  it('takes fields, a kind and layers; true is each layer\'s name field; no index unless asked', () => {
    expect(config({ fields: ['name', 'name_de'], kind: 'place', layers: ['towns'] }).tilesets.city.search).toEqual({ gis: { fields: ['name', 'name_de'], kind: 'place', layers: ['towns'] } });
    expect(config(true).tilesets.city.search).toEqual({ gis: { kind: 'poi' } });
    expect(config(true, 'postgresql://u@db/city', { layers: { shops: { table: 'shops' } } }).tilesets.city.search).toEqual({ gis: { kind: 'poi' } });
    expect(config(undefined).tilesets.city.search).toBeUndefined();
    expect(config(false).tilesets.city.search).toBeUndefined();
    // An extract is indexed as before.
    expect(config(true, 'x.osm.pbf').tilesets.city.search).toEqual({ source: '/cfg/x.osm.pbf' });
  });

  it('refuses what is not a search setting, naming the JSON path', () => {
    expect(thrown(() => config({ fields: [] }))).toContain('$.tilesets.city.search.fields: expected at least one field');
    expect(thrown(() => config({ fields: ['name', 'name'] }))).toContain('$.tilesets.city.search.fields[1]: "name" is listed twice');
    expect(thrown(() => config({ fields: ['name'], kind: 'shop' }))).toContain('$.tilesets.city.search.kind: expected one of "place", "street", "poi", "address"');
    expect(thrown(() => config({ fields: ['name'] }, 'x.osm.pbf'))).toContain('$.tilesets.city.search.fields: applies to GIS data');
    expect(thrown(() => config({ source: 'x.osm.pbf', kind: 'place' }))).toContain('$.tilesets.city.search.kind: applies to the index of GIS data');
    expect(thrown(() => config({ kind: 'place' }))).toContain('$.tilesets.city.search: expected {"source": "extract.osm.pbf"} or, for GIS data, {"fields": ["name", …]}');
  });
});

describe('the fields and layers searched', () => {
  it('checks every field in every layer indexed, and every layer named', () => {
    const search = { fields: ['name', 'alt'], kind: 'poi' as const };
    expect(searchFieldsOf(['fid', 'name', 'alt'], search, 'shops', place)).toEqual(['name', 'alt']);
    expect(thrown(() => searchFieldsOf(['fid', 'name'], search, 'trees', place))).toBe('tileset "city" (city.gpkg): $.tilesets.city.search.fields[1]: no field "alt" in layer "trees" (its fields: fid, name)');
    expect(searchedLayers(['shops', 'trees'], { ...search, layers: ['trees'] }, place)).toEqual(['trees']);
    expect(searchedLayers(['shops', 'trees'], search, place)).toEqual(['shops', 'trees']);
    expect(thrown(() => searchedLayers(['shops'], { ...search, layers: ['parcels'] }, place))).toBe('tileset "city" (city.gpkg): $.tilesets.city.search.layers[0]: no layer "parcels" in the tiles (their layers: shops)');
  });

  it('"search": true searches the name field, in any case, of the layers that have one', () => {
    const all = { kind: 'poi' as const };
    expect(searchFieldsOf(['osm_id', 'name'], all, 'points', place)).toEqual(['name']);
    expect(searchFieldsOf(['NAME', 'AREA'], all, 'parcels', place)).toEqual(['NAME']);
    expect(searchFieldsOf(['Name', 'name'], all, 'kml', place)).toEqual(['name']);
    expect(searchFieldsOf(['species'], all, 'trees', place)).toEqual([]);
  });
});

describe('a feature\'s names', () => {
  const langs = ['en', 'de', 'zh-Hant'];
  it('the first field with a value is the name; name:xx and name_xx of a language are its names there; the rest other names', () => {
    expect(featureNames([['name', 'Monaco-Ville'], ['name_de', 'Monaco-Stadt'], ['alt', 'Le Rocher'], ['name:zh-hant', '摩納哥城']], langs)).toEqual({
      name: 'Monaco-Ville', names: { de: 'Monaco-Stadt', 'zh-Hant': '摩納哥城' }, otherNames: ['Le Rocher'],
    });
    // No value in the first field: the next one is the name; values are trimmed, numbers are text, repeats once.
    expect(featureNames([['name', '  '], ['ref', 42], ['alt', '42'], ['old', null]], langs)).toEqual({ name: '42', names: {}, otherNames: [] });
    // A language the tileset does not carry is another name.
    expect(featureNames([['name', 'Mônaco'], ['name_pt', 'Mónaco']], langs)).toEqual({ name: 'Mônaco', names: {}, otherNames: ['Mónaco'] });
    expect(featureNames([['name', ''], ['alt', undefined]], langs)).toBeUndefined();
  });
});

describe('entries and answers', () => {
  const names = (name: string) => ({ name, names: {}, otherNames: [] });
  const features = [
    { layer: 'shops', fid: 7, names: names('Café de Paris'), point: { lon: 7.4268, lat: 43.7394 } },
    { layer: 'shops', fid: 7, names: names('Café de Paris'), point: { lon: 7.4269, lat: 43.7395 } },
    { layer: 'roads', fid: 1, names: names('Boulevard des Moulins'), geometryJson: '{"type":"LineString","coordinates":[[7.428,43.741],[7.431,43.744]]}' },
    { layer: 'roads', fid: 2, names: names('Nowhere'), geometryJson: '{"type":"LineString","coordinates":[]}' },
  ];
  const placed = new Map([[2, { lon: 7.4295, lat: 43.7425, bbox: [7.428, 43.741, 7.431, 43.744] as [number, number, number, number] }]]);

  it('one entry per placed feature, keyed by layer and FID (a repeated FID by its row too); a street keeps its lines', () => {
    const { entries, streets } = gisEntries(features, placed, 'street');
    expect(entries.map((e) => e.key)).toEqual(['shops:7', 'shops:7#1']);
    expect(entries[0]).toMatchObject({ kind: 'street', type: 'street', layer: 'shops', fid: 7, lon: 7.4268, lat: 43.7394, bbox: undefined });
    expect(streets).toHaveLength(1);
    expect(streets[0].entry).toMatchObject({ key: 'roads:1', lon: 7.4295, lat: 43.7425, bbox: [7.428, 43.741, 7.431, 43.744] });
    expect(streets[0].ways[0].lines).toEqual([[[7.428, 43.741], [7.431, 43.744]]]);
    expect(gisEntries(features, placed, 'poi').entries.map((e) => [e.key, e.type])).toEqual([['shops:7', 'other'], ['shops:7#1', 'other'], ['roads:1', 'other']]);
  });

  it('answers with the layer and FID instead of osm_type/osm_id; a GIS street is found by /reverse along its line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tilebake-search-gis-'));
    try {
      const file = join(dir, 'city.search.sqlite');
      const content = gisEntries(features, placed, 'street');
      await writeIndexFile(file, { languages: '[]' }, (w) => writeEntries(w, content));
      const index = SearchIndex.open(file);
      try {
        const hit = index.search({ q: 'Boulevard des Moulins', limit: 5 })[0];
        expect(photonFeature(hit, index).properties).toEqual({ name: 'Boulevard des Moulins', kind: 'street', type: 'street', layer: 'roads', fid: 1, extent: [7.428, 43.744, 7.431, 43.741] });
        // Beside its line, ~140 m from the entry's point: the distance is to the line.
        const near = index.reverse({ lon: 7.4305, lat: 43.7436, radiusM: 100, kinds: ['street'], limit: 1 });
        expect(near.map((h) => h.entry.key)).toEqual(['roads:1']);
        expect(near[0].distance).toBeLessThan(30);
      } finally {
        index.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a source that is neither an extract nor GIS data gets no index: one line naming the field', async () => {
    const mbtiles = resolve(import.meta.dirname, '..', 'data/sample/monaco_omt.mbtiles');
    const t = config(true, mbtiles).tilesets.city;
    await expect(searchIndexFor(t, tmpdir(), { workDir: join(tmpdir(), 'unused') })).rejects.toThrow('$.tilesets.city.search: the source is neither an OpenStreetMap extract nor GIS data: give the extract to index, {"source": "extract.osm.pbf"}');
  });
});
