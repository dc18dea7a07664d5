/**
 * Glyph PBFs generated from Debian's Noto fonts with fontnik (pipeline/glyphs/): every range where a
 * font of the stack has a glyph, each code point from the first font that has it, at MapLibre's
 * parameters; generated once per fonts' hash; an unusable font or definition is a clear error and
 * leaves the folder as it was.
 */
import { cp, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { ensureGlyphSet, GLYPH_SET_STAMP } from '../pipeline/glyphs/generate.ts';
import { glyphRange, loadFont } from '../pipeline/glyphs/fontnik.ts';
import { decodeGlyphs } from '../lib/glyphs/glyph-pbf.ts';
import { tempDir } from './render-helpers.ts';

const NOTO = '/usr/share/fonts/truetype/noto';
/** Two small fonts that share Latin basics and punctuation: Hebrew first, Georgian after it. */
const HEBREW = 'NotoSansHebrew-Regular.ttf';
const GEORGIAN = 'NotoSansGeorgian-Regular.ttf';
const STACK = 'Test Sans';

let dir: string;
let fonts: string;
let setFile: string;
const out = () => join(dir, 'glyphs');

async function writeSet(stacks: Record<string, string[]>, extra: Record<string, unknown> = {}): Promise<void> {
  await writeFile(setFile, JSON.stringify({ fontDirs: [fonts], out: 'glyphs', stacks, ...extra }));
}
const rangesOf = async (stack: string) => (await readdir(join(out(), stack))).sort();
const glyphs = async (stack: string, range: string) => decodeGlyphs(await readFile(join(out(), stack, `${range}.pbf`)));

/** The code points of a font file (BMP), by the 256-code-point range they fall in. */
async function coverage(file: string): Promise<Map<string, Set<number>>> {
  const m = new Map<string, Set<number>>();
  for (const cp of (await loadFont(await readFile(file)))[0].points) {
    if (cp > 0xffff) continue;
    const start = cp - (cp % 256);
    const key = `${start}-${start + 255}`;
    if (!m.has(key)) m.set(key, new Set());
    m.get(key)!.add(cp);
  }
  return m;
}

describe.sequential('glyph sets', () => {
  beforeAll(async () => {
    dir = await tempDir('glyphs');
    fonts = join(dir, 'fonts');
    await mkdir(fonts);
    for (const f of [HEBREW, GEORGIAN]) await cp(join(NOTO, f), join(fonts, f));
    setFile = join(dir, 'set.json');
    // A folder of PBFs that is not the set's (as Metropolis in the sample's fonts folder).
    await mkdir(join(out(), 'Other Font'), { recursive: true });
    await writeFile(join(out(), 'Other Font', '0-255.pbf'), 'not ours');
  });

  test('a stack gets every range of its fonts, each code point from the first font that has it', async () => {
    await writeSet({ [STACK]: [HEBREW, GEORGIAN] });
    const r = await ensureGlyphSet(setFile);
    expect(r.generated).toBe(true);
    const hebrew = await coverage(join(fonts, HEBREW));
    const georgian = await coverage(join(fonts, GEORGIAN));
    const ranges = [...new Set([...hebrew.keys(), ...georgian.keys()])];
    expect(await rangesOf(STACK)).toEqual(ranges.map((k) => `${k}.pbf`).sort());
    expect(r.stacks[STACK].ranges).toBe(ranges.length);
    // Code points both fonts have whose glyphs differ: the stack must take Hebrew's (the first font).
    let contested = 0;
    for (const range of ranges) {
      const [stack] = await glyphs(STACK, range);
      expect([stack.name, stack.range]).toEqual([STACK, range]);
      // fontnik adds U+0000 to a range 0-255 (MapLibre never asks for it).
      const ids = new Set(stack.glyphs.map((g) => g.id).filter((id) => id !== 0));
      expect(ids, range).toEqual(new Set([...(hebrew.get(range) ?? []), ...(georgian.get(range) ?? [])]));
      // Each glyph is fontnik's of the first font that has the code point.
      const [s, e] = range.split('-').map(Number);
      const of = async (file: string) => new Map(decodeGlyphs(await glyphRange(await readFile(join(fonts, file)), s, e))[0].glyphs.map((g) => [g.id, g]));
      const [h, g] = [await of(HEBREW), await of(GEORGIAN)];
      for (const glyph of stack.glyphs) {
        expect(glyph, `${range} U+${glyph.id.toString(16)}`).toEqual(h.get(glyph.id) ?? g.get(glyph.id));
        if (h.has(glyph.id) && g.has(glyph.id) && JSON.stringify(h.get(glyph.id)) !== JSON.stringify(g.get(glyph.id))) contested++;
      }
    }
    expect(contested).toBeGreaterThan(0);
    expect(await readFile(join(out(), 'Other Font', '0-255.pbf'), 'utf8')).toBe('not ours');
  });

  test("fontnik draws at MapLibre's parameters: 24 px glyphs in a 3 px border", async () => {
    const [stack] = decodeGlyphs(await glyphRange(await readFile(join(NOTO, 'NotoSans-Regular.ttf')), 0, 255));
    for (const g of stack.glyphs) if (g.bitmap) expect(g.bitmap.length).toBe((g.width + 6) * (g.height + 6));
    // Noto Sans's capitals are 714/1000 em tall: 17 px at 24 px.
    const h = stack.glyphs.find((g) => g.id === 'H'.codePointAt(0))!;
    expect(h.height).toBeGreaterThanOrEqual(16);
    expect(h.height).toBeLessThanOrEqual(18);
  });

  test('nothing is generated again while the fonts and stacks are the same; a changed font is', async () => {
    const before = (await stat(join(out(), STACK, '0-255.pbf'))).mtimeMs;
    const again = await ensureGlyphSet(setFile);
    expect(again.generated).toBe(false);
    expect((await stat(join(out(), STACK, '0-255.pbf'))).mtimeMs).toBe(before);
    // Other bytes under the same file name: another hash, generated again.
    await cp(join(NOTO, 'NotoSansHebrew-Bold.ttf'), join(fonts, HEBREW));
    const changed = await ensureGlyphSet(setFile);
    expect(changed.generated).toBe(true);
    expect(changed.hash).not.toBe(again.hash);
  });

  test('a stack no longer in the set is removed, a new one added; other folders stay', async () => {
    await writeSet({ 'Georgian Only': [GEORGIAN] });
    const r = await ensureGlyphSet(setFile);
    expect(Object.keys(r.stacks)).toEqual(['Georgian Only']);
    expect((await readdir(out())).sort()).toEqual([GLYPH_SET_STAMP, 'Georgian Only', 'Other Font'].sort());
    expect(JSON.parse(await readFile(join(out(), GLYPH_SET_STAMP), 'utf8'))).toMatchObject({ hash: r.hash, stacks: { 'Georgian Only': r.stacks['Georgian Only'] } });
  });

  test('a font that cannot be read fails naming it and leaves the generated folders as they were', async () => {
    const stamp = await readFile(join(out(), GLYPH_SET_STAMP), 'utf8');
    await writeFile(join(fonts, 'Broken.ttf'), 'not a font');
    await writeSet({ 'Georgian Only': [GEORGIAN, 'Broken.ttf'] });
    await expect(ensureGlyphSet(setFile)).rejects.toThrow(/set\.json: .*Broken\.ttf: fontnik cannot read this font/);
    expect(await readFile(join(out(), GLYPH_SET_STAMP), 'utf8')).toBe(stamp);
    expect((await readdir(out())).sort()).toEqual([GLYPH_SET_STAMP, 'Georgian Only', 'Other Font'].sort());
  });

  test('a missing font file, a bad stack name or field is an error naming the file and field', async () => {
    await writeSet({ [STACK]: ['NoSuchFont-Regular.ttf'] });
    await expect(ensureGlyphSet(setFile)).rejects.toThrow(/set\.json: \$\.stacks\["Test Sans"\]: font file "NoSuchFont-Regular\.ttf" is not in .*fonts-noto-core/);
    await writeSet({ 'A,B': [GEORGIAN] });
    await expect(ensureGlyphSet(setFile)).rejects.toThrow(/invalid glyph set\n {2}\$\.stacks\["A,B"\]: invalid key: .*may not contain/);
    await writeSet({ [STACK]: [GEORGIAN] }, { extra: 1 });
    await expect(ensureGlyphSet(setFile)).rejects.toThrow(/invalid glyph set\n {2}\$\.extra: unknown field \(expected one of: \$comment, fontDirs, out, stacks\)/);
    await writeFile(setFile, '{');
    await expect(ensureGlyphSet(setFile)).rejects.toThrow(/set\.json: not valid JSON/);
  });
});
