/**
 * A style's sprite in the build, `<out>/styles/<id>/sprite{,@2x}.{json,png}`: the style's own sheet
 * copied (its `sprite` URL, relative to the style file), or made from a folder of SVG icons (the style
 * entry's `"sprite"`): `"icons/"` replaces the style's own sheet, `{"extend": "icons/"}` adds to it.
 *
 * A folder's icons (`<name>.svg`, one icon each, named by the file) are drawn by librsvg through sharp at
 * 1x and 2x (density 72 × scale), packed with potpack, copied into one sheet per scale and encoded by
 * sharp as PNG; `sprite.json` gives each `{x, y, width, height, pixelRatio}`. Names are sorted first, so
 * the same folder gives the same bytes (and the render fingerprint, which hashes the sprite files,
 * follows the SVGs' contents). Extending keeps the style's own sheet as it is, its icons where they were
 * with their properties (`sdf`, `stretchX` …), and packs the folder's icons below it; a name in both is
 * the folder's icon. An SVG that librsvg cannot draw fails the build naming the file.
 */
import { access, copyFile, readdir, readFile, rm } from 'node:fs/promises';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import potpack from 'potpack';
import sharp from 'sharp';
import { writeFileAtomic } from '../../lib/atomic.ts';
import { UserError } from '../../lib/errors.ts';

/** Sprite files copied beside the prepared style (base name + these suffixes). */
export const SPRITE_FILES = ['.json', '.png', '@2x.json', '@2x.png'] as const;

/** A style entry's `"sprite"`: a folder of SVG icons that replaces the style's sheet, or extends it. */
export type SpriteFolder = string | { extend: string };

/** The scales a sheet is written at, and their file suffixes. */
const SHEET_SCALES = [
  { scale: 1, suffix: '' },
  { scale: 2, suffix: '@2x' },
] as const;
/** librsvg's density for 1 SVG unit = 1 px. */
const BASE_DENSITY = 72;
/** Transparent pixels between packed icons, so that a map sampling one icon never reads its neighbour. */
const GAP = 1;
const RGBA = 4;
const SVG_SUFFIX = '.svg';

type Json = Record<string, unknown>;

/** One entry of a sprite.json. */
export interface SpriteEntry {
  x: number;
  y: number;
  width: number;
  height: number;
  pixelRatio: number;
  [k: string]: unknown;
}

/** Raw RGBA pixels. */
interface Pixels {
  data: Buffer;
  width: number;
  height: number;
}

async function exists(p: string): Promise<boolean> {
  return access(p).then(() => true, () => false);
}

/** Resolve a sprite reference relative to the style file; returns the base path without extension. */
export function spriteBase(file: string, sprite: unknown): string | undefined {
  if (sprite === undefined) return undefined;
  let url: unknown = sprite;
  if (Array.isArray(sprite)) {
    if (sprite.length !== 1) throw new UserError(`${file}: sprite: only one sprite sheet is supported (got ${sprite.length})`);
    url = (sprite[0] as Json).url;
  }
  if (typeof url !== 'string') throw new UserError(`${file}: sprite: expected a string`);
  const folder = dirname(resolve(file));
  let p = url.replace('{styleJsonFolder}', folder);
  if (p.startsWith('file://')) p = p.slice('file://'.length);
  if (/^[a-z]+:\/\//i.test(p)) throw new UserError(`${file}: sprite: ${url} is not available locally (use a path relative to the style)`);
  return isAbsolute(p) ? p : resolve(folder, p);
}

/** The SVG files of a folder (`<name>.svg` at its top level), sorted by name; a UserError naming the folder when there are none. */
export async function svgIcons(folder: string, field: string): Promise<{ name: string; path: string }[]> {
  let entries;
  try {
    entries = await readdir(folder, { withFileTypes: true });
  } catch (e) {
    throw new UserError(`${field}: cannot read the icon folder ${folder} (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  const icons = entries
    .filter((e) => e.isFile() && e.name.toLowerCase().endsWith(SVG_SUFFIX) && e.name.length > SVG_SUFFIX.length)
    .map((e) => ({ name: e.name.slice(0, -SVG_SUFFIX.length), path: join(folder, e.name) }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (icons.length === 0) throw new UserError(`${field}: ${folder} holds no .svg icons`);
  return icons;
}

/** One SVG drawn by librsvg (through sharp) at `scale`, as RGBA; a UserError naming the file when it cannot be. */
async function drawSvg(path: string, scale: number): Promise<Pixels> {
  let svg: Buffer;
  try {
    svg = await readFile(path);
  } catch (e) {
    throw new UserError(`${path}: cannot read the SVG icon (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  try {
    const image = sharp(svg, { density: BASE_DENSITY * scale });
    const { format } = await image.metadata();
    if (format !== 'svg') throw new Error(`it is ${format ? `a ${format} image` : 'not an image'}, not an SVG`);
    const { data, info } = await image.ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.height };
  } catch (e) {
    throw new UserError(`${path}: cannot draw the SVG icon (${(e as Error).message})`);
  }
}

/** Copy `src` into the RGBA canvas `dst` (`dstWidth` px wide) at (x, y). */
function blit(dst: Buffer, dstWidth: number, src: Pixels, x: number, y: number): void {
  const row = src.width * RGBA;
  for (let j = 0; j < src.height; j++) src.data.copy(dst, ((y + j) * dstWidth + x) * RGBA, j * row, (j + 1) * row);
}

/** Keys sorted, so that the same icons give the same bytes. */
function sortedEntries(entries: Record<string, SpriteEntry>): Record<string, SpriteEntry> {
  return Object.fromEntries(Object.keys(entries).sort().map((k) => [k, entries[k]]));
}

/**
 * One sheet: `base` (the style's own sheet and its entries, kept as they are) at the top, then `icons`
 * packed below it with potpack. A name of `icons` replaces the base's entry of that name.
 */
export async function buildSheet(icons: { name: string; pixels: Pixels }[], pixelRatio: number, base?: { pixels: Pixels; entries: Record<string, SpriteEntry> }): Promise<{ png: Buffer; json: Record<string, SpriteEntry> }> {
  const boxes = icons.map((icon) => ({ w: icon.pixels.width + GAP, h: icon.pixels.height + GAP, x: 0, y: 0, icon }));
  // potpack sorts the boxes it is given (by height, stably): they are in name order, so the layout is too.
  const packed = potpack([...boxes]);
  const top = base ? base.pixels.height + GAP : 0;
  const width = Math.max(base?.pixels.width ?? 0, packed.w - GAP, 1);
  const height = Math.max(top + packed.h - GAP, base?.pixels.height ?? 0, 1);
  const canvas = Buffer.alloc(width * height * RGBA);
  const entries: Record<string, SpriteEntry> = { ...base?.entries };
  if (base) blit(canvas, width, base.pixels, 0, 0);
  for (const b of boxes) {
    blit(canvas, width, b.icon.pixels, b.x, top + b.y);
    entries[b.icon.name] = { x: b.x, y: top + b.y, width: b.icon.pixels.width, height: b.icon.pixels.height, pixelRatio };
  }
  const png = await sharp(canvas, { raw: { width, height, channels: RGBA } }).png().toBuffer();
  return { png, json: sortedEntries(entries) };
}

/** A sprite sheet's pixels (RGBA, 8 bits) and its entries; a UserError naming the file when unreadable. */
async function readSheet(base: string, suffix: string): Promise<{ pixels: Pixels; entries: Record<string, SpriteEntry> }> {
  const jsonPath = `${base}${suffix}.json`, pngPath = `${base}${suffix}.png`;
  let entries: Record<string, SpriteEntry>;
  try {
    entries = JSON.parse(await readFile(jsonPath, 'utf8')) as Record<string, SpriteEntry>;
  } catch (e) {
    throw new UserError(`${jsonPath}: cannot read the sprite's index (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  try {
    const { data, info } = await sharp(await readFile(pngPath)).toColourspace('srgb').ensureAlpha().raw({ depth: 'uchar' }).toBuffer({ resolveWithObject: true });
    return { pixels: { data, width: info.width, height: info.height }, entries };
  } catch (e) {
    throw new UserError(`${pngPath}: cannot read the sprite's image (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
}

/** Copy the style's own sheet (`base` + SPRITE_FILES) into `styleDir`; @2x is required when the style renders at 2x. */
async function copySheet(file: string, base: string, styleDir: string, scales: number[]): Promise<void> {
  for (const suffix of SPRITE_FILES) {
    const src = `${base}${suffix}`;
    const needed = suffix.startsWith('@2x') ? scales.includes(2) : true;
    if (!(await exists(src))) {
      if (needed) throw new UserError(`${file}: sprite: ${src} not found`);
      continue;
    }
    // Replace (not overwrite): the source may be read-only and copyFile keeps its mode.
    await rm(join(styleDir, `sprite${suffix}`), { force: true });
    await copyFile(src, join(styleDir, `sprite${suffix}`));
  }
}

/**
 * Write the sprite of a style into `styleDir` (`sprite{,@2x}.{json,png}`): the style's own (`sprite`, its
 * style file's value) copied, or made from `folder` (`field` names the config field, for messages).
 * Returns false when the style has no sprite.
 */
export async function prepareSprite(
  file: string,
  sprite: unknown,
  styleDir: string,
  opts: { scales: number[]; folder?: SpriteFolder; field?: string },
): Promise<boolean> {
  const folder = opts.folder;
  const own = folder === undefined || typeof folder === 'object' ? spriteBase(file, sprite) : undefined;
  if (folder === undefined) {
    if (!own) return false;
    await copySheet(file, own, styleDir, opts.scales);
    return true;
  }
  const dir = typeof folder === 'string' ? folder : folder.extend;
  const field = opts.field ?? `${file}: sprite`;
  const icons = await svgIcons(dir, field);
  for (const { scale, suffix } of SHEET_SCALES) {
    let base: Awaited<ReturnType<typeof readSheet>> | undefined;
    if (own) {
      // Extending: at each scale the style's own sheet has (its @2x is required when the style renders at 2x).
      if (!(await exists(`${own}${suffix}.json`))) {
        if (scale === 1 || opts.scales.includes(2)) throw new UserError(`${file}: sprite: ${own}${suffix}.json not found`);
        continue;
      }
      base = await readSheet(own, suffix);
    }
    const drawn = [];
    for (const icon of icons) drawn.push({ name: icon.name, pixels: await drawSvg(icon.path, scale) });
    const sheet = await buildSheet(drawn, scale, base);
    await writeFileAtomic(join(styleDir, `sprite${suffix}.png`), sheet.png);
    await writeFileAtomic(join(styleDir, `sprite${suffix}.json`), `${JSON.stringify(sheet.json)}\n`);
  }
  return true;
}
