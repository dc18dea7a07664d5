/** Style preparation: validation messages, source/sprite/glyph resolution, non-local URLs. */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import type { TilesetEntry } from '../lib/manifest.ts';
import { localizeStyle } from '../lib/style-language.ts';
import { prepareStyle } from '../pipeline/render/style.ts';
import { enumerateMetatiles, metatileView, tileRect } from '../lib/metatiles.ts';
import { renderOrder } from '../pipeline/render/selection.ts';
import { tileRangeForBBox } from '../lib/tile-math.ts';
import { OSM_BRIGHT, SAMPLE, tempDir } from './render-helpers.ts';

const vector: TilesetEntry = { archive: 'data/openmaptiles.pmtiles', kind: 'vector', format: 'pbf', minzoom: 0, maxzoom: 14, bounds: [7.40, 43.72, 7.45, 43.75], center: [7.42, 43.73, 10], tiles: 1, bytes: 1 };
const opts = { tilesets: { openmaptiles: vector }, defaultTileset: 'openmaptiles', fonts: join(SAMPLE, 'fonts'), scales: [1, 2] };

async function styleWith(change: (s: Record<string, any>) => void): Promise<{ dir: string; file: string }> {
  const dir = await tempDir('style');
  const s = JSON.parse(await readFile(OSM_BRIGHT, 'utf8'));
  s.sprite = join(SAMPLE, 'styles/osm-bright/sprite');
  change(s);
  const file = join(dir, 'style.json');
  await writeFile(file, JSON.stringify(s));
  return { dir, file };
}

describe('prepareStyle', () => {
  test('resolves mbtiles://{v3}, {styleJsonFolder} sprites and glyphs to tilebake:// URLs', async () => {
    const out = await tempDir('style-out');
    const p = await prepareStyle('osm-bright', OSM_BRIGHT, out, opts);
    expect(p.style.sources.openmaptiles.url).toBe('tilebake://data/openmaptiles.json');
    expect(p.style.sprite).toBe('tilebake://styles/osm-bright/sprite');
    expect(p.style.glyphs).toBe('tilebake://fonts/{fontstack}/{range}.pbf');
    expect(p.tilesets).toEqual(['openmaptiles']);
    const written = JSON.parse(await readFile(join(out, 'styles/osm-bright/style.json'), 'utf8'));
    expect(written.sources).toEqual(p.style.sources);
  });

  test('a language: the same rewrite as style.json?language= (lib/style-language.ts); a language the tiles lack fails naming the field', async () => {
    const carrying = { openmaptiles: { ...vector, vector_layers: [{ id: 'place', fields: { name: 'String', 'name:it': 'String', 'name:de': 'String', 'name:latin': 'String' } }] } };
    const out = await tempDir('style-lang');
    const p = await prepareStyle('osm-bright-it', OSM_BRIGHT, out, { ...opts, tilesets: carrying, language: { code: 'it', field: 'c.json: $.styles.osm-bright-it.language' } });
    expect(p.languages).toEqual(['de', 'it']);
    const plain = await prepareStyle('osm-bright', OSM_BRIGHT, out, { ...opts, tilesets: carrying });
    expect(p.style).toEqual(localizeStyle({ ...plain.style, sprite: 'tilebake://styles/osm-bright-it/sprite' }, 'it'));
    expect(JSON.parse(await readFile(join(out, 'styles/osm-bright-it/style.json'), 'utf8'))).toEqual(p.style);
    await expect(prepareStyle('x', OSM_BRIGHT, out, { ...opts, tilesets: carrying, language: { code: 'fr', field: 'c.json: $.styles.x.language' } })).rejects.toThrow(
      'c.json: $.styles.x.language: the tiles of tileset "openmaptiles" have no name:fr (they carry de, it)',
    );
    await expect(prepareStyle('x', OSM_BRIGHT, out, { ...opts, language: { code: 'it', field: 'c.json: $.styles.x.language' } })).rejects.toThrow(/have no name:it \(they carry no name:xx fields\)/);
  });

  test('a TileJSON URL naming a configured tileset resolves to it', async () => {
    const { file, dir } = await styleWith((s) => (s.sources.openmaptiles = { type: 'vector', url: 'https://tiles.example.com/data/openmaptiles.json' }));
    const p = await prepareStyle('s', file, dir, opts);
    expect(p.style.sources.openmaptiles.url).toBe('tilebake://data/openmaptiles.json');
  });

  test('validation errors name the file, the layer and the property', async () => {
    const { file, dir } = await styleWith((s) => (s.layers.find((l: any) => l.id === 'water').paint['fill-color'] = 12));
    await expect(prepareStyle('s', file, dir, opts)).rejects.toThrow(new RegExp(`${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: invalid style[\\s\\S]*layer "water" \\(layers\\[\\d+\\]\\)\\.paint\\.fill-color`));
  });

  test('a raster source on another host is refused, naming the URL', async () => {
    const { file, dir } = await styleWith((s) => (s.sources.sat = { type: 'raster', tiles: ['https://tiles.example.com/{z}/{x}/{y}.png'], tileSize: 256 }));
    await expect(prepareStyle('s', file, dir, opts)).rejects.toThrow(/sources\.sat: https:\/\/tiles\.example\.com\/\{z\}\/\{x\}\/\{y\}\.png is not available locally/);
  });

  test('a remote sprite and glyphs without a fonts folder are refused', async () => {
    const remote = await styleWith((s) => (s.sprite = 'https://example.com/sprite'));
    await expect(prepareStyle('s', remote.file, remote.dir, opts)).rejects.toThrow(/sprite: https:\/\/example\.com\/sprite is not available locally/);
    const local = await styleWith(() => undefined);
    await expect(prepareStyle('s', local.file, local.dir, { ...opts, fonts: undefined })).rejects.toThrow(/glyphs: .* is not available locally/);
  });
});

describe('metatiles', () => {
  test('clamp to the world at low zooms and cover the bbox at high zooms', () => {
    const world: [number, number, number, number] = [-180, -85, 180, 85];
    const [z0, z1, z2, z3] = [...enumerateMetatiles(world, 0, 3, 4)].reduce<number[][]>((a, m) => (a[m.z].push(m.tiles.length), a), [[], [], [], []]);
    expect(z0).toEqual([1]);
    expect(z1).toEqual([4]);
    expect(z2).toEqual([16]);
    expect(z3).toEqual([16, 16, 16, 16]);
    const m = [...enumerateMetatiles(vector.bounds, 14, 14, 4)];
    const range = tileRangeForBBox(vector.bounds, 14);
    // The grid starts at the bbox's first tile; only blocks along the far edges are partial.
    expect(m[0]).toMatchObject({ x0: range.minX, y0: range.minY, size: 4 });
    for (const x of m) {
      expect((x.x0 - range.minX) % 4 === 0 && (x.y0 - range.minY) % 4 === 0).toBe(true);
      expect(x.area.w * x.area.h).toBe(x.tiles.length);
      if (x.area.w < 4) expect(x.x0 + x.area.w - 1).toBe(range.maxX);
      if (x.area.h < 4) expect(x.y0 + x.area.h - 1).toBe(range.maxY);
    }
    // Every tile of the bbox exactly once.
    const keys = m.flatMap((x) => x.tiles.map((t) => `${t.x}/${t.y}`));
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.length).toBe((range.maxX - range.minX + 1) * (range.maxY - range.minY + 1));
    expect(metatileView(m[0], 64).width).toBe(m[0].area.w * 256 + 128);
    // Rendered highest zoom first, each zoom in enumeration order.
    const both = [...enumerateMetatiles(vector.bounds, 13, 14, 4)];
    const order = renderOrder(both);
    expect(order.map((x) => x.z)).toEqual([...both.filter((x) => x.z === 14), ...both.filter((x) => x.z === 13)].map((x) => x.z));
    expect(order.filter((x) => x.z === 14)).toEqual(both.filter((x) => x.z === 14));
  });

  test('the view is the metatile plus the margin; tiles are cut after the margin', () => {
    const v = metatileView({ z: 1, area: { x: 0, y: 0, w: 2, h: 2 } }, 64);
    expect(v).toMatchObject({ width: 640, height: 640, zoom: 0 });
    expect(v.center[0]).toBeCloseTo(0, 9);
    expect(v.center[1]).toBeCloseTo(0, 9);
    expect(tileRect({ area: { x: 4, y: 8, w: 2, h: 2 } }, { z: 5, x: 5, y: 9 }, 64, 2)).toEqual({ left: 640, top: 640, width: 512, height: 512 });
  });
});
