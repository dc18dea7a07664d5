/**
 * Pre-rendered tiles use the glyphs and sprites a client of the served style.json gets: a font stack is
 * merged per code point (lib/glyphs/font-stacks.ts), whatever renders it. A stack whose first font lacks
 * the letters (a copy of Noto Sans Regular without a–z) must render like Noto Sans Regular alone; the
 * first font alone renders otherwise (the labels lose their letters), so the comparison can fail. A
 * style whose sprite is made from a folder of SVG icons (pipeline/render/sprite.ts) bakes its icon.
 */
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { beforeAll, describe, expect, test } from 'vitest';
import { lonLatToTile, tileBounds } from '../lib/tile-math.ts';
import { runRenderStage } from '../pipeline/render/stage.ts';
import { runVectorStage } from '../pipeline/vector/stage.ts';
import { decodeGlyphs, encodeGlyphs } from '../lib/glyphs/glyph-pbf.ts';
import { archiveTiles, OSM_BRIGHT, readTile, SAMPLE, tempDir, writeConfig } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';
const LONG = 300_000;
/** A z14 tile over Monaco's centre, with street and place labels. */
const CITY = { z: 14, ...lonLatToTile(7.4196, 43.7335, 14) };
const NOTO = 'Noto Sans Regular';
const PARTIAL = 'Partial Sans';
/** The fonts each style's labels use. */
const STACKS: Record<string, string[]> = { noto: [NOTO], stack: [PARTIAL, NOTO], partial: [PARTIAL] };
/** The SVG icons of test/fixtures/icons/ (square.svg: 12×12 px of #e6194b). */
const ICONS = join(import.meta.dirname, 'fixtures', 'icons');
const SQUARE_RGB = [0xe6, 0x19, 0x4b];

let out: string;

describe.sequential('render stage: font stacks', () => {
  beforeAll(async () => {
    out = await tempDir('render-glyphs');
    // The sample's fonts plus "Partial Sans": Noto Sans Regular's 0-255 without the lower-case letters.
    const fonts = join(out, 'fonts-src');
    await cp(join(SAMPLE, 'fonts'), fonts, { recursive: true });
    const noto = decodeGlyphs(await readFile(join(fonts, NOTO, '0-255.pbf')))[0];
    const lower = (id: number) => id >= 'a'.charCodeAt(0) && id <= 'z'.charCodeAt(0);
    await mkdir(join(fonts, PARTIAL));
    await writeFile(join(fonts, PARTIAL, '0-255.pbf'), encodeGlyphs([{ ...noto, name: PARTIAL, glyphs: noto.glyphs.filter((g) => !lower(g.id)) }]));
    // osm-bright (its folder, for the sprite) with every label in one of the stacks.
    const styleDir = join(out, 'style');
    await cp(join(SAMPLE, 'styles', 'osm-bright'), styleDir, { recursive: true });
    const base = JSON.parse(await readFile(OSM_BRIGHT, 'utf8')) as { layers: { layout?: Record<string, unknown> }[] };
    const styles: Record<string, unknown> = {};
    const b = tileBounds(CITY.z, CITY.x, CITY.y);
    const inner = [b[0] + 1e-4, b[1] + 1e-4, b[2] - 1e-4, b[3] - 1e-4];
    for (const [id, stack] of Object.entries(STACKS)) {
      const style = structuredClone(base);
      for (const l of style.layers) if (l.layout?.['text-font']) l.layout['text-font'] = stack;
      const file = join(styleDir, `${id}.json`);
      await writeFile(file, JSON.stringify(style));
      styles[id] = { style: file, tileset: 'openmaptiles', minzoom: CITY.z, maxzoom: CITY.z, bbox: inner, scales: [1], formats: ['png'] };
    }
    // One icon of the SVG folder at the tile's centre, on white.
    const centre = [(b[0] + b[2]) / 2, (b[1] + b[3]) / 2];
    const icons = {
      version: 8,
      sources: { point: { type: 'geojson', data: { type: 'Feature', properties: {}, geometry: { type: 'Point', coordinates: centre } } } },
      layers: [
        { id: 'bg', type: 'background', paint: { 'background-color': '#ffffff' } },
        { id: 'icon', type: 'symbol', source: 'point', layout: { 'icon-image': 'square', 'icon-allow-overlap': true } },
      ],
    };
    await writeFile(join(styleDir, 'icons.json'), JSON.stringify(icons));
    styles.icons = { style: join(styleDir, 'icons.json'), tileset: 'openmaptiles', sprite: ICONS, minzoom: CITY.z, maxzoom: CITY.z, bbox: inner, scales: [1], formats: ['png'] };
    const { config } = await writeConfig(out, 'config.json', {
      out,
      tilesets: { openmaptiles: join(SAMPLE, 'monaco_omt.mbtiles') },
      styles,
      fonts,
      render: { metatile: 1, margin: 64, timeoutMs: 120_000 },
    });
    await runVectorStage(config, out);
    await runRenderStage(config, out, { workers: 1 });
  }, LONG);

  const tiles = (style: string) => archiveTiles(join(out, 'styles', style, '1x.png.pmtiles'));

  test('a stack renders each code point from the first font that has it, as the served glyphs give clients', async () => {
    const noto = await tiles('noto');
    expect(noto.size).toBe(1);
    expect(await tiles('stack')).toEqual(noto);
  });

  test('the first font alone renders other labels (the comparison above can fail)', async () => {
    expect(await tiles('partial')).not.toEqual(await tiles('noto'));
  });

  test('a style whose sprite is made from SVG icons bakes its icon where the style puts it', async () => {
    const png = await readTile(join(out, 'styles', 'icons', '1x.png.pmtiles'), CITY.z, CITY.x, CITY.y);
    const { data, info } = await sharp(png).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const at: [number, number][] = [];
    for (let i = 0; i < data.length; i += 3) {
      if (SQUARE_RGB.every((c, k) => Math.abs(data[i + k] - c) <= 2)) at.push([(i / 3) % info.width, Math.floor(i / 3 / info.width)]);
    }
    // The 12×12 px square, centred on the tile's centre.
    expect(at.length).toBeGreaterThanOrEqual(100);
    for (const [x, y] of at) expect(Math.max(Math.abs(x - 128), Math.abs(y - 128))).toBeLessThanOrEqual(8);
  });
});
