import { basename, dirname, join, resolve } from 'node:path';
import { removeEmptyWorkParents } from '../work-dir.ts';
import { DEFAULT_LANGUAGES } from '../../lib/languages.ts';
import { readManifestOrEmpty, setOsmState, updateManifest, type MltArchive, type TilesetEntry } from '../../lib/manifest.ts';
import { IMAGERY_FIELDS, type BuildConfig } from '../config/index.ts';
import { packSource, type PackOptions, type PackResult } from './write-pmtiles.ts';
import { logLine } from '../../lib/progress.ts';
import { UserError } from '../../lib/errors.ts';
import { detectInputKind, namingTileset, openTileSource, tilesetSourceKind, type InputKind } from '../sources/index.ts';
import { gisRecipe, gisSourceFiles, shownSource } from '../sources/gis.ts';
import { osmDataState } from '../osm/pbf-header.ts';
import { PROFILE_CONFIG, PROFILE_PROCESS } from '../osm/tilemaker.ts';
import { worldKey } from '../osm/world.ts';
import { hashInputs, linkFile, readDeps, recordDeps } from '../reuse.ts';
import { searchIndexFor } from '../search/tileset.ts';
import { patchOsmArchive, type OsmPatch } from './patch.ts';

export { archiveMetadata, packSource, type PackOptions, type PackResult } from './write-pmtiles.ts';

/**
 * `tilebake vector IN OUT.pmtiles`: pack MBTiles, PMTiles or a z/x/y folder into a PMTiles v3 archive,
 * or generate OpenMapTiles-schema tiles from an OpenStreetMap extract, or cut a GIS file's or a PostGIS
 * database's layers into tiles, and pack those.
 */
export async function packVectorTiles(input: string, output: string, opts: PackOptions = {}): Promise<PackResult> {
  const workDir = opts.workDir ?? join(dirname(resolve(output)), '.work', `osm-${basename(output)}`);
  try {
    const label = opts.label ?? `vector ${basename(output)}`;
    const source = await openTileSource(input, {
      osm: {
        bbox: opts.bbox, bboxField: opts.bboxField, languages: opts.languages, languagesField: opts.languagesField, workDir, label,
        worldMaxzoom: opts.worldMaxzoom, worldMaxzoomField: opts.worldMaxzoomField, extractOnly: opts.extractOnly,
      },
      gis: { ...opts.gis, workDir, label },
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
    ...(m.world_maxzoom !== undefined && m.region ? { world_maxzoom: m.world_maxzoom, region: m.region } : {}),
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
const OSM_PROFILE = [PROFILE_CONFIG, PROFILE_PROCESS];

/** What a tileset archive is made from besides its source's bytes: the packer, an OSM extract's profile, a GIS source's cutting, the options. */
async function tilesetRecipe(t: BuildConfig['tilesets'][string], kind: InputKind): Promise<string> {
  const osm = /\.osm\.pbf$/i.test(t.source);
  // The profile's names relative to its folder: where tilebake is installed does not count (a new
  // release unpacked elsewhere would otherwise generate every tile of the next night again).
  const languages = osm ? (t.languages ?? DEFAULT_LANGUAGES) : undefined;
  // The world's tiles (Natural Earth's version and the code that cuts it) are part of an OSM tileset's.
  const world = osm ? await worldKey() : '';
  const recipe = `${PACK_VERSION}:${osm ? await hashInputs(OSM_PROFILE, dirname(OSM_PROFILE[0])) : ''}:${world}:${JSON.stringify([t.name, t.attribution, t.description, t.bbox, languages, t.world_maxzoom])}`;
  return kind === 'gis' || kind === 'postgis' ? `${recipe}:${await gisRecipe(t)}` : recipe;
}

/**
 * The fingerprint of an archive made by `recipe` from the bytes of `source` (whatever its name): a GIS
 * file's are all the files GDAL reads it from (a Shapefile's .shp, .dbf, .shx, .prj …).
 */
async function fingerprintOf(recipe: string, source: string, kind?: InputKind): Promise<string> {
  return `${recipe}:${await hashInputs(kind === 'gis' ? await gisSourceFiles(source) : [source], source)}`;
}

/**
 * The MLT archive of tileset `t` beside its new MVT archive, when its encodings list `mlt`: linked from
 * the previous version when the MVT archive is that version's (`unchanged`) and the encoder is the same,
 * else encoded, copying the MLT bytes of every tile whose MVT bytes did not change (pipeline/vector/mlt.ts).
 */
async function mltArchiveFor(t: BuildConfig['tilesets'][string], outDir: string, prev: { dir: string; entry: TilesetEntry } | undefined, unchanged: boolean): Promise<MltArchive | undefined> {
  if (!t.encodings.includes('mlt')) return undefined;
  // Loaded here: the MLT encoder (@maplibre/mlt) is loaded only by builds that ask for MLT.
  const { encodeMltArchive, madeByThisEncoder } = await import('./mlt.ts');
  const archive = `data/${t.id}.mlt.pmtiles`;
  const prevMlt = prev?.entry.mlt && join(prev.dir, prev.entry.mlt.archive);
  if (unchanged && prevMlt && (await madeByThisEncoder(prevMlt))) {
    await linkFile(prevMlt, join(outDir, archive));
    logLine(`vector ${t.id}: MLT archive reused from the previous build`);
    return { ...prev!.entry.mlt!, archive };
  }
  const previous = prevMlt ? { mvt: join(prev!.dir, prev!.entry.archive), mlt: prevMlt } : undefined;
  const r = await encodeMltArchive(join(outDir, 'data', `${t.id}.pmtiles`), join(outDir, archive), { label: `vector ${t.id}`, previous });
  return { archive, tiles: r.tiles, bytes: r.bytes };
}

/** Options of the vector stage in a build. */
export interface VectorStageOptions {
  /** The previous version's folder: tilesets whose source and options did not change are linked from it. */
  previous?: string;
  /** Work folder (OSM intermediates); default `<outDir>/.work`. */
  workDir?: string;
  /** OSM tilesets whose source is the previous version's with change files applied (`tilebake update`), by id. */
  patches?: Record<string, OsmPatch>;
}

/** What every tileset of one vector stage run shares. */
interface StageRun {
  config: BuildConfig;
  outDir: string;
  opts: VectorStageOptions;
  prevDeps: Record<string, string>;
  prevManifest: Awaited<ReturnType<typeof readManifestOrEmpty>> | undefined;
}

/**
 * One tileset of the stage: its archive linked from the previous version when its fingerprint is
 * unchanged (a database's: once its tiles are made, by the archive's bytes), patched (an OSM tileset
 * with change files), or packed; recorded in the manifest and the deps.
 */
async function vectorTileset(run: StageRun, t: BuildConfig['tilesets'][string]): Promise<{ tiles: number; bytes: number }> {
  const { config, outDir, opts, prevDeps, prevManifest } = run;
  const output = join(outDir, 'data', `${t.id}.pmtiles`);
  const kind = await detectInputKind(t.source);
  // Imagery's fields (a GIS source takes its zooms; another vector source's zooms are refused where it opens).
  const imageryOnly = IMAGERY_FIELDS.find((f) => t[f] !== undefined && f !== 'minzoom' && f !== 'maxzoom');
  if (imageryOnly) throw new UserError(`$.tilesets.${t.id}.${imageryOnly}: applies to imagery only (GeoTIFF, VRT, …: ${shownSource(t.source)} holds vector data)`);
  const recipe = await tilesetRecipe(t, kind);
  // A database has no bytes to fingerprint before the tiles are made: its archive's are (below).
  let fingerprint = kind === 'postgis' ? undefined : await fingerprintOf(recipe, t.source, kind);
  const prevEntry = prevManifest?.tilesets[t.id]?.kind === 'vector' ? prevManifest.tilesets[t.id] : undefined;
  const label = `vector ${t.id}`;
  const prev = opts.previous && prevEntry ? { dir: opts.previous, entry: prevEntry } : undefined;
  const patch = opts.patches?.[t.id];
  // The search index is made beside the tiles (it reads the extract itself: pipeline/search/).
  const searching = searchIndexFor(t, outDir, {
    previous: opts.previous ? { dir: opts.previous, entry: prevEntry?.search, deps: prevDeps } : undefined,
    patch: patch && t.search?.source === t.source ? { before: patch.previous, changes: patch.changes } : undefined,
    workDir: opts.workDir ?? join(outDir, '.work'),
  });
  searching.catch(() => undefined); // awaited below; a failure of the tiles' first must not leave it unhandled
  /** Record the tileset's manifest entry (with its search index) and deps. */
  const record = async (entry: TilesetEntry, osm: Awaited<ReturnType<typeof osmDataState>>) => {
    const search = await searching;
    await updateManifest(outDir, (m) => {
      m.tilesets[t.id] = { ...entry, search: search?.entry };
      setOsmState(m, t.id, osm);
    });
    await recordDeps(outDir, { [`vector:${t.id}`]: fingerprint!, ...search?.deps });
  };
  /** Link the previous archive: the tiles are the same (the OSM state is the source's). */
  const reuse = async (osm: Awaited<ReturnType<typeof osmDataState>>) => {
    await linkFile(join(opts.previous!, prevEntry!.archive), join(outDir, prevEntry!.archive));
    const mlt = await mltArchiveFor(t, outDir, prev, true);
    await record({ ...prevEntry!, mlt }, osm);
    return { tiles: prevEntry!.tiles, bytes: prevEntry!.bytes };
  };
  try {
    if (fingerprint && opts.previous && prevEntry && prevDeps[`vector:${t.id}`] === fingerprint) {
      logLine(`${label}: source unchanged, archive reused from the previous build`);
      return await reuse(prevManifest?.osm?.[t.id]);
    }
    const workDir = join(opts.workDir ?? join(outDir, '.work'), 'osm', t.id);
    const packOpts: PackOptions = { name: t.name, attribution: t.attribution, description: t.description, label, languages: t.languages, languagesField: `${config.file}: $.tilesets.${t.id}.languages` };
    let r: PackResult | undefined;
    const patchable = patch && opts.previous && prevEntry && !t.bbox && prevDeps[`vector:${t.id}`] === (await fingerprintOf(recipe, patch.previous));
    if (patch && !patchable) {
      const why = t.bbox ? 'the tileset is cut to a bbox' : `the current archive was not generated from ${patch.previous} with these settings`;
      logLine(`${label}: ${why}: generating every tile`);
    }
    if (patch && opts.previous && prevEntry && patchable) {
      const outcome = await patchOsmArchive(t.source, join(opts.previous, prevEntry.archive), output, patch, { ...packOpts, label, workDir });
      if (outcome?.unchanged) {
        logLine(`${label}: the change leaves every tile as it was, archive reused from the previous build`);
        return await reuse(await osmDataState(t.source, t.replication));
      }
      r = outcome?.result;
    }
    r ??= await packVectorTiles(t.source, output, {
      ...packOpts, bbox: t.bbox, bboxField: `${config.file}: $.tilesets.${t.id}.bbox`, workDir,
      worldMaxzoom: t.world_maxzoom, worldMaxzoomField: `${config.file}: $.tilesets.${t.id}.world_maxzoom`,
      gis: { layers: t.layers, minzoom: t.minzoom, maxzoom: t.maxzoom, tileset: { id: t.id, field: `$.tilesets.${t.id}` } },
    });
    if (kind === 'postgis') {
      // What the tables gave: the archive's bytes (the same tiles make the same archive).
      fingerprint = `${recipe}:tiles:${await hashInputs([output], output)}`;
      if (opts.previous && prevEntry && prevDeps[`vector:${t.id}`] === fingerprint) {
        logLine(`${label}: the database gives the same tiles, archive reused from the previous build`);
        return await reuse(undefined);
      }
    }
    const osm = kind === 'osm' ? await osmDataState(t.source, t.replication) : undefined;
    const packed = r;
    const mlt = await mltArchiveFor(t, outDir, prev, false);
    await record({ ...tilesetEntry(t.id, packed), mlt }, osm);
    return { tiles: r.tiles, bytes: r.bytes };
  } finally {
    // A failed tileset still waits for its index (its work folder is removed when it is done).
    await searching.catch(() => undefined);
  }
}

/**
 * Build stage: write `<out>/data/<id>.pmtiles` for every configured tileset and record each in the
 * manifest. A tileset whose fingerprint (source bytes, options) equals the previous version's is not
 * packed again: its archive is linked from that version. An OSM tileset whose source is the previous
 * version's with change files applied (`opts.patches`) has only the tiles the change can change
 * generated, spliced into a copy of the previous archive (patch.ts).
 */
export async function runVectorStage(config: BuildConfig, outDir: string, opts: VectorStageOptions = {}): Promise<VectorStageResult> {
  const result: VectorStageResult = { tilesets: 0, tiles: 0, bytes: 0 };
  const prevDeps = await readDeps(opts.previous);
  const prevManifest = opts.previous ? await readManifestOrEmpty(opts.previous) : undefined;
  const run: StageRun = { config, outDir, opts, prevDeps, prevManifest };
  for (const t of Object.values(config.tilesets)) {
    let r: { tiles: number; bytes: number };
    try {
      // Images and raster tiles are the imagery stage's (pipeline/imagery/).
      if ((await tilesetSourceKind(t.source)) !== 'vector') continue;
      r = await vectorTileset(run, t);
    } catch (e) {
      throw namingTileset(e, t.id);
    }
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
