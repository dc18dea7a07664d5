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
import Database from 'better-sqlite3';
import { currentVersionDir } from '../../lib/build-version.ts';
import { readManifestOrEmpty } from '../../lib/manifest.ts';
import { openArchiveFile } from '../../lib/pmtiles/index.ts';
import { processStat } from '../../lib/process-tree.ts';
import { tileRangeForBBox, type BBox } from '../../lib/tile-math.ts';
import { build } from '../../pipeline/build.ts';
import { parseConfig } from '../../pipeline/config/index.ts';
import { MVT_SETTINGS } from '../../pipeline/sources/gis.ts';
import { startPostgis, type Postgis } from '../../test/fixtures/postgis.ts';
import { equalShare, pixels } from '../../test/fixtures/styles/pixels.ts';
import { writeResults } from '../results.ts';
import { treeCpuMs } from '../../test/fixtures/measure.ts';
import { LAYERS, MAXZOOM, MINZOOM } from './cut.ts';

process.env.TILEBAKE_QUIET = '1';
const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..', '..');
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, input: { type: 'string' } } });
const ROUNDS = Math.max(1, Number(values.rounds));
const INPUT = resolve(values.input ?? join(ROOT, 'data/liechtenstein/liechtenstein-latest.osm.pbf'));
const WORK = join(ROOT, 'build', 'bench-own-data');
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
  /** Peak RSS of the process (GNU time's maximum resident set size). */
  peakMb: number;
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

/** Run a command under GNU time: wall and CPU seconds (user + system, its children included), peak RSS, stdout. */
async function timedCommand(cmd: string, args: string[]): Promise<{ seconds: number; cpu: number; peakMb: number; stdout: string }> {
  const r = await run('/usr/bin/time', ['-f', 'TIME %e %U %S %M', cmd, ...args], { maxBuffer: 1 << 26 });
  const m = /TIME ([\d.]+) ([\d.]+) ([\d.]+) (\d+)\s*$/.exec(r.stderr);
  if (!m) throw new Error(`${cmd}: no timing in ${r.stderr.slice(-500)}`);
  return { seconds: Number(m[1]), cpu: Number(m[2]) + Number(m[3]), peakMb: Number(m[4]) / 1024, stdout: r.stdout };
}

/** `timedCommand` with the CPU the PostgreSQL cluster `pid` spent meanwhile (its ended backends reaped first). */
async function withServer(pid: number | undefined, f: () => Promise<Omit<Run, 'tiles' | 'bytes'> & { stdout?: string }>): Promise<Omit<Run, 'tiles' | 'bytes'> & { stdout?: string }> {
  const settle = () => new Promise((r) => setTimeout(r, 1000));
  if (pid) await settle();
  const s0 = pid ? clusterCpuMs(pid) : 0;
  const r = await f();
  if (pid) await settle();
  return pid ? { ...r, cpu: r.cpu + (clusterCpuMs(pid) - s0) / MS_PER_S } : r;
}

/** A candidate of cut.ts in its own process. */
async function cut(candidate: string, source: string, out: string, layers?: unknown, pid?: number): Promise<Run> {
  const node = [process.execPath, '--import', 'tsx', join(ROOT, 'bench/own-data/cut.ts'), candidate, source, out, ...(layers ? [JSON.stringify(layers)] : [])];
  const r = await withServer(pid, () => timedCommand(node[0], node.slice(1)));
  return { ...r, ...(JSON.parse(r.stdout!.trim().split('\n').pop()!) as { tiles: number; bytes: number }) };
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

const pg = await startPostgis();
const postmaster = pg.pid;
try {
  await pg.createDatabase(DB);
  for (const l of LAYERS) await pg.load(DB, gpkg, l, l);
  const t0 = performance.now();
  for (const l of LAYERS) {
    await pg.psql(DB, `DROP TABLE IF EXISTS ${l}_3857; CREATE TABLE ${l}_3857 AS SELECT * FROM ${l}; ALTER TABLE ${l}_3857 DROP COLUMN fid; ALTER TABLE ${l}_3857 ALTER COLUMN geom TYPE geometry(Geometry, 3857) USING ST_Transform(geom, 3857); CREATE INDEX ON ${l}_3857 USING gist (geom); ANALYZE ${l}_3857; ALTER TABLE ${l}_3857 OWNER TO tiles`);
  }
  const prepSeconds = (performance.now() - t0) / MS_PER_S;
  const url = pg.url(DB);
  const pgLayers = Object.fromEntries(LAYERS.map((l) => [l, { table: l }]));

  const ogr = async (out: string, input: string[], pid?: number): Promise<Run> => {
    rmSync(out, { force: true });
    const t = await withServer(pid, () => timedCommand('ogr2ogr', [...OGR_MVT, out, ...input]));
    return { ...t, ...mbtilesSize(out) };
  };
  /** geojson-vt reads GeoJSON: GDAL writes it from the GeoPackage first (timed with it), as a build would. */
  const viaGeojson = async (): Promise<Run> => {
    let read = { seconds: 0, cpu: 0, peakMb: 0 };
    for (const l of LAYERS) {
      const file = join(WORK, `${l}.geojson`);
      rmSync(file, { force: true });
      const t = await timedCommand('ogr2ogr', ['-f', 'GeoJSON', '-lco', 'RFC7946=YES', file, gpkg, l]);
      read = { seconds: read.seconds + t.seconds, cpu: read.cpu + t.cpu, peakMb: Math.max(read.peakMb, t.peakMb) };
    }
    const r = await cut('geojson-vt', WORK, join(WORK, 'geojson-vt.pmtiles'));
    return { ...r, seconds: r.seconds + read.seconds, cpu: r.cpu + read.cpu, peakMb: Math.max(r.peakMb, read.peakMb) };
  };
  const candidates: { name: string; input: 'GeoPackage' | 'PostGIS'; baseline?: string; go: () => Promise<Run> }[] = [
    { name: 'tilebake → PMTiles', input: 'GeoPackage', baseline: 'ogr2ogr -f MVT → MBTiles', go: () => cut('tilebake', gpkg, join(WORK, 'gdal.pmtiles')) },
    { name: 'ogr2ogr -f MVT → MBTiles', input: 'GeoPackage', go: () => ogr(join(WORK, 'ogr-gpkg.mbtiles'), [gpkg]) },
    { name: 'tilebake → PMTiles', input: 'PostGIS', baseline: 'ogr2ogr -f MVT → MBTiles', go: () => cut('tilebake', url, join(WORK, 'pg.pmtiles'), pgLayers, postmaster) },
    { name: 'ogr2ogr -f MVT → MBTiles', input: 'PostGIS', go: () => ogr(join(WORK, 'ogr-pg.mbtiles'), [`PG:${url}`, ...LAYERS], postmaster) },
    { name: '@maplibre/geojson-vt + vt-pbf → PMTiles', input: 'GeoPackage', baseline: 'ogr2ogr -f MVT → MBTiles', go: viaGeojson },
    { name: 'ST_AsMVT → PMTiles', input: 'PostGIS', baseline: 'ogr2ogr -f MVT → MBTiles', go: () => cut('st-asmvt', url, join(WORK, 'st-asmvt.pmtiles'), undefined, postmaster) },
  ];
  const runs = candidates.map(() => [] as Run[]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, c] of candidates.entries()) {
      runs[i].push(await c.go());
      console.log(`round ${round + 1}: ${c.name} (${c.input}): ${runs[i][round].seconds.toFixed(2)} s, ${runs[i][round].cpu.toFixed(2)} CPU s, ${Math.round(runs[i][round].peakMb)} MB`);
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
    return `| ${c.name} | ${c.input} | **${Math.round(features / m.seconds).toLocaleString('en')}** | ${m.seconds.toFixed(2)} | ${m.cpu.toFixed(2)} | ${Math.round(m.peakMb)} | ${m.tiles} | ${m.bytes.toLocaleString('en')} | ${ratio} |`;
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
  const table = `| candidate | input | features/s | wall (s) | CPU (s) | peak RSS (MB) | tiles | bytes | wall ÷ ogr2ogr alone |
|---|---|---:|---:|---:|---:|---:|---:|---:|
${rows.join('\n')}`;
  const drawTable = `| tiles by | z10 | z11 | z12 | z13 | z14 |
|---|---:|---:|---:|---:|---:|
${compared.join('\n')}`;
  const text = `# bench/own-data (vector) results

${new Date().toISOString().slice(0, 10)}, ${availableParallelism()} cores (${cpu?.model.trim()}), ${Math.round(totalmem() / 1024 ** 3)} GB, load average at the end ${load}.
Input \`${basename(INPUT)}\` through GDAL's OSM driver: ${features.toLocaleString('en')} features (${LAYERS.map((l) => `${counts[l].toLocaleString('en')} ${l}`).join(', ')}), z${MINZOOM}–${MAXZOOM}, as a GeoPackage
and as PostGIS tables (PostgreSQL 15, PostGIS 3.3, on this machine). ${ROUNDS} rounds, the candidates alternated in each; the median
round by wall time. Each candidate runs in a process of its own (Node's start included, as ogr2ogr's is), timed by GNU time: wall,
CPU (user + system, GDAL's threads included; plus the PostgreSQL server's for PostGIS inputs) and peak RSS of that process (not the
server's). geojson-vt's rows include GDAL writing the GeoJSON it reads. ST_AsMVT reads tables kept in Web Mercator with a GiST index
(made once before the rounds in ${prepSeconds.toFixed(1)} s, not counted).
The same driver settings everywhere (extent ${MVT_SETTINGS.EXTENT}, buffer ${MVT_SETTINGS.BUFFER}, simplification ${MVT_SETTINGS.SIMPLIFICATION} below z${MAXZOOM}, none at z${MAXZOOM}).

${table}

What MapLibre GL JS draws from each candidate's tiles (tilebake's render stage, one style of fills, lines and circles, 256 px tiles
over central Vaduz): share of pixels equal to the tiles drawn from GDAL's.

${drawTable}
`;
  console.log(`\n${table}\n\n${drawTable}`);
  const gpkgRow = candidates.findIndex((c) => c.input === 'GeoPackage' && c.baseline && c.name.startsWith('tilebake'));
  const pgRow = candidates.findIndex((c) => c.input === 'PostGIS' && c.baseline && c.name.startsWith('tilebake'));
  const fps = (i: number) => Math.round(features / median(runs[i]).seconds).toLocaleString('en');
  writeResults(join(ROOT, 'bench/own-data/RESULTS-vector.md'), text, [`- ${new Date().toISOString().slice(0, 10)}, load ${load}: ${fps(gpkgRow)} features/s from a GeoPackage, ${fps(pgRow)} from PostGIS (${features.toLocaleString('en')} features, z${MINZOOM}–${MAXZOOM}).`]);
} finally {
  await pg.stop();
}
