/**
 * Render faults with real browsers: a Chromium killed in the middle of a build is replaced and the
 * build ends with exactly the tiles of an undisturbed run.
 */
import { currentVersionDir } from '../lib/build-version.ts';
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { CHROMIUM_PATH } from '../workers/chromium.ts';
import { join } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { runRenderStage } from '../pipeline/render/stage.ts';
import { runVectorStage } from '../pipeline/vector/stage.ts';
import { chromiumBrowsersUnder, processesWith } from '../lib/process-tree.ts';
import { startCli } from './fixtures/cli.ts';
import { archiveTiles, copyVectorOutput, sampleConfig, tempDir, writeConfig } from './render-helpers.ts';

process.env.TILEBAKE_QUIET = '1';
/** Tile by tile over z13–14: enough renders that the kill lands in the middle of the build. */
const STYLE = { minzoom: 13, maxzoom: 14, scales: [1], formats: ['png'] };
const RENDER = { metatile: 1, margin: 64, timeoutMs: 120_000, retries: 2 };
const LONG = 300_000;

describe.sequential('render faults', () => {
  let base: string;
  let ref: string;

  beforeAll(async () => {
    base = await tempDir('faults-base');
    const { config } = await writeConfig(base, 'vector.json', sampleConfig(base, STYLE, RENDER));
    await runVectorStage(config, base);
    ref = await tempDir('faults-ref');
    await copyVectorOutput(base, ref);
    const c = await writeConfig(ref, 'config.json', sampleConfig(ref, STYLE, RENDER));
    await runRenderStage(c.config, ref, { workers: 1 });
  }, LONG);

  test('a browser killed mid-build is replaced and the archive equals an undisturbed run', async () => {
    const out = await tempDir('faults-crash');
    await copyVectorOutput(base, out);
    const { file } = await writeConfig(out, 'config.json', sampleConfig(out, STYLE, RENDER));
    const run = startCli(['build', '--config', file, '--out', out, '--only', 'render', '--workers', '1']);
    const child = run.child;
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    const exited = run.exited.then((e) => e.code);
    // Once the first metatiles are journalled, kill the build's browser.
    const journal = join(out, '.work/render/osm-bright/1x.png.pmtiles.journal');
    const HEADER_ONLY = 200;
    let killed: number[] = [];
    while (killed.length === 0 && child.exitCode === null) {
      const size = await stat(journal).then((s) => s.size, () => 0);
      if (size > HEADER_ONLY) {
        killed = chromiumBrowsersUnder(child.pid!);
        for (const pid of killed) process.kill(pid, 'SIGKILL');
      }
      if (killed.length === 0) await new Promise((r) => setTimeout(r, 50));
    }
    expect(killed.length).toBeGreaterThan(0);
    expect(await exited, stderr).toBe(0);
    // The replacement browser was started by the worker thread; none of the build's browsers outlives it.
    expect(processesWith(`--tilebake-browser=${child.pid}-`)).toEqual([]);
    const v = (await currentVersionDir(out))!.dir;
    expect(await archiveTiles(join(v, 'styles/osm-bright/1x.png.pmtiles'))).toEqual(await archiveTiles(join(ref, 'styles/osm-bright/1x.png.pmtiles')));
  }, LONG);

  test('a Chromium that hangs at start is killed at the start timeout and a second one started', async () => {
    const out = await tempDir('faults-hang');
    await copyVectorOutput(base, out);
    // No metatile retries: only the launch's own second start can save the build.
    const { file } = await writeConfig(out, 'config.json', sampleConfig(out, STYLE, { ...RENDER, retries: 0 }));
    // The first start hangs silently (as seen now and then in full test runs); later ones are Chromium.
    const hung = join(out, 'hung-once');
    const wrapper = join(out, 'chromium-hangs-once.sh');
    writeFileSync(wrapper, `#!/bin/bash\nif mkdir '${hung}' 2>/dev/null; then exec sleep 600; fi\nexec '${CHROMIUM_PATH}' "$@"\n`);
    chmodSync(wrapper, 0o755);
    const run = startCli(['build', '--config', file, '--out', out, '--only', 'render', '--workers', '1'], {
      env: { TILEBAKE_CHROMIUM: wrapper, TILEBAKE_CHROMIUM_START_TIMEOUT_MS: '20000' },
    });
    let stderr = '';
    run.child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    const { code } = await run.exited;
    expect(existsSync(hung)).toBe(true);
    expect(code, stderr).toBe(0);
    const v = (await currentVersionDir(out))!.dir;
    expect(await archiveTiles(join(v, 'styles/osm-bright/1x.png.pmtiles'))).toEqual(await archiveTiles(join(ref, 'styles/osm-bright/1x.png.pmtiles')));
  }, LONG);
});
