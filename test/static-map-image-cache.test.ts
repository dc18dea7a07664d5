// The static image cache hands a PNG's pooled bytes back only once it has dropped the image and no
// response is sending it (static-server/static-map/image-cache.ts): a response still open keeps them
// from being lent to the next image (which would overwrite bytes on their way to a client).
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ByteLru } from '../lib/lru.ts';
import type { ServerContext } from '../static-server/context.ts';
import { allocateImage, lendImage, staticImage, staticImagesOf, type StaticImage } from '../static-server/static-map/image-cache.ts';
import { tileBody } from '../static-server/tile-response.ts';

/** A context whose static image cache holds ~114 KB (1 MB of --cache-mb: 7/8 to tiles, an eighth of that to images). */
function context(): ServerContext {
  return { manifest: { version: 1, generatedAt: '', tilesets: {}, styles: {} }, options: { cacheMb: 1 } } as unknown as ServerContext;
}
/** A response that stays open until closed. */
function response(): ServerResponse & { close(): void } {
  const r = new EventEmitter() as EventEmitter & { closed: boolean; close(): void };
  r.closed = false;
  r.close = () => ((r.closed = true), r.emit('close'));
  return r as unknown as ServerResponse & { close(): void };
}
const SIZE = 60_000;
const made = (fill: number) => async (): Promise<StaticImage> => staticImage(tileBody(allocateImage(SIZE).fill(fill)), 14);
const turn = () => new Promise((r) => setImmediate(r));
// (Buffers are compared by identity in a boolean: a failing toBe on two 60 KB ArrayBuffers takes vitest minutes to print.)

describe('static image cache: pooled bytes', () => {
  it('are lent again only after the image left the cache and its last response closed', async () => {
    const images = staticImagesOf(context());
    const a = await images.getOrLoad('a', made(1));
    const res = response();
    lendImage(a, res);
    await images.getOrLoad('b', made(2)); // two do not fit: a is dropped
    expect(images.entries.has('a')).toBe(false);
    await turn();
    // a's bytes are still being sent: the next image gets other memory.
    const c = allocateImage(SIZE).fill(3);
    expect(c.buffer === a.body.bytes.buffer, 'the same memory').toBe(false);
    expect(a.body.bytes.every((v) => v === 1)).toBe(true);
    res.close();
    expect(allocateImage(SIZE).buffer === a.body.bytes.buffer, 'the same memory').toBe(true);
  });

  it('an image nobody sends is handed back once dropped; one too large to keep, once its waiting requests are done', async () => {
    const images = staticImagesOf(context());
    const a = await images.getOrLoad('a', made(4));
    await images.getOrLoad('c', made(5)); // a dropped, nobody sends it
    await turn();
    expect(allocateImage(SIZE).buffer === a.body.bytes.buffer, 'the same memory').toBe(true);
    // b is larger than the cache: dropped as it is stored, while two requests wait on its composition;
    // they lend it (as the route does, right after the await) before it could be recycled.
    const big = async () => staticImage(tileBody(allocateImage(4 * SIZE).fill(6)), 14);
    const [r1, r2] = [response(), response()];
    const lend = async (res: ServerResponse) => {
      const image = await images.getOrLoad('b', big);
      lendImage(image, res);
      return image;
    };
    const [b, b2] = await Promise.all([lend(r1), lend(r2)]);
    expect(b2).toBe(b);
    expect(images.entries.has('b')).toBe(false);
    await turn();
    expect(allocateImage(4 * SIZE).buffer === b.body.bytes.buffer, 'the same memory').toBe(false);
    r1.close();
    expect(allocateImage(4 * SIZE).buffer === b.body.bytes.buffer, 'the same memory').toBe(false);
    r2.close();
    expect(allocateImage(4 * SIZE).buffer === b.body.bytes.buffer, 'the same memory').toBe(true);
  });
});

describe('ByteLru onDrop', () => {
  it('hears of every value that leaves: evicted, replaced, too large, cleared', () => {
    const gone: string[] = [];
    const lru = new ByteLru<string, string>(10, (v) => gone.push(v));
    lru.set('a', 'A', 4);
    lru.set('b', 'B', 4);
    lru.set('c', 'C', 4); // evicts a
    lru.set('b', 'B2', 4); // replaces B
    lru.set('b', 'B2', 4); // the same value again: nothing leaves
    lru.set('d', 'D', 11); // too large: not kept
    expect(gone).toEqual(['A', 'B', 'D']);
    lru.clear();
    expect(gone).toEqual(['A', 'B', 'D', 'C', 'B2']);
  });
});
