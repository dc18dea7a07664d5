/**
 * Render each distinct view once (pipeline/render/dedup.ts), on real tiles built from OpenStreetMap
 * (open sea, the barrier reef and cays off Belize: test/fixtures/osm) and real MapLibre renders: the
 * archives rendered with dedup are byte for byte those rendered without it (1x and @2x), also when
 * sharded (plan, shards reading the tileset archives through the run's store, publish) and when
 * resuming a journal, and dedup did happen. The keying rules are checked on styles
 * that make pixels depend on the position.
 *
 * The dedup render of the reference comparison uses two workers (two browsers share the views), every
 * other render one: a browser start costs ~2.5 CPU s, and the tiles must not depend on the worker count.
 * The reference and the dedup render each draw osm-bright and its variant with a 24 px sea pattern
 * (style `wave24`) in one stage: one browser start for both styles.
 */
import { copyFile, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { currentVersionDir } from '../lib/build-version.ts';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { LocalStore } from '../lib/storage.ts';
import { archiveName, runRenderStage, type RenderStageStats } from '../pipeline/render/stage.ts';
import { readIdentity, tilesetArchiveRef } from '../pipeline/render/archive.ts';
import { plan } from '../pipeline/run/plan.ts';
import { publish } from '../pipeline/run/publish.ts';
import { shard } from '../pipeline/run/shard.ts';
import { groupViews, positionRule, ViewKeys, type PositionRule } from '../pipeline/render/dedup.ts';
import { RenderJournal } from '../pipeline/render/journal.ts';
import { enumerateMetatiles, metatileKey, type Metatile } from '../lib/metatiles.ts';
import { runVectorStage } from '../pipeline/vector/stage.ts';
import { archiveTiles, copyVectorOutput, OSM_BRIGHT, readTile, SAMPLE, tempDir as newTempDir, writeConfig } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';
const FIXTURE = resolve(import.meta.dirname, 'fixtures', 'osm', 'belize-reef.osm.pbf');
/**
 * z14 only, where the views repeat: metatile 2, a z14 view (640 px with its margin) loads 2–3 × 2–3 z13
 * vector tiles, so open sea repeats often. The extract's box without its four western tile columns
 * (x 4184–4187: two pairs of equal views and sea; the reef, the cays and the longest runs of equal
 * views are further east): 6 × 6 metatiles.
 */
const STYLE = { minzoom: 14, maxzoom: 14, bbox: [-87.978, 16.51, -87.715, 16.7624] as [number, number, number, number] };
const RENDER = { metatile: 2, margin: 64, timeoutMs: 120_000 };
const LONG = 900_000;
const KEYS = ['1x.png', '2x.png'];

/** A config over the vector output in `out`: osm-bright at z14 (and the style file `wave24` at 1x, when given). */
function config(out: string, render: Record<string, unknown>, scales = [1, 2], wave24?: string) {
  const at = (style: string, s: number[]) => ({ style, tileset: 'openmaptiles', ...STYLE, scales: s, formats: ['png'] });
  return {
    out,
    tilesets: { openmaptiles: join(base, 'reef.osm.pbf') },
    styles: { 'osm-bright': at(OSM_BRIGHT, scales), ...(wave24 && { wave24: at(wave24, [1]) }) },
    fonts: join(SAMPLE, 'fonts'),
    render: { ...RENDER, ...render },
  };
}

/** Temp folders of this file, removed at the end. */
const made: string[] = [];
async function tempDir(prefix: string): Promise<string> {
  const dir = await newTempDir(prefix);
  made.push(dir);
  return dir;
}
afterAll(async () => {
  for (const d of made) await rm(d, { recursive: true, force: true });
});

/** What `run` logs (TILEBAKE_QUIET lifted meanwhile). */
async function logOf(run: () => Promise<unknown>): Promise<string> {
  let text = '';
  const quiet = process.env.TILEBAKE_QUIET;
  process.env.TILEBAKE_QUIET = '';
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    text += chunk.toString();
    return true;
  });
  try {
    await run();
  } finally {
    spy.mockRestore();
    process.env.TILEBAKE_QUIET = quiet;
  }
  return text;
}

let base: string;
let ref: string;
let refStats: RenderStageStats;
let dedupStats: RenderStageStats;
let dedup: string;
const archive = (out: string, key: string, style = 'osm-bright') => join(out, 'styles', style, `${key}.pmtiles`);
/** The stats of one style × scale of a render. */
const viewsOf = (stats: RenderStageStats, style: string, scale = 1) => stats.views.find((v) => v.style === style && v.scale === scale)!;

/** osm-bright with its water pattern replaced by a 24×24 CSS px cut of its own sprite sheet, in a new folder: its style file. */
async function wave24Style(): Promise<string> {
  const dir = await tempDir('dedup-pattern-style');
  const style = JSON.parse(await readFile(OSM_BRIGHT, 'utf8')) as { layers: { id: string; paint?: Record<string, unknown> }[] };
  style.layers.find((l) => l.id === 'water-pattern')!.paint!['fill-pattern'] = 'wave24';
  await writeFile(join(dir, 'style.json'), JSON.stringify(style));
  for (const [suffix, ratio] of [['', 1], ['@2x', 2]] as const) {
    const sheet = JSON.parse(await readFile(join(SAMPLE, 'styles', 'osm-bright', `sprite${suffix}.json`), 'utf8')) as Record<string, { x: number; y: number }>;
    sheet.wave24 = { ...sheet.wave, width: 24 * ratio, height: 24 * ratio, pixelRatio: ratio } as never;
    await writeFile(join(dir, `sprite${suffix}.json`), JSON.stringify(sheet));
    await copyFile(join(SAMPLE, 'styles', 'osm-bright', `sprite${suffix}.png`), join(dir, `sprite${suffix}.png`));
  }
  return join(dir, 'style.json');
}

/** Render osm-bright into a fresh copy of the vector output (one worker unless `opts` says otherwise). */
async function render(prefix: string, raw: Record<string, unknown>, opts: Parameters<typeof runRenderStage>[2] = {}): Promise<{ out: string; stats: RenderStageStats }> {
  const out = await tempDir(prefix);
  await copyVectorOutput(base, out);
  const { config: c } = await writeConfig(out, 'config.json', { ...raw, out });
  return { out, stats: await runRenderStage(c, out, { workers: 1, ...opts }) };
}

async function expectSameTiles(a: string, b: string): Promise<number> {
  const [ta, tb] = await Promise.all([archiveTiles(a), archiveTiles(b)]);
  expect(ta.size).toBeGreaterThan(0);
  expect([...tb.entries()].filter(([k, h]) => ta.get(k) !== h).map(([k]) => k)).toEqual([]);
  expect(tb.size).toBe(ta.size);
  return ta.size;
}

describe.sequential('render dedup (Belize reef, osm-bright)', () => {
  beforeAll(async () => {
    base = await tempDir('dedup-base');
    await copyFile(FIXTURE, join(base, 'reef.osm.pbf'));
    const { config: c } = await writeConfig(base, 'vector.json', config(base, {}));
    await runVectorStage(c, base);
    const wave24 = await wave24Style();
    ({ out: ref, stats: refStats } = await render('dedup-off', config('', { dedup: false }, [1, 2], wave24)));
    ({ out: dedup, stats: dedupStats } = await render('dedup-on', config('', {}, [1, 2], wave24), { workers: 2 }));
  }, LONG);

  test('with dedup off every metatile is its own view; with dedup on sea metatiles share one', () => {
    for (const v of refStats.views) expect(v.distinct).toBe(v.metatiles);
    expect(refStats.views.filter((v) => v.style === 'osm-bright').map((v) => v.scale)).toEqual([1, 2]);
    expect(dedupStats.renderedMetatiles).toBe(refStats.renderedMetatiles);
    for (const v of dedupStats.views) {
      // 36 metatiles per scale over this reef at z14; the open sea east of it repeats.
      expect(v.metatiles).toBe(36);
      if (v.style === 'osm-bright') expect(v.distinct).toBeLessThanOrEqual(v.metatiles - 10);
    }
    expect(dedupStats.distinctViews).toBe(dedupStats.views.reduce((n, v) => n + v.distinct, 0));
    expect(dedupStats.tiles).toBe(refStats.tiles);
  });

  test('the archives rendered with dedup are byte for byte those rendered without it', async () => {
    for (const k of KEYS) expect(await expectSameTiles(archive(ref, k), archive(dedup, k))).toBe(144);
    const m = await readManifestOrEmpty(dedup);
    expect(m.styles['osm-bright'].archives['1x.png'].tiles).toBe(144);
    // Not a blank world: the reef's tiles differ from the sea's.
    const distinct = new Set((await archiveTiles(archive(dedup, '1x.png'))).values());
    expect(distinct.size).toBeGreaterThan(10);
  });

  test('shards dedup through the run\'s store (plan, 2 shards, publish); the published archive equals the undeduplicated render', async () => {
    const dir = await tempDir('dedup-shards');
    const { config: c } = await writeConfig(dir, 'config.json', config(join(dir, 'unused'), {}, [1]));
    const run = join(dir, 'run');
    await plan(c, { run, shards: 2, scratch: join(dir, 'scratch') });
    // A shard reads the tileset archives from RUN/base/ through the run's store, not from its scratch.
    let distinct = 0;
    let metatiles = 0;
    for (const index of [0, 1]) {
      const log = await logOf(() => shard({ run, index, scratch: join(dir, 'scratch'), workers: 1, env: {} }));
      const [, d, n] = /osm-bright \(shard \d\/2\) @1x: (\d+) distinct views rendered for (\d+) metatiles \(views keyed by the tiles under them/.exec(log) ?? [];
      expect(n, log).toBeDefined();
      expect(Number(d)).toBeLessThan(Number(n));
      distinct += Number(d);
      metatiles += Number(n);
    }
    expect(metatiles).toBe(36);
    // Each shard shares views among its own metatiles only: fewer repeats than one render (dedupStats).
    expect(distinct).toBeLessThan(metatiles);
    expect(distinct).toBeGreaterThanOrEqual(viewsOf(dedupStats, 'osm-bright').distinct);
    const out = join(dir, 'out');
    await publish({ run, out });
    await expectSameTiles(archive(ref, '1x.png'), archive((await currentVersionDir(out))!.dir, '1x.png'));
  }, LONG);

  test('a resumed journal (some views drawn, their copies not yet written) completes to the same tiles', async () => {
    const out = await tempDir('dedup-resume');
    await copyVectorOutput(base, out);
    const { config: c } = await writeConfig(out, 'config.json', config(out, {}, [1]));
    // The journal an interrupted run leaves: every third metatile done, with the reference's tiles.
    const id = await readIdentity(archive(ref, '1x.png'));
    const journal = await RenderJournal.open(join(out, '.work', 'render', 'osm-bright', `${archiveName(1, 'png')}.journal`), id!.fingerprint);
    const metas = [...enumerateMetatiles(STYLE.bbox, STYLE.minzoom, STYLE.maxzoom, RENDER.metatile)];
    const done = metas.filter((_, i) => i % 3 === 0);
    for (const m of done) {
      const tiles = await Promise.all(m.tiles.map(async (t) => ({ ...t, data: await readTile(archive(ref, '1x.png'), t.z, t.x, t.y) })));
      await journal.append({ key: metatileKey(m), tiles });
    }
    await journal.close();
    const s = await runRenderStage(c, out, { workers: 1 });
    expect(s.resumedMetatiles).toBe(done.length);
    expect(s.renderedMetatiles).toBe(metas.length - done.length);
    expect(s.distinctViews).toBeLessThan(s.renderedMetatiles);
    await expectSameTiles(archive(ref, '1x.png'), archive(out, '1x.png'));
  }, LONG);

  test("a 24 px sea pattern (not a divisor of 256 px) shifts between tiles: keyed by its phase, dedup still equals the reference", async () => {
    // Style wave24 (wave24Style), rendered beside osm-bright with dedup off (ref) and on (dedup).
    await expectSameTiles(archive(ref, '1x.png', 'wave24'), archive(dedup, '1x.png', 'wave24'));
    // The pattern's phase is a real dependence: equal sea views at other phases drew other pixels,
    // so fewer views are shared than with osm-bright's 16×8 wave, and some still are.
    const plain = viewsOf(dedupStats, 'osm-bright');
    const on = viewsOf(dedupStats, 'wave24');
    expect(on.distinct).toBeGreaterThan(plain.distinct);
    expect(on.distinct).toBeLessThan(on.metatiles);
    const ref1 = await archiveTiles(archive(ref, '1x.png'));
    const shifted = await archiveTiles(archive(ref, '1x.png', 'wave24'));
    // Sea tiles that are one picture with the 16×8 wave are several with the 24 px pattern.
    const seaKey = [...new Set(ref1.values())].map((h) => [...ref1.entries()].filter(([, v]) => v === h).map(([k]) => k)).sort((a, b) => b.length - a.length)[0];
    expect(seaKey.length).toBeGreaterThan(10);
    expect(new Set(seaKey.map((k) => shifted.get(k))).size).toBeGreaterThan(1);
  }, LONG);

  test('view keys: the position is keyed in as the rule says', async () => {
    const bounds = (await readManifestOrEmpty(base)).tilesets.openmaptiles.region!;
    const metas = [...enumerateMetatiles(bounds, 14, 14, RENDER.metatile)];
    const sources = [{ grid: { minzoom: 0, maxzoom: 14, tileSize: 512 }, archive: tilesetArchiveRef(new LocalStore(base), (await readManifestOrEmpty(base)).tilesets.openmaptiles) }];
    const groups = async (rule: PositionRule) => {
      const keys = await ViewKeys.open(sources, 'style', RENDER.margin, rule);
      try {
        const g = await groupViews(metas, keys);
        return [...g.copies.entries()].map(([m, copies]) => [m, ...copies]);
      } finally {
        await keys.close();
      }
    };
    const free = await groups({});
    expect(free.length).toBeGreaterThan(0);
    // Equal views have the same size and the same place on the z13 grid (x0, y0 of equal parity).
    const same = (g: Metatile[], f: (m: Metatile) => unknown) => g.every((m) => JSON.stringify(f(m)) === JSON.stringify(f(g[0])));
    for (const g of free) expect(same(g, (m) => [m.area.w, m.area.h, m.x0 % 2, m.y0 % 2])).toBe(true);
    expect(await groups({ absolute: 'test' })).toEqual([]);
    for (const g of await groups({ row: 'test' })) expect(same(g, (m) => m.y0)).toBe(true);
    // A 24 px pattern does not divide the 256 px tile: only views 3 tiles apart (768 px) share a phase.
    const phased = await groups({ patternPeriod: [24, 24] });
    for (const g of phased) expect(same(g, (m) => [(m.x0 * 256) % 24, (m.y0 * 256) % 24])).toBe(true);
    expect(phased.flat().length).toBeLessThan(free.flat().length);
  }, LONG);
});

describe('position rules', () => {
  const src = { openmaptiles: { type: 'vector', url: 'tilebake://data/openmaptiles.json' } };
  const dir = join(SAMPLE, 'styles', 'osm-bright');
  const fill = (paint: Record<string, unknown>) => ({ id: 'f', type: 'fill', source: 'openmaptiles', 'source-layer': 'water', paint });

  test("osm-bright's world-anchored wave pattern (16×8 CSS px) is keyed by its phase, which 256 px tiles keep", async () => {
    const rule = await positionRule({ sources: src, layers: [fill({ 'fill-pattern': 'wave' })] }, dir);
    expect(rule).toEqual({ patternPeriod: [32, 16] });
    // line-pattern follows the line, not the world.
    expect(await positionRule({ sources: src, layers: [{ id: 'l', type: 'line', source: 'openmaptiles', paint: { 'line-pattern': 'wave' } }] }, dir)).toEqual({});
  });

  test('a pattern chosen from feature data may be any image of the sprite', async () => {
    const rule = await positionRule({ sources: src, layers: [fill({ 'fill-pattern': ['get', 'pattern'] })] }, dir);
    expect(rule.absolute ?? rule.patternPeriod).toBeDefined();
    expect(rule).not.toEqual({ patternPeriod: [32, 16] });
  });

  test('hillshade keys the row; terrain, globe, within/distance and non-tileset sources key the position', async () => {
    const dem = { ...src, terrain: { type: 'raster-dem', url: 'tilebake://data/terrain.json', tileSize: 256 } };
    expect(await positionRule({ sources: dem, layers: [{ id: 'h', type: 'hillshade', source: 'terrain' }] }, dir)).toEqual({ row: expect.stringContaining('hillshade') });
    expect((await positionRule({ sources: dem, terrain: { source: 'terrain' }, layers: [] }, dir)).absolute).toMatch(/terrain/);
    expect((await positionRule({ sources: src, projection: { type: 'globe' }, layers: [] }, dir)).absolute).toMatch(/globe/);
    const within = fill({ 'fill-color': ['case', ['within', { type: 'Polygon', coordinates: [] }], 'red', 'blue'] });
    expect((await positionRule({ sources: src, layers: [within] }, dir)).absolute).toMatch(/within/);
    const geojson = { ...src, pins: { type: 'geojson', data: { type: 'FeatureCollection', features: [] } } };
    expect((await positionRule({ sources: geojson, layers: [] }, dir)).absolute).toMatch(/"pins" is not a built tileset/);
  });
});
