/**
 * `tilebake pack`: a region of a published build as one archive per tileset and per style × scale ×
 * format (PMTiles or MBTiles), with `pack.json` listing them; with `--since` a delta from an older
 * version instead. The archives are planned from the build's directories (static-server/packs/), their
 * tile bytes copied unchanged; all are written in a staging folder and moved into place together with
 * `pack.json` at the end, so a failed run leaves the folder as it was.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { writeFileAtomic } from '../lib/atomic.ts';
import { UserError } from '../lib/errors.ts';
import { sha256File } from '../lib/hash.ts';
import { areaFromGeoJson, areaOfBBox, parseBBox } from '../lib/packs/area.ts';
import { aggTilesHashOfTiles, mbtilesMetadataOf, metadataDiff, writeMbtilesDelta, writeMbtilesPack } from '../lib/packs/mbtiles.ts';
import { planPmtiles, pmtilesBytes, writeChunksAtomic } from '../lib/packs/pmtiles-pack.ts';
import { createProgress, progressQuiet, type Progress } from '../lib/progress.ts';
import { openStore, type StoreOptions } from '../lib/storage.ts';
import type { Area } from '../lib/tile-cover.ts';
import { packWriterOptions, planPack, type PackPlan, type PackRequest } from '../static-server/packs/plan.ts';
import { packFileName, selectPackSources, type PackSelection, type PackSource } from '../static-server/packs/sources.ts';
import { localIndexFile } from '../static-server/search/local-file.ts';
import { cutIndex, writeDelta } from '../lib/search/cut.ts';
import type { BBox } from '../lib/tile-math.ts';
import { openBuildVersion, type BuildToExport } from './build-source.ts';
import { formatBytes } from './index.ts';

/** The list of a pack folder. */
export const PACK_JSON = 'pack.json';
/** Format tag of pack.json. */
const PACK_FORMAT = 'tilebake-pack/1';
/** Staging folder inside the pack folder while a pack is written. */
const STAGING_PREFIX = '.pack-staging-';

/** Options of `tilebake pack`. */
export interface PackOptions extends PackSelection {
  /** The build (folder, http(s):// base URL or s3://…). */
  out: string;
  /** The pack folder. */
  to: string;
  bbox?: string;
  geojson?: string;
  minzoom?: number;
  maxzoom?: number;
  format: 'pmtiles' | 'mbtiles';
  since?: string;
  build?: string;
  dryRun?: boolean;
  store?: StoreOptions;
  /** Also the search index of each tileset packed, cut to the area's box (its delta with `since`). */
  search?: boolean;
  /** Folder of local copies of indexes read from object storage (static-server/search/local-file.ts). */
  searchCache?: string;
}

/** One archive of a pack, as pack.json lists it. */
export interface PackArchiveEntry {
  file: string;
  /** The archive's pack name: the tileset id, or `styles/{style}[@2x].{format}`. */
  source: string;
  tiles: number;
  bytes: number;
  sha256: string;
  minzoom: number;
  maxzoom: number;
  bounds: [number, number, number, number];
  /** Deltas: tiles of the newer version that changed (those the archive holds) and the ones removed (`z/x/y`). */
  changed?: number;
  removed?: string[];
}

/** A tileset's search index in a pack (lib/search/cut.ts), as pack.json lists it. */
export interface PackSearchEntry {
  file: string;
  tileset: string;
  entries: number;
  bytes: number;
  sha256: string;
  /** Deltas: entries added or changed, and removed. */
  changed?: number;
  removed?: number;
}

/** pack.json. */
export interface PackJson {
  format: typeof PACK_FORMAT;
  build: string | null;
  since?: string;
  container: 'pmtiles' | 'mbtiles';
  area: { bbox: [number, number, number, number]; geojson?: string };
  archives: PackArchiveEntry[];
  /** With `--search`. */
  search?: PackSearchEntry[];
}

/** What `--dry-run` reports of one archive. */
export interface PackEstimate {
  file: string;
  tiles: number;
  bytes: number;
  /** True when `bytes` is exact (PMTiles: laid out before it is written). */
  exact: boolean;
  changed?: number;
  removed?: number;
}

/** What a pack run did. */
export interface PackResult {
  json?: PackJson;
  estimates: PackEstimate[];
  tiles: number;
  seconds: number;
}

/** Check a zoom flag. */
function zoomOption(v: number | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isInteger(v) || v < 0 || v > 26) throw new UserError(`${flag}: expected a whole zoom 0–26 (got ${v})`, { exitCode: 2 });
  return v;
}

/** The area of the options: `--bbox` or `--geojson` (one of them). */
async function areaOf(o: PackOptions): Promise<{ area: Area; geojson?: string }> {
  if ((o.bbox === undefined) === (o.geojson === undefined)) throw new UserError('pack: give the area as --bbox w,s,e,n or --geojson FILE (one of them)', { exitCode: 2 });
  if (o.bbox !== undefined) return { area: areaOfBBox(parseBBox(o.bbox, '--bbox')) };
  const file = resolve(o.geojson!);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new UserError(`--geojson ${o.geojson}: cannot read (${(e as NodeJS.ErrnoException).code ?? String(e)})`, { exitCode: 2 });
  }
  return { area: areaFromGeoJson(text, `--geojson ${o.geojson}`), geojson: basename(file) };
}

/** Pass chunks on, counting them into `progress` (kB) and `hash`. */
async function* watched(chunks: AsyncIterable<Uint8Array>, progress: Progress, hash: ReturnType<typeof createHash>): AsyncGenerator<Uint8Array> {
  let pending = 0;
  for await (const c of chunks) {
    hash.update(c);
    pending += c.length;
    if (pending >= 1024) {
      progress.tick(Math.floor(pending / 1024));
      pending %= 1024;
    }
    yield c;
  }
}

/** Write one planned archive into `dir`; returns its pack.json entry. */
async function writeArchive(plan: PackPlan, dir: string, container: 'pmtiles' | 'mbtiles'): Promise<PackArchiveEntry> {
  const file = packFileName(plan.source, container);
  const path = join(dir, file);
  let sha256: string;
  if (container === 'pmtiles') {
    const layout = planPmtiles(plan.content, packWriterOptions(plan));
    const progress = createProgress(`pack ${file}`, Math.ceil(layout.result.bytes / 1024), 'kB');
    const hash = createHash('sha256');
    await writeChunksAtomic(path, watched(pmtilesBytes(layout, plan.reader), progress, hash));
    progress.done();
    sha256 = hash.digest('hex');
  } else {
    const progress = createProgress(`pack ${file}`, plan.content.tiles, 'tiles');
    const meta = mbtilesMetadataOf(plan.metadata);
    if (plan.delta) {
      const d = plan.delta;
      const before = await aggTilesHashOfTiles(d.olderReader, d.older);
      const after = await aggTilesHashOfTiles(plan.reader, plan.tiles);
      await writeMbtilesDelta(path, plan.reader, d, metadataDiff(mbtilesMetadataOf(d.olderMetadata), meta), before, after);
    } else {
      await writeMbtilesPack(path, plan.reader, plan.tiles, meta);
    }
    progress.tick(plan.content.tiles);
    progress.done();
    sha256 = await sha256File(path);
  }
  const x = plan.extent;
  return {
    file,
    source: plan.source.name,
    tiles: plan.content.tiles,
    bytes: (await stat(path)).size,
    sha256,
    minzoom: x.minzoom,
    maxzoom: x.maxzoom,
    bounds: x.bounds,
    ...(plan.delta ? { changed: plan.delta.tiles, removed: (plan.archiveMetadata().tilebake_delta as { removed: string[] }).removed } : {}),
  };
}

/** pack.json of written archives. */
export function packJson(build: string | undefined, since: string | undefined, container: PackJson['container'], area: PackJson['area'], archives: PackArchiveEntry[], search?: PackSearchEntry[]): PackJson {
  return { format: PACK_FORMAT, build: build ?? null, ...(since !== undefined ? { since } : {}), container, area, archives, ...(search ? { search } : {}) };
}

/** The file of tileset `id`'s search index in a pack. */
export function searchPackFile(id: string): string {
  return `${id}.search.sqlite`;
}

/** Write the search index (or its delta since `older`) of each tileset of `sources` cut to `box` into `dir`. */
async function writeSearchIndexes(version: BuildToExport, older: BuildToExport | undefined, sources: readonly PackSource[], box: BBox, dir: string, cache?: string): Promise<PackSearchEntry[]> {
  const tilesets = sources.filter((s) => s.kind === 'tileset');
  if (tilesets.length === 0) throw new UserError('--search: no tileset is packed (the index belongs to a tileset: name it with --tilesets, or leave --styles alone)', { exitCode: 2 });
  const out: PackSearchEntry[] = [];
  for (const s of tilesets) {
    const entry = version.manifest.tilesets[s.id].search;
    if (!entry) throw new UserError(`--search: tileset ${s.id} of build ${version.id ?? '(legacy)'} has no search index (docs/search.md)`, { exitCode: 2 });
    const file = searchPackFile(s.id);
    const path = join(dir, file);
    const index = await localIndexFile(version.store, entry, cache);
    const prev = older?.manifest.tilesets[s.id]?.search;
    if (older && !prev) throw new UserError(`--since ${older.id}: tileset ${s.id} had no search index in that build: pack it whole`, { exitCode: 2 });
    let counts: Pick<PackSearchEntry, 'entries' | 'changed' | 'removed'>;
    if (older && prev) {
      const d = writeDelta(await localIndexFile(older.store, prev, cache), index, box, older.id!, path);
      counts = { entries: d.changed, changed: d.changed, removed: d.removed };
    } else {
      counts = { entries: cutIndex(index, path, box) };
    }
    out.push({ file, tileset: s.id, ...counts, bytes: (await stat(path)).size, sha256: await sha256File(path) });
  }
  return out;
}

/** Run `tilebake pack`. */
export async function pack(o: PackOptions): Promise<PackResult> {
  const started = performance.now();
  const { area, geojson } = await areaOf(o);
  const minzoom = zoomOption(o.minzoom, '--minzoom');
  const maxzoom = zoomOption(o.maxzoom, '--maxzoom');
  if (minzoom !== undefined && maxzoom !== undefined && minzoom > maxzoom) throw new UserError(`--minzoom ${minzoom} is above --maxzoom ${maxzoom}`, { exitCode: 2 });
  for (const s of o.scales ?? []) if (s !== 1 && s !== 2) throw new UserError(`--scales: expected 1 and/or 2 (got ${s})`, { exitCode: 2 });
  const root = openStore(o.out, o.store);
  const version = await openBuildVersion(root, o.build, '--build');
  const older = o.since !== undefined ? await openBuildVersion(root, o.since, '--since') : undefined;
  if (older && older.id === version.id) throw new UserError(`--since ${o.since}: that is the build being packed (${version.id}); a delta needs an older one`, { exitCode: 2 });
  const { sources, problem } = selectPackSources(version.manifest, o);
  if (problem) throw new UserError(`pack: ${problem}`, { exitCode: 2 });
  const req: PackRequest = { area, minzoom, maxzoom, names: { area: geojson ? '--geojson' : '--bbox', minzoom: '--minzoom', maxzoom: '--maxzoom', since: '--since' } };
  const v = { store: version.store, manifest: version.manifest, build: version.id };
  const ov = older && { store: older.store, manifest: older.manifest, build: older.id };
  const to = resolve(o.to);
  const staging = join(to, `${STAGING_PREFIX}${process.pid}`);
  const estimates: PackEstimate[] = [];
  const entries: PackArchiveEntry[] = [];
  let tiles = 0;
  if (!o.dryRun) {
    await mkdir(staging, { recursive: true });
  }
  try {
    for (const source of sources) {
      const plan = await planPack(v, source, req, ov);
      try {
        tiles += plan.content.tiles;
        const file = packFileName(source, o.format);
        if (plan.tiles.tiles === 0 && !progressQuiet()) process.stderr.write(`tilebake pack: warning: ${source.name} has no tiles in the area at zooms ${plan.extent.minzoom}–${plan.extent.maxzoom}\n`);
        if (o.dryRun) {
          const pm = o.format === 'pmtiles';
          estimates.push({
            file,
            tiles: plan.content.tiles,
            bytes: pm ? planPmtiles(plan.content, packWriterOptions(plan)).result.bytes : plan.content.bytes,
            exact: pm,
            ...(plan.delta ? { changed: plan.delta.tiles, removed: plan.delta.removedTiles } : {}),
          });
        } else {
          entries.push(await writeArchive(plan, staging, o.format));
        }
      } finally {
        await plan.close();
      }
    }
    if (o.dryRun) return { estimates, tiles, seconds: (performance.now() - started) / 1000 };
    const search = o.search ? await writeSearchIndexes(version, older, sources, area.bbox, staging, o.searchCache) : undefined;
    const json = packJson(version.id, older?.id, o.format, { bbox: area.bbox, ...(geojson ? { geojson } : {}) }, entries, search);
    for (const e of [...entries, ...(search ?? [])]) await rename(join(staging, e.file), join(to, e.file));
    await writeFileAtomic(join(to, PACK_JSON), `${JSON.stringify(json, null, 2)}\n`);
    return { json, estimates, tiles, seconds: (performance.now() - started) / 1000 };
  } finally {
    if (!o.dryRun) await rm(staging, { recursive: true, force: true });
  }
}

/** The `--dry-run` table: one line per archive. */
export function estimateTable(r: PackResult): string {
  const lines = r.estimates.map((e) => `${e.file}\t${e.tiles} tiles\t${e.exact ? '' : '≈'}${formatBytes(e.bytes)}${e.changed !== undefined ? `\t(${e.changed} changed, ${e.removed} removed)` : ''}`);
  return `${lines.join('\n')}\n`;
}

/** The summary printed after a pack. */
export function packSummary(r: PackResult, to: string): string {
  const j = r.json!;
  const bytes = j.archives.reduce((n, a) => n + a.bytes, 0);
  const what = j.since !== undefined ? `delta of build ${j.build} since ${j.since}` : `pack of build ${j.build ?? '(legacy)'}`;
  const search = j.search?.length ? `, search index of ${j.search.map((x) => `${x.tileset} (${x.entries} entries)`).join(', ')}` : '';
  return `${what}: ${j.archives.length} archive(s), ${r.tiles} tiles${search}, ${formatBytes(bytes + (j.search ?? []).reduce((n, x) => n + x.bytes, 0))} in ${to} in ${r.seconds.toFixed(1)} s (${Math.round(r.tiles / Math.max(r.seconds, 1e-3))} tiles/s)\n`;
}
