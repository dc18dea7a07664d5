/**
 * The sea cut into tiles (pipeline/osm/cut.ts, ocean.ts): a tile the sea covers is the canonical fill
 * tile tilemaker and the canonical step would make of it, made without either; a coastal tile's piece,
 * written without tilemaker (piece-tiles.ts), is tilemaker's tile of that piece up to its simplification
 * (the reef off Belize); a coastal tile's ocean is the sea inside it (Monaco's build against GEOS's
 * intersection of the sea with each tile).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { tileBounds, type BBox } from '../lib/tile-math.ts';
import { loadGdal, type Gdal } from '../lib/gdal.ts';
import { canonicalEncode, canonicalTile, decodeStored } from '../pipeline/osm/canonical.ts';
import { signedArea2 } from '../pipeline/osm/coastline.ts';
import { fillLayers } from '../pipeline/osm/compose.ts';
import { cutPolygons, TILE_TAG, tileIndex } from '../pipeline/osm/cut.ts';
import { decodeRings } from '../pipeline/osm/fill.ts';
import { NE_MAXZOOM, SHAPE_SIMPLIFY, zoomArea, type ShapeLayer } from '../pipeline/osm/natural-earth.ts';
import { oceanCut, oceanGeometry, oceanTiles } from '../pipeline/osm/ocean.ts';
import { readOsmHeader } from '../pipeline/osm/pbf-header.ts';
import { buildSea } from '../pipeline/osm/sea.ts';
import { runShapeLayers } from '../pipeline/osm/shape-runs.ts';
import { boxPolygon, ofKind, writeShapefile } from '../pipeline/osm/shapes.ts';
import { tileBox } from '../pipeline/osm/source.ts';
import { buildMonacoVector, MONACO_HEADER_BBOX, MONACO_PBF } from './osm-helpers.ts';
import { archiveTiles, readTile } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';
const REEF = join(import.meta.dirname, 'fixtures', 'osm', 'belize-reef.osm.pbf');
const LONG = 600_000;
const EXTENT = 4096;

describe('a tile the sea covers is a fill', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tilebake-ocean-fill-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("the same bytes as tilemaker's tile of the whole polygon, re-encoded canonically", async () => {
    // A sea of 6 × 6 z10 tiles off Belize: the 4 × 4 inside are fills (their clip boxes are covered).
    const [w, , , n] = tileBounds(10, 260, 458);
    const [, s, e] = tileBounds(10, 265, 463);
    const sea = await boxPolygon([w, s, e, n]);
    const cut = await cutPolygons({ features: [{ geometry: sea, attributes: { class: 'ocean' } }], minzoom: 10, maxzoom: 10, area: () => [-180, -85, 180, 85] });
    const fills = cut.get(10)!.fills;
    expect(fills.size).toBe(16);
    // 20 tiles along its edge, and 28 around it whose buffers it reaches.
    expect(cut.get(10)!.pieces).toHaveLength(48);
    // tilemaker with the polygon whole, as the extract's runs had it.
    const source = join(dir, 'sea.shp');
    await writeShapefile(source, 'polygon', { class: 'string' }, [{ geometry: sea, attributes: { class: 'ocean' } }]);
    const tiles = await runShapeLayers({
      tilemaker: 'tilemaker', osmium: 'osmium', box: [w, s, e, n] as BBox, workDir: dir, pidFile: join(dir, 'pids'), label: 'test',
      layers: { ocean_z10: { minzoom: 10, maxzoom: 10, source, write_to: 'water', source_columns: ['class'], ...SHAPE_SIMPLIFY } },
    });
    const fill = canonicalEncode([fillLayers([{ layer: 'water', attributes: { class: 'ocean' } }])], 0, 0)!;
    for (const [x, y] of [
      [261, 459],
      [263, 461],
      [264, 462],
    ]) {
      expect(fills.has(tileIndex(10, x, y))).toBe(true);
      expect(Buffer.from(canonicalTile(tiles.get(`10/${x}/${y}`)!, x, y)).equals(Buffer.from(fill)), `10/${x}/${y}`).toBe(true);
    }
    // An edge tile is not a fill, and its tile is not the fill's.
    expect(fills.has(tileIndex(10, 260, 459))).toBe(false);
    expect(Buffer.from(canonicalTile(tiles.get('10/260/459')!, 260, 459)).equals(Buffer.from(fill))).toBe(false);
  }, LONG);
});

/** A tile's ocean polygons (MVT rings, tile coordinates) as one GEOS multipolygon. */
function tileOcean(gdal: Gdal, data: Uint8Array | undefined): import('gdal-async').Geometry {
  const out = new gdal.MultiPolygon();
  for (const l of data ? decodeStored(data) : []) {
    if (l.name !== 'water') continue;
    for (const f of l.features) {
      if (f.tags.get('class') !== 'ocean') continue;
      let poly: import('gdal-async').Polygon | undefined;
      for (const r of decodeRings(f.geometry)!) {
        const ring = new gdal.LinearRing();
        ring.points.add([...r, r[0]].map(([x, y]) => ({ x, y })));
        // Exterior rings are clockwise on screen (positive area in tile coordinates); holes follow theirs.
        if (signedArea2(r) > 0) {
          if (poly) out.children.add(poly);
          poly = new gdal.Polygon();
        }
        poly?.rings.add(ring);
      }
      if (poly) out.children.add(poly);
    }
  }
  return out.isValid() ? out : out.makeValid();
}

/** `g` (lon/lat) inside tile z/x/y, in the tile's coordinates (Web Mercator). */
async function inTileCoordinates(gdal: Gdal, g: import('gdal-async').Geometry, z: number, x: number, y: number): Promise<import('gdal-async').Geometry> {
  const [w, s, e, n] = tileBounds(z, x, y);
  const my = (lat: number) => Math.log(Math.tan(Math.PI / 4 + (lat * Math.PI) / 360));
  const part = await ofKind(g.intersection(gdal.Geometry.fromWKT(`POLYGON((${w} ${s},${e} ${s},${e} ${n},${w} ${n},${w} ${s}))`)), 'polygon');
  if (!part) return new gdal.MultiPolygon();
  const json = part.toObject() as { type: string; coordinates: unknown };
  const map = (c: unknown): unknown => (typeof (c as number[])[0] === 'number' ? [(((c as number[])[0] - w) / (e - w)) * EXTENT, ((my(n) - my((c as number[])[1])) / (my(n) - my(s))) * EXTENT] : (c as unknown[]).map(map));
  return gdal.Geometry.fromGeoJson({ type: json.type, coordinates: map(json.coordinates) } as object);
}

describe("coastal tiles without tilemaker: tilemaker's tiles of the same pieces (the reef off Belize)", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tilebake-ocean-pieces-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('the same tiles, layer and attributes; the same vertices from z13, the ocean within 0.2 % of the tile below (simplified)', async () => {
    const gdal = await loadGdal();
    const box = tileBox((await readOsmHeader(REEF)).bbox!);
    const { polygons } = await buildSea('osmium', REEF, box, join(dir, 'pids'));
    const ours = (await oceanTiles({ polygons, box })).tiles;
    // tilemaker's tiles of the same pieces: a shapefile per zoom, runs of three zooms (the former path).
    const layers: Record<string, ShapeLayer> = {};
    for (const [z, c] of await oceanCut({ polygons, box })) {
      if (c.pieces.length === 0) continue;
      const source = join(dir, `ocean_z${z}.shp`);
      await writeShapefile(source, 'polygon', { class: 'string', [TILE_TAG]: 'string' }, c.pieces);
      layers[`ocean_z${z}`] = { minzoom: z, maxzoom: z, source, write_to: 'water', source_columns: ['class', TILE_TAG], ...SHAPE_SIMPLIFY };
    }
    const seam = zoomArea(box, NE_MAXZOOM);
    const theirs = await runShapeLayers({
      tilemaker: 'tilemaker', osmium: 'osmium', box, layers, workDir: dir, pidFile: join(dir, 'pids'), label: 'test',
      runBox: (first) => (first <= NE_MAXZOOM ? [seam[0] - 1, seam[1] - 1, seam[2] + 1, seam[3] + 1] : zoomArea(box, first)),
    });
    // Coastal tiles at every zoom from z6 (the reef's cays are holes in the sea).
    expect(new Set([...ours.keys()].map((k) => Number(k.split('/')[0])))).toEqual(new Set([6, 7, 8, 9, 10, 11, 12, 13, 14]));
    expect(ours.size).toBeGreaterThan(100);
    expect([...ours.keys()].sort()).toEqual([...theirs.keys()].sort());
    const tile = gdal.Geometry.fromWKT(`POLYGON((0 0,${EXTENT} 0,${EXTENT} ${EXTENT},0 ${EXTENT},0 0))`);
    const area = (g: import('gdal-async').Geometry) => (g as unknown as { getArea(): number }).getArea() / EXTENT ** 2;
    const vertices = (data: Uint8Array) => decodeStored(data).flatMap((l) => l.features.flatMap((f) => decodeRings(f.geometry)!.flat().map((p) => p.join(',')))).sort();
    let holes = 0;
    for (const [key, layers] of ours) {
      const [z, x, y] = key.split('/').map(Number);
      const a = canonicalEncode([layers], x, y)!;
      const b = canonicalTile(theirs.get(key)!, x, y);
      const shape = (data: Uint8Array) => decodeStored(data).map((l) => ({ name: l.name, extent: l.extent, features: l.features.map((f) => ({ type: f.type, tags: Object.fromEntries(f.tags) })) }));
      expect(shape(a), key).toEqual([{ name: 'water', extent: EXTENT, features: [{ type: 3, tags: { class: 'ocean' } }] }]);
      expect(shape(a), key).toEqual(shape(b));
      holes += decodeRings(decodeStored(a)[0].features[0].geometry)!.filter((r) => signedArea2(r) < 0).length;
      if (z >= 13) expect(vertices(a), key).toEqual(vertices(b));
      const differs = area(tileOcean(gdal, a).intersection(tile).symDifference(tileOcean(gdal, b).intersection(tile)));
      expect(differs, key).toBeLessThan(z >= 13 ? 1e-9 : 0.002);
    }
    expect(holes).toBeGreaterThan(10);
  }, LONG);
});

describe.sequential("Monaco's coastal tiles: the ocean is the sea inside each tile", () => {
  let out: string;
  let archive: string;
  beforeAll(async () => {
    ({ out, archive } = await buildMonacoVector('osm-ocean'));
  }, LONG);
  afterAll(async () => {
    if (out) await rm(out, { recursive: true, force: true });
  });

  test('z12–14: the ocean of every tile covers the sea inside it (GEOS), to a tenth of a per cent at z13–14, with the simplification at z12', async () => {
    const gdal = await loadGdal();
    const box = tileBox(MONACO_HEADER_BBOX);
    const sea = await buildSea('osmium', MONACO_PBF, box, join(out, 'pids'));
    const ocean = (await oceanGeometry(sea.polygons, box))!;
    const tile = gdal.Geometry.fromWKT(`POLYGON((0 0,${EXTENT} 0,${EXTENT} ${EXTENT},0 ${EXTENT},0 0))`);
    const area = (g: import('gdal-async').Geometry) => (g as unknown as { getArea(): number }).getArea() / EXTENT ** 2;
    const { tileIdToZxy } = await import('pmtiles');
    let coastal = 0;
    for (const id of (await archiveTiles(archive)).keys()) {
      const [z, x, y] = tileIdToZxy(Number(id));
      if (z < 12) continue;
      const expected = await inTileCoordinates(gdal, ocean, z, x, y);
      const ours = tileOcean(gdal, await readTile(archive, z, x, y)).intersection(tile);
      const share = area(expected);
      if (share > 0.001 && share < 0.999) coastal++;
      const differs = area(ours.symDifference(expected));
      expect(differs, `${z}/${x}/${y}: ocean ${area(ours).toFixed(4)} of the tile, the sea ${share.toFixed(4)}`).toBeLessThan(z >= 13 ? 0.001 : 0.01);
    }
    expect(coastal).toBeGreaterThan(5);
  }, LONG);
});
