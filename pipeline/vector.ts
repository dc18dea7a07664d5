import { rmdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { basename, dirname, join, resolve } from 'node:path';
import { UserError } from '../lib/errors.ts';
import type { BBox } from '../lib/tile-math.ts';
import { readManifestOrEmpty, setOsmState, updateManifest, type TilesetEntry, type TileFormat } from '../lib/manifest.ts';
import { PMTilesWriter } from '../lib/pmtiles/index.ts';
import { centerInBounds } from '../lib/tile-math.ts';
import type { BuildConfig } from './config/index.ts';
import { createProgress, logLine } from './progress.ts';
import { tileTypeOf, type SourceMetadata, type SourcePhase, type TileSource } from './sources/common.ts';
import { openTileSource } from './sources/index.ts';
import { osmDataState } from './osm/pbf-header.ts';
import { hashInputs, linkFile, readDeps, recordDeps } from './reuse.ts';

const MS_PER_S = 1000;

/** Overrides of the input's own metadata. */
export interface PackOptions {
  name?: string;
  attribution?: string;
  description?: string;
  /** Label of the progress bar (default: the output file). */
  label?: string;
  /** For an .osm.pbf input: clip to `[w, s, e, n]` first; `bboxField` names where it was configured. */
  bbox?: BBox;
  bboxField?: string;
  /** For an .osm.pbf input: the work folder of the generator (default: `.work/osm-<output name>` beside the output). */
  workDir?: string;
}

/** What `packVectorTiles` wrote. */
export interface PackResult {
  output: string;
  format: TileFormat;
  /** Metadata as written into the archive (after overrides). */
  metadata: SourceMetadata;
  /** Addressed tiles, directory entries and distinct tile contents in the archive. */
  tiles: number;
  tileEntries: number;
  tileContents: number;
  /** Archive size in bytes. */
  bytes: number;
  /** Wall time of each step: the source's own (an OSM extract: clip, sea, tilemaker), then `pack`. */
  phases: SourcePhase[];
}

/** The archive metadata JSON for a source: its extra keys, then the normalised TileJSON fields. */
export function archiveMetadata(m: SourceMetadata, format: TileFormat): Record<string, unknown> {
  const out: Record<string, unknown> = { ...m.extra };
  const set = (k: string, v: unknown) => {
    if (v !== undefined) out[k] = v;
  };
  set('name', m.name);
  set('attribution', m.attribution);
  set('description', m.description);
  set('version', m.version);
  out.format = format;
  out.type = m.extra.type ?? (format === 'pbf' ? 'overlay' : 'baselayer');
  out.bounds = m.bounds;
  out.center = m.center;
  out.minzoom = m.minzoom;
  out.maxzoom = m.maxzoom;
  if (format === 'pbf') out.vector_layers = m.vector_layers ?? [];
  return out;
}

/** Pack an opened source into a PMTiles archive at `output` (temp file + rename; nothing left on failure). */
export async function packSource(source: TileSource, output: string, opts: PackOptions = {}): Promise<PackResult> {
  if (resolve(source.path) === resolve(output)) {
    throw new UserError(`${output}: the output would overwrite the input (choose another output path)`);
  }
  const m = source.metadata;
  const metadata: SourceMetadata = {
    ...m,
    name: opts.name ?? m.name,
    attribution: opts.attribution ?? m.attribution,
    description: opts.description ?? m.description,
    // TileJSON 3.0.0: the center lies inside the bounds (MBTiles often carry one that does not).
    center: centerInBounds(m.bounds, m.center, m.minzoom, m.maxzoom),
  };
  const writer = await PMTilesWriter.create(output, {
    tileType: tileTypeOf(source.format),
    tileCompression: source.compression,
    metadata: archiveMetadata(metadata, source.format),
    bounds: metadata.bounds,
    center: metadata.center,
  });
  const started = performance.now();
  const progress = createProgress(opts.label ?? `vector ${basename(output)}`, source.count);
  try {
    let added = 0;
    for await (const t of source.tiles()) {
      // A zero-length blob is "no tile" (some MBTiles store empty tiles that way).
      if (t.data.length === 0) continue;
      await writer.addTile(t.z, t.x, t.y, t.data);
      progress.tick();
      added++;
    }
    if (added === 0) throw new UserError(`${source.path}: no tiles to pack`);
    progress.setTotal(added);
    const r = await writer.finish();
    progress.done();
    logLine(`${output}: ${r.addressedTiles} tiles (${r.tileEntries} entries, ${r.tileContents} distinct), z${r.minZoom}-${r.maxZoom}, ${r.bytes} bytes`);
    return {
      output,
      format: source.format,
      metadata,
      tiles: r.addressedTiles,
      tileEntries: r.tileEntries,
      tileContents: r.tileContents,
      bytes: r.bytes,
      phases: [...(source.phases ?? []), { name: 'pack', seconds: (performance.now() - started) / MS_PER_S }],
    };
  } catch (e) {
    await writer.abort();
    if (e instanceof Error && e.name === 'DuplicateTileError') {
      throw new UserError(`${source.path}: ${e.message.replace(/^PMTiles writer: /, '')} (the input holds the same tile twice)`, { cause: e });
    }
    throw e;
  } finally {
    progress.done();
  }
}

/** Remove the folders between an OSM work folder and its `.work` ancestor (inclusive) that are empty (other stages may use them). */
async function removeEmptyWorkParents(workDir: string): Promise<void> {
  const between: string[] = [];
  for (let dir = dirname(workDir); dir !== dirname(dir); dir = dirname(dir)) {
    between.push(dir);
    if (basename(dir) === '.work') {
      for (const d of between) await rmdir(d).catch(() => undefined);
      return;
    }
  }
}

/**
 * `tilebake vector IN OUT.pmtiles`: pack MBTiles, PMTiles or a z/x/y folder into a PMTiles v3 archive,
 * or generate OpenMapTiles-schema tiles from an OpenStreetMap extract and pack those.
 */
export async function packVectorTiles(input: string, output: string, opts: PackOptions = {}): Promise<PackResult> {
  const workDir = opts.workDir ?? join(dirname(resolve(output)), '.work', `osm-${basename(output)}`);
  try {
    const source = await openTileSource(input, {
      osm: { bbox: opts.bbox, bboxField: opts.bboxField, workDir, label: opts.label ?? `vector ${basename(output)}` },
    });
    try {
      return await packSource(source, output, opts);
    } finally {
      await source.close();
    }
  } finally {
    await removeEmptyWorkParents(workDir);
  }
}

/** The manifest entry of a packed vector tileset, relative to the output folder. */
export function tilesetEntry(id: string, r: PackResult): TilesetEntry {
  const m = r.metadata;
  return {
    archive: `data/${id}.pmtiles`,
    kind: 'vector',
    format: r.format,
    name: m.name,
    attribution: m.attribution,
    description: m.description,
    minzoom: m.minzoom,
    maxzoom: m.maxzoom,
    bounds: m.bounds,
    center: m.center,
    vector_layers: r.format === 'pbf' ? (m.vector_layers ?? []) : undefined,
    tiles: r.tiles,
    bytes: r.bytes,
  };
}

/** Summary of a vector stage run. */
export interface VectorStageResult {
  tilesets: number;
  tiles: number;
  bytes: number;
}

/** Version of how a source becomes an archive; bump when packing changes, so archives are packed again. */
const PACK_VERSION = 'tilebake-vector/1';
/** The OpenMapTiles profile tilemaker runs for .osm.pbf sources (part of their fingerprint). */
const OSM_PROFILE = [fileURLToPath(new URL('./osm/openmaptiles.json', import.meta.url)), fileURLToPath(new URL('./osm/openmaptiles.lua', import.meta.url))];

/** A fingerprint of everything a tileset archive is made from: the source's bytes, the options, the packer. */
async function tilesetFingerprint(t: BuildConfig['tilesets'][string]): Promise<string> {
  const osm = /\.osm\.pbf$/i.test(t.source);
  const files = await hashInputs([t.source, ...(osm ? OSM_PROFILE : [])]);
  return `${PACK_VERSION}:${files}:${JSON.stringify([t.name, t.attribution, t.description, t.bbox])}`;
}

/** Options of the vector stage in a build. */
export interface VectorStageOptions {
  /** The previous version's folder: tilesets whose source and options did not change are linked from it. */
  previous?: string;
  /** Work folder (OSM intermediates); default `<outDir>/.work`. */
  workDir?: string;
}

/**
 * Build stage: write `<out>/data/<id>.pmtiles` for every configured tileset and record each in the
 * manifest. A tileset whose fingerprint (source bytes, options) equals the previous version's is not
 * packed again: its archive is linked from that version.
 */
export async function runVectorStage(config: BuildConfig, outDir: string, opts: VectorStageOptions = {}): Promise<VectorStageResult> {
  const result: VectorStageResult = { tilesets: 0, tiles: 0, bytes: 0 };
  const prevDeps = await readDeps(opts.previous);
  const prevManifest = opts.previous ? await readManifestOrEmpty(opts.previous) : undefined;
  for (const t of Object.values(config.tilesets)) {
    const output = join(outDir, 'data', `${t.id}.pmtiles`);
    const fingerprint = await tilesetFingerprint(t);
    const prevEntry = prevManifest?.tilesets[t.id];
    if (opts.previous && prevEntry?.kind === 'vector' && prevDeps[`vector:${t.id}`] === fingerprint) {
      await linkFile(join(opts.previous, prevEntry.archive), join(outDir, prevEntry.archive));
      await updateManifest(outDir, (m) => {
        m.tilesets[t.id] = prevEntry;
        setOsmState(m, t.id, prevManifest?.osm?.[t.id]);
      });
      await recordDeps(outDir, { [`vector:${t.id}`]: fingerprint });
      logLine(`vector ${t.id}: source unchanged, archive reused from the previous build`);
      result.tilesets++;
      result.tiles += prevEntry.tiles;
      result.bytes += prevEntry.bytes;
      continue;
    }
    const r = await packVectorTiles(t.source, output, {
      name: t.name,
      attribution: t.attribution,
      description: t.description,
      label: `vector ${t.id}`,
      bbox: t.bbox,
      bboxField: `${config.file}: $.tilesets.${t.id}.bbox`,
      workDir: join(opts.workDir ?? join(outDir, '.work'), 'osm', t.id),
    });
    const osm = await osmDataState(t.source, t.replication);
    await updateManifest(outDir, (m) => {
      m.tilesets[t.id] = tilesetEntry(t.id, r);
      setOsmState(m, t.id, osm);
    });
    await recordDeps(outDir, { [`vector:${t.id}`]: fingerprint });
    result.tilesets++;
    result.tiles += r.tiles;
    result.bytes += r.bytes;
  }
  // Vector tilesets no longer in the config disappear from the manifest (the elevation stage's stay).
  await updateManifest(outDir, (m) => {
    const elevation = new Set(m.elevation?.tilesets ?? []);
    for (const [id, e] of Object.entries(m.tilesets)) if (e.kind === 'vector' && !config.tilesets[id] && !elevation.has(id)) delete m.tilesets[id];
  });
  return result;
}
