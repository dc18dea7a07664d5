// The native PNG encoder's deflate stream: the literal/run scan (lib/native/src/deflate.c; AVX2 from masks
// of the row) gives the plain C scan's tokens, and blocks (deflate_block.c) whose Huffman codes come
// from a sample of the block's tokens (every 5th, SAMPLE): a byte value that only unsampled tokens hold
// must still be coded, and a block whose sample misjudges it (the Huffman block turns out larger than
// stored) must be written again stored. Rows are built so that the encoder's tokens are known: Sub
// filtered residuals given here (no byte equal to the one before, so no runs), each row 1 + 3w ≡ 0
// (mod 5) tokens long, so the tokens sampled are the filter type bytes and every 5th residual after.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { simdLevel, SIMD, type SimdLevel } from '../lib/native.ts';
import { encodePng, encodePngSync } from '../lib/png-fast.ts';
import { checkPng } from './fixtures/png-check.ts';

const LEVELS = (Object.keys(SIMD) as SimdLevel[]).filter((l) => SIMD[l] <= SIMD[simdLevel()]);

/** A deterministic pseudo-random source. */
function random(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) >>> 16) & 0x7fff;
}

/**
 * An RGB image of `h` rows whose Sub residuals are `residual(t)` for the residual's token index t within
 * its row (the filter type byte is token 0), each different from the one before.
 */
function subImage(w: number, h: number, residual: (t: number, y: number) => number): Buffer {
  const px = Buffer.alloc(w * h * 3);
  for (let y = 0; y < h; y++) {
    let before = -1;
    for (let i = 0; i < 3 * w; i++) {
      let r = residual(i + 1, y) & 255;
      if (r === before) r = (r + 1) & 255;
      before = r;
      // Each row 128 above the one before (Up's residuals ~128, Sub's the ones given, Paeth's mostly Sub's).
      px[y * 3 * w + i] = (r + (i >= 3 ? px[y * 3 * w + i - 3] : 128 * y)) & 255;
    }
  }
  return px;
}

/** Encode with every instruction set (the plain C scan is the reference for the AVX2 one's tokens): the same bytes, decoded exactly. */
async function encodeSame(px: Buffer, w: number, h: number, channels: 3 | 4): Promise<Buffer> {
  const outs = LEVELS.map((simd) => encodePngSync(px, w, h, channels, { simd }));
  for (const o of outs) expect(o.equals(outs[0])).toBe(true);
  expect((await checkPng(outs[0])).pixels.equals(px)).toBe(true);
  return outs[0];
}

/** Encode with every instruction set and asynchronously: the same bytes; checked and decoded exactly. */
async function encodeChecked(px: Buffer, w: number, h: number): Promise<{ png: Buffer; btype: number }> {
  const outs = LEVELS.map((simd) => encodePngSync(px, w, h, 3, { simd }));
  outs.push(await encodePng(px, w, h, 3));
  for (const o of outs) expect(o.equals(outs[0])).toBe(true);
  const decoded = await checkPng(outs[0]);
  expect(decoded.pixels.equals(px)).toBe(true);
  expect(decoded.filters.every((f) => f === 1)).toBe(true); // the rows were filtered as built: Sub
  // The first block's type: bits 1-2 of the byte after the IDAT's zlib header (IHDR ends at 33).
  expect(outs[0].toString('latin1', 37, 41)).toBe('IDAT');
  return { png: outs[0], btype: (outs[0][43] >> 1) & 3 };
}

describe('encodePng: the literal/run scan', () => {
  it('finds the same runs at every instruction set: runs of 1 to 600 bytes, at every row length modulo 64', async () => {
    // Rows of pieces of one byte value (a run after the first byte when ≥ 4 long, split at 258) of
    // random lengths; one row or a few, so that rows filtered to zeros (no scan) stay rare.
    const arb = fc.record({
      w: fc.integer({ min: 1, max: 700 }),
      h: fc.integer({ min: 1, max: 3 }),
      channels: fc.constantFrom(3 as const, 4 as const),
      pieces: fc.array(fc.record({ len: fc.oneof(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 7, max: 70 }), fc.integer({ min: 250, max: 600 })), v: fc.integer({ min: 0, max: 255 }) }), { minLength: 1, maxLength: 40 }),
    });
    await fc.assert(
      fc.asyncProperty(arb, async ({ w, h, channels, pieces }) => {
        const px = Buffer.alloc(w * h * channels);
        for (let i = 0, p = 0; i < px.length; p++) {
          const { len, v } = pieces[p % pieces.length];
          px.fill((v + p) & 255, i, Math.min(px.length, i + len));
          i += len;
        }
        await encodeSame(px, w, h, channels);
      }),
      { numRuns: 150 },
    );
  });
});

describe('encodePng: Huffman codes from a sample of the tokens', () => {
  it('codes byte values that only unsampled tokens hold', async () => {
    const w = 333; // 1 + 3·333 = 1000 tokens a row
    const rnd = random(7);
    // Residuals 1-6, and at unsampled tokens values that occur nowhere else.
    const rare = new Map([[7, 100], [13, 222], [1, 150], [499, 37], [998, 250]]);
    const px = subImage(w, 3, (t, y) => (y === 1 && rare.has(t) ? rare.get(t)! : 1 + (rnd() % 6)));
    for (const t of rare.keys()) expect(t % 5).not.toBe(0);
    const { btype } = await encodeChecked(px, w, 3);
    expect(btype).toBe(2); // dynamic Huffman codes
  });

  it('writes a block stored when the sampled codes make it larger than stored, and goes on after it', async () => {
    // Sampled tokens hold 16 values, the others 64 values the sample never sees: coded in 15 bits, the
    // block would be ~1.5 times its bytes. A row of 1 000 tokens (found at the block's end), one of
    // 10 000 (found while writing, after 4 096 tokens), and a row of 524 290 tokens (a block of its own:
    // ≥ png_encode.c's 512 KB; nine stored pieces) followed by one of residuals 1-6 (a second block, Huffman coded).
    for (const [w, h] of [[333, 1], [3333, 1], [174763, 2]]) {
      const rnd = random(w);
      const px = subImage(w, h, (t, y) => (y === 1 ? 1 + (rnd() % 6) : t % 5 === 0 ? 1 + ((t / 5) % 16) : 17 + (rnd() % 64)));
      const { png, btype } = await encodeChecked(px, w, h);
      expect(btype, `${w}×${h}`).toBe(0); // stored
      // Signature, IHDR, the IDAT's zlib header, stored pieces of ≤ 65 535 bytes, Adler-32, IDAT's CRC, IEND.
      if (h === 1) expect(png.length).toBe(8 + 25 + 8 + 2 + px.length + 1 + 5 * Math.ceil((px.length + 1) / 65535) + 4 + 4 + 12);
      else expect(blockTypes(png)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    }
  });
});

/** The types of the IDAT stream's blocks up to and including its first one that is not stored. */
function blockTypes(png: Buffer): number[] {
  const types: number[] = [];
  for (let pos = 43; ; ) {
    const type = (png[pos] >> 1) & 3;
    types.push(type);
    if (type !== 0 || png[pos] & 1) return types;
    pos += 5 + png.readUInt16LE(pos + 1);
  }
}
