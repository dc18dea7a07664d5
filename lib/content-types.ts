/** Content types by file extension, and what a plain file name is: one table for every server of tilebake's own files. */

/** Content types by extension: pages, scripts, style sheets, source maps, tiles and images. */
export const CONTENT_TYPES: Readonly<Record<string, string>> = Object.freeze({
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  mjs: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  map: 'application/json; charset=utf-8',
  json: 'application/json; charset=utf-8',
  pbf: 'application/x-protobuf',
  png: 'image/png',
  jpg: 'image/jpeg',
  webp: 'image/webp',
});

/** A plain file name: no folder part, no leading dot. */
export const PLAIN_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._@-]*$/;

/** The content type of a file name, by its extension (`application/octet-stream` when unknown). */
export function contentType(name: string): string {
  return CONTENT_TYPES[name.slice(name.lastIndexOf('.') + 1).toLowerCase()] ?? 'application/octet-stream';
}
