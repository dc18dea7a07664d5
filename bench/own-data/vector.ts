/**
 * Benchmark (not a test): vector tilesets from the user's own data, z0–14. An OSM extract (Liechtenstein)
 * through GDAL's OSM driver into a GeoPackage (points, lines, multipolygons) and into PostGIS (a cluster
 * of its own, test/fixtures/postgis.ts); then, alternated in each round, the same features cut into
 * tiles by:
 * - tilebake's vector stage (pipeline/sources/gis.ts: GDAL's MVT driver in process, PMTiles) from the
 *   GeoPackage and from PostGIS,
 * - `ogr2ogr -f MVT` alone (MBTiles) on the same inputs, with the same driver settings (the baseline),
 * - the other candidates: @maplibre/geojson-vt + @maplibre/vt-pbf (features read by GDAL as GeoJSON) and
 *   PostGIS's ST_AsMVT (one query over every tile, tables kept in Web Mercator with a GiST index), both
 *   packed by the same PMTiles writer.
 * Features/s, wall and CPU seconds (PostGIS: the server's too), tiles, bytes; the median round. Then what
 * MapLibre draws from each candidate's tiles: one build renders the same style over each at z10–14
 * (a box in Vaduz) and compares the tiles with GDAL's, pixel for pixel.
 *
 *   node --import tsx bench/own-data/vector.ts [--rounds 3] [--input data/liechtenstein/liechtenstein-latest.osm.pbf]
 *
 * Prints the tables and writes bench/own-data/RESULTS-vector.md.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { GeoJSONVT } from '@maplibre/geojson-vt';
import { fromGeojsonVt } from '@maplibre/vt-pbf';
import Database from 'better-sqlite3';
import { Compression } from 'pmtiles';
import { currentVersionDir } from '../../lib/build-version.ts';
import { readManifestOrEmpty } from '../../lib/manifest.ts';
import { openArchiveFile } from '../../lib/pmtiles/index.ts';
import { processStat } from '../../lib/process-tree.ts';
import { tileRangeForBBox, type BBox } from '../../lib/tile-math.ts';
import { build } from '../../pipeline/build.ts';
import { parseConfig } from '../../pipeline/config/index.ts';
import type { SourceTile, TileSource } from '../../pipeline/sources/common.ts';
import { MVT_SETTINGS } from '../../pipeline/sources/gis.ts';
import { packSource, packVectorTiles } from '../../pipeline/vector/stage.ts';
import { startPostgis, type Postgis } from '../../test/fixtures/postgis.ts';
import { equalShare, pixels } from '../../test/fixtures/styles/pixels.ts';
import { treeCpuMs } from '../rss.ts';

process.env.TILEBAKE_QUIET = '1';
const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..', '..');
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, input: { type: 'string' } } });
const ROUNDS = Math.max(1, Number(values.rounds));
const INPUT = resolve(values.input ?? join(ROOT, 'data/liechtenstein/liechtenstein-latest.osm.pbf'));
const WORK = join(ROOT, 'build', 'bench-own-data');
const LAYERS = ['points', 'lines', 'multipolygons'] as const;
const MINZOOM = 0;
const MAXZOOM = 14;
const DB = 'bench';
const MS_PER_S = 1000;
/** Where the renders are compared: central Vaduz. */
const RENDER_BBOX: BBox = [9.515, 47.135, 9.53, 47.145];
/** Clock-tick fields of proc(5) stat (cutime, cstime) in lib/process-tree.ts's fields (field n at n - 3). */
const CUTIME = 13;
const CSTIME = 14;

interface Run {
  seconds: number;
  cpu: number;
  tiles: number;
  bytes: number;
}

/** The MVT driver's settings as ogr2ogr flags (tilebake's own, but gzip by GDAL and MBTiles). */
const OGR_MVT = ['-f', 'MVT', '-dsco', 'FORMAT=MBTILES', '-dsco', `MINZOOM=${MINZOOM}`, '-dsco', `MAXZOOM=${MAXZOOM}`, ...Object.entries(MVT_SETTINGS).flatMap(([k, v]) => ['-dsco', `${k}=${v}`])];

let clockTicks: number | undefined;
/** CPU ms of the PostgreSQL cluster: the postmaster and its living backends, plus the ended ones it reaped. */
function clusterCpuMs(pid: number): number {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  const s = processStat(pid);
  const reaped = s ? ((Number(s.fields[CUTIME]) + Number(s.fields[CSTIME])) * MS_PER_S) / clockTicks : 0;
  return treeCpuMs(pid) + reaped;
}

/** Time `f` (wall, this process's CPU across its threads and children that ended, and the cluster's). */
async function timed(f: () => Promise<{ tiles: number; bytes: number }>, pg?: { pid: number }): Promise<Run> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const s0 = pg ? clusterCpuMs(pg.pid) : 0;
  const r = await f();
  const c = process.cpuUsage(c0);
  const server = pg ? (clusterCpuMs(pg.pid) - s0) / MS_PER_S : 0;
  return { seconds: (performance.now() - t0) / MS_PER_S, cpu: (c.user + c.system) / 1e6 + server, ...r };
}

/** Run a command under GNU time: wall and CPU seconds (user + system, its children included). */
async function timedCommand(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ seconds: number; cpu: number }> {
  const r = await run('/usr/bin/time', ['-f', 'TIME %e %U %S', cmd, ...args], { env, maxBuffer: 1 << 26 });
  const m = /TIME ([\d.]+) ([\d.]+) ([\d.]+)\s*$/.exec(r.stderr);
  if (!m) throw new Error(`${cmd}: no timing in ${r.stderr.slice(-500)}`);
  return { seconds: Number(m[1]), cpu: Number(m[2]) + Number(m[3]) };
}

/** Tiles and bytes of an MBTiles file. */
function mbtilesSize(path: string): { tiles: number; bytes: number } {
  const db = new Database(path, { readonly: true });
  try {
    return { tiles: (db.prepare('SELECT COUNT(*) AS n FROM tiles').get() as { n: number }).n, bytes: statSync(path).size };
  } finally {
    db.close();
  }
}

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

/** geojson-vt + vt-pbf: the layers read by GDAL as GeoJSON, indexed, every tile encoded and gzipped. */
async function geojsonVt(gpkg: string, out: string, bbox: BBox): Promise<{ tiles: number; bytes: number }> {
  const indexes: Record<string, GeoJSONVT> = {};
  for (const l of LAYERS) {
    const file = join(WORK, `${l}.geojson`);
    rmSync(file, { force: true });
    await run('ogr2ogr', ['-f', 'GeoJSON', '-lco', 'RFC7946=YES', file, gpkg, l], { maxBuffer: 1 << 26 });
    // tolerance 1 (GDAL's SIMPLIFICATION), none at the deepest zoom (geojson-vt's own rule), the same buffer.
    indexes[l] = new GeoJSONVT(JSON.parse(readFileSync(file, 'utf8')) as GeoJSON.GeoJSON, { maxZoom: MAXZOOM, indexMaxZoom: 5, extent: MVT_SETTINGS.EXTENT, buffer: MVT_SETTINGS.BUFFER, tolerance: MVT_SETTINGS.SIMPLIFICATION });
  }
  const tiles: SourceTile[] = [];
  for (const [z, x, y] of tilesOver(bbox)) {
    const layers: Record<string, NonNullable<ReturnType<GeoJSONVT['getTile']>>> = {};
    for (const l of LAYERS) {
      const t = indexes[l].getTile(z, x, y);
      if (t && t.features.length) layers[l] = t;
    }
    if (Object.keys(layers).length) tiles.push({ z, x, y, data: gzipSync(fromGeojsonVt(layers, { extent: MVT_SETTINGS.EXTENT })) });
  }
  const r = await packSource(tilesAsSource('geojson-vt', tiles, bbox), out, { label: 'geojson-vt' });
  return { tiles: r.tiles, bytes: r.bytes };
}

/** Columns of table `t` but its geometry, quoted. */
async function columnsOf(pg: Postgis, t: string): Promise<string[]> {
  const out = await pg.psql(DB, `SELECT column_name FROM information_schema.columns WHERE table_name = '${t}' AND column_name NOT IN ('geom', 'fid') ORDER BY ordinal_position`);
  return out.trim().split('\n').filter(Boolean).map((c) => `"${c}"`);
}

/** ST_AsMVT: one query over every tile of the box (the tables in Web Mercator with a GiST index), gzipped here. */
async function stAsMvt(pg: Postgis, out: string, bbox: BBox, columns: Record<string, string[]>): Promise<{ tiles: number; bytes: number }> {
  const list = [...tilesOver(bbox)];
  const arr = (i: number) => `ARRAY[${list.map((t) => t[i]).join(',')}]::int[]`;
  const margin = MVT_SETTINGS.BUFFER / MVT_SETTINGS.EXTENT;
  const layer = (l: string) =>
    `coalesce((SELECT ST_AsMVT(q, '${l}', ${MVT_SETTINGS.EXTENT}, 'mvtgeom') FROM (SELECT ${columns[l].join(', ')}${columns[l].length ? ', ' : ''}ST_AsMVTGeom(g.geom, ST_TileEnvelope(t.z, t.x, t.y), ${MVT_SETTINGS.EXTENT}, ${MVT_SETTINGS.BUFFER}) AS mvtgeom FROM ${l}_3857 g WHERE g.geom && ST_TileEnvelope(t.z, t.x, t.y, margin => ${margin})) q WHERE q.mvtgeom IS NOT NULL), ''::bytea)`;
  const sql = `COPY (SELECT t.z, t.x, t.y, encode(${LAYERS.map(layer).join(' || ')}, 'base64') FROM unnest(${arr(0)}, ${arr(1)}, ${arr(2)}) AS t(z, x, y)) TO STDOUT`;
  const text = await pg.psql(DB, sql);
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

/** The build folder's tile PNG of `style` at z/x/y. */
async function renderedTile(out: string, style: string, z: number, x: number, y: number): Promise<Buffer | undefined> {
  const v = (await currentVersionDir(out))!;
  const m = await readManifestOrEmpty(v.dir);
  const a = await openArchiveFile(join(v.dir, m.styles[style].archives['1x.png'].archive));
  try {
    const t = await a.getTile(z, x, y);
    return t && Buffer.from(t);
  } finally {
    await a.close();
  }
}

mkdirSync(WORK, { recursive: true });
const gpkg = join(WORK, 'input.gpkg');
rmSync(gpkg, { force: true });
await run('ogr2ogr', ['-f', 'GPKG', gpkg, INPUT, ...LAYERS]);
const counts = Object.fromEntries(await Promise.all(LAYERS.map(async (l) => [l, Number(/Feature Count: (\d+)/.exec((await run('ogrinfo', ['-so', gpkg, l])).stdout)![1])] as const)));
const features = Object.values(counts).reduce((a, b) => a + b, 0);
const extent = (await run('ogrinfo', ['-so', '-al', gpkg])).stdout.match(/Extent: \(([-\d.]+), ([-\d.]+)\) - \(([-\d.]+), ([-\d.]+)\)/g)!.map((e) => e.match(/[-\d.]+/g)!.map(Number));
const bbox: BBox = [Math.min(...extent.map((e) => e[0])), Math.min(...extent.map((e) => e[1])), Math.max(...extent.map((e) => e[2])), Math.max(...extent.map((e) => e[3]))];

const pg = await startPostgis();
const postmaster = pg.pid;
try {
  await pg.createDatabase(DB);
  for (const l of LAYERS) await pg.load(DB, gpkg, l, l);
  const t0 = performance.now();
  const columns: Record<string, string[]> = {};
  for (const l of LAYERS) {
    columns[l] = await columnsOf(pg, l);
    await pg.psql(DB, `DROP TABLE IF EXISTS ${l}_3857; CREATE TABLE ${l}_3857 AS SELECT ${columns[l].join(', ')}${columns[l].length ? ', ' : ''}ST_Transform(geom, 3857) AS geom FROM ${l}; CREATE INDEX ON ${l}_3857 USING gist (geom); ANALYZE ${l}_3857`);
  }
  const prepSeconds = (performance.now() - t0) / MS_PER_S;
  const url = pg.url(DB);
  const pgLayers = Object.fromEntries(LAYERS.map((l) => [l, { table: l }]));

  const candidates: { name: string; input: 'GeoPackage' | 'PostGIS'; baseline?: string; go: () => Promise<Run> }[] = [
    { name: 'tilebake → PMTiles', input: 'GeoPackage', baseline: 'ogr2ogr -f MVT → MBTiles', go: () => timed(async () => { const r = await packVectorTiles(gpkg, join(WORK, 'gdal.pmtiles'), { label: 'gpkg', workDir: join(WORK, 'work'), gis: { minzoom: MINZOOM, maxzoom: MAXZOOM } }); return { tiles: r.tiles, bytes: r.bytes }; }) },
    { name: 'ogr2ogr -f MVT → MBTiles', input: 'GeoPackage', go: async () => { const out = join(WORK, 'ogr-gpkg.mbtiles'); rmSync(out, { force: true }); const t = await timedCommand('ogr2ogr', [...OGR_MVT, out, gpkg]); return { ...t, ...mbtilesSize(out) }; } },
    { name: 'tilebake → PMTiles', input: 'PostGIS', baseline: 'ogr2ogr -f MVT → MBTiles', go: () => timed(async () => { const r = await packVectorTiles(url, join(WORK, 'pg.pmtiles'), { label: 'pg', workDir: join(WORK, 'work'), gis: { minzoom: MINZOOM, maxzoom: MAXZOOM, layers: pgLayers } }); return { tiles: r.tiles, bytes: r.bytes }; }, { pid: postmaster }) },
    { name: 'ogr2ogr -f MVT → MBTiles', input: 'PostGIS', go: async () => { const out = join(WORK, 'ogr-pg.mbtiles'); rmSync(out, { force: true }); const s0 = clusterCpuMs(postmaster); const t = await timedCommand('ogr2ogr', [...OGR_MVT, out, `PG:${url}`, ...LAYERS]); return { ...t, cpu: t.cpu + (clusterCpuMs(postmaster) - s0) / MS_PER_S, ...mbtilesSize(out) }; } },
    { name: '@maplibre/geojson-vt + vt-pbf → PMTiles', input: 'GeoPackage', baseline: 'ogr2ogr -f MVT → MBTiles', go: () => timed(() => geojsonVt(gpkg, join(WORK, 'geojson-vt.pmtiles'), bbox)) },
    { name: 'ST_AsMVT → PMTiles', input: 'PostGIS', baseline: 'ogr2ogr -f MVT → MBTiles', go: () => timed(() => stAsMvt(pg, join(WORK, 'st-asmvt.pmtiles'), bbox, columns), { pid: postmaster }) },
  ];
  const runs = candidates.map(() => [] as Run[]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, c] of candidates.entries()) {
      runs[i].push(await c.go());
      console.log(`round ${round + 1}: ${c.name} (${c.input}): ${runs[i][round].seconds.toFixed(2)} s, ${runs[i][round].cpu.toFixed(2)} CPU s`);
    }
  }
  const median = (rs: Run[]) => [...rs].sort((a, b) => a.seconds - b.seconds)[Math.floor(rs.length / 2)];
  const key = (c: (typeof candidates)[number]) => `${c.name}|${c.input}`;
  const byKey = new Map(candidates.map((c, i) => [key(c), runs[i]]));
  const rows = candidates.map((c, i) => {
    const m = median(runs[i]);
    const base = c.baseline ? byKey.get(`${c.baseline}|${c.input}`) : undefined;
    // The ratio within each round (the machine's speed drifts), its median.
    const ratios = base ? runs[i].map((r, k) => r.seconds / base[k].seconds).sort((a, b) => a - b) : [];
    const ratio = ratios.length ? `${ratios[Math.floor(ratios.length / 2)].toFixed(2)}×` : '1.00× (baseline)';
    return `| ${c.name} | ${c.input} | **${Math.round(features / m.seconds).toLocaleString('en')}** | ${m.seconds.toFixed(2)} | ${m.cpu.toFixed(2)} | ${m.tiles} | ${m.bytes.toLocaleString('en')} | ${ratio} |`;
  });

  // What MapLibre draws: the same style over each candidate's tiles, z10–14, compared with GDAL's.
  const styleFile = join(WORK, 'style.json');
  writeFileSync(styleFile, JSON.stringify({
    version: 8,
    sources: { data: { type: 'vector', url: 'mbtiles://{data}' } },
    layers: [
      { id: 'bg', type: 'background', paint: { 'background-color': '#f8f4f0' } },
      { id: 'areas', type: 'fill', source: 'data', 'source-layer': 'multipolygons', paint: { 'fill-color': '#9ccc65', 'fill-outline-color': '#33691e', 'fill-opacity': 0.6 } },
      { id: 'lines', type: 'line', source: 'data', 'source-layer': 'lines', paint: { 'line-color': '#5d4037', 'line-width': 1.2 } },
      { id: 'points', type: 'circle', source: 'data', 'source-layer': 'points', paint: { 'circle-radius': 2.5, 'circle-color': '#c62828' } },
    ],
  }));
  const drawn = { gdal: join(WORK, 'gdal.pmtiles'), geojsonvt: join(WORK, 'geojson-vt.pmtiles'), asmvt: join(WORK, 'st-asmvt.pmtiles') };
  const renderOut = join(WORK, 'render');
  rmSync(renderOut, { recursive: true, force: true });
  const style = (tileset: string) => ({ style: styleFile, tileset, minzoom: 10, maxzoom: MAXZOOM, bbox: RENDER_BBOX, scales: [1], formats: ['png'] });
  const config = parseConfig({ out: renderOut, tilesets: drawn, styles: { gdal: style('gdal'), geojsonvt: style('geojsonvt'), asmvt: style('asmvt') }, render: { metatile: 2 } }, join(WORK, 'config.json'));
  await build(config, { out: renderOut });
  const compared: string[] = [];
  for (const other of ['geojsonvt', 'asmvt'] as const) {
    const cells: string[] = [];
    for (let z = 10; z <= MAXZOOM; z++) {
      const r = tileRangeForBBox(RENDER_BBOX, z);
      let same = 0;
      let n = 0;
      for (let x = r.minX; x <= r.maxX; x++) {
        for (let y = r.minY; y <= r.maxY; y++) {
          const [a, b] = [await renderedTile(renderOut, 'gdal', z, x, y), await renderedTile(renderOut, other, z, x, y)];
          if (!a || !b) continue;
          same += equalShare(await pixels(a), await pixels(b));
          n++;
        }
      }
      cells.push(n ? `${((same / n) * 100).toFixed(1)} %` : '—');
    }
    compared.push(`| ${other === 'geojsonvt' ? '@maplibre/geojson-vt + vt-pbf' : 'ST_AsMVT'} | ${cells.join(' | ')} |`);
  }

  const [cpu] = cpus();
  const load = loadavg().map((l) => l.toFixed(1)).join(' ');
  const table = `| candidate | input | features/s | wall (s) | CPU (s) | tiles | bytes | wall ÷ ogr2ogr alone |
|---|---|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}`;
  const drawTable = `| tiles by | z10 | z11 | z12 | z13 | z14 |
|---|---:|---:|---:|---:|---:|
${compared.join('\n')}`;
  const text = `# bench/own-data (vector) results

${new Date().toISOString().slice(0, 10)}, ${availableParallelism()} cores (${cpu?.model.trim()}), ${Math.round(totalmem() / 1024 ** 3)} GB, load average at the end ${load}.
Input \`${basename(INPUT)}\` through GDAL's OSM driver: ${features.toLocaleString('en')} features (${LAYERS.map((l) => `${counts[l].toLocaleString('en')} ${l}`).join(', ')}), z${MINZOOM}–${MAXZOOM}, as a GeoPackage
and as PostGIS tables (PostgreSQL 15, PostGIS 3.3, on this machine). ${ROUNDS} rounds, the candidates alternated in each; the median
round by wall time. CPU: this process's (GDAL's threads included) or ogr2ogr's, plus the PostgreSQL server's for PostGIS inputs.
ST_AsMVT reads tables kept in Web Mercator with a GiST index (made once before the rounds in ${prepSeconds.toFixed(1)} s, not counted).
The same driver settings everywhere (extent ${MVT_SETTINGS.EXTENT}, buffer ${MVT_SETTINGS.BUFFER}, simplification ${MVT_SETTINGS.SIMPLIFICATION} below z${MAXZOOM}, none at z${MAXZOOM}).

${table}

What MapLibre GL JS draws from each candidate's tiles (tilebake's render stage, one style of fills, lines and circles, 256 px tiles
over central Vaduz): share of pixels equal to the tiles drawn from GDAL's.

${drawTable}
`;
  console.log(`\n${table}\n\n${drawTable}`);
  writeFileSync(join(ROOT, 'bench/own-data/RESULTS-vector.md'), text);
} finally {
  await pg.stop();
}
