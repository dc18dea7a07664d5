/**
 * One candidate of bench/own-data/vector.ts in its own process (so that its time, CPU and peak memory are
 * its own): the same features cut into z0–14 tiles and packed into PMTiles by the one writer. Prints one
 * JSON line: tiles, bytes.
 *
 *   node --import tsx bench/own-data/cut.ts tilebake SOURCE OUT.pmtiles [LAYERS_JSON]   # pipeline/sources/gis.ts (GDAL's MVT driver)
 *   node --import tsx bench/own-data/cut.ts geojson-vt DIR OUT.pmtiles                   # DIR/<layer>.geojson → @maplibre/geojson-vt + vt-pbf
 *   node --import tsx bench/own-data/cut.ts st-asmvt POSTGRESQL_URL OUT.pmtiles          # PostGIS's ST_AsMVT over <layer>_3857 tables
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { GeoJSONVT } from '@maplibre/geojson-vt';
import { fromGeojsonVt } from '@maplibre/vt-pbf';
import { Compression } from 'pmtiles';
import { tileRangeForBBox, type BBox } from '../../lib/tile-math.ts';
import type { GisLayerConfig } from '../../pipeline/config/gis.ts';
import type { SourceTile, TileSource } from '../../pipeline/sources/common.ts';
import { MVT_SETTINGS } from '../../pipeline/sources/gis.ts';
import { packSource, packVectorTiles } from '../../pipeline/vector/stage.ts';

process.env.TILEBAKE_QUIET = '1';
const run = promisify(execFile);
/** The layers of the bench's input (GDAL's OSM driver). */
export const LAYERS = ['points', 'lines', 'multipolygons'] as const;
export const MINZOOM = 0;
export const MAXZOOM = 14;

/** A TileSource over tiles made here (the candidates GDAL does not cut), for the one PMTiles writer. */
function tilesAsSource(name: string, tiles: SourceTile[], bounds: BBox): TileSource {
  return {
    path: name,
    kind: 'gis',
    format: 'pbf',
    compression: Compression.Gzip,
    metadata: { bounds, center: [(bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2, 10], minzoom: MINZOOM, maxzoom: MAXZOOM, vector_layers: LAYERS.map((id) => ({ id, fields: {} })), extra: {} },
    count: tiles.length,
    async *tiles() {
      yield* tiles;
    },
    async close() {},
  };
}

/** Every tile z/x/y of MINZOOM..MAXZOOM over `bbox` (the candidates without an index of their own visit these). */
function* tilesOver(bbox: BBox): Generator<[number, number, number]> {
  for (let z = MINZOOM; z <= MAXZOOM; z++) {
    const r = tileRangeForBBox(bbox, z);
    for (let x = r.minX; x <= r.maxX; x++) for (let y = r.minY; y <= r.maxY; y++) yield [z, x, y];
  }
}

/** The box around GeoJSON features (lon/lat). */
function bboxOf(collections: GeoJSON.FeatureCollection[]): BBox {
  const b: BBox = [180, 90, -180, -90];
  const visit = (c: unknown[]): void => {
    if (typeof c[0] === 'number') {
      const [x, y] = c as number[];
      [b[0], b[1], b[2], b[3]] = [Math.min(b[0], x), Math.min(b[1], y), Math.max(b[2], x), Math.max(b[3], y)];
    } else (c as unknown[][]).forEach(visit);
  };
  for (const fc of collections) for (const f of fc.features) if (f.geometry && 'coordinates' in f.geometry) visit(f.geometry.coordinates as unknown[]);
  return b;
}

/** geojson-vt + vt-pbf: each layer's GeoJSON parsed and indexed, every tile encoded and gzipped. */
async function geojsonVt(dir: string, out: string): Promise<{ tiles: number; bytes: number }> {
  const data = LAYERS.map((l) => JSON.parse(readFileSync(join(dir, `${l}.geojson`), 'utf8')) as GeoJSON.FeatureCollection);
  const bbox = bboxOf(data);
  // tolerance 1 (GDAL's SIMPLIFICATION), none at the deepest zoom (geojson-vt's own rule), the same buffer.
  const indexes = data.map((d) => new GeoJSONVT(d, { maxZoom: MAXZOOM, indexMaxZoom: 5, extent: MVT_SETTINGS.EXTENT, buffer: MVT_SETTINGS.BUFFER, tolerance: MVT_SETTINGS.SIMPLIFICATION }));
  const tiles: SourceTile[] = [];
  for (const [z, x, y] of tilesOver(bbox)) {
    const layers: Record<string, NonNullable<ReturnType<GeoJSONVT['getTile']>>> = {};
    LAYERS.forEach((l, i) => {
      const t = indexes[i].getTile(z, x, y);
      if (t && t.features.length) layers[l] = t;
    });
    if (Object.keys(layers).length) tiles.push({ z, x, y, data: gzipSync(fromGeojsonVt(layers, { extent: MVT_SETTINGS.EXTENT })) });
  }
  const r = await packSource(tilesAsSource('geojson-vt', tiles, bbox), out, { label: 'geojson-vt' });
  return { tiles: r.tiles, bytes: r.bytes };
}

/** psql on `url` (its password in it). */
async function psql(url: string, sql: string): Promise<string> {
  return (await run('psql', [url, '-v', 'ON_ERROR_STOP=1', '-At', '-c', sql], { maxBuffer: 1 << 28 })).stdout;
}

/** ST_AsMVT: one query over every tile of the data's box (tables `<layer>_3857` in Web Mercator with a GiST index), gzipped here. */
async function stAsMvt(url: string, out: string): Promise<{ tiles: number; bytes: number }> {
  const ext = (await psql(url, `SELECT ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e) FROM (SELECT ST_Extent(ST_Transform(geom, 4326)) AS e FROM (${LAYERS.map((l) => `SELECT geom FROM ${l}_3857`).join(' UNION ALL ')}) g) q`)).trim().split('|').map(Number);
  const bbox: BBox = [ext[0], ext[1], ext[2], ext[3]];
  const columns: Record<string, string[]> = {};
  for (const l of LAYERS) {
    const names = await psql(url, `SELECT column_name FROM information_schema.columns WHERE table_name = '${l}_3857' AND column_name <> 'geom' ORDER BY ordinal_position`);
    columns[l] = names.trim().split('\n').filter(Boolean).map((c) => `"${c}"`);
  }
  const list = [...tilesOver(bbox)];
  const arr = (i: number) => `ARRAY[${list.map((t) => t[i]).join(',')}]::int[]`;
  const margin = MVT_SETTINGS.BUFFER / MVT_SETTINGS.EXTENT;
  const layer = (l: string) =>
    `coalesce((SELECT ST_AsMVT(q, '${l}', ${MVT_SETTINGS.EXTENT}, 'mvtgeom') FROM (SELECT ${[...columns[l], `ST_AsMVTGeom(g.geom, ST_TileEnvelope(t.z, t.x, t.y), ${MVT_SETTINGS.EXTENT}, ${MVT_SETTINGS.BUFFER}) AS mvtgeom`].join(', ')} FROM ${l}_3857 g WHERE g.geom && ST_TileEnvelope(t.z, t.x, t.y, margin => ${margin})) q WHERE q.mvtgeom IS NOT NULL), ''::bytea)`;
  const text = await psql(url, `COPY (SELECT t.z, t.x, t.y, encode(${LAYERS.map(layer).join(' || ')}, 'base64') FROM unnest(${arr(0)}, ${arr(1)}, ${arr(2)}) AS t(z, x, y)) TO STDOUT`);
  const tiles: SourceTile[] = [];
  for (const line of text.split('\n')) {
    const [z, x, y, b64] = line.split('\t');
    if (!b64) continue;
    const mvt = Buffer.from(b64.replace(/\\n/g, ''), 'base64');
    if (mvt.length) tiles.push({ z: Number(z), x: Number(x), y: Number(y), data: gzipSync(mvt) });
  }
  const r = await packSource(tilesAsSource('ST_AsMVT', tiles, bbox), out, { label: 'st_asmvt' });
  return { tiles: r.tiles, bytes: r.bytes };
}

if (process.argv[1] === import.meta.filename) {
  const [candidate, source, out, layers] = process.argv.slice(2);
  let r: { tiles: number; bytes: number };
  if (candidate === 'tilebake') {
    const gis = { minzoom: MINZOOM, maxzoom: MAXZOOM, ...(layers ? { layers: JSON.parse(layers) as Record<string, GisLayerConfig> } : {}) };
    const p = await packVectorTiles(source, out, { label: 'tilebake', workDir: `${out}.work`, gis });
    r = { tiles: p.tiles, bytes: p.bytes };
  } else if (candidate === 'geojson-vt') r = await geojsonVt(source, out);
  else if (candidate === 'st-asmvt') r = await stAsMvt(source, out);
  else throw new Error(`unknown candidate ${candidate}`);
  console.log(JSON.stringify(r));
}
