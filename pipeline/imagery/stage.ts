/**
 * Imagery stage: every tileset whose tiles are images. A source GDAL opens as an image (GeoTIFF, COG,
 * VRT, any raster format, or a glob of them) is warped to Web Mercator tile by tile (warp.ts, a lane
 * per core) into `data/<id>.pmtiles` (256 px) and `data/<id>@2x.pmtiles` (512 px,
 * the zooms the images are fine enough for); an MBTiles, PMTiles or folder of PNG, JPEG or WebP tiles
 * is packed as it is. Both are recorded as `kind: 'raster'` tilesets (lib/manifest.ts). A tileset whose
 * source files and settings are unchanged links the previous version's archives; a killed build
 * resumes from its journals (pipeline/elevation/tiles.ts runTileJob).
 */
import { dirname, join } from 'node:path';
import sharp from 'sharp';
import { availableCpus } from '../../lib/cpus.ts';
import { isUserError, UserError } from '../../lib/errors.ts';
import { RASTER_TILE_SIZE, readManifestOrEmpty, updateManifest, type Manifest, type TilesetEntry } from '../../lib/manifest.ts';
import { Compression, openArchiveFile, TileType } from '../../lib/pmtiles/index.ts';
import { logLine } from '../../lib/progress.ts';
import type { EncoderSettings } from '../../lib/raster-encode.ts';
import { centerInBounds, tileRangeForBBox } from '../../lib/tile-math.ts';
import { IMAGERY_FIELDS, jsonPath, type BuildConfig, type TilesetConfig } from '../config/index.ts';
import { runTileJob } from '../elevation/tiles.ts';
import { hashInputs, linkFile, readDeps, recordDeps } from '../reuse.ts';
import { openTileSource, tilesetSourceKind } from '../sources/index.ts';
import { packSource, tilesetEntry } from '../vector/stage.ts';
import { openImagery, type ImagerySource } from './sources.ts';
import { TileWarper, type TileExtent, type WarpedTile, type WarpTask } from './warp.ts';

/** Bumped when the same images and settings would give other tiles. */
const IMAGERY_VERSION = 'tilebake-imagery/1';
/** Version of how a raster tile archive is packed. */
const RASTER_PACK_VERSION = 'tilebake-raster-pack/1';
/** Archive metadata key recording an imagery archive's fingerprint. */
export const IMAGERY_METADATA_KEY = 'tilebake:imagery';
/** Work files of the stage (VRTs, journals), under the build's work folder. */
const WORK_SUBDIR = 'imagery';
/** The vector-only fields, refused on imagery and raster tile sources. */
const VECTOR_FIELDS = ['bbox', 'world_maxzoom', 'replication', 'languages', 'layers'] as const;

/** Options of the stage. */
export interface ImageryStageOptions {
  /** The previous version's folder: tilesets whose inputs and settings did not change are linked from it. */
  previous?: string;
  /** The build's work folder (`<out>/.work`). */
  workDir: string;
  /** Warping lanes (default: one per core). */
  threads?: number;
  /** Only these tilesets' ids (default: every imagery and raster tileset). */
  only?: (id: string) => boolean;
  /** One shard of a distributed run: only the batches of this shard, into partial archives (pipeline/run/). */
  shard?: { index: number; count: number };
  /**
   * A distributed run's plan: these tilesets are recorded (their manifest entry without tile counts,
   * their fingerprint) but not warped: the shards warp them, publish merges them (pipeline/run/).
   */
  planOnly?: (id: string) => boolean;
}

/** What the stage did, per tileset. */
export interface ImageryStageResult {
  tilesets: string[];
  tiles: number;
}

/** The settings that decide an imagery tileset's tiles (its fingerprint, with the inputs' bytes). */
export interface ImagerySettings {
  format: 'png' | 'jpg' | 'webp';
  minzoom: number;
  maxzoom: number;
  /** Deepest @2x zoom, undefined when no @2x tiles are baked. */
  hidpiMaxzoom?: number;
  resampling: string;
  nodata?: number;
  encoders: EncoderSettings;
}

/** The tileset's settings from its config and what its images are. */
export function imagerySettings(config: BuildConfig, t: TilesetConfig, src: Pick<ImagerySource, 'nativeZoom'>): ImagerySettings {
  const minzoom = t.minzoom ?? 0;
  const maxzoom = t.maxzoom ?? Math.max(minzoom, src.nativeZoom);
  // @2x pixels at zoom z are the pixels of zoom z + 1: baked where those are not finer than the images.
  const hidpiMax = Math.min(maxzoom, src.nativeZoom - 1);
  const scales = t.scales ?? [1, 2];
  const { png, jpeg, webp } = config.render;
  return {
    format: t.format ?? 'png', minzoom, maxzoom,
    hidpiMaxzoom: scales.includes(2) && hidpiMax >= minzoom ? hidpiMax : undefined,
    resampling: t.resampling === 'nearest' ? 'near' : (t.resampling ?? 'bilinear'),
    nodata: t.nodata, encoders: { png, jpeg, webp },
  };
}

/** Refuse the fields that do not apply to this kind of source, naming the first. */
function checkFields(config: BuildConfig, t: TilesetConfig, kind: 'raster' | 'imagery'): void {
  const wrong = kind === 'imagery' ? VECTOR_FIELDS.find((f) => t[f] !== undefined) ?? (t.encodings.includes('mlt') ? 'encodings' : undefined) : IMAGERY_FIELDS.find((f) => t[f] !== undefined);
  if (!wrong) return;
  const why = kind === 'imagery' ? `applies to vector tilesets only (${t.source} is imagery, warped into raster tiles)` : `applies to imagery only (GeoTIFF, VRT, …: ${t.source} holds raster tiles, packed as they are)`;
  throw new UserError(`${config.file}: invalid config\n  ${jsonPath(['tilesets', t.id, wrong])}: ${why}`, { exitCode: 2 });
}

/** The raster tilesets this stage writes (not the elevation stage's). */
export function imageryTilesetIds(m: Manifest): string[] {
  const elevation = new Set(m.elevation?.tilesets ?? []);
  return Object.keys(m.tilesets).filter((id) => m.tilesets[id].kind === 'raster' && !elevation.has(id));
}

/** Pixels per side of a raster archive's tiles, from its first tile. */
async function tileSizeOf(archive: string): Promise<number> {
  const reader = await openArchiveFile(archive);
  try {
    for await (const e of reader.entries()) {
      const bytes = e.length > 0 ? await reader.getTile(e.z, e.x, e.y) : undefined;
      if (bytes) return (await sharp(bytes).metadata()).width ?? RASTER_TILE_SIZE;
    }
    return RASTER_TILE_SIZE;
  } finally {
    await reader.close();
  }
}

/** The tile range of zoom `z` over `bounds` (what one warped VRT covers). */
function extentAt(bounds: ImagerySource['bounds'], z: number): TileExtent {
  const r = tileRangeForBBox(bounds, z);
  return { z, x0: r.minX, y0: r.minY, x1: r.maxX, y1: r.maxY };
}

/**
 * `build` stage: write every imagery and raster tileset of the config and record it in the manifest;
 * raster tilesets no longer configured leave it (the elevation stage's stay).
 */
export async function runImageryStage(config: BuildConfig, outDir: string, opts: ImageryStageOptions): Promise<ImageryStageResult> {
  const result: ImageryStageResult = { tilesets: [], tiles: 0 };
  const prevDeps = await readDeps(opts.previous);
  const prevManifest = opts.previous ? await readManifestOrEmpty(opts.previous) : undefined;
  const threads = opts.threads ?? availableCpus();
  let warper: TileWarper | undefined;
  const kept = new Set<string>();
  try {
    for (const t of Object.values(config.tilesets)) {
      // Before classifying: a shard's config names sources it does not have (the vector tilesets).
      if (opts.only && !opts.only(t.id)) continue;
      const kind = await tilesetSourceKind(t.source);
      if (kind === 'vector') continue;
      kept.add(t.id);
      checkFields(config, t, kind);
      const prevEntry = prevManifest?.tilesets[t.id]?.kind === 'raster' ? prevManifest.tilesets[t.id] : undefined;
      const workDir = join(opts.workDir, WORK_SUBDIR, t.id);
      const src = kind === 'imagery' ? await openImagery(t.id, t.source, workDir) : undefined;
      const settings = src && imagerySettings(config, t, src);
      const described = JSON.stringify([t.name, t.attribution, t.description, settings]);
      const fingerprint = src
        ? `${IMAGERY_VERSION}:${await hashInputs(src.inputs, dirname(src.files[0]))}:${described}`
        : `${RASTER_PACK_VERSION}:${await hashInputs([t.source], t.source)}:${described}`;
      const depsKey = `imagery:${t.id}`;
      if (!opts.shard && opts.previous && prevEntry && prevDeps[depsKey] === fingerprint) {
        for (const a of [prevEntry.archive, ...(prevEntry.hidpi ? [prevEntry.hidpi.archive] : [])]) await linkFile(join(opts.previous, a), join(outDir, a));
        await updateManifest(outDir, (m) => void (m.tilesets[t.id] = prevEntry));
        await recordDeps(outDir, { [depsKey]: fingerprint });
        logLine(`imagery ${t.id}: source and settings unchanged, archives reused from the previous build`);
        result.tilesets.push(t.id);
        result.tiles += prevEntry.tiles + (prevEntry.hidpi?.tiles ?? 0);
        continue;
      }
      let entry: TilesetEntry;
      if (src && settings && opts.planOnly?.(t.id)) {
        entry = imageryEntry(t, src, settings);
        logLine(`imagery ${t.id}: warped by the shards of the run`);
      } else if (src && settings) {
        warper ??= await TileWarper.create(threads);
        const w = warper;
        entry = await warpTileset(t, src, settings, { outDir, workDir, fingerprint, threads, shard: opts.shard, run: (task) => w.run(task) });
      } else {
        entry = await packRasterTiles(t, outDir);
      }
      await updateManifest(outDir, (m) => void (m.tilesets[t.id] = entry));
      await recordDeps(outDir, { [depsKey]: fingerprint });
      result.tilesets.push(t.id);
      result.tiles += entry.tiles + (entry.hidpi?.tiles ?? 0);
    }
  } finally {
    warper?.close();
  }
  if (!opts.only) {
    await updateManifest(outDir, (m) => {
      for (const id of imageryTilesetIds(m)) if (!kept.has(id)) delete m.tilesets[id];
    });
  }
  return result;
}

/** An MBTiles, PMTiles or folder of PNG, JPEG or WebP tiles, packed as it is. */
async function packRasterTiles(t: TilesetConfig, outDir: string): Promise<TilesetEntry> {
  const archive = `data/${t.id}.pmtiles`;
  const source = await openTileSource(t.source);
  try {
    const r = await packSource(source, join(outDir, archive), { name: t.name, attribution: t.attribution, description: t.description, label: `imagery ${t.id}` });
    const { vector_layers: _none, ...entry } = tilesetEntry(t.id, r);
    return { ...entry, kind: 'raster', tileSize: await tileSizeOf(join(outDir, archive)) };
  } finally {
    await source.close();
  }
}

/** What warping one tileset needs besides its source and settings. */
interface WarpContext {
  outDir: string;
  workDir: string;
  fingerprint: string;
  threads: number;
  shard?: { index: number; count: number };
  run: (task: WarpTask) => Promise<WarpedTile[]>;
}

/** The archive names of tileset `id` (1x and @2x), relative to the output folder. */
export function imageryArchives(id: string): { 1: string; 2: string } {
  return { 1: `data/${id}.pmtiles`, 2: `data/${id}@2x.pmtiles` };
}

/** The manifest entry of an imagery tileset, its tile counts and sizes 0 (those of its archives once written). */
function imageryEntry(t: TilesetConfig, src: ImagerySource, s: ImagerySettings): TilesetEntry {
  const bounds = src.bounds;
  const center = centerInBounds(bounds, [(bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2, NaN], s.minzoom, s.maxzoom);
  const archives = imageryArchives(t.id);
  return {
    archive: archives[1], kind: 'raster', format: s.format, tileSize: RASTER_TILE_SIZE,
    name: t.name ?? t.id, attribution: t.attribution, description: t.description,
    minzoom: s.minzoom, maxzoom: s.maxzoom, bounds, center, tiles: 0, bytes: 0,
    ...(s.hidpiMaxzoom !== undefined ? { hidpi: { archive: archives[2], maxzoom: s.hidpiMaxzoom, tiles: 0, bytes: 0 } } : {}),
  };
}

/** The fingerprint an imagery archive records (IMAGERY_METADATA_KEY) for its tileset's fingerprint and scale. */
export function archiveFingerprint(fingerprint: string, scale: 1 | 2): string {
  return `${fingerprint}:${scale}x`;
}

/** Warp an imagery tileset's tiles at 1x (and @2x) into its archives; returns its manifest entry. */
async function warpTileset(t: TilesetConfig, src: ImagerySource, s: ImagerySettings, c: WarpContext): Promise<TilesetEntry> {
  const entry = imageryEntry(t, src, s);
  const { bounds, center } = entry;
  const archives = imageryArchives(t.id);
  const metadata: Record<string, unknown> = {
    name: t.name ?? t.id, format: s.format, type: 'baselayer', tileSize: RASTER_TILE_SIZE,
    ...(t.attribution ? { attribution: t.attribution } : {}), ...(t.description ? { description: t.description } : {}),
  };
  const job = (scale: 1 | 2, maxzoom: number) =>
    runTileJob({
      label: `imagery ${t.id}${scale === 2 ? ' @2x' : ''}`,
      archive: join(c.outDir, archives[scale]),
      journal: join(c.workDir, `${scale}x.journal`),
      fingerprint: archiveFingerprint(c.fingerprint, scale),
      fingerprintKey: IMAGERY_METADATA_KEY,
      boxes: src.boxes,
      minzoom: s.minzoom,
      maxzoom,
      threads: c.threads,
      shard: c.shard,
      writer: {
        tileType: s.format === 'png' ? TileType.Png : s.format === 'jpg' ? TileType.Jpeg : TileType.Webp,
        tileCompression: Compression.None,
        metadata: { ...metadata, maxzoom, ...(scale === 2 ? { tileSize: RASTER_TILE_SIZE * 2 } : {}) },
        bounds, center,
      },
      run: (tiles) => c.run({ datasets: src.datasets, nodata: s.nodata, resampling: s.resampling, scale, format: s.format, encoders: s.encoders, extent: extentAt(bounds, tiles[0]), tiles }),
    });
  let one, two;
  try {
    one = await job(1, s.maxzoom);
    two = s.hidpiMaxzoom !== undefined ? await job(2, s.hidpiMaxzoom) : undefined;
  } catch (e) {
    // GDAL failing to read the images (a truncated or corrupt file): one line naming the tileset and source.
    if (isUserError(e)) throw e;
    throw new UserError(`tileset "${t.id}": ${t.source}: GDAL cannot read it (${(e as Error).message.replace(/\s+/g, ' ').trim()})`, { cause: e });
  }
  return { ...entry, tiles: one.tiles, bytes: one.bytes, ...(entry.hidpi && two ? { hidpi: { ...entry.hidpi, tiles: two.tiles, bytes: two.bytes } } : {}) };
}
