/**
 * Content fingerprints of the elevation stage's inputs: an unchanged DEM set (same bytes, however
 * often it is downloaded again) gives the same fingerprint, so the index is kept, not rebuilt.
 */
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { UserError } from '../../lib/errors.ts';
import { sha256, sha256File } from '../../lib/hash.ts';
import { DEFAULT_BLOCK_SIZE, FORMAT_VERSION, type IndexInput } from '../../lib/elevation/format.ts';
import type { DemSource } from './sources.ts';

/**
 * Version of how the writer turns DEMs into an index (readers, layer planning, quantisation). Bump it
 * when a change can alter an index built from the same inputs, so older indexes are rebuilt.
 */
const INDEX_WRITER_VERSION = 'tilebake-elevation-index/2';
/** Files hashed at once. */
const HASH_CONCURRENCY = 4;

/** sha256 (hex) of a DEM file's bytes, streamed; a read failure is a UserError naming the file. */
function hashFile(path: string): Promise<string> {
  return sha256File(path).catch((e: NodeJS.ErrnoException) => {
    throw new UserError(`${path}: cannot read (${e.code ?? e.message})`);
  });
}

/**
 * Size, modification time and content hash of every file; a file whose path, size and mtime match
 * a record in `known` (from the previous index) keeps that record's hash instead of being read again.
 * `tick` is called once per file.
 */
export async function describeInputs(files: readonly DemSource[], known: readonly IndexInput[] = [], tick?: () => void): Promise<IndexInput[]> {
  const byPath = new Map(known.map((k) => [k.file, k]));
  const out: IndexInput[] = new Array(files.length);
  let next = 0;
  const lane = async () => {
    while (next < files.length) {
      const i = next++;
      const file = files[i].path;
      const st = await stat(file).catch((e: NodeJS.ErrnoException) => {
        throw new UserError(`${file}: cannot read (${e.code ?? e.message})`);
      });
      const k = byPath.get(file);
      const sha256 = k && k.bytes === st.size && k.mtimeMs === st.mtimeMs ? k.sha256 : await hashFile(file);
      out[i] = { file, bytes: st.size, mtimeMs: st.mtimeMs, sha256 };
      tick?.();
    }
  };
  await Promise.all(Array.from({ length: Math.min(HASH_CONCURRENCY, files.length) }, lane));
  return out;
}

/** The index fingerprint (see `IndexMeta.fingerprint`). */
export function indexFingerprint(files: readonly DemSource[], inputs: readonly IndexInput[], precision: number): string {
  const h = createHash('sha256');
  h.update(JSON.stringify({ writer: INDEX_WRITER_VERSION, format: FORMAT_VERSION, blockSize: DEFAULT_BLOCK_SIZE, precision }));
  files.forEach((f, i) => h.update(JSON.stringify([basename(f.path), inputs[i].sha256, f.priority ?? null, f.nodata ?? null])));
  return h.digest('hex');
}

/** A fingerprint of `parts` (an output's inputs and settings), sha256 hex. */
export function fingerprintOf(...parts: unknown[]): string {
  return sha256(JSON.stringify(parts));
}
