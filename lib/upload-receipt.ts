/**
 * The render server's answer to a pixel upload (`POST /__upload/{id}`, static-server/routes/render-page.ts).
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
