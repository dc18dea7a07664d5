// SQL through GDAL (lib/gdal.ts executeSql): result layers the caller drops stay referenced until their
// dataset closes, so gdal-async never releases one from the garbage collector under a lock its own
// caller holds (the hang of a build's search index, 2026-12-07); and no other code runs SQL through GDAL.
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT } from './fixtures/cli.ts';

const run = promisify(execFile);
const LAKES = join(ROOT, 'data/naturalearth/ne_10m_lakes.fgb');

/** The TypeScript files of the shipped code and bench/ (not node_modules, dist, test). */
async function sources(dir = ROOT): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.name.startsWith('.') || ['node_modules', 'dist', 'test'].includes(e.name)) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await sources(p)));
    else if (/\.(ts|js|mjs)$/.test(e.name)) out.push(p);
  }
  return out;
}

describe('SQL through GDAL', () => {
  it('reads every row of 1,000 dropped result sets and 20 full reads without blocking in the collector', async () => {
    const gdal = (await import('gdal-async')).default;
    const ds = gdal.open(LAKES);
    const count = ds.layers.get(0).features.count();
    ds.close();
    const { stdout } = await run(process.execPath, ['--import', 'tsx', join(ROOT, 'test/fixtures/gdal-sql-child.ts'), LAKES], { cwd: ROOT, timeout: 60_000, killSignal: 'SIGKILL' });
    expect(stdout.trim()).toBe(`done ${20 * count}`);
  }, 70_000);

  it('no code but lib/gdal.ts calls executeSQL itself', async () => {
    const callers: string[] = [];
    for (const f of await sources()) {
      if (f === join(ROOT, 'lib/gdal.ts')) continue;
      if (/\.executeSQL(Async)?\(/.test(await readFile(f, 'utf8'))) callers.push(f.slice(ROOT.length + 1));
    }
    expect(callers).toEqual([]);
  });
});
