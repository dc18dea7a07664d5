/** Gzip recognised by its two magic bytes and undone through node:zlib: one check for tiles stored either way. */
import { gunzipSync } from 'node:zlib';

/** The two bytes that start every gzip member (RFC 1952: ID1, ID2). */
const GZIP_ID1 = 0x1f;
const GZIP_ID2 = 0x8b;

/** True when `data` starts with gzip's two magic bytes. */
export function isGzip(data: Uint8Array): boolean {
  return data.length >= 2 && data[0] === GZIP_ID1 && data[1] === GZIP_ID2;
}

/** `data` gunzipped when it is gzip (see `isGzip`), else `data` itself. */
export function gunzipIfGzipped(data: Uint8Array): Uint8Array {
  return isGzip(data) ? gunzipSync(data) : data;
}
