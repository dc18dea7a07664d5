// Screenshots of the preview page for the README: `node --import tsx scripts/preview-screenshots.mts [build dir] [out dir]`
// serves the build (default build/sample, from `make build`) in-process and saves a desktop and a 360 px phone view.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { hashToken } from '../static-server/auth.ts';
import { startServer } from '../static-server/serve.ts';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../workers/chromium.ts';

const [dir = 'build/sample', outDir = 'docs'] = process.argv.slice(2);
const token = randomBytes(18).toString('base64url');
const PROFILE = '7.4167,43.7275;7.4246,43.7384;7.4390,43.7503';
const VIEWS = [
  { file: 'preview-desktop.png', viewport: { width: 1200, height: 720 }, fragment: `style=topo&profile=${PROFILE}` },
  { file: 'preview-phone.png', viewport: { width: 360, height: 740 }, fragment: `style=positron&mode=vector&profile=${PROFILE}` },
];
const server = await startServer({ out: dir, port: 0, host: '127.0.0.1', auth: true, cors: '*', cacheMb: 64, logLevel: 'warn' }, { tokenHashes: [hashToken(token)] });
const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true });
try {
  for (const v of VIEWS) {
    const page = await browser.newPage({ viewport: v.viewport });
    page.on('console', (m) => m.type() === 'error' && console.error(`${v.file}: ${m.text()}`));
    await page.goto(`${server.url}/#token=${token}&${v.fragment}`);
    await page.waitForFunction(() => {
      const p = (window as unknown as { tilebakePreview?: { map: { loaded(): boolean; areTilesLoaded(): boolean } } }).tilebakePreview;
      return !!p && p.map.areTilesLoaded() && p.map.loaded() && document.getElementById('chart')?.dataset.samples !== undefined;
    }, undefined, { timeout: 60_000 });
    await page.screenshot({ path: join(outDir, v.file) });
    console.log(join(outDir, v.file));
    await page.close();
  }
} finally {
  await browser.close();
  await server.close();
}
