/**
 * Drawing one style at one scale into its render journals: the part of the render stage that needs the
 * browsers and the encoders (sharp), loaded by render.ts only when a metatile is to be drawn (a
 * night of `tilebake update` that changes no tile a style shows loads none of it).
 */
import { UserError } from '../../lib/errors.ts';
import { metatileKey, type Metatile } from '../../lib/metatiles.ts';
import { hasOpaqueBackground, sliceMetatile, type RasterFormat, type RawImage } from '../../lib/raster-encode.ts';
import type { MetatileRenderer } from '../../workers/metatile-renderer.ts';
import type { BuildConfig } from '../config/index.ts';
import { logLine, MS_PER_S, secondsSince, type Step } from '../../lib/progress.ts';
import { groupViews, type ViewGroups, type ViewKeys } from './dedup.ts';
import type { RenderJournal } from './journal.ts';
import { renderOrder } from './selection.ts';

/** Render tasks queued per worker (keeps the pool busy while the main thread encodes). */
const QUEUE_PER_WORKER = 2;

/** What `renderScale` did: metatiles written, views drawn, and where its time went. */
export interface ScaleDone {
  metatiles: number;
  distinct: number;
  /**
   * Resolves once the last metatile is encoded into the journals. renderScale returns as soon as
   * every view is drawn: the caller may start the next style or scale in the browsers meanwhile.
   */
  encoded: Promise<void>;
  /** Wall time of its steps for the log: view keys, render host and pool start, browser start (first batches), drawing. */
  steps: Step[];
  /** The pages' own time: loading the style, and drawing per zoom (metatiles and seconds). */
  styleSeconds: number;
  zooms: Map<number, { metatiles: number; seconds: number }>;
}

/**
 * Render one style at one scale into journals (one per format), resuming what they hold. With
 * `views`, metatiles of equal view key are drawn once (pipeline/render/dedup.ts). Resolves once every
 * view is drawn (ScaleDone: the encoding of the last ones may still run).
 */
export async function renderScale(
  ctx: { renderer: () => Promise<MetatileRenderer>; config: BuildConfig; styleUrl: () => Promise<string>; label: string; style: { layers: Record<string, unknown>[] }; tick: (n: number) => void; rendered: (n: number) => void; stats: { resumedMetatiles: number } },
  metas: Metatile[],
  scale: number,
  journals: Map<RasterFormat, RenderJournal>,
  copies: Map<RasterFormat, Set<string>>,
  views?: () => Promise<ViewKeys>,
): Promise<ScaleDone> {
  const formats = [...journals.keys()];
  const needs = (f: RasterFormat, key: string) => !journals.get(f)!.done.has(key) && !copies.get(f)?.has(key);
  const todo = renderOrder(metas.filter((m) => formats.some((f) => needs(f, metatileKey(m)))));
  const pending = new Set(todo);
  ctx.tick(metas.reduce((n, m) => n + (pending.has(m) ? 0 : m.tiles.length), 0));
  const r = ctx.config.render;
  const opaque = hasOpaqueBackground(ctx.style);
  const label = `${ctx.label} @${scale}x`;
  const resumed = metas.filter((m) => formats.some((f) => journals.get(f)!.done.has(metatileKey(m)))).length;
  if (resumed > 0) {
    ctx.stats.resumedMetatiles += resumed;
    logLine(`${label}: resuming an interrupted render: ${resumed} of ${metas.length} metatiles reused from ${[...journals.values()].map((j) => j.path).join(', ')}`);
  }
  const steps: Step[] = [];
  const zooms = new Map<number, { metatiles: number; seconds: number }>();
  const done: ScaleDone = { metatiles: 0, distinct: 0, encoded: Promise.resolve(), steps, styleSeconds: 0, zooms };
  if (todo.length === 0) return done;
  // The render host and the browsers start (the first time) while the view keys are read.
  const starting = ctx.renderer();
  starting.catch(() => undefined);
  let t = performance.now();
  let groups: ViewGroups = { render: todo, copies: new Map() };
  if (views) {
    const keys = await views();
    try {
      groups = await groupViews(todo, keys);
    } finally {
      await keys.close();
    }
    steps.push({ name: 'view keys', seconds: secondsSince(t) });
    t = performance.now();
  }
  const renderer = await starting;
  const styleUrl = await ctx.styleUrl();
  const waited = secondsSince(t);
  // Only while the server and the pool were (still) starting: a started renderer resolves at once.
  if (waited >= 0.005) steps.push({ name: 'render host and pool', seconds: waited });
  t = performance.now();
  /** The pool's browsers start with its first batches (lazy threads). */
  const browsersReady = renderer.browsersReadyAt;
  const onImage = async (m: Metatile, image: RawImage, delivered: Promise<boolean>) => {
    const encoded = sliceMetatile(image, m, { pixelRatio: scale, formats, png: r.png, jpeg: r.jpeg, webp: r.webp, opaqueBackground: opaque }).then(
      (t) => ({ ok: true as const, t }),
      (e: unknown) => ({ ok: false as const, e }),
    );
    // An upload the task's result does not name is dropped, encoded or not.
    if (!(await delivered)) return;
    const result = await encoded;
    if (!result.ok) throw new UserError(`${label}: metatile ${metatileKey(m)}: ${(result.e as Error).message}`);
    const tiles = result.t;
    // The metatiles sharing this view have the same tile layout (same area size): tile i is tile i.
    const all = [m, ...(groups.copies.get(m) ?? [])];
    await Promise.all(
      formats.map((f) => {
        const records = all.filter((each) => needs(f, metatileKey(each))).map((each) => ({ key: metatileKey(each), tiles: tiles[f].map((t, i) => ({ ...each.tiles[i], data: t.data })) }));
        return records.length > 0 ? journals.get(f)!.appendAll(records) : undefined;
      }),
    );
    const n = all.reduce((k, each) => k + each.tiles.length, 0);
    ctx.tick(n);
    ctx.rendered(n);
  };
  const workers = renderer.workers;
  // Consecutive metatiles are neighbours and share the vector tiles in one page's cache: ~10 % less
  // tile loading with two browsers at 4 per task than with single metatiles (measured).
  const batches = chunk(groups.render, Math.max(1, Math.min(r.batch, Math.ceil(groups.render.length / workers))));
  let next = 0;
  const lane = async (): Promise<{ last: Promise<void> }> => {
    // A task's metatiles are encoded while the lane's next task renders: the pool always has a task
    // queued. Each lane holds at most two batches of pixels (one being encoded, one just rendered);
    // its last batch is left encoding (returned boxed: an async function would wait for a promise).
    let encoding: Promise<void> = Promise.resolve();
    while (next < batches.length) {
      const { encoded, times } = await renderer.renderBatch(styleUrl, label, batches[next++], scale, onImage);
      done.styleSeconds += times.styleSeconds;
      for (const d of times.drawn) {
        const z = zooms.get(d.metatile.z) ?? { metatiles: 0, seconds: 0 };
        z.metatiles++;
        z.seconds += d.seconds;
        zooms.set(d.metatile.z, z);
      }
      await encoding;
      encoding = encoded;
    }
    return { last: encoding };
  };
  const lanes = await Promise.all(Array.from({ length: Math.min(workers * QUEUE_PER_WORKER, batches.length) }, lane));
  const readyAt = renderer.browsersReadyAt;
  if (browsersReady === undefined && readyAt !== undefined) {
    const start = Math.max(0, (readyAt - performance.timeOrigin - t) / MS_PER_S);
    steps.push({ name: 'browser start', seconds: start }, { name: 'drawing', seconds: secondsSince(t) - start });
  } else steps.push({ name: 'drawing', seconds: secondsSince(t) });
  done.encoded = Promise.all(lanes.map((l) => l.last)).then(() => undefined);
  // Awaited by the caller later: not an unhandled rejection meanwhile.
  done.encoded.catch(() => undefined);
  return { ...done, metatiles: todo.length, distinct: groups.render.length };
}

/** `items` in consecutive runs of `size`. */
function chunk<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
