/**
 * The OSM source's pure parts: canonical tile re-encoding, fill rings and label grid ranks, the OSM
 * PBF header, the tile box, tilemaker's failure lines and the bbox config field, and what generating
 * some tiles only (tilebake update) computes. The coastline's are in osm-coastline.test.ts.
 */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isUserError } from '../lib/errors.ts';
import { tileBounds, type BBox } from '../lib/tile-math.ts';
import { parseConfig } from '../pipeline/config/index.ts';
import { decodeTile, encodeTile, type RawFeature, type RawLayer } from '../lib/mvt.ts';
import { canonicalLayers, canonicalTile, comparableTile, firstPoint, publicVectorLayers } from '../pipeline/osm/canonical.ts';
import { decodeRings, encodeRings, fillBox } from '../pipeline/osm/fill.ts';
import { pointInRing, type Point } from '../pipeline/osm/coastline.ts';
import { isOsmPbfHead, readOsmHeader } from '../pipeline/osm/pbf-header.ts';
import { failureReason, runConfig } from '../pipeline/osm/tilemaker.ts';
import { boxOfTiles, parseOsmiumBBox, tileBox } from '../pipeline/osm/source.ts';

const MONACO_PBF = 'data/sample/monaco-latest.osm.pbf';
const BOX: BBox = [0, 0, 10, 10];

/** A point feature at tile coordinates (x, y). */
function point(x: number, y: number, tags: Record<string, string | number | boolean>): RawFeature {
  const zig = (n: number) => (n << 1) ^ (n >> 31);
  const geometry = encodeVarints([9, zig(x), zig(y)]);
  return { type: 1, geometry, tags: new Map(Object.entries(tags)) };
}

function encodeVarints(values: number[]): Uint8Array {
  const out: number[] = [];
  for (let v of values) {
    while (v > 0x7f) {
      out.push((v & 0x7f) | 0x80);
      v >>>= 7;
    }
    out.push(v);
  }
  return Uint8Array.from(out);
}

const layer = (name: string, features: RawFeature[]): RawLayer => ({ name, version: 2, extent: 4096, features });

describe('canonical tiles', () => {
  it('round-trips features, tags and value types through decode/encode', () => {
    const tile = encodeTile([layer('poi', [point(10, 20, { name: 'Café', rank: 3, ele: -12, height: 3.5, on: true })])]);
    const [l] = decodeTile(tile);
    expect(l.name).toBe('poi');
    expect(l.extent).toBe(4096);
    expect(Object.fromEntries(l.features[0].tags)).toEqual({ name: 'Café', rank: 3, ele: -12, height: 3.5, on: true });
    expect(firstPoint(l.features[0].geometry)).toEqual([10, 20]);
  });

  it('gives the same bytes whatever order the features come in (property)', () => {
    const features = fc.array(
      fc.record({
        x: fc.integer({ min: 0, max: 4095 }),
        y: fc.integer({ min: 0, max: 4095 }),
        cls: fc.constantFrom('a', 'b', 'c'),
        z: fc.integer({ min: -20, max: 20 }),
      }),
      { minLength: 1, maxLength: 30 },
    );
    fc.assert(
      fc.property(features, fc.integer(), (fs, seed) => {
        const make = () => fs.map((f) => point(f.x, f.y, { class: f.cls, _zorder: f.z }));
        const shuffled = make();
        let s = seed;
        for (let i = shuffled.length - 1; i > 0; i--) {
          s = (s * 1103515245 + 12345) & 0x7fffffff;
          const j = s % (i + 1);
          [shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]];
        }
        const a = encodeTile(canonicalLayers([layer('transportation', make())], 0, 0));
        const b = encodeTile(canonicalLayers([layer('transportation', shuffled)], 0, 0));
        expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('orders by _zorder first and removes the _ attributes', () => {
    const out = canonicalLayers([layer('transportation', [point(1, 1, { class: 'a', _zorder: 5 }), point(2, 2, { class: 'b', _zorder: -3 })])], 0, 0);
    expect(out[0].features.map((f) => Object.fromEntries(f.tags))).toEqual([{ class: 'b' }, { class: 'a' }]);
  });

  it('ranks POIs by importance within each 100 px label grid cell', () => {
    // Tile 0/0 at zoom 1: 4096 units = 256 px, so x < 1600 is grid column 0 and 1600..3199 column 1.
    const poi = [
      point(100, 100, { name: 'shop', _rank_order: 400 }),
      point(200, 100, { name: 'hospital', _rank_order: 20 }),
      point(300, 100, { name: 'unnamed', _rank_order: 2000 }),
      point(2000, 100, { name: 'other cell', _rank_order: 400 }),
      point(50, 50, { name: 'no order' }),
    ];
    const [l] = canonicalLayers([layer('poi', poi)], 0, 0);
    const rank = Object.fromEntries(l.features.map((f) => [f.tags.get('name'), f.tags.get('rank')]));
    expect(rank).toEqual({ hospital: 1, shop: 2, unnamed: 3, 'other cell': 1, 'no order': undefined });
    expect(l.features.every((f) => !f.tags.has('_rank_order'))).toBe(true);
    // The grid is global: tile x = 1 starts 256 px in, so its x = 100 units is in column 2, x = 2000 in column 3.
    const [m] = canonicalLayers([layer('poi', poi.map((f) => ({ ...f, tags: new Map(f.tags) })))], 1, 0);
    expect(Object.fromEntries(m.features.map((f) => [f.tags.get('name'), f.tags.get('rank')]))).toEqual(rank);
    // Places rank from 11 (10 + position), as OpenMapTiles' cities without a Natural Earth rank.
    const [p] = canonicalLayers([layer('place', [point(10, 10, { _rank_order: 5 }), point(20, 20, { _rank_order: 1 })])], 0, 0);
    expect(p.features.map((f) => f.tags.get('rank')).sort()).toEqual([11, 12]);
  });

  it('canonicalTile gunzips, re-encodes and gzips', () => {
    const plain = encodeTile([layer('water', [point(1, 2, { class: 'ocean', _zorder: 1 })])]);
    const out = canonicalTile(plain, 0, 0);
    expect([out[0], out[1]]).toEqual([0x1f, 0x8b]);
    const [l] = decodeTile(gunzipSync(out));
    expect(Object.fromEntries(l.features[0].tags)).toEqual({ class: 'ocean' });
  });

  describe('fill rings (real Belize tiles, test/fixtures/osm)', () => {
    const fixtures = JSON.parse(readFileSync('test/fixtures/osm/belize-fill-tiles.json', 'utf8')) as Record<string, string>;
    const stored = (id: string) => Buffer.from(fixtures[id], 'base64');
    const canonical = (id: string) => {
      const [, x, y] = id.split('/').map(Number);
      return canonicalTile(stored(id), x, y);
    };
    /** The polygons of a tile, layer by layer in name order (the canonical step puts layers in the profile's order). */
    const polygons = (data: Uint8Array) =>
      decodeTile(gunzipSync(data))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
        .flatMap((l) => l.features.filter((f) => f.type === 3).map((f) => ({ layer: l.name, tags: Object.fromEntries(f.tags), rings: decodeRings(f.geometry)! })));
    /**
     * Even-odd inside-ness of every polygon at a grid of points in the tile, next to its edges and in
     * the buffer's inner band, which a style's fill-translate draws inside the tile (half units: never on a vertex).
     */
    const drawn = (data: Uint8Array) => {
      const at = [-18.5, -9.5, 0.5, 1.5, 4094.5, 4095.5, 4105.5, 4114.5, ...Array.from({ length: 64 }, (_, i) => i * 64 + 31.5)];
      return polygons(data).map((p) => at.map((x) => at.map((y) => p.rings.reduce((n, r) => n + (pointInRing([x, y], r) ? 1 : 0), 0) % 2).join('')).join('|'));
    };
    const FILL: Point[] = [[-21, 4117], [-21, -21], [4117, -21], [4117, 4117]];

    it('open sea is one rectangle whatever row tilemaker rounded its clip box in: equal bytes, same coverage of the tile', () => {
      const [a, b] = ['12/1056/1836', '12/1058/1835'];
      expect(polygons(stored(a))[0].rings).toEqual([[[-21, 4115], [-21, -21], [4116, -21], [4116, 4115]]]);
      expect(polygons(stored(b))[0].rings).toEqual([[[-21, 4116], [-21, -22], [4116, -22], [4116, 4116]]]);
      expect(Buffer.from(canonical(a)).equals(Buffer.from(canonical(b)))).toBe(true);
      expect(polygons(canonical(a))).toEqual([{ layer: 'water', tags: { class: 'ocean' }, rings: [FILL] }]);
    });

    it('at the extract box\'s seam the rectangle stops where the sea stops (the tile\'s edge)', () => {
      const [a, b] = ['12/1059/1834', '12/1059/1835'];
      expect(Buffer.from(stored(a)).equals(Buffer.from(stored(b)))).toBe(false);
      expect(Buffer.from(canonical(a)).equals(Buffer.from(canonical(b)))).toBe(true);
      expect(polygons(canonical(a))[0].rings).toEqual([[[-21, 4117], [-21, -21], [4096, -21], [4096, 4117]]]);
    });

    it('keeps holes (islands) inside the rectangle; leaves a ring alone whose hole reaches past it', () => {
      const islands = polygons(canonical('12/1049/1854'))[0].rings;
      expect(islands[0]).toEqual(FILL);
      expect(islands.slice(1)).toEqual(polygons(stored('12/1049/1854'))[0].rings.slice(1));
      // An island across the tile's west edge (x = −24): a hole must stay inside its ring, so nothing changes.
      expect(polygons(canonical('12/1052/1849'))).toEqual(polygons(stored('12/1052/1849')));
      // An island in the buffer above the tile, cut out of the ring (a notch): the buffer is not all sea, nothing changes.
      expect(polygons(stored('12/1048/1855'))[0].rings[0]).toContainEqual([2329, -12]);
      expect(polygons(canonical('12/1048/1855'))).toEqual(polygons(stored('12/1048/1855')));
    });

    it('any layer: a tile inside a wildlife sanctuary; a ring reaching every edge but not covering the tile is kept', () => {
      expect(polygons(canonical('13/2077/3709'))).toEqual([{ layer: 'park', tags: { class: 'wildlife_sanctuary' }, rings: [FILL] }]);
      expect(polygons(canonical('13/2069/3711'))).toEqual(polygons(stored('13/2069/3711')));
    });

    it('draws the same inside every fixture tile and its buffer\'s inner band, and re-encoding is idempotent', () => {
      for (const id of Object.keys(fixtures)) {
        expect(drawn(canonical(id)), id).toEqual(drawn(stored(id)));
        const [, x, y] = id.split('/').map(Number);
        expect(Buffer.from(canonicalTile(canonical(id), x, y)).equals(Buffer.from(canonical(id))), id).toBe(true);
      }
    });

    it('fillBox: a U-shaped ring whose bounds cover the tile does not; decodeRings/encodeRings round-trip', () => {
      const u: Point[] = [[-20, 4120], [-20, -20], [1000, -20], [1000, 3000], [3000, 3000], [3000, -20], [4120, -20], [4120, 4120]];
      expect(fillBox(u, 4096)).toBeUndefined();
      expect(fillBox([[-20, 4120], [-20, -20], [4120, -20], [4120, 4120]], 4096)).toEqual([-21, -21, 4117, 4117]);
      // Past the right edge but short of the buffer by more than tilemaker's rounding: left alone.
      expect(fillBox([[-20, 4120], [-20, -20], [4110, -20], [4110, 4120]], 4096)).toBeUndefined();
      expect(fillBox([[0, 4096], [0, 0], [4096, 0], [4096, 4096]], 4096)).toEqual([0, 0, 4096, 4096]);
      expect(decodeRings(encodeRings([u, FILL]))).toEqual([u, FILL]);
    });
  });

  it('TileJSON vector_layers lose the _ fields and gain rank where it is computed', () => {
    expect(publicVectorLayers([{ id: 'poi', fields: { class: 'String', _rank_order: 'Number' } }, { id: 'water', fields: { _zorder: 'Number', class: 'String' } }])).toEqual([
      { id: 'poi', fields: { class: 'String', rank: 'Number' } },
      { id: 'water', fields: { class: 'String' } },
    ]);
  });
});

describe('OSM PBF header, tile box, tilemaker config and failures', () => {
  it('recognises an OSM PBF by its first bytes and reads the header bbox', async () => {
    const { readFile } = await import('node:fs/promises');
    const bytes = await readFile(MONACO_PBF);
    expect(isOsmPbfHead(bytes.subarray(0, 16))).toBe(true);
    expect(isOsmPbfHead(Buffer.from('SQLite format 3\0'))).toBe(false);
    const h = await readOsmHeader(MONACO_PBF);
    expect(h.bbox).toEqual([7.409205, 43.72335, 7.448637, 43.75169]);
    expect(h.requiredFeatures).toEqual(['OsmSchema-V0.6', 'DenseNodes']);
  });

  it('the tile box is whole z14 tiles around the bbox', () => {
    const box = tileBox([7.409205, 43.72335, 7.448637, 43.75169]);
    // Monaco spans z14 columns 8529-8530 and rows 5973-5975.
    expect(box).toEqual([tileBounds(14, 8529, 5975)[0], tileBounds(14, 8529, 5975)[1], tileBounds(14, 8530, 5973)[2], tileBounds(14, 8530, 5973)[3]]);
  });

  it("parses osmium's bbox output", () => {
    expect(parseOsmiumBBox('(7.4016897,43.5165358,7.5002447,43.7543341)\n')).toEqual([7.4016897, 43.5165358, 7.5002447, 43.7543341]);
    expect(parseOsmiumBBox('()\n')).toBeUndefined();
  });

  it('the run config carries the box (inset), the shapefile layers and the zooms of the run', async () => {
    const ocean = { minzoom: 14, maxzoom: 14, source: '/w/ocean.shp', write_to: 'water' };
    const withSea = await runConfig({ box: BOX, shapeLayers: { ocean } });
    const layers = withSea.layers as Record<string, Record<string, unknown>>;
    expect(layers.ocean).toEqual(ocean);
    const bb = (withSea.settings as { bounding_box: number[] }).bounding_box;
    expect(bb[0]).toBeGreaterThan(0);
    expect(bb[0]).toBeLessThan(1e-6);
    expect(bb[2]).toBeLessThan(10);
    expect(withSea.settings).toMatchObject({ maxzoom: 14, basezoom: 14 });
    const noSea = await runConfig({ box: BOX, zooms: [4, 6] });
    expect(Object.keys(noSea.layers as object)).not.toContain('ocean');
    expect(noSea.settings).toMatchObject({ minzoom: 4, maxzoom: 6, basezoom: 6 });
  });

  it('quotes the most telling line of a failed tilemaker run', () => {
    expect(failureReason(['Reading .pbf x', 'lua runtime error: p.lua:2: attempt to index nil', "terminate called after throwing an instance of 'kaguya::LuaTypeMismatch'", '  what():  type mismatch!!'])).toBe(
      'lua runtime error: p.lua:2: attempt to index nil',
    );
    expect(failureReason(['Layer place', "Couldn't open .lua script: x.lua"])).toBe("Couldn't open .lua script: x.lua");
    expect(failureReason([])).toBe('no output');
  });

  it('tilesets.<id>.bbox is validated like other boxes, with the JSON path in the message', () => {
    const ok = parseConfig({ tilesets: { osm: { source: 'x.osm.pbf', bbox: [7.4, 43.7, 7.5, 43.8] } } }, '/cfg/c.json');
    expect(ok.tilesets.osm.bbox).toEqual([7.4, 43.7, 7.5, 43.8]);
    try {
      parseConfig({ tilesets: { osm: { source: 'x.osm.pbf', bbox: [7.5, 43.7, 7.4, 43.8] } } }, '/cfg/c.json');
      expect.unreachable();
    } catch (e) {
      expect(isUserError(e)).toBe(true);
      expect((e as Error).message).toContain('$.tilesets.osm.bbox');
    }
  });
});

describe('generating some tiles only (tilebake update)', () => {
  const box = tileBox([9.5, 47.1, 9.6, 47.2]);
  it("tilemaker's box is the tiles' area within the tile box", () => {
    const [a, b] = [tileBounds(14, 8627, 5751), tileBounds(14, 8628, 5752)];
    expect(boxOfTiles(['14/8627/5751', '14/8628/5752'], box)).toEqual([a[0], b[1], b[2], a[3]]);
    // A low-zoom tile covers more than the tile box: its part inside it.
    expect(boxOfTiles(['0/0/0'], box)).toEqual(box);
    // Tiles outside the tile box only: the whole box (nothing to shrink to).
    expect(boxOfTiles(['14/0/0'], box)).toEqual(box);
  });

  it('comparable tiles: equal for the same features in any order, different when only a `_…` instruction differs', () => {
    const f = (name: string, order: number): RawFeature => ({ type: 1, geometry: new Uint8Array([9, 2, 2]), tags: new Map<string, string | number>([['name', name], ['_rank_order', order]]) });
    const tile = (...features: RawFeature[]) => encodeTile([{ name: 'poi', version: 2, extent: 4096, features }]);
    expect(Buffer.from(comparableTile(tile(f('a', 1), f('b', 2))))).toEqual(Buffer.from(comparableTile(tile(f('b', 2), f('a', 1)))));
    expect(Buffer.from(comparableTile(tile(f('a', 1))))).not.toEqual(Buffer.from(comparableTile(tile(f('a', 2)))));
    expect(comparableTile(encodeTile([{ name: 'poi', version: 2, extent: 4096, features: [] }]))).toHaveLength(0);
  });
});
