/**
 * Render stage: pre-render every configured style to raster PMTiles archives (one per scale ×
 * format) with MapLibre GL JS in headless Chromium (see pipeline/render/*).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { cpuBudget } from '../../lib/cpus.ts';
import { UserError } from '../../lib/errors.ts';
import { boundsAtZoom, readManifestOrEmpty, updateManifest, type Manifest, type StyleArchive, type StyleEntry } from '../../lib/manifest.ts';
import { OverlayStore } from '../../lib/overlay-store.ts';
import { LocalStore, type Store } from '../../lib/storage.ts';
import type { RenderHost } from '../../workers/render-host/server.ts';
import type { BuildConfig } from '../config/index.ts';
import { createProgress, logLine, secondsSince, stepsText, type Step } from '../../lib/progress.ts';
import { archiveFromJournal, readIdentity, type RenderIdentity } from './archive.ts';
import type { RasterFormat } from '../../lib/raster-encode.ts';
import { RenderJournal } from './journal.ts';
import { describeRule, type ViewKeys } from './dedup.ts';
import { archiveFingerprints, archiveKey, archiveName, prepareJobs, type StyleJob } from './jobs.ts';
import { enumerateMetatiles, metatileKey, type Metatile } from '../../lib/metatiles.ts';
import { inShard, metatilesToRerender, type ChangedSource } from './selection.ts';
import type { FirstStyle, MetatileRenderer } from '../../workers/metatile-renderer.ts';
import type { ScaleDone } from './draw.ts';
import { changedSources, changedTilesets, viewKeys } from './sources.ts';
import { linkFile } from '../reuse.ts';
import { EXIT_PERMANENT } from '../exit.ts';

/** Archive names, used by `shard` and `publish` too. */
export { archiveKey, archiveName } from './jobs.ts';

/** Options of the render stage. */
export interface RenderStageOptions {
  shard?: { index: number; count: number };
  workers?: number;
  /**
   * The previous build version's folder: archives whose fingerprint is unchanged are linked from it;
   * when only vector tiles changed, just the metatiles whose view loads a changed tile are rendered
   * and every other tile is copied from its archive.
   */
  previous?: string;
  /** Work folder (render journals); default `<outDir>/.work`. */
  workDir?: string;
  /**
   * Where the tileset archives are read (default: `outDir`). A shard reads them from its run's store by
   * ranged reads; its prepared styles, sprites and fonts stay in `outDir`.
   */
  dataStore?: Store;
  /**
   * Fingerprints the archives must have, by `archiveKey` (a shard checks them against its run.json):
   * a mismatch fails with exit code 78 before anything is rendered.
   */
  expect?: Record<string, string>;
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
  /** Metatiles rendered by this run, and metatiles of every style × scale (each counted once for all formats). */
  renderedMetatiles: number;
  totalMetatiles: number;
  /** Views drawn by MapLibre for the rendered metatiles (fewer when metatiles share a view: render.dedup). */
  distinctViews: number;
  /** Chromium processes the render threads started: one per thread used, plus any restart (a hung start, a crash). */
  browserStarts: number;
  /** Per style × scale that rendered: metatiles written and the distinct views drawn for them. */
  views: { style: string; scale: number; metatiles: number; distinct: number }[];
}

type Shard = RenderStageOptions['shard'];

const MS_PER_S = 1000;


/** The tiles of the metatiles whose keys are in `keys`, one at a time (not a list of every tile). */
function* tilesOf(metas: Metatile[], keys: ReadonlySet<string>): Generator<Metatile['tiles'][number]> {
  for (const m of metas) if (keys.has(metatileKey(m))) yield* m.tiles;
}

/**
 * Render one style (every scale × format); fills its manifest entry with the archives of this run.
 * Resolves once every view is drawn, with `finished`, which resolves once every archive is written.
 */
async function renderStyle(
  ctx: {
    config: BuildConfig;
    outDir: string;
    /** The render host, started by the first scale that has metatiles to draw. */
    server: () => Promise<RenderHost>;
    renderer: (first: FirstStyle) => Promise<MetatileRenderer>;
    fontsDir?: string;
    shard: Shard;
    stats: RenderStageStats;
    workDir: string;
    previous?: string;
    /** The style's sources with the tiles changed since the previous version; undefined when they cannot be compared. */
    changedSources: (job: StyleJob) => Promise<ChangedSource[] | undefined>;
    expect?: Record<string, string>;
    /** View keys of the style at one scale (`styleKey`: its fingerprint), or undefined when render.dedup is off. */
    viewKeys?: (job: StyleJob, styleKey: string) => Promise<ViewKeys>;
  },
  job: StyleJob,
): Promise<{ finished: Promise<StyleEntry> }> {
  const { config, outDir, shard } = ctx;
  const { s, prep, entry } = job;
  const styleDir = join(outDir, 'styles', s.id);
  const { bounds: bbox, center, attribution } = entry;
  const all = [...enumerateMetatiles((z) => boundsAtZoom(entry, z), s.minzoom, s.maxzoom, config.render.metatile)];
  const metas = all.filter((_, i) => inShard(i, shard));
  const tilesPerScale = metas.reduce((n, m) => n + m.tiles.length, 0);
  const label = `render ${s.id}${shard ? ` (shard ${shard.index}/${shard.count})` : ''}`;
  const progress = createProgress(label, tilesPerScale * s.scales.length);
  const r = config.render;
  /** Each drawn scale's encoding and archive writing, still running while the next scale draws. */
  const writing: Promise<void>[] = [];
  try {
    for (const scale of s.scales) {
      const identities = new Map<RasterFormat, RenderIdentity>();
      const journals = new Map<RasterFormat, RenderJournal>();
      /** Per format: keys of the metatiles whose tiles are copied from the previous version's archive. */
      const copies = new Map<RasterFormat, Set<string>>();
      const reasons = new Set<string>();
      /** What the pixels depend on besides the data: the style fingerprint of this scale (any format's). */
      let styleKey = '';
      ctx.stats.totalMetatiles += metas.length;
      for (const format of s.formats) {
        const fps = await archiveFingerprints(config, outDir, ctx.fontsDir, job, scale, format);
        const { fingerprint } = fps;
        const expected = ctx.expect?.[archiveKey(s.id, scale, format)];
        if (ctx.expect && expected !== fingerprint) {
          throw new UserError(`${label} @${scale}x ${format}: render fingerprint ${fingerprint.slice(0, 12)}… differs from the run's ${expected ? `${expected.slice(0, 12)}…` : '(none: not planned)'} (different inputs, settings or tilebake/MapLibre version than \`tilebake plan\` used)`, { exitCode: EXIT_PERMANENT });
        }
        styleKey ||= `${fps.style}@${scale}`;
        const identity: RenderIdentity = shard ? { fingerprint, style: fps.style, shard } : { fingerprint, style: fps.style };
        const name = archiveName(scale, format, shard);
        const path = join(styleDir, name);
        const existing = await readIdentity(path);
        const archiveEntry = (e: { tiles: number; bytes: number }): StyleArchive => ({ archive: `styles/${s.id}/${name}`, format, scale: scale as 1 | 2, tiles: e.tiles, bytes: e.bytes });
        if (existing && existing.fingerprint === fingerprint && JSON.stringify(existing.shard) === JSON.stringify(shard)) {
          entry.archives[`${scale}x.${format}`] = archiveEntry(existing);
          continue;
        }
        const prevPath = ctx.previous && !shard ? join(ctx.previous, 'styles', s.id, name) : undefined;
        const prev = prevPath ? await readIdentity(prevPath) : undefined;
        if (prevPath && prev && !prev.shard && prev.fingerprint === fingerprint) {
          await linkFile(prevPath, path);
          entry.archives[`${scale}x.${format}`] = archiveEntry(prev);
          reasons.add('unchanged');
          continue;
        }
        identities.set(format, identity);
        const journal = await RenderJournal.open(join(ctx.workDir, 'render', s.id, `${name}.journal`), fingerprint);
        journals.set(format, journal);
        if (!prev || prev.shard) reasons.add(ctx.previous ? 'first build of this archive' : 'first build');
        else if (prev.style !== fps.style) reasons.add('style');
        else {
          const changed = await ctx.changedSources(job);
          if (!changed) reasons.add('data: a tileset\'s zoom range or bounds changed');
          else {
            const dirty = new Set(metatilesToRerender(metas, r.margin, changed).map(metatileKey));
            copies.set(format, new Set(metas.map(metatileKey).filter((k) => !dirty.has(k) && !journal.done.has(k))));
            reasons.add(`data: ${changed.reduce((n, c) => n + c.changed.size, 0)} source tiles changed`);
          }
        }
      }
      if (journals.size === 0) {
        logLine(`${label} @${scale}x: re-rendered 0 of ${metas.length} metatiles (unchanged: archives reused from the previous build)`);
        progress.tick(tilesPerScale);
        continue;
      }
      let done: ScaleDone;
      try {
        const rendered = (n: number) => (ctx.stats.tiles += n);
        const styleUrl = async () => `${(await ctx.server()).url}/styles/${encodeURIComponent(s.id)}/style.json`;
        const renderer = async () => ctx.renderer({ styleUrl: await styleUrl(), pixelRatio: scale });
        const views = ctx.viewKeys && (() => ctx.viewKeys!(job, styleKey));
        // The browsers and encoders are loaded only now (a build that draws nothing does without them).
        const { renderScale } = await import('./draw.ts');
        done = await renderScale({ renderer, config, styleUrl, label, style: prep.style, tick: (k) => progress.tick(k), rendered, stats: ctx.stats }, metas, scale, journals, copies, views);
      } catch (e) {
        for (const j of journals.values()) await j.close();
        throw e;
      }
      const n = done.metatiles;
      ctx.stats.renderedMetatiles += n;
      ctx.stats.distinctViews += done.distinct;
      ctx.stats.views.push({ style: s.id, scale, metatiles: n, distinct: done.distinct });
      logLine(`${label} @${scale}x: re-rendered ${n} of ${metas.length} metatiles (${[...reasons].join('; ')})`);
      if (n > 0) logLine(`${label} @${scale}x: ${done.distinct} distinct views rendered for ${n} metatiles${ctx.viewKeys ? ` (${describeRule(job.position)})` : ' (render.dedup off)'}`);
      // Every view is drawn: the browsers go on with the next scale or style while the last metatiles
      // are encoded and the archives written (the tiles are the same whatever runs beside them).
      const write = async (): Promise<void> => {
        try {
          let t = performance.now();
          await done.encoded;
          const encoding = secondsSince(t);
          t = performance.now();
          for (const [format, journal] of journals) {
            const name = archiveName(scale, format, shard);
            const copy = copies.get(format);
            const res = await archiveFromJournal(journal, join(styleDir, name), {
              format,
              identity: identities.get(format)!,
              bounds: bbox,
              center,
              metadata: { name: prep.name ?? s.id, attribution, format, scale, type: 'baselayer', minzoom: s.minzoom, maxzoom: s.maxzoom },
              copy: copy && copy.size > 0 ? { archive: join(ctx.previous!, 'styles', s.id, name), tiles: tilesOf(metas, copy) } : undefined,
            });
            await journal.remove();
            const a: StyleArchive = { archive: `styles/${s.id}/${name}`, format, scale: scale as 1 | 2, tiles: res.tiles, bytes: res.bytes };
            entry.archives[`${scale}x.${format}`] = a;
          }
          if (n > 0) logLine(`${label} @${scale}x: times: ${stepsText([...done.steps, ...pageSteps(done), { name: 'encoding after the drawing', seconds: encoding }, { name: 'archives', seconds: secondsSince(t) }])}`);
        } finally {
          for (const j of journals.values()) await j.close();
        }
      };
      const written = write();
      written.catch(() => undefined);
      writing.push(written);
    }
  } catch (e) {
    progress.done();
    await Promise.allSettled(writing);
    throw e;
  }
  const finished = allDone(writing).then(() => entry).finally(() => progress.done());
  finished.catch(() => undefined);
  return { finished };
}

/** The page's own times of a scale: loading the style, drawing per zoom (`drawing z14: 4 × 0.62 s`). */
function pageSteps(done: ScaleDone): Step[] {
  const zooms = [...done.zooms].sort(([a], [b]) => a - b).map(([z, d]) => ({ name: `z${z} ${d.metatiles} × ${(d.seconds / d.metatiles).toFixed(2)} s =`, seconds: d.seconds }));
  return [{ name: 'in the page: style load', seconds: done.styleSeconds }, ...zooms];
}

/** Wait for every promise of `ps`, then throw the first failure (none is left running). */
async function allDone(ps: Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(ps)).find((r) => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/**
 * Run the render stage for every style in `config` (one shard of it with `opts.shard`). Every style
 * is prepared first (style.json and sprites into `<out>/styles/<id>/`); then the render page loads
 * them, the tiles and the glyphs from the render host (workers/render-host/server.ts,
 * over `outDir`): the same documents and bytes a client of the build gets.
 */
export async function runRenderStage(config: BuildConfig, outDir: string, opts: RenderStageOptions = {}): Promise<RenderStageStats> {
  const started = performance.now();
  const stats: RenderStageStats = { tiles: 0, seconds: 0, startSeconds: 0, resumedMetatiles: 0, renderedMetatiles: 0, totalMetatiles: 0, distinctViews: 0, browserStarts: 0, views: [] };
  const workDir = opts.workDir ?? join(outDir, '.work');
  const styles = Object.values(config.styles);
  if (styles.length === 0) return stats;
  const manifest = await readManifestOrEmpty(outDir);
  const local = new LocalStore(outDir);
  // Where the tileset archives are read: fingerprints, view keys, changed tiles and the render page alike.
  const data = opts.dataStore ?? local;
  const { jobs, fontsDir } = await prepareJobs(config, outDir, manifest, data);
  // The manifest the page sees: every style being rendered (no archives yet) and the fonts.
  const served: Manifest = { ...manifest, styles: { ...manifest.styles, ...Object.fromEntries(jobs.map((j) => [j.s.id, j.entry])) }, fonts: fontsDir ? 'fonts' : manifest.fonts };
  const store = opts.dataStore ? new OverlayStore(local, opts.dataStore, new Set(Object.values(manifest.tilesets).map((t) => t.archive))) : local;
  // The render host and the browsers start when a metatile is to be drawn, not before.
  let server: Promise<RenderHost> | undefined;
  const startServer = () =>
    (server ??= (async () => {
      const [{ assertChromium }, { startRenderHost }, { RENDER_PAGE_DIR }] = await Promise.all([import('../../workers/chromium.ts'), import('../../workers/render-host/server.ts'), import('../../workers/render-browser.ts')]);
      await assertChromium();
      return startRenderHost({ store, manifest: served, pageDir: RENDER_PAGE_DIR });
    })());
  const workers = opts.workers ?? config.render.workers;
  let renderer: Promise<MetatileRenderer> | undefined;
  const cfg: BuildConfig = { ...config, render: { ...config.render, workers } };
  const changed = changedTilesets(data, opts.previous ? new LocalStore(opts.previous) : undefined, manifest);
  /** Each style's archives written and recorded in the manifest. */
  const recorded: Promise<void>[] = [];
  let closing: Promise<void> | undefined;
  const closeBrowsers = () =>
    (closing ??= (async () => {
      const r = await renderer?.catch(() => undefined);
      const readyAt = r?.browsersReadyAt;
      if (readyAt !== undefined) stats.startSeconds = (readyAt - (performance.timeOrigin + started)) / MS_PER_S;
      stats.browserStarts = r?.browserStarts ?? 0;
      await r?.close();
      await (await server?.catch(() => undefined))?.close();
    })());
  try {
    const ctx = {
      config: cfg,
      outDir,
      server: startServer,
      fontsDir,
      shard: opts.shard,
      stats,
      workDir,
      previous: opts.previous,
      expect: opts.expect,
      changedSources: (job: StyleJob) => changedSources(job.prep.style, manifest, changed),
      viewKeys: config.render.dedup ? (job: StyleJob, styleKey: string) => viewKeys(job.prep.style, manifest, data, { styleKey, margin: config.render.margin, rule: job.position }) : undefined,
      // Started for the first scale that has metatiles to render: its browsers open that style at once.
      renderer: (first: FirstStyle) =>
        (renderer ??= (async () => {
          const [{ MetatileRenderer }, { defaultRenderWorkers }] = await Promise.all([import('../../workers/metatile-renderer.ts'), import('../../workers/pool.ts')]);
          const count = workers ?? defaultRenderWorkers();
          if (workers === undefined) {
            const b = cpuBudget();
            logLine(`render: up to ${count} browser${count === 1 ? '' : 's'}, one per two CPUs this process may use (${b.cpus}: ${b.from}; --workers overrides)`);
          }
          return MetatileRenderer.start(await startServer(), first, { workers: count, margin: config.render.margin, timeoutMs: config.render.timeoutMs, retries: config.render.retries, log: logLine });
        })()),
    };
    for (const job of jobs) {
      // The next style draws while this one's last archives are written.
      const { finished } = await renderStyle(ctx, job);
      const id = job.s.id;
      const record = finished.then(async (entry) => {
        if (opts.shard) {
          logLine(`render ${id}: shard ${opts.shard.index}/${opts.shard.count} written to ${Object.keys(entry.archives).map((k) => entry.archives[k].archive).join(', ')} (merge with \`tilebake merge\`)`);
          return;
        }
        await updateManifest(outDir, (m) => {
          m.styles[id] = entry;
          if (fontsDir) m.fonts = 'fonts';
        });
      });
      record.catch(() => undefined);
      recorded.push(record);
    }
    // Every view is drawn: the browsers and the server close while the last archives are written.
    await Promise.all([allDone(recorded), closeBrowsers()]);
  } finally {
    await Promise.allSettled(recorded);
    await closeBrowsers();
  }
  if (!opts.shard) await rm(join(workDir, 'render'), { recursive: true, force: true }).catch(() => undefined);
  stats.seconds = (performance.now() - started) / MS_PER_S;
  if (stats.tiles > 0) {
    const rate = stats.tiles / Math.max(stats.seconds, Number.EPSILON);
    logLine(`render: ${stats.tiles} tiles drawn in ${stats.seconds.toFixed(1)} s, ${rate.toFixed(1)} tiles/s, each encoded in every configured format (browsers ready after ${stats.startSeconds.toFixed(1)} s)`);
  }
  return stats;
}
