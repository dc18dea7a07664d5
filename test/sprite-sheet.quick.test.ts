// Sprites from a folder of SVG icons (pipeline/render/sprite.ts), no browser: each icon of the sheet at
// 1x and @2x is librsvg's own drawing of its SVG (sharp at density 72 × scale) pixel for pixel; the same
// folder gives the same bytes; `{"extend": …}` keeps the style's own sheet and its icons where they were;
// a broken SVG and a bad config field fail naming the file and the field.
import { cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TilesetEntry } from '../lib/manifest.ts';
import { parseConfig } from '../pipeline/config/index.ts';
import { prepareSprite, type SpriteEntry } from '../pipeline/render/sprite.ts';
import { prepareStyle } from '../pipeline/render/style.ts';
import { OSM_BRIGHT, SAMPLE, tempDir } from './render-helpers.ts';

/** Three small icons written for these tests (test/fixtures/icons/). */
const ICONS = join(import.meta.dirname, 'fixtures', 'icons');
const NAMES = ['circle', 'square', 'triangle'];
const OSM_BRIGHT_SPRITE = join(SAMPLE, 'styles', 'osm-bright', 'sprite');

let dir: string;

beforeAll(async () => {
  dir = await tempDir('sprite');
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A sheet's pixels (RGBA) and its index. */
async function sheet(base: string): Promise<{ data: Buffer; width: number; json: Record<string, SpriteEntry>; png: Buffer }> {
  const png = await readFile(`${base}.png`);
  const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, json: JSON.parse(await readFile(`${base}.json`, 'utf8')), png };
}

/** The RGBA pixels of the `e` box of a sheet. */
function cut(s: { data: Buffer; width: number }, e: SpriteEntry): Buffer {
  const out = Buffer.alloc(e.width * e.height * 4);
  for (let j = 0; j < e.height; j++) s.data.copy(out, j * e.width * 4, ((e.y + j) * s.width + e.x) * 4, ((e.y + j) * s.width + e.x + e.width) * 4);
  return out;
}

/** librsvg's own drawing of an SVG at `scale`, as sharp gives it. */
async function librsvg(file: string, scale: number): Promise<{ data: Buffer; width: number; height: number }> {
  const { data, info } = await sharp(await readFile(file), { density: 72 * scale }).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

function overlaps(a: SpriteEntry, b: SpriteEntry): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

describe('sprites from a folder of SVG icons', () => {
  it('each icon at 1x and @2x is librsvg\'s drawing of its SVG pixel for pixel, boxes apart; the same folder, the same bytes', async () => {
    const out = join(dir, 'replace');
    await mkdir(out, { recursive: true });
    expect(await prepareSprite('style.json', undefined, out, { scales: [1, 2], folder: ICONS })).toBe(true);
    for (const [suffix, scale] of [['', 1], ['@2x', 2]] as const) {
      const s = await sheet(join(out, `sprite${suffix}`));
      expect(Object.keys(s.json)).toEqual(NAMES);
      for (const name of NAMES) {
        const e = s.json[name];
        const want = await librsvg(join(ICONS, `${name}.svg`), scale);
        expect(e.pixelRatio).toBe(scale);
        expect([e.width, e.height]).toEqual([want.width, want.height]);
        expect(cut(s, e).equals(want.data), `${name}${suffix}`).toBe(true);
        for (const other of NAMES.filter((n) => n !== name)) expect(overlaps(e, s.json[other]), `${name} and ${other}`).toBe(false);
      }
      // The 1x SVG sizes: square 12, circle 11, triangle 13×17 px.
      expect([s.json.triangle.width, s.json.triangle.height]).toEqual([13 * scale, 17 * scale]);
    }
    const again = join(dir, 'again');
    await mkdir(again, { recursive: true });
    await prepareSprite('style.json', undefined, again, { scales: [1], folder: ICONS });
    for (const f of ['sprite.png', 'sprite.json', 'sprite@2x.png', 'sprite@2x.json']) expect((await readFile(join(again, f))).equals(await readFile(join(out, f))), f).toBe(true);
  });

  it('extends the style\'s own sheet: its icons keep their pixels and places, the folder\'s are added, a name in both is the folder\'s', async () => {
    const icons = join(dir, 'extend-icons');
    await cp(ICONS, icons, { recursive: true });
    // A name osm-bright's sprite has: the folder's icon wins.
    await cp(join(ICONS, 'square.svg'), join(icons, 'airport_11.svg'));
    const out = join(dir, 'extend');
    await mkdir(out, { recursive: true });
    await prepareSprite(OSM_BRIGHT, `${OSM_BRIGHT_SPRITE}`, out, { scales: [1, 2], folder: { extend: icons } });
    for (const [suffix, scale] of [['', 1], ['@2x', 2]] as const) {
      const own = await sheet(`${OSM_BRIGHT_SPRITE}${suffix}`);
      const s = await sheet(join(out, `sprite${suffix}`));
      expect(Object.keys(s.json).sort()).toEqual([...new Set([...Object.keys(own.json), ...NAMES])].sort());
      for (const [name, e] of Object.entries(own.json)) {
        if (name === 'airport_11') continue;
        expect(s.json[name]).toEqual(e);
        expect(cut(s, s.json[name]).equals(cut(own, e)), name).toBe(true);
      }
      const square = await librsvg(join(ICONS, 'square.svg'), scale);
      expect(cut(s, s.json.airport_11).equals(square.data)).toBe(true);
      expect(s.json.airport_11.y).toBeGreaterThanOrEqual(Math.max(...Object.values(own.json).map((e) => e.y + e.height)));
    }
  });

  it('the prepared style points at the build\'s sheet, also for a style without a sprite of its own', async () => {
    const style = join(dir, 'no-sprite.json');
    const s = JSON.parse(await readFile(OSM_BRIGHT, 'utf8')) as Record<string, unknown>;
    delete s.sprite;
    await writeFile(style, JSON.stringify(s));
    const out = join(dir, 'prepared');
    const vector: TilesetEntry = { archive: 'data/openmaptiles.pmtiles', kind: 'vector', format: 'pbf', minzoom: 0, maxzoom: 14, bounds: [7.4, 43.72, 7.45, 43.75], center: [7.42, 43.73, 10], tiles: 1, bytes: 1 };
    const p = await prepareStyle('icons', style, out, { tilesets: { openmaptiles: vector }, defaultTileset: 'openmaptiles', scales: [1], fonts: join(SAMPLE, 'fonts'), sprite: { folder: ICONS, field: 'c.json: $.styles.icons.sprite' } });
    expect(p.sprite).toBe(true);
    expect(p.style.sprite).toBe('tilebake://styles/icons/sprite');
    expect(Object.keys(JSON.parse(await readFile(join(out, 'styles/icons/sprite@2x.json'), 'utf8')))).toEqual(NAMES);
  });

  it('an SVG librsvg cannot draw, a file that is not an SVG and an empty folder fail naming the file or the field', async () => {
    const bad = join(dir, 'bad');
    await cp(ICONS, bad, { recursive: true });
    await writeFile(join(bad, 'broken.svg'), '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect');
    const out = join(dir, 'bad-out');
    await mkdir(out, { recursive: true });
    await expect(prepareSprite('s.json', undefined, out, { scales: [1], folder: bad })).rejects.toThrow(`${join(bad, 'broken.svg')}: cannot draw the SVG icon`);
    await rm(join(bad, 'broken.svg'));
    await writeFile(join(bad, 'photo.svg'), await sharp({ create: { width: 4, height: 4, channels: 3, background: '#fff' } }).png().toBuffer());
    await expect(prepareSprite('s.json', undefined, out, { scales: [1], folder: bad })).rejects.toThrow(`${join(bad, 'photo.svg')}: cannot draw the SVG icon (it is a png image, not an SVG)`);
    const empty = join(dir, 'empty');
    await mkdir(empty);
    await writeFile(join(empty, 'README.md'), 'no icons here');
    await expect(prepareSprite('s.json', undefined, out, { scales: [1], folder: empty, field: 'c.json: $.styles.s.sprite' })).rejects.toThrow(`c.json: $.styles.s.sprite: ${empty} holds no .svg icons`);
  });

  it('the config field: a folder relative to the config, or {"extend": folder}; anything else names the field', () => {
    const raw = (sprite: unknown) => ({ tilesets: { t: 'a.mbtiles' }, styles: { s: { style: 's.json', sprite } } });
    expect(parseConfig(raw('icons/'), '/cfg/c.json').styles.s.sprite).toBe('/cfg/icons');
    expect(parseConfig(raw({ extend: 'icons' }), '/cfg/c.json').styles.s.sprite).toEqual({ extend: '/cfg/icons' });
    expect(() => parseConfig(raw({ replace: 'icons' }), '/cfg/c.json')).toThrow(/\$\.styles\.s\.sprite/);
    expect(() => parseConfig(raw(3), '/cfg/c.json')).toThrow(/\$\.styles\.s\.sprite: expected a folder of SVG icons/);
  });
});
