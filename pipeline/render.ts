/**
 * Render stage: pre-render every configured style to raster PMTiles archives (one per scale ×
 * format) with MapLibre GL JS in headless Chromium (see pipeline/render/*).
 */
import { cp, mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { UserError } from '../lib/errors.ts';
import { readManifestOrEmpty, updateManifest, type Manifest, type StyleArchive, type StyleEntry } from '../lib/manifest.ts';
import { LocalStore } from '../lib/storage.ts';
import { startRenderServer, type RenderServer } from '../static-server/render-server.ts';
import { assertChromium } from '../workers/chromium-process.ts';
import { defaultRenderWorkers } from '../workers/pool.ts';
import { RENDER_PAGE_DIR } from '../workers/render-browser.ts';
import type { BuildConfig } from './config/index.ts';
import { createProgress, logLine } from './progress.ts';
import { archiveFromJournal, readIdentity, renderFingerprint, type RenderIdentity } from './render/archive.ts';
import { hasOpaqueBackground, sliceMetatile, type RasterFormat, type RawImage } from './render/encode.ts';
import { RenderJournal } from './render/journal.ts';
import { enumerateMetatiles, inShard, metatileKey, renderOrder, type Metatile } from './render/metatiles.ts';
import { MetatileRenderer, type FirstStyle } from './render/renderer.ts';
import { prepareStyle, type PreparedStyle } from './render/style.ts';

/** Options of the render stage. */
export interface RenderStageOptions {
  shard?: { index: number; count: number };
  workers?: number;
}

/** What a render stage run did (for benchmarks and logs). */
export interface RenderStageStats {
  /** Tiles rendered by this run (each encoded in every format); resumed or up-to-date tiles not counted. */
  tiles: number;
  /** Wall time of the whole stage. */
  seconds: number;
  /** Wall time from the stage's start until every pool worker's browser was up with the page loaded (0: no browser needed). */
  startSeconds: number;
  /** Metatiles taken from the journals of an interrupted run (resumed, not rendered again). */
  resumedMetatiles: number;
}

type StyleConfig = BuildConfig['styles'][string];
type Shard = RenderStageOptions['shard'];

const MS_PER_S = 1000;
/** Render tasks queued per worker (keeps the pool busy while the main thread encodes). */
const QUEUE_PER_WORKER = 2;
/**
 * Metatiles per render task (fewer when there are not enough for every worker): consecutive
 * metatiles are neighbours and share the vector tiles in one page's cache; measured ~10 % less
 * tile loading with two browsers than handing out single metatiles.
 */
const BATCH = 4;

/** `1x.png.pmtiles` or `1x.png.shard-0-of-4.pmtiles` inside `<out>/styles/<id>/`. */
export function archiveName(scale: number, format: RasterFormat, shard?: Shard): string {
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

/** Render one style at one scale into journals (one per format), resuming what they hold. */
async function renderScale(
  ctx: { renderer: () => Promise<MetatileRenderer>; config: BuildConfig; styleUrl: string; label: string; opaque: boolean; tick: (n: number) => void; rendered: (n: number) => void; stats: RenderStageStats },
  metas: Metatile[],
  scale: number,
  journals: Map<RasterFormat, RenderJournal>,
): Promise<void> {
  const formats = [...journals.keys()];
  const todo = renderOrder(metas.filter((m) => formats.some((f) => !journals.get(f)!.done.has(metatileKey(m)))));
  const pending = new Set(todo);
  ctx.tick(metas.reduce((n, m) => n + (pending.has(m) ? 0 : m.tiles.length), 0));
  const r = ctx.config.render;
  const label = `${ctx.label} @${scale}x`;
  const resumed = metas.length - todo.length;
  if (resumed > 0) {
    ctx.stats.resumedMetatiles += resumed;
    logLine(`${label}: resuming an interrupted render: ${resumed} of ${metas.length} metatiles reused from ${[...journals.values()].map((j) => j.path).join(', ')}`);
  }
  if (todo.length === 0) return;
  const renderer = await ctx.renderer();
  const onImage = async (m: Metatile, image: RawImage) => {
    let tiles;
    try {
      tiles = await sliceMetatile(image, m, { pixelRatio: scale, formats, png: r.png, jpeg: r.jpeg, opaqueBackground: ctx.opaque });
    } catch (e) {
      throw new UserError(`${label}: metatile ${metatileKey(m)}: ${(e as Error).message}`);
    }
    const key = metatileKey(m);
    await Promise.all(formats.filter((f) => !journals.get(f)!.done.has(key)).map((f) => journals.get(f)!.append({ key, tiles: tiles[f] })));
    ctx.tick(m.tiles.length);
    ctx.rendered(m.tiles.length);
  };
  const workers = r.workers ?? defaultRenderWorkers();
  const batches = chunk(todo, Math.max(1, Math.min(BATCH, Math.ceil(todo.length / workers))));
  let next = 0;
  const lane = async () => {
    // A task's metatiles are encoded while the lane's next task renders: the pool always has a task
    // queued. Each lane holds at most two batches of pixels (one being encoded, one just rendered).
    let encoding: Promise<void> = Promise.resolve();
    while (next < batches.length) {
      const { encoded } = await renderer.renderBatch(ctx.styleUrl, label, batches[next++], scale, onImage);
      await encoding;
      encoding = encoded;
    }
    await encoding;
  };
  await Promise.all(Array.from({ length: Math.min(workers * QUEUE_PER_WORKER, batches.length) }, lane));
}

/** `items` in consecutive runs of `size`. */
function chunk<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** A style ready to render: its config, prepared style (written to `<out>/styles/<id>/`) and manifest entry without archives. */
interface StyleJob {
  s: StyleConfig;
  prep: PreparedStyle;
  /** Its manifest entry; `archives` is filled as they are written. */
  entry: StyleEntry;
  /** The tileset archives its sources read (for the render fingerprint). */
  tilesetArchives: string[];
}

/** Prepare style `s` (style.json and sprites into `<out>/styles/<id>/`) and its manifest entry. */
async function prepareJob(config: BuildConfig, outDir: string, manifest: Manifest, fontsDir: string | undefined, s: StyleConfig): Promise<StyleJob> {
  const tileset = manifest.tilesets[s.tileset!];
  if (!tileset) throw new UserError(`${config.file}: styles.${s.id}.tileset: tileset "${s.tileset}" has not been built (run \`tilebake build --only vector\` first)`);
  const prep = await prepareStyle(s.id, s.style, outDir, { tilesets: manifest.tilesets, defaultTileset: s.tileset!, fonts: fontsDir, scales: s.scales });
  const bbox = s.bbox ?? tileset.bounds;
  const entry: StyleEntry = {
    style: `styles/${s.id}/style.json`,
    sprite: prep.sprite ? `styles/${s.id}/sprite` : undefined,
    name: prep.name,
    attribution: tileset.attribution ?? config.attribution,
    minzoom: s.minzoom,
    maxzoom: s.maxzoom,
    bounds: bbox,
    center: [(bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2, Math.max(s.minzoom, Math.min(s.maxzoom, tileset.center[2]))],
    archives: {},
  };
  return { s, prep, entry, tilesetArchives: prep.tilesets.map((id) => join(outDir, manifest.tilesets[id].archive)) };
}

/** Render one style (every scale × format); fills its manifest entry with the archives of this run. */
async function renderStyle(
  ctx: { config: BuildConfig; outDir: string; server: RenderServer; renderer: (first: FirstStyle) => Promise<MetatileRenderer>; fontsDir?: string; shard: Shard; stats: RenderStageStats },
  job: StyleJob,
): Promise<StyleEntry> {
  const { config, outDir, server, shard } = ctx;
  const { s, prep, entry } = job;
  const styleDir = join(outDir, 'styles', s.id);
  const styleUrl = `${server.url}/styles/${encodeURIComponent(s.id)}/style.json`;
  const { bounds: bbox, center, attribution } = entry;
  const all = [...enumerateMetatiles(bbox, s.minzoom, s.maxzoom, config.render.metatile)];
  const metas = all.filter((_, i) => inShard(i, shard));
  const tilesPerScale = metas.reduce((n, m) => n + m.tiles.length, 0);
  const label = `render ${s.id}${shard ? ` (shard ${shard.index}/${shard.count})` : ''}`;
  const progress = createProgress(label, tilesPerScale * s.scales.length);
  const r = config.render;
  try {
    for (const scale of s.scales) {
      const identities = new Map<RasterFormat, RenderIdentity>();
      const journals = new Map<RasterFormat, RenderJournal>();
      for (const format of s.formats) {
        const settings = { bbox, minzoom: s.minzoom, maxzoom: s.maxzoom, metatile: r.metatile, margin: r.margin, scale, format, encoder: format === 'png' ? r.png : r.jpeg };
        const fingerprint = await renderFingerprint({ style: prep.style, spriteDir: styleDir, fontsDir: prep.glyphs ? ctx.fontsDir : undefined, tilesetArchives: job.tilesetArchives, settings });
        const identity: RenderIdentity = shard ? { fingerprint, shard } : { fingerprint };
        const path = join(styleDir, archiveName(scale, format, shard));
        const existing = await readIdentity(path);
        if (existing && existing.fingerprint === fingerprint && JSON.stringify(existing.shard) === JSON.stringify(shard)) {
          entry.archives[`${scale}x.${format}`] = { archive: `styles/${s.id}/${archiveName(scale, format, shard)}`, format, scale: scale as 1 | 2, tiles: existing.tiles, bytes: existing.bytes };
          continue;
        }
        identities.set(format, identity);
        journals.set(format, await RenderJournal.open(join(outDir, '.work', 'render', s.id, `${archiveName(scale, format, shard)}.journal`), fingerprint));
      }
      if (journals.size === 0) {
        progress.tick(tilesPerScale);
        continue;
      }
      try {
        const rendered = (n: number) => (ctx.stats.tiles += n);
        const renderer = () => ctx.renderer({ styleUrl, pixelRatio: scale });
        await renderScale({ renderer, config, styleUrl, label, opaque: hasOpaqueBackground(prep.style), tick: (n) => progress.tick(n), rendered, stats: ctx.stats }, metas, scale, journals);
        for (const [format, journal] of journals) {
          const name = archiveName(scale, format, shard);
          const res = await archiveFromJournal(journal, join(styleDir, name), {
            format,
            identity: identities.get(format)!,
            bounds: bbox,
            center,
            metadata: { name: prep.name ?? s.id, attribution, format, scale, type: 'baselayer', minzoom: s.minzoom, maxzoom: s.maxzoom },
          });
          await journal.remove();
          const a: StyleArchive = { archive: `styles/${s.id}/${name}`, format, scale: scale as 1 | 2, tiles: res.tiles, bytes: res.bytes };
          entry.archives[`${scale}x.${format}`] = a;
        }
      } finally {
        for (const j of journals.values()) await j.close();
      }
    }
  } finally {
    progress.done();
  }
  return entry;
}

/**
 * Run the render stage for every style in `config` (one shard of it with `opts.shard`). Every style
 * is prepared first (style.json and sprites into `<out>/styles/<id>/`); then the render page loads
 * them, the tiles and the glyphs from the render server (`tilebake serve`'s app in its render role,
 * over `outDir`): the same documents and bytes a client of the build gets.
 */
export async function runRenderStage(config: BuildConfig, outDir: string, opts: RenderStageOptions = {}): Promise<RenderStageStats> {
  const started = performance.now();
  const stats: RenderStageStats = { tiles: 0, seconds: 0, startSeconds: 0, resumedMetatiles: 0 };
  const styles = Object.values(config.styles);
  if (styles.length === 0) return stats;
  await assertChromium();
  const manifest = await readManifestOrEmpty(outDir);
  await mkdir(outDir, { recursive: true });
  const fontsDir = await copyFonts(config, outDir);
  const jobs: StyleJob[] = [];
  for (const s of styles) jobs.push(await prepareJob(config, outDir, manifest, fontsDir, s));
  // The manifest the page sees: every style being rendered (no archives yet) and the fonts.
  const served: Manifest = { ...manifest, styles: { ...manifest.styles, ...Object.fromEntries(jobs.map((j) => [j.s.id, j.entry])) }, fonts: fontsDir ? 'fonts' : manifest.fonts };
  const server = await startRenderServer({ store: new LocalStore(outDir), manifest: served, pageDir: RENDER_PAGE_DIR });
  const workers = opts.workers ?? config.render.workers ?? defaultRenderWorkers();
  let renderer: Promise<MetatileRenderer> | undefined;
  const cfg: BuildConfig = { ...config, render: { ...config.render, workers } };
  try {
    const ctx = {
      config: cfg,
      outDir,
      server,
      fontsDir,
      shard: opts.shard,
      stats,
      // Started for the first scale that has metatiles to render: its browsers open that style at once.
      renderer: (first: FirstStyle) =>
        (renderer ??= MetatileRenderer.start(server, first, { workers, margin: config.render.margin, timeoutMs: config.render.timeoutMs, retries: config.render.retries })),
    };
    for (const job of jobs) {
      const entry = await renderStyle(ctx, job);
      const id = job.s.id;
      if (opts.shard) {
        logLine(`render ${id}: shard ${opts.shard.index}/${opts.shard.count} written to ${Object.keys(entry.archives).map((k) => entry.archives[k].archive).join(', ')} (merge with \`tilebake merge\`)`);
        continue;
      }
      await updateManifest(outDir, (m) => {
        m.styles[id] = entry;
        if (fontsDir) m.fonts = 'fonts';
      });
    }
  } finally {
    const r = await renderer?.catch(() => undefined);
    const readyAt = r?.browsersReadyAt;
    if (readyAt !== undefined) stats.startSeconds = (readyAt - (performance.timeOrigin + started)) / MS_PER_S;
    await r?.close();
    await server.close();
  }
  if (!opts.shard) await rm(join(outDir, '.work', 'render'), { recursive: true, force: true }).catch(() => undefined);
  stats.seconds = (performance.now() - started) / MS_PER_S;
  if (stats.tiles > 0) {
    const rate = stats.tiles / Math.max(stats.seconds, Number.EPSILON);
    logLine(`render: ${stats.tiles} tiles drawn in ${stats.seconds.toFixed(1)} s, ${rate.toFixed(1)} tiles/s, each encoded in every configured format (browsers ready after ${stats.startSeconds.toFixed(1)} s)`);
  }
  return stats;
}
