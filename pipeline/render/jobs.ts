/**
 * The render stage's jobs: every configured style prepared for rendering (style.json, sprites and
 * fonts into the build folder, its manifest entry, the tileset archives it reads, its position rule)
 * and the render fingerprints that decide whether an archive is written again. `tilebake plan` uses
 * the same preparation (renderPlan) to record the fingerprints a shard must match.
 */
import { cp, mkdir, rm, stat } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { UserError } from '../../lib/errors.ts';
import { readManifestOrEmpty, type Manifest, type StyleEntry } from '../../lib/manifest.ts';
import { LocalStore, type Store } from '../../lib/storage.ts';
import type { BuildConfig } from '../config/index.ts';
import { renderFingerprints, tilesetArchiveRef, type TilesetArchiveRef } from './archive.ts';
import { positionRule, type PositionRule } from './dedup.ts';
import type { RasterFormat } from '../../lib/raster-encode.ts';
import { prepareStyle, type PreparedStyle } from './style.ts';

type StyleConfig = BuildConfig['styles'][string];

/** `<style>/1x.png`: an archive's name in run.json, DONE.json and `RenderStageOptions.expect`. */
export function archiveKey(styleId: string, scale: number, format: RasterFormat): string {
  return `${styleId}/${scale}x.${format}`;
}

/** `1x.png.pmtiles` or `1x.png.shard-0-of-4.pmtiles` inside `<out>/styles/<id>/`. */
export function archiveName(scale: number, format: RasterFormat, shard?: { index: number; count: number }): string {
  return `${scale}x.${format}${shard ? `.shard-${shard.index}-of-${shard.count}` : ''}.pmtiles`;
}

/** Copy the config's glyph folder to `<out>/fonts/`. */
async function copyFonts(config: BuildConfig, outDir: string): Promise<string | undefined> {
  if (!config.fonts) return undefined;
  if (!(await stat(config.fonts).then((s) => s.isDirectory(), () => false))) {
    throw new UserError(`${config.file}: field "fonts": ${config.fonts} is not a folder`);
  }
  const dest = join(outDir, 'fonts');
  // Replace the folder (the source files may be read-only, and cp keeps their mode).
  await rm(dest, { recursive: true, force: true });
  await cp(config.fonts, dest, { recursive: true });
  return dest;
}

/** A style ready to render: its config, prepared style (written to `<out>/styles/<id>/`) and manifest entry without archives. */
export interface StyleJob {
  s: StyleConfig;
  prep: PreparedStyle;
  /** Its manifest entry; `archives` is filled as they are written. */
  entry: StyleEntry;
  /** The tileset archives its sources read (for the render fingerprint). */
  tilesetArchives: TilesetArchiveRef[];
  /** What of a metatile's position its pixels depend on besides the tiles it loads (view keys). */
  position: PositionRule;
}

/** A style's credit: those of the tilesets it draws (vector, terrain, contours), each once, in source order. */
export function styleAttribution(credits: (string | undefined)[]): string | undefined {
  const distinct = [...new Set(credits.filter((c): c is string => !!c))];
  return distinct.length ? distinct.join(' | ') : undefined;
}

/** Prepare style `s` (style.json and sprites into `<out>/styles/<id>/`) and its manifest entry. */
async function prepareJob(config: BuildConfig, outDir: string, manifest: Manifest, fontsDir: string | undefined, s: StyleConfig, dataStore: Store): Promise<StyleJob> {
  const tileset = manifest.tilesets[s.tileset!];
  if (!tileset) throw new UserError(`${config.file}: styles.${s.id}.tileset: tileset "${s.tileset}" has not been built (run \`tilebake build --only vector\` first)`);
  const language = s.language ? { code: s.language, field: `${config.file}: $.styles.${s.id}.language` } : undefined;
  const sprite = s.sprite === undefined ? undefined : { folder: s.sprite, field: `${config.file}: $.styles.${s.id}.sprite` };
  const prep = await prepareStyle(s.id, s.style, outDir, { tilesets: manifest.tilesets, defaultTileset: s.tileset!, fonts: fontsDir, scales: s.scales, language, sprite });
  // A configured bbox at every zoom; else what the tileset covers, zoom by zoom (the world's low zooms, the region beyond).
  const bbox = s.bbox ?? tileset.bounds;
  const world = !s.bbox && tileset.world_maxzoom !== undefined && tileset.region ? { world_maxzoom: tileset.world_maxzoom, region: tileset.region } : undefined;
  const focus = world?.region ?? bbox;
  const entry: StyleEntry = {
    style: `styles/${s.id}/style.json`,
    sprite: prep.sprite ? `styles/${s.id}/sprite` : undefined,
    name: prep.name,
    attribution: styleAttribution(prep.tilesets.map((id) => manifest.tilesets[id]?.attribution)) ?? config.attribution,
    minzoom: s.minzoom,
    maxzoom: s.maxzoom,
    bounds: bbox,
    ...world,
    center: [(focus[0] + focus[2]) / 2, (focus[1] + focus[3]) / 2, Math.max(s.minzoom, Math.min(s.maxzoom, tileset.center[2]))],
    archives: {},
    ...(s.maxzoom_served !== undefined ? { maxzoom_served: s.maxzoom_served } : {}),
    // Rendered on demand above maxzoom with the settings baked with, so the tiles match a deeper build.
    ...(s.overzoom === 'render' ? { overzoom: 'render' as const, render: { metatile: config.render.metatile, margin: config.render.margin, png: config.render.png, jpeg: config.render.jpeg, webp: config.render.webp } } : {}),
    // Language variants of one style share its file (static maps and rendered.json choose among them by ?language).
    styleFile: relative(dirname(config.file), s.style).split(sep).join('/'),
    ...(s.language ? { language: s.language } : {}),
    ...(prep.languages.length ? { languages: prep.languages } : {}),
  };
  const archives = prep.tilesets.map((id) => tilesetArchiveRef(dataStore, manifest.tilesets[id]));
  const position = await positionRule(prep.style, join(outDir, 'styles', s.id));
  return { s, prep, entry, tilesetArchives: archives, position };
}

/** The render fingerprints of one style × scale × format: everything that decides its tiles. */
export async function archiveFingerprints(config: BuildConfig, outDir: string, fontsDir: string | undefined, job: StyleJob, scale: number, format: RasterFormat): Promise<{ fingerprint: string; style: string }> {
  const { s, prep, entry } = job;
  const r = config.render;
  // The attribution is in the archive's metadata: a new credit writes the archive again.
  const settings = { bbox: entry.bounds, ...(entry.world_maxzoom !== undefined ? { world_maxzoom: entry.world_maxzoom, region: entry.region } : {}), minzoom: s.minzoom, maxzoom: s.maxzoom, metatile: r.metatile, margin: r.margin, scale, format, encoder: { png: r.png, jpg: r.jpeg, webp: r.webp }[format], attribution: entry.attribution };
  const styleDir = join(outDir, 'styles', s.id);
  return renderFingerprints({ style: prep.style, spriteDir: styleDir, fontsDir: prep.glyphs ? fontsDir : undefined, tilesetArchives: job.tilesetArchives, settings });
}

/** Prepare every style (style.json and sprites into `<out>/styles/<id>/`, fonts into `<out>/fonts/`). */
export async function prepareJobs(config: BuildConfig, outDir: string, manifest: Manifest, dataStore: Store): Promise<{ jobs: StyleJob[]; fontsDir?: string }> {
  await mkdir(outDir, { recursive: true });
  const fontsDir = await copyFonts(config, outDir);
  const jobs: StyleJob[] = [];
  for (const s of Object.values(config.styles)) jobs.push(await prepareJob(config, outDir, manifest, fontsDir, s, dataStore));
  return { jobs, fontsDir };
}

/**
 * What the render stage would write, without rendering: every style prepared into `outDir` (which holds
 * the tileset archives and their manifest) and each archive's render fingerprint by `archiveKey`.
 * `tilebake plan` records them in run.json.
 */
export async function renderPlan(config: BuildConfig, outDir: string): Promise<{ fingerprints: Record<string, string>; styles: Record<string, StyleEntry> }> {
  const manifest = await readManifestOrEmpty(outDir);
  const { jobs, fontsDir } = await prepareJobs(config, outDir, manifest, new LocalStore(outDir));
  const fingerprints: Record<string, string> = {};
  const styles: Record<string, StyleEntry> = {};
  for (const job of jobs) {
    styles[job.s.id] = job.entry;
    for (const scale of job.s.scales) {
      for (const format of job.s.formats) fingerprints[archiveKey(job.s.id, scale, format)] = (await archiveFingerprints(config, outDir, fontsDir, job, scale, format)).fingerprint;
    }
  }
  return { fingerprints, styles };
}
