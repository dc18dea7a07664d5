// The native PNG encoder (lib/png-fast.ts, lib/native/) on generated images: every output is a valid
// PNG (chunk CRCs, zlib's Adler-32) whose pixels, decoded by zlib + unfiltering and by sharp, equal
// the input exactly; every instruction set gives the same bytes; bad arguments are clear errors.
import { execFile } from 'node:child_process';
import { copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { simdLevel, SIMD, type SimdLevel } from '../lib/native.ts';
import { encodePng, encodePngSync, pngDigest } from '../lib/png-fast.ts';
import sharp from 'sharp';
import { checkPng, unpremultiplied } from './fixtures/png-check.ts';
import { tempDir } from './render-helpers.ts';

const REPO = resolve(import.meta.dirname, '..');
const LEVELS = (Object.keys(SIMD) as SimdLevel[]).filter((l) => SIMD[l] <= SIMD[simdLevel()]);

type Content = 'flat' | 'noise' | 'gradient' | 'runs' | 'stripes';
type Alpha = 'opaque' | 'transparent' | 'partial' | 'mixed';

/** A deterministic pseudo-random byte source. */
function bytes(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) >>> 16) & 255;
}

/** Pixels of `content` (`channels` interleaved), and an alpha plane of kind `alpha` for the 3-channel form. */
function image(w: number, h: number, channels: 3 | 4, content: Content, alpha: Alpha, seed: number): Buffer {
  const rnd = bytes(seed);
  const flat = [rnd(), rnd(), rnd(), rnd()];
  const px = Buffer.alloc(w * h * channels);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      for (let c = 0; c < channels; c++) {
        let v: number;
        if (c === 3) v = alphaValue(alpha, x, y, rnd);
        else if (content === 'flat') v = flat[c];
        else if (content === 'noise') v = rnd();
        else if (content === 'gradient') v = (x * (c + 1) * 3 + y * 5) & 255;
        else if (content === 'runs') v = (x >> 3) % 3 === 0 ? flat[c] : rnd() & 7;
        else v = ((x + y) >> 2) % 2 ? 250 : 3;
        px[(y * w + x) * channels + c] = v;
      }
    }
  }
  return px;
}

function alphaValue(kind: Alpha, x: number, y: number, rnd: () => number): number {
  if (kind === 'opaque') return 255;
  if (kind === 'transparent') return 0;
  if (kind === 'partial') return 1 + (rnd() % 254);
  return [0, 255, 255, rnd()][(x + 2 * y) % 4];
}

/** Encode with every instruction set (sync) and asynchronously; all must give the same bytes. */
async function encodeAll(px: Buffer, w: number, h: number, channels: 3 | 4, opts: { alpha?: Buffer | null; premultiplied?: boolean } = {}): Promise<Buffer> {
  const outs = LEVELS.map((simd) => encodePngSync(px, w, h, channels, { ...opts, simd }));
  outs.push(await encodePng(px, w, h, channels, opts));
  for (const o of outs) expect(o.equals(outs[0])).toBe(true);
  return outs[0];
}

const arbImage = fc.record({
  w: fc.oneof(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 10, max: 90 })),
  h: fc.integer({ min: 1, max: 24 }),
  channels: fc.constantFrom(3 as const, 4 as const),
  content: fc.constantFrom<Content>('flat', 'noise', 'gradient', 'runs', 'stripes'),
  alpha: fc.constantFrom<Alpha>('opaque', 'transparent', 'partial', 'mixed'),
  seed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
});

describe('encodePng', () => {
  it('this machine runs the SIMD code (the tests compare every level up to it)', () => {
    expect(LEVELS).toContain('none');
    if (process.arch === 'x64') expect(LEVELS).toContain('sse2');
  });

  it('round-trips generated interleaved RGB and RGBA images exactly', async () => {
    await fc.assert(
      fc.asyncProperty(arbImage, async ({ w, h, channels, content, alpha, seed }) => {
        const px = image(w, h, channels, content, alpha, seed);
        const png = await checkPng(await encodeAll(px, w, h, channels));
        expect([png.width, png.height, png.channels]).toEqual([w, h, channels]);
        expect(png.pixels.equals(px)).toBe(true);
        expect(png.filters.every((f) => f === 1 || f === 2 || f === 4)).toBe(true);
      }),
      { numRuns: 120 },
    );
  });

  it('round-trips RGB plus an alpha plane, straight or premultiplied, and writes RGB when every alpha is 255', async () => {
    await fc.assert(
      fc.asyncProperty(arbImage, fc.boolean(), async ({ w, h, content, alpha, seed }, premultiplied) => {
        const rgba = image(w, h, 4, content, alpha, seed);
        const a = Buffer.alloc(w * h), rgb = Buffer.alloc(w * h * 3);
        for (let k = 0; k < w * h; k++) {
          a[k] = rgba[k * 4 + 3];
          // Premultiplied colour never exceeds its alpha... except after resampling, which compose.ts allows for: clamp there.
          for (let c = 0; c < 3; c++) rgb[k * 3 + c] = premultiplied && content !== 'noise' ? Math.round((rgba[k * 4 + c] * a[k]) / 255) : rgba[k * 4 + c];
        }
        const png = await checkPng(await encodeAll(rgb, w, h, 3, { alpha: a, premultiplied }));
        const opaque = a.every((v) => v === 255);
        expect(png.channels).toBe(opaque ? 3 : 4);
        expect(png.pixels.equals(unpremultiplied(rgb, opaque ? null : a, premultiplied))).toBe(true);
      }),
      { numRuns: 120 },
    );
  });

  it('handles the edge cases: 1×1, one row, one column, long runs, several blocks, stored blocks', async () => {
    const cases: [number, number, 3 | 4, Content, Alpha][] = [
      [1, 1, 3, 'noise', 'opaque'],
      [1, 1, 4, 'flat', 'partial'],
      [1000, 1, 4, 'gradient', 'mixed'],
      [1, 700, 3, 'noise', 'opaque'],
      // ~1.1 MB of flat pixels: runs far longer than deflate's 258, three blocks of ~512 KB.
      [700, 400, 4, 'flat', 'transparent'],
      // Noise: Huffman codes cannot beat 8 bits a byte, the blocks are stored.
      [600, 300, 4, 'noise', 'partial'],
      [333, 257, 3, 'runs', 'opaque'],
      // Narrow flat images: rows filtered to all zeros (tokens without a scan) of 4, 5, 7 and 9 bytes.
      [1, 40, 3, 'flat', 'opaque'],
      [1, 40, 4, 'flat', 'transparent'],
      [2, 40, 3, 'flat', 'opaque'],
      [2, 40, 4, 'flat', 'partial'],
    ];
    for (const [w, h, channels, content, alpha] of cases) {
      const px = image(w, h, channels, content, alpha, w * 31 + h);
      const bytes = await encodeAll(px, w, h, channels);
      const png = await checkPng(bytes);
      expect(png.pixels.equals(px), `${w}×${h}×${channels} ${content}`).toBe(true);
      if (content === 'noise' && w > 100) expect(bytes.length).toBeLessThan(px.length + px.length / 1000 + 200);
      if (content === 'flat' && w > 100) expect(bytes.length).toBeLessThan(px.length / 50);
    }
  });

  it('encodes many images at once on the thread pool without mixing them up', async () => {
    const imgs = Array.from({ length: 24 }, (_, i) => image(200 + i, 50, i % 2 ? 4 : 3, (['gradient', 'runs', 'noise'] as const)[i % 3], 'mixed', i + 1));
    const pngs = await Promise.all(imgs.map((px, i) => encodePng(px, 200 + i, 50, i % 2 ? 4 : 3)));
    for (let i = 0; i < imgs.length; i++) expect((await checkPng(pngs[i])).pixels.equals(imgs[i])).toBe(true);
  });

  it('writes into the buffer `allocate` gives (sync and on the pool); what it throws or a wrong size rejects', async () => {
    const px = image(120, 40, 4, 'gradient', 'mixed', 9);
    const plain = encodePngSync(px, 120, 40, 4);
    const sizes: number[] = [];
    const into = (n: number) => (sizes.push(n), Buffer.alloc(n, 0xee));
    const a = await encodePng(px, 120, 40, 4, { allocate: into });
    expect(a.equals(plain)).toBe(true);
    expect(encodePngSync(px, 120, 40, 4, { allocate: into }).equals(plain)).toBe(true);
    expect(sizes).toEqual([plain.length, plain.length]);
    // The returned buffer is the one allocate gave (a pool can take it back).
    let given: Buffer | undefined;
    const b = await encodePng(px, 120, 40, 4, { allocate: (n) => (given = Buffer.alloc(n)) });
    expect(b === given).toBe(true);
    await expect(encodePng(px, 120, 40, 4, { allocate: () => { throw new Error('pool empty'); } })).rejects.toThrow('pool empty');
    expect(() => encodePngSync(px, 120, 40, 4, { allocate: () => { throw new Error('pool empty'); } })).toThrow('pool empty');
    await expect(encodePng(px, 120, 40, 4, { allocate: (n) => Buffer.alloc(n + 1) })).rejects.toThrow(/exactly size bytes/);
    expect(() => encodePngSync(px, 120, 40, 4, { allocate: () => 'x' as unknown as Buffer })).toThrow(/exactly size bytes/);
    expect(() => encodePngSync(px, 120, 40, 4, { allocate: 3 as unknown as () => Buffer })).toThrow(/allocate must be a function/);
  });

  it('pngDigest: equal for equal files, different when any pixel differs; only for its own files', async () => {
    const px = image(300, 200, 4, 'gradient', 'mixed', 21);
    const png = encodePngSync(px, 300, 200, 4);
    expect(pngDigest(png).equals(pngDigest(Buffer.from(png)))).toBe(true);
    const seen = new Set([pngDigest(png).toString('hex')]);
    for (let k = 0; k < 40; k++) {
      const other = Buffer.from(px);
      other[(k * 7919) % other.length] ^= 1 << (k % 8); // one bit of one pixel
      seen.add(pngDigest(encodePngSync(other, 300, 200, 4)).toString('hex'));
    }
    seen.add(pngDigest(encodePngSync(px.subarray(0, 300 * 199 * 4), 300, 199, 4)).toString('hex'));
    expect(seen.size).toBe(42);
    const libpng = await sharp(px, { raw: { width: 300, height: 200, channels: 4 } }).png().toBuffer();
    expect(() => pngDigest(libpng.subarray(0, 40))).toThrow(/not a PNG written by encodePng/);
    expect(() => pngDigest(Buffer.from('not a png at all, not a png at all, not a png at all, not a png'))).toThrow(/not a PNG written by encodePng/);
  });

  it('rejects bad arguments with clear errors', async () => {
    const px = Buffer.alloc(12);
    expect(() => encodePngSync(px, 2, 2, 4)).toThrow(/pixels must be a Uint8Array of 2×2×4 bytes/);
    expect(() => encodePngSync(px, 0, 2, 3)).toThrow(/width and height must be positive integers/);
    expect(() => encodePngSync(px, 2, 2, 2 as 3)).toThrow(/channels must be 3 or 4/);
    expect(() => encodePngSync(px, 2, 2, 3, { alpha: Buffer.alloc(3) })).toThrow(/alpha plane needs 3-channel pixels and 2×2 bytes/);
    expect(() => encodePngSync(px, 2, 2, 3, { simd: 'mmx' as SimdLevel })).toThrow(/simd must be one of/);
    await expect(encodePng(px, 3, 2, 3)).rejects.toThrow(RangeError);
  });

  it('without the built addon, says to run make setup', async () => {
    // A checkout holding the wrapper but no lib/native/build.
    const dir = await tempDir('png-fast');
    try {
      await mkdir(join(dir, 'lib'));
      await writeFile(join(dir, 'package.json'), '{"type":"module"}');
      for (const f of ['png-fast.ts', 'native.ts', 'package-root.ts']) await copyFile(join(REPO, 'lib', f), join(dir, 'lib', f));
      const script = `const m = await import(${JSON.stringify(join(dir, 'lib/png-fast.ts'))}); await m.encodePng(Buffer.alloc(3), 1, 1, 3);`;
      const run = promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO });
      await expect(run).rejects.toThrow(/the native addon is not built .*tilebake_native\.node is missing\): run `make setup`/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
