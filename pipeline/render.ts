/**
 * Render stage: pre-render every configured style to raster PMTiles archives (one per scale ×
 * format) with MapLibre GL JS in headless Chromium (see pipeline/render/*).
 */
import { cp, mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { UserError } from '../lib/errors.ts';
import { readManifestOrEmpty, updateManifest, type Manifest, type StyleArchive, type StyleEntry } from '../lib/manifest.ts';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { assertChromium } from '../workers/chromium-process.ts';
import { defaultRenderWorkers } from '../workers/pool.ts';
import type { BuildConfig } from './config/index.ts';
import { createProgress, logLine } from './progress.ts';
import { AssetServer } from './render/asset-server.ts';
import { archiveFromJournal, readIdentity, renderFingerprint, type RenderIdentity } from './render/archive.ts';
import { hasOpaqueBackground, sliceMetatile, type RasterFormat, type RawImage } from './render/encode.ts';
import { RenderJournal } from './render/journal.ts';
import { enumerateMetatiles, inShard, metatileKey, renderOrder, type Metatile } from './render/metatiles.ts';
import { MetatileRenderer } from './render/renderer.ts';
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

/** Register the tilesets a style uses on the asset server (opening their archives once). */
async function serveTilesets(server: AssetServer, manifest: Manifest, outDir: string, ids: string[], open: Map<string, Awaited<ReturnType<typeof openArchiveFile>>>): Promise<string[]> {
  const paths: string[] = [];
  for (const id of ids) {
    const entry = manifest.tilesets[id];
    const path = join(outDir, entry.archive);
    paths.push(path);
    if (open.has(id)) continue;
    const reader = await openArchiveFile(path);
    open.set(id, reader);
    // PMTiles compression 2 = gzip.
    server.addTileset(id, { entry, gzip: reader.header.tileCompression === 2, reader });
  }
  return paths;
}

/** Render one style at one scale into journals (one per format), resuming what they hold. */
async function renderScale(
  ctx: { renderer: MetatileRenderer; config: BuildConfig; styleUrl: string; label: string; opaque: boolean; tick: (n: number) => void; rendered: (n: number) => void },
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
    while (next < batches.length) await ctx.renderer.renderBatch(ctx.styleUrl, label, batches[next++], scale, onImage);
  };
  await Promise.all(Array.from({ length: Math.min(workers * QUEUE_PER_WORKER, batches.length) }, lane));
}

/** `items` in consecutive runs of `size`. */
function chunk<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Render one style (every scale × format); returns its manifest entry (archives of this run). */
async function renderStyle(
  ctx: { config: BuildConfig; outDir: string; server: AssetServer; renderer: (first: { styleUrl: string; pixelRatio: number }) => MetatileRenderer; manifest: Manifest; fontsDir?: string; readers: Map<string, Awaited<ReturnType<typeof openArchiveFile>>>; shard: Shard; stats: RenderStageStats },
  s: StyleConfig,
): Promise<StyleEntry> {
  const { config, outDir, server, manifest, shard } = ctx;
  const tileset = manifest.tilesets[s.tileset!];
  if (!tileset) throw new UserError(`${config.file}: styles.${s.id}.tileset: tileset "${s.tileset}" has not been built (run \`tilebake build --only vector\` first)`);
  const styleDir = join(outDir, 'styles', s.id);
  const prep: PreparedStyle = await prepareStyle(s.id, s.style, outDir, {
    tilesets: manifest.tilesets,
    defaultTileset: s.tileset!,
    fonts: ctx.fontsDir,
    scales: s.scales,
  });
  const archives = await serveTilesets(server, manifest, outDir, prep.tilesets, ctx.readers);
  const styleUrl = server.addStyle(s.id, JSON.stringify(prep.style), styleDir);
  const bbox = s.bbox ?? tileset.bounds;
  const all = [...enumerateMetatiles(bbox, s.minzoom, s.maxzoom, config.render.metatile)];
  const metas = all.filter((_, i) => inShard(i, shard));
  const center: [number, number, number] = [(bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2, Math.max(s.minzoom, Math.min(s.maxzoom, tileset.center[2]))];
  const attribution = tileset.attribution ?? config.attribution;
  const entry: StyleEntry = {
    style: `styles/${s.id}/style.json`,
    sprite: prep.sprite ? `styles/${s.id}/sprite` : undefined,
    name: prep.name,
    attribution,
    minzoom: s.minzoom,
    maxzoom: s.maxzoom,
    bounds: bbox,
    center,
    archives: {},
  };
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
        const fingerprint = await renderFingerprint({ style: prep.style, spriteDir: styleDir, fontsDir: prep.glyphs ? ctx.fontsDir : undefined, tilesetArchives: archives, settings });
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
        await renderScale({ renderer: ctx.renderer({ styleUrl, pixelRatio: scale }), config, styleUrl, label, opaque: hasOpaqueBackground(prep.style), tick: (n) => progress.tick(n), rendered }, metas, scale, journals);
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

/** Run the render stage for every style in `config` (one shard of it with `opts.shard`). */
export async function runRenderStage(config: BuildConfig, outDir: string, opts: RenderStageOptions = {}): Promise<RenderStageStats> {
  const started = performance.now();
  const stats: RenderStageStats = { tiles: 0, seconds: 0, startSeconds: 0 };
  const styles = Object.values(config.styles);
  if (styles.length === 0) return stats;
  await assertChromium();
  const manifest = await readManifestOrEmpty(outDir);
  await mkdir(outDir, { recursive: true });
  const fontsDir = await copyFonts(config, outDir);
  const server = new AssetServer(fontsDir);
  await server.start();
  const workers = opts.workers ?? config.render.workers ?? defaultRenderWorkers();
  let renderer: MetatileRenderer | undefined;
  const readers = new Map<string, Awaited<ReturnType<typeof openArchiveFile>>>();
  const cfg: BuildConfig = { ...config, render: { ...config.render, workers } };
  try {
    const ctx = {
      config: cfg,
      outDir,
      server,
      manifest,
      fontsDir,
      readers,
      shard: opts.shard,
      stats,
      renderer: (first: { styleUrl: string; pixelRatio: number }) => {
        if (renderer) return renderer;
        renderer = new MetatileRenderer(server, { workers, margin: config.render.margin, timeoutMs: config.render.timeoutMs, retries: config.render.retries });
        // Every browser starts at once; the first metatiles queue behind the warm-up.
        void renderer.warmUp(first).then(() => (stats.startSeconds = (performance.now() - started) / MS_PER_S));
        return renderer;
      },
    };
    for (const s of styles) {
      const entry = await renderStyle(ctx, s);
      if (opts.shard) {
        logLine(`render ${s.id}: shard ${opts.shard.index}/${opts.shard.count} written to ${Object.keys(entry.archives).map((k) => entry.archives[k].archive).join(', ')} (merge with \`tilebake merge\`)`);
        continue;
      }
      await updateManifest(outDir, (m) => {
        m.styles[s.id] = entry;
        if (fontsDir) m.fonts = 'fonts';
      });
    }
  } finally {
    await renderer?.close();
    await server.stop();
    for (const r of readers.values()) await r.close();
  }
  if (!opts.shard) await rm(join(outDir, '.work', 'render'), { recursive: true, force: true }).catch(() => undefined);
  stats.seconds = (performance.now() - started) / MS_PER_S;
  if (stats.tiles > 0) {
    const rate = stats.tiles / Math.max(stats.seconds, Number.EPSILON);
    logLine(`render: ${stats.tiles} tiles drawn in ${stats.seconds.toFixed(1)} s, ${rate.toFixed(1)} tiles/s, each encoded in every configured format (browsers ready after ${stats.startSeconds.toFixed(1)} s)`);
  }
  return stats;
}
