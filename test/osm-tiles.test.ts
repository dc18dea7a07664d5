/**
 * Monaco built from its OpenStreetMap extract (tilemaker + this project's profile, the sea from the
 * coastline), checked against the OpenMapTiles schema fields the sample styles filter on and against
 * the official OpenMapTiles tiles of the same area; then both sample styles render the tiles.
 */
import { currentVersionDir } from '../lib/build-version.ts';
import Database from 'better-sqlite3';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { VectorTile, type VectorTileFeature } from '@mapbox/vector-tile';
import { PbfReader } from 'pbf';
import { Color } from '@maplibre/maplibre-gl-style-spec';
import { beforeAll, describe, expect, test } from 'vitest';
import { DEFAULT_LANGUAGES, languagesOfLayers } from '../lib/languages.ts';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { openArchiveFile, tileIdToZxy } from '../lib/pmtiles/index.ts';
import { lonLatToTile, tileCountInBBox } from '../lib/tile-math.ts';
import { pointInRing, type Point } from '../pipeline/osm/coastline.ts';
import { runRenderStage } from '../pipeline/render/stage.ts';
import { buildMonacoVector, MONACO_PBF, osmConfig, vectorTile, wayCoords } from './osm-helpers.ts';
import { archiveTiles, readTile, rgb, SAMPLE, writeConfig } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';
const LONG = 300_000;
const OFFICIAL = join(SAMPLE, 'monaco_omt.mbtiles');
/** The OpenMapTiles layers this project's profile writes. */
const OMT_LAYERS = ['water', 'waterway', 'landcover', 'landuse', 'mountain_peak', 'park', 'boundary', 'aeroway', 'transportation', 'building', 'water_name', 'transportation_name', 'place', 'housenumber', 'poi', 'aerodrome_label'];
/** Fields of the official tiles the profile does not write (route relations, stop aggregation, OSM ids, empty values). */
const NOT_WRITTEN: Record<string, string[]> = {
  water: ['id'],
  transportation: ['network'],
  transportation_name: ['route_1'],
  poi: ['agg_stop'],
  mountain_peak: ['name', 'name_en', 'name_de'],
  aeroway: ['ref'],
};
/** Z14 tiles of the test: Monaco's sea south of the harbour, the open sea below it. */
const SEA = { z: 14, x: 8530, y: 5974 };
const OPEN_SEA = { z: 14, x: 8530, y: 5975 };
/** OSM ways named in the extract: a street and a building (the Oceanographic Museum). */
const STREET = { id: 39838265, name: 'Rue des Iris' };
const BUILDING = { id: 23715051, name: 'Musée Océanographique', nameEn: 'Oceanographic Museum' };

let out: string;
let archive: string;

/** Every z14 feature of the archive as [layer, properties]. */
async function z14Features(): Promise<[string, Record<string, unknown>, VectorTileFeature][]> {
  const r = await openArchiveFile(archive);
  const all: [string, Record<string, unknown>, VectorTileFeature][] = [];
  try {
    for await (const e of r.entries()) {
      if (e.z !== 14) continue;
      const t = new VectorTile(new PbfReader(gunzipSync(await r.readRange(e.offset, e.length))));
      for (const [name, l] of Object.entries(t.layers)) for (let i = 0; i < l.length; i++) all.push([name, l.feature(i).properties, l.feature(i)]);
    }
  } finally {
    await r.close();
  }
  return all;
}

/** A geometry ring as [x, y] pairs. */
const pairs = (ring: { x: number; y: number }[]): Point[] => ring.map((p) => [p.x, p.y]);

/** True when (x, y) is inside the rings (even-odd over all of them, holes included). */
function inRings(rings: Point[][], x: number, y: number): boolean {
  return rings.reduce((inside, r) => (pointInRing([x, y], r) ? !inside : inside), false);
}

/** Share of a tile covered by the water layer's features of `cls` (64 × 64 samples). */
function waterCoverage(t: VectorTile, cls: string): number {
  const l = t.layers.water;
  if (!l) return 0;
  const rings: Point[][] = [];
  for (let i = 0; i < l.length; i++) if (l.feature(i).properties.class === cls) rings.push(...l.feature(i).loadGeometry().map(pairs));
  const n = 64;
  let inside = 0;
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) if (inRings(rings, ((i + 0.5) * l.extent) / n, ((j + 0.5) * l.extent) / n)) inside++;
  return inside / (n * n);
}

describe.sequential('Monaco from OpenStreetMap', () => {
  beforeAll(async () => {
    ({ out, archive } = await buildMonacoVector('osm-tiles'));
  }, LONG);

  test('the build leaves the archive and the manifest entry, and no work folder', async () => {
    expect((await readdir(out)).sort()).toEqual(['builds', 'config.json', 'current.json']);
    const v = (await currentVersionDir(out))!.dir;
    // And the search index an OSM tileset gets by default.
    expect((await readdir(join(v, 'data'))).sort()).toEqual(['openmaptiles.pmtiles', 'openmaptiles.search.sqlite']);
    const m = await readManifestOrEmpty(v);
    const e = m.tilesets.openmaptiles;
    expect(e).toMatchObject({ kind: 'vector', format: 'pbf', minzoom: 0, maxzoom: 14 });
    // The tiles cover the world up to z6 (Natural Earth), the extract's header bbox above; TileJSON fields
    // do not show the profile's _ instructions.
    expect(e.bounds).toEqual([-180, -85.0511287798066, 180, 85.0511287798066]);
    expect(e.world_maxzoom).toBe(6);
    e.region!.forEach((v, i) => expect(v).toBeCloseTo([7.409205, 43.72335, 7.448637, 43.75169][i], 5));
    const layers = e.vector_layers as { id: string; fields: Record<string, string> }[];
    expect(layers.map((l) => l.id).sort()).toEqual([...OMT_LAYERS].sort());
    for (const l of layers) expect(Object.keys(l.fields).filter((k) => k.startsWith('_'))).toEqual([]);
    expect(layers.find((l) => l.id === 'poi')!.fields.rank).toBe('Number');
  });

  test("names in OpenMapTiles' languages by default: listed on every named layer, written where the extract tags them", async () => {
    const v = (await currentVersionDir(out))!.dir;
    const layers = (await readManifestOrEmpty(v)).tilesets.openmaptiles.vector_layers as { id: string; fields: Record<string, string> }[];
    expect(languagesOfLayers(layers)).toEqual([...DEFAULT_LANGUAGES].sort());
    const written = new Set<string>();
    for (const [, p] of await z14Features()) for (const k of Object.keys(p)) if (k.startsWith('name:')) written.add(k.slice(5));
    // Monaco is tagged in dozens of languages, in several scripts; nothing outside the list is written.
    expect([...written]).toEqual(expect.arrayContaining(['latin', 'en', 'fr', 'it', 'ru', 'ja', 'zh', 'ar', 'he', 'ko']));
    expect([...written].filter((c) => c !== 'latin' && c !== 'nonlatin' && !DEFAULT_LANGUAGES.includes(c))).toEqual([]);
  });

  test('tiles exist at z0, 4, 8, 10, 12 and 14, with places, boundaries, roads and water at low zooms', async () => {
    const ids = await archiveTiles(archive);
    const zooms = new Set([...ids.keys()].map((id) => tileIdToZxy(Number(id))[0]));
    for (const z of [0, 4, 8, 10, 12, 14]) expect(zooms.has(z), `zoom ${z}`).toBe(true);
    const z0 = await vectorTile(archive, 0, 0, 0);
    expect(Object.keys(z0.layers)).toEqual(expect.arrayContaining(['place', 'boundary']));
    // Countries as OpenMapTiles shows them (rank ≤ zoom + 1): Natural Earth's France at z0, Monaco's own (rank 3) from z2.
    const countries = (t: typeof z0) => Array.from({ length: t.layers.place.length }, (_, i) => t.layers.place.feature(i).properties).filter((p) => p.class === 'country');
    expect(countries(z0)).toContainEqual(expect.objectContaining({ iso_a2: 'FR', name: 'France', rank: 1 }));
    expect(countries(z0).filter((p) => p.iso_a2 === 'MC')).toEqual([]);
    expect(countries(await vectorTile(archive, 2, 2, 1))).toContainEqual(expect.objectContaining({ iso_a2: 'MC', name: 'Monaco', rank: 3 }));
    const z8 = await vectorTile(archive, 8, 133, 93);
    expect(Object.keys(z8.layers)).toEqual(expect.arrayContaining(['water', 'transportation', 'place', 'boundary']));
    // The whole tile box is generated at z14 (Monaco's 2 × 3 tiles) and every parent above it.
    expect([...ids.keys()].filter((id) => tileIdToZxy(Number(id))[0] === 14)).toHaveLength(6);
  });

  test('z14 layers and attributes: the OpenMapTiles fields and values the styles filter on', async () => {
    const features = await z14Features();
    const byLayer = new Map<string, Record<string, unknown>[]>();
    for (const [l, p] of features) byLayer.set(l, [...(byLayer.get(l) ?? []), p]);
    // Monaco has no park, aerodrome or peak: every other layer is there.
    expect([...byLayer.keys()].sort()).toEqual(OMT_LAYERS.filter((l) => l !== 'park' && l !== 'aerodrome_label').sort());
    const values = (layer: string, key: string) => new Set(byLayer.get(layer)!.map((p) => p[key]).filter((v) => v !== undefined));
    const every = (layer: string, f: (p: Record<string, unknown>) => boolean) => byLayer.get(layer)!.every(f);

    expect([...values('transportation', 'class')]).toEqual(expect.arrayContaining(['primary', 'secondary', 'tertiary', 'minor', 'service', 'path', 'rail', 'pier', 'ferry']));
    expect([...values('transportation', 'subclass')]).toEqual(expect.arrayContaining(['footway', 'steps', 'pedestrian', 'platform', 'rail']));
    expect([...values('transportation', 'brunnel')].sort()).toEqual(['bridge', 'tunnel']);
    expect([...values('transportation', 'oneway')]).toEqual([1]);
    expect([...values('transportation', 'ramp')]).toEqual([1]);
    expect([...values('transportation', 'service')]).toEqual(expect.arrayContaining(['driveway', 'parking_aisle']));
    expect(every('transportation', (p) => typeof p.class === 'string')).toBe(true);
    expect([...values('transportation_name', 'class')]).toEqual(expect.arrayContaining(['primary', 'minor', 'path']));
    expect(every('transportation_name', (p) => typeof p.name === 'string' || typeof p.ref === 'string')).toBe(true);
    expect([...values('water', 'class')].sort()).toEqual(['lake', 'ocean', 'pond', 'swimming_pool']);
    expect([...values('water', 'intermittent')].sort()).toEqual([0, 1]);
    expect([...values('waterway', 'class')]).toEqual(['stream']);
    expect([...values('landcover', 'class')].sort()).toEqual(['grass', 'rock', 'sand', 'wood']);
    expect([...values('landcover', 'subclass')]).toEqual(expect.arrayContaining(['garden', 'park', 'wood', 'beach']));
    expect([...values('landuse', 'class')]).toEqual(expect.arrayContaining(['residential', 'commercial', 'industrial', 'cemetery', 'hospital', 'school', 'pitch', 'stadium']));
    expect([...values('boundary', 'admin_level')].sort((a, b) => Number(a) - Number(b))).toEqual([2, 4, 8, 10]);
    expect([...values('boundary', 'maritime')].sort()).toEqual([0, 1]);
    expect(every('boundary', (p) => p.disputed === 0)).toBe(true);
    expect([...values('place', 'class')].sort()).toEqual(['city', 'country', 'suburb']);
    expect(byLayer.get('place')!.find((p) => p.class === 'city')).toMatchObject({ name: 'Monaco', capital: 2 });
    expect(every('place', (p) => Number.isInteger(p.rank))).toBe(true);
    expect(every('poi', (p) => typeof p.class === 'string' && typeof p.subclass === 'string' && Number.isInteger(p.rank) && (p.rank as number) >= 1)).toBe(true);
    // Named POIs come first in each label cell, so the styles' rank <= 14 keeps the named ones.
    const ranked = byLayer.get('poi')!.filter((p) => (p.rank as number) <= 14);
    expect(ranked.filter((p) => p.name).length / ranked.length).toBeGreaterThan(0.8);
    expect([...values('poi', 'class')]).toEqual(expect.arrayContaining(['bus', 'restaurant', 'shop', 'lodging', 'cafe', 'museum', 'office']));
    expect(every('building', (p) => Number.isInteger(p.render_height) && Number.isInteger(p.render_min_height))).toBe(true);
    expect([...values('aeroway', 'class')].sort()).toEqual(['helipad', 'heliport']);
    expect(every('housenumber', (p) => typeof p.housenumber === 'string')).toBe(true);
    expect([...values('mountain_peak', 'class')]).toEqual(['cliff']);
    // Every named feature carries the name fields the styles print.
    for (const [layer, p] of features) {
      if (p.name === undefined) continue;
      expect(p, layer).toMatchObject({ 'name:latin': p.name, name_en: expect.any(String), name_de: expect.any(String), name_int: expect.any(String) });
    }
    for (const [, p] of features) expect(Object.keys(p).filter((k) => k.startsWith('_'))).toEqual([]);
  });

  test('z14 attributes cover those of the official OpenMapTiles tiles of Monaco', async () => {
    const ours = new Map<string, Set<string>>();
    for (const [l, p] of await z14Features()) for (const k of Object.keys(p)) ours.set(l, (ours.get(l) ?? new Set()).add(k));
    const db = new Database(OFFICIAL, { readonly: true });
    try {
      for (const row of db.prepare('SELECT tile_data FROM tiles WHERE zoom_level = 14').all() as { tile_data: Buffer }[]) {
        const t = new VectorTile(new PbfReader(gunzipSync(row.tile_data)));
        for (const [name, l] of Object.entries(t.layers)) {
          expect(ours.has(name), `layer ${name}`).toBe(true);
          for (let i = 0; i < l.length; i++) {
            for (const k of Object.keys(l.feature(i).properties)) {
              if (k.startsWith('name:') || NOT_WRITTEN[name]?.includes(k)) continue;
              expect(ours.get(name)!.has(k), `${name}.${k}`).toBe(true);
            }
          }
        }
      }
    } finally {
      db.close();
    }
  });

  test('a named street and a named building are in the tiles their ways lie in, with their names', async () => {
    const coords = await wayCoords(MONACO_PBF, [STREET.id, BUILDING.id]);
    const streetTiles = new Set(coords.get(STREET.id)!.map(([lon, lat]) => JSON.stringify(lonLatToTile(lon, lat, 14))));
    for (const y of [5973, 5974, 5975]) {
      for (const x of [8529, 8530]) {
        const t = await vectorTile(archive, 14, x, y);
        const names = t.layers.transportation_name ? Array.from({ length: t.layers.transportation_name.length }, (_, i) => t.layers.transportation_name.feature(i).properties.name) : [];
        expect(names.includes(STREET.name), `${STREET.name} in 14/${x}/${y}`).toBe(streetTiles.has(JSON.stringify({ x, y })));
      }
    }
    const b = coords.get(BUILDING.id)!;
    const centre = [b.reduce((s, p) => s + p[0], 0) / b.length, b.reduce((s, p) => s + p[1], 0) / b.length];
    const { x, y } = lonLatToTile(centre[0], centre[1], 14);
    const t = await vectorTile(archive, 14, x, y);
    let museum: VectorTileFeature | undefined;
    // (A bus stop nearby bears the same name: the building is the museum POI.)
    for (let i = 0; i < t.layers.poi.length; i++) {
      const f = t.layers.poi.feature(i);
      if (f.properties.name === BUILDING.name && f.properties.subclass === 'museum') museum = f;
    }
    expect(museum?.properties).toMatchObject({ class: 'museum', subclass: 'museum', name_en: BUILDING.nameEn });
    // The POI point lies inside a building polygon of the same tile.
    const [[p]] = museum!.loadGeometry();
    let inBuilding = false;
    for (let i = 0; i < t.layers.building.length; i++) inBuilding ||= inRings(t.layers.building.feature(i).loadGeometry().map(pairs), p.x, p.y);
    expect(inBuilding).toBe(true);
  });

  test("the sea south of Monaco is water: as much of the tile as in the official tiles", async () => {
    const sea = waterCoverage(await vectorTile(archive, SEA.z, SEA.x, SEA.y), 'ocean');
    expect(sea).toBeGreaterThan(0.9);
    const db = new Database(OFFICIAL, { readonly: true });
    const row = db.prepare('SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?').get(SEA.z, SEA.x, 2 ** SEA.z - 1 - SEA.y) as { tile_data: Buffer };
    db.close();
    const official = waterCoverage(new VectorTile(new PbfReader(gunzipSync(row.tile_data))), 'ocean');
    expect(Math.abs(sea - official)).toBeLessThan(0.03);
    expect(waterCoverage(await vectorTile(archive, OPEN_SEA.z, OPEN_SEA.x, OPEN_SEA.y), 'ocean')).toBeGreaterThan(0.99);
  });

  test('both sample styles render the OSM-built tiles without MapLibre errors; the open sea is water-coloured', async () => {
    const style = (s: string) => ({ style: join(SAMPLE, 'styles', s, 'style.json'), tileset: 'openmaptiles', minzoom: 12, maxzoom: 14, scales: [1], formats: ['png'] });
    const { config } = await writeConfig(
      out,
      'render.json',
      osmConfig(out, MONACO_PBF, {}, { styles: { 'osm-bright': style('osm-bright'), positron: style('positron') }, fonts: join(SAMPLE, 'fonts'), render: { metatile: 4, margin: 64, timeoutMs: 120_000 } }),
    );
    // The render stage fails on any error MapLibre reports (style, tiles, glyphs, sprites).
    const v = (await currentVersionDir(out))!.dir;
    await runRenderStage(config, v, { workers: 1 });
    const m = await readManifestOrEmpty(v);
    const expected = tileCountInBBox(m.tilesets.openmaptiles.region!, 12, 14);
    for (const s of ['osm-bright', 'positron']) {
      expect(m.styles[s].archives['1x.png'].tiles).toBe(expected);
      const layers = JSON.parse(await readFile(join(SAMPLE, 'styles', s, 'style.json'), 'utf8')).layers as { id: string; paint: Record<string, string> }[];
      const c = Color.parse(layers.find((l) => l.id === 'water')!.paint['fill-color'])!;
      const water = [c.r, c.g, c.b].map((v) => Math.round(v * 255));
      const px = await rgb(await readTile(join(v, 'styles', s, '1x.png.pmtiles'), OPEN_SEA.z, OPEN_SEA.x, OPEN_SEA.y));
      let near = 0;
      for (let i = 0; i < px.data.length; i += 3) if (water.every((v, k) => Math.abs(px.data[i + k] - v) <= 16)) near++;
      // osm-bright draws a wave pattern over its water fill; the fill still dominates.
      expect(near / (256 * 256), `${s}: pixels near the water colour ${water}`).toBeGreaterThan(0.9);
    }
  }, LONG);
});
