/**
 * The profile (pipeline/osm/openmaptiles.lua) on Debian's tilemaker 2.2 itself, over a small synthetic
 * extract that holds one object for each mapping the sample extract lacks or has few of: the branches
 * run on the real binary's Lua API (two- and three-argument Attribute calls, centroids, relations, areas).
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { VectorTile } from '@mapbox/vector-tile';
import { PbfReader } from 'pbf';
import { beforeAll, describe, expect, test } from 'vitest';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { packVectorTiles } from '../pipeline/vector/stage.ts';
import { tempDir } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';
const LONG = 300_000;

type Tags = Record<string, string>;
const opl: string[] = [];
let nextNode = 1;

/** OPL's escaping of tag text: anything but letters, digits and a few safe characters as %hex%. */
function escape(s: string): string {
  return [...s].map((c) => (/[A-Za-z0-9_:.;\-]/.test(c) ? c : `%${c.codePointAt(0)!.toString(16)}%`)).join('');
}
const tagText = (t: Tags) => Object.entries(t).map(([k, v]) => `${escape(k)}=${escape(v)}`).join(',');

/** A node at (lon, lat); returns its id. */
function node(lon: number, lat: number, tags: Tags = {}): number {
  const id = nextNode++;
  opl.push(`n${id} v1 T${tagText(tags)} x${lon.toFixed(7)} y${lat.toFixed(7)}`);
  return id;
}
let nextWay = 1;
function way(nodes: number[], tags: Tags): number {
  const id = nextWay++;
  opl.push(`w${id} v1 T${tagText(tags)} N${nodes.map((n) => `n${n}`).join(',')}`);
  return id;
}
/** A line of `n` nodes from (lon, lat) eastwards. */
const line = (lon: number, lat: number, tags: Tags, n = 4) => way(Array.from({ length: n }, (_, i) => node(lon + i * 0.0004, lat)), tags);
/** A closed square way with side `d` degrees. */
function square(lon: number, lat: number, d: number, tags: Tags): number {
  const a = node(lon, lat);
  return way([a, node(lon + d, lat), node(lon + d, lat + d), node(lon, lat + d), a], tags);
}

/** The `name:xx` languages the run writes. */
const LANGUAGES = ['ja', 'nds', 'zh-Hant'];
/** The archive's TileJSON layers. */
let vectorLayers: { id: string; fields: Record<string, string> }[] = [];

/** Every z14 feature: [layer, properties, geometry type]. */
let features: [string, Record<string, unknown>, number][] = [];
const find = (layer: string, props: Record<string, unknown>) =>
  features.filter(([l, p]) => l === layer && Object.entries(props).every(([k, v]) => p[k] === v)).map(([, p]) => p);

describe.sequential('the profile on tilemaker 2.2', () => {
  beforeAll(async () => {
    const dir = await tempDir('osm-profile');
    // Everything within about 1.5 km, around 10.005 E 50.005 N.
    const [x, y] = [10.0, 50.0];
    node(x + 0.002, y + 0.002, { place: 'city', name: 'Testville', population: '600000', capital: 'yes' });
    node(x + 0.003, y + 0.002, { place: 'country', name: 'Testland', country_code_iso3166_1_alpha_2: 'QT', population: '30000000' });
    node(x + 0.0031, y + 0.0025, { place: 'country', name: 'Schweiz', 'ISO3166-1:alpha2': 'CH', population: '8700000' });
    node(x + 0.004, y + 0.002, { place: 'town', name: 'Москва', 'name:en': 'Moscow', 'name:ja': 'モスクワ', 'name:zh-Hant': '莫斯科', 'name:nds': 'Moskau', 'name:fr': 'Moscou', 'name:ru': 'Москва' });
    node(x + 0.005, y + 0.002, { natural: 'peak', name: 'Testberg', ele: '1234 m' });
    node(x + 0.006, y + 0.002, { place: 'sea', name: 'Test Sea' });
    node(x + 0.007, y + 0.002, { amenity: 'restaurant', name: 'Chez Test' });
    node(x + 0.0071, y + 0.0021, { amenity: 'place_of_worship', religion: 'christian', name: 'Test Chapel' });
    node(x + 0.0072, y + 0.0022, { shop: 'bakery' });
    node(x + 0.008, y + 0.002, { 'addr:housenumber': '1;3' });
    line(x + 0.001, y + 0.004, { highway: 'motorway_link', oneway: 'yes', name: 'Test Ramp', ref: 'A 1' });
    line(x + 0.001, y + 0.0045, { highway: 'construction', construction: 'primary' });
    line(x + 0.001, y + 0.005, { railway: 'tram', name: 'Tramline' });
    line(x + 0.001, y + 0.0055, { aerialway: 'cable_car' });
    line(x + 0.001, y + 0.006, { waterway: 'river', name: 'Testfluss' });
    line(x + 0.001, y + 0.0065, { highway: 'footway', tunnel: 'yes', level: '-1', indoor: 'yes' });
    line(x + 0.001, y + 0.007, { boundary: 'administrative', admin_level: '4' });
    line(x + 0.001, y + 0.0075, { natural: 'cliff' });
    line(x + 0.001, y + 0.008, { highway: 'residential', surface: 'gravel', name: 'Gravel Lane' });
    square(x + 0.010, y + 0.001, 0.0005, { building: 'yes', has_parts: 'yes', 'building:levels': '3', 'building:material': 'brick' });
    square(x + 0.011, y + 0.001, 0.003, { natural: 'water', name: 'Testsee' });
    square(x + 0.010, y + 0.005, 0.004, { aeroway: 'aerodrome', iata: 'TST', icao: 'EXTS', aerodrome: 'international', name: 'Test Airport', ele: '300' });
    square(x + 0.015, y + 0.005, 0.002, { leisure: 'nature_reserve', name: 'Test Reserve' });
    square(x + 0.018, y + 0.005, 0.002, { leisure: 'nature_reserve', boundary: 'protected_area', protection_title: 'Natura 2000' });
    square(x + 0.015, y + 0.008, 0.002, { landuse: 'forest' });
    square(x + 0.012, y + 0.009, 0.0008, { man_made: 'pier' });
    square(x + 0.013, y + 0.009, 0.0008, { amenity: 'parking', parking: 'surface', access: 'private' });
    // Nodes first, then ways (the order PBF readers expect).
    opl.sort((a, b) => (a[0] === b[0] ? 0 : a[0] === 'n' ? -1 : 1));
    const text = join(dir, 'synthetic.opl');
    await writeFile(text, `${opl.join('\n')}\n`);
    const pbf = join(dir, 'synthetic.osm.pbf');
    await promisify(execFile)('osmium', ['cat', '-o', pbf, text]);
    const out = join(dir, 'synthetic.pmtiles');
    // Languages of the tileset's own choosing: one of OpenMapTiles' (ja), one with a script (zh-Hant), one
    // it does not list (nds); name:en is written as name_en and name:latin whatever the list.
    vectorLayers = (await packVectorTiles(pbf, out, { languages: LANGUAGES })).metadata.vector_layers as typeof vectorLayers;
    const r = await openArchiveFile(out);
    try {
      for await (const e of r.entries()) {
        if (e.z !== 14) continue;
        const t = new VectorTile(new PbfReader(gunzipSync(await r.readRange(e.offset, e.length))));
        for (const [name, l] of Object.entries(t.layers)) for (let i = 0; i < l.length; i++) features.push([name, l.feature(i).properties, l.feature(i).type]);
      }
    } finally {
      await r.close();
    }
  }, LONG);

  test('places: ranks, capital, country code, non-Latin names', () => {
    expect(find('place', { name: 'Testville' })[0]).toMatchObject({ class: 'city', capital: 2, rank: 5, 'name:latin': 'Testville' });
    // A code Natural Earth does not have (user-assigned): ranked from the population.
    expect(find('place', { name: 'Testland' })[0]).toMatchObject({ class: 'country', iso_a2: 'QT', rank: 2 });
    // Natural Earth's rank (labelrank 4: 2), not the population's (3), as OpenMapTiles ranks it.
    expect(find('place', { name: 'Schweiz' })[0]).toMatchObject({ class: 'country', iso_a2: 'CH', rank: 2 });
    expect(find('place', { name: 'Москва' })[0]).toMatchObject({ class: 'town', 'name:nonlatin': 'Москва', 'name:latin': 'Moscow', name_en: 'Moscow', name_int: 'Moscow', rank: 11 });
  });

  test('names: name:xx of the configured languages only, each listed in the TileJSON of every named layer', () => {
    const moscow = find('place', { name: 'Москва' })[0];
    expect(moscow).toMatchObject({ 'name:ja': 'モスクワ', 'name:zh-Hant': '莫斯科', 'name:nds': 'Moskau', 'name:latin': 'Moscow', 'name:nonlatin': 'Москва' });
    // Tagged but not configured: not written.
    expect(Object.keys(moscow).filter((k) => /^name:/.test(k)).sort()).toEqual(['name:ja', 'name:latin', 'name:nds', 'name:nonlatin', 'name:zh-Hant']);
    for (const [, p] of features) expect(Object.keys(p).filter((k) => /^name:/.test(k) && !['latin', 'nonlatin', ...LANGUAGES].includes(k.slice(5)))).toEqual([]);
    // Every layer with names lists the languages (whether or not a feature of it has one), the others none.
    for (const l of vectorLayers) {
      const langs = Object.keys(l.fields).filter((k) => /^name:/.test(k) && k !== 'name:latin' && k !== 'name:nonlatin').map((k) => k.slice(5));
      expect(langs, l.id).toEqual('name' in l.fields ? LANGUAGES : []);
    }
    expect(vectorLayers.filter((l) => 'name' in l.fields).map((l) => l.id)).toEqual(expect.arrayContaining(['place', 'poi', 'water_name', 'transportation_name', 'waterway']));
  });

  test('peaks, seas, POIs and house numbers', () => {
    expect(find('mountain_peak', { name: 'Testberg' })[0]).toMatchObject({ class: 'peak', ele: 1234, ele_ft: 4049, rank: 1 });
    expect(find('mountain_peak', { class: 'cliff' }).length).toBeGreaterThan(0);
    expect(find('water_name', { name: 'Test Sea' })[0]).toMatchObject({ class: 'sea' });
    expect(find('poi', { name: 'Chez Test' })[0]).toMatchObject({ class: 'restaurant', subclass: 'restaurant' });
    expect(find('poi', { name: 'Test Chapel' })[0]).toMatchObject({ class: 'place_of_worship', subclass: 'christian' });
    // Within one label grid cell: the named POIs rank before the nameless bakery.
    expect([find('poi', { name: 'Chez Test' })[0].rank, find('poi', { name: 'Test Chapel' })[0].rank].sort()).toEqual([1, 2]);
    expect(find('poi', { subclass: 'bakery' })[0]).toMatchObject({ class: 'bakery', rank: 3 });
    expect(find('housenumber', {})[0]).toMatchObject({ housenumber: '1–3' });
  });

  test('transportation: ramps, construction, transit, aerialways, tunnels with level and indoor, surface', () => {
    expect(find('transportation', { class: 'motorway' })[0]).toMatchObject({ ramp: 1, oneway: 1 });
    expect(find('transportation_name', { name: 'Test Ramp' })[0]).toMatchObject({ class: 'motorway', ref: 'A 1', ref_length: 3, network: 'road' });
    expect(find('transportation', { class: 'primary_construction' }).length).toBeGreaterThan(0);
    expect(find('transportation', { class: 'transit' })[0]).toMatchObject({ subclass: 'tram' });
    expect(find('transportation', { class: 'aerialway' })[0]).toMatchObject({ subclass: 'cable_car' });
    expect(find('transportation', { class: 'path' })[0]).toMatchObject({ subclass: 'footway', brunnel: 'tunnel', level: -1, indoor: 1 });
    expect(find('transportation', { class: 'minor' })[0]).toMatchObject({ surface: 'unpaved' });
    expect(find('transportation', { class: 'pier' })[0]).toBeDefined();
  });

  test('water, waterways, buildings, aerodromes, parks, landcover, landuse, boundaries', () => {
    expect(find('waterway', { name: 'Testfluss' })[0]).toMatchObject({ class: 'river', intermittent: 0 });
    expect(find('water', { class: 'lake' }).length).toBeGreaterThan(0);
    expect(find('water_name', { name: 'Testsee' })[0]).toMatchObject({ class: 'lake' });
    expect(find('building', { hide_3d: true })[0]).toMatchObject({ render_height: 11, render_min_height: 0, colour: '#bd8161' });
    expect(find('aeroway', { class: 'aerodrome' }).length).toBeGreaterThan(0);
    expect(find('aerodrome_label', { name: 'Test Airport' })[0]).toMatchObject({ class: 'international', iata: 'TST', icao: 'EXTS', ele: 300, ele_ft: 984 });
    expect(find('park', { class: 'nature_reserve' }).length).toBeGreaterThan(0);
    // OpenMapTiles' park class: the protection title first.
    expect(find('park', { class: 'natura_2000' }).length).toBeGreaterThan(0);
    expect(find('landcover', { class: 'wood' })[0]).toMatchObject({ subclass: 'forest' });
    expect(find('landuse', { class: 'parking' })[0]).toMatchObject({ subclass: 'surface', access: 'no' });
    expect(find('boundary', { admin_level: 4 })[0]).toMatchObject({ disputed: 0, maritime: 0 });
  });
});
