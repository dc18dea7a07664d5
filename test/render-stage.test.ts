/**
 * Render stage on the Monaco sample with real MapLibre renders (headless Chromium, no mocks):
 * colours, @2x, PNG vs JPEG, seams, resume after SIGKILL, shard + merge, failure messages.
 * Renders z12–14 only so the whole file stays within a few minutes on 2 cores. The reference renders
 * with two workers, the other renders with one (a browser start costs ~2.5 CPU s); their tiles must be
 * the same whatever the number of workers.
 */
import { statSync } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Color } from '@maplibre/maplibre-gl-style-spec';
import { beforeAll, describe, expect, test, vi } from 'vitest';
import { readManifestOrEmpty } from '../lib/manifest.ts';
import { tileIdToZxy } from '../lib/pmtiles/index.ts';
import { lonLatToTile, tileBounds, tileCountInBBox } from '../lib/tile-math.ts';
import { mergeArchives } from '../pipeline/merge.ts';
import { runRenderStage } from '../pipeline/render/stage.ts';
import { runVectorStage } from '../pipeline/vector/stage.ts';
import { assertChromium } from '../workers/chromium.ts';
import { startCli } from './fixtures/cli.ts';
import { archiveTiles, compare, copyVectorOutput, histogram, OSM_BRIGHT, readTile, rgb, sampleConfig, tempDir, writeConfig } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';
/** z14 tiles over Monaco: a city tile and a sea tile. */
const CITY = { z: 14, ...lonLatToTile(7.4196, 43.7335, 14) };
const SEA = { z: 14, ...lonLatToTile(7.4400, 43.7260, 14) };
/** Metatile 2: z14 Monaco spans four metatiles, so tiles meet across metatile edges. */
const METATILE = 2;
const STYLE = { minzoom: 12, maxzoom: 14 };
const ARCHIVES = ['1x.png', '1x.jpg', '2x.png', '2x.jpg'];
/** Render timeout generous enough for a loaded 2-core machine. */
const RENDER = { metatile: METATILE, margin: 64, timeoutMs: 120_000 };
const LONG = 300_000;

let base: string;
let ref: string;
let style: { layers: { id: string; paint?: Record<string, unknown> }[] };

function paint(layer: string, prop: string): number[] {
  const v = style.layers.find((l) => l.id === layer)!.paint![prop] as string | { stops: [number, string][] };
  const c = Color.parse(typeof v === 'string' ? v : v.stops[0][1])!;
  return [c.r, c.g, c.b].map((x) => Math.round(x * 255));
}

/** Pixels of `data` within `tol` (per channel) of colour `c`. */
function countNear(data: Buffer, c: number[], tol: number): number {
  let n = 0;
  for (let i = 0; i < data.length; i += 3) if (Math.abs(data[i] - c[0]) <= tol && Math.abs(data[i + 1] - c[1]) <= tol && Math.abs(data[i + 2] - c[2]) <= tol) n++;
  return n;
}

const refArchive = (name: string) => join(ref, 'styles', 'osm-bright', `${name}.pmtiles`);

describe.sequential('render stage (Monaco, osm-bright)', () => {
  beforeAll(async () => {
    style = JSON.parse(await readFile(OSM_BRIGHT, 'utf8'));
    base = await tempDir('render-base');
    const { config } = await writeConfig(base, 'vector.json', sampleConfig(base, STYLE, RENDER));
    await runVectorStage(config, base);
    ref = await tempDir('render-ref');
    await copyVectorOutput(base, ref);
    const { config: refConfig } = await writeConfig(ref, 'config.json', sampleConfig(ref, STYLE, RENDER));
    await runRenderStage(refConfig, ref, { workers: 2 });
  }, LONG);

  test('the manifest lists one archive per scale × format holding every tile of the bbox', async () => {
    const m = await readManifestOrEmpty(ref);
    const e = m.styles['osm-bright'];
    expect(e.style).toBe('styles/osm-bright/style.json');
    expect(e.sprite).toBe('styles/osm-bright/sprite');
    expect(m.fonts).toBe('fonts');
    expect(Object.keys(e.archives).sort()).toEqual([...ARCHIVES].sort());
    const expected = tileCountInBBox(m.tilesets.openmaptiles.bounds, STYLE.minzoom, STYLE.maxzoom);
    for (const k of ARCHIVES) {
      expect(e.archives[k].tiles).toBe(expected);
      expect((await archiveTiles(refArchive(k))).size).toBe(expected);
    }
    const prepared = JSON.parse(await readFile(join(ref, e.style), 'utf8'));
    expect(prepared.sources.openmaptiles.url).toBe('tilebake://data/openmaptiles.json');
    expect(prepared.glyphs).toBe('tilebake://fonts/{fontstack}/{range}.pbf');
    expect(prepared.sprite).toBe('tilebake://styles/osm-bright/sprite');
    for (const f of ['sprite.json', 'sprite.png', 'sprite@2x.json', 'sprite@2x.png']) expect((await stat(join(ref, 'styles/osm-bright', f))).size).toBeGreaterThan(0);
  });

  test("a tile over Monaco's sea has the style's water colour", async () => {
    const water = paint('water', 'fill-color');
    const px = await rgb(await readTile(refArchive('1x.png'), SEA.z, SEA.x, SEA.y));
    const [top] = histogram(px.data);
    const colour = top[0].split(',').map(Number);
    for (let c = 0; c < 3; c++) expect(Math.abs(colour[c] - water[c])).toBeLessThanOrEqual(2);
    // The water fill covers most of the tile (the rest is the style's wave pattern over it).
    expect(countNear(px.data, water, 16) / (256 * 256)).toBeGreaterThan(0.9);
  });

  test('a z14 tile over the city has road, building and label pixels', async () => {
    const px = await rgb(await readTile(refArchive('1x.png'), CITY.z, CITY.x, CITY.y));
    expect(histogram(px.data).length).toBeGreaterThan(500);
    const road = countNear(px.data, paint('highway-primary', 'line-color'), 6);
    const building = countNear(px.data, paint('building', 'fill-color'), 3);
    const label = countNear(px.data, paint('place-other', 'text-color'), 20);
    expect(road).toBeGreaterThan(500);
    expect(building).toBeGreaterThan(200);
    expect(label).toBeGreaterThan(50);
  });

  test('@2x tiles are 512×512 and, downscaled, match the 1x tile (mean |Δ| < 4 per channel)', async () => {
    for (const t of [CITY, SEA]) {
      const two = await readTile(refArchive('2x.png'), t.z, t.x, t.y);
      const full = await rgb(two);
      expect([full.width, full.height]).toEqual([512, 512]);
      const one = await rgb(await readTile(refArchive('1x.png'), t.z, t.x, t.y));
      const d = compare(one.data, (await rgb(two, 256)).data);
      expect(d.mean).toBeLessThan(4);
      expect(d.bigFraction).toBeLessThan(0.01);
    }
  });

  test('PNG and JPEG decode to the same picture (mean |Δ| < 5, < 1% of pixels off by > 40)', async () => {
    for (const scale of ['1x', '2x']) {
      for (const t of [CITY, SEA]) {
        const p = await rgb(await readTile(refArchive(`${scale}.png`), t.z, t.x, t.y));
        const j = await rgb(await readTile(refArchive(`${scale}.jpg`), t.z, t.x, t.y));
        const d = compare(p.data, j.data);
        expect(d.mean).toBeLessThan(5);
        expect(d.bigFraction).toBeLessThan(0.01);
      }
    }
  });

  test('seams: tiles sliced from metatiles match the same tiles rendered alone', async () => {
    const out = await tempDir('render-alone');
    await copyVectorOutput(base, out);
    const { config } = await writeConfig(out, 'config.json', sampleConfig(out, { minzoom: 14, maxzoom: 14, scales: [1], formats: ['png'] }, { ...RENDER, metatile: 1 }));
    await runRenderStage(config, out, { workers: 1 });
    const alone = await archiveTiles(join(out, 'styles/osm-bright/1x.png.pmtiles'));
    expect(alone.size).toBeGreaterThanOrEqual(4);
    for (const id of alone.keys()) {
      const [zz, xx, yy] = tileIdToZxy(Number(id));
      const a = await rgb(await readTile(join(out, 'styles/osm-bright/1x.png.pmtiles'), zz, xx, yy));
      const b = await rgb(await readTile(refArchive('1x.png'), zz, xx, yy));
      const d = compare(a.data, b.data);
      expect(d.mean).toBeLessThan(1);
      expect(d.bigFraction).toBeLessThan(0.005);
    }
  }, LONG);

  test('seams: lines and labels are continuous across a metatile edge', async () => {
    // CITY and its east neighbour lie in different metatiles (metatile 2: x = 8529 | 8530).
    expect(Math.floor(CITY.x / METATILE)).not.toBe(Math.floor((CITY.x + 1) / METATILE));
    const left = await rgb(await readTile(refArchive('1x.png'), CITY.z, CITY.x, CITY.y));
    const right = await rgb(await readTile(refArchive('1x.png'), CITY.z, CITY.x + 1, CITY.y));
    const col = (img: { data: Buffer }, x: number, y: number, c: number) => img.data[(y * 256 + x) * 3 + c];
    let across = 0;
    let inside = 0;
    for (let y = 0; y < 256; y++) {
      for (let c = 0; c < 3; c++) {
        across += Math.abs(col(left, 255, y, c) - col(right, 0, y, c));
        inside += Math.abs(col(left, 254, y, c) - col(left, 255, y, c)) + Math.abs(col(right, 0, y, c) - col(right, 1, y, c));
      }
    }
    // Across the edge the picture changes no more than between neighbouring columns inside a tile.
    expect(across).toBeLessThan(1.5 * (inside / 2) + 256);
    // Road pixels on the edge continue on the other side (±1 px).
    const roadColour = paint('highway-primary', 'line-color');
    const isRoad = (img: { data: Buffer }, x: number, y: number) => [0, 1, 2].every((c) => Math.abs(col(img, x, y, c) - roadColour[c]) <= 12);
    let roadRows = 0;
    let continued = 0;
    for (let y = 1; y < 255; y++) {
      if (!isRoad(left, 255, y)) continue;
      roadRows++;
      if (isRoad(right, 0, y - 1) || isRoad(right, 0, y) || isRoad(right, 0, y + 1)) continued++;
    }
    expect(roadRows).toBeGreaterThan(3);
    expect(continued / roadRows).toBeGreaterThan(0.9);
  });

  test('a build killed with SIGKILL mid-render resumes and gives the same tiles as an uninterrupted run', async () => {
    const out = await tempDir('render-resume');
    await copyVectorOutput(base, out);
    const journal = join(out, '.work/render/osm-bright/1x.png.pmtiles.journal');
    // One metatile per task, so that the journals hold records seconds before the scale ends (with 4 per
    // task the last two tasks of this small job return together). The resumed run below takes the
    // default of 4: the task size is not part of what the pixels depend on.
    const killed = await writeConfig(out, 'killed.json', sampleConfig(out, STYLE, { ...RENDER, batch: 1 }));
    const run = startCli(['build', '--config', killed.file, '--out', out, '--only', 'render', '--workers', '1']);
    const child = run.child;
    const exited = run.exited.then((e) => e.signal ?? e.code);
    // Kill as soon as the first metatile is journalled in both formats (header + at least one record);
    // checked every 20 ms with synchronous stats, so the check does not wait behind other I/O.
    const HEADER_ONLY = 200;
    const journalled = (path: string) => (statSync(path, { throwIfNoEntry: false })?.size ?? 0) > HEADER_ONLY;
    let sent = false;
    while (!sent) {
      if (journalled(journal) && journalled(journal.replace('1x.png', '1x.jpg'))) {
        child.kill('SIGKILL');
        sent = true;
      } else if (child.exitCode !== null) {
        break;
      } else {
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    expect(await exited).toBe('SIGKILL');
    await expect(stat(join(out, 'styles/osm-bright/1x.png.pmtiles'))).rejects.toThrow();
    const { config } = await writeConfig(out, 'config.json', sampleConfig(out, STYLE, RENDER));
    // The resumed run says so, with the metatiles it reuses (issue 19).
    const lines: string[] = [];
    const write = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => lines.push(String(chunk)) > 0);
    process.env.TILEBAKE_QUIET = '';
    let stats;
    try {
      stats = await runRenderStage(config, out, { workers: 1 });
    } finally {
      process.env.TILEBAKE_QUIET = '1';
      write.mockRestore();
    }
    expect(stats.resumedMetatiles).toBeGreaterThan(0);
    const resumed = lines.find((l) => l.includes('resuming an interrupted render'));
    expect(resumed).toMatch(new RegExp(`^render osm-bright @1x: resuming an interrupted render: ${stats.resumedMetatiles} of \\d+ metatiles reused from .*1x\\.png\\.pmtiles\\.journal`));
    for (const k of ARCHIVES) {
      expect(await archiveTiles(join(out, `styles/osm-bright/${k}.pmtiles`))).toEqual(await archiveTiles(refArchive(k)));
    }
  }, LONG);

  test('shards 0/2 and 1/2 merged give the same tiles as one run; merge refuses incomplete sets', async () => {
    const out = await tempDir('render-shards');
    await copyVectorOutput(base, out);
    const { config } = await writeConfig(out, 'config.json', sampleConfig(out, STYLE, RENDER));
    for (const index of [0, 1]) await runRenderStage(config, out, { workers: 1, shard: { index, count: 2 } });
    const dir = join(out, 'styles/osm-bright');
    const parts = (k: string) => [0, 1].map((i) => join(dir, `${k}.shard-${i}-of-2.pmtiles`));
    const p0 = await archiveTiles(parts('1x.png')[0]);
    const p1 = await archiveTiles(parts('1x.png')[1]);
    expect(p0.size).toBeGreaterThan(0);
    expect(p1.size).toBeGreaterThan(0);
    for (const k of ARCHIVES) {
      await mergeArchives(parts(k), join(dir, `${k}.pmtiles`));
      expect(await archiveTiles(join(dir, `${k}.pmtiles`))).toEqual(await archiveTiles(refArchive(k)));
      // Byte for byte, metadata included (the render identity keeps its style fingerprint, so the next
      // incremental build can re-render only what changed instead of taking the "style changed" path).
      expect((await readFile(join(dir, `${k}.pmtiles`))).equals(await readFile(refArchive(k)))).toBe(true);
    }
    await expect(mergeArchives([parts('1x.png')[0]], join(out, 'x.pmtiles'))).rejects.toThrow(/shards 1\/2 are missing/);
    await expect(mergeArchives([parts('1x.png')[0], parts('1x.jpg')[1]], join(out, 'x.pmtiles'))).rejects.toThrow(/fingerprints differ/);
    // A normal build afterwards finds the merged archives up to date and records them in the manifest.
    const before = (await stat(join(dir, '1x.png.pmtiles'))).mtimeMs;
    await runRenderStage(config, out, { workers: 1 });
    expect((await stat(join(dir, '1x.png.pmtiles'))).mtimeMs).toBe(before);
    const m = await readManifestOrEmpty(out);
    expect(Object.keys(m.styles['osm-bright'].archives).sort()).toEqual([...ARCHIVES].sort());
  }, LONG);

  test('a style request for a resource that is not available locally fails the build naming the URL', async () => {
    const out = await tempDir('render-missing');
    await copyVectorOutput(base, out);
    const broken = JSON.parse(JSON.stringify(style));
    for (const l of broken.layers) if (l.layout?.['text-font']) l.layout['text-font'] = ['Missing Sans Regular'];
    const styleFile = join(out, 'missing-font.json');
    await writeFile(styleFile, JSON.stringify({ ...broken, sprite: join(resolve(OSM_BRIGHT, '..'), 'sprite') }));
    const [x, y] = [CITY.x, CITY.y];
    const b = tileBounds(14, x, y);
    const inner: [number, number, number, number] = [b[0] + 1e-4, b[1] + 1e-4, b[2] - 1e-4, b[3] - 1e-4];
    const raw = sampleConfig(out, { minzoom: 14, maxzoom: 14, scales: [1], formats: ['png'], bbox: inner }, { ...RENDER, retries: 0 });
    (raw.styles as Record<string, Record<string, unknown>>)['osm-bright'].style = styleFile;
    const { config } = await writeConfig(out, 'config.json', raw);
    await expect(runRenderStage(config, out, { workers: 1 })).rejects.toThrow(/not available locally: .*\/fonts\/Missing Sans Regular\/0-255\.pbf/);
  }, LONG);

  test('Chromium missing: the error gives the install command', async () => {
    await expect(assertChromium('/nonexistent/chromium')).rejects.toThrow(/apt-get install chromium-headless-shell/);
  });
});
