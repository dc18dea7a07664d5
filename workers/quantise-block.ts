/**
 * Piscina task: quantise and compress one elevation block (see lib/elevation/codec.ts).
 * Input heights arrive as a transferred Float32Array (NaN = nodata); the compressed payload is small
 * and comes back by structured clone.
 */
import { encodeBlock, type EncodedBlock } from '../lib/elevation/codec.ts';

/** One block to quantise. */
export interface QuantiseTask {
  heights: Float32Array;
  rows: number;
  cols: number;
  precision: number;
  /** Names the block in errors. */
  where: string;
}

/** Quantise + compress one block. */
export default function quantiseBlock(task: QuantiseTask): EncodedBlock {
  return encodeBlock(task.heights, task.rows, task.cols, task.precision, task.where);
}
