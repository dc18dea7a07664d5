/**
 * Render workers start their browser when a batch needs them: a job of fewer batches than workers
 * (a small incremental rebuild, a shard's share of a small region) starts no more Chromiums than it
 * uses. Counted with a wrapper given as TILEBAKE_CHROMIUM that notes each start, then runs Chromium.
 */
import { appendFileSync, chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { archiveTiles, copyVectorOutput, sampleConfig, tempDir, writeConfig } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';
const LONG = 300_000;

describe('render pool', () => {
  test('three workers, one metatile: one browser started, and the tiles of a one-worker render', async () => {
    const dir = await tempDir('lazy-start');
    const starts = join(dir, 'starts.log');
    const wrapper = join(dir, 'chromium-counted.sh');
    // Read when workers/chromium.ts is first imported: set before the dynamic imports below.
    const { CHROMIUM_PATH } = await import('../workers/chromium.ts');
    writeFileSync(wrapper, `#!/bin/bash\necho start >> '${starts}'\nexec '${CHROMIUM_PATH}' "$@"\n`);
    chmodSync(wrapper, 0o755);
    expect(CHROMIUM_PATH).not.toBe(wrapper);
    appendFileSync(starts, '');
    process.env.TILEBAKE_CHROMIUM = wrapper;
    // A fresh module graph so that CHROMIUM_PATH is the wrapper's.
    const { vi } = await import('vitest');
    vi.resetModules();
    const { runVectorStage } = await import('../pipeline/vector/stage.ts');
    const { runRenderStage } = await import('../pipeline/render/stage.ts');
    const style = { minzoom: 0, maxzoom: 0, scales: [1], formats: ['png'] };
    const render = { metatile: 4, margin: 64 };
    const one = await tempDir('lazy-start-one');
    const { config: c1 } = await writeConfig(one, 'config.json', sampleConfig(one, style, render));
    await runVectorStage(c1, one);
    const three = await tempDir('lazy-start-three');
    await copyVectorOutput(one, three);
    const { config: c3 } = await writeConfig(three, 'config.json', sampleConfig(three, style, render));
    const started = () => readFileSync(starts, 'utf8').trim().split('\n').length;
    const s = await runRenderStage(c3, three, { workers: 3 });
    expect(s.renderedMetatiles).toBe(1);
    // Every Chromium started was started by the one thread that rendered (a thread started for nothing
    // would start one too); usually one, two when Chromium hung at start and was started again
    // (workers/render-browser.ts: now and then, by design).
    expect(started()).toBe(s.browserStarts);
    expect(s.browserStarts).toBeGreaterThanOrEqual(1);
    // The same tiles as a one-worker render.
    const s1 = await runRenderStage(c1, one, { workers: 1 });
    expect(started()).toBe(s.browserStarts + s1.browserStarts);
    const archive = (d: string) => join(d, 'styles/osm-bright/1x.png.pmtiles');
    expect(existsSync(archive(three))).toBe(true);
    expect(await archiveTiles(archive(three))).toEqual(await archiveTiles(archive(one)));
  }, LONG);
});
