/**
 * A glyph set: the font stacks whose glyph PBFs are generated from font files, as a JSON file
 * (`data/sample/glyphs.json` for the sample):
 *
 *   { "fontDirs": ["/usr/share/fonts/truetype/noto"], "out": "fonts",
 *     "stacks": { "Noto Sans Regular": ["NotoSans-Regular.ttf", "NotoSansArabic-Regular.ttf", …] } }
 *
 * Each stack is written to `<out>/<stack>/<start>-<end>.pbf`; a code point comes from the first of
 * its fonts that has it. Font files are looked up in `fontDirs` in order; `out` and relative
 * `fontDirs` are relative to the JSON file.
 */
import { createHash } from 'node:crypto';
import { access, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { UserError } from '../../lib/errors.ts';
import { issueLines, jsonPath } from '../config/index.ts';
import { FONTNIK_VERSION } from './fontnik.ts';

/** Bumped when the generator writes other bytes from the same fonts (part of the cache key). */
export const GENERATOR_VERSION = 1;

/** A font stack name is a folder name and one entry of MapLibre's comma-joined `{fontstack}`. */
const stackName = z.string().min(1).regex(/^[^/\\\0,]+$/, 'a font stack name may not contain "/", "\\", "," or NUL').refine((s) => s.trim() === s && s !== '.' && s !== '..', 'not a plain folder name');

const glyphSetSchema = z.strictObject({
  $comment: z.string().optional(),
  fontDirs: z.array(z.string().min(1)).min(1),
  out: z.string().min(1),
  stacks: z.record(stackName, z.array(z.string().min(1).regex(/^[^/\\\0]+$/, 'a font file name, without a folder')).min(1)),
});

/** One font file of a set: where it is and its bytes. */
export interface FontFile {
  name: string;
  path: string;
  bytes: Buffer;
}

/** A glyph set read from its file, every font found and read. */
export interface GlyphSet {
  file: string;
  out: string;
  stacks: { name: string; fonts: FontFile[] }[];
  /** Cache key: the generator, fontnik, the stacks and every font's bytes. */
  hash: string;
}

/** Read and check a glyph set file and the fonts it names. */
export async function readGlyphSet(file: string): Promise<GlyphSet> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (e) {
    throw new UserError(`${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : `not valid JSON (${(e as Error).message})`}`);
  }
  const r = glyphSetSchema.safeParse(raw);
  if (!r.success) {
    throw new UserError(`${file}: invalid glyph set\n${r.error.issues.flatMap((i) => issueLines(i, glyphSetSchema)).map((l) => `  ${l}`).join('\n')}`);
  }
  const base = dirname(resolve(file));
  const dirs = r.data.fontDirs.map((d) => resolve(base, d));
  const fonts = new Map<string, Promise<FontFile>>();
  const font = (name: string, stack: string): Promise<FontFile> => {
    let f = fonts.get(name);
    if (!f) {
      f = (async () => {
        for (const dir of dirs) {
          const path = join(dir, name);
          if (await access(path).then(() => true, () => false)) return { name, path, bytes: await readFile(path) };
        }
        throw new UserError(`${file}: ${jsonPath(['stacks', stack])}: font file "${name}" is not in ${dirs.join(' or ')} (Debian's fonts-noto-core has the Noto fonts; \`make setup\` installs it)`);
      })();
      fonts.set(name, f);
    }
    return f;
  };
  const stacks = await Promise.all(Object.entries(r.data.stacks).map(async ([name, files]) => ({ name, fonts: await Promise.all(files.map((f) => font(f, name))) })));
  const h = createHash('sha256').update(JSON.stringify({ generator: GENERATOR_VERSION, fontnik: FONTNIK_VERSION, stacks: stacks.map((s) => [s.name, s.fonts.map((f) => f.name)]) }));
  for (const f of [...new Set(stacks.flatMap((s) => s.fonts))].sort((a, b) => a.name.localeCompare(b.name))) {
    h.update(`\0${f.name}\0`).update(f.bytes);
  }
  return { file: resolve(file), out: resolve(base, r.data.out), stacks, hash: h.digest('hex').slice(0, 16) };
}
