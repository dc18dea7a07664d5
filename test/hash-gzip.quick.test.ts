// lib/hash.ts and lib/gzip.ts: the one SHA-256 of bytes and of a file, the one gzip check. Pure unit tests.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { gunzipIfGzipped, isGzip } from '../lib/gzip.ts';
import { sha256, sha256File } from '../lib/hash.ts';

const MONACO = resolve(import.meta.dirname, '..', 'data/sample/monaco_omt.mbtiles');

describe('sha256', () => {
  it('hashes bytes and strings as hex, or in the digest encoding asked for', () => {
    // FIPS 180-2's "abc" example.
    expect(sha256('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256(new Uint8Array([0x61, 0x62, 0x63]))).toBe(sha256('abc'));
    expect(sha256('abc', 'base64')).toBe(Buffer.from(sha256('abc'), 'hex').toString('base64'));
  });

  it("streams a file (1.2 MB, many chunks) to the same digest as its bytes read at once; a missing file rejects with ENOENT", async () => {
    const bytes = await readFile(MONACO);
    expect(bytes.length).toBeGreaterThan(1 << 20);
    expect(await sha256File(MONACO)).toBe(createHash('sha256').update(bytes).digest('hex'));
    await expect(sha256File(`${MONACO}.missing`)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('gzip', () => {
  const tile = new Uint8Array([0x1a, 0x05, 0x0a, 0x03, 0x61, 0x62, 0x63]); // an MVT layer field, plain
  const zipped = gzipSync(tile);

  it('recognises gzip by both magic bytes, not by the first alone', () => {
    expect(isGzip(zipped)).toBe(true);
    expect(isGzip(tile)).toBe(false);
    expect(isGzip(new Uint8Array([0x1f, 0x8c, 0x08]))).toBe(false);
    expect(isGzip(new Uint8Array([0x1f]))).toBe(false);
    expect(isGzip(new Uint8Array(0))).toBe(false);
  });

  it('gunzips gzip and returns anything else as it is', () => {
    expect(Buffer.from(gunzipIfGzipped(zipped)).equals(Buffer.from(tile))).toBe(true);
    expect(gunzipIfGzipped(tile)).toBe(tile);
    // A damaged gzip stream is an error, not plain bytes.
    expect(() => gunzipIfGzipped(zipped.subarray(0, 12))).toThrow();
  });
});
