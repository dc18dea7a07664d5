/**
 * Every script's labels are drawn: a synthetic extract with a place node named in each script, each
 * alone in its tile, plus a nameless one (fixtures/scripts.ts), built by the CLI (OSM tileset with
 * tilemaker, a style labelling the places with positron's composite stack, rendered in Chromium).
 * Every named tile has label pixels, in letters rather than the boxes drawn for characters no font
 * has; the nameless one none. Scripts drawn from glyph PBFs need the generated ranges
 * (data/sample/glyphs.json), Devanagari, Thai and CJK the Noto fonts the browser draws them with.
 * Hebrew runs right to left, Arabic is shaped, and the locally drawn scripts look the same in MapLibre
 * GL JS against `tilebake serve` as in the baked tiles.
 */
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startServer, type RunningServer } from '../static-server/serve.ts';
import { MAP_TEXT_OPTIONS } from '../workers/page/map-text.mjs';
import { buildScripts, LIVE_VIEW, MIN_INK, NAMES, tileOf, type ScriptsBuild } from './fixtures/scripts.ts';
import { openClient, runMap, type Client } from './fixtures/styles/client.ts';
import { readTile, SAMPLE, tempDir } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';
const LONG = 400_000;
/** Share of the live view's pixels that must equal the baked tiles' (within BAKED_LIVE_TOLERANCE per channel). */
const BAKED_LIVE_SHARE = 0.999;
const BAKED_LIVE_TOLERANCE = 2;

describe.sequential('labels in every script', () => {
  let built: ScriptsBuild;
  let server: RunningServer | undefined;
  let client: Client | undefined;
  beforeAll(async () => {
    built = await buildScripts(await tempDir('scripts'), join(SAMPLE, 'fonts'));
  }, LONG);
  afterAll(async () => {
    await client?.close();
    await server?.close();
  });
  const ink = (script: string) => built.ink.get(script)!;

  test.each(NAMES.filter(([, name]) => name !== null))('%s: "%s" is drawn, in letters (not boxes)', (script) => {
    expect(ink(script).pixels).toBeGreaterThan(MIN_INK);
    expect(ink(script).tofu).toBe(false);
  });

  test('the nameless place draws nothing', () => {
    expect(ink('nameless').pixels).toBe(0);
  });

  test('Hebrew runs right to left: its first letter (ק, reaching below the line) is at the right end', () => {
    const { pixels, box, lowestX } = ink('Hebrew');
    expect(pixels).toBeGreaterThan(MIN_INK);
    expect((lowestX - box[0]) / (box[2] - box[0])).toBeGreaterThan(0.8);
  });

  test('Arabic is shaped: three behs join into a word narrower than three isolated ones', () => {
    for (const script of ['Arabic joined', 'Arabic isolated forms']) expect(ink(script).pixels, script).toBeGreaterThan(MIN_INK);
    const width = (script: string) => ink(script).box[2] - ink(script).box[0] + 1;
    expect(width('Arabic joined')).toBeLessThan(0.8 * width('Arabic isolated forms'));
  });

  test('baked = live: the locally drawn scripts in MapLibre GL JS against the server, with the pages\' text options', async () => {
    server = await startServer({ out: built.out, port: 0, host: '127.0.0.1', auth: false, cors: '*', cacheMb: 16, logLevel: 'warn' });
    client = await openClient();
    const { size, zoom, center, tiles } = LIVE_VIEW;
    const run = await runMap(client, { style: `${server.url}/styles/scripts/style.json`, server: server.url, token: '', center, zoom, timeoutMs: 120_000, options: { ...MAP_TEXT_OPTIONS } });
    expect(run.errors).toEqual([]);
    expect(run.idle).toBe(true);
    const live = await sharp(Buffer.from(run.image.slice(run.image.indexOf(',') + 1), 'base64')).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    // The client's canvas is 512 CSS px at device pixel ratio 1: the four baked tiles side by side.
    expect([live.info.width, live.info.height]).toEqual([size, size]);
    const baked = await sharp({ create: { width: size, height: size, channels: 3, background: '#fff' } })
      .composite(await Promise.all(tiles.map(async (i, k) => {
        const t = tileOf(i);
        return { input: Buffer.from(await readTile(built.archive, t.z, t.x, t.y)), left: (k % 2) * 256, top: Math.floor(k / 2) * 256 };
      })))
      .removeAlpha().raw().toBuffer();
    let same = 0;
    for (let p = 0; p < size * size; p++) {
      if ([0, 1, 2].every((c) => Math.abs(live.data[3 * p + c] - baked[3 * p + c]) <= BAKED_LIVE_TOLERANCE)) same++;
    }
    const share = same / (size * size);
    console.log(`baked = live: ${(share * 100).toFixed(3)} % of ${size}×${size} pixels within ±${BAKED_LIVE_TOLERANCE}`);
    expect(share).toBeGreaterThanOrEqual(BAKED_LIVE_SHARE);
  }, LONG);
});
