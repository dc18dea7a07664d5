/**
 * Glyph PBFs of a glyph set (glyph-set.ts), generated once and cached by the set's hash (its fonts'
 * bytes, stacks, the generator and fontnik versions): `ensureGlyphSet` does nothing while the stamp
 * `<out>/.glyph-set.json` names the current hash. A stack gets every 256-code-point range of the
 * Basic Multilingual Plane (what MapLibre asks glyph PBFs for) where one of its fonts has a glyph; a
 * font's range is rendered only where it adds a code point the fonts before it lack. The stacks are
 * written beside each other in a temporary folder and moved into place one by one, then the stamp is
 * written: an interrupted run leaves the old folders or the new ones, and no stamp that claims them.
 */
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempPathFor, writeFileAtomic } from '../../lib/atomic.ts';
import { cpuBudget } from '../../lib/cpus.ts';
import { UserError } from '../../lib/errors.ts';
import { GLYPH_RANGE_SIZE, MAX_GLYPH_CODEPOINT } from '../../lib/glyphs/font-stacks.ts';
import { combineGlyphs } from '../../lib/glyphs/glyph-pbf.ts';
import { glyphRange, loadFont } from './fontnik.ts';
import { readGlyphSet, type FontFile, type GlyphSet } from './glyph-set.ts';

/** The stamp of a generated set, in its `out` folder. */
export const GLYPH_SET_STAMP = '.glyph-set.json';

/** What a stamp records. */
interface Stamp {
  hash: string;
  stacks: Record<string, { ranges: number; bytes: number }>;
}

/** What ensureGlyphSet did. */
export interface GlyphSetResult {
  out: string;
  hash: string;
  /** False when the set was current (nothing written). */
  generated: boolean;
  stacks: Stamp['stacks'];
  /** Milliseconds spent (reading the fonts and hashing included). */
  ms: number;
}

async function readStamp(out: string): Promise<Stamp | undefined> {
  try {
    return JSON.parse(await readFile(join(out, GLYPH_SET_STAMP), 'utf8')) as Stamp;
  } catch {
    return undefined;
  }
}

const isDir = (p: string) => stat(p).then((s) => s.isDirectory(), () => false);

/** An error of fontnik on `font`, naming the font and the set. */
function fontError(set: GlyphSet, font: FontFile, e: unknown): UserError {
  return new UserError(`${set.file}: ${font.path}: fontnik cannot read this font (${(e as Error).message})`);
}

/** The ranges (start code points) where each code point of `font` falls, with the code points in each. */
async function rangesOf(set: GlyphSet, font: FontFile): Promise<Map<number, Set<number>>> {
  const faces = await loadFont(font.bytes).catch((e: unknown) => {
    throw fontError(set, font, e);
  });
  const ranges = new Map<number, Set<number>>();
  for (const cp of faces[0]?.points ?? []) {
    if (cp > MAX_GLYPH_CODEPOINT) continue;
    const start = cp - (cp % GLYPH_RANGE_SIZE);
    let s = ranges.get(start);
    if (!s) ranges.set(start, (s = new Set()));
    s.add(cp);
  }
  return ranges;
}

/** Run `tasks` with at most `limit` at once. */
async function pool(tasks: (() => Promise<void>)[], limit: number): Promise<void> {
  let next = 0;
  const run = async () => {
    while (next < tasks.length) await tasks[next++]();
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, run));
}

/** Generate every stack of `set` into `dir` (a fresh folder); resolves each stack's ranges and bytes. */
async function generate(set: GlyphSet, dir: string): Promise<Stamp['stacks']> {
  const coverage = new Map<FontFile, Promise<Map<number, Set<number>>>>();
  const cover = (f: FontFile) => {
    let c = coverage.get(f);
    if (!c) coverage.set(f, (c = rangesOf(set, f)));
    return c;
  };
  // A font's rendered range, shared by every stack that takes code points of that range from it.
  const rendered = new Map<string, Promise<Uint8Array>>();
  const render = (f: FontFile, start: number) => {
    const key = `${f.name}\0${start}`;
    let r = rendered.get(key);
    if (!r) rendered.set(key, (r = glyphRange(f.bytes, start, start + GLYPH_RANGE_SIZE - 1).catch((e: unknown) => Promise.reject(fontError(set, f, e)))));
    return r;
  };
  const stacks: Stamp['stacks'] = {};
  const tasks: (() => Promise<void>)[] = [];
  for (const stack of set.stacks) {
    const fonts = await Promise.all(stack.fonts.map(async (f) => ({ f, ranges: await cover(f) })));
    const starts = [...new Set(fonts.flatMap(({ ranges }) => [...ranges.keys()]))].sort((a, b) => a - b);
    const folder = join(dir, stack.name);
    await mkdir(folder, { recursive: true });
    const totals = (stacks[stack.name] = { ranges: starts.length, bytes: 0 });
    for (const start of starts) {
      // The fonts that add code points to this range, in stack order.
      const seen = new Set<number>();
      const from: FontFile[] = [];
      for (const { f, ranges } of fonts) {
        const cps = ranges.get(start);
        if (!cps || [...cps].every((cp) => seen.has(cp))) continue;
        for (const cp of cps) seen.add(cp);
        from.push(f);
      }
      tasks.push(async () => {
        const name = `${start}-${start + GLYPH_RANGE_SIZE - 1}`;
        const bytes = combineGlyphs(await Promise.all(from.map((f) => render(f, start))), stack.name, name);
        await writeFile(join(folder, `${name}.pbf`), bytes);
        totals.bytes += bytes.byteLength;
      });
    }
  }
  await pool(tasks, Math.max(1, cpuBudget().cpus));
  return stacks;
}

/**
 * Make the glyph PBFs of the set in `file` current: generate them when the stamp in its `out` folder
 * does not name the set's hash (or a stack folder is missing), else nothing. Other folders in `out`
 * (fonts given as PBFs) are left alone; stacks of an older stamp that the set no longer has are removed.
 */
export async function ensureGlyphSet(file: string, opts: { force?: boolean } = {}): Promise<GlyphSetResult> {
  const t0 = performance.now();
  const set = await readGlyphSet(file);
  const stamp = await readStamp(set.out);
  const present = await Promise.all(set.stacks.map((s) => isDir(join(set.out, s.name))));
  if (!opts.force && stamp?.hash === set.hash && present.every(Boolean)) {
    return { out: set.out, hash: set.hash, generated: false, stacks: stamp.stacks, ms: performance.now() - t0 };
  }
  await mkdir(set.out, { recursive: true });
  const tmp = tempPathFor(join(set.out, 'glyph-set'));
  try {
    const stacks = await generate(set, join(tmp, 'new'));
    // Old folders go into the temporary folder (removed with it), new ones take their place.
    await mkdir(join(tmp, 'old'));
    const stale = Object.keys(stamp?.stacks ?? {}).filter((name) => !(name in stacks));
    for (const [i, name] of [...Object.keys(stacks), ...stale].entries()) {
      if (await isDir(join(set.out, name))) await rename(join(set.out, name), join(tmp, 'old', String(i)));
      if (name in stacks) await rename(join(tmp, 'new', name), join(set.out, name));
    }
    await writeFileAtomic(join(set.out, GLYPH_SET_STAMP), `${JSON.stringify({ hash: set.hash, stacks } satisfies Stamp, null, 2)}\n`);
    return { out: set.out, hash: set.hash, generated: true, stacks, ms: performance.now() - t0 };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
