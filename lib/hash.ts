/** SHA-256 through node:crypto: of bytes or a string, and of a file's bytes streamed from disk. */
import { createHash, type BinaryLike, type BinaryToTextEncoding } from 'node:crypto';
import { createReadStream } from 'node:fs';

/** SHA-256 of `data`, as hex unless another digest encoding is asked for (`base64`, `base64url`). */
export function sha256(data: BinaryLike, encoding: BinaryToTextEncoding = 'hex'): string {
  return createHash('sha256').update(data).digest(encoding);
}

/** SHA-256 (hex) of a file's bytes, streamed (never all in memory); rejects with the read's error (`code` ENOENT, EACCES, …). */
export async function sha256File(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest('hex');
}
