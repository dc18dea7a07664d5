/** Shared helpers of the render tests: configs over the Monaco sample, archive reading, pixel stats. */
import { cp, mkdir, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import sharp from 'sharp';
import { expect } from 'vitest';
import { sha256 } from '../lib/hash.ts';
import { openArchiveFile } from '../lib/pmtiles/index.ts';
import { parseConfig, type BuildConfig } from '../pipeline/config/index.ts';

export const SAMPLE = resolve(import.meta.dirname, '..', 'data', 'sample');
export const OSM_BRIGHT = join(SAMPLE, 'styles', 'osm-bright', 'style.json');

/** A raw config object over the Monaco sample with one osm-bright style. */
export function sampleConfig(out: string, style: Record<string, unknown>, render: Record<string, unknown>): Record<string, unknown> {
  return {
    out,
    tilesets: { openmaptiles: join(SAMPLE, 'monaco_omt.mbtiles') },
    styles: { 'osm-bright': { style: OSM_BRIGHT, tileset: 'openmaptiles', ...style } },
    fonts: join(SAMPLE, 'fonts'),
    render,
  };
}

/**
 * The sample's glyph folder with only the Latin ranges (U+0000–03FF and U+2000–20FF) of each font
 * stack: what osm-bright's labels over Monaco load, in 31 files instead of 175. For tests whose subject
 * is the storage a build goes through (Swift handles every file of a version as an object), not labels.
 */
export async function latinFonts(dir: string): Promise<string> {
  const LATIN = new Set(['0-255.pbf', '256-511.pbf', '512-767.pbf', '768-1023.pbf', '8192-8447.pbf']);
  const out = join(dir, 'fonts-latin');
  for (const stack of await readdir(join(SAMPLE, 'fonts'), { withFileTypes: true })) {
    if (!stack.isDirectory()) continue;
    await mkdir(join(out, stack.name), { recursive: true });
    for (const range of await readdir(join(SAMPLE, 'fonts', stack.name))) {
      if (LATIN.has(range)) await cp(join(SAMPLE, 'fonts', stack.name, range), join(out, stack.name, range));
    }
  }
  return out;
}

/** Write a config file into `dir` and parse it. */
export async function writeConfig(dir: string, name: string, raw: Record<string, unknown>): Promise<{ file: string; config: BuildConfig }> {
  const file = join(dir, name);
  await writeFile(file, JSON.stringify(raw, null, 2));
  return { file, config: parseConfig(raw, file) };
}

/** A fresh temp folder. */
export function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `tilebake-${prefix}-`));
}

/** Copy the vector stage's outputs (data/ + manifest) from `from` into a new output folder. */
export async function copyVectorOutput(from: string, to: string): Promise<void> {
  await cp(join(from, 'data'), join(to, 'data'), { recursive: true });
  await cp(join(from, 'manifest.json'), join(to, 'manifest.json'));
}

/** Every tile of an archive as `z/x/y` → sha256 of its bytes. */
export async function archiveTiles(path: string): Promise<Map<string, string>> {
  const r = await openArchiveFile(path);
  const out = new Map<string, string>();
  try {
    for await (const e of r.entries()) {
      const hash = sha256(await r.readRange(e.offset, e.length));
      for (let k = 0; k < e.runLength; k++) out.set(String(e.tileId + k), hash);
    }
  } finally {
    await r.close();
  }
  return out;
}

/** Stored bytes of one tile. */
export async function readTile(path: string, z: number, x: number, y: number): Promise<Uint8Array> {
  const r = await openArchiveFile(path);
  try {
    const b = await r.getTile(z, x, y);
    if (!b) throw new Error(`${path}: no tile ${z}/${x}/${y}`);
    return b;
  } finally {
    await r.close();
  }
}

/** Decoded RGB pixels of an image (optionally resized). */
export async function rgb(image: Uint8Array, resizeTo?: number): Promise<{ data: Buffer; width: number; height: number }> {
  let img = sharp(image).removeAlpha();
  if (resizeTo) img = img.resize(resizeTo, resizeTo, { kernel: 'linear' });
  const { data, info } = await img.raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

/** Mean absolute difference per channel, and the fraction of pixels differing by more than `big` in some channel. */
export function compare(a: Buffer, b: Buffer, big = 40): { mean: number; bigFraction: number } {
  let sum = 0;
  let bigPx = 0;
  for (let i = 0; i < a.length; i += 3) {
    const d0 = Math.abs(a[i] - b[i]);
    const d1 = Math.abs(a[i + 1] - b[i + 1]);
    const d2 = Math.abs(a[i + 2] - b[i + 2]);
    sum += d0 + d1 + d2;
    if (Math.max(d0, d1, d2) > big) bigPx++;
  }
  return { mean: sum / a.length, bigFraction: bigPx / (a.length / 3) };
}

/** Pixel counts per colour `r,g,b`, most frequent first. */
export function histogram(data: Buffer): [string, number][] {
  const h = new Map<string, number>();
  for (let i = 0; i < data.length; i += 3) {
    const k = `${data[i]},${data[i + 1]},${data[i + 2]}`;
    h.set(k, (h.get(k) ?? 0) + 1);
  }
  return [...h].sort((p, q) => q[1] - p[1]);
}

/** Point tile z/x/y (XYZ) of the deduplicated MBTiles at `file` to the bytes of tile `from`. */
export function copyTile(file: string, to: { z: number; x: number; y: number }, from: { z: number; x: number; y: number }): void {
  const db = new Database(file);
  try {
    const row = (t: typeof to) => [t.z, t.x, 2 ** t.z - 1 - t.y];
    const src = db.prepare('SELECT tile_id FROM map WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?').get(...row(from)) as { tile_id: string };
    const r = db.prepare('UPDATE map SET tile_id = ? WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?').run(src.tile_id, ...row(to));
    expect(r.changes).toBe(1);
  } finally {
    db.close();
  }
}
