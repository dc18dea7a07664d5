// Pure helpers of the style routes: glyph PBF codec and combining, URL rewriting, raster TileJSON, bounded cache.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { StyleEntry } from '../lib/manifest.ts';
import { BoundedCache } from '../lib/bounded-cache.ts';
import { parseFontStack, parseGlyphRange } from '../lib/glyphs/font-stacks.ts';
import { combineGlyphs, decodeGlyphs, encodeGlyphs } from '../lib/glyphs/glyph-pbf.ts';
import { rasterTileJson } from '../static-server/styles/raster-tilejson.ts';
import { rewriteNeutralUrls } from '../lib/style-urls.ts';
import { SAMPLE_FONTS_DIR } from './fixtures/styles/output.ts';

describe('glyph PBF codec', () => {
  it('re-encodes every sample glyph file to the same bytes', () => {
    let files = 0;
    // One folder per font; the generator's stamp (.glyph-set.json) beside them.
    for (const font of readdirSync(SAMPLE_FONTS_DIR, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name)) {
      for (const f of readdirSync(join(SAMPLE_FONTS_DIR, font))) {
        const bytes = readFileSync(join(SAMPLE_FONTS_DIR, font, f));
        const stacks = decodeGlyphs(bytes);
        expect(stacks[0].range).toBe(f.replace('.pbf', ''));
        expect(stacks[0].glyphs.length).toBeGreaterThan(0);
        expect(Buffer.from(encodeGlyphs(stacks)).equals(bytes), `${font}/${f}`).toBe(true);
        files++;
      }
    }
    expect(files).toBeGreaterThan(20);
  });

  it('combines in order: first font wins, result sorted by codepoint', () => {
    const a = encodeGlyphs([{ name: 'A', range: '0-255', glyphs: [{ id: 66, width: 1, height: 1, left: 0, top: -1, advance: 5, bitmap: new Uint8Array(49).fill(1) }] }]);
    const b = encodeGlyphs([
      {
        name: 'B',
        range: '0-255',
        glyphs: [
          { id: 65, width: 2, height: 2, left: -1, top: -2, advance: 6, bitmap: new Uint8Array(64).fill(2) },
          { id: 66, width: 3, height: 3, left: 1, top: -3, advance: 7, bitmap: new Uint8Array(81).fill(3) },
        ],
      },
    ]);
    const [stack] = decodeGlyphs(combineGlyphs([a, b], 'A,B', '0-255'));
    expect(stack.name).toBe('A,B');
    expect(stack.glyphs.map((g) => [g.id, g.advance, g.left, g.top])).toEqual([
      [65, 6, -1, -2],
      [66, 5, 0, -1],
    ]);
  });
});

describe('glyph request parsing', () => {
  it('accepts 256-aligned ranges only', () => {
    expect(parseGlyphRange('0-255').start).toBe(0);
    expect(parseGlyphRange('65280-65535').end).toBe(65535);
    for (const bad of ['0-256', '1-256', '-256-0', '65536-65791', '0-255x', '']) expect(() => parseGlyphRange(bad), bad).toThrow(/glyph range/);
  });

  it('splits stacks and refuses path tricks', () => {
    expect(parseFontStack('Metropolis Regular, Noto Sans Regular')).toEqual(['Metropolis Regular', 'Noto Sans Regular']);
    for (const bad of ['..', 'a/b', 'a\\\\b', 'A,,B', '']) expect(() => parseFontStack(bad), bad).toThrow(/font/);
  });
});

describe('style URL rewriting', () => {
  it('rewrites only tilebake:// URLs of sources, sprite and glyphs', () => {
    const style = {
      version: 8,
      sources: {
        v: { type: 'vector', url: 'tilebake://data/openmaptiles.json' },
        r: { type: 'raster', tiles: ['tilebake://styles/x/{z}/{x}/{y}.png', 'https://other/{z}/{x}/{y}.png'] },
        g: { type: 'geojson', data: 'tilebake://data/x.geojson' },
      },
      sprite: 'tilebake://styles/x/sprite',
      glyphs: 'tilebake://fonts/{fontstack}/{range}.pbf',
      layers: [{ id: 'l', type: 'symbol', source: 'v', layout: { 'text-field': 'tilebake://not-a-url' } }],
    };
    const out = rewriteNeutralUrls(style, 'http://h:1/base/');
    expect(out.sources).toEqual({
      v: { type: 'vector', url: 'http://h:1/base/data/openmaptiles.json' },
      r: { type: 'raster', tiles: ['http://h:1/base/styles/x/{z}/{x}/{y}.png', 'https://other/{z}/{x}/{y}.png'] },
      g: { type: 'geojson', data: 'http://h:1/base/data/x.geojson' },
    });
    expect([out.sprite, out.glyphs]).toEqual(['http://h:1/base/styles/x/sprite', 'http://h:1/base/fonts/{fontstack}/{range}.pbf']);
    expect(out.layers).toEqual(style.layers);
    expect(style.sprite).toBe('tilebake://styles/x/sprite');
    const multi = rewriteNeutralUrls({ sprite: [{ id: 'a', url: 'tilebake://styles/x/sprite' }] }, 'http://h');
    expect(multi.sprite).toEqual([{ id: 'a', url: 'http://h/styles/x/sprite' }]);
  });
});

describe('raster TileJSON', () => {
  const entry = (keys: string[]): StyleEntry => ({
    style: 's.json',
    minzoom: 0,
    maxzoom: 5,
    bounds: [0, 0, 1, 1],
    center: [0.5, 0.5, 3],
    archives: Object.fromEntries(
      keys.map((k) => [k, { archive: `${k}.pmtiles`, format: k.split('.')[1], scale: k.startsWith('2') ? 2 : 1, tiles: 1, bytes: 1 }]),
    ) as StyleEntry['archives'],
  });

  it('points tiles at the first built format and documents @2x', () => {
    const jpgOnly = rasterTileJson('s', entry(['1x.jpg', '2x.jpg']), 'http://h');
    expect([jpgOnly.tiles, jpgOnly.tiles_2x, jpgOnly.tileSize]).toEqual([['http://h/styles/s/{z}/{x}/{y}.jpg'], ['http://h/styles/s/{z}/{x}/{y}@2x.jpg'], 256]);
    const onlyHiDpi = rasterTileJson('s', entry(['2x.png']), 'http://h');
    expect([onlyHiDpi.tiles, onlyHiDpi.tiles_2x, onlyHiDpi.tileSize]).toEqual([['http://h/styles/s/{z}/{x}/{y}@2x.png'], undefined, 512]);
    const both = rasterTileJson('s', entry(['1x.jpg', '1x.png']), 'http://h');
    expect([both.tiles, both.tiles_2x, both.built]).toEqual([['http://h/styles/s/{z}/{x}/{y}.png'], undefined, ['1x.jpg', '1x.png']]);
    expect(String(both.description)).toContain('@2x');
    // WebP alone is the main URL; beside PNG or JPEG it is listed in `built`.
    const webpOnly = rasterTileJson('s', entry(['1x.webp', '2x.webp']), 'http://h');
    expect([webpOnly.tiles, webpOnly.tiles_2x, webpOnly.format]).toEqual([['http://h/styles/s/{z}/{x}/{y}.webp'], ['http://h/styles/s/{z}/{x}/{y}@2x.webp'], 'webp']);
    const jpgWebp = rasterTileJson('s', entry(['1x.webp', '1x.jpg']), 'http://h');
    expect([jpgWebp.tiles, jpgWebp.built]).toEqual([['http://h/styles/s/{z}/{x}/{y}.jpg'], ['1x.jpg', '1x.webp']]);
  });
});

describe('BoundedCache', () => {
  it('evicts least recently used entries beyond the budget and shares concurrent loads', async () => {
    const cache = new BoundedCache<string>(10, (v) => v.length);
    let loads = 0;
    const load = (v: string) => async () => {
      loads++;
      return v;
    };
    const [x, y] = await Promise.all([cache.getOrLoad('a', load('aaaa')), cache.getOrLoad('a', load('zzzz'))]);
    expect([x, y, loads]).toEqual(['aaaa', 'aaaa', 1]);
    await cache.getOrLoad('b', load('bbbb'));
    await cache.getOrLoad('a', load('-'));
    await cache.getOrLoad('c', load('cccc'));
    expect([cache.size, cache.bytes]).toEqual([2, 8]);
    expect(await cache.getOrLoad('b', load('new'))).toBe('new');
    expect(await cache.getOrLoad('a', load('-'))).toBe('-'); // evicted by c and b
    await expect(cache.getOrLoad('e', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await cache.getOrLoad('e', load('ok'))).toBe('ok');
  });
});
