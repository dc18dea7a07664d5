/**
 * Colour ramps for colour relief, in `gdaldem color-relief`'s text format: one entry per line,
 * `elevation R G B [A]` or `elevation colourname [A]` (fields split by spaces, tabs, commas or
 * colons), `nv` for nodata. GDAL reads the ramp and interpolates; this only checks a user's file up
 * front, so that a bad line stops the build naming the file and line instead of failing (or, as GDAL
 * reads a word as 0 m, silently miscolouring) on the first tile.
 */
import { readFile } from 'node:fs/promises';
import { UserError } from '../../lib/errors.ts';

/** The colour names GDAL's color-relief knows (gdaldem_lib.cpp `namedColors`). */
const NAMED_COLOURS = new Set(['white', 'black', 'red', 'green', 'blue', 'yellow', 'magenta', 'cyan', 'aqua', 'grey', 'gray', 'orange', 'brown', 'purple', 'violet', 'indigo']);
/** GDAL's field separators. */
const FIELDS = /[ ,\t:]+/;
const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;
const CHANNEL = /^\d{1,3}$/;

/**
 * The default ramp: hypsometric tints from lowland green through tan to white summits (the colours
 * of Wikipedia's topographic map conventions), sea floor blue, nodata transparent; metres.
 */
export const DEFAULT_RELIEF_RAMP = `nv 0 0 0 0
-11000 10 30 80
-500 70 120 180
-0.1 150 190 220
0 172 208 165
200 148 191 139
500 168 198 143
1000 209 215 171
1500 225 228 181
2000 239 235 192
2500 222 214 163
3000 202 185 130
4000 172 154 124
5000 186 174 154
6000 224 222 216
8900 245 244 242
`;

/** One checked entry (for tests and messages). */
export interface RampEntry {
  /** Metres, or null for `nv`. */
  elevation: number | null;
  rgba: [number, number, number, number] | string;
}

/** Check a ramp's text; `where` names it in errors (`file:line: …`). Returns its entries. */
export function checkRamp(text: string, where: string): RampEntry[] {
  const entries: RampEntry[] = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith('/')) return;
    const at = `${where}:${i + 1}`;
    const f = line.split(FIELDS).filter((s) => s !== '');
    const bad = (why: string) => new UserError(`${at}: ${why} (got "${line}"; expected "elevation R G B [A]", "elevation colourname [A]" or "nv R G B [A]")`);
    if (f.length < 2 || f.length > 5) throw bad(`expected 2 to 5 fields, found ${f.length}`);
    let elevation: number | null;
    if (f[0].toLowerCase() === 'nv') elevation = null;
    else if (f[0].endsWith('%')) throw bad('percentages are relative to each tile\'s own range here: give the elevation in metres');
    else if (NUMBER.test(f[0])) elevation = Number(f[0]);
    else throw bad(`"${f[0]}" is not an elevation`);
    const channel = (s: string) => {
      if (!CHANNEL.test(s) || Number(s) > 255) throw bad(`"${s}" is not a colour value 0-255`);
      return Number(s);
    };
    if (f.length >= 4) {
      entries.push({ elevation, rgba: [channel(f[1]), channel(f[2]), channel(f[3]), f.length === 5 ? channel(f[4]) : 255] });
    } else {
      if (!NAMED_COLOURS.has(f[1].toLowerCase())) throw bad(`"${f[1]}" is not a colour GDAL knows (${[...NAMED_COLOURS].join(', ')})`);
      if (f.length === 3) channel(f[2]);
      entries.push({ elevation, rgba: f[1].toLowerCase() });
    }
  });
  if (!entries.some((e) => e.elevation !== null)) throw new UserError(`${where}: no colour entries (one "elevation R G B [A]" line at least)`);
  return entries;
}

/** A ramp file's text, checked (`file:line: …` errors). */
export async function readRamp(file: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new UserError(`${file}: cannot read the colour ramp (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  checkRamp(text, file);
  return text;
}
