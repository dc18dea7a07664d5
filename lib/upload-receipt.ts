/**
 * The render host's answer to a pixel upload (`POST /__upload/{id}`, workers/render-host/server.ts).
 * The render page hands it back to the task that drives it, and the task returns it as its result: the
 * build takes the pixels of upload `upload` once it holds the receipt.
 */
export interface UploadReceipt {
  /** The upload slot's id. */
  upload: string;
  /** Bytes received. */
  bytes: number;
  /** Size of the image in pixels, as the page reported it. */
  width: number;
  height: number;
}

/** The render page; `?style=<style.json URL>&ratio=<pixel ratio>` makes it load that style at once. */
export const RENDER_PAGE_PATH = '/page/render.html';
/** Pixel uploads: `POST /__upload/{id}?width=&height=` with the raw pixels (application/octet-stream). */
export const UPLOAD_PREFIX = '/__upload/';

/** The URL of upload slot `id` on a render host at `baseUrl` (no trailing slash). */
export function uploadUrl(baseUrl: string, id: string): string {
  return `${baseUrl}${UPLOAD_PREFIX}${encodeURIComponent(id)}`;
}
