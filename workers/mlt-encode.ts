/**
 * Piscina task (and the inline path for a few tiles): encode a batch of MVT tiles as MLT
 * (lib/mlt.ts), gzip-compressed when the MVT archive's are (the MLT archive stores them alike). A tile the encoder refuses fails the
 * batch with the tile's z/x/y.
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import { mvtToMlt } from '../lib/mlt.ts';

/** One batch of tiles, each as stored in the MVT archive. */
export interface MltTask {
  tiles: { where: string; data: Uint8Array }[];
  /** The MVT archive stores its tiles gzip-compressed. */
  gzipped: boolean;
}

/** The batch's MLT tiles (compressed as their MVT tiles) in the task's order and the CPU time the encoding took. */
export interface MltTaskResult {
  tiles: Uint8Array[];
  /** Milliseconds spent in MVT decoding and MLT encoding (not gzip), for the figures. */
  encodeMs: number;
}

export default function encodeMltTiles(task: MltTask): MltTaskResult {
  let encodeMs = 0;
  const tiles = task.tiles.map(({ where, data }) => {
    try {
      const mvt = task.gzipped ? gunzipSync(data) : data;
      const t0 = performance.now();
      const mlt = mvtToMlt(mvt);
      encodeMs += performance.now() - t0;
      return task.gzipped ? gzipSync(mlt) : mlt;
    } catch (e) {
      throw new Error(`tile ${where}: ${(e as Error).message}`, { cause: e });
    }
  });
  return { tiles, encodeMs };
}
