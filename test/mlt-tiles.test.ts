// MLT beside MVT: every MLT tile of a Liechtenstein build decodes (with @maplibre/mlt, MapLibre's own
// decoder) to the layers, feature counts, ids, geometries and properties of its MVT tile; the mapping's
// corner cases on hand-made tiles; an encoder failure fails the archive naming the tile, leaving nothing.
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { VectorTile } from '@mapbox/vector-tile';
import { decodeTile, GEOMETRY_TYPE } from '@maplibre/mlt';
import { PbfReader } from 'pbf';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Manifest } from '../lib/manifest.ts';
import { MLT_ENCODER, mvtToMlt } from '../lib/mlt.ts';
import { encodeTile as encodeMvt, GEOM_COMMAND, GEOM_TYPE, type RawLayer } from '../lib/mvt.ts';
import { Compression, openArchiveFile, PMTilesWriter, TileType } from '../lib/pmtiles/index.ts';
import { encodeMltArchive, MLT_METADATA_KEY } from '../pipeline/vector/mlt.ts';
import { MLT_TILESET, sharedMltBuild } from './fixtures/mlt.ts';

/** The MVT geometry type of each MLT geometry type. */
const MVT_TYPE: Record<number, number> = {
  [GEOMETRY_TYPE.POINT]: 1, [GEOMETRY_TYPE.MULTIPOINT]: 1,
  [GEOMETRY_TYPE.LINESTRING]: 2, [GEOMETRY_TYPE.MULTILINESTRING]: 2,
  [GEOMETRY_TYPE.POLYGON]: 3, [GEOMETRY_TYPE.MULTIPOLYGON]: 3,
};

/** Properties with their keys sorted (MVT keeps each feature's tag order, MLT its column order). */
const sorted = (p: Record<string, unknown>) => Object.fromEntries(Object.entries(p).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

type Plain = { name: string; extent: number; features: { id: unknown; type: number; geometry: number[][][]; properties: Record<string, unknown> }[] };

/** An MVT tile as plain layers (the geometry as MapLibre loads it: rings of [x, y]). */
function mvtLayers(mvt: Uint8Array): Plain[] {
  const t = new VectorTile(new PbfReader(mvt));
  return Object.values(t.layers).map((l) => ({
    name: l.name,
    extent: l.extent,
    features: Array.from({ length: l.length }, (_, i) => {
      const f = l.feature(i);
      return { id: f.id, type: f.type, geometry: f.loadGeometry().map((r) => r.map((p) => [p.x, p.y])), properties: sorted(f.properties) };
    }),
  }));
}

/** An MLT tile decoded by @maplibre/mlt as the same plain layers. */
function mltLayers(mlt: Uint8Array): Plain[] {
  return decodeTile(mlt).map((t) => ({
    name: t.name,
    extent: t.extent,
    features: t.getFeatures().map((f) => ({
      id: f.id === undefined ? undefined : Number(f.id),
      type: MVT_TYPE[f.geometry.type],
      geometry: f.geometry.coordinates.map((r) => r.map((p) => [p.x, p.y])),
      properties: sorted(f.properties),
    })),
  }));
}

describe('the MLT archive of a Liechtenstein build', () => {
  let version: string;
  let manifest: Manifest;
  beforeAll(async () => {
    ({ version } = await sharedMltBuild());
    manifest = JSON.parse(await readFile(join(version, 'manifest.json'), 'utf8')) as Manifest;
  }, 600_000);

  it('holds every tile of the MVT archive, each decoding to the same layers, features, geometries and properties', async () => {
    const entry = manifest.tilesets[MLT_TILESET];
    expect(entry.mlt).toMatchObject({ archive: `data/${MLT_TILESET}.mlt.pmtiles` });
    const mvt = await openArchiveFile(join(version, entry.archive));
    const mlt = await openArchiveFile(join(version, entry.mlt!.archive));
    try {
      expect(mlt.header.tileType).toBe(TileType.Mlt);
      expect((await mlt.metadata())[MLT_METADATA_KEY]).toBe(MLT_ENCODER);
      expect(mlt.header.numAddressedTiles).toBe(mvt.header.numAddressedTiles);
      expect(entry.mlt!.tiles).toBe(entry.tiles);
      let tiles = 0;
      let features = 0;
      for await (const e of mvt.entries()) {
        const mvtBytes = gunzipSync(await mvt.readRange(e.offset, e.length));
        const stored = await mlt.getTile(e.z, e.x, e.y);
        expect(stored, `${e.z}/${e.x}/${e.y}`).toBeDefined();
        const want = mvtLayers(mvtBytes);
        const got = mltLayers(gunzipSync(stored!));
        // Compared as JSON text (fast); a difference is shown layer by layer.
        if (JSON.stringify(got) !== JSON.stringify(want)) {
          expect(got.map((l) => l.name)).toEqual(want.map((l) => l.name));
          for (const [i, l] of want.entries()) expect(got[i], `${e.z}/${e.x}/${e.y} ${l.name}`).toEqual(l);
          expect.unreachable(`${e.z}/${e.x}/${e.y}: the tiles differ`);
        }
        features += want.reduce((n, l) => n + l.features.length, 0);
        tiles++;
      }
      expect(tiles).toBe(mvt.header.numTileEntries);
      expect(features).toBeGreaterThan(50_000);
    } finally {
      await mvt.close();
      await mlt.close();
    }
  }, 300_000);
});

/** Zigzag of a delta (MVT geometry parameters). */
const zz = (n: number) => (n << 1) ^ (n >> 31);
/** An MVT geometry command stream of closed rings or open lines from absolute [x, y] lists. */
function commands(parts: number[][][], close: boolean): Uint8Array {
  const out: number[] = [];
  let cx = 0;
  let cy = 0;
  for (const part of parts) {
    const move = (x: number, y: number) => { out.push(zz(x - cx), zz(y - cy)); cx = x; cy = y; };
    out.push((1 << 3) | GEOM_COMMAND.MoveTo);
    move(part[0][0], part[0][1]);
    if (part.length > 1) {
      out.push(((part.length - 1) << 3) | GEOM_COMMAND.LineTo);
      for (const [x, y] of part.slice(1)) move(x, y);
    }
    if (close) out.push((1 << 3) | GEOM_COMMAND.ClosePath);
  }
  // Varints: every value here is below 2^14.
  const bytes: number[] = [];
  for (const v of out) {
    if (v < 0x80) bytes.push(v);
    else bytes.push((v & 0x7f) | 0x80, v >> 7);
  }
  return Uint8Array.from(bytes);
}

describe('MVT to MLT on hand-made tiles', () => {
  const layer: RawLayer = {
    name: 'things',
    version: 2,
    extent: 4096,
    features: [
      // Two polygons, the first with a hole (clockwise exteriors in tile coordinates, as MVT 2 has them), and a zero-area ring.
      { id: 7, type: GEOM_TYPE.Polygon, geometry: commands([[[0, 0], [100, 0], [100, 100], [0, 100]], [[10, 10], [10, 20], [20, 20], [20, 10]], [[5, 5], [6, 6], [7, 7]], [[200, 200], [300, 200], [300, 300]]], true), tags: new Map<string, string | number | boolean>([['kind', 'a'], ['big', 3_000_000_000], ['mixed', 'text']]) },
      { type: GEOM_TYPE.Point, geometry: commands([[[1, 2]], [[3, 4]]], false), tags: new Map<string, string | number | boolean>([['kind', 'b'], ['big', 1], ['mixed', 42], ['frac', 0.5]]) },
      { id: 9, type: GEOM_TYPE.LineString, geometry: commands([[[0, 0], [10, 10], [20, 0]]], false), tags: new Map<string, string | number | boolean>([['mixed', true], ['flag', false]]) },
    ],
  };

  it('keeps ring order and holes, multi-points, ids, mixed-type and 64-bit-range columns as MVT has them', () => {
    const mvt = encodeMvt([layer, { ...layer, name: 'second', extent: 512, features: layer.features.slice(1) }]);
    const got = mltLayers(mvtToMlt(mvt));
    expect(got).toEqual(mvtLayers(mvt));
    // Numbers stay numbers (not BigInts), so MapLibre's expressions compare them.
    expect(typeof got[0].features[0].properties.big).toBe('number');
    expect(got[0].features[0].properties.big).toBe(3_000_000_000);
  });

  it('an encoder failure fails the archive naming the tile, and leaves no archive', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'tilebake-mlt-'));
    try {
      const mvtPath = join(dir, 'in.pmtiles');
      const w = await PMTilesWriter.create(mvtPath, { tileType: TileType.Mvt, tileCompression: Compression.None, metadata: {}, bounds: [-180, -85, 180, 85], center: [0, 0, 0] });
      await w.addTile(3, 4, 2, encodeMvt([layer]));
      // A feature of geometry type 0 (UNKNOWN): MLT has no such geometry.
      await w.addTile(3, 4, 3, encodeMvt([{ ...layer, features: [{ ...layer.features[0], type: 0 }] }]));
      await w.finish();
      const out = join(dir, 'out.mlt.pmtiles');
      await expect(encodeMltArchive(mvtPath, out, { label: 'vector bad', threads: 1 })).rejects.toThrow(/vector bad: the MLT encoder failed on tile 3\/4\/3 of in\.pmtiles \(layer "things", feature 0: a feature of unknown geometry type 0\); no MLT archive written/);
      expect(await stat(out).catch(() => undefined)).toBeUndefined();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
